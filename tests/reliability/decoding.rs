//! One object that does not fit its type is reported by name and skipped: it does not keep a cache
//! from being filled, and nothing of it is logged (a sensitive-config Secret with invalid base64 once
//! put every sensitive value of the namespace into the log, four times, and kept a new replica from
//! ever becoming ready).

use std::time::Duration;

use base64::Engine;
use serde_json::json;

use crate::sandbox::e2e::{self, NAME, completed};
use crate::support::logs;

const NS: &str = "ecosystem";
const LIMIT: Duration = Duration::from_secs(600);
const PLAIN: &str = "plaintext-sensitive-value";

#[tokio::test(start_paused = true)]
async fn a_secret_with_invalid_base64_is_skipped_by_name_and_nothing_of_any_secret_is_logged() {
    logs::capture();
    let mut sandbox = e2e::fresh_sandbox().await;
    let encoded = base64::engine::general_purpose::STANDARD.encode(PLAIN);
    // A sensitive-config Secret of a dogu the blueprint does not configure: one key is not base64.
    sandbox
        .emulator()
        .create(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "other-config", "namespace": NS,
                         "labels": {"app": "ces", "dogu.name": "other", "k8s.cloudogu.com/type": "sensitive-config"}},
            "data": {"config.yaml": "not base64 at all!", "second": encoded},
        }))
        .unwrap();
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&e2e::default_blueprint()).await.unwrap();
    let done = sandbox.wait_until(NAME, LIMIT, completed).await;
    assert!(done.is_some(), "the caches were filled and the blueprint completed: {}", e2e::conditions(&sandbox).await);
    let log = logs::captured();
    assert!(log.contains("an object cannot be decoded") && log.contains("other-config"), "reported by name");
    for secret in [PLAIN, encoded.as_str(), "not base64 at all", "c2Vjc"] {
        if let Some(at) = log.find(secret) {
            panic!("{secret:?} is in the log: {}", &log[at.saturating_sub(400)..(at + 100).min(log.len())]);
        }
    }
    // The redmine sensitive value of the example (from `redmine-ldap-secret`) is not logged either.
    let ldap = sandbox.emulator().get("v1", "Secret", NS, "redmine-ldap-secret").unwrap();
    for value in ldap["data"].as_object().unwrap().values() {
        assert!(!log.contains(value.as_str().unwrap()), "a referenced secret value is in the log");
    }
    sandbox.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_dogu_cr_that_does_not_fit_blocks_only_itself_and_is_named() {
    let mut sandbox = e2e::fresh_sandbox().await;
    // A Dogu CR of a wanted dogu whose spec the real CRD may allow but our type does not fit.
    sandbox
        .emulator()
        .create(json!({
            "apiVersion": "k8s.cloudogu.com/v2", "kind": "Dogu",
            "metadata": {"name": "postfix", "namespace": NS},
            "spec": {"name": "official/postfix", "version": {"major": 3}},
        }))
        .unwrap();
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&e2e::default_blueprint()).await.unwrap();
    let blocked = sandbox.wait_until(NAME, LIMIT, |b| e2e::condition_is(b, "Executable", "False")).await;
    assert!(blocked.is_some(), "{}", e2e::conditions(&sandbox).await);
    let status = blocked.unwrap().status.unwrap();
    let executable = status.conditions.iter().find(|c| c.type_ == "Executable").unwrap();
    assert_eq!(executable.reason, "InvalidClusterState");
    assert!(executable.message.contains("cannot read dogu CR \"postfix\""), "{}", executable.message);
    sandbox.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_blueprint_whose_spec_does_not_fit_is_reported_invalid_and_the_other_caches_fill() {
    let mut sandbox = e2e::fresh_sandbox().await;
    sandbox.start_controller("0.1.0");
    let mut bad = serde_json::to_value(e2e::default_blueprint()).unwrap();
    bad["spec"]["blueprint"]["dogus"][0]["name"] = json!(5);
    bad["metadata"] = json!({"name": NAME, "namespace": NS});
    sandbox.emulator().create(bad).unwrap();
    let invalid = sandbox.wait_until(NAME, LIMIT, |b| e2e::condition_is(b, "Valid", "False")).await;
    assert!(invalid.is_some(), "{}", e2e::conditions(&sandbox).await);
    let status = invalid.unwrap().status.unwrap();
    let valid = status.conditions.iter().find(|c| c.type_ == "Valid").unwrap();
    assert!(
        valid.message.starts_with("could not deserialize blueprint CR \"blueprint-ces\": invalid type: integer `5`"),
        "{}",
        valid.message
    );

    // Corrected, it is applied.
    sandbox.apply_blueprint(&e2e::default_blueprint()).await.unwrap();
    assert!(sandbox.wait_until(NAME, LIMIT, completed).await.is_some(), "{}", e2e::conditions(&sandbox).await);
    sandbox.shutdown().await;
}
