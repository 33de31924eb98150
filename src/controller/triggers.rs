//! What triggers a reconcile, and of which Blueprints: every watched change becomes the Blueprints it
//! concerns, and all of them pass one bounded debounce ([`super::debounce`]) before they reach the
//! controller.
//!
//! - a Blueprint created, deleted or with a new `generation` (our own status writes do not count):
//!   every Blueprint of the namespace, since the number of Blueprints decides whether any is processed;
//! - any change of a Dogu or Component (spec or status: health, installed version, start time), of the
//!   health config, or of a sensitive-config Secret: every Blueprint;
//! - a config ConfigMap (global or dogu config): every Blueprint; not the local dogu registry's
//!   ConfigMaps (also `app=ces`): filling that cache of descriptors changes no decision;
//! - any other Secret: the Blueprints that reference it.

use std::collections::{BTreeSet, HashMap};
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

/// A stream of watch events, as the reflectors pass them on.
pub type Events<K> = BoxStream<'static, Result<watcher::Event<K>, watcher::Error>>;
type Triggers = BoxStream<'static, ObjectRef<Decoded<Blueprint>>>;

/// The Blueprints that changes trigger.
#[derive(Clone)]
pub struct Targets {
    blueprints: Store<Decoded<Blueprint>>,
    /// The Secrets each Blueprint references, by Blueprint name, with the generation they were read
    /// from: a Secret's change does not parse every Blueprint again.
    references: Arc<Mutex<HashMap<String, References>>>,
}

/// The Secrets one Blueprint references, and the generation they were read from.
type References = (i64, Arc<BTreeSet<String>>);

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
                    *entry = (generation, Arc::new(blueprint_machine::Reading::of(blueprint).referenced_secrets()));
                }
                entry.1.contains(name)
            })
            .map(|b| ObjectRef::from_obj(b.as_ref()))
            .collect()
    }
}

/// Blueprint events that trigger: an object added, deleted, or with a new generation. `Init*` events
/// of a relist change nothing by themselves: the objects they carry are compared like any other.
pub fn blueprint_triggers(events: Events<Decoded<Blueprint>>, targets: Targets) -> Triggers {
    let mut generations: HashMap<ObjectRef<Decoded<Blueprint>>, Option<i64>> = HashMap::new();
    events
        .flat_map(move |event| {
            let changed = match event {
                Ok(watcher::Event::Apply(blueprint) | watcher::Event::InitApply(blueprint)) => {
                    let key = ObjectRef::from_obj(&blueprint);
                    let generation = blueprint.meta().generation;
                    generations.insert(key, generation) != Some(generation)
                }
                Ok(watcher::Event::Delete(blueprint)) => {
                    generations.remove(&ObjectRef::from_obj(&blueprint));
                    true
                }
                Ok(watcher::Event::Init | watcher::Event::InitDone) | Err(_) => false,
            };
            stream::iter(if changed { targets.every() } else { Vec::new() })
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

/// Global and dogu config; not the local dogu registry's ConfigMaps.
pub fn config_object(config_map: &Decoded<ConfigMap>) -> bool {
    config_target(config_map.meta()).is_some()
}
