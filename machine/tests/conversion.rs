//! The conversion between the Blueprint API's v2 and v3 by example: the shapes, duplicates, a v2 edit
//! of a kept field, and what it refuses (the round trips on generated Blueprints are properties).

use blueprint_machine::conversion::{ApiVersion, ConversionError, V3_FIELDS_ANNOTATION, convert};
use serde_json::{Value, json};

fn v3_with_everything() -> Value {
    json!({
        "apiVersion": "k8s.cloudogu.com/v3", "kind": "Blueprint",
        "metadata": {"name": "blueprint-ces", "namespace": "ecosystem"},
        "spec": {
            "displayName": "Blueprint",
            "blueprint": {
                "dogus": [
                    {"name": "official/ldap", "version": "2.6.8-1", "platformConfig": {"resource": {"storageClassName": "fast", "minVolumeSize": "2Gi"}}},
                    {"name": "official/ldap", "version": "2.6.8-1", "platformConfig": {"resource": {"storageClassName": "slow"}}},
                    {"name": "official/cas", "version": "7.1.5-2"}
                ],
                "components": [{"name": "k8s/k8s-longhorn", "version": "1.7.3"}],
                "config": {
                    "dogus": {"ldap": [
                        {"key": "admin", "configRef": {"name": "ldap-settings", "key": "admin"}},
                        {"key": "admin", "configRef": {"name": "ldap-settings", "key": "admin-2"}},
                        {"key": "password", "sensitive": true, "secretRef": {"name": "ldap", "key": "password"}}
                    ]},
                    "global": [{"key": "fqdn", "configRef": {"name": "global", "key": "fqdn"}}]
                }
            },
            "blueprintMask": {"manifest": {"dogus": [{"name": "official/cas", "absent": true}]}, "crRef": {"name": "mask"}}
        }
    })
}

fn annotation(object: &Value) -> Option<Value> {
    let text = object["metadata"]["annotations"][V3_FIELDS_ANNOTATION].as_str()?;
    Some(serde_json::from_str(text).unwrap())
}

#[test]
fn v3_fields_move_into_the_annotation_and_come_back() {
    let v3 = v3_with_everything();
    let v2 = convert(&v3, ApiVersion::V2).unwrap();
    assert_eq!(v2["apiVersion"], "k8s.cloudogu.com/v2");
    assert_eq!(
        v2["spec"]["blueprintMask"],
        json!({"dogus": [{"name": "official/cas", "absent": true}]}),
        "the manifest inline"
    );
    assert_eq!(v2["spec"]["blueprint"]["dogus"][0]["platformConfig"]["resource"], json!({"minVolumeSize": "2Gi"}));
    assert_eq!(v2["spec"]["blueprint"]["config"]["dogus"]["ldap"][0], json!({"key": "admin"}));
    assert_eq!(
        annotation(&v2).unwrap(),
        json!({
            "blueprintMask": {"crRef": {"name": "mask"}},
            "storageClassNames": [
                {"dogu": "official/ldap", "occurrence": 0, "storageClassName": "fast"},
                {"dogu": "official/ldap", "occurrence": 1, "storageClassName": "slow"}
            ],
            "configRefs": [
                {"dogu": "ldap", "key": "admin", "occurrence": 0, "configRef": {"name": "ldap-settings", "key": "admin"}},
                {"dogu": "ldap", "key": "admin", "occurrence": 1, "configRef": {"name": "ldap-settings", "key": "admin-2"}},
                {"key": "fqdn", "occurrence": 0, "configRef": {"name": "global", "key": "fqdn"}}
            ],
            "created": "annotations"
        })
    );
    assert_eq!(convert(&v2, ApiVersion::V3).unwrap(), v3, "v3 → v2 → v3 is the identity, duplicates included");
}

#[test]
fn a_v2_blueprint_gains_a_manifest_and_nothing_else() {
    let v2 = json!({"apiVersion": "k8s.cloudogu.com/v2", "kind": "Blueprint", "metadata": {"name": "b", "annotations": {"team": "platform"}},
        "spec": {"blueprintMask": {"dogus": [{"name": "official/ldap", "version": "2.6.8-1"}]}}});
    let v3 = convert(&v2, ApiVersion::V3).unwrap();
    assert_eq!(
        v3["spec"]["blueprintMask"],
        json!({"manifest": {"dogus": [{"name": "official/ldap", "version": "2.6.8-1"}]}})
    );
    assert_eq!(v3["metadata"]["annotations"], json!({"team": "platform"}));
    assert_eq!(convert(&v3, ApiVersion::V2).unwrap(), v2);
    assert_eq!(convert(&v2, ApiVersion::V2).unwrap(), v2, "to its own version: unchanged");
}

#[test]
fn a_mask_reference_alone_leaves_v2_without_a_mask() {
    let v3 = json!({"apiVersion": "k8s.cloudogu.com/v3", "kind": "Blueprint", "metadata": {"name": "b"},
        "spec": {"blueprintMask": {"crRef": {"name": "mask"}}}});
    let v2 = convert(&v3, ApiVersion::V2).unwrap();
    assert_eq!(v2["spec"].get("blueprintMask"), None);
    assert_eq!(convert(&v2, ApiVersion::V3).unwrap(), v3);
}

#[test]
fn a_v2_edit_that_gives_an_entry_a_value_wins_over_its_kept_reference() {
    let mut v2 = convert(&v3_with_everything(), ApiVersion::V2).unwrap();
    v2["spec"]["blueprint"]["config"]["global"][0]["value"] = json!("ces.example.com");
    v2["spec"]["blueprint"]["dogus"].as_array_mut().unwrap().remove(1);
    let v3 = convert(&v2, ApiVersion::V3).unwrap();
    assert_eq!(v3["spec"]["blueprint"]["config"]["global"][0], json!({"key": "fqdn", "value": "ces.example.com"}));
    assert_eq!(v3["spec"]["blueprint"]["dogus"][0]["platformConfig"]["resource"]["storageClassName"], "fast");
    assert_eq!(
        v3["spec"]["blueprint"]["dogus"][1].get("platformConfig"),
        None,
        "the removed dogu's class is not put on another"
    );
}

#[test]
fn an_annotation_that_is_not_ours_is_left_alone() {
    let v2 = json!({"apiVersion": "k8s.cloudogu.com/v2", "kind": "Blueprint", "metadata": {"name": "b",
        "annotations": {V3_FIELDS_ANNOTATION: "not json"}}, "spec": {}});
    let v3 = convert(&v2, ApiVersion::V3).unwrap();
    assert_eq!(v3["metadata"]["annotations"][V3_FIELDS_ANNOTATION], "not json");
    assert_eq!(convert(&v3, ApiVersion::V2).unwrap(), v2);
}

#[test]
fn what_is_not_a_blueprint_of_a_served_version_is_refused() {
    let refused = |object: Value| convert(&object, ApiVersion::V3).unwrap_err();
    assert_eq!(refused(json!([])), ConversionError::NotAnObject);
    assert_eq!(
        refused(json!({"kind": "Dogu", "apiVersion": "k8s.cloudogu.com/v2"})),
        ConversionError::NotABlueprint("Dogu".into())
    );
    let unknown = refused(json!({"kind": "Blueprint", "apiVersion": "k8s.cloudogu.com/v1"}));
    assert_eq!(
        unknown.to_string(),
        "apiVersion \"k8s.cloudogu.com/v1\" is not a served Blueprint version (v2 or v3, such as k8s.cloudogu.com/v3)"
    );
    let odd_mask = json!({"kind": "Blueprint", "apiVersion": "k8s.cloudogu.com/v3", "spec": {"blueprintMask": "all"}});
    assert_eq!(convert(&odd_mask, ApiVersion::V2).unwrap_err().to_string(), "spec.blueprintMask must be an object");
}
