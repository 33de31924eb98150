//! The controller's caches: one reflector store per watched kind, objects decoded one by one
//! ([`Decoded`]) and slimmed before they are kept.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use tokio::sync::watch;

use blueprint_machine::api::{Blueprint, BlueprintMaskObject, Component, Dogu};
use blueprint_machine::naming::label;

use crate::controller::triggers::Events;
use crate::observe::decoded::Decoded;

/// The caches a reconcile observes.
#[derive(Clone)]
pub struct Stores {
    pub blueprints: Store<Decoded<Blueprint>>,
    pub dogus: Store<Decoded<Dogu>>,
    pub components: Store<Decoded<Component>>,
    /// ConfigMaps labelled `app=ces`: global and dogu config, the local dogu registry.
    pub config_maps: Store<Decoded<ConfigMap>>,
    /// The health config ConfigMap (selected by name: it need not carry the registry labels).
    pub health_config: Store<Decoded<ConfigMap>>,
    /// Secrets labelled `k8s.cloudogu.com/type=sensitive-config`.
    pub sensitive_configs: Store<Decoded<Secret>>,
    /// The metadata (no data) of every Secret `sensitive_configs` does not hold: to notice changes of
    /// referenced Secrets.
    pub secret_metadata: Store<PartialObjectMeta<Secret>>,
    /// The metadata (no data) of every ConfigMap `config_maps` does not hold: to notice changes of
    /// ConfigMaps `configRef`s name.
    pub config_map_metadata: Store<PartialObjectMeta<ConfigMap>>,
    /// The backup operator's Restores (empty, and never watched, where its CRD is not installed).
    pub restores: Store<kube::api::DynamicObject>,
    /// The debug-mode operator's `DebugMode` objects (likewise).
    pub debug_modes: Store<kube::api::DynamicObject>,
    /// The namespace's `BlueprintMask`s (what a Blueprint's `spec.blueprintMask.crRef` names).
    pub blueprint_masks: Store<Decoded<BlueprintMaskObject>>,
    /// Which of them have listed their objects.
    pub filled: Filled,
}

/// How many caches there are: each marks one bit of [`Filled`].
pub const CACHES: u32 = 11;

/// [`Filled`]'s mark once every cache has listed its objects.
const ALL_FILLED: u32 = (1 << CACHES) - 1;

/// Which caches have listed their objects, marked by their watch streams on `InitDone` and awaited
/// through a watch channel, which any number of tasks may wait on. (kube-runtime's
/// `Store::wait_until_ready` keeps one waker per store: with the readiness probe, a reconcile and
/// the controller all waiting on one store, a waiter could be forgotten and the probe never turned
/// ready. Seen on a real kube-apiserver, at an operator's start right after the API server's.)
#[derive(Clone)]
pub struct Filled(watch::Receiver<u32>);

/// The marking side of [`Filled`], one per set of caches: each stream it tracks marks a bit of its own;
/// the streams hold the sender.
pub struct Filling {
    sender: Arc<watch::Sender<u32>>,
    tracked: u32,
}

impl Filled {
    /// A fresh set of caches, none of them filled yet.
    pub fn new() -> (Filling, Filled) {
        let (sender, receiver) = watch::channel(0);
        (Filling { sender: Arc::new(sender), tracked: 0 }, Filled(receiver))
    }

    /// Caches filled already (tests, snapshots).
    pub fn already() -> Filled {
        let (filling, filled) = Filled::new();
        filling.sender.send_replace(ALL_FILLED);
        filled
    }
}

impl Filling {
    /// The next cache is filled already: it is not watched (an optional kind whose CRD is absent).
    pub fn skip(&mut self) {
        assert!(self.tracked < CACHES, "more caches tracked than CACHES counts");
        let index = self.tracked;
        self.tracked += 1;
        self.sender.send_modify(|mask| *mask |= 1 << index);
    }

    /// `events`, marking the next of the [`CACHES`] caches as filled at each `InitDone` (again after a
    /// relist).
    pub fn track<K: Send + 'static>(&mut self, events: Events<K>) -> Events<K> {
        assert!(self.tracked < CACHES, "more caches tracked than CACHES counts");
        let index = self.tracked;
        self.tracked += 1;
        let sender = self.sender.clone();
        events
            .inspect(move |event| {
                if matches!(event, Ok(watcher::Event::InitDone)) {
                    sender.send_if_modified(|mask| {
                        let before = *mask;
                        *mask |= 1 << index;
                        *mask != before
                    });
                }
            })
            .boxed()
    }
}

/// A cache stopped before it was filled (its watch ended).
#[derive(Debug, thiserror::Error)]
#[error("the caches stopped before they were filled")]
pub struct CachesStopped;

impl Stores {
    /// Resolves once every cache has listed its objects (at once after that): the Blueprints' watch can
    /// start reconciles before the other caches are filled, and deciding on an empty cache of Dogus
    /// would mean deciding on a cluster without them.
    pub async fn ready(&self) -> Result<(), CachesStopped> {
        let mut filled = self.filled.0.clone();
        filled.wait_for(|mask| *mask == ALL_FILLED).await.map(drop).map_err(|_| CachesStopped)
    }
}

/// Keeps of an object's `managedFields` only the newest time (a config object's "last updated", see
/// `observe`). The field sets (`fieldsV1`) are most of a cached object's memory and are never read.
pub fn slim(meta: &mut ObjectMeta) {
    slim_fields(meta);
}

/// A Blueprint slimmed, and of its annotations only those the operator reads: `kubectl apply`
/// copies the whole object into `kubectl.kubernetes.io/last-applied-configuration`, which for a
/// 1,000-dogu blueprint is a second copy of its spec (250 KB) held in the cache for nothing. Of its
/// `managedFields` the newest entry keeps its time, manager and subresource: whether the stored status
/// is the operator's own write, and when (D58; of entries of the same second, another writer's).
pub fn slim_blueprint(meta: &mut ObjectMeta) {
    keep_newest_write(meta);
    keep_only(&mut meta.annotations, BLUEPRINT_ANNOTATIONS);
}

/// Keeps of a Blueprint's `managedFields` only the newest entry's time, manager and subresource: who
/// wrote it last, and when (D58), without any field set.
pub fn keep_newest_write(meta: &mut ObjectMeta) {
    if let Some(entries) = meta.managed_fields.as_mut() {
        let newest = blueprint_machine::naming::newest_write(entries).map(|entry| ManagedFieldsEntry {
            time: entry.time.clone(),
            manager: entry.manager.clone(),
            subresource: entry.subresource.clone(),
            ..Default::default()
        });
        *entries = newest.into_iter().collect();
    }
}

/// The annotations of a Blueprint the operator reads: the fields kept from other API versions and
/// `blueprint-operator reconcile`'s request.
const BLUEPRINT_ANNOTATIONS: &[&str] = &[
    blueprint_machine::conversion::V1_FIELDS_ANNOTATION,
    blueprint_machine::conversion::V3_FIELDS_ANNOTATION,
    blueprint_machine::reconcile_request::ANNOTATION,
];

/// Which labels and annotations of a Secret or ConfigMap a cache keeps: those the operator reads of
/// it. Any other (`kubectl.kubernetes.io/last-applied-configuration` above all: `kubectl apply` puts
/// a Secret's whole data there) is dropped as the object is watched, so that no Secret value is held
/// through an annotation and an object's size in the cache is what the operator needs of it.
#[derive(Clone, Copy, Debug)]
pub struct Kept {
    pub labels: &'static [&'static str],
    pub annotations: &'static [&'static str],
}

impl Kept {
    /// Config objects (global, dogu and sensitive config; the local dogu registry; the health config):
    /// the registry labels that say what they hold, and the keys-from-Secrets annotation (D52).
    pub const CONFIG_OBJECTS: Kept = Kept {
        labels: &[label::APP, label::CONFIG_TYPE, label::DOGU],
        annotations: &[blueprint_machine::keys_from_secrets::ANNOTATION],
    };
    /// Dogus and Components: the machine reads their spec, status, name and versions, none of their
    /// labels or annotations (`kubectl apply` copies the whole object into one). A label map holds a
    /// node of half a kilobyte however few labels it has: at 1,000 Dogus, half a megabyte for nothing.
    pub const NOTHING: Kept = Kept { labels: &[], annotations: &[] };

    /// `meta` slimmed ([`slim`]), without its uid (no cached object's is read: writes are conditional
    /// on the `resourceVersion`) and without the labels and annotations not kept. A local dogu
    /// registry ConfigMap keeps no labels: it is found by its name (`dogu-spec-<dogu>`), and its labels
    /// only say that it is not config, as no labels do.
    pub fn apply(self, meta: &mut ObjectMeta) {
        slim_fields(meta);
        meta.uid = None;
        keep_only(&mut meta.labels, self.labels);
        keep_only(&mut meta.annotations, self.annotations);
        let registry = |labels: &BTreeMap<String, String>| {
            labels.get(label::CONFIG_TYPE).is_some_and(|kind| kind == label::LOCAL_REGISTRY_TYPE)
        };
        if meta.labels.as_ref().is_some_and(registry) {
            meta.labels = None;
        }
    }
}

/// `map` with only the `kept` keys (none left: no map).
fn keep_only(map: &mut Option<BTreeMap<String, String>>, kept: &[&str]) {
    if let Some(entries) = map.as_mut() {
        entries.retain(|key, _| kept.contains(&key.as_str()));
        if entries.is_empty() {
            *map = None;
        }
    }
}

/// Keeps of an object's metadata only its name, namespace and `resourceVersion`: what the metadata
/// caches of the other Secrets and ConfigMaps are read for (a referenced object's type, labels and
/// data come with the read of the object itself); the rest (uid, creation time, the newest
/// `managedFields` entry, owners) would be held for every object of the namespace.
pub fn names_and_versions(meta: &mut ObjectMeta) {
    let ObjectMeta { name, namespace, resource_version, .. } = std::mem::take(meta);
    *meta = ObjectMeta { name, namespace, resource_version, ..ObjectMeta::default() };
}

fn slim_fields(meta: &mut ObjectMeta) {
    let Some(entries) = meta.managed_fields.as_mut() else { return };
    let newest = entries.iter().filter_map(|entry| entry.time.clone()).max();
    *entries =
        newest.map(|time| vec![ManagedFieldsEntry { time: Some(time), ..Default::default() }]).unwrap_or_default();
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::time::Duration;

    use futures::StreamExt;
    use kube::runtime::{reflector, watcher};

    use super::*;

    fn empty<K>() -> Store<K>
    where
        K: kube::Resource + Clone + 'static,
        K::DynamicType: Default + Eq + std::hash::Hash + Clone,
    {
        reflector::store().0
    }

    /// The finding: the readiness probe, a reconcile and the controller each waited on the caches, and
    /// kube-runtime's store readiness wakes only the last waiter of a store: the probe stayed
    /// "caches not synced" for good. Here three waiters are registered before the caches fill, and each
    /// must see them filled.
    fn stores(filled: Filled) -> Stores {
        Stores {
            blueprints: empty(),
            dogus: empty(),
            components: empty(),
            config_maps: empty(),
            health_config: empty(),
            sensitive_configs: empty(),
            secret_metadata: empty(),
            config_map_metadata: empty(),
            restores: crate::other_operators::none(crate::other_operators::RESTORE),
            debug_modes: crate::other_operators::none(crate::other_operators::DEBUG_MODE),
            blueprint_masks: empty(),
            filled,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn every_waiter_sees_the_caches_filled() {
        let (mut filling, filled) = Filled::new();
        let stores = stores(filled);
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let stores = stores.clone();
                tokio::spawn(async move { stores.ready().await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(10)).await;
        for _ in 0..CACHES {
            let events: Events<ConfigMap> = futures::stream::iter([Ok(watcher::Event::InitDone)]).boxed();
            let _ = filling.track(events).collect::<Vec<_>>().await;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        for waiter in waiters {
            let filled = tokio::time::timeout(Duration::from_secs(1), waiter).await;
            assert!(matches!(filled, Ok(Ok(Ok(())))), "a waiter was left waiting");
        }
    }

    /// Issue 27, finding 4: a Secret made by `kubectl apply` carries its data in an annotation, which
    /// the metadata cache of every Secret held for good. What a cache keeps of a config object is what
    /// the operator reads; of any other object, nothing but names and versions.
    #[test]
    fn caches_keep_only_the_labels_and_annotations_the_operator_reads() {
        let map = |pairs: &[(&str, &str)]| Some(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        let applied = "kubectl.kubernetes.io/last-applied-configuration";
        let mut meta = ObjectMeta {
            name: Some("postfix-config".into()),
            namespace: Some("ecosystem".into()),
            resource_version: Some("7".into()),
            uid: Some("2d3f".into()),
            managed_fields: Some(vec![ManagedFieldsEntry { manager: Some("kubectl".into()), ..Default::default() }]),
            owner_references: Some(Vec::new()),
            labels: map(&[
                ("app", "ces"),
                ("dogu.name", "postfix"),
                ("k8s.cloudogu.com/type", "dogu-config"),
                ("team", "x"),
            ]),
            annotations: map(&[
                (applied, "{\"data\":{\"password\":\"c2VjcmV0\"}}"),
                (blueprint_machine::keys_from_secrets::ANNOTATION, "[]"),
            ]),
            ..ObjectMeta::default()
        };
        let mut metadata_only = meta.clone();
        Kept::CONFIG_OBJECTS.apply(&mut meta);
        assert_eq!(
            meta.labels.as_ref().unwrap().keys().collect::<Vec<_>>(),
            ["app", "dogu.name", "k8s.cloudogu.com/type"]
        );
        assert_eq!(meta.annotations, map(&[(blueprint_machine::keys_from_secrets::ANNOTATION, "[]")]));
        let mut unlabelled = metadata_only.clone();
        Kept::NOTHING.apply(&mut unlabelled);
        assert_eq!((unlabelled.labels, unlabelled.annotations), (None, None));
        assert_eq!(unlabelled.uid, None);
        assert_eq!(unlabelled.resource_version.as_deref(), Some("7"));
        names_and_versions(&mut metadata_only);
        assert_eq!(
            metadata_only,
            ObjectMeta {
                name: Some("postfix-config".into()),
                namespace: Some("ecosystem".into()),
                resource_version: Some("7".into()),
                ..ObjectMeta::default()
            }
        );
    }

    /// A local dogu registry ConfigMap is found by name; its labels, which say that it is no config,
    /// are dropped, and without them it is still no config.
    #[test]
    fn a_local_registry_config_map_is_kept_without_labels_and_is_still_no_config() {
        let labels = blueprint_machine::naming::local_registry_labels("cas");
        assert_eq!(blueprint_machine::decision::ConfigTarget::from_labels(Some(&labels)), None);
        let mut meta = ObjectMeta { name: Some("dogu-spec-cas".into()), labels: Some(labels), ..ObjectMeta::default() };
        Kept::CONFIG_OBJECTS.apply(&mut meta);
        assert_eq!(meta.labels, None);
        assert_eq!(blueprint_machine::decision::ConfigTarget::from_labels(meta.labels.as_ref()), None);

        let config = ObjectMeta {
            labels: Some(blueprint_machine::decision::ConfigTarget::Dogu("cas".into()).labels()),
            ..ObjectMeta::default()
        };
        let mut kept = config.clone();
        Kept::CONFIG_OBJECTS.apply(&mut kept);
        assert_eq!(kept.labels, config.labels, "config keeps its labels");
    }

    /// `kubectl apply` of a Blueprint copies it whole into an annotation; the cache keeps the
    /// annotations the operator reads, and no copy.
    #[test]
    fn a_cached_blueprint_keeps_the_annotations_read_and_no_applied_copy() {
        let read = [
            blueprint_machine::conversion::V1_FIELDS_ANNOTATION,
            blueprint_machine::conversion::V3_FIELDS_ANNOTATION,
            blueprint_machine::reconcile_request::ANNOTATION,
        ];
        let applied = "kubectl.kubernetes.io/last-applied-configuration";
        let mut meta = ObjectMeta {
            name: Some("my-blueprint".into()),
            annotations: Some(read.iter().chain([&applied]).map(|key| (key.to_string(), "x".into())).collect()),
            labels: Some([("team".to_owned(), "x".to_owned())].into()),
            ..ObjectMeta::default()
        };
        slim_blueprint(&mut meta);
        assert_eq!(meta.annotations.unwrap().keys().map(String::as_str).collect::<BTreeSet<_>>(), BTreeSet::from(read));
        assert!(meta.labels.is_some(), "labels are kept");
    }

    /// D58 reads who wrote a Blueprint last: the newest `managedFields` entry keeps its manager and
    /// subresource; the field sets and older entries go.
    #[test]
    fn a_cached_blueprint_keeps_who_wrote_it_last() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, Time};
        let at = |s: i64| Some(Time(k8s_openapi::jiff::Timestamp::from_second(1_767_225_600 + s).unwrap()));
        let entry = |manager: &str, subresource: Option<&str>, time| ManagedFieldsEntry {
            manager: Some(manager.into()),
            subresource: subresource.map(Into::into),
            operation: Some("Update".into()),
            fields_v1: Some(FieldsV1(serde_json::json!({"f:status": {}}))),
            time,
            ..Default::default()
        };
        let ours = blueprint_machine::naming::FIELD_MANAGER;
        let mut meta = ObjectMeta {
            managed_fields: Some(vec![entry("kubectl", None, at(5)), entry(ours, Some("status"), at(9))]),
            ..ObjectMeta::default()
        };
        slim_blueprint(&mut meta);
        let kept = ManagedFieldsEntry {
            manager: Some(ours.into()),
            subresource: Some("status".into()),
            time: at(9),
            ..Default::default()
        };
        assert_eq!(meta.managed_fields, Some(vec![kept]));
        // The same second: the hand edit counts as the newest.
        let mut meta = ObjectMeta {
            managed_fields: Some(vec![
                entry("kubectl-edit", Some("status"), at(9)),
                entry(ours, Some("status"), at(9)),
            ]),
            ..ObjectMeta::default()
        };
        slim_blueprint(&mut meta);
        assert_eq!(meta.managed_fields.unwrap()[0].manager.as_deref(), Some("kubectl-edit"));
    }

    #[tokio::test(start_paused = true)]
    async fn caches_whose_streams_ended_unfilled_are_an_error() {
        let (filling, filled) = Filled::new();
        drop(filling);
        assert!(stores(filled).ready().await.is_err());
    }
}
