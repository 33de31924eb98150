//! What every history must keep: no regression by a stale decision, and a completed blueprint that
//! the cluster satisfies.

use super::*;

/// No write of a stale decision made the cluster go back: no version lower, nothing the blueprint
/// wants uninstalled, no config key that held its wanted value changed.
pub(super) fn no_regression(before: &Model, after: &Model) -> Result<(), TestCaseError> {
    let wanted = wanted(before);
    for (name, dogu) in &before.dogus {
        let Some(now) = after.dogus.get(name) else {
            prop_assert!(!wanted.dogus.contains_key(name), "{name}, which the blueprint wants, was deleted");
            continue;
        };
        let (from, to) = (&dogu.spec.version, &now.spec.version);
        prop_assert!(generate::dogu_rank(to) >= generate::dogu_rank(from), "{name} went back from {from} to {to}");
    }
    for (name, component) in &before.components {
        if let Some(now) = after.components.get(name) {
            let (from, to) = (&component.spec.version, &now.spec.version);
            let (a, b) = (generate::component_rank(from), generate::component_rank(to));
            prop_assert!(b >= a, "component {name} went back from {from} to {to}");
        }
    }
    let stores = |model: &Model| -> BTreeMap<Option<String>, Store> {
        let mut all: BTreeMap<Option<String>, Store> =
            model.dogu_config.iter().map(|(d, s)| (Some(d.clone()), s.clone())).collect();
        if let Some(global) = &model.global {
            all.insert(None, global.clone());
        }
        all
    };
    let (old, new) = (stores(before), stores(after));
    for ((dogu, key), value) in &wanted.config {
        let held = old.get(dogu).and_then(|s| s.entries.get(key));
        if held == Some(value) {
            let now = new.get(dogu).and_then(|s| s.entries.get(key));
            prop_assert!(now == Some(value), "config {dogu:?}/{key} held its wanted value {value:?}, now {now:?}");
        }
    }
    Ok(())
}

/// `Completed=True` means the cluster is what the blueprint says: every wanted dogu installed at its
/// wanted version, every wanted plain config value stored.
pub(super) fn satisfied(model: &Model) -> Result<(), TestCaseError> {
    let wanted = wanted(model);
    for (name, version) in &wanted.dogus {
        let dogu = model.dogus.get(name);
        prop_assert!(dogu.is_some(), "completed without {name}");
        let installed = dogu.and_then(|d| d.status.as_ref()).and_then(|s| s.installed_version.clone());
        prop_assert_eq!(
            installed.as_deref(),
            Some(version.as_str()),
            "completed with {} not at its wanted version",
            name
        );
    }
    for ((dogu, key), value) in &wanted.config {
        let store = match dogu {
            Some(dogu) => model.dogu_config.get(dogu),
            None => model.global.as_ref(),
        };
        let now = store.and_then(|s| s.entries.get(key));
        prop_assert_eq!(now, Some(value), "completed with config {:?}/{} not at its wanted value", dogu, key);
    }
    Ok(())
}

pub(super) struct Wanted {
    pub(super) dogus: BTreeMap<String, String>,
    pub(super) config: BTreeMap<(Option<String>, String), String>,
}

/// What the current blueprint wants: present dogus (by simple name, with version) and plain config values.
pub(super) fn wanted(model: &Model) -> Wanted {
    let spec = model.blueprint.blueprint_spec().cloned().unwrap_or_default();
    let manifest = spec.blueprint.map(std::sync::Arc::unwrap_or_clone).unwrap_or_default();
    let mask = spec.blueprint_mask.and_then(|m| m.manifest?.dogus).unwrap_or_default();
    let masked = |name: &str| mask.iter().find(|m| simple(&m.name) == simple(name));
    let dogus = manifest
        .dogus
        .unwrap_or_default()
        .into_iter()
        .filter(|d| d.absent != Some(true) && masked(&d.name).is_none_or(|m| m.absent != Some(true)))
        .map(|d| {
            let version = masked(&d.name).and_then(|m| m.version.clone()).or(d.version).unwrap_or_default();
            (simple(&d.name).to_owned(), version)
        })
        .collect();
    let mut config = BTreeMap::new();
    let config_spec = manifest.config.unwrap_or_default();
    // A configRef's value is the ConfigMap's (a missing key is never reachable).
    let value_of = |entry: &blueprint_machine::api::ConfigEntry| {
        entry.value.clone().or_else(|| {
            let reference = entry.config_ref.as_ref()?;
            model.config_maps.get(&reference.name)?.get(&reference.key).cloned()
        })
    };
    for entry in config_spec.global.unwrap_or_default() {
        if let (Some(value), None | Some(false)) = (value_of(&entry), entry.absent) {
            config.insert((None, entry.key), value);
        }
    }
    for (dogu, entries) in config_spec.dogus.unwrap_or_default() {
        for entry in entries {
            if let (Some(value), None | Some(false), None | Some(false)) =
                (value_of(&entry), entry.absent, entry.sensitive)
            {
                config.insert((Some(dogu.clone()), entry.key), value);
            }
        }
    }
    Wanted { dogus, config }
}
