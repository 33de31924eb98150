//! A small in-memory cluster: what the executor's actions do to objects, and what the dogu and
//! component operators would eventually report. Observations are built from it like the shell builds
//! them (secret values digested).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use blueprint_machine::api::{
    Blueprint, BlueprintMask, BlueprintMaskObject, BlueprintMaskReference, BlueprintMaskSpec, BlueprintStatus,
    Component, ComponentStatus, Dogu, DoguStatus,
};
use blueprint_machine::decision::{ConfigTarget, ConfigValue, Decision, Operation};
use blueprint_machine::descriptor::DoguDescriptor;
use blueprint_machine::observation::{
    ConfigObservation, DescriptorEntry, DescriptorLookup, ObjectBase, Observation, OperatorFacts, ReferencedConfigMap,
    ReferencedSecret,
};
use blueprint_machine::schedule::Scheduler;
use blueprint_machine::{ApplyFailure, FailureKind};
use blueprint_machine::{config_format, keys_from_secrets};
use serde_json::Value;

use blueprint_machine::fixtures::{NAMESPACE, at, digest};
use blueprint_machine::naming::FIELD_MANAGER;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

/// How many actions the executor sends at once (the shell's `IN_FLIGHT`).
pub const IN_FLIGHT: usize = 8;

/// Drives the scheduler as the executor does: up to `in_flight` actions released at once, each batch
/// ended whole (`perform` says whether an action succeeded); the batches, and the scheduler at the end.
pub fn in_batches(
    decision: &Decision,
    in_flight: usize,
    mut perform: impl FnMut(usize) -> bool,
) -> (Vec<Vec<usize>>, Scheduler) {
    let mut scheduler = Scheduler::new(&decision.actions);
    let mut batches = Vec::new();
    loop {
        let batch: Vec<usize> = std::iter::from_fn(|| scheduler.start()).take(in_flight.max(1)).collect();
        if batch.is_empty() {
            return (batches, scheduler);
        }
        for &index in &batch {
            scheduler.finished(index, perform(index));
        }
        batches.push(batch);
    }
}

/// The order in which the executor starts a decision's actions when each succeeds: batches of up to
/// [`IN_FLIGHT`] that the scheduler releases together.
pub fn batches(decision: &Decision) -> Vec<Vec<usize>> {
    in_batches(decision, IN_FLIGHT, |_| true).0
}

/// One config object of the model, with plaintext values (the model is the cluster, not an observation).
#[derive(Clone, Debug, Default)]
pub struct Store {
    pub entries: BTreeMap<String, String>,
    /// Keys whose values were copied from a Secret (the ConfigMap's annotation).
    pub from_secrets: BTreeSet<String>,
    pub updated: i64,
    pub version: u64,
}

#[derive(Clone, Debug)]
pub struct Model {
    pub blueprint: Blueprint,
    pub dogus: BTreeMap<String, Dogu>,
    pub components: BTreeMap<String, Component>,
    pub global: Option<Store>,
    pub dogu_config: BTreeMap<String, Store>,
    pub sensitive: BTreeMap<String, Store>,
    pub secrets: BTreeMap<String, BTreeMap<String, String>>,
    /// ConfigMaps `configRef`s name (not config objects of the platform), by name.
    pub config_maps: BTreeMap<String, BTreeMap<String, String>>,
    /// Descriptors the registry serves, by `(name, version)`; others are served without dependencies.
    pub descriptors: BTreeMap<(String, String), DoguDescriptor>,
    pub now: i64,
    pub operator_version: Option<String>,
    /// Bumped on every write, like `resourceVersion`.
    pub revision: u64,
    /// Dogus the dogu operator cannot bring up: they stay unavailable.
    pub broken: std::collections::BTreeSet<String>,
    /// The dogu registry cannot be asked: every descriptor is unavailable.
    pub registry_down: bool,
    /// The cluster keeps the blueprint's mask in a `BlueprintMask` object that the Blueprint
    /// references (v3's `crRef`), not inline: observations show it so (the model edits it inline).
    pub mask_in_object: bool,
}

/// The name of the `BlueprintMask` of a model whose mask is kept in an object.
pub const MASK_OBJECT: &str = "generated-mask";

impl Model {
    /// The Blueprint as the cluster has it, and the namespace's `BlueprintMask`s.
    fn stored_blueprint(&self) -> (Blueprint, Vec<Arc<BlueprintMaskObject>>) {
        let inline =
            self.blueprint.blueprint_spec().and_then(|s| s.blueprint_mask.as_ref()).and_then(|m| m.manifest.clone());
        let (true, Some(manifest)) = (self.mask_in_object, inline) else { return (self.blueprint.clone(), Vec::new()) };
        let mut blueprint = self.blueprint.clone();
        let spec = Arc::make_mut(blueprint.spec.spec.as_mut().expect("a spec with a mask"));
        spec.blueprint_mask =
            Some(BlueprintMask { manifest: None, cr_ref: Some(BlueprintMaskReference { name: MASK_OBJECT.into() }) });
        let mut mask = BlueprintMaskObject::new(MASK_OBJECT, BlueprintMaskSpec { dogus: manifest.dogus });
        mask.metadata.namespace = Some(NAMESPACE.into());
        (blueprint, vec![Arc::new(mask)])
    }

    pub fn observe(&self) -> Observation {
        let (blueprint, blueprint_masks) = self.stored_blueprint();
        let wanted = blueprint_machine::Reading::of(&blueprint, &blueprint_masks).wanted_descriptors();
        let descriptors = wanted
            .into_iter()
            .map(|(name, version)| {
                if self.registry_down {
                    let reason = "the dogu registry at https://registry.invalid cannot be reached".to_owned();
                    return DescriptorEntry { name, version, lookup: DescriptorLookup::Unavailable { reason } };
                }
                let descriptor = self
                    .descriptors
                    .get(&(name.clone(), version.clone()))
                    .cloned()
                    .unwrap_or(DoguDescriptor { name: name.clone(), version: version.clone(), ..Default::default() });
                DescriptorEntry { name, version, lookup: DescriptorLookup::Found { descriptor: Arc::new(descriptor) } }
            })
            .collect();
        let referenced = blueprint_machine::Reading::of(&blueprint, &blueprint_masks).referenced_secrets();
        let referenced_secrets = referenced
            .into_iter()
            .map(|name| {
                let secret = match self.secrets.get(&name) {
                    Some(keys) => ReferencedSecret::Present {
                        keys: keys.iter().map(|(k, v)| (k.clone(), digest(v))).collect(),
                        traits: Default::default(),
                    },
                    None => ReferencedSecret::Missing,
                };
                (name, secret)
            })
            .collect();
        let referenced_config_maps = blueprint_machine::Reading::of(&blueprint, &blueprint_masks)
            .referenced_config_maps()
            .into_iter()
            .map(|name| {
                let config_map = match self.config_maps.get(&name) {
                    Some(data) => ReferencedConfigMap::Present { data: data.clone() },
                    None => ReferencedConfigMap::Missing,
                };
                (name, config_map)
            })
            .collect();
        Observation {
            now: at(self.now),
            operator: OperatorFacts::new(NAMESPACE, self.operator_version.clone()),
            blueprint: Some(Arc::new(blueprint)),
            blueprint_count: 1,
            other_blueprints: Vec::new(),
            blueprint_masks,
            undecodable: Vec::new(),
            dogus: self.dogus.values().cloned().map(Arc::new).collect(),
            components: self.components.values().cloned().map(Arc::new).collect(),
            global_config: Arc::new(self.global.as_ref().map(|s| present(s, |v| v.clone())).unwrap_or_default()),
            dogu_configs: self
                .dogu_config
                .iter()
                .map(|(d, s)| (d.clone(), Arc::new(present(s, |v| v.clone()))))
                .collect(),
            sensitive_configs: self
                .sensitive
                .iter()
                .map(|(d, s)| (d.clone(), Arc::new(present(s, |v| digest(v)))))
                .collect(),
            referenced_secrets,
            referenced_config_maps,
            descriptors,
            health_config: None,
            restores: Vec::new(),
            debug_mode: None,
            reconcile_request: None,
        }
    }

    /// Stores the status a reconcile decided, as the shell writes it: only if it differs from the
    /// stored one, and then as the operator's write of the status subresource, now (a `managedFields`
    /// entry: what D58 holds progress back on).
    pub fn store_status(&mut self, status: Option<&Arc<BlueprintStatus>>) {
        let Some(status) = status else { return };
        if self.blueprint.status.as_ref() == Some(status) {
            return;
        }
        self.blueprint.status = Some(status.clone());
        self.written_by(FIELD_MANAGER, Some("status"));
    }

    /// The spec edited by an administrator, now: a new generation and its `managedFields` entry.
    pub fn spec_edited(&mut self) {
        self.blueprint.metadata.generation = Some(self.blueprint.metadata.generation.unwrap_or(1) + 1);
        self.written_by("kubectl-edit", None);
    }

    /// The Blueprint written by `manager` (of `subresource`), now: its `managedFields` entry, one per
    /// manager and subresource as the API server keeps them, takes the time.
    fn written_by(&mut self, manager: &str, subresource: Option<&str>) {
        let entries = self.blueprint.metadata.managed_fields.get_or_insert_with(Vec::new);
        entries.retain(|e| !(e.manager.as_deref() == Some(manager) && e.subresource.as_deref() == subresource));
        entries.push(ManagedFieldsEntry {
            manager: Some(manager.to_owned()),
            operation: Some("Update".to_owned()),
            subresource: subresource.map(str::to_owned),
            time: Some(at(self.now)),
            ..ManagedFieldsEntry::default()
        });
    }

    /// Performs the first `limit` actions of a decision, stopping at the first failure.
    pub fn execute(&mut self, decision: &Decision, limit: usize) -> Result<(), ApplyFailure> {
        self.execute_only(decision, |index| index < limit)
    }

    /// The actions as the executor performs them when one may fail: as the scheduler releases them, up
    /// to `in_flight` at once, each batch performed whole (after a failure the others in flight still
    /// end); which were performed, and the failure the scheduler reports.
    pub fn execute_scheduled(
        &mut self,
        decision: &Decision,
        in_flight: usize,
    ) -> (Vec<bool>, Result<(), ApplyFailure>) {
        let mut failures = BTreeMap::new();
        let mut performed = vec![false; decision.actions.len()];
        let (_, scheduler) = in_batches(decision, in_flight, |index| {
            let result = self.perform(&decision.actions[index].operation);
            performed[index] = result.is_ok();
            if let Err((kind, message)) = result {
                failures.insert(index, ApplyFailure { action: index, kind, message });
            }
            performed[index]
        });
        let result = match scheduler.failure() {
            Some(index) => Err(failures.remove(&index).expect("the reported failure happened")),
            None => Ok(()),
        };
        (performed, result)
    }

    /// The actions `performed` selects, in order (those of one run touch different objects, so their
    /// order does not matter).
    pub fn execute_only(&mut self, decision: &Decision, performed: impl Fn(usize) -> bool) -> Result<(), ApplyFailure> {
        for (index, action) in decision.actions.iter().enumerate().filter(|(index, _)| performed(*index)) {
            self.perform(&action.operation).map_err(|(kind, message)| ApplyFailure { action: index, kind, message })?;
        }
        Ok(())
    }

    fn perform(&mut self, operation: &Operation) -> Result<(), (FailureKind, String)> {
        self.revision += 1;
        match operation {
            Operation::CreateDogu { object } => {
                let name = object.metadata.name.clone().unwrap();
                if self.dogus.contains_key(&name) {
                    return Err((FailureKind::Rejected, format!("dogus/{name} already exists")));
                }
                let mut dogu = (**object).clone();
                dogu.status = Some(DoguStatus { health: Some(String::new()), ..Default::default() });
                self.dogus.insert(name, dogu);
            }
            Operation::PatchDogu { name, patch } => {
                let dogu = self.dogus.get_mut(name).ok_or((FailureKind::NotFound, format!("dogus/{name}")))?;
                *dogu = merge_patched(dogu, patch);
            }
            Operation::DeleteDogu { name } => {
                self.dogus.remove(name);
            }
            Operation::CreateComponent { object } => {
                let name = object.metadata.name.clone().unwrap();
                if self.components.contains_key(&name) {
                    return Err((FailureKind::Rejected, format!("components/{name} already exists")));
                }
                let mut component = (**object).clone();
                component.status = Some(ComponentStatus { health: Some(String::new()), ..Default::default() });
                self.components.insert(name, component);
            }
            Operation::PatchComponent { name, patch } => {
                let component =
                    self.components.get_mut(name).ok_or((FailureKind::NotFound, format!("components/{name}")))?;
                *component = merge_patched(component, patch);
            }
            Operation::DeleteComponent { name } => {
                self.components.remove(name);
            }
            Operation::WriteConfig { target, base, set, remove } => {
                let now = self.now;
                let revision = self.revision;
                let secrets = self.secrets.clone();
                let store = match target {
                    ConfigTarget::Global => self.global.clone(),
                    ConfigTarget::Dogu(d) => self.dogu_config.get(d).cloned(),
                    ConfigTarget::Sensitive(d) => self.sensitive.get(d).cloned(),
                };
                let matches = match (base, &store) {
                    (ObjectBase::Absent, None) => true,
                    (ObjectBase::Version(v), Some(s)) => v == &s.version.to_string(),
                    _ => false,
                };
                if !matches {
                    return Err((FailureKind::Conflict, format!("{} changed since it was observed", target.object())));
                }
                let (mut entries, mut from_secrets) = store.map(|s| (s.entries, s.from_secrets)).unwrap_or_default();
                let mut values = Vec::new();
                for s in set {
                    let (value, from_secret) = match &s.value {
                        ConfigValue::Value(v) => (v.clone(), false),
                        ConfigValue::SecretRef(r) => (
                            secrets
                                .get(&r.name)
                                .and_then(|keys| keys.get(&r.key))
                                .cloned()
                                .ok_or((FailureKind::NotFound, format!("secret {}/{}", r.name, r.key)))?,
                            true,
                        ),
                    };
                    values.push(keys_from_secrets::Set { key: s.key.as_str(), value, from_secret });
                }
                let remove = remove.iter().map(String::as_str);
                let written = if matches!(target, ConfigTarget::Sensitive(_)) {
                    config_format::apply(&mut entries, values.into_iter().map(|v| (v.key, v.value)), remove)
                } else {
                    // The executor's bookkeeping of the keys from Secrets, as on a ConfigMap.
                    keys_from_secrets::apply(&mut entries, &mut from_secrets, values, remove)
                };
                written.map_err(|e| (FailureKind::Rejected, e.to_string()))?;
                let updated = Store { entries, from_secrets, updated: now, version: revision };
                match target {
                    ConfigTarget::Global => self.global = Some(updated),
                    ConfigTarget::Dogu(d) => {
                        self.dogu_config.insert(d.clone(), updated);
                    }
                    ConfigTarget::Sensitive(d) => {
                        self.sensitive.insert(d.clone(), updated);
                    }
                }
            }
        }
        Ok(())
    }

    /// The dogu and component operators catch up: versions installed, everything healthy, dogus
    /// restarted after their config changed (unless paused).
    pub fn operators_progress(&mut self) {
        self.now += 30;
        let names: Vec<String> = self.dogus.keys().cloned().collect();
        for name in &names {
            self.dogu_operator_on(name);
        }
        for (name, component) in &mut self.components {
            let status = component.status.get_or_insert_with(Default::default);
            status.installed_version = Some(component.spec.version.clone());
            status.health = Some("available".into());
            if name == "k8s-blueprint-operator" {
                // The component operator rolled out the new operator: it is the one reconciling now.
                self.operator_version = Some(component.spec.version.clone());
            }
        }
        self.now += 30;
    }

    /// The dogu operator brings one dogu up, 2 s on: the others are still where they were (real
    /// operators report each dogu in its own time, seconds after the write that asked for it).
    pub fn dogu_progress(&mut self, name: &str) {
        self.now += 2;
        self.dogu_operator_on(name);
    }

    /// What the dogu operator does for `name` (if it exists) when it catches up: its version installed,
    /// restarted after its config changed, healthy unless broken; paused, only its health.
    fn dogu_operator_on(&mut self, name: &str) {
        let global_updated = self.global.as_ref().map(|s| s.updated);
        let config_updated = [
            global_updated,
            self.dogu_config.get(name).map(|s| s.updated),
            self.sensitive.get(name).map(|s| s.updated),
        ]
        .into_iter()
        .flatten()
        .max();
        let broken = self.broken.contains(name);
        let now = self.now;
        let Some(dogu) = self.dogus.get_mut(name) else { return };
        let status = dogu.status.get_or_insert_with(Default::default);
        if dogu.spec.pause_reconciliation != Some(true) {
            let started = status.started_at.as_ref().map(|t| t.0.as_second() - at(0).0.as_second());
            let stale_config = match (config_updated, started) {
                // Whole seconds, as the API server records writes: a start in the write's second
                // may have preceded it (the operator waits for a later one, see D45).
                (Some(updated), Some(started)) => started <= updated,
                (Some(_), None) => true,
                _ => false,
            };
            if status.installed_version.as_deref() != Some(dogu.spec.version.as_str()) || stale_config {
                status.installed_version = Some(dogu.spec.version.clone());
                status.started_at = Some(at(now));
            }
        }
        // Paused: the dogu keeps running (and reporting health) but is neither upgraded nor restarted.
        status.health = Some(if broken { "unavailable" } else { "available" }.into());
    }
}

/// A config object as the observer reads it: the values of keys from Secrets digested, not shown.
fn present<V, F: Fn(&String) -> V>(store: &Store, value: F) -> ConfigObservation<V> {
    let (hidden, shown): (BTreeMap<_, _>, BTreeMap<_, _>) =
        store.entries.iter().partition(|(k, _)| store.from_secrets.contains(*k));
    ConfigObservation::Present {
        entries: shown.into_iter().map(|(k, v)| (k.clone(), value(v))).collect(),
        from_secrets: hidden.into_iter().map(|(k, v)| (k.clone(), digest(v))).collect(),
        unrecorded: Default::default(),
        last_updated: Some(at(store.updated)),
        resource_version: Some(store.version.to_string()),
    }
}

/// RFC 7386 JSON merge patch, applied to a typed object.
fn merge_patched<T: serde::Serialize + serde::de::DeserializeOwned>(object: &T, patch: &Value) -> T {
    let mut value = serde_json::to_value(object).unwrap();
    json_patch::merge(&mut value, patch);
    serde_json::from_value(value).unwrap()
}
