//! Test fixtures (feature `fixtures`): builders for observations of the machine, so that each test
//! states only what it is about. The machine's tests and the operator's use the same ones.
//!
//! Defaults follow the acceptance cases' convention (docs/acceptance.md): the ecosystem is healthy,
//! the registry knows every wanted dogu without dependencies, there is no health config (no required
//! components), and the Blueprint is new (no status, generation 1). Builders panic on bad input:
//! they are for tests only.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::api::{
    Blueprint, BlueprintBody, BlueprintSpec, BlueprintStatus, Component, ComponentSpec, ComponentStatus, Dogu,
    DoguSpec, DoguStatus,
};
use crate::decision::{Action, Decision, Operation};
use crate::descriptor::DoguDescriptor;
use crate::observation::{
    ConfigObservation, DescriptorEntry, DescriptorLookup, Observation, OperatorFacts, ReferencedSecret, SecretDigest,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;

pub const NAMESPACE: &str = "ecosystem";
pub const NAME: &str = "test-blueprint";

/// `2026-01-01T00:00:00Z` plus `seconds`.
pub fn at(seconds: i64) -> Time {
    Time(Timestamp::from_second(1_767_225_600 + seconds).unwrap())
}

/// A time from RFC 3339 text.
pub fn time(text: &str) -> Time {
    Time(text.parse().unwrap())
}

/// A stand-in for the observer's keyed digest: deterministic, and never the plaintext.
pub fn digest(value: &str) -> SecretDigest {
    let mut hash: u64 = 0xcbf29ce484222325;
    for byte in value.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x100000001b3);
    }
    SecretDigest(format!("{hash:016x}"))
}

/// A Blueprint whose spec is the given YAML in `v2`'s form (the acceptance cases of upstream's v2
/// are written so), converted to v3 as the API server would.
pub fn blueprint(spec_yaml: &str) -> Blueprint {
    let spec: serde_json::Value = serde_saphyr::from_str(spec_yaml).unwrap_or_else(|e| panic!("test spec: {e}"));
    let v2 =
        serde_json::json!({"apiVersion": "k8s.cloudogu.com/v2", "kind": "Blueprint", "metadata": {}, "spec": spec});
    let v3 = crate::conversion::convert(&v2, crate::conversion::ApiVersion::V3)
        .unwrap_or_else(|e| panic!("test spec does not convert: {e}"));
    let spec: BlueprintSpec = serde_json::from_value(v3["spec"].clone()).unwrap_or_else(|e| panic!("test spec: {e}"));
    blueprint_of(spec)
}

/// A Blueprint whose spec is the given YAML in `v3`'s form.
pub fn blueprint_v3(spec_yaml: &str) -> Blueprint {
    let spec: BlueprintSpec = serde_saphyr::from_str(spec_yaml).unwrap_or_else(|e| panic!("test spec: {e}"));
    blueprint_of(spec)
}

/// A new Blueprint (`NAME` in `NAMESPACE`, generation 1, no status) with this spec.
pub fn blueprint_of(spec: BlueprintSpec) -> Blueprint {
    Blueprint {
        metadata: ObjectMeta {
            name: Some(NAME.into()),
            namespace: Some(NAMESPACE.into()),
            generation: Some(1),
            ..Default::default()
        },
        spec: BlueprintBody { spec: Some(spec.into()) },
        status: None,
        undecodable_spec: None,
    }
}

pub fn dogu_cr(qualified: &str, version: &str) -> Dogu {
    let simple = qualified.split('/').nth(1).unwrap_or(qualified);
    Dogu {
        metadata: ObjectMeta { name: Some(simple.into()), namespace: Some(NAMESPACE.into()), ..Default::default() },
        spec: DoguSpec { name: qualified.into(), version: version.into(), ..Default::default() },
        status: Some(DoguStatus {
            installed_version: Some(version.into()),
            health: Some("available".into()),
            started_at: Some(at(0)),
            status: Some("installed".into()),
            ..Default::default()
        }),
    }
}

pub fn component_cr(qualified: &str, version: &str) -> Component {
    let (namespace, simple) = qualified.split_once('/').unwrap();
    Component {
        metadata: ObjectMeta { name: Some(simple.into()), namespace: Some(NAMESPACE.into()), ..Default::default() },
        spec: ComponentSpec {
            namespace: namespace.into(),
            name: simple.into(),
            version: version.into(),
            ..Default::default()
        },
        status: Some(ComponentStatus {
            installed_version: Some(version.into()),
            health: Some("available".into()),
            status: Some("installed".into()),
            ..Default::default()
        }),
    }
}

/// The config observations of `configs`, shared as an [`Observation`] holds them.
fn shared<V: Clone>(configs: &BTreeMap<String, ConfigObservation<V>>) -> BTreeMap<String, Arc<ConfigObservation<V>>> {
    configs.iter().map(|(dogu, config)| (dogu.clone(), Arc::new(config.clone()))).collect()
}

pub fn present<V>(entries: &[(&str, V)], last_updated: Option<Time>) -> ConfigObservation<V>
where
    V: Clone,
{
    ConfigObservation::Present {
        entries: entries.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
        from_secrets: BTreeMap::new(),
        unrecorded: Default::default(),
        last_updated,
        resource_version: Some("7".into()),
    }
}

fn strings(entries: &[(&str, &str)]) -> Vec<(&'static str, String)> {
    entries.iter().map(|(k, v)| (Box::leak(k.to_string().into_boxed_str()) as &str, v.to_string())).collect()
}

/// A cluster and a blueprint, from which an observation is built.
#[derive(Clone)]
pub struct Scenario {
    pub blueprint: Option<Blueprint>,
    pub blueprint_count: usize,
    pub other_blueprints: Vec<String>,
    pub dogus: Vec<Dogu>,
    pub components: Vec<Component>,
    pub global: ConfigObservation<String>,
    pub dogu_configs: BTreeMap<String, ConfigObservation<String>>,
    pub sensitive: BTreeMap<String, ConfigObservation<SecretDigest>>,
    pub secrets: BTreeMap<String, ReferencedSecret>,
    pub descriptors: BTreeMap<(String, String), DescriptorLookup>,
    /// Descriptors of wanted dogus not listed in `descriptors`: found, without dependencies.
    pub registry_default: Option<DescriptorLookup>,
    pub health_config: Option<BTreeMap<String, String>>,
    pub now: Time,
    pub operator_version: Option<String>,
    /// The operator's own releases and whether it may be replaced (see [`OperatorFacts`]).
    pub own_versions: Option<semver::VersionReq>,
    pub allow_replacement: bool,
    pub provided_dependencies: std::collections::BTreeSet<crate::observation::ProvidedDependency>,
    pub restores: Vec<crate::observation::RestoreObservation>,
    pub debug_mode: Option<crate::observation::DebugModeObservation>,
    pub blueprint_masks: Vec<crate::api::BlueprintMaskObject>,
    /// ConfigMaps `configRef`s may name, by name.
    pub referenced_config_maps: BTreeMap<String, crate::observation::ReferencedConfigMap>,
    /// The operator's own Secrets and which Secrets a blueprint may read.
    pub secret_access: crate::secret_access::SecretAccess,
    /// A reconcile asked for by hand.
    pub reconcile_request: Option<crate::reconcile_request::ReconcileRequest>,
}

/// A `BlueprintMask` named `name` in `NAMESPACE` with this spec (YAML).
pub fn blueprint_mask(name: &str, spec_yaml: &str) -> crate::api::BlueprintMaskObject {
    let spec = serde_saphyr::from_str(spec_yaml).unwrap_or_else(|e| panic!("test mask spec: {e}"));
    let mut mask = crate::api::BlueprintMaskObject::new(name, spec);
    mask.metadata.namespace = Some(NAMESPACE.into());
    mask
}

impl Scenario {
    /// A scenario whose Blueprint's spec is the given YAML in `v3`'s form (see [`blueprint_v3`]).
    pub fn v3(spec_yaml: &str) -> Self {
        Scenario { blueprint: Some(blueprint_v3(spec_yaml)), ..Scenario::new("{}") }
    }

    /// A scenario whose Blueprint's spec is the given YAML in `v2`'s form (see [`blueprint`]).
    pub fn new(spec_yaml: &str) -> Self {
        Scenario {
            blueprint: Some(blueprint(spec_yaml)),
            blueprint_count: 1,
            other_blueprints: Vec::new(),
            dogus: Vec::new(),
            components: Vec::new(),
            global: present::<String>(&[], Some(at(-100))),
            dogu_configs: BTreeMap::new(),
            sensitive: BTreeMap::new(),
            secrets: BTreeMap::new(),
            descriptors: BTreeMap::new(),
            registry_default: None,
            health_config: None,
            now: at(1000),
            operator_version: None,
            own_versions: None,
            allow_replacement: false,
            provided_dependencies: Default::default(),
            restores: Vec::new(),
            blueprint_masks: Vec::new(),
            referenced_config_maps: BTreeMap::new(),
            debug_mode: None,
            reconcile_request: None,
            secret_access: Default::default(),
        }
    }

    pub fn with_dogu(mut self, qualified: &str, version: &str) -> Self {
        self.dogus.push(dogu_cr(qualified, version));
        self
    }

    pub fn with_dogu_cr(mut self, dogu: Dogu) -> Self {
        self.dogus.push(dogu);
        self
    }

    pub fn with_component(mut self, qualified: &str, version: &str) -> Self {
        self.components.push(component_cr(qualified, version));
        self
    }

    pub fn with_component_cr(mut self, component: Component) -> Self {
        self.components.push(component);
        self
    }

    pub fn with_global(mut self, entries: &[(&str, &str)], last_updated: Option<Time>) -> Self {
        self.global = present(&strings(entries), last_updated);
        self
    }

    pub fn with_dogu_config(mut self, dogu: &str, entries: &[(&str, &str)], last_updated: Option<Time>) -> Self {
        self.dogu_configs.insert(dogu.into(), present(&strings(entries), last_updated));
        self
    }

    /// Keys of a normal config object (`None`: global) whose values were copied from a Secret, given
    /// as plaintext (digested here, as the observer does with the keys its annotation names).
    pub fn with_keys_from_secrets(mut self, dogu: Option<&str>, entries: &[(&str, &str)]) -> Self {
        let store = match dogu {
            Some(dogu) => self.dogu_configs.entry(dogu.into()).or_insert_with(|| present::<String>(&[], None)),
            None => &mut self.global,
        };
        if matches!(store, ConfigObservation::Missing) {
            *store = present(&[], None);
        }
        if let ConfigObservation::Present { from_secrets, .. } = store {
            from_secrets.extend(entries.iter().map(|(k, v)| (k.to_string(), digest(v))));
        }
        self
    }

    /// As [`Scenario::with_keys_from_secrets`], for copies no annotation names yet (the observer digests
    /// them because the blueprint fills those keys from a Secret).
    pub fn with_unrecorded_keys_from_secrets(self, dogu: Option<&str>, entries: &[(&str, &str)]) -> Self {
        let mut scenario = self.with_keys_from_secrets(dogu, entries);
        let store = match dogu {
            Some(dogu) => scenario.dogu_configs.get_mut(dogu).expect("just added"),
            None => &mut scenario.global,
        };
        if let ConfigObservation::Present { unrecorded, .. } = store {
            unrecorded.extend(entries.iter().map(|(k, _)| k.to_string()));
        }
        scenario
    }

    /// Sensitive config with the given plaintext values (digested here, as the observer does).
    pub fn with_sensitive(mut self, dogu: &str, entries: &[(&str, &str)], last_updated: Option<Time>) -> Self {
        let digested: Vec<(&str, SecretDigest)> = entries.iter().map(|(k, v)| (*k, digest(v))).collect();
        self.sensitive.insert(dogu.into(), present(&digested, last_updated));
        self
    }

    pub fn with_secret(self, name: &str, keys: &[(&str, &str)]) -> Self {
        self.with_secret_of(name, keys, crate::secret_access::SecretTraits::default())
    }

    /// A referenced Secret of a `type`, or with labels, that decide whether a blueprint may read it.
    pub fn with_secret_of(
        mut self,
        name: &str,
        keys: &[(&str, &str)],
        traits: crate::secret_access::SecretTraits,
    ) -> Self {
        let keys = keys.iter().map(|(k, v)| (k.to_string(), digest(v))).collect();
        self.secrets.insert(name.into(), ReferencedSecret::Present { keys, traits });
        self
    }

    pub fn with_descriptor(mut self, descriptor_json: &str) -> Self {
        let descriptor: DoguDescriptor = serde_json::from_str(descriptor_json).unwrap();
        self.descriptors.insert(
            (descriptor.name.clone(), descriptor.version.clone()),
            DescriptorLookup::Found { descriptor: Arc::new(descriptor) },
        );
        self
    }

    pub fn with_lookup(mut self, name: &str, version: &str, lookup: DescriptorLookup) -> Self {
        self.descriptors.insert((name.into(), version.into()), lookup);
        self
    }

    pub fn with_registry_default(mut self, lookup: DescriptorLookup) -> Self {
        self.registry_default = Some(lookup);
        self
    }

    pub fn with_health_config(mut self, components_yaml: &str) -> Self {
        self.health_config = Some([("components".to_string(), components_yaml.to_string())].into());
        self
    }

    pub fn with_status(mut self, status: BlueprintStatus) -> Self {
        self.blueprint.as_mut().unwrap().status = Some(status.into());
        self
    }

    pub fn with_conditions(self, conditions: Vec<Condition>) -> Self {
        let mut status = self.blueprint.as_ref().unwrap().status.as_deref().cloned().unwrap_or_default();
        status.conditions = conditions;
        self.with_status(status)
    }

    pub fn with_generation(mut self, generation: i64) -> Self {
        self.blueprint.as_mut().unwrap().metadata.generation = Some(generation);
        self
    }

    pub fn with_operator_version(mut self, version: &str) -> Self {
        self.operator_version = Some(version.into());
        self
    }

    /// The operator knows which versions of its component are its own releases.
    pub fn with_own_versions(mut self, requirement: &str, allow_replacement: bool) -> Self {
        self.own_versions = Some(semver::VersionReq::parse(requirement).unwrap());
        self.allow_replacement = allow_replacement;
        self
    }

    /// The operator's own Secrets and which Secrets a blueprint may read.
    pub fn with_secret_access(mut self, access: crate::secret_access::SecretAccess) -> Self {
        self.secret_access = access;
        self
    }

    /// The debug-mode operator's `DebugMode` in `phase`.
    /// The Blueprint's reconcile annotation is `requested_at`; `last_handled` the value handled last.
    pub fn with_reconcile_request(mut self, requested_at: &str, last_handled: Option<&str>) -> Self {
        self.reconcile_request = Some(crate::reconcile_request::ReconcileRequest {
            requested_at: requested_at.into(),
            last_handled: last_handled.map(Into::into),
        });
        self
    }

    pub fn with_debug_mode(mut self, phase: Option<&str>) -> Self {
        self.debug_mode = Some(crate::observation::DebugModeObservation { phase: phase.map(Into::into) });
        self
    }

    /// A Restore of the backup operator, with its `status.status` and `Successful` condition.
    pub fn with_restore(mut self, name: &str, status: Option<&str>, successful: Option<&str>) -> Self {
        self.restores.push(crate::observation::RestoreObservation {
            name: name.into(),
            status: status.map(Into::into),
            successful: successful.map(Into::into),
        });
        self
    }

    /// The platform provides this dependency without its dogu (a feature flag).
    pub fn with_provided(mut self, dependency: crate::observation::ProvidedDependency) -> Self {
        self.provided_dependencies.insert(dependency);
        self
    }

    /// A ConfigMap `configRef`s may name, with these entries.
    pub fn with_referenced_config_map(mut self, name: &str, entries: &[(&str, &str)]) -> Self {
        let data = entries.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        self.referenced_config_maps.insert(name.into(), crate::observation::ReferencedConfigMap::Present { data });
        self
    }

    /// A referenced ConfigMap the observer did not read: a config object holding values from Secrets.
    pub fn with_referenced_config_map_holding_secret_values(mut self, name: &str) -> Self {
        self.referenced_config_maps.insert(name.into(), crate::observation::ReferencedConfigMap::HoldsSecretValues);
        self
    }

    pub fn at(mut self, now: Time) -> Self {
        self.now = now;
        self
    }

    pub fn dogu_mut(&mut self, simple: &str) -> &mut Dogu {
        self.dogus.iter_mut().find(|d| d.metadata.name.as_deref() == Some(simple)).unwrap()
    }

    pub fn observe(&self) -> Observation {
        let blueprint_masks: Vec<Arc<crate::api::BlueprintMaskObject>> =
            self.blueprint_masks.iter().cloned().map(Arc::new).collect();
        let wanted = self
            .blueprint
            .as_ref()
            .map(|b| crate::Reading::of(b, &blueprint_masks).wanted_descriptors())
            .unwrap_or_default();
        let descriptors = wanted
            .into_iter()
            .map(|(name, version)| {
                let lookup = self.descriptors.get(&(name.clone(), version.clone())).cloned().unwrap_or_else(|| {
                    self.registry_default.clone().unwrap_or_else(|| DescriptorLookup::Found {
                        descriptor: Arc::new(DoguDescriptor {
                            name: name.clone(),
                            version: version.clone(),
                            ..Default::default()
                        }),
                    })
                });
                DescriptorEntry { name, version, lookup }
            })
            .collect();
        Observation {
            now: self.now.clone(),
            operator: OperatorFacts {
                own_versions: self.own_versions.clone(),
                allow_replacement: self.allow_replacement,
                provided_dependencies: self.provided_dependencies.clone(),
                secret_access: self.secret_access.clone(),
                ..OperatorFacts::new(NAMESPACE, self.operator_version.clone())
            },
            blueprint: self.blueprint.clone().map(Arc::new),
            blueprint_count: self.blueprint_count,
            other_blueprints: self.other_blueprints.clone(),
            blueprint_masks,
            undecodable: Vec::new(),
            dogus: self.dogus.iter().cloned().map(Arc::new).collect(),
            components: self.components.iter().cloned().map(Arc::new).collect(),
            global_config: Arc::new(self.global.clone()),
            dogu_configs: shared(&self.dogu_configs),
            sensitive_configs: shared(&self.sensitive),
            referenced_secrets: self.secrets.clone(),
            referenced_config_maps: self.referenced_config_maps.clone(),
            descriptors,
            health_config: self.health_config.clone(),
            restores: self.restores.clone(),
            debug_mode: self.debug_mode.clone(),
            reconcile_request: self.reconcile_request.clone(),
        }
    }

    pub fn decide(&self) -> Decision {
        crate::reconcile(&self.observe())
    }

    /// The scenario one reconcile later: the decision's status is stored, nothing else changed.
    pub fn after(&self, decision: &Decision) -> Scenario {
        let mut next = self.clone();
        if let Some(status) = &decision.status {
            next.blueprint.as_mut().unwrap().status = Some(status.clone());
        }
        next
    }
}

pub fn condition<'d>(decision: &'d Decision, type_: &str) -> &'d Condition {
    decision
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
        .unwrap_or_else(|| panic!("no condition {type_} in {decision:#?}"))
}

/// `(status, reason)` of a condition.
pub fn cond(decision: &Decision, type_: &str) -> (String, String) {
    let c = condition(decision, type_);
    (c.status.clone(), c.reason.clone())
}

pub fn pair(status: &str, reason: &str) -> (String, String) {
    (status.to_owned(), reason.to_owned())
}

pub fn message<'d>(decision: &'d Decision, type_: &str) -> &'d str {
    &condition(decision, type_).message
}

pub fn event_reasons(decision: &Decision) -> Vec<&str> {
    decision.events.iter().map(|e| e.reason.as_str()).collect()
}

pub fn event<'d>(decision: &'d Decision, reason: &str) -> &'d crate::Event {
    decision
        .events
        .iter()
        .find(|e| e.reason == reason)
        .unwrap_or_else(|| panic!("no event {reason}: {:#?}", decision.events))
}

/// `kind object` of every action, e.g. `create dogus/nexus`.
pub fn action_summaries(decision: &Decision) -> Vec<String> {
    decision.actions.iter().map(summary).collect()
}

pub fn summary(action: &Action) -> String {
    let kind = match &action.operation {
        Operation::CreateDogu { .. } | Operation::CreateComponent { .. } => "create",
        Operation::PatchDogu { .. } | Operation::PatchComponent { .. } => "patch",
        Operation::DeleteDogu { .. } | Operation::DeleteComponent { .. } => "delete",
        Operation::WriteConfig { .. } => "write",
    };
    format!("{kind} {}", action.operation.object())
}

pub fn state_diff(decision: &Decision) -> &crate::api::StateDiff {
    decision.status.as_ref().and_then(|s| s.state_diff.as_ref()).expect("a state diff")
}

pub fn dogu_actions<'d>(decision: &'d Decision, dogu: &str) -> Vec<&'d str> {
    state_diff(decision)
        .dogu_diffs
        .get(dogu)
        .map(|d| d.needed_actions.iter().map(String::as_str).collect())
        .unwrap_or_default()
}

pub fn component_actions<'d>(decision: &'d Decision, component: &str) -> Vec<&'d str> {
    state_diff(decision)
        .component_diffs
        .get(component)
        .map(|d| d.needed_actions.iter().map(String::as_str).collect())
        .unwrap_or_default()
}

pub fn patch_of<'d>(decision: &'d Decision, object: &str) -> &'d serde_json::Value {
    decision
        .actions
        .iter()
        .find_map(|a| match &a.operation {
            Operation::PatchDogu { patch, .. } | Operation::PatchComponent { patch, .. }
                if a.operation.object() == object =>
            {
                Some(patch)
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no patch of {object}: {:#?}", action_summaries(decision)))
}

/// A dogu descriptor in `dogu.json` form.
pub fn descriptor(name: &str, version: &str, dependencies: &str, volumes: &str) -> String {
    format!(r#"{{"Name":"{name}","Version":"{version}","Dependencies":[{dependencies}],"Volumes":[{volumes}]}}"#)
}
