//! The conversion between the Blueprint API's v1 (Cloudogu's Go operator 2.x) and v3 by example: a
//! Blueprint as the Go operator leaves it, a v3 Blueprint with everything v1 cannot hold, the phase,
//! sensitive values, and what it refuses.

use blueprint_machine::conversion::v1::V1Fields;
use blueprint_machine::conversion::{ApiVersion, ConversionError, V1_FIELDS_ANNOTATION, V3_FIELDS_ANNOTATION, convert};
use serde_json::{Value, json};

/// A v1 Blueprint as the Go operator 2.8 leaves it once applied: the spec rewritten as compact JSON
/// with `"minVolumeSize":"0"`, the applied sensitive value censored, the phase `completed`.
fn left_by_the_go_operator() -> Value {
    let blueprint = json!({
        "blueprintApi": "v2",
        "dogus": [
            {"name": "official/ldap", "version": "2.6.7-4", "targetState": "present",
             "platformConfig": {"resource": {"minVolumeSize": "0"}, "reverseProxy": {}}},
            {"name": "official/redmine", "version": "5.1.6-1", "targetState": "present",
             "platformConfig": {"resource": {"minVolumeSize": "5Gi"}, "reverseProxy": {"maxBodySize": "100M"}}},
            {"name": "official/nexus", "version": "", "targetState": "absent",
             "platformConfig": {"resource": {"minVolumeSize": "0"}, "reverseProxy": {}}}
        ],
        "components": [{"name": "k8s/k8s-longhorn", "version": "1.7.1-1", "targetState": "present",
                        "deployConfig": {"deployNamespace": "longhorn-system", "overwriteConfig": {"a": [1, 2]}}}],
        "config": {
            "dogus": {"redmine": {
                "config": {"present": {"logging/root": "WARN"}, "absent": ["old/key"]},
                "sensitiveConfig": {"present": {"sa-ldap/password": "*****"}, "absent": ["old/secret"]}
            }},
            "global": {"present": {"fqdn": "ces.example.com"}, "absent": ["default_dogu"]}
        }
    });
    json!({
        "apiVersion": "k8s.cloudogu.com/v1", "kind": "Blueprint",
        "metadata": {"name": "blueprint-ces", "namespace": "ecosystem", "generation": 2},
        "spec": {
            "blueprint": blueprint.to_string(),
            "blueprintMask": r#"{"blueprintMaskApi":"v1","blueprintMaskId":"prod","dogus":[]}"#,
            "dryRun": true
        },
        "status": {
            "phase": "completed",
            "effectiveBlueprint": {
                "dogus": [{"name": "official/ldap", "version": "2.6.7-4", "targetState": "present"}],
                "config": {"dogus": {"redmine": {"sensitiveConfig": {"present": {"sa-ldap/password": "*****"}}}}, "global": {}}
            },
            "stateDiff": {
                "doguDiffs": {"ldap": {
                    "actual": {"namespace": "official", "version": "2.6.7-4", "installationState": "present"},
                    "expected": {"namespace": "official", "version": "2.6.7-4", "installationState": "present"},
                    "neededActions": []
                }},
                "doguConfigDiffs": {"redmine": {"sensitiveDoguConfigDiff": [
                    {"key": "sa-ldap/password", "actual": {"value": "*****", "exists": true},
                     "expected": {"value": "*****", "exists": true}, "neededAction": "none"}
                ]}}
            }
        }
    })
}

fn annotation(object: &Value, name: &str) -> Option<Value> {
    let text = object["metadata"]["annotations"][name].as_str()?;
    Some(serde_json::from_str(text).unwrap())
}

/// The JSON inside a v1 spec string.
fn inner(object: &Value, field: &str) -> Value {
    serde_json::from_str(object["spec"][field].as_str().unwrap()).unwrap()
}

#[test]
fn a_blueprint_the_go_operator_left_reads_as_v3() {
    let v3 = convert(&left_by_the_go_operator(), ApiVersion::V3).unwrap();
    assert_eq!(v3["apiVersion"], "k8s.cloudogu.com/v3");
    assert_eq!(
        v3["spec"],
        json!({
            "blueprint": {
                "dogus": [
                    {"name": "official/ldap", "version": "2.6.7-4"},
                    {"name": "official/redmine", "version": "5.1.6-1",
                     "platformConfig": {"resource": {"minVolumeSize": "5Gi"}, "reverseProxy": {"maxBodySize": "100M"}}},
                    {"name": "official/nexus", "absent": true}
                ],
                "components": [{"name": "k8s/k8s-longhorn", "version": "1.7.1-1",
                                "deployConfig": {"deployNamespace": "longhorn-system", "overwriteConfig": {"a": [1, 2]}}}],
                "config": {
                    "dogus": {"redmine": [
                        {"key": "logging/root", "value": "WARN"},
                        {"key": "old/key", "absent": true},
                        {"key": "old/secret", "absent": true, "sensitive": true}
                    ]},
                    "global": [{"key": "fqdn", "value": "ces.example.com"}, {"key": "default_dogu", "absent": true}]
                }
            },
            "stopped": true
        }),
        "the censored key is not managed: its value stays as the Go operator applied it"
    );
    assert_eq!(
        annotation(&v3, V1_FIELDS_ANNOTATION).unwrap(),
        json!({"phase": "completed", "blueprintMaskId": "prod", "censored": {"redmine": ["sa-ldap/password"]}})
    );
    assert!(v3["status"].get("conditions").is_none(), "no condition is invented");
    assert_eq!(v3["status"]["stateDiff"]["doguDiffs"]["ldap"]["actual"]["absent"], false);
    let sensitive = &v3["status"]["stateDiff"]["doguConfigDiffs"]["redmine"]["sensitiveDoguConfigDiff"][0];
    assert_eq!(sensitive["actual"], json!({"exists": true}), "never a sensitive value, not even *****");
    assert!(!v3.to_string().contains("*****"));
}

#[test]
fn the_way_back_to_v1_gives_the_go_operator_what_it_wrote() {
    let original = left_by_the_go_operator();
    let v3 = convert(&original, ApiVersion::V3).unwrap();
    let v1 = convert(&v3, ApiVersion::V1).unwrap();
    assert_eq!(v1["status"]["phase"], "completed");
    assert_eq!(v1["spec"]["dryRun"], true);
    let blueprint = inner(&v1, "blueprint");
    assert_eq!(blueprint["blueprintApi"], "v2");
    assert_eq!(
        blueprint["config"]["dogus"]["redmine"]["sensitiveConfig"],
        json!({"present": {"sa-ldap/password": "*****"}, "absent": ["old/secret"]}),
        "completed: the censored key as the Go operator wrote it"
    );
    assert_eq!(blueprint["dogus"][2], json!({"name": "official/nexus", "targetState": "absent"}));
    assert_eq!(inner(&v1, "blueprintMask"), json!({"blueprintMaskApi": "v1", "blueprintMaskId": "prod", "dogus": []}));
    assert!(v1["metadata"].get("annotations").is_none(), "nothing of v3 to keep: {v1}");
    // Read as v3 again, the same v3.
    assert_eq!(convert(&v1, ApiVersion::V3).unwrap(), v3);
}

fn v3_with_everything() -> Value {
    json!({
        "apiVersion": "k8s.cloudogu.com/v3", "kind": "Blueprint",
        "metadata": {"name": "blueprint-ces", "namespace": "ecosystem", "generation": 4,
                     "annotations": {"team": "platform"}},
        "spec": {
            "displayName": "Blueprint",
            "blueprint": {
                "dogus": [
                    {"name": "official/postgresql", "version": "14.17-2",
                     "platformConfig": {"resource": {"storageClassName": "fast", "minVolumeSize": "2Gi"}}},
                    {"name": "official/cas", "version": "7.1.5-2"}
                ],
                "config": {
                    "dogus": {"cas": [
                        {"key": "admin", "configRef": {"name": "cas-settings", "key": "admin"}},
                        {"key": "mode", "value": "on"},
                        {"key": "password", "sensitive": true, "secretRef": {"name": "cas", "key": "password"}},
                        {"key": "relay", "secretRef": {"name": "relay", "key": "host"}}
                    ]},
                    "global": [{"key": "fqdn", "configRef": {"name": "global", "key": "fqdn"}}, {"key": "a", "value": "1"}]
                }
            },
            "blueprintMask": {"crRef": {"name": "production"}}
        },
        "status": {
            "conditions": [
                {"type": "Valid", "status": "True", "reason": "Valid", "message": "", "lastTransitionTime": "2026-10-01T08:00:00Z", "observedGeneration": 4},
                {"type": "Completed", "status": "True", "reason": "Completed", "message": "", "lastTransitionTime": "2026-10-01T08:00:00Z", "observedGeneration": 4}
            ],
            "observedGeneration": 4
        }
    })
}

#[test]
fn what_v1_cannot_hold_is_kept_and_comes_back() {
    let v3 = v3_with_everything();
    let v1 = convert(&v3, ApiVersion::V1).unwrap();
    assert_eq!(v1["status"]["phase"], "completed", "Completed=True for the current generation");
    let blueprint = inner(&v1, "blueprint");
    assert_eq!(blueprint["config"]["dogus"]["cas"], json!({"config": {"present": {"mode": "on"}}}));
    assert_eq!(blueprint["config"]["global"], json!({"present": {"a": "1"}}));
    assert_eq!(blueprint["dogus"][0]["platformConfig"], json!({"resource": {"minVolumeSize": "2Gi"}}));
    assert!(!v1["spec"]["blueprint"].as_str().unwrap().contains("secretRef"), "no reference in v1's spec");
    let kept = annotation(&v1, V3_FIELDS_ANNOTATION).unwrap();
    assert_eq!(kept["displayName"], "Blueprint");
    assert_eq!(kept["blueprintMaskRef"], json!({"name": "production"}));
    assert_eq!(v1["metadata"]["annotations"]["team"], "platform");
    assert_eq!(convert(&v1, ApiVersion::V3).unwrap(), v3, "v3 → v1 → v3 is the identity");
    // Through v2 as well.
    let v2 = convert(&v1, ApiVersion::V2).unwrap();
    assert_eq!(convert(&v2, ApiVersion::V1).unwrap(), v1);
}

#[test]
fn the_phase_follows_the_conditions() {
    let phase = |conditions: Value, observed: i64| {
        let mut v3 = v3_with_everything();
        v3["status"] = json!({"conditions": conditions, "observedGeneration": observed});
        convert(&v3, ApiVersion::V1).unwrap()["status"].get("phase").cloned()
    };
    let condition = |kind: &str, status: &str| json!({"type": kind, "status": status, "reason": "R", "message": "", "lastTransitionTime": "2026-10-01T08:00:00Z"});
    assert_eq!(phase(json!([condition("Valid", "False")]), 4), Some(json!("invalid")));
    assert_eq!(phase(json!([condition("Completed", "True")]), 3), None, "completed for an older generation");
    assert_eq!(phase(json!([condition("Completed", "False")]), 4), None, "the Go operator starts over");
}

#[test]
fn an_unapplied_sensitive_value_is_not_carried_over_and_says_so() {
    let mut v1 = left_by_the_go_operator();
    let mut blueprint = inner(&v1, "blueprint");
    blueprint["config"]["dogus"]["redmine"]["sensitiveConfig"]["present"]["sa-ldap/password"] = json!("s3cr3t");
    v1["spec"]["blueprint"] = json!(blueprint.to_string());
    let v3 = convert(&v1, ApiVersion::V3).unwrap();
    assert!(!v3.to_string().contains("s3cr3t"), "the value goes nowhere");
    let entries = v3["spec"]["blueprint"]["config"]["dogus"]["redmine"].as_array().unwrap();
    assert!(entries.contains(&json!({"key": "sa-ldap/password", "sensitive": true})), "{entries:?}");
    let fields: V1Fields = serde_json::from_value(annotation(&v3, V1_FIELDS_ANNOTATION).unwrap()).unwrap();
    assert_eq!(fields.problems.len(), 1);
    assert!(fields.problems[0].contains("sa-ldap/password") && fields.problems[0].contains("secretRef"));
    assert!(fields.censored.is_empty());
}

#[test]
fn an_unreadable_blueprint_is_kept_as_it_is_and_reported() {
    let mut v1 = left_by_the_go_operator();
    v1["spec"]["blueprint"] = json!("{not json");
    let v3 = convert(&v1, ApiVersion::V3).unwrap();
    assert!(v3["spec"].get("blueprint").is_none());
    let fields: V1Fields = serde_json::from_value(annotation(&v3, V1_FIELDS_ANNOTATION).unwrap()).unwrap();
    assert!(
        fields.problems[0].starts_with("spec.blueprint is not the JSON of a v1 blueprint"),
        "{:?}",
        fields.problems
    );
    assert_eq!(convert(&v3, ApiVersion::V1).unwrap()["spec"]["blueprint"], "{not json", "back as it was");
}

#[test]
fn forged_annotations_are_refused() {
    let mut v1 = left_by_the_go_operator();
    let forged = json!({"global": [{"at": 0, "entry": {"key": "a", "absent": true, "value": "x"}}]});
    v1["metadata"]["annotations"] = json!({V3_FIELDS_ANNOTATION: forged.to_string()});
    let error = convert(&v1, ApiVersion::V3).unwrap_err();
    assert!(matches!(error, ConversionError::ForgedAnnotation { .. }), "{error}");
    assert!(error.to_string().contains("absent entries"), "{error}");

    let mut v3 = v3_with_everything();
    v3["metadata"]["annotations"] = json!({V1_FIELDS_ANNOTATION: "{\"phase\": 3}"});
    let error = convert(&v3, ApiVersion::V1).unwrap_err();
    assert!(error.to_string().contains(V1_FIELDS_ANNOTATION), "{error}");
}

/// A v1 mask the conversion cannot read makes the Blueprint invalid, naming why: applied without its
/// mask, it would install what the mask hides.
#[test]
fn an_unreadable_v1_mask_makes_the_blueprint_invalid_not_unmasked() {
    let mut v1 = left_by_the_go_operator();
    v1["spec"]["blueprintMask"] = json!("{\"dogus\": [oops]}");
    v1.as_object_mut().unwrap().remove("status");
    let v3 = convert(&v1, ApiVersion::V3).unwrap();
    let blueprint: blueprint_machine::api::Blueprint = serde_json::from_value(v3).unwrap();
    let mut scenario = blueprint_machine::fixtures::Scenario::new("blueprint: {dogus: []}");
    scenario.blueprint = Some(blueprint);
    let decision = scenario.decide();
    let conditions = &decision.status.as_ref().unwrap().conditions;
    let valid = conditions.iter().find(|c| c.type_ == "Valid").unwrap();
    assert_eq!((valid.status.as_str(), valid.reason.as_str()), ("False", "Invalid"), "{valid:?}");
    assert!(valid.message.contains("spec.blueprintMask is not the JSON of a v1 mask"), "{}", valid.message);
    assert!(valid.message.contains(V1_FIELDS_ANNOTATION), "says how to get out: {}", valid.message);
    assert!(decision.actions.is_empty(), "nothing applied: {:?}", decision.actions);
}
