//! `k8s.cloudogu.com/v1`, the Blueprint API of Cloudogu's Go operator up to 2.8 (docs/migration.md),
//! to and from v3. Our CRD serves v1 beside v2 and v3, so a cluster that stores v1 Blueprints takes our
//! CRD without a rewrite, the operator reads them as v3, and a Go operator 2.x reads them again after a
//! way back (`storage-version --to v1`).
//!
//! | v1 | v3 |
//! |---|---|
//! | `spec.blueprint`: JSON text (`"blueprintApi": "v2"`) | `spec.blueprint` |
//! | `dogus[].targetState` / `components[].targetState`: `absent` | `absent: true` |
//! | `platformConfig.resource.minVolumeSize: "0"` (the Go operator's "none") | no `minVolumeSize` |
//! | `config.*.present` / `absent` | config entries with `value` / `absent` (sorted by key) |
//! | `sensitiveConfig.present`: `*****` (the Go operator censors a value it applied) | no entry (the value stays as it is); the key kept in [`V1_FIELDS_ANNOTATION`] |
//! | `sensitiveConfig.present`: any other value | `{key, sensitive: true}`, a problem: a Secret must hold the value (it is not carried over) |
//! | `spec.blueprintMask`: JSON text | `spec.blueprintMask.manifest` (an empty mask: none) |
//! | `spec.dryRun` | `spec.stopped` |
//! | `status.phase` | kept in [`V1_FIELDS_ANNOTATION`]; on the way back derived from the conditions where there are any |
//! | `status.effectiveBlueprint`, `status.stateDiff` | the same in v3's shape (sensitive values never) |
//!
//! What v1 cannot hold of a v3 object (the display name, a mask reference, `storageClassName`, config
//! entries from Secrets or ConfigMaps, the conditions) goes into [`V3_FIELDS_ANNOTATION`] on the v1
//! object and comes back on the way to v3. A sensitive v3 entry never reaches v1's spec: a Go operator
//! that re-applied it would write `*****` into the dogu's secrets. Censored keys go back to v1 as
//! `*****` only where the phase is `completed` (the Go operator never re-applies a completed Blueprint).
//!
//! Unlike the v2 conversion this one decodes the object into types: v1 objects are small, and every
//! free-form value (a component's `deployConfig`) and the metadata's fields stay JSON text.

mod diff;
mod kept;
mod wire;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::value::RawValue;

use diff::{diff_to_v1, diff_to_v3};
pub use kept::V1Fields;
use kept::{KeptClass, KeptEntry, V3Fields};
use wire::*;

use super::{ConversionError, V1_FIELDS_ANNOTATION, V3_FIELDS_ANNOTATION};
use crate::api::{
    BlueprintConfig, BlueprintDogu, BlueprintMask, BlueprintMaskManifest, ConfigEntry, MaskDogu, PlatformConfig,
};

/// What the Go operator writes in place of a sensitive value it applied.
const CENSORED: &str = "*****";

/// Writes the v1 Blueprint `object` as v3 (`api_version`) into `out`.
pub(super) fn to_v3(object: &str, api_version: &str, out: &mut Vec<u8>) -> Result<(), ConversionError> {
    let input: ObjectIn<SpecV1, StatusV1> = decode(object)?;
    let mut metadata = input.metadata;
    let mut annotations = annotations(&metadata)?;
    let mut kept = match annotations.remove(V3_FIELDS_ANNOTATION) {
        Some(text) => V3Fields::read(&text)?,
        None => V3Fields::default(),
    };
    let mut fields = kept.v1.take().unwrap_or_default();
    fields.problems.clear();
    let spec = input.spec.map(|spec| spec_to_v3(spec, &mut kept, &mut fields));
    let status = input.status.map(|status| {
        // A phase the way to v1 derived from conditions is not the Go operator's: the conditions come back.
        if kept.conditions.is_empty() {
            fields.phase = status.phase.clone().filter(|p| !p.is_empty());
        }
        StatusV3 {
            conditions: std::mem::take(&mut kept.conditions),
            effective_blueprint: status.effective_blueprint.map(|m| manifest_to_v3(m, &mut V1Fields::default())),
            state_diff: status.state_diff.map(diff_to_v3),
            observed_generation: kept.observed_generation,
        }
    });
    if !fields.is_empty() {
        annotations.insert(V1_FIELDS_ANNOTATION.into(), serde_json::to_string(&fields).expect("serializes"));
    }
    set_annotations(&mut metadata, annotations);
    write(out, ObjectOut { api_version, kind: "Blueprint", metadata, spec, status })
}

/// Writes the v3 Blueprint `object` as v1 (`api_version`) into `out`.
pub(super) fn to_v1(object: &str, api_version: &str, out: &mut Vec<u8>) -> Result<(), ConversionError> {
    let input: ObjectIn<SpecV3, StatusV3> = decode(object)?;
    let mut metadata = input.metadata;
    let generation = metadata.as_ref().and_then(|m| m.get("generation")).and_then(|g| g.get().parse::<i64>().ok());
    let mut annotations = annotations(&metadata)?;
    let fields = match annotations.remove(V1_FIELDS_ANNOTATION) {
        Some(text) => V1Fields::read(&text)?,
        None => V1Fields::default(),
    };
    let mut kept = V3Fields::default();
    let phase = match &input.status {
        Some(status) if !status.conditions.is_empty() => derived_phase(status, generation),
        _ => fields.phase.clone(),
    };
    let completed = phase.as_deref() == Some("completed");
    let blueprint_emitted = input.spec.as_ref().is_some_and(|spec| spec.blueprint.is_some());
    let spec = input.spec.map(|spec| spec_to_v1(spec, &fields, completed, &mut kept));
    let status = input.status.map(|status| {
        kept.conditions = status.conditions;
        kept.observed_generation = status.observed_generation;
        StatusV1 {
            phase: phase.clone(),
            effective_blueprint: status
                .effective_blueprint
                .map(|m| manifest_to_v1(m, &BTreeMap::new(), false, &mut V3Fields::default())),
            state_diff: status.state_diff.map(diff_to_v1),
        }
    });
    let residual = not_reexpressed(fields, phase.as_deref(), completed, blueprint_emitted);
    if !residual.is_empty() {
        kept.v1 = Some(residual);
    }
    if !kept.is_empty() {
        annotations.insert(V3_FIELDS_ANNOTATION.into(), serde_json::to_string(&kept).expect("serializes"));
    }
    set_annotations(&mut metadata, annotations);
    write(out, ObjectOut { api_version, kind: "Blueprint", metadata, spec, status })
}

/// The v1 fields a v3 object carried, less what the v1 object written now says itself: a v1 Blueprint
/// that went to v3 and back is what its writer wrote, without an annotation of ours. The problems are
/// found again from the v1 text; unreadable text is obsolete once v3 holds a blueprint or mask, and is
/// written back as the v1 field where it does not.
fn not_reexpressed(fields: V1Fields, phase: Option<&str>, completed: bool, blueprint_emitted: bool) -> V1Fields {
    let mask_written_back = fields.unreadable_mask.is_none();
    V1Fields {
        phase: fields.phase.filter(|kept| Some(kept.as_str()) != phase),
        censored: if completed && blueprint_emitted { BTreeMap::new() } else { fields.censored },
        blueprint_mask_id: fields.blueprint_mask_id.filter(|_| !mask_written_back),
        ..V1Fields::default()
    }
}

fn decode<'a, T: serde::Deserialize<'a>>(object: &'a str) -> Result<T, ConversionError> {
    serde_json::from_str(object).map_err(|e| ConversionError::NotJson(e.to_string()))
}

fn write<S: serde::Serialize, T: serde::Serialize>(
    out: &mut Vec<u8>,
    object: ObjectOut<'_, S, T>,
) -> Result<(), ConversionError> {
    serde_json::to_writer(out, &object).map_err(|e| ConversionError::NotJson(e.to_string()))
}

/// The metadata's annotations.
fn annotations(metadata: &Option<BTreeMap<String, Free>>) -> Result<BTreeMap<String, String>, ConversionError> {
    match metadata.as_ref().and_then(|m| m.get("annotations")) {
        None => Ok(BTreeMap::new()),
        Some(raw) if raw.get() == "null" => Ok(BTreeMap::new()),
        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| ConversionError::NotJson(e.to_string())),
    }
}

/// Sets the metadata's annotations (none: no `annotations` field).
fn set_annotations(metadata: &mut Option<BTreeMap<String, Free>>, annotations: BTreeMap<String, String>) {
    if annotations.is_empty() {
        if let Some(metadata) = metadata.as_mut() {
            metadata.remove("annotations");
        }
        return;
    }
    let text = serde_json::to_string(&annotations).expect("serializes");
    let raw = RawValue::from_string(text).expect("JSON");
    metadata.get_or_insert_with(BTreeMap::new).insert("annotations".into(), raw);
}

/// v1's phase for a v3 status: what the conditions say where v1 has a word for it, else none (the Go
/// operator then starts the Blueprint over).
fn derived_phase(status: &StatusV3, generation: Option<i64>) -> Option<String> {
    let condition = |kind: &str| status.conditions.iter().find(|c| c.type_ == kind).map(|c| c.status.as_str());
    if condition("Valid") == Some("False") {
        return Some("invalid".into());
    }
    let current = generation.is_none() || status.observed_generation == generation;
    (condition("Completed") == Some("True") && current).then(|| "completed".into())
}

fn spec_to_v3(spec: SpecV1, kept: &mut V3Fields, fields: &mut V1Fields) -> SpecV3 {
    let blueprint = spec.blueprint.and_then(|text| match serde_json::from_str::<ManifestV1>(&text) {
        Ok(manifest) => {
            fields.unreadable_blueprint = None;
            if let Some(api) = manifest.blueprint_api.as_deref().filter(|api| *api != "v2") {
                fields
                    .problems
                    .push(format!("spec.blueprint: blueprintApi {api:?}: the Go operator reads only \"v2\""));
            }
            let mut manifest = manifest_to_v3(manifest, fields);
            restore_kept(&mut manifest, kept);
            Some(manifest)
        }
        Err(error) => {
            fields.problems.push(format!("spec.blueprint is not the JSON of a v1 blueprint: {error}"));
            fields.unreadable_blueprint = Some(text);
            None
        }
    });
    let mask_ref = kept.blueprint_mask_ref.take();
    let blueprint_mask =
        match spec.blueprint_mask.map(|text| serde_json::from_str::<MaskV1>(&text).map_err(|e| (text, e))) {
            Some(Ok(mask)) => {
                fields.unreadable_mask = None;
                fields.blueprint_mask_id = Some(mask.blueprint_mask_id).filter(|id| !id.is_empty());
                mask_to_v3(mask.dogus, mask_ref)
            }
            Some(Err((text, error))) => {
                fields.problems.push(format!("spec.blueprintMask is not the JSON of a v1 mask: {error}"));
                fields.unreadable_mask = Some(text);
                mask_ref.map(|cr_ref| BlueprintMask { manifest: None, cr_ref: Some(cr_ref) })
            }
            None => mask_ref.map(|cr_ref| BlueprintMask { manifest: None, cr_ref: Some(cr_ref) }),
        };
    SpecV3 {
        display_name: kept.display_name.take(),
        blueprint,
        blueprint_mask,
        ignore_dogu_health: spec.ignore_dogu_health,
        ignore_component_health: spec.ignore_component_health,
        allow_dogu_namespace_switch: spec.allow_dogu_namespace_switch,
        stopped: spec.dry_run,
    }
}

/// An empty v1 mask is none; a v1 mask with dogus wins over a kept reference (v3 allows one of them).
fn mask_to_v3(dogus: Vec<MaskDoguV1>, mask_ref: Option<crate::api::BlueprintMaskReference>) -> Option<BlueprintMask> {
    if dogus.is_empty() {
        return mask_ref.map(|cr_ref| BlueprintMask { manifest: None, cr_ref: Some(cr_ref) });
    }
    let dogus = dogus
        .into_iter()
        .map(|d| MaskDogu {
            name: d.name,
            version: d.version.filter(|v| !v.is_empty()),
            absent: absent(d.target_state.as_deref()),
        })
        .collect();
    Some(BlueprintMask { manifest: Some(BlueprintMaskManifest { dogus: Some(dogus) }), cr_ref: None })
}

/// `absent: true` for v1's `targetState: absent`, nothing for `present` (or anything else: the
/// machine's own check of the v3 Blueprint does not see v1's word, so an odd one is a problem).
fn absent(target_state: Option<&str>) -> Option<bool> {
    (target_state == Some("absent")).then_some(true)
}

fn target_problem(what: &str, name: &str, target_state: Option<&str>, fields: &mut V1Fields) {
    if let Some(state) = target_state.filter(|s| !["", "present", "absent"].contains(s)) {
        fields.problems.push(format!("{what} {name}: targetState {state:?} is neither present nor absent"));
    }
}

fn manifest_to_v3(manifest: ManifestV1, fields: &mut V1Fields) -> ManifestV3 {
    let dogus: Vec<BlueprintDogu> = manifest
        .dogus
        .into_iter()
        .map(|dogu| {
            target_problem("dogu", &dogu.name, dogu.target_state.as_deref(), fields);
            BlueprintDogu {
                absent: absent(dogu.target_state.as_deref()),
                version: dogu.version.filter(|v| !v.is_empty()),
                platform_config: dogu.platform_config.and_then(platform_to_v3).map(Box::new),
                name: dogu.name,
            }
        })
        .collect();
    let components: Vec<ComponentV3> = manifest
        .components
        .into_iter()
        .map(|component| {
            target_problem("component", &component.name, component.target_state.as_deref(), fields);
            ComponentV3 {
                absent: absent(component.target_state.as_deref()),
                version: component.version.filter(|v| !v.is_empty()),
                deploy_config: component.deploy_config,
                name: component.name,
            }
        })
        .collect();
    ManifestV3 {
        dogus: (!dogus.is_empty()).then_some(dogus),
        components: (!components.is_empty()).then_some(components),
        config: manifest.config.and_then(|config| config_to_v3(config, fields)),
    }
}

/// The Go operator writes `minVolumeSize: "0"` and `reverseProxy: {}` for none.
fn platform_to_v3(mut config: PlatformConfig) -> Option<PlatformConfig> {
    if let Some(resource) = config.resource.as_mut()
        && resource.min_volume_size.as_deref() == Some("0")
    {
        resource.min_volume_size = None;
    }
    config.resource = config.resource.filter(|r| *r != Default::default());
    config.reverse_proxy = config.reverse_proxy.filter(|r| *r != Default::default());
    config.additional_mounts = config.additional_mounts.filter(|m| !m.is_empty());
    (config != PlatformConfig::default()).then_some(config)
}

fn config_to_v3(config: ConfigV1, fields: &mut V1Fields) -> Option<BlueprintConfig> {
    let global = entries_to_v3(config.global, false);
    let mut dogus = BTreeMap::new();
    for (dogu, keys) in config.dogus {
        let mut entries = entries_to_v3(keys.config, false);
        let mut censored: BTreeSet<String> = fields.censored.remove(&dogu).unwrap_or_default().into_iter().collect();
        for key in &keys.sensitive_config.absent {
            censored.remove(key);
        }
        for (key, value) in &keys.sensitive_config.present {
            if value == CENSORED {
                censored.insert(key.clone());
            } else {
                censored.remove(key);
                fields.problems.push(format!(
                    "the config of {dogu}: the sensitive key {key} has a value in the v1 Blueprint, which is not carried over: put it into a Secret and name it in secretRef"
                ));
                entries.push(ConfigEntry { key: key.clone(), sensitive: Some(true), ..Default::default() });
            }
        }
        entries.extend(keys.sensitive_config.absent.into_iter().map(|key| ConfigEntry {
            key,
            absent: Some(true),
            sensitive: Some(true),
            ..Default::default()
        }));
        if !censored.is_empty() {
            fields.censored.insert(dogu.clone(), censored.into_iter().collect());
        }
        if !entries.is_empty() {
            dogus.insert(dogu, entries);
        }
    }
    let config =
        BlueprintConfig { dogus: (!dogus.is_empty()).then_some(dogus), global: (!global.is_empty()).then_some(global) };
    (config != BlueprintConfig::default()).then_some(config)
}

/// Values (sorted by key), then removed keys.
fn entries_to_v3(keys: KeysV1, sensitive: bool) -> Vec<ConfigEntry> {
    let sensitive = sensitive.then_some(true);
    let values =
        keys.present.into_iter().map(|(key, value)| ConfigEntry { key, value: Some(value), ..Default::default() });
    let removed =
        keys.absent.into_iter().map(|key| ConfigEntry { key, absent: Some(true), sensitive, ..Default::default() });
    values.chain(removed).collect()
}

/// Puts back what the way to v1 kept: storage classes, config entries at their places.
fn restore_kept(manifest: &mut ManifestV3, kept: &mut V3Fields) {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let classes = std::mem::take(&mut kept.storage_class_names);
    for dogu in manifest.dogus.iter_mut().flatten() {
        let occurrence = seen.entry(dogu.name.clone()).or_default();
        if let Some(class) = classes.iter().find(|c| c.dogu == dogu.name && c.occurrence == *occurrence) {
            let platform = dogu.platform_config.get_or_insert_with(Default::default);
            platform.resource.get_or_insert_with(Default::default).storage_class_name =
                Some(class.storage_class_name.clone());
        }
        *occurrence += 1;
    }
    let global = std::mem::take(&mut kept.global);
    let dogus = std::mem::take(&mut kept.dogus);
    if global.is_empty() && dogus.is_empty() {
        return;
    }
    let config = manifest.config.get_or_insert_with(Default::default);
    insert_kept(config.global.get_or_insert_with(Vec::new), global);
    for (dogu, entries) in dogus {
        insert_kept(config.dogus.get_or_insert_with(BTreeMap::new).entry(dogu).or_default(), entries);
    }
    config.global = config.global.take().filter(|g| !g.is_empty());
}

fn insert_kept(list: &mut Vec<ConfigEntry>, mut kept: Vec<KeptEntry>) {
    kept.sort_by_key(|k| k.at);
    for KeptEntry { at, entry } in kept {
        list.insert(at.min(list.len()), entry);
    }
}

fn spec_to_v1(spec: SpecV3, fields: &V1Fields, completed: bool, kept: &mut V3Fields) -> SpecV1 {
    kept.display_name = spec.display_name;
    let blueprint = match spec.blueprint {
        Some(manifest) => {
            let mut manifest = manifest_to_v1(manifest, &fields.censored, completed, kept);
            manifest.blueprint_api = Some("v2".into());
            Some(serde_json::to_string(&manifest).expect("serializes"))
        }
        None => fields.unreadable_blueprint.clone(),
    };
    let mask = match spec.blueprint_mask {
        Some(BlueprintMask { manifest, cr_ref }) => {
            kept.blueprint_mask_ref = cr_ref;
            manifest.and_then(|m| m.dogus).unwrap_or_default()
        }
        None => Vec::new(),
    };
    let blueprint_mask = match (&fields.unreadable_mask, mask.is_empty()) {
        (Some(text), true) => text.clone(),
        _ => {
            // The Go operator refuses a Blueprint without a mask: an empty one it reads as none.
            let dogus = mask
                .into_iter()
                .map(|d| MaskDoguV1 { target_state: Some(target_state(d.absent)), name: d.name, version: d.version })
                .collect();
            let id = fields.blueprint_mask_id.clone().unwrap_or_default();
            serde_json::to_string(&MaskV1 { blueprint_mask_api: Some("v1".into()), blueprint_mask_id: id, dogus })
                .expect("serializes")
        }
    };
    SpecV1 {
        blueprint,
        blueprint_mask: Some(blueprint_mask),
        ignore_dogu_health: spec.ignore_dogu_health,
        ignore_component_health: spec.ignore_component_health,
        allow_dogu_namespace_switch: spec.allow_dogu_namespace_switch,
        dry_run: spec.stopped,
    }
}

fn target_state(absent: Option<bool>) -> String {
    if absent == Some(true) { "absent" } else { "present" }.into()
}

/// v3's manifest in v1's shape; what v1 cannot hold goes to `kept` (a spec) or is left out (a status).
fn manifest_to_v1(
    manifest: ManifestV3,
    censored: &BTreeMap<String, Vec<String>>,
    completed: bool,
    kept: &mut V3Fields,
) -> ManifestV1 {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let dogus = manifest
        .dogus
        .unwrap_or_default()
        .into_iter()
        .map(|mut dogu| {
            let occurrence = seen.entry(dogu.name.clone()).or_default();
            if let Some(resource) = dogu.platform_config.as_mut().and_then(|p| p.resource.as_mut())
                && let Some(class) = resource.storage_class_name.take()
            {
                kept.storage_class_names.push(KeptClass {
                    dogu: dogu.name.clone(),
                    occurrence: *occurrence,
                    storage_class_name: class,
                });
            }
            *occurrence += 1;
            DoguV1 {
                target_state: Some(target_state(dogu.absent)),
                version: dogu.version,
                platform_config: dogu.platform_config.map(|config| *config).and_then(platform_to_v3),
                name: dogu.name,
            }
        })
        .collect();
    let components = manifest
        .components
        .unwrap_or_default()
        .into_iter()
        .map(|c| ComponentV1 {
            target_state: Some(target_state(c.absent)),
            version: c.version,
            deploy_config: c.deploy_config,
            name: c.name,
        })
        .collect();
    let config = manifest.config.unwrap_or_default();
    let mut v1 =
        ConfigV1 { global: entries_to_v1(config.global.unwrap_or_default(), &mut kept.global), ..Default::default() };
    for (dogu, entries) in config.dogus.unwrap_or_default() {
        let mut kept_here = Vec::new();
        let mut keys = DoguConfigV1::default();
        for (at, entry) in entries.into_iter().enumerate() {
            let sensitive = entry.sensitive == Some(true);
            let target = if sensitive { &mut keys.sensitive_config } else { &mut keys.config };
            match plain(&entry) {
                Some(Plain::Value(value)) if !sensitive && !target.present.contains_key(&entry.key) => {
                    target.present.insert(entry.key.clone(), value.to_owned());
                }
                Some(Plain::Absent) if !target.absent.contains(&entry.key) => target.absent.push(entry.key.clone()),
                _ => kept_here.push(KeptEntry { at, entry }),
            }
        }
        if completed {
            for key in censored.get(&dogu).into_iter().flatten() {
                keys.sensitive_config.present.entry(key.clone()).or_insert_with(|| CENSORED.into());
            }
        }
        if !kept_here.is_empty() {
            kept.dogus.insert(dogu.clone(), kept_here);
        }
        if !keys.config.is_empty() || !keys.sensitive_config.is_empty() {
            v1.dogus.insert(dogu, keys);
        }
    }
    if completed {
        for (dogu, keys) in censored {
            if v1.dogus.contains_key(dogu) {
                continue;
            }
            let present = keys.iter().map(|key| (key.clone(), CENSORED.to_owned())).collect();
            let sensitive_config = KeysV1 { present, absent: Vec::new() };
            v1.dogus.insert(dogu.clone(), DoguConfigV1 { config: KeysV1::default(), sensitive_config });
        }
    }
    ManifestV1 { blueprint_api: None, dogus, components, config: Some(v1) }
}

/// An entry v1 can hold: a plain value or a removed key.
enum Plain<'a> {
    Value(&'a str),
    Absent,
}

fn plain(entry: &ConfigEntry) -> Option<Plain<'_>> {
    if entry.secret_ref.is_some() || entry.config_ref.is_some() {
        return None;
    }
    match (entry.absent == Some(true), entry.value.as_deref()) {
        (true, None) => Some(Plain::Absent),
        (false, Some(value)) => Some(Plain::Value(value)),
        _ => None,
    }
}

/// Global config in v1's shape (v1 has no sensitive global config).
fn entries_to_v1(entries: Vec<ConfigEntry>, kept: &mut Vec<KeptEntry>) -> KeysV1 {
    let mut keys = KeysV1::default();
    for (at, entry) in entries.into_iter().enumerate() {
        match plain(&entry) {
            _ if entry.sensitive == Some(true) => kept.push(KeptEntry { at, entry }),
            Some(Plain::Value(value)) if !keys.present.contains_key(&entry.key) => {
                keys.present.insert(entry.key.clone(), value.to_owned());
            }
            Some(Plain::Absent) if !keys.absent.contains(&entry.key) => keys.absent.push(entry.key.clone()),
            _ => kept.push(KeptEntry { at, entry }),
        }
    }
    keys
}
