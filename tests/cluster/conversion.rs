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
    two_version_crd_named(endpoint, ca_pem, GROUP, PLURAL)
}

/// [`two_version_crd`] in `group` under the plural `plural` (each test a CRD of its own: two CRDs of
/// one group may not both name the kind Blueprint).
fn two_version_crd_named(endpoint: &str, ca_pem: &str, group: &str, plural: &str) -> Value {
    let crd = blueprint_operator::crd::blueprint_with_webhook_url(&format!("{endpoint}/convert"), ca_pem);
    let mut crd: Value = serde_json::to_value(crd).unwrap();
    crd["metadata"]["name"] = json!(format!("{plural}.{group}"));
    crd["spec"]["group"] = json!(group);
    let singular = plural.trim_end_matches('s');
    crd["spec"]["names"] =
        json!({"kind": "Blueprint", "listKind": "BlueprintList", "plural": plural, "singular": singular});
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

/// Issue 27, finding 6: a v2 writer forged the annotation `blueprint.k8s.cloudogu.com/v3-fields` to
/// store v3 values that v3's schema and rules forbid (`storageClassName: {}`, `configRef: 12345`,
/// `absent` with `configRef`, a mask with `manifest` and `crRef`); afterwards every v3 update of the
/// object, even a label, was refused. Now values of a type v3 forbids make the webhook refuse the
/// conversion, and the API server the write, with the webhook's message; where v3's rules allow only
/// one of two, the v2 object's own wins, and the object stays writable through v3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_v3_fields_annotation_is_refused_or_gives_way_and_v3_writes_go_on() {
    use blueprint_machine::conversion::V3_FIELDS_ANNOTATION;
    const FORGED: &str = "forgedblueprints";
    const GROUP: &str = "forged.test.cloudogu.com";
    let plane = control_plane::shared();
    let webhook = serve_tls(blueprint_operator::webhook::router()).await;
    let admin = Rig {
        server: Server::KubeApiserver(plane),
        client: plane.client("default").await,
        namespace: "default".into(),
    };
    let crd = two_version_crd_named(&webhook.endpoint, &webhook.ca_pem, GROUP, FORGED);
    // (Established, its versions served, once a create through it works: below.)
    request(&admin, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", Some(&crd)).await;
    let namespace = plane.namespace("forged");
    let (v2_path, v3_path) = (
        format!("/apis/{GROUP}/v2/namespaces/{namespace}/{FORGED}"),
        format!("/apis/{GROUP}/v3/namespaces/{namespace}/{FORGED}"),
    );
    let forged = |name: &str, kept: Value, spec: Value| {
        json!({"apiVersion": format!("{GROUP}/v2"), "kind": "Blueprint",
               "metadata": {"name": name, "namespace": namespace, "annotations": {V3_FIELDS_ANNOTATION: kept.to_string()}},
               "spec": spec})
    };
    let spec = json!({"displayName": "forged", "blueprint": {"dogus": [{"name": "official/ldap", "version": "2.6.8-1"}],
        "config": {"dogus": {"ldap": [{"key": "admin", "absent": true}]}}}});
    // The CRD's versions are served a moment after it is established: wait for a plain v2 create.
    let plain = json!({"apiVersion": format!("{GROUP}/v2"), "kind": "Blueprint",
                       "metadata": {"name": "plain", "namespace": namespace}, "spec": spec});
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (code, answer) = admin.call("POST", &v2_path, "application/json", plain.clone()).await;
        if code == 201 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the v2 create never succeeded: {code}: {answer}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    // Values of a type v3 forbids: refused, naming the field.
    for (name, kept, why) in [
        (
            "class",
            json!({"storageClassNames": [{"dogu": "official/ldap", "occurrence": 0, "storageClassName": {}}]}),
            "storageClassNames[0].storageClassName must be a string of at most 253 characters",
        ),
        (
            "reference",
            json!({"configRefs": [{"dogu": "ldap", "key": "admin", "occurrence": 0, "configRef": 12345}]}),
            "configRefs[0].configRef must be {name: string, key: string}",
        ),
    ] {
        let (code, answer) = admin.call("POST", &v2_path, "application/json", forged(name, kept, spec.clone())).await;
        assert!(code >= 400, "{name}: stored: {answer}");
        let message = answer["message"].as_str().unwrap_or_default();
        assert!(message.contains("conversion webhook") && message.contains(why), "{name}: {answer}");
        assert!(message.contains("remove it, or write the Blueprint through v3"), "{name}: {answer}");
    }

    // Where v3 allows only one of two, the v2 object's own wins; the object stays writable through v3.
    let mut masked = spec.clone();
    masked["blueprintMask"] = json!({"dogus": []});
    for (name, kept, spec) in [
        (
            "absent",
            json!({"configRefs": [{"dogu": "ldap", "key": "admin", "occurrence": 0, "configRef": {"name": "c", "key": "k"}}]}),
            spec.clone(),
        ),
        ("mask", json!({"blueprintMask": {"crRef": {"name": "mask"}}}), masked),
    ] {
        request(&admin, "POST", &v2_path, Some(&forged(name, kept, spec))).await;
        let (code, answer) = admin
            .call(
                "PATCH",
                &format!("{v3_path}/{name}"),
                "application/merge-patch+json",
                json!({"metadata": {"labels": {"team": "x"}}}),
            )
            .await;
        assert_eq!(code, 200, "{name}: a v3 label refused: {answer}");
        let spec = &answer["spec"];
        assert!(spec["blueprint"]["config"]["dogus"]["ldap"][0].get("configRef").is_none(), "{name}: {answer}");
        assert!(spec.get("blueprintMask").is_none_or(|mask| mask.get("crRef").is_none()), "{name}: {answer}");
    }

    request(
        &admin,
        "DELETE",
        &format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{FORGED}.{GROUP}"),
        None,
    )
    .await;
    webhook.task.abort();
}
