//! Builds the machine's [`Observation`] from Kubernetes objects: the same code serves the controller
//! (objects from its reflector stores) and `plan` (objects from a file).
//!
//! Config objects are recognised by their registry labels (`k8s.cloudogu.com/type`, `dogu.name`).
//! A config object's "last updated" time is the newest `metadata.managedFields[].time` (the last write
//! by any field manager), else its `creationTimestamp`.

pub mod decoded;
pub mod digest;
pub mod memo;
pub mod referenced;
pub mod shared_parts;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::DynamicObject;

use blueprint_machine::Reading;
use blueprint_machine::api::{Blueprint, BlueprintMaskObject, Component, Dogu};
use blueprint_machine::decision::ConfigTarget;
use blueprint_machine::naming::{HEALTH_CONFIG, label};
use blueprint_machine::observation::{
    ConfigObservation, DebugModeObservation, DescriptorEntry, Observation, OperatorFacts, ReferencedConfigMap,
    ReferencedSecret, RestoreObservation, SecretDigest, UndecodableObject,
};
use blueprint_machine::secret_access::SecretTraits;

use blueprint_machine::config_format::{self, DATA_KEY};
use blueprint_machine::keys_from_secrets;
use decoded::{Decoded, Undecodable};

pub use digest::Digester;
pub use memo::KeptConfigs;

/// Which config a ConfigMap or Secret holds, from its labels (`blueprint_machine::naming`).
pub fn config_target(meta: &ObjectMeta) -> Option<ConfigTarget> {
    ConfigTarget::from_labels(meta.labels.as_ref())
}

/// When the object was last written.
pub fn last_updated(meta: &ObjectMeta) -> Option<Time> {
    meta.managed_fields
        .iter()
        .flatten()
        .filter_map(|entry| entry.time.clone())
        .max()
        .or_else(|| meta.creation_timestamp.clone())
}

/// A config ConfigMap, flattened. The values of the keys its annotation says came from a Secret
/// (`blueprint_machine::keys_from_secrets`), and of the keys `filled` the blueprint fills from a
/// Secret, are digested, never kept.
pub fn config_map_observation(
    config_map: &ConfigMap,
    digester: &Digester,
    filled: &BTreeSet<String>,
) -> ConfigObservation<String> {
    let last_updated = last_updated(&config_map.metadata);
    let resource_version = config_map.metadata.resource_version.clone();
    let recorded = match annotated_keys(config_map) {
        Ok(keys) => keys,
        // Which values came from a Secret is unknown: show none of them.
        Err(reason) => return ConfigObservation::Malformed { reason, last_updated, resource_version },
    };
    let text = config_map.data.as_ref().and_then(|d| d.get(DATA_KEY)).map(String::as_str).unwrap_or("");
    match config_format::parse(text) {
        Ok(mut entries) => {
            let mut from_secrets = BTreeMap::new();
            let mut unrecorded = BTreeSet::new();
            for key in recorded.iter().chain(filled) {
                if let Some(value) = entries.remove(key) {
                    from_secrets.insert(key.clone(), digester.digest(value.as_bytes()));
                    if !recorded.contains(key) {
                        unrecorded.insert(key.clone());
                    }
                }
            }
            ConfigObservation::Present { entries, from_secrets, unrecorded, last_updated, resource_version }
        }
        Err(e) if recorded.is_empty() && filled.is_empty() => {
            ConfigObservation::Malformed { reason: e.to_string(), last_updated, resource_version }
        }
        // The parser's message may quote a value that came from a Secret.
        Err(e) => ConfigObservation::Malformed {
            reason: format!("{} (details withheld: it holds values from Secrets)", sensitive_error_kind(&e)),
            last_updated,
            resource_version,
        },
    }
}

/// The keys a ConfigMap's annotation says hold values copied from Secrets.
fn annotated_keys(config_map: &ConfigMap) -> Result<BTreeSet<String>, String> {
    match config_map.metadata.annotations.as_ref().and_then(|a| a.get(keys_from_secrets::ANNOTATION)) {
        None => Ok(BTreeSet::new()),
        Some(text) => keys_from_secrets::parse(text),
    }
}

/// A sensitive-config Secret, flattened, values digested.
pub fn sensitive_observation(secret: &Secret, digester: &Digester) -> ConfigObservation<SecretDigest> {
    let last_updated = last_updated(&secret.metadata);
    let resource_version = secret.metadata.resource_version.clone();
    let text =
        secret_value(secret, DATA_KEY).map(|bytes| String::from_utf8_lossy(&bytes).into_owned()).unwrap_or_default();
    match config_format::parse(&text) {
        Ok(entries) => ConfigObservation::Present {
            entries: entries.into_iter().map(|(k, v)| (k, digester.digest(v.as_bytes()))).collect(),
            from_secrets: Default::default(),
            unrecorded: Default::default(),
            last_updated,
            resource_version,
        },
        // The parser's message may quote the content: keep only what kind of problem it is.
        Err(e) => ConfigObservation::Malformed {
            reason: format!("{} (details withheld: the content is sensitive)", sensitive_error_kind(&e)),
            last_updated,
            resource_version,
        },
    }
}

fn sensitive_error_kind(error: &config_format::ConfigError) -> &'static str {
    match error {
        config_format::ConfigError::Yaml(_) => "config.yaml is not valid YAML",
        config_format::ConfigError::NotAMapping => "config.yaml is not a mapping",
        config_format::ConfigError::NotAString(_) => "config.yaml holds a value that is not a string",
        _ => "config.yaml is not in the registry format",
    }
}

/// A Secret's value for `key`: `data`, or `stringData` of an object not yet stored.
fn secret_value(secret: &Secret, key: &str) -> Option<Vec<u8>> {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|b| b.0.clone())
        .or_else(|| secret.string_data.as_ref().and_then(|d| d.get(key)).map(|s| s.as_bytes().to_vec()))
}

/// A Secret the blueprint references, each key digested.
pub fn referenced_secret(secret: Option<&Secret>, digester: &Digester) -> ReferencedSecret {
    let Some(secret) = secret else {
        return ReferencedSecret::Missing;
    };
    let mut keys = BTreeMap::new();
    for (key, value) in secret.data.iter().flatten() {
        keys.insert(key.clone(), digester.digest(&value.0));
    }
    for (key, value) in secret.string_data.iter().flatten() {
        keys.insert(key.clone(), digester.digest(value.as_bytes()));
    }
    ReferencedSecret::Present { keys, traits: secret_traits(secret) }
}

/// What the machine needs to decide whether a blueprint may read `secret` (D53): its type, and
/// whether it is opted in or a dogu's sensitive config. Nothing else of it.
pub fn secret_traits(secret: &Secret) -> SecretTraits {
    let label = |name: &str| secret.metadata.labels.as_ref().and_then(|labels| labels.get(name)).map(String::as_str);
    SecretTraits {
        secret_type: secret.type_.clone().filter(|t| !t.is_empty()),
        opted_in: label(blueprint_machine::secret_access::OPT_IN_LABEL) == Some("true"),
        sensitive_config: label(label::CONFIG_TYPE) == Some(label::SENSITIVE_CONFIG_TYPE),
    }
}

/// Everything an observation is built from.
pub struct Snapshot<'a> {
    pub now: Time,
    pub operator: OperatorFacts,
    /// The cluster's objects, shared with the caches they come from (the observation keeps them).
    pub blueprint: Option<Arc<Blueprint>>,
    /// The namespace's `BlueprintMask`s.
    pub blueprint_masks: Vec<Arc<BlueprintMaskObject>>,
    pub blueprint_count: usize,
    /// The names of the namespace's other Blueprints.
    pub other_blueprints: Vec<String>,
    pub dogus: Vec<Arc<Dogu>>,
    pub components: Vec<Arc<Component>>,
    pub config_maps: Vec<&'a ConfigMap>,
    pub secrets: Vec<&'a Secret>,
    /// Objects that do not fit their type (`Dogu`, `Component`, `ConfigMap`, `Secret`), by kind.
    pub undecodable: Vec<(&'a str, &'a Undecodable)>,
    /// Referenced Secrets digested already (the controller's cache); `None`: digest them from `secrets`.
    pub referenced_secrets: Option<BTreeMap<String, ReferencedSecret>>,
    /// Referenced ConfigMaps read already (the controller's cache); `None`: find them in `config_maps`.
    pub referenced_config_maps: Option<BTreeMap<String, ReferencedConfigMap>>,
    /// The keys of each normal config object (by dogu; `None`: global) the blueprint fills from a Secret
    /// (the controller's reading of the Blueprint); `None`: read them from `blueprint`.
    pub keys_filled_from_secrets: Option<BTreeMap<Option<String>, BTreeSet<String>>>,
    pub descriptors: Vec<DescriptorEntry>,
    /// The backup operator's Restores (empty where its CRDs are not installed).
    pub restores: Vec<RestoreObservation>,
    /// The debug-mode operator's `DebugMode` named `debug-mode`, if any.
    pub debug_mode: Option<DebugModeObservation>,
}

/// A `DebugMode` (read untyped: its CRD belongs to the debug-mode operator), if it is the one the
/// debug-mode operator uses.
pub fn debug_mode_observation(debug_mode: &DynamicObject) -> Option<DebugModeObservation> {
    (debug_mode.metadata.name.as_deref() == Some(blueprint_machine::naming::DEBUG_MODE))
        .then(|| DebugModeObservation { phase: debug_mode.data["status"]["phase"].as_str().map(str::to_owned) })
}

/// What a Restore (`restores.k8s.cloudogu.com`, read untyped: its CRD belongs to the backup operator)
/// says about its progress.
pub fn restore_observation(restore: &DynamicObject) -> RestoreObservation {
    let status = &restore.data["status"];
    let successful = status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Successful"))
        .and_then(|c| c["status"].as_str())
        .map(str::to_owned);
    RestoreObservation {
        name: restore.metadata.name.clone().unwrap_or_default(),
        status: status["status"].as_str().map(str::to_owned),
        successful,
    }
}

impl Snapshot<'_> {
    /// The machine's observation. The config objects' observations come from `kept` where their
    /// objects are unchanged, and are kept there for the next one.
    pub fn observe(&self, digester: &Digester, kept: &KeptConfigs) -> Observation {
        let mut global_config = Arc::new(ConfigObservation::Missing);
        let mut dogu_configs = BTreeMap::new();
        // The Blueprint is read once, and only where the controller did not read it already (plan).
        let own_reading = std::cell::OnceCell::new();
        let reading = || {
            own_reading
                .get_or_init(|| self.blueprint.as_deref().map(|b| Reading::of(b, &self.blueprint_masks)))
                .as_ref()
        };
        let computed;
        let filled = match &self.keys_filled_from_secrets {
            Some(filled) => filled,
            None => {
                computed = reading().map(Reading::keys_filled_from_secrets).unwrap_or_default();
                &computed
            }
        };
        let none = BTreeSet::new();
        let filled_in = |dogu: Option<&String>| filled.get(&dogu.cloned()).unwrap_or(&none);
        let mut health_config = None;
        let mut config_maps = kept.config_maps.pass();
        for config_map in &self.config_maps {
            let meta = &config_map.metadata;
            if meta.name.as_deref() == Some(HEALTH_CONFIG) {
                health_config = Some(config_map.data.clone().unwrap_or_default());
            }
            let target = config_target(meta);
            let dogu = match &target {
                Some(ConfigTarget::Global) => None,
                Some(ConfigTarget::Dogu(dogu)) => Some(dogu),
                _ => continue,
            };
            let filled = filled_in(dogu);
            let name = meta.name.as_deref().unwrap_or_default();
            let observed = config_maps.observe(name, meta.resource_version.as_deref(), filled, || {
                config_map_observation(config_map, digester, filled)
            });
            match target {
                Some(ConfigTarget::Dogu(dogu)) => _ = dogu_configs.insert(dogu, observed),
                _ => global_config = observed,
            }
        }
        drop(config_maps);
        let mut sensitive_configs = BTreeMap::new();
        let mut secrets = kept.secrets.pass();
        for secret in &self.secrets {
            let meta = &secret.metadata;
            if let Some(ConfigTarget::Sensitive(dogu)) = config_target(meta) {
                let name = meta.name.as_deref().unwrap_or_default();
                let observed = secrets
                    .observe(name, meta.resource_version.as_deref(), &none, || sensitive_observation(secret, digester));
                sensitive_configs.insert(dogu, observed);
            }
        }
        drop(secrets);
        // A config object that does not fit its type is unreadable config; a Dogu or Component CR that
        // does not fit is unreadable to the machine (it blocks what concerns it).
        let mut undecodable = Vec::new();
        for (kind, object) in &self.undecodable {
            match (*kind, config_target(&object.metadata)) {
                ("ConfigMap", Some(ConfigTarget::Global)) => global_config = Arc::new(malformed(object)),
                ("ConfigMap", Some(ConfigTarget::Dogu(dogu))) => {
                    dogu_configs.insert(dogu, Arc::new(malformed(object)));
                }
                ("Secret", Some(ConfigTarget::Sensitive(dogu))) => {
                    sensitive_configs.insert(dogu, Arc::new(malformed(object)));
                }
                ("Dogu" | "Component", _) => undecodable.push(UndecodableObject {
                    kind: (*kind).to_owned(),
                    name: object.metadata.name.clone().unwrap_or_default(),
                    problem: object.problem.clone(),
                }),
                _ => {}
            }
        }
        // The controller digested the referenced Secrets already (its cache of digests).
        let referenced_secrets = match &self.referenced_secrets {
            Some(digested) => digested.clone(),
            None => self.digest_referenced_secrets(digester, reading()),
        };
        let referenced_config_maps = match &self.referenced_config_maps {
            Some(read) => read.clone(),
            None => self.find_referenced_config_maps(reading()),
        };
        Observation {
            now: self.now.clone(),
            operator: self.operator.clone(),
            blueprint: self.blueprint.clone(),
            blueprint_count: self.blueprint_count,
            other_blueprints: self.other_blueprints.clone(),
            blueprint_masks: self.blueprint_masks.clone(),
            dogus: self.dogus.clone(),
            components: self.components.clone(),
            undecodable,
            global_config,
            dogu_configs,
            sensitive_configs,
            referenced_secrets,
            referenced_config_maps,
            descriptors: self.descriptors.clone(),
            health_config,
            restores: self.restores.clone(),
            debug_mode: self.debug_mode.clone(),
            // The controller's own memory (`plan` is no operator, and has none).
            reconcile_request: None,
        }
    }

    /// The ConfigMaps the blueprint's `configRef`s name, from `config_maps`; a name without a ConfigMap
    /// there is missing.
    fn find_referenced_config_maps(&self, reading: Option<&Reading<'_>>) -> BTreeMap<String, ReferencedConfigMap> {
        let referenced = reading.map(Reading::referenced_config_maps).unwrap_or_default();
        referenced
            .into_iter()
            .map(|name| {
                let found = self.config_maps.iter().find(|c| c.metadata.name.as_deref() == Some(name.as_str()));
                let observed = match found {
                    Some(config_map) => referenced_config_map_content(config_map),
                    None => ReferencedConfigMap::Missing,
                };
                (name, observed)
            })
            .collect()
    }

    /// The Secrets the blueprint references, digested from `secrets`; a name without a Secret there is
    /// missing.
    fn digest_referenced_secrets(
        &self,
        digester: &Digester,
        reading: Option<&Reading<'_>>,
    ) -> BTreeMap<String, ReferencedSecret> {
        let referenced = reading.map(Reading::referenced_secrets).unwrap_or_default();
        let mut digested = BTreeMap::new();
        for secret in &self.secrets {
            if let Some(name) = secret.metadata.name.as_ref().filter(|n| referenced.contains(*n)) {
                digested.insert(name.clone(), referenced_secret(Some(secret), digester));
            }
        }
        for name in referenced {
            digested.entry(name).or_insert(ReferencedSecret::Missing);
        }
        digested
    }
}

/// A ConfigMap a `configRef` names, as read (`None`: it does not exist).
pub fn referenced_config_map(read: Option<&Decoded<ConfigMap>>) -> ReferencedConfigMap {
    match read {
        None => ReferencedConfigMap::Missing,
        Some(Decoded::Undecodable(_)) => ReferencedConfigMap::Unreadable,
        Some(Decoded::Object(config_map)) => referenced_config_map_content(config_map),
    }
}

/// A referenced ConfigMap's data, unless it holds values copied from Secrets (a config object whose
/// annotation names such keys): those are never read through a `configRef`.
fn referenced_config_map_content(config_map: &ConfigMap) -> ReferencedConfigMap {
    if !matches!(annotated_keys(config_map), Ok(keys) if keys.is_empty()) {
        return ReferencedConfigMap::HoldsSecretValues;
    }
    ReferencedConfigMap::Present { data: config_map.data.clone().unwrap_or_default() }
}

/// A config object that does not fit its type.
fn malformed<V>(object: &Undecodable) -> ConfigObservation<V> {
    ConfigObservation::Malformed {
        reason: object.problem.clone(),
        last_updated: last_updated(&object.metadata),
        resource_version: object.metadata.resource_version.clone(),
    }
}

/// Whether a ConfigMap is the health config (it need not carry the registry labels).
pub fn is_health_config(config_map: &ConfigMap) -> bool {
    config_map.metadata.name.as_deref() == Some(HEALTH_CONFIG)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config_map(text: &str, annotation: Option<&str>) -> ConfigMap {
        let annotations = annotation.map(|a| json!({keys_from_secrets::ANNOTATION: a})).unwrap_or(json!({}));
        serde_json::from_value(json!({
            "metadata": {"name": "postfix-config", "resourceVersion": "3", "annotations": annotations},
            "data": {DATA_KEY: text},
        }))
        .unwrap()
    }

    #[test]
    fn keys_the_annotation_names_are_digested_not_shown() {
        let digester = Digester::random();
        let map =
            config_map("relay:\n  password: s3cr3t\n  host: mail.example.com\n", Some(r#"["relay/password","gone"]"#));
        let observed = config_map_observation(&map, &digester, &BTreeSet::new());
        let ConfigObservation::Present { entries, from_secrets, .. } = &observed else { panic!("{observed:?}") };
        assert_eq!(entries.keys().collect::<Vec<_>>(), ["relay/host"]);
        // A name without its key in the object is no key from a Secret.
        assert_eq!(from_secrets.clone(), BTreeMap::from([("relay/password".to_owned(), digester.digest(b"s3cr3t"))]));
        assert!(!serde_json::to_string(&observed).unwrap().contains("s3cr3t"));
    }

    /// A copy the Go operator wrote before the switch: no annotation names it, the blueprint fills the key
    /// from a Secret: digested (and marked, so that it is written once more and recorded).
    #[test]
    fn keys_the_blueprint_fills_from_secrets_are_digested_without_an_annotation() {
        let digester = Digester::random();
        let map = config_map("relay:\n  password: s3cr3t\n  host: mail.example.com\n", None);
        let filled = BTreeSet::from(["relay/password".to_owned(), "not/there".to_owned()]);
        let observed = config_map_observation(&map, &digester, &filled);
        let ConfigObservation::Present { entries, from_secrets, unrecorded, .. } = &observed else {
            panic!("{observed:?}")
        };
        assert_eq!(entries.keys().collect::<Vec<_>>(), ["relay/host"]);
        assert_eq!(from_secrets.keys().collect::<Vec<_>>(), ["relay/password"]);
        assert_eq!(unrecorded.iter().collect::<Vec<_>>(), ["relay/password"]);
        assert!(!serde_json::to_string(&observed).unwrap().contains("s3cr3t"));
    }

    /// A `configRef` cannot read a config object that holds values from Secrets.
    #[test]
    fn a_referenced_config_map_holding_secret_values_is_not_read() {
        let annotated = config_map("password: s3cr3t\n", Some(r#"["password"]"#));
        assert_eq!(referenced_config_map_content(&annotated), ReferencedConfigMap::HoldsSecretValues);
        let garbage = config_map("password: s3cr3t\n", Some("password"));
        assert_eq!(referenced_config_map_content(&garbage), ReferencedConfigMap::HoldsSecretValues);
        let plain = config_map("host: mail\n", None);
        assert!(matches!(referenced_config_map_content(&plain), ReferencedConfigMap::Present { .. }));
    }

    #[test]
    fn an_unreadable_annotation_or_document_shows_no_value() {
        let digester = Digester::random();
        let observed =
            config_map_observation(&config_map("password: s3cr3t\n", Some("password")), &digester, &BTreeSet::new());
        let ConfigObservation::Malformed { reason, .. } = &observed else { panic!("{observed:?}") };
        assert!(reason.contains(keys_from_secrets::ANNOTATION), "{reason}");

        let observed = config_map_observation(
            &config_map("password: s3cr3t\nbroken: [\n", Some(r#"["password"]"#)),
            &digester,
            &BTreeSet::new(),
        );
        let ConfigObservation::Malformed { reason, .. } = &observed else { panic!("{observed:?}") };
        assert!(!reason.contains("s3cr3t") && reason.contains("withheld"), "{reason}");
    }
}
