//! The two versions of the Blueprint CRD (docs/api-versions.md): `v3`, derived from the types (the
//! version stored, read and written by the operator) with v3's rules in CEL, and `v2`, derived from
//! v3's schema by undoing what v3 changed in the spec.
//!
//! v3's rules (`x-kubernetes-validations`, evaluated by the API server on every write):
//! - a config entry: `absent` has no value, `secretRef` or `configRef`; `sensitive` has no `value` and
//!   no `configRef`; `value`, `secretRef` and `configRef` exclude each other;
//! - the mask: `manifest` xor `crRef`;
//! - a dogu that is not absent has a version;
//! - `storageClassName` at most 253 characters (a DNS subdomain).
//!
//! The immutability of `storageClassName` is not a CEL rule: a transition rule on a list item needs the
//! list keyed by name (`x-kubernetes-list-type: map`), which upstream's CRD does not declare and which
//! would refuse a Blueprint naming a dogu twice before the operator could say why. The operator checks
//! it against the installed Dogu instead.
//!
//! The status is the same in both versions (`status.effectiveBlueprint` and the state diff may show a
//! storage class or a config reference in v2 too: a status is the operator's, never written by a v2
//! client).

use serde_json::{Value, json};

/// Adds v3's rules to the schema derived from the types.
pub fn add_v3_rules(schema: &mut Value) {
    let spec = &mut schema["properties"]["spec"]["properties"];
    spec["blueprintMask"]["x-kubernetes-validations"] = json!([
        {"rule": "!(has(self.manifest) && has(self.crRef))", "message": "blueprintMask: manifest and crRef are mutually exclusive"}
    ]);
    let dogu = &mut spec["blueprint"]["properties"]["dogus"]["items"];
    dogu["x-kubernetes-validations"] = json!([
        {"rule": "(has(self.absent) && self.absent) || (has(self.version) && self.version != '')", "message": "dogu version must not be empty"}
    ]);
    dogu["properties"]["platformConfig"]["properties"]["resource"]["properties"]["storageClassName"]["maxLength"] =
        json!(253);
    for entry in config_entries(&mut spec["blueprint"]) {
        entry["x-kubernetes-validations"] = config_entry_rules();
    }
}

/// v2's schema from v3's: the mask's manifest inline, no `crRef`, no `storageClassName` and no
/// `configRef` in the spec, no v3 rules.
pub fn v2_schema(v3: &Value) -> Value {
    let mut schema = v3.clone();
    let spec = &mut schema["properties"]["spec"]["properties"];
    let manifest = spec["blueprintMask"]["properties"]["manifest"].clone();
    let mut mask = manifest;
    if let Some(description) = spec["blueprintMask"].get("description").cloned() {
        mask["description"] = description;
    }
    if spec["blueprintMask"].get("nullable").is_some() {
        mask["nullable"] = json!(true);
    }
    spec["blueprintMask"] = mask;
    let dogu = &mut spec["blueprint"]["properties"]["dogus"]["items"];
    remove(dogu, "x-kubernetes-validations");
    remove(&mut dogu["properties"]["platformConfig"]["properties"]["resource"]["properties"], "storageClassName");
    for entry in config_entries(&mut spec["blueprint"]) {
        remove(entry, "x-kubernetes-validations");
        remove(&mut entry["properties"], "configRef");
    }
    schema
}

/// The schemas of a config entry (dogu config and global config) in the spec's `blueprint`.
fn config_entries(blueprint: &mut Value) -> Vec<&mut Value> {
    let config = &mut blueprint["properties"]["config"]["properties"];
    let Some(config) = config.as_object_mut() else { return Vec::new() };
    config
        .iter_mut()
        .filter_map(|(name, schema)| match name.as_str() {
            "dogus" => schema.pointer_mut("/additionalProperties/items"),
            "global" => schema.pointer_mut("/items"),
            _ => None,
        })
        .collect()
}

fn remove(value: &mut Value, key: &str) {
    if let Some(object) = value.as_object_mut() {
        object.remove(key);
    }
}

/// v3's rules of one config entry.
fn config_entry_rules() -> Value {
    let absent = "has(self.absent) && self.absent";
    let sensitive = "has(self.sensitive) && self.sensitive";
    json!([
        {"rule": format!("!({absent}) || (!has(self.value) && !has(self.secretRef) && !has(self.configRef))"),
         "message": "an absent config entry has no value, secretRef or configRef"},
        {"rule": format!("!({sensitive}) || !has(self.value)"), "message": "a sensitive config entry has no value (use secretRef)"},
        {"rule": format!("!({sensitive}) || !has(self.configRef)"), "message": "a sensitive config entry has no configRef (use secretRef)"},
        {"rule": "!(has(self.value) && has(self.secretRef))", "message": "value and secretRef are mutually exclusive"},
        {"rule": "!(has(self.value) && has(self.configRef))", "message": "value and configRef are mutually exclusive"},
        {"rule": "!(has(self.secretRef) && has(self.configRef))", "message": "secretRef and configRef are mutually exclusive"}
    ])
}
