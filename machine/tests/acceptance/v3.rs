//! What the Blueprint API's v3 adds (issue "Blueprint API v3"), as acceptance cases in the style of
//! the §18 ones: the mask in a `BlueprintMask` object, and v3 fields not applied yet refused by name.

use super::effective::{dogu, effective};
use blueprint_machine::decision::ConfigValue;
use blueprint_machine::{Operation, Requeue, State};

use blueprint_machine::fixtures::*;

const TWO_DOGUS: &str = "displayName: x
blueprint:
  dogus:
    - {name: official/dogu1, version: 3.2.1-1}
    - {name: official/dogu2, version: 3.2.1-2}
";

/// The mask of case 32, in a `BlueprintMask` object: the same effective blueprint.
/// The `Valid=False/Invalid` message of a decision.
fn invalid_message(decision: &blueprint_machine::Decision) -> &str {
    assert_eq!(cond(decision, "Valid"), pair("False", "Invalid"));
    message(decision, "Valid")
}

#[test]
fn a_mask_in_a_blueprint_mask_object_is_applied_as_an_inline_one() {
    let mask = "dogus: [{name: official/dogu1, version: 3.2.1-2}, {name: official/dogu2, absent: true}]";
    let mut by_reference = Scenario::v3(&format!("{TWO_DOGUS}blueprintMask: {{crRef: {{name: production}}}}"));
    by_reference.blueprint_masks = vec![blueprint_mask("production", mask)];
    let inline = Scenario::v3(&format!("{TWO_DOGUS}blueprintMask: {{manifest: {{{mask}}}}}"));

    let (by_reference, inline) = (by_reference.decide(), inline.decide());
    assert_eq!(cond(&by_reference, "Valid"), pair("True", "Valid"));
    assert_eq!(effective(&by_reference), effective(&inline));
    assert_eq!(dogu(effective(&by_reference), "official/dogu1").version.as_deref(), Some("3.2.1-2"));
    assert_eq!(dogu(effective(&by_reference), "official/dogu2").absent, Some(true));
    assert_eq!(by_reference.actions, inline.actions);
}

/// Upstream only logs a missing mask and retries every 10 s; here the user sees it in `Valid`, with
/// one event, and the mask's creation (watched) triggers the next reconcile: no timed retry.
#[test]
fn a_missing_blueprint_mask_is_a_condition_the_user_sees() {
    let mut scenario = Scenario::v3(&format!("{TWO_DOGUS}blueprintMask: {{crRef: {{name: production}}}}"));
    scenario.blueprint_masks = vec![blueprint_mask("staging", "dogus: []")];
    let decision = scenario.decide();
    assert_eq!(cond(&decision, "Valid"), pair("False", "BlueprintMaskNotFound"));
    let m = message(&decision, "Valid");
    assert!(m.contains(r#"the BlueprintMask "production", which does not exist in namespace "ecosystem""#), "{m}");
    assert_eq!(event_reasons(&decision), ["BlueprintSpecInvalid"]);
    assert_eq!(decision.requeue, Requeue::AwaitChange);
    assert!(decision.actions.is_empty());
    assert_eq!(decision.state, State::Invalid);
}

#[test]
fn an_invalid_blueprint_mask_object_is_named_in_the_message() {
    let mut scenario = Scenario::v3(&format!("{TWO_DOGUS}blueprintMask: {{crRef: {{name: production}}}}"));
    scenario.blueprint_masks =
        vec![blueprint_mask("production", "dogus: [{name: official/dogu1, version: not-a-version}]")];
    let decision = scenario.decide();
    let m = invalid_message(&decision);
    assert!(m.contains(r#"cannot deserialize blueprint mask of BlueprintMask "production""#), "{m}");
    assert!(decision.actions.is_empty());
}

/// v3's CEL rule refuses a mask with both; an object stored before the rule (or written as v2 with the
/// conversion's annotation edited by hand) may still have both: invalid, not one of them guessed.
#[test]
fn a_mask_with_both_manifest_and_reference_is_invalid() {
    let mut scenario =
        Scenario::v3(&format!("{TWO_DOGUS}blueprintMask: {{manifest: {{dogus: []}}, crRef: {{name: production}}}}"));
    scenario.blueprint_masks = vec![blueprint_mask("production", "dogus: []")];
    let decision = scenario.decide();
    assert!(invalid_message(&decision).contains("has both manifest and crRef"));
}

/// v2's inline mask (the acceptance cases' form) and v3's manifest read the same.
#[test]
fn v2s_inline_mask_and_v3s_manifest_are_the_same_mask() {
    let mask = "dogus: [{name: official/dogu2, absent: true}]";
    let v2 = Scenario::new(&format!("{TWO_DOGUS}blueprintMask: {{{mask}}}")).decide();
    let v3 = Scenario::v3(&format!("{TWO_DOGUS}blueprintMask: {{manifest: {{{mask}}}}}"));
    assert_eq!(effective(&v2), effective(&v3.decide()));
}

// storageClassName (upstream v3.1): set at install, never changed, validated against the installed
// Dogu, shown in the state diff.

fn with_storage_class(class: Option<&str>) -> String {
    let resource = match class {
        None => "{minVolumeSize: 5Gi}".to_owned(),
        Some(class) => format!("{{minVolumeSize: 5Gi, storageClassName: {class:?}}}"),
    };
    format!(
        "displayName: x\nblueprint:\n  dogus:\n    - {{name: official/dogu1, version: 3.2.1-1, platformConfig: {{resource: {resource}}}}}\n"
    )
}

fn installed_with(class: Option<&str>, size: &str) -> blueprint_machine::api::Dogu {
    let mut dogu = dogu_cr("official/dogu1", "3.2.1-1");
    dogu.spec.resources = Some(blueprint_machine::api::DoguResources {
        min_data_volume_size: Some(blueprint_machine::api::QuantityText(size.into())),
        data_volume_size: None,
        storage_class_name: class.map(str::to_owned),
    });
    dogu
}

#[test]
fn a_storage_class_is_set_when_the_dogu_is_installed_and_shown_in_the_diff() {
    let decision = Scenario::v3(&with_storage_class(Some("fast-ssd"))).decide();
    assert_eq!(cond(&decision, "Valid"), pair("True", "Valid"));
    let create = decision.actions.iter().find_map(|a| match &a.operation {
        Operation::CreateDogu { object } => Some(object),
        _ => None,
    });
    let resources = create.expect("dogu1 is installed").spec.resources.clone().unwrap();
    assert_eq!(resources.storage_class_name.as_deref(), Some("fast-ssd"));
    let diff = &decision.status.as_ref().unwrap().state_diff.as_ref().unwrap().dogu_diffs["dogu1"];
    assert_eq!(diff.expected.resource_config.as_ref().unwrap().storage_class_name.as_deref(), Some("fast-ssd"));
    assert_eq!(
        dogu(effective(&decision), "official/dogu1")
            .platform_config
            .as_ref()
            .unwrap()
            .resource
            .as_ref()
            .unwrap()
            .storage_class_name
            .as_deref(),
        Some("fast-ssd")
    );
}

#[test]
fn a_changed_storage_class_is_inconsistent_and_nothing_is_applied() {
    for (wanted, installed) in
        [(None, Some("fast-ssd")), (Some("slow"), Some("fast-ssd")), (Some(""), None), (Some("fast-ssd"), None)]
    {
        let decision =
            Scenario::v3(&with_storage_class(wanted)).with_dogu_cr(installed_with(installed, "1Gi")).decide();
        assert_eq!(cond(&decision, "Valid"), pair("False", "Inconsistent"), "{wanted:?} vs {installed:?}");
        let m = message(&decision, "Valid");
        assert!(m.contains("storage classes are invalid in effective blueprint"), "{m}");
        assert!(m.contains("wanted dogu \"official/dogu1\"'s storage class differs from installed dogu"), "{m}");
        assert!(decision.actions.is_empty(), "{wanted:?} vs {installed:?}: {:?}", decision.actions);
    }
}

/// The class the dogu was installed with is kept: a later change (a bigger volume) patches only what
/// changes, so a merge patch cannot touch the class; the diff shows it on both sides.
#[test]
fn the_same_storage_class_is_valid_and_patches_never_carry_it() {
    let decision = Scenario::v3(&with_storage_class(Some("fast-ssd")))
        .with_dogu_cr(installed_with(Some("fast-ssd"), "1Gi"))
        .decide();
    assert_eq!(cond(&decision, "Valid"), pair("True", "Valid"));
    let patch = decision.actions.iter().find_map(|a| match &a.operation {
        Operation::PatchDogu { name, patch } if name == "dogu1" && patch["spec"].get("resources").is_some() => {
            Some(patch)
        }
        _ => None,
    });
    let patch = patch.expect("the volume grows");
    assert_eq!(patch["spec"]["resources"], serde_json::json!({"minDataVolumeSize": "5Gi"}));
    let diff = &decision.status.as_ref().unwrap().state_diff.as_ref().unwrap().dogu_diffs["dogu1"];
    assert_eq!(diff.actual.resource_config.as_ref().unwrap().storage_class_name.as_deref(), Some("fast-ssd"));
    assert_eq!(diff.expected.resource_config.as_ref().unwrap().storage_class_name.as_deref(), Some("fast-ssd"));
}

// Config references (upstream v3.0, #136): `configRef` for dogu and global config.

/// A decision blocked by references it cannot resolve: `Executable=False/MissingConfigReferences`, no
/// config written; the condition's message.
fn unresolved_references(decision: &blueprint_machine::Decision) -> &str {
    assert_eq!(cond(decision, "Executable"), pair("False", "MissingConfigReferences"));
    assert!(!decision.actions.iter().any(|a| matches!(a.operation, Operation::WriteConfig { .. })));
    message(decision, "Executable")
}

const WITH_CONFIG_REFS: &str = "displayName: x
blueprint:
  dogus:
    - {name: official/dogu1, version: 3.2.1-1}
  config:
    dogus:
      dogu1:
        - {key: plain, value: kept}
        - {key: from/map, configRef: {name: settings, key: dogu-key}}
    global:
      - {key: fqdn, configRef: {name: settings, key: fqdn}}
";

/// The diffs of the global config and of dogu1's normal config.
fn config_diffs(
    decision: &blueprint_machine::Decision,
) -> impl Iterator<Item = &blueprint_machine::api::ConfigEntryDiff> {
    let diff = state_diff(decision);
    let dogu = diff.dogu_config_diffs.get("dogu1").map(|d| d.dogu_config_diff.as_slice()).unwrap_or_default();
    diff.global_config_diff.iter().chain(dogu)
}

fn set_values(decision: &blueprint_machine::Decision) -> Vec<(String, String)> {
    config_diffs(decision)
        .filter(|e| e.needed_action == "set")
        .map(|e| (e.key.clone(), e.expected.value.clone().unwrap_or_default()))
        .collect()
}

#[test]
fn config_refs_set_dogu_and_global_values_from_a_config_map_and_keep_plain_values() {
    let decision = Scenario::v3(WITH_CONFIG_REFS)
        .with_referenced_config_map("settings", &[("dogu-key", "from the map"), ("fqdn", "ces.example.com")])
        .decide();
    assert_eq!(cond(&decision, "Valid"), pair("True", "Valid"));
    assert_eq!(cond(&decision, "Executable"), pair("True", "Executable"));
    let mut values = set_values(&decision);
    values.sort();
    assert_eq!(
        values,
        [("fqdn", "ces.example.com"), ("from/map", "from the map"), ("plain", "kept")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
    );
    assert!(decision.actions.iter().any(|a| matches!(a.operation, Operation::WriteConfig { .. })));
}

/// Every missing ConfigMap and key at once; nothing is written (upstream: the same reason, retried
/// every 10 s; here the ConfigMap's creation or change triggers the next reconcile).
#[test]
fn missing_config_maps_and_keys_are_all_reported_and_nothing_is_written() {
    let spec = format!("{WITH_CONFIG_REFS}      - {{key: other, configRef: {{name: elsewhere, key: k}}}}\n");
    let decision = Scenario::v3(&spec).with_referenced_config_map("settings", &[("fqdn", "ces.example.com")]).decide();
    let m = unresolved_references(&decision);
    assert!(m.contains("referenced key \"dogu-key\" in config map \"settings\" does not exist"), "{m}");
    assert!(m.contains("referenced config map \"elsewhere\" does not exist"), "{m}");
}

#[test]
fn a_config_ref_cannot_be_sensitive_or_carry_a_value() {
    let spec = "displayName: x
blueprint:
  dogus: [{name: official/dogu1, version: 3.2.1-1}]
  config:
    dogus:
      dogu1:
        - {key: a, sensitive: true, configRef: {name: settings, key: a}}
        - {key: b, value: x, configRef: {name: settings, key: b}}
";
    let decision = Scenario::v3(spec).decide();
    let m = invalid_message(&decision);
    assert!(m.contains("sensitive config entries cannot have a configRef"), "{m}");
    assert!(m.contains("config entries with a configRef can have neither a value nor a secretRef"), "{m}");
}

// Values from Secrets in the normal config (upstream v3.0, #136: `secretRef` without `sensitive`;
// docs/differences.md D52): set from the Secret at execution, never shown.

const WITH_SECRET_REFS: &str = "displayName: x
blueprint:
  dogus:
    - {name: official/dogu1, version: 3.2.1-1}
  config:
    dogus:
      dogu1:
        - {key: plain, value: kept}
        - {key: from/secret, secretRef: {name: credentials, key: token}}
    global:
      - {key: mail/password, secretRef: {name: credentials, key: mail}}
";

const TOKEN: &str = "s3cr3t-token";
const MAIL: &str = "s3cr3t-mail";

fn with_credentials(spec: &str) -> Scenario {
    Scenario::v3(spec)
        .with_dogu("official/dogu1", "3.2.1-1")
        .with_secret("credentials", &[("token", TOKEN), ("mail", MAIL)])
}

/// No plaintext secret anywhere in what the machine decides: actions, status, events.
fn assert_no_secret(decision: &blueprint_machine::Decision) {
    let text = serde_json::to_string(decision).unwrap();
    for secret in [TOKEN, MAIL] {
        assert!(!text.contains(secret), "{secret} in the decision: {text}");
    }
}

/// The config writes of a decision: `(object, key, value or "secret name/key")`.
fn config_sets(decision: &blueprint_machine::Decision) -> Vec<(String, String, String)> {
    let mut sets = Vec::new();
    for action in &decision.actions {
        if let Operation::WriteConfig { target, set, .. } = &action.operation {
            for entry in set {
                let value = match &entry.value {
                    ConfigValue::Value(value) => value.clone(),
                    ConfigValue::SecretRef(r) => format!("secret {}/{}", r.name, r.key),
                };
                sets.push((target.object(), entry.key.clone(), value));
            }
        }
    }
    sets.sort();
    sets
}

fn config_diff<'d>(
    decision: &'d blueprint_machine::Decision,
    key: &str,
) -> &'d blueprint_machine::api::ConfigEntryDiff {
    config_diffs(decision).find(|e| e.key == key).unwrap_or_else(|| panic!("no diff of {key}"))
}

#[test]
fn secret_refs_fill_dogu_and_global_config_from_the_secret_at_execution_and_never_show_the_value() {
    let decision = with_credentials(WITH_SECRET_REFS).decide();
    assert_eq!(cond(&decision, "Valid"), pair("True", "Valid"));
    assert_eq!(cond(&decision, "Executable"), pair("True", "Executable"));
    assert_eq!(
        config_sets(&decision),
        [
            ("configmaps/dogu1-config", "from/secret", "secret credentials/token"),
            ("configmaps/dogu1-config", "plain", "kept"),
            ("configmaps/global-config", "mail/password", "secret credentials/mail"),
        ]
        .map(|(o, k, v)| (o.to_owned(), k.to_owned(), v.to_owned()))
    );
    for key in ["from/secret", "mail/password"] {
        let entry = config_diff(&decision, key);
        assert_eq!((entry.expected.exists, entry.expected.value.as_deref()), (true, None), "{key}");
        assert_eq!((entry.actual.exists, entry.needed_action.as_str()), (false, "set"), "{key}");
    }
    // The effective blueprint keeps the reference, not the value (upstream shows the value there).
    let effective = serde_json::to_string(&decision.status.as_ref().unwrap().effective_blueprint).unwrap();
    assert!(effective.contains("\"secretRef\""), "{effective}");
    assert_no_secret(&decision);
}

/// The states dogu1's key `from/secret` can be found in (the global key holds its Secret's value), and
/// whether the token is written from its Secret then; it is never shown.
#[test]
fn keys_holding_their_secrets_value_are_not_written_again_and_a_changed_secret_is() {
    type Found = fn(Scenario) -> Scenario;
    let cases: [(&str, Found, bool); 4] = [
        ("recorded, the Secret's value", |s| s.with_keys_from_secrets(Some("dogu1"), &[("from/secret", TOKEN)]), false),
        (
            "recorded, an old value (the Secret changed)",
            |s| s.with_keys_from_secrets(Some("dogu1"), &[("from/secret", "the old token")]),
            true,
        ),
        // Filled by the Go operator before a switch, seen as plain config: written again (so recorded).
        ("a plain copy", |s| s.with_dogu_config("dogu1", &[("plain", "kept"), ("from/secret", TOKEN)], None), true),
        // That copy as the observer shows it (digested, not named by the annotation): written once.
        ("an unrecorded copy", |s| s.with_unrecorded_keys_from_secrets(Some("dogu1"), &[("from/secret", TOKEN)]), true),
    ];
    for (found, state, written) in cases {
        let scenario = with_credentials(WITH_SECRET_REFS)
            .with_dogu_config("dogu1", &[("plain", "kept")], None)
            .with_keys_from_secrets(None, &[("mail/password", MAIL)]);
        let decision = state(scenario).decide();
        let token =
            ("configmaps/dogu1-config".to_owned(), "from/secret".to_owned(), "secret credentials/token".to_owned());
        let expected = if written { vec![token] } else { vec![] };
        assert_eq!(config_sets(&decision), expected, "{found}");
        if written {
            let entry = config_diff(&decision, "from/secret");
            assert_eq!((entry.actual.exists, entry.actual.value.as_deref()), (true, None), "{found}");
        }
        assert_no_secret(&decision);
    }
}

/// The hole an earlier attempt had: once the blueprint stops filling a key from a Secret, the key's
/// current value still came from the Secret and is never shown (the config object names such keys).
#[test]
fn a_key_no_longer_filled_from_a_secret_is_overwritten_or_removed_without_showing_its_value() {
    let spec = "displayName: x
blueprint:
  dogus:
    - {name: official/dogu1, version: 3.2.1-1}
  config:
    dogus:
      dogu1:
        - {key: from/secret, value: now plain}
    global:
      - {key: mail/password, absent: true}
";
    let decision = with_credentials(spec)
        .with_keys_from_secrets(Some("dogu1"), &[("from/secret", TOKEN)])
        .with_keys_from_secrets(None, &[("mail/password", MAIL)])
        .decide();
    assert_eq!(
        config_sets(&decision),
        [("configmaps/dogu1-config".to_owned(), "from/secret".to_owned(), "now plain".to_owned())]
    );
    let set = config_diff(&decision, "from/secret");
    assert_eq!((set.actual.exists, set.actual.value.as_deref()), (true, None));
    assert_eq!(set.expected.value.as_deref(), Some("now plain"));
    let removed = config_diff(&decision, "mail/password");
    assert_eq!(
        (removed.needed_action.as_str(), removed.actual.exists, removed.actual.value.as_deref()),
        ("remove", true, None)
    );
    assert_no_secret(&decision);
}

#[test]
fn a_missing_secret_or_key_of_normal_config_is_reported_and_nothing_is_written() {
    let decision = Scenario::v3(WITH_SECRET_REFS)
        .with_dogu("official/dogu1", "3.2.1-1")
        .with_secret("credentials", &[("token", TOKEN)])
        .decide();
    let m = unresolved_references(&decision);
    assert!(m.contains("could not load config from referenced secrets"), "{m}");
    assert!(m.contains("referenced key \"mail\" in secret \"credentials\" does not exist"), "{m}");
}

/// A `configRef` to a config object holding values copied from Secrets would copy them into plain view:
/// such a ConfigMap is not read, and the blueprint is not executable until the reference names another.
#[test]
fn a_config_ref_to_a_config_map_holding_secret_values_is_refused() {
    let decision = Scenario::v3(WITH_CONFIG_REFS).with_referenced_config_map_holding_secret_values("settings").decide();
    let m = unresolved_references(&decision);
    assert!(m.contains("referenced config map \"settings\" holds values copied from Secrets"), "{m}");
}

/// `/a` and `a` are one key as stored: two entries for it could never converge (each reconcile would
/// write the other's value), so they are a duplicate.
#[test]
fn keys_that_differ_only_by_a_leading_slash_are_duplicates() {
    let spec = "displayName: x
blueprint:
  dogus: [{name: official/dogu1, version: 3.2.1-1}]
  config:
    dogus:
      dogu1:
        - {key: /from/secret, secretRef: {name: credentials, key: token}}
        - {key: from/secret, value: plain}
";
    let decision = Scenario::v3(spec).decide();
    let m = invalid_message(&decision);
    assert!(m.contains("duplicate dogu config Key found: from/secret"), "{m}");
}
