//! Switching from a v3-era Go operator (docs/migration.md): its CRD serves and stores `v3` only, with no
//! conversion. Applying ours over it (v2 and v3, v3 stored, converted by the webhook) while Blueprints
//! are stored keeps every one of them: read as v3 unchanged (spec and status), read as v2 through the
//! webhook, written back from v2 unchanged, and `storedVersions` stays `[v3]`. In a group of its own, so
//! that the shared control plane's Blueprint CRD is never replaced; the webhook is the shared one's.

use blueprint_machine::conversion::{ApiVersion, convert};
use serde_json::{Value, json};

use super::control_plane;
use crate::crd::repository;

const GROUP: &str = "v3-era.test.cloudogu.com";

fn kubectl(args: &[&str]) -> String {
    control_plane::shared().kubectl(args).unwrap_or_else(|e| panic!("kubectl {}: {e}", args.join(" ")))
}

/// Applies `document` with `kubectl <verb> -f` (strict field validation).
fn kubectl_file(verb: &str, document: &Value) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("document.json");
    std::fs::write(&file, document.to_string()).unwrap();
    kubectl(&[verb, "--validate=strict", "-f", &file.display().to_string()])
}

/// Our Blueprint CRD moved into the test group, converted by the shared control plane's webhook.
fn our_crd() -> Value {
    let shared: Value = serde_json::from_str(&kubectl(&["get", "crd", "blueprints.k8s.cloudogu.com", "-o", "json"]))
        .expect("the shared Blueprint CRD");
    let mut crd =
        serde_json::to_value(blueprint_operator::crd::definition(blueprint_operator::crd::Which::Blueprint)).unwrap();
    crd["metadata"] = json!({"name": format!("blueprints.{GROUP}")});
    crd["spec"]["group"] = json!(GROUP);
    crd["spec"]["conversion"]["webhook"]["clientConfig"] =
        shared["spec"]["conversion"]["webhook"]["clientConfig"].clone();
    crd
}

/// The CRD of the Go operator's v3 era, as far as this test needs it: v3 only, stored, no conversion.
fn v3_era_crd() -> Value {
    let mut crd = our_crd();
    crd["spec"]["versions"].as_array_mut().unwrap().retain(|v| v["name"] == "v3");
    crd["spec"]["conversion"] = json!({"strategy": "None"});
    crd
}

fn established() {
    kubectl(&["wait", "--for=condition=Established", "--timeout=60s", &format!("crd/blueprints.{GROUP}")]);
}

/// A compatibility fixture as a v3 document of the test group.
fn fixture(path: &str) -> Value {
    let document: Value = serde_saphyr::from_str(&std::fs::read_to_string(repository(path)).unwrap()).unwrap();
    let mut document = convert(&document, ApiVersion::V3).unwrap();
    document["apiVersion"] = json!(format!("{GROUP}/v3"));
    document
}

fn read(namespace: &str, name: &str, version: &str) -> Value {
    let resource = format!("blueprints.{version}.{GROUP}");
    serde_json::from_str(&kubectl(&["get", &resource, name, "-n", namespace, "-o", "json"])).unwrap()
}

#[test]
fn applying_our_crd_over_the_v3_era_crd_keeps_every_stored_blueprint() {
    let plane = control_plane::shared();
    let namespace = plane.namespace("v3-era");
    kubectl_file("create", &v3_era_crd());
    established();

    // What the Go operator 3.x stored: every v3 field, a mask reference, a status as it writes them.
    let mut stored = Vec::new();
    for path in [
        "tests/fixtures/compat/v3-full-spec.yaml",
        "tests/fixtures/compat/v3-mask-reference.yaml",
        "tests/fixtures/compat/full-status.yaml",
    ] {
        let mut document = fixture(path);
        document["metadata"]["namespace"] = json!(namespace);
        let name = document["metadata"]["name"].as_str().unwrap().to_owned();
        kubectl_file("create", &document);
        if !document["status"].is_null() {
            let resource = format!("blueprints.v3.{GROUP}");
            super::write_status(&resource, &namespace, &document).unwrap_or_else(|e| panic!("{path}: {e}"));
        }
        let before = read(&namespace, &name, "v3");
        assert_eq!(before["spec"], document["spec"], "{path}: stored as written");
        stored.push((name, before));
    }

    // The switch: our CRD replaces the v3-era one; the API server accepts it (v3 is still served and stored).
    let mut ours = our_crd();
    let current: Value =
        serde_json::from_str(&kubectl(&["get", "crd", &format!("blueprints.{GROUP}"), "-o", "json"])).unwrap();
    ours["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
    kubectl_file("replace", &ours);
    established();
    let crd: Value =
        serde_json::from_str(&kubectl(&["get", "crd", &format!("blueprints.{GROUP}"), "-o", "json"])).unwrap();
    assert_eq!(crd["status"]["storedVersions"], json!(["v3"]));
    let served: Vec<&str> =
        crd["spec"]["versions"].as_array().unwrap().iter().filter_map(|v| v["name"].as_str()).collect();
    assert_eq!(served, ["v1", "v2", "v3"]);

    for (name, before) in &stored {
        let after = read(&namespace, name, "v3");
        assert_eq!(after["spec"], before["spec"], "{name}: spec kept");
        assert_eq!(after["status"], before["status"], "{name}: status kept");
        assert_eq!(after["metadata"]["generation"], before["metadata"]["generation"], "{name}");

        // Read as v2 through the webhook, written back from v2: v3 unchanged, nothing written.
        let as_v2 = read(&namespace, name, "v2");
        assert_eq!(as_v2["apiVersion"], format!("{GROUP}/v2"));
        assert_eq!(as_v2["spec"], convert(before, ApiVersion::V2).unwrap()["spec"], "{name}: converted by the webhook");
        kubectl_file("replace", &as_v2);
        let again = read(&namespace, name, "v3");
        assert_eq!(again["spec"], before["spec"], "{name}: written back from v2");
        assert_eq!(
            again["metadata"]["generation"], before["metadata"]["generation"],
            "{name}: the write changed nothing"
        );
    }
    kubectl(&["delete", "crd", &format!("blueprints.{GROUP}")]);
}
