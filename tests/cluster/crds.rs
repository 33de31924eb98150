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
    read_as(namespace, name, version_of(&document))
}

/// `v2` or `v3`, from a Blueprint's `apiVersion`.
fn version_of(document: &Value) -> &str {
    document["apiVersion"].as_str().and_then(|v| v.strip_prefix("k8s.cloudogu.com/")).unwrap_or("v3")
}

/// The Blueprint `name` as kubectl reads it in `version` (stored as v3: v2 through the webhook).
fn read_as(namespace: &str, name: &str, version: &str) -> Result<Value, String> {
    let resource = format!("blueprints.{version}.k8s.cloudogu.com");
    let text = control_plane::shared().kubectl(&["get", &resource, name, "-n", namespace, "-o", "json"])?;
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
            super::write_status("blueprint", &namespace, &document)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let stored = read_as(&namespace, &name, version_of(&document)).unwrap();
            assert_eq!(stored["status"], document["status"], "{}: the server changed the status", file.display());
        }
        // Clean up for the next document of the same name.
        plane.kubectl(&["delete", "blueprint", &name, "-n", &namespace]).unwrap();
    }
}

/// upstream's BlueprintMask document is accepted by the real server and comes back unchanged.
#[test]
fn upstreams_blueprint_mask_is_accepted_and_not_pruned() {
    let plane = control_plane::shared();
    let namespace = plane.namespace("crds-mask");
    let mut document = written(&repository("tests/fixtures/compat-mask/blueprintmask.yaml"));
    document["metadata"]["namespace"] = Value::from(namespace.as_str());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mask.json");
    std::fs::write(&file, document.to_string()).unwrap();
    plane.kubectl(&["create", "--validate=strict", "-f", &file.display().to_string()]).unwrap();
    let text = plane.kubectl(&["get", "bpm", "production", "-n", &namespace, "-o", "json"]).unwrap();
    let stored: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(stored["spec"], document["spec"]);
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

/// The API server validates a write in the version it is written in: v3's CEL rules refuse a v3
/// Blueprint that breaks them (with the rules' messages), while the same Blueprint written as v2 (whose
/// schema has no rules, as upstream's v2) is stored, converted, and left to the operator to report.
#[test]
fn v3s_rules_hold_for_v3_writes_and_the_operator_reports_v2_ones() {
    let plane = control_plane::shared();
    let namespace = plane.namespace("crds-v3-rules");
    let v2 = serde_json::json!({"apiVersion": "k8s.cloudogu.com/v2", "kind": "Blueprint", "metadata": {"name": "bad"},
        "spec": {"displayName": "x", "blueprint": {"dogus": [{"name": "official/ldap"}],
                 "config": {"global": [{"key": "k", "value": "v", "secretRef": {"name": "s", "key": "k"}}]}}}});
    let mut v3 = blueprint_machine::conversion::convert(&v2, blueprint_machine::conversion::ApiVersion::V3).unwrap();
    v3["metadata"]["name"] = "bad-v3".into();
    let error = create_and_read(&namespace, &v3).unwrap_err();
    assert!(error.contains("dogu version must not be empty"), "{error}");
    assert!(error.contains("value and secretRef are mutually exclusive"), "{error}");
    let stored = create_and_read(&namespace, &v2).unwrap();
    assert_eq!(stored["spec"], v2["spec"]);
}

/// The check: a v2 Blueprint applied, read back as v3 with kubectl and written back as v3 is
/// unchanged, in either version.
#[test]
fn a_v2_blueprint_read_and_written_back_as_v3_is_unchanged() {
    let plane = control_plane::shared();
    let namespace = plane.namespace("crds-v2-v3");
    let document = written(&repository("tests/fixtures/compat/full-spec.yaml"));
    assert_eq!(version_of(&document), "v2");
    assert!(document["spec"]["blueprintMask"]["dogus"].is_array(), "a document with v2's inline mask");
    let name = document["metadata"]["name"].as_str().unwrap().to_owned();
    let as_v2 = create_and_read(&namespace, &document).unwrap();
    let as_v3 = read_as(&namespace, &name, "v3").unwrap();
    assert_eq!(as_v3["apiVersion"], "k8s.cloudogu.com/v3");
    assert_eq!(as_v3["spec"]["blueprintMask"]["manifest"]["dogus"], document["spec"]["blueprintMask"]["dogus"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("v3.json");
    std::fs::write(&file, as_v3.to_string()).unwrap();
    plane.kubectl(&["replace", "--validate=strict", "-f", &file.display().to_string()]).unwrap();
    let after_v3 = read_as(&namespace, &name, "v3").unwrap();
    let after_v2 = read_as(&namespace, &name, "v2").unwrap();
    assert_eq!(after_v3["spec"], as_v3["spec"]);
    assert_eq!(after_v2["spec"], document["spec"]);
    assert_eq!(after_v2["metadata"]["generation"], as_v2["metadata"]["generation"], "the write changed nothing");
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
