//! The CRDs, for real: they install, the examples and the compatibility fixtures (documents upstream's
//! CRD accepts, one per field of its schema) are accepted by the server's schema validation and come
//! back unchanged (nothing pruned), and a document the schema must reject is rejected.

use serde_json::Value;

use super::control_plane;
use crate::crd::repository;

/// Creates `document` (a Blueprint) in `namespace` with kubectl (strict field validation: an unknown
/// field is an error, not pruned silently) and reads it back.
fn create_and_read(namespace: &str, document: &Value) -> Result<Value, String> {
    let plane = control_plane::shared();
    let mut document = document.clone();
    document["metadata"]["namespace"] = Value::from(namespace);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("blueprint.json");
    std::fs::write(&file, document.to_string()).map_err(|e| e.to_string())?;
    plane.kubectl(&["create", "--validate=strict", "-f", &file.display().to_string()])?;
    let name = document["metadata"]["name"].as_str().unwrap_or_default();
    let text = plane.kubectl(&["get", "blueprint", name, "-n", namespace, "-o", "json"])?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// `spec` and `status` of a document as written (YAML).
fn written(file: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(file).unwrap();
    serde_saphyr::from_str(&text).unwrap()
}

#[test]
fn the_examples_and_upstreams_documents_are_accepted_and_not_pruned() {
    let plane = control_plane::shared();
    let namespace = plane.namespace("crds");
    let mut files = vec![
        repository("examples/fresh-install/blueprint.yaml"),
        repository("examples/upgrade/blueprint.yaml"),
        repository("examples/invalid/downgrade.yaml"),
    ];
    for entry in std::fs::read_dir(repository("tests/fixtures/compat")).unwrap() {
        files.push(entry.unwrap().path());
    }
    for file in files {
        let document = written(&file);
        let name = document["metadata"]["name"].as_str().unwrap().to_owned();
        let stored = create_and_read(&namespace, &document).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!(stored["spec"], document["spec"], "{}: the server changed the spec", file.display());
        if !document["status"].is_null() {
            // The status is written through its subresource, as the operator writes it.
            let patch = serde_json::json!({"status": document["status"]}).to_string();
            plane
                .kubectl(&[
                    "patch",
                    "blueprint",
                    &name,
                    "-n",
                    &namespace,
                    "--subresource=status",
                    "--type=merge",
                    "-p",
                    &patch,
                ])
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let text = plane.kubectl(&["get", "blueprint", &name, "-n", &namespace, "-o", "json"]).unwrap();
            let stored: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(stored["status"], document["status"], "{}: the server changed the status", file.display());
        }
        // Clean up for the next document of the same name.
        plane.kubectl(&["delete", "blueprint", &name, "-n", &namespace]).unwrap();
    }
}

#[test]
fn a_document_the_schema_forbids_is_rejected() {
    let plane = control_plane::shared();
    let namespace = plane.namespace("crds-bad");
    // `dogus` must be a list; `displayName` is required in a spec.
    let bad = serde_json::json!({"apiVersion": "k8s.cloudogu.com/v2", "kind": "Blueprint", "metadata": {"name": "bad"},
                                 "spec": {"blueprint": {"dogus": 7}}});
    let error = create_and_read(&namespace, &bad).unwrap_err();
    assert!(error.contains("spec.blueprint.dogus") && error.contains("Invalid value"), "{error}");
    assert!(error.contains("spec.displayName: Required value"), "{error}");
}

#[test]
fn kubectl_shows_the_printer_columns_and_the_short_name() {
    let plane = control_plane::shared();
    let namespace = plane.namespace("columns");
    create_and_read(&namespace, &written(&repository("examples/fresh-install/blueprint.yaml"))).unwrap();
    let table = plane.kubectl(&["get", "bp", "-n", &namespace]).unwrap();
    let header = table.lines().next().unwrap();
    for column in ["NAME", "DISPLAY NAME", "STOPPED", "VALID", "EXECUTABLE", "ECOSYSTEM HEALTHY", "COMPLETED", "AGE"] {
        assert!(header.contains(column), "{header}");
    }
    assert!(table.contains("CES production, first installation"), "{table}");
}
