//! The schema of the Blueprint API's v3 (docs/api-versions.md), derived from v2's: the mask as a
//! union of `manifest` and `crRef`, `storageClassName`, config entries' `configRef`, and the rules v3
//! states in CEL (`x-kubernetes-validations`, evaluated by the API server on every write):
//! - a config entry: `absent` has no value, `secretRef` or `configRef`; `sensitive` has no `value` and
//!   no `configRef`; `value`, `secretRef` and `configRef` exclude each other;
//! - the mask: `manifest` xor `crRef`;
//! - a dogu that is not absent has a version.
//!
//! Not here yet: the shipped two-version CRD (it needs the webhook served by `run`) and the immutability
//! of `storageClassName` (a transition rule needs the dogus list keyed by name; the operator checks it).

use serde_json::{Value, json};

/// v3's `openAPIV3Schema`, from v2's.
pub fn blueprint_v3_schema(v2: &Value) -> Value {
    let mut schema = v2.clone();
    let spec = &mut schema["properties"]["spec"]["properties"];
    let manifest = spec["blueprintMask"].clone();
    spec["blueprintMask"] = json!({
        "description": "Per-installation overrides of the blueprint's dogus: inline (manifest) or in a BlueprintMask object (crRef).",
        "type": "object",
        "nullable": true,
        "properties": {
            "manifest": manifest,
            "crRef": {"description": "A BlueprintMask in the Blueprint's namespace.", "type": "object",
                      "properties": {"name": {"type": "string"}}, "required": ["name"]}
        },
        "x-kubernetes-validations": [
            {"rule": "!(has(self.manifest) && has(self.crRef))", "message": "blueprintMask: manifest and crRef are mutually exclusive"}
        ]
    });
    let blueprint = &mut spec["blueprint"]["properties"];
    let dogu = &mut blueprint["dogus"]["items"];
    dogu["properties"]["platformConfig"]["properties"]["resource"]["properties"]["storageClassName"] = json!({
        "description": "The storage class of the dogu's volume (set at install, immutable).",
        "type": "string", "maxLength": 253
    });
    dogu["x-kubernetes-validations"] = json!([
        {"rule": "(has(self.absent) && self.absent) || (has(self.version) && self.version != '')", "message": "dogu version must not be empty"}
    ]);
    for path in ["/config/properties/dogus/additionalProperties/items", "/config/properties/global/items"] {
        let entry = blueprint.pointer_mut(path).expect("v2's config entries");
        entry["properties"]["configRef"] = json!({
            "description": "The value from a key of a ConfigMap in the Blueprint's namespace.",
            "type": "object", "properties": {"name": {"type": "string"}, "key": {"type": "string"}}, "required": ["name", "key"]
        });
        entry["x-kubernetes-validations"] = config_entry_rules();
    }
    schema
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
