//! Static validation: everything that can be checked from the Blueprint alone.

use crate::config_format;
use crate::model::{Config, ConfigEntry, ParsedBlueprint, QuantityFormat, TargetComponent, TargetDogu};
use crate::problem::Problem;

/// The deploy-config keys a component's CR can carry.
const DEPLOY_CONFIG_KEYS: [&str; 2] = ["deployNamespace", "overwriteConfig"];

pub(crate) fn validate(blueprint: &ParsedBlueprint) -> Result<(), Problem> {
    let problems: Vec<Problem> = [
        Problem::wrap_all("blueprint is invalid", blueprint_problems(blueprint)),
        Problem::wrap_all("blueprint mask is invalid", mask_problems(blueprint)),
        Problem::wrap_all("blueprint mask does not match the blueprint", mask_match_problems(blueprint)),
    ]
    .into_iter()
    .flatten()
    .collect();
    match Problem::wrap_all("blueprint spec is invalid", problems) {
        Some(problem) => Err(problem),
        None => Ok(()),
    }
}

fn blueprint_problems(blueprint: &ParsedBlueprint) -> Vec<Problem> {
    let mut problems: Vec<Problem> = blueprint.dogus.iter().filter_map(dogu_problems).collect();
    if let Some(p) = duplicates("dogus", blueprint.dogus.iter().map(|d| d.name.simple.as_str())) {
        problems.push(p);
    }
    problems.extend(blueprint.components.iter().flat_map(component_problems));
    if let Some(p) = duplicates("components", blueprint.components.iter().map(|c| c.name.simple.as_str())) {
        problems.push(p);
    }
    problems.extend(config_problems(&blueprint.config));
    problems
}

fn dogu_problems(dogu: &TargetDogu) -> Option<Problem> {
    let mut problems = Vec::new();
    if !dogu.absent && dogu.version.is_none() {
        problems.push(Problem::new(format!("dogu version must not be empty: {}", dogu.name)));
    }
    if let Some(size) = dogu.reverse_proxy.max_body_size
        && !size.is_zero()
        && size.format() != QuantityFormat::DecimalSI
    {
        problems
            .push(Problem::new(format!("dogu proxy body size is not in Decimal SI (\"M\" or \"G\"): {}", dogu.name)));
    }
    for mount in &dogu.mounts {
        if mount.source_type != "ConfigMap" && mount.source_type != "Secret" {
            problems.push(Problem::new(format!(
                "dogu additional mounts sourceType must be one of 'ConfigMap', 'Secret': {}",
                dogu.name
            )));
        }
        if mount.subfolder.starts_with('/') {
            problems.push(Problem::new(format!(
                "dogu additional mounts Subfolder must be a relative path : {}",
                dogu.name
            )));
        }
    }
    Problem::wrap_all("dogu is invalid", problems)
}

fn component_problems(component: &TargetComponent) -> Vec<Problem> {
    let mut problems = Vec::new();
    let name = &component.name;
    if !component.absent && component.version.is_none() {
        problems.push(Problem::new(format!("version of component \"{name}\" must not be empty")));
    }
    match component.deploy_config {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::Object(map)) => {
            // Keys other than these never reach the CR, so the blueprint could never complete.
            for key in map.keys().filter(|k| !DEPLOY_CONFIG_KEYS.contains(&k.as_str())) {
                problems.push(Problem::new(format!(
                    "deployConfig of component \"{name}\" has the unsupported key \"{key}\": only \"deployNamespace\" and \"overwriteConfig\" are applied"
                )));
            }
            if map.get("deployNamespace").is_some_and(|v| !v.is_string()) {
                problems.push(Problem::new(format!(
                    "deployConfig.deployNamespace of component \"{name}\" must be a string"
                )));
            }
        }
        _ => problems.push(Problem::new(format!("deployConfig of component \"{name}\" must be an object"))),
    }
    problems
}

fn config_problems(config: &Config) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (dogu, entries) in &config.dogus {
        if dogu.is_empty() {
            problems.push(Problem::new("dogu name for dogu config should not be empty"));
        }
        let mut entry_problems: Vec<Problem> = entries.iter().flat_map(dogu_entry_problems).collect();
        entry_problems.extend(duplicate_keys(entries));
        if !entry_problems.is_empty() {
            problems.extend(Problem::wrap_all(format!("config for dogu \"{dogu}\" is invalid"), entry_problems));
        }
    }
    let mut global_problems: Vec<Problem> = config.global.iter().flat_map(global_entry_problems).collect();
    global_problems.extend(duplicate_keys(&config.global));
    problems.extend(Problem::wrap_all("global config is invalid", global_problems));
    problems
}

fn dogu_entry_problems(entry: &ConfigEntry) -> Vec<Problem> {
    let mut problems = Vec::new();
    if entry.key.is_empty() {
        problems.push(Problem::new("key for config should not be empty"));
    }
    problems.extend(writable_key_problem(entry));
    if entry.absent {
        if entry.value.is_some() || entry.secret_ref.is_some() {
            problems.push(Problem::new("absent entries cannot have value or secretRef"));
        }
        if entry.config_ref.is_some() {
            problems.push(Problem::new("absent entries cannot have a configRef"));
        }
        return problems;
    }
    if entry.value.is_some() && entry.secret_ref.is_some() {
        problems.push(Problem::new("config entries can have either a value or a secretRef"));
    }
    if entry.config_ref.is_some() && (entry.value.is_some() || entry.secret_ref.is_some()) {
        problems.push(Problem::new("config entries with a configRef can have neither a value nor a secretRef"));
    }
    if entry.config_ref.is_some() && entry.sensitive {
        problems.push(Problem::new("sensitive config entries cannot have a configRef (use a secretRef)"));
    }
    if entry.value.is_some() && entry.sensitive {
        problems.push(Problem::new("sensitive config entries are not allowed to have normal values"));
    }
    // Ours (upstream accepts these and then never completes, or writes an empty secret):
    if entry.sensitive && entry.secret_ref.is_none() && entry.value.is_none() {
        problems.push(Problem::new(format!("sensitive config entry \"{}\" needs a secretRef", entry.key)));
    }
    if !entry.sensitive && entry.value.is_none() && entry.secret_ref.is_none() && entry.config_ref.is_none() {
        problems.push(missing_value(entry.key));
    }
    problems
}

fn global_entry_problems(entry: &ConfigEntry) -> Vec<Problem> {
    let mut problems = Vec::new();
    if entry.key.is_empty() {
        problems.push(Problem::new("key for global config should not be empty"));
    }
    problems.extend(writable_key_problem(entry));
    // v3: a global entry may take its value from a Secret (`secretRef`), but never be sensitive.
    if entry.sensitive {
        problems.push(Problem::new("global entries cannot be sensitive"));
    }
    if entry.absent && entry.value.is_some() {
        problems.push(Problem::new("absent entries cannot have value"));
    }
    if entry.absent && entry.secret_ref.is_some() {
        problems.push(Problem::new("absent entries cannot have a secretRef"));
    }
    if entry.absent && entry.config_ref.is_some() {
        problems.push(Problem::new("absent entries cannot have a configRef"));
    }
    if entry.value.is_some() && entry.secret_ref.is_some() {
        problems.push(Problem::new("config entries can have either a value or a secretRef"));
    }
    if entry.config_ref.is_some() && (entry.value.is_some() || entry.secret_ref.is_some()) {
        problems.push(Problem::new("config entries with a configRef can have neither a value nor a secretRef"));
    }
    let source = entry.value.is_some() || entry.config_ref.is_some() || entry.secret_ref.is_some();
    if !entry.absent && !entry.sensitive && !source {
        problems.push(missing_value(entry.key));
    }
    problems
}

/// A key that is to be written must be one the registry format can hold and the operator can read back
/// (an empty key is reported on its own).
fn writable_key_problem(entry: &ConfigEntry) -> Option<Problem> {
    if entry.absent || entry.key.is_empty() {
        return None;
    }
    config_format::check_writable(entry.key).err().map(|e| Problem::new(e.to_string()))
}

fn missing_value(key: &str) -> Problem {
    Problem::new(format!("config entry \"{key}\" needs a value or absent: true (write value: \"\" for an empty value)"))
}

/// Keys are compared as stored: `/a` and `a` are the same key.
fn duplicate_keys(entries: &[ConfigEntry]) -> Vec<Problem> {
    repeated(entries.iter().map(|e| crate::config_format::normalize_key(e.key).unwrap_or(e.key)))
        .into_iter()
        .map(|key| Problem::new(format!("duplicate dogu config Key found: {key}")))
        .collect()
}

fn duplicates<'a>(what: &str, names: impl Iterator<Item = &'a str>) -> Option<Problem> {
    let duplicated = repeated(names);
    (!duplicated.is_empty()).then(|| Problem::new(format!("there are duplicate {what}: [{}]", duplicated.join(" "))))
}

/// The names that occur more than once, sorted, each once.
fn repeated<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut sorted: Vec<&str> = names.collect();
    sorted.sort_unstable();
    let mut repeated: Vec<&str> = sorted.windows(2).filter(|pair| pair[0] == pair[1]).map(|pair| pair[0]).collect();
    repeated.dedup();
    repeated
}

fn mask_problems(blueprint: &ParsedBlueprint) -> Vec<Problem> {
    duplicates("dogus", blueprint.mask.iter().map(|m| m.name.simple.as_str())).into_iter().collect()
}

fn mask_match_problems(blueprint: &ParsedBlueprint) -> Vec<Problem> {
    let mut problems = Vec::new();
    // The first of duplicates (reported on their own), as a search from the front would find.
    let mut dogus = std::collections::HashMap::new();
    for dogu in &blueprint.dogus {
        dogus.entry(dogu.name.simple.as_str()).or_insert(dogu);
    }
    for masked in &blueprint.mask {
        let original = dogus.get(masked.name.simple.as_str());
        if original.is_none() {
            problems.push(Problem::new(format!("dogu \"{}\" is missing in the blueprint", masked.name)));
        }
        if original.is_some_and(|d| d.absent) && !masked.absent {
            problems.push(Problem::new(format!(
                "absent dogu \"{}\" cannot be present in blueprint mask",
                masked.name.simple
            )));
        }
        let original_namespace = original.map(|d| d.name.namespace.as_str()).unwrap_or("");
        if !blueprint.flags.allow_dogu_namespace_switch && original_namespace != masked.name.namespace {
            problems.push(Problem::new(format!(
                "namespace switch is not allowed by default for dogu \"{}\": activate the feature flag for that",
                masked.name
            )));
        }
    }
    problems
}
