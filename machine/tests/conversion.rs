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
            "blueprintMask": {"manifest": {"dogus": [{"name": "official/cas", "absent": true}]}}
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

/// The annotation is the conversion's: one not in its form is refused, naming why (a v2 client that
/// wrote it by hand learns what to do), rather than stored as an annotation of the v3 object.
#[test]
fn an_annotation_that_is_not_ours_is_refused() {
    let v2 = json!({"apiVersion": "k8s.cloudogu.com/v2", "kind": "Blueprint", "metadata": {"name": "b",
        "annotations": {V3_FIELDS_ANNOTATION: "not json"}}, "spec": {}});
    let error = convert(&v2, ApiVersion::V3).unwrap_err().to_string();
    assert!(
        error.starts_with(
            "the annotation blueprint.k8s.cloudogu.com/v3-fields does not hold what v3 allows (expected ident"
        ),
        "{error}"
    );
    assert!(error.ends_with("remove it, or write the Blueprint through v3"), "{error}");
}

/// Issue 27, finding 6: a v2 writer forged the annotation to store v3 values that v3's schema and
/// rules forbid, after which every v3 update of the object (even `kubectl label`) was refused. Values
/// of a type v3 forbids refuse the conversion (the API server then refuses the write) with a message
/// naming the field; where v3's rules allow only one of two, what the v2 object says wins, so the v3
/// object written is one v3 accepts.
#[test]
fn a_forged_annotation_is_refused_or_gives_way_to_the_v2_edit() {
    let forged = |kept: Value, spec: Value| {
        json!({"apiVersion": "k8s.cloudogu.com/v2", "kind": "Blueprint",
            "metadata": {"name": "b", "annotations": {V3_FIELDS_ANNOTATION: kept.to_string()}}, "spec": spec})
    };
    let spec = json!({"blueprint": {
        "dogus": [{"name": "official/ldap", "version": "2.6.8-1"}],
        "config": {"dogus": {"ldap": [{"key": "admin", "absent": true}, {"key": "mail", "sensitive": true}]}}}});
    for (kept, why) in [
        (
            json!({"storageClassNames": [{"dogu": "official/ldap", "occurrence": 0, "storageClassName": {}}]}),
            "storageClassNames[0].storageClassName must be a string of at most 253 characters",
        ),
        (
            json!({"storageClassNames": [{"dogu": "official/ldap", "occurrence": 0, "storageClassName": "x".repeat(254)}]}),
            "storageClassNames[0].storageClassName must be a string of at most 253 characters",
        ),
        (
            json!({"configRefs": [{"dogu": "ldap", "key": "admin", "occurrence": 0, "configRef": 12345}]}),
            "configRefs[0].configRef must be {name: string, key: string}",
        ),
        (
            json!({"configRefs": [{"dogu": "ldap", "key": "admin", "occurrence": 0, "configRef": {"name": "a"}}]}),
            "configRefs[0].configRef must be {name: string, key: string}: missing field `key`",
        ),
        (json!({"blueprintMask": {"crRef": "mask"}}), "blueprintMask.crRef must be {name: string}"),
        (
            json!({"blueprintMask": {"manifest": {"dogus": []}}}),
            "blueprintMask.manifest is not a field v3's mask keeps there",
        ),
        (json!({"extra": 1}), "unknown field `extra`"),
    ] {
        let error = convert(&forged(kept.clone(), spec.clone()), ApiVersion::V3).unwrap_err();
        assert!(matches!(error, ConversionError::ForgedV3Fields(_)), "{kept}: {error}");
        assert!(error.to_string().contains(why), "{kept}: {error}");
    }

    // `absent` (or `sensitive`) with a kept `configRef`: the v2 entry says absent, and wins.
    let kept = json!({"configRefs": [
        {"dogu": "ldap", "key": "admin", "occurrence": 0, "configRef": {"name": "settings", "key": "admin"}},
        {"dogu": "ldap", "key": "mail", "occurrence": 0, "configRef": {"name": "settings", "key": "mail"}}]});
    let v3 = convert(&forged(kept, spec.clone()), ApiVersion::V3).unwrap();
    assert_eq!(
        v3["spec"]["blueprint"]["config"]["dogus"]["ldap"],
        json!([{"key": "admin", "absent": true}, {"key": "mail", "sensitive": true}])
    );
    // A mask given inline beside a kept `crRef`: the inline mask wins (manifest and crRef exclude
    // each other in v3).
    let mut inline = spec.clone();
    inline["blueprintMask"] = json!({"dogus": []});
    let v3 = convert(&forged(json!({"blueprintMask": {"crRef": {"name": "mask"}}}), inline), ApiVersion::V3).unwrap();
    assert_eq!(v3["spec"]["blueprintMask"], json!({"manifest": {"dogus": []}}));
    assert_eq!(v3["metadata"].get("annotations"), Some(&json!({})), "the annotation is gone");
}

#[test]
fn what_is_not_a_blueprint_of_a_served_version_is_refused() {
    let refused = |object: Value| convert(&object, ApiVersion::V3).unwrap_err();
    assert_eq!(refused(json!([])), ConversionError::NotAnObject);
    assert_eq!(
        refused(json!({"kind": "Dogu", "apiVersion": "k8s.cloudogu.com/v2"})),
        ConversionError::NotABlueprint("Dogu".into())
    );
    let unknown = refused(json!({"kind": "Blueprint", "apiVersion": "k8s.cloudogu.com/v4"}));
    assert_eq!(
        unknown.to_string(),
        "apiVersion \"k8s.cloudogu.com/v4\" is not a served Blueprint version (v1, v2 or v3, such as k8s.cloudogu.com/v3)"
    );
    let odd_mask = json!({"kind": "Blueprint", "apiVersion": "k8s.cloudogu.com/v3", "spec": {"blueprintMask": "all"}});
    assert_eq!(convert(&odd_mask, ApiVersion::V2).unwrap_err().to_string(), "spec.blueprintMask must be an object");
}
