//! Least privilege, for real: the operator runs as a ServiceAccount bound only to `deploy/rbac.yaml`'s
//! Role, under the real server's RBAC authorization, through a fresh install (with a local dogu
//! registry ConfigMap it cannot see, so its create meets another writer's), an upgrade (config,
//! sensitive config from a referenced Secret, an additional mount), the removal of a dogu and a
//! component, its own upgrade, and two replicas of `run` handing the Lease over. The API server's
//! audit log shows every request it sent: none was refused (no 403), and every verb the Role grants
//! was used and allowed, so removing any one of them makes one of those requests fail with 403 (none
//! is spare). The two exceptions are the `get` of a Dogu or Component after a create that finds one
//! another writer created since the operator's cache was filled: a race the real server cannot be made
//! to lose on demand, exercised request by request in tests/shell/requests.rs
//! (`a_create_that_finds_the_object_reads_it_and_accepts_the_same_install`,
//! `a_component_create_that_finds_the_component_reads_it`).

use std::collections::BTreeSet;

use blueprint_operator::sandbox::ecosystem::Behaviour;
use blueprint_operator::sandbox::seed;
use serde_json::{Value, json};

use super::control_plane;
use crate::crd::repository;
use crate::sandbox::e2e::{Scene, blueprint, completed, conditions, default_blueprint};

pub const SERVICE_ACCOUNT: &str = "k8s-blueprint-operator";

/// `deploy/rbac.yaml` applied in `namespace` (its ServiceAccount, Role and RoleBinding, with any
/// `extra` ServiceAccounts bound too; not the webhook's ClusterRole, which tests/cluster/webhook.rs
/// proves with a CRD of its own); a token for each ServiceAccount from the TokenRequest API (as a
/// projected token in a pod would be).
pub fn role_in(namespace: &str, extra: &[&str]) -> Vec<String> {
    let plane = control_plane::shared();
    let mut text = std::fs::read_to_string(repository("deploy/rbac.yaml"))
        .unwrap()
        .split("\n---")
        .filter(|document| !document.contains("\nkind: Cluster"))
        .collect::<Vec<_>>()
        .join("\n---")
        .replace("namespace: ecosystem", &format!("namespace: {namespace}"));
    text.push('\n');
    for account in extra {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: {account}, namespace: {namespace}}}\n\
             ---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: {account}, namespace: {namespace}}}\n\
             roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: {SERVICE_ACCOUNT}}}\n\
             subjects: [{{kind: ServiceAccount, name: {account}, namespace: {namespace}}}]\n"
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rbac.yaml");
    std::fs::write(&file, text).unwrap();
    plane.kubectl(&["apply", "-f", &file.display().to_string()]).unwrap();
    std::iter::once(&SERVICE_ACCOUNT)
        .chain(extra)
        .map(|account| {
            let token = plane.kubectl(&["create", "token", account, "-n", namespace, "--duration=2h"]).unwrap();
            token.trim().to_owned()
        })
        .collect()
}

/// The client configuration of the operator's ServiceAccount in `namespace`.
async fn operator_config(namespace: &str) -> kube::Config {
    let token = role_in(namespace, &[]).remove(0);
    control_plane::shared().config_for(SERVICE_ACCOUNT, &token, namespace).await
}

/// The user name the API server gives a ServiceAccount.
pub fn user_of(namespace: &str, account: &str) -> String {
    format!("system:serviceaccount:{namespace}:{account}")
}

/// `(apiGroup, resource, verb)` of every rule of the Role in `deploy/rbac.yaml`, but those restricted
/// to objects by name (the conversion webhook's Secret: its verbs are proven used, and sufficient, by
/// tests/cluster/webhook.rs, where the webhook's certificate is kept).
fn granted() -> BTreeSet<(String, String, String)> {
    let text = std::fs::read_to_string(repository("deploy/rbac.yaml")).unwrap();
    let mut granted = BTreeSet::new();
    for document in text.split("\n---") {
        let document: Value = serde_saphyr::from_str(document).unwrap();
        if document["kind"] != "Role" {
            continue;
        }
        for rule in document["rules"].as_array().unwrap().iter().filter(|rule| rule.get("resourceNames").is_none()) {
            for group in rule["apiGroups"].as_array().unwrap() {
                for resource in rule["resources"].as_array().unwrap() {
                    for verb in rule["verbs"].as_array().unwrap() {
                        let text = |v: &Value| v.as_str().unwrap().to_owned();
                        granted.insert((text(group), text(resource), text(verb)));
                    }
                }
            }
        }
    }
    granted
}

/// The upgrade example with nginx-static and longhorn removed (`absent`): a dogu and a component
/// deleted.
fn removing_a_dogu_and_a_component() -> blueprint_machine::api::Blueprint {
    let mut document: Value = serde_saphyr::from_str(include_str!("../../examples/upgrade/blueprint.yaml")).unwrap();
    let inner = &mut document["spec"]["blueprint"];
    for entry in inner["dogus"].as_array_mut().unwrap() {
        if entry["name"] == "k8s/nginx-static" {
            *entry = json!({"name": "k8s/nginx-static", "absent": true});
        }
    }
    inner["components"] = json!([{"name": "k8s/k8s-longhorn", "absent": true}]);
    serde_json::from_value(document).unwrap()
}

/// The default blueprint asking for the operator's own upgrade.
fn self_upgrade() -> blueprint_machine::api::Blueprint {
    let mut document = serde_json::to_value(default_blueprint()).unwrap();
    let own = json!({"name": "k8s/k8s-blueprint-operator", "version": "0.2.0"});
    match document["spec"]["blueprint"]["components"].as_array_mut() {
        Some(components) => components.push(own),
        None => document["spec"]["blueprint"]["components"] = json!([own]),
    }
    serde_json::from_value(document).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_needs_every_verb_of_its_role_and_no_other() {
    let plane = control_plane::shared();

    // A fresh install, then the operator upgrades itself.
    let fresh = plane.namespace("rbac-fresh");
    let operator = operator_config(&fresh).await;
    let mut scene =
        Scene::on_kube_apiserver(fresh.clone(), Some(operator), Behaviour::default(), seed::DEFAULT_CLUSTER).await;
    scene
        .create(json!({"apiVersion": "k8s.cloudogu.com/v1", "kind": "Component", "metadata": {"name": "k8s-blueprint-operator"},
            "spec": {"namespace": "k8s", "name": "k8s-blueprint-operator", "version": "0.1.0"}}))
        .await;
    // A local dogu registry ConfigMap without its labels: the operator's cache (which selects by label)
    // does not see it, so adding ldap's descriptor meets it (409), reads it (get) and patches it.
    scene
        .create(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dogu-spec-ldap"},
            "data": {"2.6.7-4": "{\"Name\": \"official/ldap\", \"Version\": \"2.6.7-4\"}"}}))
        .await;
    scene.start_controller("0.1.0");
    scene.apply_blueprint(&default_blueprint()).await.unwrap();
    assert!(scene.wait_blueprint(completed).await.is_some(), "fresh install: {}", conditions(&scene).await);
    let ldap = scene.get("v1", "ConfigMap", "dogu-spec-ldap").await.unwrap();
    assert_eq!(ldap["data"].as_object().unwrap().len(), 2, "the operator added its version to it: {ldap}");
    scene.apply_blueprint(&self_upgrade()).await.unwrap();
    let upgraded = scene.wait_blueprint(|b| b.metadata.generation == Some(2) && completed(b)).await;
    assert!(upgraded.is_some(), "self-upgrade: {}", conditions(&scene).await);
    assert_eq!(scene.rollouts, ["0.1.0", "0.2.0"]);
    scene.shutdown().await;

    // An upgrade of an installed ecosystem, then a dogu and a component removed.
    let upgrade = plane.namespace("rbac-upgrade");
    let operator = operator_config(&upgrade).await;
    let cluster = include_str!("../../examples/upgrade/cluster.yaml");
    let mut scene = Scene::on_kube_apiserver(upgrade.clone(), Some(operator), Behaviour::default(), cluster).await;
    scene.start_controller("0.1.0");
    scene.apply_blueprint(&blueprint(include_str!("../../examples/upgrade/blueprint.yaml"))).await.unwrap();
    assert!(scene.wait_blueprint(completed).await.is_some(), "upgrade: {}", conditions(&scene).await);
    let generation = scene.blueprint(crate::sandbox::e2e::NAME).await.unwrap().metadata.generation;
    scene.apply_blueprint(&removing_a_dogu_and_a_component()).await.unwrap();
    let removed = scene.wait_blueprint(|b| b.metadata.generation > generation && completed(b)).await;
    assert!(removed.is_some(), "removal: {}", conditions(&scene).await);
    assert!(scene.get("k8s.cloudogu.com/v2", "Dogu", "nginx-static").await.is_none(), "nginx-static deleted");
    scene.shutdown().await;

    // Two replicas of `run` (the Lease), one killed while it installs.
    let replicas = plane.namespace("rbac-leader");
    let users = super::leader::two_replicas_hand_over(&replicas).await;

    let mut used = BTreeSet::new();
    let mut refused = Vec::new();
    let users = [user_of(&fresh, SERVICE_ACCOUNT), user_of(&upgrade, SERVICE_ACCOUNT)].into_iter().chain(users);
    for user in users {
        for request in plane.audited(&user) {
            let Some(object) = &request.object_ref else { continue };
            if request.code() == 403 {
                refused.push(format!("{} {} {}", request.verb, request.resource(), request.request_uri));
            } else if request.code() < 400 {
                used.insert((object.api_group.clone(), request.resource(), request.verb.clone()));
            }
        }
    }
    assert_eq!(refused, Vec::<String>::new(), "requests the Role does not allow");
    let race_only: BTreeSet<(String, String, String)> = [("dogus", "get"), ("components", "get")]
        .into_iter()
        .map(|(resource, verb)| ("k8s.cloudogu.com".to_owned(), resource.to_owned(), verb.to_owned()))
        .collect();
    // A cache is filled by a streaming list, authorized as a watch; `list` is granted for the servers
    // that refuse streaming lists (the WatchList gate off), where each cache lists, then watches.
    let fallback_only: BTreeSet<(String, String, String)> = used
        .iter()
        .filter(|(_, _, verb)| verb == "watch")
        .map(|(group, resource, _)| (group.clone(), resource.clone(), "list".to_owned()))
        .collect();
    let spare: Vec<_> =
        granted().difference(&used).filter(|g| !race_only.contains(g) && !fallback_only.contains(g)).cloned().collect();
    assert_eq!(spare, Vec::new(), "granted but never used (spare): used were {used:#?}");
    let missing: Vec<_> = race_only.difference(&granted()).cloned().collect();
    assert_eq!(missing, Vec::new(), "the race-only verbs are granted");
    let missing: Vec<_> = fallback_only.difference(&granted()).cloned().collect();
    assert_eq!(missing, Vec::new(), "list is granted wherever watch is used (the fallback's LIST)");
}
