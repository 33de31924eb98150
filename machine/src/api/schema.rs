//! Hand-written schema fragments where the derived schema would be wrong or weaker than upstream's.

use schemars::{Schema, SchemaGenerator, json_schema};

/// `spec.displayName` and `spec.blueprint` are required by upstream's CRD. They are `Option` in Rust
/// only so that the machine, not the decoder, reports a missing value.
pub(super) fn require_blueprint_spec_fields(schema: &mut Schema) {
    schema.insert("required".into(), serde_json::json!(["blueprint", "displayName"]));
}

/// Free-form data, as upstream declares it: `x-kubernetes-preserve-unknown-fields` without a type.
pub(super) fn preserve_unknown_fields(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// A free-form object.
pub(super) fn preserve_unknown_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// The standard `metav1.Condition` list, with the validation markers Kubernetes' own types carry.
pub(super) fn conditions(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "type": "object",
            "description": "Condition contains details for one aspect of the current state of this API Resource.",
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
            "properties": {
                "lastTransitionTime": {
                    "type": "string",
                    "format": "date-time",
                    "description": "The last time the condition transitioned from one status to another."
                },
                "message": {
                    "type": "string",
                    "maxLength": 32768,
                    "description": "A human readable message indicating details about the transition."
                },
                "observedGeneration": {
                    "type": "integer",
                    "format": "int64",
                    "minimum": 0,
                    "description": "The .metadata.generation that the condition was set based upon."
                },
                "reason": {
                    "type": "string",
                    "maxLength": 1024,
                    "minLength": 1,
                    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                    "description": "A programmatic identifier indicating the reason for the condition's last transition."
                },
                "status": {
                    "type": "string",
                    "enum": ["True", "False", "Unknown"]
                },
                "type": {
                    "type": "string",
                    "maxLength": 316,
                    "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
                    "description": "Type of condition in CamelCase or in foo.example.com/CamelCase."
                }
            }
        }
    })
}

/// An int-or-string quantity, as Kubernetes' `resource.Quantity` (accepted as both on the wire).
pub(super) fn quantity(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": true,
        "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$"
    })
}
