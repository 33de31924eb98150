//! Generated blueprints and clusters over a small universe of names, versions and keys, so that
//! blueprints and clusters collide often (upgrades, downgrades, config overlaps, name clashes).

use std::collections::BTreeMap;

use blueprint_machine::api::{
    AdditionalMount, BlueprintComponent, BlueprintConfig, BlueprintDogu, BlueprintManifest, BlueprintMask,
    BlueprintMaskManifest, BlueprintSpec, ComponentStatus, ConfigEntry, DoguResources, DoguStatus, MaskDogu,
    PlatformConfig, QuantityText, ResourceConfig, ReverseProxyConfig, SecretReference,
};
use blueprint_machine::descriptor::DoguDescriptor;
use proptest::prelude::*;
use serde_json::json;

use super::model::{Model, Store};
use blueprint_machine::fixtures::{blueprint_of, component_cr, dogu_cr};

pub const DOGUS: [&str; 5] = ["ldap", "cas", "redmine", "postfix", "scm"];
pub const VERSIONS: [&str; 4] = ["1.0.0-1", "1.0.0-2", "1.2.0-1", "2.0.0-1"];
pub const COMPONENTS: [&str; 3] = ["k8s-longhorn", "k8s-velero", "k8s-blueprint-operator"];
pub const COMPONENT_VERSIONS: [&str; 3] = ["1.0.0", "1.1.0", "2.0.0"];

/// The order of a dogu version of the model (the lists are in ascending order): an oracle of "newer"
/// independent of the machine's own version comparison.
pub fn dogu_rank(version: &str) -> usize {
    VERSIONS.iter().position(|v| *v == version).unwrap_or_else(|| panic!("{version} is not a model version"))
}

/// The order of a component version of the model.
pub fn component_rank(version: &str) -> usize {
    COMPONENT_VERSIONS.iter().position(|v| *v == version).unwrap_or_else(|| panic!("{version} is not a model version"))
}
/// Keys that never collide as value and dictionary.
pub const KEYS: [&str; 5] = ["k1", "k2", "a/x", "a/y", "b/z"];
pub const VALUES: [&str; 3] = ["v1", "v2", ""];
/// Plaintext secret values: none of them may ever appear in a decision.
pub const SECRET_VALUES: [&str; 2] = ["plaintext-secret-one", "plaintext-secret-two"];
pub const VOLUMES: [&str; 2] = ["data", "custom"];

/// How much of the generated world may be contradictory.
#[derive(Clone, Copy, Debug)]
pub enum World {
    /// Anything: invalid blueprints, downgrades, namespace switches, missing secrets, unhealthy dogus.
    Any,
    /// A valid, executable blueprint on a cluster the operators can bring to it.
    Reachable,
}

#[derive(Clone, Debug)]
struct DoguKnob {
    premium: bool,
    version: usize,
    absent: bool,
    size: Option<&'static str>,
    body_size: Option<&'static str>,
    mounts: Vec<&'static str>,
    mask: Option<(bool, Option<usize>)>,
    config: Vec<(usize, EntryKnob)>,
    /// `storageClassName`: a class, or `""` (none).
    storage_class: Option<&'static str>,
}

#[derive(Clone, Copy, Debug)]
enum EntryKnob {
    Value(usize),
    Absent,
    Sensitive(usize),
    SensitiveAbsent,
    /// A `configRef` to a key of the ConfigMap `settings` (the last of [`CONFIG_MAP_KEYS`] is missing).
    FromConfigMap(usize),
    /// A `secretRef` without `sensitive`: a Secret's value in the normal config (v3).
    FromSecret(usize),
}

/// The keys of the ConfigMap `settings` `configRef`s name; the model's ConfigMap lacks the last.
pub const CONFIG_MAP_KEYS: [&str; 3] = ["k1", "k2", "missing"];
/// The referenced ConfigMap.
pub const CONFIG_MAP: &str = "settings";

#[derive(Clone, Debug)]
struct InstalledKnob {
    premium: bool,
    version: usize,
    health: &'static str,
    paused: bool,
    size: Option<&'static str>,
    config: Option<Vec<(usize, usize)>>,
    sensitive: Option<Vec<(usize, usize)>>,
}

fn entry(world: World) -> impl Strategy<Value = EntryKnob> {
    let secret_keys: usize = match world {
        World::Any => 3,
        World::Reachable => 2,
    };
    prop_oneof![
        4 => (0..VALUES.len()).prop_map(EntryKnob::Value),
        1 => Just(EntryKnob::Absent),
        2 => (0..secret_keys).prop_map(EntryKnob::Sensitive),
        1 => Just(EntryKnob::SensitiveAbsent),
        1 => (0..secret_keys).prop_map(EntryKnob::FromConfigMap),
        2 => (0..secret_keys).prop_map(EntryKnob::FromSecret),
    ]
}

fn entries(world: World) -> impl Strategy<Value = Vec<(usize, EntryKnob)>> {
    proptest::sample::subsequence((0..KEYS.len()).collect::<Vec<_>>(), 0..=3)
        .prop_flat_map(move |keys| keys.into_iter().map(|k| (Just(k), entry(world))).collect::<Vec<_>>())
}

fn dogu_knob(world: World) -> impl Strategy<Value = DoguKnob> {
    let premium = match world {
        World::Any => 0.1,
        World::Reachable => 0.0,
    };
    (
        proptest::bool::weighted(premium),
        0..VERSIONS.len(),
        proptest::bool::weighted(0.15),
        proptest::option::weighted(0.3, proptest::sample::select(vec!["1Gi", "2Gi", "5Gi"])),
        proptest::option::weighted(0.3, proptest::sample::select(vec!["1M", "100M", "0"])),
        proptest::sample::subsequence(VOLUMES.to_vec(), 0..=2),
        proptest::option::weighted(0.2, (proptest::bool::weighted(0.5), proptest::option::of(0..VERSIONS.len()))),
        entries(world),
        proptest::option::weighted(0.3, proptest::sample::select(vec!["fast", ""])),
    )
        .prop_map(|(premium, version, absent, size, body_size, mounts, mask, config, storage_class)| DoguKnob {
            premium,
            version,
            absent,
            size,
            body_size,
            mounts,
            mask,
            config,
            storage_class,
        })
}

fn installed_knob(world: World) -> impl Strategy<Value = InstalledKnob> {
    let (premium, healths): (f64, Vec<&'static str>) = match world {
        World::Any => (0.1, vec!["available", "available", "available", "unavailable", ""]),
        World::Reachable => (0.0, vec!["available", "available", "unavailable", ""]),
    };
    let stored = || {
        proptest::option::of(
            proptest::sample::subsequence((0..KEYS.len()).collect::<Vec<_>>(), 0..=3)
                .prop_flat_map(|keys| keys.into_iter().map(|k| (Just(k), 0..4usize)).collect::<Vec<_>>()),
        )
    };
    (
        proptest::bool::weighted(premium),
        0..VERSIONS.len(),
        proptest::sample::select(healths),
        proptest::bool::weighted(0.15),
        proptest::option::weighted(0.3, proptest::sample::select(vec!["1Gi", "2Gi", "10Gi"])),
        stored(),
        stored(),
    )
        .prop_map(|(premium, version, health, paused, size, config, sensitive)| InstalledKnob {
            premium,
            version,
            health,
            paused,
            size,
            config,
            sensitive,
        })
}

/// A blueprint and a cluster.
pub fn model(world: World) -> impl Strategy<Value = Model> {
    (
        DOGUS.map(|_| proptest::option::weighted(0.6, dogu_knob(world))),
        COMPONENTS.map(|_| {
            proptest::option::weighted(
                0.4,
                (0..COMPONENT_VERSIONS.len(), proptest::bool::weighted(0.15), proptest::bool::ANY),
            )
        }),
        DOGUS.map(|_| proptest::option::weighted(0.5, installed_knob(world))),
        COMPONENTS
            .map(|_| proptest::option::weighted(0.5, (0..COMPONENT_VERSIONS.len(), proptest::bool::weighted(0.8)))),
        (entries(world), proptest::option::of(proptest::collection::vec((0..KEYS.len(), 0..VALUES.len()), 0..3))),
        (
            proptest::bool::weighted(0.1),
            proptest::bool::weighted(0.2),
            proptest::bool::weighted(0.3),
            proptest::bool::weighted(0.8),
            proptest::bool::weighted(0.3),
        ),
        proptest::collection::vec(proptest::bool::ANY, 5),
    )
        .prop_map(
            move |(dogus, components, installed, installed_components, (global, stored_global), flags, deps)| {
                build(world, dogus, components, installed, installed_components, global, stored_global, flags, deps)
            },
        )
}

#[allow(clippy::too_many_arguments)]
fn build(
    world: World,
    dogus: [Option<DoguKnob>; 5],
    components: [Option<(usize, bool, bool)>; 3],
    installed: [Option<InstalledKnob>; 5],
    installed_components: [Option<(usize, bool)>; 3],
    global: Vec<(usize, EntryKnob)>,
    stored_global: Option<Vec<(usize, usize)>>,
    (stopped, ignore_health, allow_switch, second_secret, mask_in_object): (bool, bool, bool, bool, bool),
    dependencies: Vec<bool>,
) -> Model {
    let reachable = matches!(world, World::Reachable);
    let mut blueprint_dogus = Vec::new();
    let mut mask = Vec::new();
    let mut config: BTreeMap<String, Vec<ConfigEntry>> = BTreeMap::new();
    let mut descriptors = BTreeMap::new();
    for (i, knob) in dogus.iter().enumerate() {
        let Some(knob) = knob else { continue };
        let name = DOGUS[i];
        let namespace = if knob.premium { "premium" } else { "official" };
        // A reachable blueprint never asks for less than what is installed.
        let installed_version = installed[i].as_ref().map(|k| k.version).unwrap_or(0);
        let version = if reachable { knob.version.max(installed_version) } else { knob.version };
        let absent = knob.absent;
        blueprint_dogus.push(BlueprintDogu {
            name: format!("{namespace}/{name}"),
            version: Some(VERSIONS[version].into()),
            absent: Some(absent),
            platform_config: Some(Box::new(PlatformConfig {
                resource: (knob.size.is_some() || knob.storage_class.is_some()).then(|| ResourceConfig {
                    min_volume_size: knob.size.map(Into::into),
                    storage_class_name: knob.storage_class.map(Into::into),
                }),
                reverse_proxy: knob
                    .body_size
                    .map(|s| ReverseProxyConfig { max_body_size: Some(s.into()), ..Default::default() }),
                additional_mounts: (!knob.mounts.is_empty()).then(|| {
                    knob.mounts
                        .iter()
                        .map(|v| AdditionalMount {
                            source_type: "ConfigMap".into(),
                            name: format!("{name}-{v}"),
                            volume: (*v).into(),
                            subfolder: None,
                        })
                        .collect()
                }),
            })),
        });
        let mut masked_absent = false;
        // A mask cannot make an absent dogu present; a reachable blueprint does not try.
        let mask_knob = if reachable && absent { None } else { knob.mask };
        if let Some((mask_absent, mask_version)) = mask_knob {
            masked_absent = mask_absent;
            mask.push(MaskDogu {
                name: format!("{namespace}/{name}"),
                version: mask_version.map(|v| VERSIONS[if reachable { v.max(installed_version) } else { v }].into()),
                absent: Some(mask_absent),
            });
        }
        let present = !absent && !masked_absent;
        if present || !reachable {
            let entries: Vec<ConfigEntry> = knob.config.iter().map(|(k, e)| config_entry(KEYS[*k], *e, true)).collect();
            if !entries.is_empty() {
                config.insert(name.into(), entries);
            }
        }
        // Some dogus depend on another; in a reachable world only on dogus that are wanted.
        if dependencies[i] {
            let other = DOGUS[(i + 1) % DOGUS.len()];
            let wanted_other = dogus[(i + 1) % DOGUS.len()].as_ref().is_some_and(|k| !k.absent && k.mask.is_none());
            if !reachable || wanted_other {
                for v in VERSIONS {
                    descriptors.insert(
                        (format!("{namespace}/{name}"), v.to_owned()),
                        DoguDescriptor {
                            name: format!("{namespace}/{name}"),
                            version: v.into(),
                            dependencies: vec![blueprint_machine::descriptor::Dependency {
                                kind: None,
                                name: other.into(),
                                version: String::new(),
                            }],
                            volumes: VOLUMES
                                .iter()
                                .map(|v| blueprint_machine::descriptor::Volume { name: (*v).into(), clients: vec![] })
                                .collect(),
                            ..Default::default()
                        },
                    );
                }
            }
        }
        for v in VERSIONS {
            descriptors.entry((format!("{namespace}/{name}"), v.to_owned())).or_insert_with(|| DoguDescriptor {
                name: format!("{namespace}/{name}"),
                version: v.into(),
                volumes: VOLUMES
                    .iter()
                    .map(|v| blueprint_machine::descriptor::Volume { name: (*v).into(), clients: vec![] })
                    .collect(),
                ..Default::default()
            });
        }
    }
    let blueprint_components: Vec<BlueprintComponent> = components
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let (version, absent, deploy_namespace) = (*c)?;
            let installed_version = installed_components[i].map(|(v, _)| v).unwrap_or(0);
            let version = if reachable { version.max(installed_version) } else { version };
            // The operator cannot uninstall itself; a reachable blueprint does not ask it to.
            let absent = absent && !(reachable && COMPONENTS[i] == "k8s-blueprint-operator");
            Some(BlueprintComponent {
                name: format!("k8s/{}", COMPONENTS[i]),
                version: Some(COMPONENT_VERSIONS[version].into()),
                absent: Some(absent),
                deploy_config: deploy_namespace.then(
                    || json!({"deployNamespace": format!("{}-ns", COMPONENTS[i]), "overwriteConfig": {"replicas": 2}}),
                ),
            })
        })
        .collect();
    let global_entries: Vec<ConfigEntry> = global
        .iter()
        .filter(|(_, e)| {
            !reachable
                || matches!(
                    e,
                    EntryKnob::Value(_) | EntryKnob::Absent | EntryKnob::FromConfigMap(_) | EntryKnob::FromSecret(_)
                )
        })
        .map(|(k, e)| config_entry(KEYS[*k], *e, false))
        .collect();

    let spec = BlueprintSpec {
        display_name: Some("generated".into()),
        blueprint: Some(std::sync::Arc::new(BlueprintManifest {
            dogus: Some(blueprint_dogus),
            components: Some(blueprint_components),
            config: Some(BlueprintConfig { dogus: Some(config), global: Some(global_entries) }),
        })),
        blueprint_mask: Some(BlueprintMask {
            manifest: Some(BlueprintMaskManifest { dogus: Some(mask) }),
            cr_ref: None,
        }),
        ignore_dogu_health: Some(ignore_health),
        ignore_component_health: None,
        allow_dogu_namespace_switch: Some(allow_switch),
        stopped: Some(stopped && !reachable),
    };
    let blueprint = blueprint_of(spec);

    let mut model = Model {
        blueprint,
        dogus: BTreeMap::new(),
        components: BTreeMap::new(),
        global: stored_global.map(|entries| store(&entries, false)),
        dogu_config: BTreeMap::new(),
        sensitive: BTreeMap::new(),
        secrets: BTreeMap::new(),
        config_maps: [(
            CONFIG_MAP.to_owned(),
            [("k1".to_owned(), "from-a-config-map".to_owned()), ("k2".to_owned(), VALUES[0].to_owned())].into(),
        )]
        .into(),
        descriptors,
        now: 100,
        operator_version: None,
        revision: 1,
        broken: Default::default(),
        registry_down: false,
        mask_in_object,
    };
    model.secrets.insert(
        "s1".into(),
        [("p1".to_string(), SECRET_VALUES[0].to_string()), ("p2".to_string(), SECRET_VALUES[1].to_string())].into(),
    );
    if second_secret || reachable {
        model.secrets.insert("s2".into(), [("p1".to_string(), SECRET_VALUES[1].to_string())].into());
    }
    for (i, knob) in installed.iter().enumerate() {
        let Some(knob) = knob else { continue };
        let namespace = if knob.premium { "premium" } else { "official" };
        let mut dogu = dogu_cr(&format!("{namespace}/{}", DOGUS[i]), VERSIONS[knob.version]);
        dogu.spec.pause_reconciliation = Some(knob.paused);
        // Installed with the class the blueprint names (a reachable blueprint keeps it); in any world a
        // blueprint may name another (inconsistent).
        let class = dogus[i].as_ref().and_then(|k| k.storage_class).filter(|_| reachable);
        dogu.spec.resources = (knob.size.is_some() || class.is_some()).then(|| DoguResources {
            min_data_volume_size: knob.size.map(|s| QuantityText(s.into())),
            data_volume_size: None,
            storage_class_name: class.map(Into::into),
        });
        dogu.status = Some(DoguStatus { health: Some(knob.health.into()), ..dogu.status.unwrap() });
        model.dogus.insert(DOGUS[i].into(), dogu);
        if let Some(entries) = &knob.config {
            model.dogu_config.insert(DOGUS[i].into(), store(entries, false));
        }
        if let Some(entries) = &knob.sensitive {
            model.sensitive.insert(DOGUS[i].into(), store(entries, true));
        }
    }
    for (i, c) in installed_components.iter().enumerate() {
        let Some((version, healthy)) = c else { continue };
        let mut component = component_cr(&format!("k8s/{}", COMPONENTS[i]), COMPONENT_VERSIONS[*version]);
        component.status = Some(ComponentStatus {
            health: Some(if *healthy { "available" } else { "unavailable" }.into()),
            ..component.status.unwrap()
        });
        model.components.insert(COMPONENTS[i].into(), component);
        if COMPONENTS[i] == "k8s-blueprint-operator" {
            model.operator_version = Some(COMPONENT_VERSIONS[*version].into());
        }
    }
    model
}

fn config_entry(key: &str, knob: EntryKnob, dogu: bool) -> ConfigEntry {
    match knob {
        EntryKnob::Value(v) => ConfigEntry { key: key.into(), value: Some(VALUES[v].into()), ..Default::default() },
        EntryKnob::Absent => ConfigEntry { key: key.into(), absent: Some(true), ..Default::default() },
        EntryKnob::Sensitive(k) => ConfigEntry {
            key: key.into(),
            sensitive: Some(true),
            secret_ref: Some(Box::new(secret_key(k))),
            // A global sensitive entry is invalid: the generator makes it on purpose in the `Any` world.
            value: None,
            config_ref: None,
            absent: (!dogu).then_some(false),
        },
        EntryKnob::SensitiveAbsent => {
            ConfigEntry { key: key.into(), sensitive: Some(true), absent: Some(true), ..Default::default() }
        }
        EntryKnob::FromSecret(k) => {
            ConfigEntry { key: key.into(), secret_ref: Some(Box::new(secret_key(k))), ..Default::default() }
        }
        EntryKnob::FromConfigMap(k) => ConfigEntry {
            key: key.into(),
            config_ref: Some(Box::new(blueprint_machine::api::ConfigMapKeyReference {
                name: CONFIG_MAP.into(),
                key: CONFIG_MAP_KEYS[k].into(),
            })),
            ..Default::default()
        },
    }
}

/// The Secret key `k` of a generated reference (`s2` exists only in some models).
fn secret_key(k: usize) -> SecretReference {
    SecretReference { name: if k == 2 { "s2" } else { "s1" }.into(), key: ["p1", "p2", "p1"][k].into() }
}

/// A stored config object; values index into `VALUES`, and for sensitive config then `SECRET_VALUES`.
fn store(entries: &[(usize, usize)], sensitive: bool) -> Store {
    let secrets: &[&str] = if sensitive { &SECRET_VALUES } else { &[] };
    let all: Vec<&str> = VALUES.iter().chain(secrets.iter()).copied().collect();
    Store {
        entries: entries.iter().map(|(k, v)| (KEYS[*k].to_string(), all[*v % all.len()].to_string())).collect(),
        from_secrets: Default::default(),
        updated: 0,
        version: 1,
    }
}
