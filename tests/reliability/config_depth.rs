//! Whatever the operator writes, it reads back: a config key is written as one YAML nesting level per
//! `/`-separated part, and the reader's nesting budget once stopped below what the writer accepted
//! (a 70-part key was written, then every reconcile reported `InvalidClusterState`, also after the
//! key was taken out of the Blueprint).

use std::collections::BTreeMap;
use std::time::Duration;

use blueprint_machine::config_format::{self, MAX_KEY_PARTS, READ_MAX_DEPTH};
use blueprint_machine::observation::ConfigObservation;
use blueprint_operator::observe::{Digester, config_map_observation};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;

use crate::sandbox::e2e::{self, NAME};

fn key(parts: usize) -> String {
    (0..parts).map(|i| format!("k{i}")).collect::<Vec<_>>().join("/")
}

fn config_map(entries: &BTreeMap<String, String>) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": "cas-config", "resourceVersion": "7"},
        "data": {"config.yaml": config_format::render(entries)},
    }))
    .unwrap()
}

#[test]
fn everything_the_writer_accepts_reads_back_and_older_deeper_writes_too() {
    for parts in [1, MAX_KEY_PARTS, MAX_KEY_PARTS + 6, READ_MAX_DEPTH] {
        let entries: BTreeMap<String, String> = [(key(parts), "v".to_owned()), ("a".to_owned(), "b".to_owned())].into();
        match config_map_observation(&config_map(&entries), &Digester::random(), &Default::default()) {
            ConfigObservation::Present { entries: read, .. } => assert_eq!(read, entries, "{parts} parts"),
            other => panic!("{parts} parts not read back: {other:?}"),
        }
    }
    let mut entries = BTreeMap::new();
    assert!(config_format::apply(&mut entries, [(key(MAX_KEY_PARTS + 1).as_str(), "v".into())], []).is_err());
}

#[test]
fn a_deeper_document_is_reported_in_one_line_without_its_content() {
    let entries: BTreeMap<String, String> = [(key(READ_MAX_DEPTH + 1), "s3cr3t-looking".to_owned())].into();
    let ConfigObservation::Malformed { reason, .. } =
        config_map_observation(&config_map(&entries), &Digester::random(), &Default::default())
    else {
        panic!("read beyond the budget")
    };
    assert!(!reason.contains('\n'), "one line: {reason}");
    assert!(!reason.contains("s3cr3t") && !reason.contains("k1:"), "no excerpt of the document: {reason}");
    assert!(reason.contains("Depth"), "{reason}");
}

/// The finding, end to end: the key is refused with a clear condition, nothing is written, and once it
/// is taken out the blueprint completes (before the fix: written, then stuck for good).
#[tokio::test(start_paused = true)]
async fn a_too_deep_key_is_refused_and_nothing_is_stuck_after_it_is_removed() {
    let mut sandbox = e2e::fresh_sandbox().await;
    sandbox.start_controller("0.1.0");
    let mut blueprint = e2e::default_blueprint();
    let with_deep_key = {
        let mut value = serde_json::to_value(&blueprint).unwrap();
        value["spec"]["blueprint"]["config"]["dogus"]["cas"]
            .as_array_mut()
            .unwrap()
            .push(json!({"key": key(70), "value": "v"}));
        serde_json::from_value(value).unwrap()
    };
    sandbox.apply_blueprint(&with_deep_key).await.unwrap();
    let invalid = sandbox.wait_until(NAME, Duration::from_secs(60), |b| e2e::condition_is(b, "Valid", "False")).await;
    assert!(invalid.is_some(), "{}", e2e::conditions(&sandbox).await);
    assert!(sandbox.emulator().get("v1", "ConfigMap", "ecosystem", "cas-config").is_none(), "nothing was written");

    blueprint.metadata.generation = None;
    sandbox.apply_blueprint(&blueprint).await.unwrap();
    let done = sandbox.wait_until(NAME, Duration::from_secs(600), e2e::completed).await;
    assert!(done.is_some(), "{}", e2e::conditions(&sandbox).await);
    sandbox.shutdown().await;
}
