//! Applying a generated step to the model: spec edits that keep a reachable blueprint reachable, and
//! administrators' drift.

use std::sync::Arc;

use super::checks::{Wanted, wanted};
use super::*;

fn spec_mut(model: &mut Model) -> &mut BlueprintSpec {
    model.spec_edited();
    Arc::make_mut(model.blueprint.spec.spec.get_or_insert_with(Default::default))
}

/// A spec edit that keeps a reachable blueprint reachable: versions only go up, a dogu is removed
/// (or masked away) only when no wanted dogu depends on it and with its config, added only when its
/// dependencies are wanted, config values are plain.
pub fn apply_edit(model: &mut Model, edit: &Edit) {
    let wanted_now = wanted(model);
    let depends_on = |model: &Model, dogu: &str| {
        wanted_now.dogus.iter().any(|(other, version)| {
            model
                .descriptors
                .get(&(format!("official/{other}"), version.clone()))
                .is_some_and(|d| d.dependencies.iter().any(|dep| dep.name == dogu))
        })
    };
    let installed_version = |model: &Model, dogu: &str| model.dogus.get(dogu).map(|d| d.spec.version.clone());
    match edit {
        Edit::VersionUp { dogu } => {
            let name = DOGUS[*dogu];
            let installed = installed_version(model, name);
            let spec = spec_mut(model);
            let Some(entry) = dogus_of(spec).iter_mut().find(|d| simple(&d.name) == name && d.absent != Some(true))
            else {
                return;
            };
            let current = entry.version.clone().unwrap_or_default();
            let floor = [Some(current), installed].into_iter().flatten().max_by_key(|v| version_index(v)).unwrap();
            let next = (version_index(&floor) + 1).min(VERSIONS.len() - 1);
            entry.version = Some(VERSIONS[next].to_owned());
            // A mask version below the new one would ask for a downgrade: drop the version, but keep a
            // mask that makes the dogu absent (dropping that entry would make it wanted again,
            // perhaps without a dependency removed meanwhile: no longer reachable).
            for mask in masks_of(spec).iter_mut().filter(|m| simple(&m.name) == name) {
                mask.version = None;
            }
            masks_of(spec).retain(|m| simple(&m.name) != name || m.absent == Some(true));
        }
        Edit::Add { dogu } => {
            let name = DOGUS[*dogu];
            let installed = installed_version(model, name);
            // Its dependencies must be wanted (descriptors without an entry have none).
            let version = installed.unwrap_or_else(|| VERSIONS[0].to_owned());
            let unmet = model
                .descriptors
                .get(&(format!("official/{name}"), version.clone()))
                .is_some_and(|d| d.dependencies.iter().any(|dep| !wanted_now.dogus.contains_key(&dep.name)));
            let premium = model.dogus.get(name).is_some_and(|d| d.spec.name.starts_with("premium/"));
            let storage_class = model
                .dogus
                .get(name)
                .and_then(|d| d.spec.resources.as_ref())
                .map(|r| r.storage_class_name.clone())
                .filter(Option::is_some);
            if unmet || premium || wanted_now.dogus.contains_key(name) {
                return;
            }
            let spec = spec_mut(model);
            dogus_of(spec).retain(|d| simple(&d.name) != name);
            masks_of(spec).retain(|m| simple(&m.name) != name);
            dogus_of(spec).push(BlueprintDogu {
                name: format!("official/{name}"),
                version: Some(version),
                absent: Some(false),
                // An installed dogu keeps its storage class: the blueprint must name the same one.
                platform_config: storage_class
                    .map(|class| blueprint_machine::api::PlatformConfig {
                        resource: Some(blueprint_machine::api::ResourceConfig {
                            min_volume_size: None,
                            storage_class_name: class,
                        }),
                        ..Default::default()
                    })
                    .map(Box::new),
            });
        }
        Edit::Remove { dogu } | Edit::Mask { dogu } => {
            let name = DOGUS[*dogu];
            if !wanted_now.dogus.contains_key(name) || depends_on(model, name) {
                return;
            }
            let mask = matches!(edit, Edit::Mask { .. });
            let spec = spec_mut(model);
            if mask {
                masks_of(spec).retain(|m| simple(&m.name) != name);
                let qualified = dogus_of(spec).iter().find(|d| simple(&d.name) == name).unwrap().name.clone();
                masks_of(spec).push(MaskDogu { name: qualified, version: None, absent: Some(true) });
            } else if let Some(entry) = dogus_of(spec).iter_mut().find(|d| simple(&d.name) == name) {
                entry.absent = Some(true);
                entry.platform_config = None;
                masks_of(spec).retain(|m| simple(&m.name) != name);
            }
            if let Some(config) = spec
                .blueprint
                .as_mut()
                .map(Arc::make_mut)
                .and_then(|b| b.config.as_mut())
                .and_then(|c| c.dogus.as_mut())
            {
                config.remove(name);
            }
        }
        Edit::Unmask { dogu } => {
            let name = DOGUS[*dogu];
            let masked = model
                .blueprint
                .blueprint_spec()
                .and_then(|s| s.blueprint_mask.as_ref())
                .and_then(|m| m.manifest.as_ref()?.dogus.as_ref())
                .is_some_and(|m| m.iter().any(|m| simple(&m.name) == name && m.absent == Some(true)));
            let version = model
                .blueprint
                .blueprint_spec()
                .and_then(|s| s.blueprint.as_ref())
                .and_then(|b| b.dogus.as_ref())
                .and_then(|d| d.iter().find(|d| simple(&d.name) == name))
                .and_then(|d| d.version.clone());
            let installed = installed_version(model, name);
            let unmet = version.as_ref().is_some_and(|v| {
                model
                    .descriptors
                    .get(&(format!("official/{name}"), v.clone()))
                    .is_some_and(|d| d.dependencies.iter().any(|dep| !wanted_now.dogus.contains_key(&dep.name)))
            });
            // Unmasking must not ask for less than what is installed meanwhile.
            let downgrade = match (&version, &installed) {
                (Some(v), Some(i)) => version_index(v) < version_index(i),
                _ => false,
            };
            if masked && !unmet && !downgrade {
                masks_of(spec_mut(model)).retain(|m| simple(&m.name) != name);
            }
        }
        Edit::ConfigSet { dogu, key, value } => {
            let entry =
                ConfigEntry { key: KEYS[*key].into(), value: Some(VALUES[*value].into()), ..Default::default() };
            set_config(model, *dogu, &wanted_now, entry);
        }
        Edit::ConfigRemove { dogu, key } => {
            let entry = ConfigEntry { key: KEYS[*key].into(), absent: Some(true), ..Default::default() };
            set_config(model, *dogu, &wanted_now, entry);
        }
        Edit::Stopped(stopped) => spec_mut(model).stopped = Some(*stopped),
        Edit::IgnoreDoguHealth(ignore) => spec_mut(model).ignore_dogu_health = Some(*ignore),
        Edit::IgnoreComponentHealth(ignore) => spec_mut(model).ignore_component_health = Some(*ignore),
    }
}

fn set_config(model: &mut Model, dogu: Option<usize>, wanted: &Wanted, entry: ConfigEntry) {
    // Config only for dogus the blueprint wants.
    if let Some(d) = dogu
        && !wanted.dogus.contains_key(DOGUS[d])
    {
        return;
    }
    let spec = spec_mut(model);
    let config =
        Arc::make_mut(spec.blueprint.get_or_insert_with(Default::default)).config.get_or_insert_with(Default::default);
    let entries = match dogu {
        None => config.global.get_or_insert_with(Vec::new),
        Some(d) => config.dogus.get_or_insert_with(BTreeMap::new).entry(DOGUS[d].to_owned()).or_default(),
    };
    entries.retain(|e| e.key != entry.key);
    entries.push(entry);
}

fn dogus_of(spec: &mut BlueprintSpec) -> &mut Vec<BlueprintDogu> {
    Arc::make_mut(spec.blueprint.get_or_insert_with(Default::default)).dogus.get_or_insert_with(Vec::new)
}

fn masks_of(spec: &mut BlueprintSpec) -> &mut Vec<MaskDogu> {
    spec.blueprint_mask
        .get_or_insert_with(Default::default)
        .manifest
        .get_or_insert_with(Default::default)
        .dogus
        .get_or_insert_with(Vec::new)
}

fn version_index(version: &str) -> usize {
    VERSIONS.iter().position(|v| *v == version).unwrap_or(0)
}

pub(super) fn apply_drift(model: &mut Model, drift: &Drift) {
    model.revision += 1;
    match drift {
        Drift::DeleteDogu { dogu } => {
            model.dogus.remove(DOGUS[*dogu]);
        }
        Drift::EditDogu { dogu } => {
            if let Some(d) = model.dogus.get_mut(DOGUS[*dogu]) {
                let d: &mut Dogu = d;
                // The storage class stays: the Dogu CRD keeps it immutable (an edit cannot drop it).
                let class = d.spec.resources.take().and_then(|r| r.storage_class_name);
                d.spec.resources = class.map(|class| blueprint_machine::api::DoguResources {
                    storage_class_name: Some(class),
                    ..Default::default()
                });
                d.spec.additional_mounts = None;
            }
        }
        Drift::ConfigValue { dogu, key, value } => {
            let (now, revision) = (model.now, model.revision);
            let store = match dogu {
                None => model.global.get_or_insert_with(Store::default),
                Some(d) => model.dogu_config.entry(DOGUS[*d].to_owned()).or_default(),
            };
            store.entries.insert(KEYS[*key].to_owned(), VALUES[*value].to_owned());
            store.updated = now;
            store.version = revision;
        }
    }
}
