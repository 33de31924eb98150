//! Digests of the Secrets a blueprint references, cached by `resourceVersion`.
//!
//! Referenced Secrets are arbitrary Secrets of the namespace; caching them all (Helm release Secrets
//! among them) would cost memory and exposure. Instead the controller watches Secret *metadata* only,
//! and reads a referenced Secret (one GET) only when its `resourceVersion` differs from the one whose
//! digests are cached. A steady-state reconcile reads nothing.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use k8s_openapi::api::core::v1::Secret;
use kube::Resource;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};

use blueprint_machine::observation::ReferencedSecret;

use super::decoded::Decoded;
use super::{Digester, referenced_secret};

#[derive(Default)]
pub struct SecretDigests {
    cache: Mutex<HashMap<String, (String, ReferencedSecret)>>,
}

impl SecretDigests {
    /// The digests of every named Secret; reads only those whose cached version is outdated.
    pub async fn observe(
        &self,
        names: &BTreeSet<String>,
        metadata: &Store<PartialObjectMeta<Secret>>,
        api: &Api<Decoded<Secret>>,
        namespace: &str,
        digester: &Digester,
    ) -> Result<BTreeMap<String, ReferencedSecret>, kube::Error> {
        let mut observed = BTreeMap::new();
        for name in names {
            let Some(meta) = metadata.get(&ObjectRef::new(name).within(namespace)) else {
                observed.insert(name.clone(), ReferencedSecret::Missing);
                continue;
            };
            let version = meta.metadata.resource_version.clone().unwrap_or_default();
            let cached = self
                .cache
                .lock()
                .expect("not poisoned")
                .get(name)
                .filter(|(v, _)| *v == version)
                .map(|(_, d)| d.clone());
            let digests = match cached {
                Some(digests) => digests,
                None => {
                    // Decoded on its own: a Secret that does not fit is never logged whole by the client.
                    let read = api.get_opt(name).await?;
                    let read_version = read.as_ref().and_then(|s| s.meta().resource_version.clone()).unwrap_or(version);
                    let digests = match &read {
                        Some(Decoded::Undecodable(_)) => ReferencedSecret::Unreadable,
                        Some(Decoded::Object(secret)) => referenced_secret(Some(secret), digester),
                        None => referenced_secret(None, digester),
                    };
                    self.cache.lock().expect("not poisoned").insert(name.clone(), (read_version, digests.clone()));
                    digests
                }
            };
            observed.insert(name.clone(), digests);
        }
        Ok(observed)
    }
}
