//! What triggers a reconcile, and of which Blueprints: every watched change becomes the Blueprints it
//! concerns, and all of them pass one bounded debounce ([`super::debounce`]) before they reach the
//! controller.
//!
//! - a Blueprint created, deleted or with a new `generation` (our own status writes do not count):
//!   every Blueprint of the namespace, since the number of Blueprints decides whether any is processed;
//! - a Blueprint whose status someone else changed (a hand edit, `kubectl edit --subresource status`):
//!   that Blueprint, whose reconcile writes the status back (the status is the operator's alone);
//! - a Blueprint whose reconcile annotation changed (`blueprint-operator reconcile`): that Blueprint,
//!   at once, past any backoff it is in (kube-runtime keeps the earlier of two scheduled times);
//! - any change of a Dogu or Component (spec or status: health, installed version, start time), of the
//!   health config, or of a sensitive-config Secret: every Blueprint;
//! - a config ConfigMap (global or dogu config): every Blueprint; not the local dogu registry's
//!   ConfigMaps (also `app=ces`): filling that cache of descriptors changes no decision;
//! - any other Secret: the Blueprints that reference it;
//! - any other ConfigMap a `configRef` names (created, changed or deleted; one of the local dogu
//!   registry's too): the Blueprints that reference it;
//! - a `BlueprintMask`: every Blueprint.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures::stream::{self, BoxStream, StreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};

use blueprint_machine::api::{Blueprint, Component, Dogu};

use crate::observe::config_target;
use crate::observe::decoded::Decoded;
use crate::reconcile::OwnStatusWrites;

/// A stream of watch events, as the reflectors pass them on.
pub type Events<K> = BoxStream<'static, Result<watcher::Event<K>, watcher::Error>>;
type Triggers = BoxStream<'static, ObjectRef<Decoded<Blueprint>>>;

/// What a Blueprint's last watch event showed: its generation, a fingerprint of its status, and its
/// reconcile request.
#[derive(Clone, PartialEq, Eq)]
struct Seen {
    generation: Option<i64>,
    status: u64,
    requested_at: Option<String>,
}

impl Seen {
    fn of(blueprint: &Decoded<Blueprint>) -> Seen {
        let status = blueprint.object().and_then(|b| b.status.as_deref()).map_or(0, fingerprint);
        let requested_at = blueprint.object().and_then(|b| crate::reconcile::requested_at(b)).map(str::to_owned);
        Seen { generation: blueprint.meta().generation, status, requested_at }
    }
}

/// What a Blueprint's watch event changed.
enum Change {
    /// Created, or a new generation.
    Generation,
    /// The status, by someone else, or a new reconcile request (this Blueprint).
    This(ObjectRef<Decoded<Blueprint>>),
    None,
}

/// A hash of `status` as JSON, without a copy of it (a status may be a megabyte).
fn fingerprint(status: &blueprint_machine::api::BlueprintStatus) -> u64 {
    use std::hash::Hasher;
    struct Hashing(std::collections::hash_map::DefaultHasher);
    impl std::io::Write for Hashing {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.write(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut hashing = Hashing(std::collections::hash_map::DefaultHasher::new());
    let _ = serde_json::to_writer(&mut hashing, status);
    hashing.0.finish()
}

/// The Blueprints that changes trigger.
#[derive(Clone)]
pub struct Targets {
    blueprints: Store<Decoded<Blueprint>>,
    /// The Secrets and ConfigMaps each Blueprint references, by Blueprint name, with the generation
    /// they were read from: a Secret's change does not parse every Blueprint again.
    references: Arc<Mutex<HashMap<String, ReadReferences>>>,
}

/// One Blueprint's references and the generation they were read from.
type ReadReferences = (i64, Arc<References>);

/// The objects one Blueprint's config entries name.
#[derive(Default)]
struct References {
    secrets: BTreeSet<String>,
    config_maps: BTreeSet<String>,
}

impl Targets {
    pub fn new(blueprints: Store<Decoded<Blueprint>>) -> Self {
        Targets { blueprints, references: Default::default() }
    }

    /// Every Blueprint of the namespace.
    pub fn every(&self) -> Vec<ObjectRef<Decoded<Blueprint>>> {
        self.blueprints.state().iter().map(|b| ObjectRef::from_obj(b.as_ref())).collect()
    }

    /// The Blueprints that reference the Secret `name`.
    pub fn referencing(&self, name: &str) -> Vec<ObjectRef<Decoded<Blueprint>>> {
        self.naming(|references| references.secrets.contains(name))
    }

    /// The Blueprints whose `configRef`s name the ConfigMap `name`.
    pub fn referencing_config_map(&self, name: &str) -> Vec<ObjectRef<Decoded<Blueprint>>> {
        self.naming(|references| references.config_maps.contains(name))
    }

    /// The Blueprints whose references `names` accepts.
    fn naming(&self, names: impl Fn(&References) -> bool) -> Vec<ObjectRef<Decoded<Blueprint>>> {
        let mut references = self.references.lock().expect("not poisoned");
        let blueprints = self.blueprints.state();
        references.retain(|known, _| blueprints.iter().any(|b| b.meta().name.as_deref() == Some(known)));
        blueprints
            .iter()
            .filter(|decoded| {
                let Some(blueprint) = decoded.object() else { return false };
                let generation = blueprint.metadata.generation.unwrap_or_default();
                let entry = references.entry(blueprint.name_any()).or_insert_with(|| (i64::MIN, Arc::default()));
                if entry.0 != generation {
                    let references = References {
                        secrets: blueprint_machine::Reading::secrets_named_in(blueprint),
                        config_maps: blueprint_machine::Reading::config_maps_named_in(blueprint),
                    };
                    *entry = (generation, Arc::new(references));
                }
                names(&entry.1)
            })
            .map(|b| ObjectRef::from_obj(b.as_ref()))
            .collect()
    }
}

/// Blueprint events that trigger: an object added, deleted, or with a new generation. A list (at the
/// start, or a relist) triggers once it is complete, and only if it brought such a change: the
/// reflector makes a list's objects visible in the store only at its `InitDone`, so Blueprints named
/// from the store while the list is still arriving would be those of before it (none at the start:
/// a restarted operator would not reconcile until something changed, found on a real API server).
/// And a status changed by anyone but this process (`own`): that Blueprint alone, so that the hand
/// edit is undone within the debounce, not left until the spec changes.
pub fn blueprint_triggers(events: Events<Decoded<Blueprint>>, targets: Targets, own: OwnStatusWrites) -> Triggers {
    let mut seen: HashMap<ObjectRef<Decoded<Blueprint>>, Seen> = HashMap::new();
    let mut list_changed = false;
    let mut listed: HashSet<ObjectRef<Decoded<Blueprint>>> = HashSet::new();
    events
        .flat_map(move |event| {
            let mut changed = |blueprint: &Decoded<Blueprint>| {
                let key = ObjectRef::from_obj(blueprint);
                let now = Seen::of(blueprint);
                match seen.insert(key.clone(), now.clone()) {
                    // A reconcile asked for by hand: at once, whatever else changed with it.
                    Some(before) if before.generation == now.generation && before.requested_at != now.requested_at => {
                        Change::This(key)
                    }
                    Some(before) if before.generation == now.generation && before.status != now.status => {
                        let name = blueprint.meta().name.as_deref().unwrap_or_default();
                        let ours = own.is_ours(name, blueprint.meta().resource_version.as_deref());
                        if ours { Change::None } else { Change::This(key) }
                    }
                    Some(before) if before.generation == now.generation => Change::None,
                    _ => Change::Generation,
                }
            };
            let triggered = match event {
                Ok(watcher::Event::Apply(blueprint)) => match changed(&blueprint) {
                    Change::Generation => targets.every(),
                    Change::This(key) => vec![key],
                    Change::None => Vec::new(),
                },
                Ok(watcher::Event::InitApply(blueprint)) => {
                    list_changed |= !matches!(changed(&blueprint), Change::None);
                    listed.insert(ObjectRef::from_obj(&blueprint));
                    Vec::new()
                }
                Ok(watcher::Event::Init) => {
                    list_changed = false;
                    listed.clear();
                    Vec::new()
                }
                Ok(watcher::Event::InitDone) => {
                    // A Blueprint deleted while the watch was down is missing from the list.
                    let before = seen.len();
                    seen.retain(|key, _| listed.contains(key));
                    let changed = std::mem::take(&mut list_changed) || seen.len() != before;
                    if changed { targets.every() } else { Vec::new() }
                }
                Ok(watcher::Event::Delete(blueprint)) => {
                    seen.remove(&ObjectRef::from_obj(&blueprint));
                    own.forget(blueprint.meta().name.as_deref().unwrap_or_default());
                    targets.every()
                }
                Err(_) => Vec::new(),
            };
            stream::iter(triggered)
        })
        .boxed()
}

/// Changes of a kind every Blueprint depends on.
pub fn every_blueprint<K: Send + 'static>(events: Events<K>, targets: Targets, concerns: fn(&K) -> bool) -> Triggers {
    touched(events)
        .flat_map(move |object| stream::iter(if concerns(&object) { targets.every() } else { Vec::new() }))
        .boxed()
}

/// Changes of Secrets, to the Blueprints that reference them.
pub fn secret_triggers(events: Events<PartialObjectMeta<Secret>>, targets: Targets) -> Triggers {
    touched(events).flat_map(move |secret| stream::iter(targets.referencing(&secret.name_any()))).boxed()
}

/// Changes of `app=ces` ConfigMaps: a config object's to every Blueprint; any other's (the local dogu
/// registry's) to the Blueprints whose `configRef`s name it, as for the ConfigMaps of the metadata
/// cache, which holds the rest.
pub fn ces_config_map_triggers(events: Events<Decoded<ConfigMap>>, targets: Targets) -> Triggers {
    touched(events)
        .flat_map(move |config_map| {
            stream::iter(if config_object(&config_map) {
                targets.every()
            } else {
                targets.referencing_config_map(&config_map.name_any())
            })
        })
        .boxed()
}

/// Changes of the ConfigMaps without `app=ces` (their metadata), to the Blueprints whose `configRef`s
/// name them.
pub fn config_map_reference_triggers(events: Events<PartialObjectMeta<ConfigMap>>, targets: Targets) -> Triggers {
    touched(events)
        .flat_map(move |config_map| stream::iter(targets.referencing_config_map(&config_map.name_any())))
        .boxed()
}

/// The objects added, changed or deleted (errors are the watcher's to retry and log).
fn touched<K: Send + 'static>(events: Events<K>) -> BoxStream<'static, K> {
    events
        .flat_map(|event| {
            stream::iter(match event {
                Ok(
                    watcher::Event::Apply(object) | watcher::Event::Delete(object) | watcher::Event::InitApply(object),
                ) => Some(object),
                _ => None,
            })
        })
        .boxed()
}

pub fn any_dogu(_: &Decoded<Dogu>) -> bool {
    true
}

pub fn any_component(_: &Decoded<Component>) -> bool {
    true
}

pub fn any_config_map(_: &Decoded<ConfigMap>) -> bool {
    true
}

pub fn any_secret(_: &Decoded<Secret>) -> bool {
    true
}

/// A `BlueprintMask`: the Blueprint that references it may be masked differently now (there is one
/// Blueprint per namespace, so no index of which references which).
pub fn any_blueprint_mask(_: &Decoded<blueprint_machine::api::BlueprintMaskObject>) -> bool {
    true
}

/// A Restore that starts or ends concerns every Blueprint (nothing is applied while one is in
/// progress; its end is what the paused Blueprints wait for).
pub fn any_restore(_: &kube::api::DynamicObject) -> bool {
    true
}

/// The `DebugMode` that starts or ends decides whether the log levels are enforced.
pub fn any_debug_mode(debug_mode: &kube::api::DynamicObject) -> bool {
    debug_mode.metadata.name.as_deref() == Some(blueprint_machine::naming::DEBUG_MODE)
}

/// Global and dogu config; not the local dogu registry's ConfigMaps.
pub fn config_object(config_map: &Decoded<ConfigMap>) -> bool {
    config_target(config_map.meta()).is_some()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use std::collections::BTreeMap;

    use futures::StreamExt;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube::runtime::reflector;

    use blueprint_machine::naming::label;

    use super::*;

    fn blueprint(name: &str, generation: i64) -> Decoded<Blueprint> {
        let mut blueprint = blueprint_machine::fixtures::blueprint_of(Default::default());
        blueprint.metadata.name = Some(name.into());
        blueprint.metadata.namespace = Some("ecosystem".into());
        blueprint.metadata.generation = Some(generation);
        Decoded::Object(Arc::new(blueprint))
    }

    /// The triggers of `events` passed through a reflector into the store the targets read, as the
    /// controller wires them.
    async fn triggered(events: Vec<watcher::Event<Decoded<Blueprint>>>) -> Vec<String> {
        triggered_with(events, OwnStatusWrites::default()).await
    }

    async fn triggered_with(events: Vec<watcher::Event<Decoded<Blueprint>>>, own: OwnStatusWrites) -> Vec<String> {
        let (reader, writer) = reflector::store();
        let stream = reflector::reflector(writer, futures::stream::iter(events.into_iter().map(Ok))).boxed();
        blueprint_triggers(stream, Targets::new(reader), own).map(|r| r.name).collect().await
    }

    /// `blueprint(name, 1)` at `resource_version` with a status whose `Completed` condition says `reason`.
    fn with_status(name: &str, resource_version: &str, reason: &str) -> Decoded<Blueprint> {
        let Decoded::Object(mut blueprint) = blueprint(name, 1) else { unreachable!() };
        let object = Arc::make_mut(&mut blueprint);
        object.metadata.resource_version = Some(resource_version.into());
        let condition = k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
            type_: "Completed".into(),
            status: "True".into(),
            reason: reason.into(),
            message: String::new(),
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ),
            observed_generation: Some(1),
        };
        object.status = Some(Arc::new(blueprint_machine::api::BlueprintStatus {
            conditions: vec![condition],
            ..Default::default()
        }));
        Decoded::Object(blueprint)
    }

    /// Finding 7 of issue 27: a status set by hand stayed until the spec changed. Someone else's
    /// status change triggers that Blueprint; the event of our own status write triggers nothing.
    #[tokio::test]
    async fn a_status_changed_by_someone_else_triggers_its_blueprint_and_our_own_write_does_not() {
        let own = OwnStatusWrites::default();
        own.record("a", "3".into());
        let events = vec![
            watcher::Event::Apply(with_status("a", "2", "Completed")),
            // Our write: a new status, at the resourceVersion our write produced.
            watcher::Event::Apply(with_status("a", "3", "Applied")),
            // A hand edit of the status.
            watcher::Event::Apply(with_status("a", "4", "Tampered")),
            // A label or annotation edited: the status as it was.
            watcher::Event::Apply(with_status("a", "5", "Tampered")),
        ];
        assert_eq!(triggered_with(events, own).await, ["a", "a"], "created, then the hand edit only");
    }

    /// `blueprint-operator reconcile`: a new value of the reconcile annotation triggers that Blueprint
    /// (kube-runtime keeps the earlier of its scheduled times: past any backoff); the same value, or
    /// another annotation, does not.
    #[tokio::test]
    async fn a_reconcile_request_triggers_its_blueprint() {
        let annotated = |version: &str, annotations: &[(&str, &str)]| {
            let mut object = with_status("a", version, "Completed");
            if let Decoded::Object(blueprint) = &mut object {
                let blueprint = Arc::make_mut(blueprint);
                blueprint.metadata.annotations =
                    Some(annotations.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect());
            }
            object
        };
        let request = blueprint_machine::reconcile_request::ANNOTATION;
        let events = vec![
            watcher::Event::Apply(annotated("2", &[])),
            watcher::Event::Apply(annotated("3", &[(request, "2026-12-04T10:00:00Z")])),
            watcher::Event::Apply(annotated("4", &[(request, "2026-12-04T10:00:00Z"), ("other", "x")])),
            watcher::Event::Apply(annotated("5", &[(request, "2026-12-04T10:05:00Z")])),
        ];
        assert_eq!(triggered_with(events, OwnStatusWrites::default()).await, ["a", "a", "a"]);
    }

    /// An `app=ces` ConfigMap's change: a config object's triggers every Blueprint; another's (the
    /// local dogu registry's, or one labelled by hand) only the Blueprints whose `configRef`s name it.
    /// (The ConfigMaps without the label come through the metadata cache: `config_map_reference_triggers`.)
    #[tokio::test]
    async fn an_app_ces_config_map_triggers_every_blueprint_or_those_that_name_it() {
        let referencing = blueprint_machine::fixtures::blueprint_v3(
            "{displayName: x, blueprint: {config: {global: [{key: theme, configRef: {name: site-settings, key: theme}}]}}}",
        );
        let (reader, mut writer) = reflector::store();
        for (name, mut object) in
            [("a", referencing), ("b", blueprint_machine::fixtures::blueprint_of(Default::default()))]
        {
            object.metadata.name = Some(name.into());
            object.metadata.namespace = Some("ecosystem".into());
            object.metadata.generation = Some(1);
            writer.apply_watcher_event(&watcher::Event::Apply(Decoded::Object(Arc::new(object))));
        }
        let config_map = |name: &str, labels: BTreeMap<String, String>| {
            let metadata = ObjectMeta { name: Some(name.into()), labels: Some(labels), ..Default::default() };
            Ok(watcher::Event::Apply(Decoded::Object(Arc::new(ConfigMap { metadata, ..Default::default() }))))
        };
        let ces = || BTreeMap::from([(label::APP.to_owned(), "ces".to_owned())]);
        let mut dogu_config = ces();
        dogu_config.insert(label::CONFIG_TYPE.into(), label::DOGU_CONFIG_TYPE.into());
        dogu_config.insert(label::DOGU.into(), "postfix".into());
        let triggered_by = |event| {
            let targets = Targets::new(reader.clone());
            async move {
                let mut names: Vec<String> = ces_config_map_triggers(futures::stream::iter([event]).boxed(), targets)
                    .map(|r| r.name)
                    .collect()
                    .await;
                names.sort();
                names
            }
        };
        assert_eq!(triggered_by(config_map("postfix-config", dogu_config)).await, ["a", "b"]);
        assert_eq!(triggered_by(config_map("site-settings", ces())).await, ["a"], "named by a's configRef");
        let registry = blueprint_machine::naming::local_registry_labels("cas");
        assert!(triggered_by(config_map("dogu-spec-cas", registry)).await.is_empty());
    }

    /// The finding: the list at the start named the Blueprints from a store the reflector fills only
    /// at the list's end, so a restarted operator reconciled nothing until something changed.
    #[tokio::test]
    async fn the_first_list_triggers_every_listed_blueprint_once() {
        let events = vec![
            watcher::Event::Init,
            watcher::Event::InitApply(blueprint("a", 1)),
            watcher::Event::InitApply(blueprint("b", 1)),
            watcher::Event::InitDone,
        ];
        let mut names = triggered(events).await;
        names.sort();
        assert_eq!(names, ["a", "b"]);
    }

    #[tokio::test]
    async fn a_relist_triggers_only_when_it_changed_something() {
        let list = |generation| {
            vec![watcher::Event::Init, watcher::Event::InitApply(blueprint("a", generation)), watcher::Event::InitDone]
        };
        let same: Vec<_> = list(1).into_iter().chain(list(1)).collect();
        assert_eq!(triggered(same).await, ["a"], "the same list again changes nothing");
        let newer: Vec<_> = list(1).into_iter().chain(list(2)).collect();
        assert_eq!(triggered(newer).await, ["a", "a"]);
        let gone = vec![
            watcher::Event::Init,
            watcher::Event::InitApply(blueprint("a", 1)),
            watcher::Event::InitApply(blueprint("b", 1)),
            watcher::Event::InitDone,
            watcher::Event::Init,
            watcher::Event::InitApply(blueprint("a", 1)),
            watcher::Event::InitDone,
        ];
        let names = triggered(gone).await;
        assert_eq!(names.len(), 3, "b deleted while the watch was down re-evaluates a: {names:?}");
    }
}
