//! The exact requests one reconcile sends for each kind of action and for the status write, the error
//! paths, and what the reconcile then returns.

use blueprint_machine::State;
use blueprint_machine::decision::FailureKind;
use blueprint_operator::status::StatusWrite;
use serde_json::{Value, json};

use super::harness::*;
use crate::support::{component_cr, dogu_cr};

const DOGU_PATH: &str = "/apis/k8s.cloudogu.com/v2/namespaces/ecosystem/dogus";
const COMPONENT_PATH: &str = "/apis/k8s.cloudogu.com/v1/namespaces/ecosystem/components";
const STATUS_PATH: &str = "/apis/k8s.cloudogu.com/v3/namespaces/ecosystem/blueprints/test-blueprint/status";
const EVENTS_PATH: &str = "/apis/events.k8s.io/v1/namespaces/ecosystem/events";
const MERGE: &str = "application/merge-patch+json";

fn lines(requests: &[Recorded]) -> Vec<String> {
    requests.iter().map(Recorded::line).collect()
}

fn install_nexus() -> Harness {
    Harness::new("{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 3.2.1-1}]}}")
        .descriptor("official/nexus", "3.2.1-1")
}

#[tokio::test]
async fn installing_a_dogu_posts_its_cr_then_writes_the_status_once_then_publishes_events() {
    let harness = install_nexus();
    let (outcome, requests) = harness.reconcile(healthy(harness.blueprint.clone())).await;
    let writes: Vec<String> = lines(&requests).into_iter().filter(|l| !l.starts_with("POST /apis/events")).collect();
    assert_eq!(writes, [format!("POST {DOGU_PATH}"), format!("PATCH {STATUS_PATH}")]);

    let create = &requests[0];
    assert_eq!(create.content_type.as_deref(), Some("application/json"));
    assert_eq!(create.query.get("fieldManager").map(String::as_str), Some("k8s-blueprint-operator"));
    assert_eq!(create.body["metadata"]["name"], "nexus");
    assert_eq!(
        create.body["spec"],
        json!({
            "name": "official/nexus", "version": "3.2.1-1", "resources": {"minDataVolumeSize": "0"},
            "supportMode": false, "pauseReconciliation": false,
            "upgradeConfig": {"allowNamespaceSwitch": false, "forceUpgrade": false}
        })
    );

    let status = &requests[1];
    assert_eq!(status.content_type.as_deref(), Some(MERGE));
    assert_eq!(status.body["metadata"], json!({"resourceVersion": "1"}), "conditional on the observed version");
    assert_eq!(status.body["status"]["observedGeneration"], 1);
    assert_eq!(status.body["status"]["stateDiff"]["doguDiffs"]["nexus"]["neededActions"], json!(["install"]));

    let events: Vec<&str> =
        requests.iter().filter(|r| r.path == EVENTS_PATH).map(|r| r.body["reason"].as_str().unwrap()).collect();
    // The clean health check before the install is not announced: the status says that nexus is not
    // healthy yet (docs/differences.md D60).
    assert_eq!(events, ["StateDiffDetermined", "SelfUpgradeCompleted", "DogusApplied"]);
    let healthy =
        status.body["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "EcosystemHealthy");
    assert_eq!(healthy.map(|c| (&c["status"], &c["reason"])), Some((&json!("False"), &json!("ApplyInProgress"))));
    let applied = requests.iter().find(|r| r.body["reason"] == "DogusApplied").unwrap();
    assert_eq!(applied.body["note"], "dogus applied: \"nexus\": [install]");
    assert_eq!(applied.body["type"], "Normal");
    assert_eq!(applied.body["regarding"]["name"], "test-blueprint");
    assert_eq!(applied.body["regarding"]["kind"], "Blueprint");

    assert_eq!(outcome.execution.status, StatusWrite::Written);
    assert_eq!(outcome.execution.performed, 1);
    assert_eq!(outcome.execution.events_published, 3);
    assert_eq!(outcome.execution.requeue_after_seconds, Some(1.0));
}

#[tokio::test]
async fn an_upgrade_is_a_merge_patch_of_the_owned_fields() {
    let harness = Harness::new("{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 3.2.2-1}]}}")
        .descriptor("official/nexus", "3.2.2-1")
        .dogu(dogu_cr("official/nexus", "3.2.1-1"));
    let (_, requests) = harness.reconcile(healthy(harness.blueprint.clone())).await;
    let patch = &requests[0];
    assert_eq!(patch.line(), format!("PATCH {DOGU_PATH}/nexus"));
    assert_eq!(patch.content_type.as_deref(), Some(MERGE));
    assert_eq!(patch.body, json!({"spec": {"version": "3.2.2-1"}}));
}

#[tokio::test]
async fn an_uninstall_deletes_and_tolerates_not_found() {
    let harness = Harness::new("{displayName: x, blueprint: {dogus: [{name: official/nexus, absent: true}]}}")
        .dogu(dogu_cr("official/nexus", "3.2.1-1"));
    let blueprint = harness.blueprint.clone();
    let (outcome, requests) = harness
        .reconcile(Box::new(
            move |r| if r.method == "DELETE" { (404, not_found()) } else { default_answer(&blueprint, r) },
        ))
        .await;
    assert_eq!(requests[0].line(), format!("DELETE {DOGU_PATH}/nexus"));
    assert_eq!(outcome.execution.failure, None, "an object that is already gone is deleted");
    assert_eq!(outcome.decision.unwrap().state, State::ApplyingDogus);
}

#[tokio::test]
async fn components_are_created_patched_and_deleted() {
    let harness = Harness::new(
        "{displayName: x, blueprint: {components: [
            {name: k8s/new, version: 1.0.0, deployConfig: {deployNamespace: longhorn-system, overwriteConfig: {a: {b: 1}}}},
            {name: k8s/old, version: 2.0.0}, {name: k8s/gone, absent: true}]}}",
    )
    .component(component_cr("k8s/old", "1.0.0"))
    .component(component_cr("k8s/gone", "1.0.0"));
    let (_, requests) = harness.reconcile(healthy(harness.blueprint.clone())).await;
    let writes: Vec<String> =
        lines(&requests).into_iter().filter(|l| !l.contains("/events") && !l.ends_with("/status")).collect();
    assert_eq!(
        writes,
        [
            format!("DELETE {COMPONENT_PATH}/gone"),
            format!("POST {COMPONENT_PATH}"),
            format!("PATCH {COMPONENT_PATH}/old")
        ]
    );
    let create = requests.iter().find(|r| r.method == "POST" && r.path == COMPONENT_PATH).unwrap();
    assert_eq!(
        create.body["spec"],
        json!({
            "namespace": "k8s", "name": "new", "version": "1.0.0", "deployNamespace": "longhorn-system", "valuesYamlOverwrite": "a:\n  b: 1\n"
        })
    );
    assert_eq!(create.body["metadata"]["labels"]["k8s.cloudogu.com/component.version"], "1.0.0");
    let patch = requests.iter().find(|r| r.method == "PATCH" && r.path.ends_with("/old")).unwrap();
    assert_eq!(patch.body, json!({"spec": {"version": "2.0.0"}}));
}

#[tokio::test]
async fn config_writes_are_conditional_on_the_observed_version_or_create() {
    let harness = Harness::new(
        "{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 3.2.1-1}],
            config: {global: [{key: fqdn, value: ces.example.com}], dogus: {nexus: [{key: logging/root, value: WARN}]}}}}",
    )
    .descriptor("official/nexus", "3.2.1-1")
    .dogu(dogu_cr("official/nexus", "3.2.1-1"))
    .config(config_map("global-config", "global-config", None, [("config.yaml", "fqdn: old.example.com\nkeep: this\n")], "17"));
    let (outcome, requests) = harness.reconcile(healthy(harness.blueprint.clone())).await;
    let create = &requests[0];
    assert_eq!(create.line(), "POST /api/v1/namespaces/ecosystem/configmaps");
    assert_eq!(create.body["metadata"]["name"], "nexus-config");
    assert_eq!(
        create.body["metadata"]["labels"],
        json!({"app": "ces", "k8s.cloudogu.com/type": "dogu-config", "dogu.name": "nexus"})
    );
    assert_eq!(create.body["data"]["config.yaml"], "logging:\n  root: WARN\n");
    let patch = &requests[1];
    assert_eq!(patch.line(), "PATCH /api/v1/namespaces/ecosystem/configmaps/global-config");
    assert_eq!(patch.content_type.as_deref(), Some(MERGE));
    assert_eq!(
        patch.body,
        json!({"metadata": {"resourceVersion": "17"}, "data": {"config.yaml": "fqdn: ces.example.com\nkeep: this\n"}})
    );
    assert_eq!(outcome.execution.failure, None);
}

#[tokio::test]
async fn a_config_write_conflict_requeues_after_one_second_without_reporting_a_failure() {
    let harness = Harness::new("{displayName: x, blueprint: {config: {global: [{key: fqdn, value: new}]}}}")
        .config(config_map("global-config", "global-config", None, [("config.yaml", "fqdn: old\n")], "17"));
    let blueprint = harness.blueprint.clone();
    let (outcome, requests) = harness
        .reconcile(Box::new(move |r| {
            if r.path.ends_with("/global-config") {
                (409, status(409, "Conflict"))
            } else {
                default_answer(&blueprint, r)
            }
        }))
        .await;
    assert_eq!(outcome.execution.failure.as_ref().unwrap().kind, FailureKind::Conflict);
    assert_eq!(outcome.execution.requeue_after_seconds, Some(1.0));
    let status = requests.iter().find(|r| r.path == STATUS_PATH).unwrap();
    let conditions = status.body["status"]["conditions"].as_array().unwrap();
    let last_apply = conditions.iter().find(|c| c["type"] == "LastApplySucceeded").unwrap();
    assert_eq!(last_apply["status"], "Unknown", "a conflict is not a failed apply");
    assert!(!requests.iter().any(|r| r.body["reason"] == "EcosystemConfigApplied"), "the stage was not applied");
}

fn failing(code: u16, reason: &'static str) -> impl Fn(&Blueprint) -> Responder {
    move |blueprint: &Blueprint| {
        let blueprint = blueprint.clone();
        Box::new(move |r: &Recorded| {
            if r.path.starts_with(DOGU_PATH) { (code, status(code, reason)) } else { default_answer(&blueprint, r) }
        })
    }
}

use blueprint_machine::api::Blueprint;

#[tokio::test]
async fn api_errors_of_actions_map_to_conditions_and_requeues() {
    // 404 on a patch (the dogu vanished): DoguApplyFailure, retry after 10 s.
    let upgrade = || {
        Harness::new("{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 3.2.2-1}]}}")
            .descriptor("official/nexus", "3.2.2-1")
            .dogu(dogu_cr("official/nexus", "3.2.1-1"))
    };
    let harness = upgrade();
    let (outcome, requests) = harness.reconcile(failing(404, "NotFound")(&harness.blueprint)).await;
    assert_eq!(outcome.execution.failure.as_ref().unwrap().kind, FailureKind::NotFound);
    assert_eq!(outcome.execution.requeue_after_seconds, Some(10.0));
    let status = requests.iter().find(|r| r.path == STATUS_PATH).unwrap();
    let last_apply = status.body["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "LastApplySucceeded")
        .unwrap()
        .clone();
    assert_eq!(
        (last_apply["status"].as_str(), last_apply["reason"].as_str()),
        (Some("False"), Some("DoguApplyFailure"))
    );
    assert!(requests.iter().any(|r| r.body["reason"] == "ExecutionFailed" && r.body["type"] == "Warning"));

    // 422 (rejected) and 500 (transient): exponential backoff starting at about 1 s.
    for (code, reason) in [(422, "Invalid"), (500, "InternalError")] {
        let harness = upgrade();
        let (outcome, _) = harness.reconcile(failing(code, reason)(&harness.blueprint)).await;
        let kind = outcome.execution.failure.as_ref().unwrap().kind;
        assert_eq!(kind, if code == 422 { FailureKind::Rejected } else { FailureKind::Transient });
        let after = outcome.execution.requeue_after_seconds.expect("a requeue");
        assert!((0.8..=1.2).contains(&after), "backoff starts at about 1 s: {after}");
    }
}

#[tokio::test]
async fn a_transport_failure_is_transient_and_backs_off() {
    let harness = install_nexus();
    let blueprint = harness.blueprint.clone();
    let (outcome, requests) = harness
        .reconcile(Box::new(move |r| {
            if r.method == "POST" && r.path == DOGU_PATH { (0, Value::Null) } else { default_answer(&blueprint, r) }
        }))
        .await;
    let failure = outcome.execution.failure.unwrap();
    assert_eq!(failure.kind, FailureKind::Transient);
    assert!(failure.message.contains("connection reset"), "{}", failure.message);
    assert!(requests.iter().any(|r| r.path == STATUS_PATH), "the failure is reported in the status");
    assert_ne!(outcome.execution.requeue_after_seconds, None);
    assert_ne!(outcome.execution.requeue_after_seconds, Some(1.0));
}

#[tokio::test]
async fn a_status_write_conflict_publishes_no_events_and_retries_after_one_second() {
    let harness = install_nexus();
    let blueprint = harness.blueprint.clone();
    let (outcome, requests) = harness
        .reconcile(Box::new(move |r| {
            if r.path == STATUS_PATH { (409, status(409, "Conflict")) } else { default_answer(&blueprint, r) }
        }))
        .await;
    assert_eq!(outcome.execution.status, StatusWrite::Conflict);
    assert!(
        !requests.iter().any(|r| r.path == EVENTS_PATH),
        "events of a decision whose status was not written are not published"
    );
    assert_eq!(outcome.execution.requeue_after_seconds, Some(1.0));
}

#[tokio::test]
async fn a_failed_status_write_backs_off() {
    let harness = install_nexus();
    let blueprint = harness.blueprint.clone();
    let (outcome, requests) = harness
        .reconcile(Box::new(move |r| {
            if r.path == STATUS_PATH { (500, status(500, "InternalError")) } else { default_answer(&blueprint, r) }
        }))
        .await;
    assert!(matches!(outcome.execution.status, StatusWrite::Failed { .. }));
    assert!(!requests.iter().any(|r| r.path == EVENTS_PATH));
    assert_ne!(outcome.execution.requeue_after_seconds, None);
}

#[tokio::test]
async fn a_reconcile_with_nothing_to_do_sends_no_request_at_all() {
    let harness = install_nexus().dogu(dogu_cr("official/nexus", "3.2.1-1"));
    // First reconcile: completes, writes the status.
    let (first, _) = harness.reconcile(healthy(harness.blueprint.clone())).await;
    assert_eq!(first.decision.as_ref().unwrap().state, State::Completed);
    // The stored status is now the decided one: the next reconcile reads nothing and writes nothing.
    let mut settled = install_nexus().dogu(dogu_cr("official/nexus", "3.2.1-1"));
    settled.blueprint.status = first.decision.unwrap().status;
    let (outcome, requests) = settled.reconcile(healthy(settled.blueprint.clone())).await;
    assert_eq!(lines(&requests), Vec::<String>::new());
    assert_eq!(outcome.execution.status, StatusWrite::Unchanged);
    assert_eq!(outcome.execution.requeue_after_seconds, None);
}

/// The Blueprint's reading is kept for the next reconcile only when the object stays: a reconcile
/// that writes the status replaces it, and lets its reading (and the old object) go.
#[tokio::test]
async fn the_reading_is_kept_when_the_status_is_not_written() {
    let harness = install_nexus().dogu(dogu_cr("official/nexus", "3.2.1-1"));
    let (first, _, kept) = harness.reconcile_keeping(healthy(harness.blueprint.clone())).await;
    assert_eq!(first.execution.status, StatusWrite::Written);
    assert!(!kept, "the status write replaces the object: nothing kept");
    let mut settled = install_nexus().dogu(dogu_cr("official/nexus", "3.2.1-1"));
    settled.blueprint.status = first.decision.unwrap().status;
    let (outcome, _, kept) = settled.reconcile_keeping(healthy(settled.blueprint.clone())).await;
    assert_eq!(outcome.execution.status, StatusWrite::Unchanged);
    assert!(kept, "nothing written: the reading serves the next reconcile");
}

/// Two events of the same reason in one decision are two events, each created: kube-runtime's
/// recorder would fold the second into the first with a PATCH (keeping the first note), which the
/// Role does not grant (`deploy/rbac.yaml`: events `create` only).
#[tokio::test]
async fn events_of_the_same_reason_are_each_created_never_patched() {
    use blueprint_machine::decision::{Event, EventType};
    use kube::runtime::events::Reporter;

    let emulator =
        blueprint_operator::sandbox::api::Emulator::new(std::sync::Arc::new(k8s_openapi::jiff::Timestamp::now));
    let client = emulator.client("ecosystem");
    let mut blueprint: Blueprint = crate::sandbox::e2e::default_blueprint();
    blueprint.metadata.uid = Some("5b2f2a3e-1d7c-4a8e-9a55-3f3c8c1e2d11".into());
    let failed = |message: &str| Event {
        type_: EventType::Warning,
        reason: "ExecutionFailed".into(),
        message: message.into(),
        stage: None,
    };
    let reporter = Reporter { controller: "k8s-blueprint-operator".into(), instance: None };
    let published = blueprint_operator::publish::publish(
        &client,
        &reporter,
        &blueprint,
        &[failed("dogus/cas: refused"), failed("dogus/ldap: refused")],
    )
    .await;
    assert_eq!(published, 2);
    let writes: Vec<String> = emulator
        .requests()
        .iter()
        .filter(|r| r.path.contains("/events") && r.method != "GET")
        .map(|r| r.method.clone())
        .collect();
    assert_eq!(writes, ["POST", "POST"]);
    let notes: Vec<Value> = emulator.list("events.k8s.io/v1", "Event").iter().map(|e| e["note"].clone()).collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
}

/// A create that meets an object another writer created since the operator's cache was filled
/// (409 AlreadyExists): the operator reads it (`get`, granted for this race only) and accepts it when
/// it installs the same, else reports a conflict (retried on the next reconcile).
#[tokio::test]
async fn a_create_that_finds_the_object_reads_it_and_accepts_the_same_install() {
    let existing = |version: &'static str| {
        move |blueprint: &Blueprint| -> Responder {
            let blueprint = blueprint.clone();
            Box::new(move |r: &Recorded| match (r.method.as_str(), r.path.as_str()) {
                ("POST", DOGU_PATH) => (409, status(409, "AlreadyExists")),
                ("GET", path) if path == format!("{DOGU_PATH}/nexus") => {
                    let mut dogu = serde_json::to_value(dogu_cr("official/nexus", version)).unwrap();
                    dogu["metadata"]["namespace"] = json!("ecosystem");
                    (200, dogu)
                }
                _ => default_answer(&blueprint, r),
            })
        }
    };
    let harness = install_nexus();
    let (outcome, requests) = harness.reconcile(existing("3.2.1-1")(&harness.blueprint)).await;
    let dogu_requests: Vec<String> = lines(&requests).into_iter().filter(|l| l.contains("/dogus")).collect();
    assert_eq!(dogu_requests, [format!("POST {DOGU_PATH}"), format!("GET {DOGU_PATH}/nexus")]);
    assert_eq!(outcome.execution.failure, None, "the same install is accepted");

    let harness = install_nexus();
    let (outcome, _) = harness.reconcile(existing("3.1.0-1")(&harness.blueprint)).await;
    let failure = outcome.execution.failure.expect("another version is not the same install");
    assert_eq!(failure.kind, FailureKind::Conflict);
    assert!(failure.message.contains("dogus/nexus already exists and differs"), "{}", failure.message);
}

/// The same for a component (the same code path, a second kind and a second `get` of the Role).
#[tokio::test]
async fn a_component_create_that_finds_the_component_reads_it() {
    let harness =
        Harness::new("{displayName: x, blueprint: {components: [{name: k8s/k8s-dogu-operator, version: 3.1.0}]}}");
    let blueprint = harness.blueprint.clone();
    let (outcome, requests) = harness
        .reconcile(Box::new(move |r: &Recorded| match (r.method.as_str(), r.path.as_str()) {
            ("POST", COMPONENT_PATH) => (409, status(409, "AlreadyExists")),
            ("GET", path) if path == format!("{COMPONENT_PATH}/k8s-dogu-operator") => {
                let mut component = serde_json::to_value(component_cr("k8s/k8s-dogu-operator", "3.1.0")).unwrap();
                component["metadata"]["namespace"] = json!("ecosystem");
                (200, component)
            }
            _ => default_answer(&blueprint, r),
        }))
        .await;
    let component_requests: Vec<String> = lines(&requests).into_iter().filter(|l| l.contains("/components")).collect();
    assert_eq!(
        component_requests,
        [format!("POST {COMPONENT_PATH}"), format!("GET {COMPONENT_PATH}/k8s-dogu-operator")]
    );
    assert_eq!(outcome.execution.failure, None, "the same install is accepted");
}

/// D59: each dogu's CR follows the global config and its own config, and the first dogus' CRs do not
/// wait for the last dogus' config. (The mock answers in the order the requests arrive, so the order is
/// the scheduler's: the global config and the first dogu's config are answered first.)
#[tokio::test]
async fn each_dogu_follows_its_own_config_not_every_dogus() {
    let names: Vec<String> = (0..12).map(|i| format!("dogu{i:02}")).collect();
    let dogus: Vec<String> = names.iter().map(|n| format!("{{name: official/{n}, version: 1.0.0-1}}")).collect();
    let config: Vec<String> = names.iter().map(|n| format!("{n}: [{{key: logging/root, value: WARN}}]")).collect();
    let spec = format!(
        "{{displayName: x, blueprint: {{dogus: [{}], config: {{global: [{{key: fqdn, value: ces.example.com}}], dogus: {{{}}}}}}}}}",
        dogus.join(", "),
        config.join(", ")
    );
    let mut harness = Harness::new(&spec).config(config_map(
        "global-config",
        "global-config",
        None,
        [("config.yaml", "fqdn: old.example.com\n")],
        "17",
    ));
    for name in &names {
        harness = harness.descriptor(&format!("official/{name}"), "1.0.0-1");
    }
    let (outcome, requests) = harness.reconcile(healthy(harness.blueprint.clone())).await;
    assert_eq!(outcome.execution.failure, None);
    assert_eq!(outcome.execution.performed, 25, "12 config maps, the global config, 12 Dogu CRs");
    let at = |wanted: &dyn Fn(&Recorded) -> bool| requests.iter().position(wanted).expect("the request was sent");
    let global = at(&|r| r.line() == "PATCH /api/v1/namespaces/ecosystem/configmaps/global-config");
    let config_of = |name: &str| {
        at(&|r| {
            r.line() == "POST /api/v1/namespaces/ecosystem/configmaps"
                && r.body["metadata"]["name"] == format!("{name}-config")
        })
    };
    let dogu_of = |name: &str| at(&|r| r.line() == format!("POST {DOGU_PATH}") && r.body["metadata"]["name"] == name);
    for name in &names {
        assert!(global < dogu_of(name), "{name}'s CR after the global config");
        assert!(config_of(name) < dogu_of(name), "{name}'s CR after its own config");
    }
    let last_config = names.iter().map(|n| config_of(n)).max().unwrap();
    assert!(
        dogu_of(&names[0]) < last_config,
        "the first dogu did not wait for the last dogu's config: {:?}",
        lines(&requests)
    );
}
