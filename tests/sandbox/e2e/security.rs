//! Issue 27 ("Security and bounds"), end to end: what a Blueprint's writer may reach through it, and
//! what someone else changes of what the operator owns.

use base64::Engine;
use serde_json::json;

use super::{NAME, On, Scene, completed, condition_is, default_blueprint};

/// Finding 3: a user who may write Blueprints but not read Secrets had the webhook's private key
/// copied into `postfix-config` by a `secretRef` without `sensitive`; Helm release Secrets were
/// reachable the same way. Now the blueprint is `Valid=False` naming each, and nothing is written.
pub async fn a_blueprint_cannot_read_the_operators_or_helms_secrets(on: On) {
    let mut scene = Scene::fresh(on, None).await;
    let data = |value: &str| base64::engine::general_purpose::STANDARD.encode(value);
    scene
        .create(json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": "blueprint-operator-webhook-cert"},
            "data": {"tls.crt": data("certificate"), "tls.key": data("PRIVATE-KEY-OF-THE-WEBHOOK")}}))
        .await;
    scene
        .create(json!({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
            "metadata": {"name": "sh.helm.release.v1.postgres.v1", "labels": {"owner": "helm"}},
            "data": {"release": data("RELEASE-WITH-A-PASSWORD")}}))
        .await;
    let mut blueprint = default_blueprint();
    let spec = std::sync::Arc::make_mut(blueprint.spec.spec.as_mut().unwrap());
    let config = std::sync::Arc::make_mut(spec.blueprint.as_mut().unwrap()).config.get_or_insert_with(Default::default);
    let entry = |key: &str, name: &str, secret_key: &str| blueprint_machine::api::ConfigEntry {
        key: key.into(),
        secret_ref: Some(Box::new(blueprint_machine::api::SecretReference {
            name: name.into(),
            key: secret_key.into(),
        })),
        ..Default::default()
    };
    let postfix = config.dogus.get_or_insert_with(Default::default).entry("postfix".into()).or_default();
    postfix.push(entry("relay/key", "blueprint-operator-webhook-cert", "tls.key"));
    postfix.push(entry("relay/release", "sh.helm.release.v1.postgres.v1", "release"));
    scene.start_and_apply(&blueprint).await;
    let refused = scene.wait_blueprint(|b| condition_is(b, "Valid", "False")).await;
    let refused = refused.unwrap_or_else(|| panic!("not refused"));
    let valid = refused.status.as_ref().unwrap().conditions.iter().find(|c| c.type_ == "Valid").unwrap().clone();
    assert_eq!(valid.reason, "ForbiddenSecretReferences", "{valid:?}");
    for named in [
        "secret \"blueprint-operator-webhook-cert\" cannot be referenced: it is one of the operator's own Secrets",
        "secret \"sh.helm.release.v1.postgres.v1\" cannot be referenced: Secrets of type helm.sh/release.v1 are never read",
    ] {
        assert!(valid.message.contains(named), "{}", valid.message);
    }
    let everything = serde_json::to_string(&scene.cluster.list("v1", "ConfigMap", &scene.namespace).await).unwrap();
    for value in ["PRIVATE-KEY-OF-THE-WEBHOOK", "RELEASE-WITH-A-PASSWORD"] {
        assert!(!everything.contains(&data(value)) && !everything.contains(value), "{value} reached a ConfigMap");
    }
    scene.shutdown().await;
}

/// Issue 27, finding 7: a status set by hand (`Completed=False/Tampered`) stayed until the spec
/// changed. The status is the operator's alone: its change by anyone else triggers a reconcile,
/// which writes it back within the debounce (at most `DEBOUNCE_MAX_DELAY`, 5 s by default).
pub async fn a_status_changed_by_hand_is_restored(on: On) {
    let mut scene = Scene::fresh(on, None).await;
    scene.start_and_apply(&default_blueprint()).await;
    scene.wait_blueprint(completed).await.expect("the blueprint completes");
    let generation = scene.blueprint(NAME).await.unwrap().metadata.generation;
    let tampered = json!({"conditions": [{
        "type": "Completed", "status": "False", "reason": "Tampered", "message": "set by hand",
        "lastTransitionTime": "2020-01-01T00:00:00Z", "observedGeneration": generation,
    }]});
    let namespace = scene.namespace.clone();
    scene.cluster.update_status("k8s.cloudogu.com/v3", "Blueprint", &namespace, NAME, tampered).await.unwrap();
    let edited = tokio::time::Instant::now();
    let restored = scene
        .wait_blueprint(|b| {
            let conditions = b.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
            completed(b) && conditions.iter().all(|c| c.reason != "Tampered") && conditions.len() > 1
        })
        .await;
    assert!(restored.is_some(), "the status set by hand stayed: {}", super::conditions(&scene).await);
    if on == On::Emulator {
        // The debounce's bound, and the reconcile's own (virtual) moments.
        let took = edited.elapsed();
        assert!(took <= std::time::Duration::from_secs(6), "restored only after {took:?}");
    }
}
