//! The Secrets and ConfigMaps a blueprint references, read by name and cached by `resourceVersion`.
//!
//! Referenced objects are arbitrary objects of the namespace; caching them all (Helm release Secrets
//! among them) would cost memory and exposure. Instead the controller watches their *metadata* only
//! (of those its config caches do not hold whole), and reads a referenced object (one GET) only when
//! its `resourceVersion` differs from the one whose observation is cached. A steady-state reconcile
//! reads nothing. What is cached is the observation (a Secret's digests, never its values).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use kube::Resource;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use serde::de::DeserializeOwned;

use super::decoded::{Decoded, Lenient};

/// Where the `resourceVersion`s of a kind's objects are found: its metadata cache holds the objects
/// that the cache of whole objects (the config objects of the kind) does not; each object is in one.
pub struct Versions<'a, K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Lenient + std::fmt::Debug + 'static,
{
    pub metadata: &'a Store<PartialObjectMeta<K>>,
    pub whole: &'a Store<Decoded<K>>,
    pub namespace: &'a str,
}

impl<K> Versions<'_, K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Lenient + std::fmt::Debug + 'static,
{
    /// The `resourceVersion` of the object `name`; `None`: there is no such object.
    pub fn of(&self, name: &str) -> Option<String> {
        let version = |meta: &kube::core::ObjectMeta| meta.resource_version.clone().unwrap_or_default();
        if let Some(meta) = self.metadata.get(&ObjectRef::new(name).within(self.namespace)) {
            return Some(version(&meta.metadata));
        }
        self.whole.get(&ObjectRef::new(name).within(self.namespace)).map(|object| version(object.meta()))
    }
}

/// The observations of referenced objects of one kind, by name, with the version they were made of.
pub struct ByVersion<V> {
    cache: Mutex<HashMap<String, (String, V)>>,
}

impl<V> Default for ByVersion<V> {
    fn default() -> Self {
        ByVersion { cache: Mutex::new(HashMap::new()) }
    }
}

impl<V: Clone> ByVersion<V> {
    /// The observation of every named object (`observe` of the object read, or of `None` when it does
    /// not exist); reads only those whose cached version is outdated.
    pub async fn observe<K>(
        &self,
        names: &BTreeSet<String>,
        versions: Versions<'_, K>,
        api: &Api<Decoded<K>>,
        observe: impl Fn(Option<&Decoded<K>>) -> V,
    ) -> Result<BTreeMap<String, V>, kube::Error>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Lenient + std::fmt::Debug + 'static,
    {
        let mut observed = BTreeMap::new();
        for name in names {
            let Some(version) = versions.of(name) else {
                observed.insert(name.clone(), observe(None));
                continue;
            };
            let cached = self
                .cache
                .lock()
                .expect("not poisoned")
                .get(name)
                .filter(|(v, _)| *v == version)
                .map(|(_, o)| o.clone());
            let observation = match cached {
                Some(observation) => observation,
                None => {
                    // Decoded on its own: an object that does not fit is never logged whole by the client.
                    let read = api.get_opt(name).await?;
                    let read_version = read.as_ref().and_then(|o| o.meta().resource_version.clone()).unwrap_or(version);
                    let observation = observe(read.as_ref());
                    self.cache.lock().expect("not poisoned").insert(name.clone(), (read_version, observation.clone()));
                    observation
                }
            };
            observed.insert(name.clone(), observation);
        }
        Ok(observed)
    }
}
