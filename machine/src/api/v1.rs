//! `k8s.cloudogu.com/v1`, served (not stored) by our Blueprint CRD so that a cluster of the Go
//! operator 2.x era takes our CRD as it is (docs/migration.md): its stored v1 objects stay readable, its
//! clients keep writing v1, and our webhook converts (`conversion::v1`).
//!
//! The schema is a superset of upstream's v1 (k8s-blueprint-lib 1.1.0 to 1.3.0): the spec's
//! blueprint and mask are JSON text, which the API server cannot check, so the machine does (a v1
//! text it cannot read makes the Blueprint invalid, with the reason in `Valid`); the status keeps
//! upstream's `phase` and takes the effective blueprint and the state diff as they come.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinitionVersion, CustomResourceSubresourceStatus,
    CustomResourceSubresources, CustomResourceValidation, JSONSchemaProps,
};
use serde_json::json;

/// The version v1, deprecated: `kubectl` shows the warning to whoever still uses it.
pub fn version() -> CustomResourceDefinitionVersion {
    CustomResourceDefinitionVersion {
        name: "v1".into(),
        served: true,
        storage: false,
        deprecated: Some(true),
        deprecation_warning: Some(
            "k8s.cloudogu.com/v1 Blueprint is the Go operator 2.x's API; use k8s.cloudogu.com/v3 (docs/migration.md)"
                .into(),
        ),
        additional_printer_columns: Some(vec![
            column("Status", "string", ".status.phase"),
            column("DryRun", "boolean", ".spec.dryRun"),
            column("Age", "date", ".metadata.creationTimestamp"),
        ]),
        schema: Some(CustomResourceValidation { open_api_v3_schema: Some(schema()) }),
        // `status: {}` (the default is JSON null: no status subresource), as the Go operator's v1 CRD has it.
        subresources: Some(CustomResourceSubresources {
            status: Some(CustomResourceSubresourceStatus(json!({}))),
            scale: None,
        }),
        selectable_fields: None,
    }
}

fn column(name: &str, type_: &str, json_path: &str) -> CustomResourceColumnDefinition {
    CustomResourceColumnDefinition {
        name: name.into(),
        type_: type_.into(),
        json_path: json_path.into(),
        ..Default::default()
    }
}

fn schema() -> JSONSchemaProps {
    let flag = |description: &str| json!({"type": "boolean", "description": description});
    let free = |description: &str| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "description": description});
    serde_json::from_value(json!({
        "title": "Blueprint",
        "description": "Blueprint (v1, the Go operator 2.x's API): the wanted state of a Cloudogu EcoSystem as JSON text.",
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "properties": {
                    "blueprint": {"type": "string", "description": "The blueprint as JSON text (blueprintApi v2)."},
                    "blueprintMask": {"type": "string", "description": "The mask as JSON text (blueprintMaskApi v1)."},
                    "dryRun": flag("Show what would be applied, apply nothing (v3: spec.stopped)."),
                    "ignoreDoguHealth": flag("Apply even when dogus are unhealthy."),
                    "ignoreComponentHealth": flag("Apply even when components are unhealthy."),
                    "allowDoguNamespaceSwitch": flag("Allow a dogu to change its namespace."),
                }
            },
            "status": {
                "type": "object",
                "properties": {
                    "phase": {"type": "string", "description": "The Go operator's phase; derived from v3's conditions."},
                    "effectiveBlueprint": free("The blueprint with the mask applied."),
                    "stateDiff": free("The difference between the blueprint and the ecosystem."),
                }
            }
        }
    }))
    .expect("a schema of our own")
}
