//! Taking over from the Go operator (docs/migration.md), on the real API server: a Blueprint the Go
//! operator applied and left with its status (conditions without observedGeneration), the ecosystem as
//! it made it. The first reconcile of this operator changes nothing in the ecosystem, keeps the
//! history of the conditions (their transition times), and writes the status once.

use std::collections::BTreeMap;

use blueprint_operator::sandbox::ecosystem::Behaviour;
use blueprint_operator::sandbox::seed;
use serde_json::{Value, json};

use super::control_plane;
use super::rbac::{SERVICE_ACCOUNT, role_in, user_of};
use crate::sandbox::e2e::{Scene, completed, metric};

const UPGRADE_CLUSTER: &str = include_str!("../../examples/upgrade/cluster.yaml");

/// The stored Blueprint of the upgrade example, with the status the Go operator writes: its conditions
/// carry no observedGeneration, and the status has none.
fn left_by_the_go_operator() -> Value {
    let documents: Vec<Value> = serde_saphyr::from_multiple(UPGRADE_CLUSTER).unwrap();
    let mut stored =
        documents[0]["items"].as_array().unwrap().iter().find(|o| o["kind"] == "Blueprint").unwrap().clone();
    let status = stored["status"].as_object_mut().unwrap();
    status.remove("observedGeneration");
    for condition in status["conditions"].as_array_mut().unwrap() {
        condition.as_object_mut().unwrap().remove("observedGeneration");
    }
    stored
}

/// `kind/name` → resourceVersion of what the operator could write in the namespace.
async fn versions(scene: &Scene) -> BTreeMap<String, String> {
    let mut versions = BTreeMap::new();
    for (api_version, kind) in
        [("k8s.cloudogu.com/v2", "Dogu"), ("k8s.cloudogu.com/v1", "Component"), ("v1", "ConfigMap"), ("v1", "Secret")]
    {
        for object in scene.cluster.list(api_version, kind, &scene.namespace).await {
            let name = object["metadata"]["name"].as_str().unwrap_or_default().to_owned();
            let version = object["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_owned();
            versions.insert(format!("{kind}/{name}"), version);
        }
    }
    versions
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_reconcile_after_the_switch_changes_nothing_and_keeps_the_history() {
    let plane = control_plane::shared();
    let namespace = plane.namespace("migration");
    // The operator as deployed: its own ServiceAccount and Role (deploy/rbac.yaml), so that the audit
    // log tells its requests from the simulated dogu and component operators'.
    let token = role_in(&namespace, &[]).remove(0);
    let operator = plane.config_for(SERVICE_ACCOUNT, &token, &namespace).await;
    let user = user_of(&namespace, SERVICE_ACCOUNT);
    let mut scene = Scene::on_kube_apiserver(namespace, Some(operator), Behaviour::default(), UPGRADE_CLUSTER).await;
    // The ecosystem as the Go operator left it: the dogu operator has restarted every dogu after the
    // config it was seeded with (the example's start times are older), and all are healthy.
    scene.start_ecosystem();
    let seeded = scene.get("v1", "ConfigMap", "global-config").await.unwrap()["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap()
        .to_owned();
    for dogu in ["cas", "ldap", "nginx-ingress", "nginx-static", "postfix", "postgresql", "redmine"] {
        scene
            .wait_for(("k8s.cloudogu.com/v2", "Dogu", dogu), |d| {
                // Timestamps have whole seconds: a restart in the second the config was seeded is after
                // it (the simulated dogu operator starts after the seeding). `>` waited forever then
                // (seen once in CI).
                d["status"]["startedAt"].as_str().is_some_and(|t| t >= seeded.as_str())
                    && d["status"]["health"] == "available"
            })
            .await;
    }
    let stored = left_by_the_go_operator();
    seed::cluster(&scene.cluster, &scene.namespace, std::slice::from_ref(&stored)).await.unwrap();
    let before = versions(&scene).await;
    assert!(before.len() > 10, "the example's objects are there: {before:?}");

    scene.start_controller("0.1.0");
    let done = scene
        .wait_blueprint(|b| completed(b) && b.status.as_ref().is_some_and(|s| s.observed_generation.is_some()))
        .await
        .expect("the Blueprint is completed under this operator");

    // Its only write: the Blueprint's status, once.
    let writes: Vec<String> = plane
        .audited(&user)
        .into_iter()
        .filter(|r| matches!(r.verb.as_str(), "create" | "update" | "patch" | "delete"))
        .filter(|r| r.resource() != "leases")
        .map(|r| format!("{} {} {}", r.verb, r.resource(), r.request_uri))
        .collect();
    let status_write = format!(
        "patch blueprints/status /apis/k8s.cloudogu.com/v3/namespaces/{}/blueprints/blueprint-ces/status",
        scene.namespace
    );
    assert_eq!(writes.len(), 1, "{writes:#?}");
    assert!(writes[0].starts_with(&status_write), "{writes:#?}");
    assert_eq!(metric(&scene, "blueprint_operator_status_writes_total"), 1.0, "one status write");
    let components = |v: &BTreeMap<String, String>| {
        v.iter().filter(|(k, _)| !k.starts_with("Dogu/")).map(|(k, v)| (k.clone(), v.clone())).collect::<Vec<_>>()
    };
    assert_eq!(components(&versions(&scene).await), components(&before), "config and components untouched");
    let status = done.status.as_ref().unwrap();
    assert_eq!(status.observed_generation, done.metadata.generation);
    let completed_at = |conditions: &Value| {
        conditions.as_array().unwrap().iter().find(|c| c["type"] == "Completed").unwrap()["lastTransitionTime"].clone()
    };
    let now = serde_json::to_value(&status.conditions).unwrap();
    assert_eq!(completed_at(&now), completed_at(&stored["status"]["conditions"]), "Completed did not transition");
    // The conditions this reconcile evaluated now say for which generation; the two it had no reason to
    // evaluate (nothing to apply, no self-upgrade) keep what the Go operator wrote (D39).
    let generation_of = |type_: &str| status.conditions.iter().find(|c| c.type_ == type_).unwrap().observed_generation;
    for evaluated in ["Valid", "Executable", "EcosystemHealthy", "Completed"] {
        assert_eq!(generation_of(evaluated), done.metadata.generation, "{evaluated}");
    }
    for kept in ["SelfUpgradeCompleted", "LastApplySucceeded"] {
        assert_eq!(generation_of(kept), None, "{kept}");
    }
    // Nothing transitioned, so nothing is announced.
    assert_eq!(scene.events().await, Vec::<(String, String)>::new());
    assert_eq!(json!(metric(&scene, "blueprint_operator_actions_total")), json!(0.0));
    scene.shutdown().await;
}
