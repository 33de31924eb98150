//! The conversion webhook on the real API server: a Blueprint CRD serving v2 and v3 (stored as v3,
//! docs/api-versions.md), whose conversions the API server asks our `/convert` for, over TLS with the
//! CA in the CRD's `caBundle`. Written in one version, read in the other, written back and read again:
//! nothing is lost, and what v2 cannot hold survives a v2 client's edit of something else. And v3's
//! CEL rules (`blueprint_machine::api::v3`), as the real server compiles and evaluates them.
//!
//! The CRD lives in a group of its own (`conversion.test.cloudogu.com`) under names of its own
//! (`convertedblueprints`, no short name; the kind stays `Blueprint`), so that the other tests'
//! Blueprints, and kubectl's `blueprint`/`bp` on the shared control plane, never meet it.

use serde_json::{Value, json};

use super::control_plane;
use crate::sandbox::emulator::{Rig, Server};
use crate::support::tls::serve_tls;

const GROUP: &str = "conversion.test.cloudogu.com";
const PLURAL: &str = "convertedblueprints";

/// The project's Blueprint CRD in the test's group, serving v2 and v3, converted by `endpoint`.
fn two_version_crd(endpoint: &str, ca_pem: &str) -> Value {
    let crd = blueprint_operator::crd::blueprint_with_webhook_url(&format!("{endpoint}/convert"), ca_pem);
    let mut crd: Value = serde_json::to_value(crd).unwrap();
    crd["metadata"]["name"] = json!(format!("{PLURAL}.{GROUP}"));
    crd["spec"]["group"] = json!(GROUP);
    crd["spec"]["names"] =
        json!({"kind": "Blueprint", "listKind": "BlueprintList", "plural": PLURAL, "singular": "convertedblueprint"});
    crd
}

/// The same Blueprint with its mask in a BlueprintMask object.
fn by_reference(namespace: &str) -> Value {
    let mut blueprint = v3_blueprint(namespace);
    blueprint["metadata"]["name"] = json!("by-reference");
    blueprint["spec"]["blueprintMask"] = json!({"crRef": {"name": "mask"}});
    blueprint
}

/// A v3 Blueprint with what v2 cannot hold (besides a mask reference: `by_reference`).
fn v3_blueprint(namespace: &str) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/v3"), "kind": "Blueprint",
        "metadata": {"name": "blueprint-ces", "namespace": namespace},
        "spec": {
            "displayName": "converted",
            "blueprint": {
                "dogus": [{"name": "official/ldap", "version": "2.6.8-1", "platformConfig": {"resource": {"storageClassName": "fast", "minVolumeSize": "2Gi"}}}],
                "components": [{"name": "k8s/k8s-longhorn", "version": "1.7.3"}],
                "config": {"dogus": {"ldap": [{"key": "admin", "configRef": {"name": "ldap-settings", "key": "admin"}}]},
                           "global": [{"key": "fqdn", "value": "ces.example.com"}]}
            },
            "blueprintMask": {"manifest": {"dogus": [{"name": "official/ldap", "version": "2.6.8-1"}]}}
        }
    })
}

/// One request that must succeed; the answer.
async fn request(admin: &Rig, method: &str, uri: &str, body: Option<&Value>) -> Value {
    let (code, value) = admin.call(method, uri, "application/json", body.cloned().unwrap_or(Value::Null)).await;
    assert!((200..300).contains(&code), "{method} {uri}: {code}: {value}");
    value
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_server_converts_through_our_webhook_without_losing_a_field() {
    let plane = control_plane::shared();
    let webhook = serve_tls(blueprint_operator::webhook::router()).await;
    let crd = two_version_crd(&webhook.endpoint, &webhook.ca_pem);
    let admin = Rig {
        server: Server::KubeApiserver(plane),
        client: plane.client("default").await,
        namespace: "default".into(),
    };
    request(&admin, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", Some(&crd)).await;
    let established = tokio::task::spawn_blocking(move || {
        control_plane::shared().kubectl(&[
            "wait",
            "--for=condition=Established",
            &format!("crd/{PLURAL}.{GROUP}"),
            "--timeout=60s",
        ])
    })
    .await
    .unwrap();
    assert!(established.is_ok(), "{established:?}");
    let namespace = plane.namespace("conversion");
    let (v2_path, v3_path) = (
        format!("/apis/{GROUP}/v2/namespaces/{namespace}/{PLURAL}"),
        format!("/apis/{GROUP}/v3/namespaces/{namespace}/{PLURAL}"),
    );

    // The new CRD's versions are served a moment after it is established: wait for the create to work.
    let v3 = v3_blueprint(&namespace);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (code, answer) = admin.call("POST", &v3_path, "application/json", v3.clone()).await;
        if code == 201 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the v3 create never succeeded: {code}: {answer}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    // Read as v2 (the API server asked the webhook): the manifest inline, the rest in the annotation.
    let as_v2 = request(&admin, "GET", &format!("{v2_path}/blueprint-ces"), None).await;
    assert_eq!(as_v2["apiVersion"], format!("{GROUP}/v2"));
    assert_eq!(as_v2["spec"]["blueprintMask"], json!({"dogus": [{"name": "official/ldap", "version": "2.6.8-1"}]}));
    assert_eq!(as_v2["spec"]["blueprint"]["dogus"][0]["platformConfig"]["resource"], json!({"minVolumeSize": "2Gi"}));
    let kept = &as_v2["metadata"]["annotations"][blueprint_machine::conversion::V3_FIELDS_ANNOTATION];
    assert!(kept.as_str().is_some_and(|k| k.contains("fast") && k.contains("ldap-settings")), "{as_v2}");

    // A v2 client edits something else and writes the whole object back (PUT through v2).
    let mut edited = as_v2.clone();
    edited["spec"]["displayName"] = json!("edited through v2");
    request(&admin, "PUT", &format!("{v2_path}/blueprint-ces"), Some(&edited)).await;

    // Read as v3: the edit, and every v3-only field as it was.
    let as_v3 = request(&admin, "GET", &format!("{v3_path}/blueprint-ces"), None).await;
    let mut expected = v3["spec"].clone();
    expected["displayName"] = json!("edited through v2");
    assert_eq!(as_v3["spec"], expected, "{as_v3}");
    assert_eq!(as_v3["metadata"].get("annotations"), None, "no trace of the conversion in v3: {as_v3}");

    // A list in v2 converts every item.
    let listed = request(&admin, "GET", &v2_path, None).await;
    assert_eq!(listed["items"][0]["spec"]["displayName"], "edited through v2");

    // A mask reference: v2 has no mask at all, and v3 gets the reference back.
    let reference = by_reference(&namespace);
    request(&admin, "POST", &v3_path, Some(&reference)).await;
    let as_v2 = request(&admin, "GET", &format!("{v2_path}/by-reference"), None).await;
    assert_eq!(as_v2["spec"].get("blueprintMask"), None, "{as_v2}");
    let as_v3 = request(&admin, "GET", &format!("{v3_path}/by-reference"), None).await;
    assert_eq!(as_v3["spec"], reference["spec"]);

    // v3's rules, evaluated by the API server: each broken document is refused with its rule's message.
    type Change = fn(&mut Value);
    let cases: [(&str, Change, &str); 6] = [
        (
            "no-version",
            |d| _ = d["spec"]["blueprint"]["dogus"][0].as_object_mut().unwrap().remove("version"),
            "dogu version must not be empty",
        ),
        (
            "both-masks",
            |d| d["spec"]["blueprintMask"]["crRef"] = json!({"name": "mask"}),
            "blueprintMask: manifest and crRef are mutually exclusive",
        ),
        (
            "absent-with-value",
            |d| d["spec"]["blueprint"]["config"]["global"][0]["absent"] = json!(true),
            "an absent config entry has no value, secretRef or configRef",
        ),
        (
            "sensitive-value",
            |d| d["spec"]["blueprint"]["config"]["global"][0]["sensitive"] = json!(true),
            "a sensitive config entry has no value (use secretRef)",
        ),
        (
            "value-and-ref",
            |d| d["spec"]["blueprint"]["config"]["dogus"]["ldap"][0]["value"] = json!("x"),
            "value and configRef are mutually exclusive",
        ),
        (
            "secret-and-config",
            |d| d["spec"]["blueprint"]["config"]["dogus"]["ldap"][0]["secretRef"] = json!({"name": "s", "key": "k"}),
            "secretRef and configRef are mutually exclusive",
        ),
    ];
    for (name, change, message) in cases {
        let mut document = v3_blueprint(&namespace);
        document["metadata"]["name"] = json!(name);
        change(&mut document);
        let (code, answer) = admin.call("POST", &v3_path, "application/json", document).await;
        assert_eq!(code, 422, "{name}: {answer}");
        assert!(answer["message"].as_str().unwrap().contains(message), "{name}: {answer}");
    }

    request(
        &admin,
        "DELETE",
        &format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{PLURAL}.{GROUP}"),
        None,
    )
    .await;
    webhook.task.abort();
}
