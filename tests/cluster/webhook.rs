//! The conversion webhook's self-managed certificate on the real API server (docs/webhook.md): kept
//! by `SelfManaged` (the code `run` uses) as a ServiceAccount that has only what deploy/rbac.yaml
//! grants for it, and served by the webhook's own server. A CRD of a test group of its own, serving v2
//! and v3 (stored as v3), converted by the webhook on 127.0.0.1 and created without a `caBundle`: the
//! certificate is made and kept in its Secret, its CA written into that CRD, and the API server
//! converts through it; a certificate about to expire is renewed (a new CA beside the old one), served
//! and trusted, and conversion goes on; a second replica starting with everything in place writes
//! nothing; two replicas starting together share one certificate; a Secret deleted or spoiled by hand
//! is made again. The shared control plane's Blueprint CRD is never touched.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use blueprint_operator::webhook::certificates::ca_bundle::CaBundleTarget;
use blueprint_operator::webhook::certificates::self_managed::SelfManaged;
use blueprint_operator::webhook::certificates::{
    Decision, LIFETIME, Material, RENEW_BEFORE, ServingNames, SubjectName, decide, issue,
};
use blueprint_operator::webhook::{router, tls};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DeleteParams, DynamicObject, PostParams};
use kube::{Api, Client};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use serde_json::{Value, json};

use super::control_plane;
use super::rbac::user_of;
use crate::crd::repository;
use crate::support::tls::https;

const GROUP: &str = "webhook.test.cloudogu.com";
const PLURAL: &str = "keptblueprints";
const SECRET: &str = "blueprint-operator-webhook-cert";
const SERVICE: &str = "blueprint-operator-webhook";
/// The replica that keeps the certificate, and one that starts later.
const KEEPER: &str = "webhook-keeper";
const SECOND: &str = "webhook-second";

fn crd_name() -> String {
    format!("{PLURAL}.{GROUP}")
}

/// Two versions (v3 stored), any content, converted by the webhook at `url`, without a `caBundle`.
fn crd(url: &str) -> CustomResourceDefinition {
    let version = |name: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage,
               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
    };
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": crd_name()},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"kind": "Blueprint", "listKind": "BlueprintList", "plural": PLURAL, "singular": "keptblueprint"},
            "versions": [version("v2", false), version("v3", true)],
            "conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": url}}}
        }
    }))
    .unwrap()
}

fn blueprints(client: &Client, namespace: &str, version: &str) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: GROUP.into(),
        version: version.into(),
        api_version: format!("{GROUP}/{version}"),
        kind: "Blueprint".into(),
        plural: PLURAL.into(),
    };
    Api::namespaced_with(client.clone(), namespace, &resource)
}

/// The webhook's rules of deploy/rbac.yaml for `accounts` in `namespace`: the Role's rule on the
/// Secret by name, the create of Secrets (which cannot be restricted by name: the broad rule of the
/// Role grants it), and the ClusterRole on the CRD by name, the name made the test's CRD. A token for
/// each account.
fn webhook_rights(namespace: &str, accounts: &[&str]) -> Vec<String> {
    webhook_rights_on(namespace, accounts, &crd_name())
}

/// [`webhook_rights`] with the ClusterRole's CRD `crd`.
fn webhook_rights_on(namespace: &str, accounts: &[&str], crd: &str) -> Vec<String> {
    let plane = control_plane::shared();
    let deploy: Vec<Value> =
        serde_saphyr::from_multiple(&std::fs::read_to_string(repository("deploy/rbac.yaml")).unwrap()).unwrap();
    let role = deploy.iter().find(|d| d["kind"] == "Role").unwrap();
    let by_name: Vec<Value> =
        role["rules"].as_array().unwrap().iter().filter(|r| r.get("resourceNames").is_some()).cloned().collect();
    assert_eq!(by_name.len(), 1, "{by_name:?}");
    assert_eq!(by_name[0]["resourceNames"], json!([SECRET]));
    let mut cluster_role = deploy.iter().find(|d| d["kind"] == "ClusterRole").unwrap().clone();
    let name = format!("webhook-test-{namespace}");
    let crd_name = || crd.to_owned();
    cluster_role["metadata"] = json!({"name": name});
    for rule in cluster_role["rules"].as_array_mut().unwrap() {
        assert_eq!(rule["resourceNames"], json!([blueprint_operator::webhook::certificates::ca_bundle::BLUEPRINT_CRD]));
        rule["resourceNames"] = json!([crd_name()]);
    }
    let mut items = vec![
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "webhook", "namespace": namespace},
               "rules": [by_name[0], {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}]}),
        cluster_role,
    ];
    for account in accounts {
        let subject = json!([{"kind": "ServiceAccount", "name": account, "namespace": namespace}]);
        items.push(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": namespace}}));
        items.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": format!("webhook-{account}"), "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "webhook"}, "subjects": subject}));
        items.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": format!("{name}-{account}")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}, "subjects": subject}));
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rbac.json");
    std::fs::write(&file, json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()).unwrap();
    plane.kubectl(&["apply", "-f", &file.display().to_string()]).unwrap();
    accounts
        .iter()
        .map(|account| plane.kubectl(&["create", "token", account, "-n", namespace]).unwrap().trim().to_owned())
        .collect()
}

/// Waits (at most `limit`) until `done` holds; fails naming `what`.
async fn wait_until<F: Future<Output = bool>>(limit: Duration, what: &str, mut done: impl FnMut() -> F) {
    let deadline = tokio::time::Instant::now() + limit;
    while !done().await {
        assert!(tokio::time::Instant::now() < deadline, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The writes `account` of `namespace` made that the API server carried out: `verb resource`.
fn writes(namespace: &str, account: &str) -> Vec<String> {
    control_plane::shared()
        .audited(&user_of(namespace, account))
        .into_iter()
        .filter(|r| matches!(r.verb.as_str(), "create" | "update" | "patch" | "delete") && r.code() < 400)
        .map(|r| format!("{} {}", r.verb, r.resource()))
        .collect()
}

fn certificates(pem: &str) -> Vec<Vec<u8>> {
    CertificateDer::pem_slice_iter(pem.as_bytes()).map(|c| c.unwrap().to_vec()).collect()
}

async fn ca_bundle(crds: &Api<CustomResourceDefinition>) -> Option<String> {
    let crd = crds.get(&crd_name()).await.unwrap();
    let bundle = crd.spec.conversion?.webhook?.client_config?.ca_bundle?;
    Some(String::from_utf8(bundle.0).unwrap())
}

/// The CRD's `caBundle` set by an admin.
async fn set_ca_bundle(crds: &Api<CustomResourceDefinition>, pem: &str) {
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD.encode(pem);
    let patch = json!({"spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": encoded}}}}});
    crds.patch(&crd_name(), &kube::api::PatchParams::default(), &kube::api::Patch::Merge(&patch)).await.unwrap();
}

fn loopback(namespace: &str) -> ServingNames {
    ServingNames::new(SERVICE, namespace, &[SubjectName::Ip(IpAddr::V4(Ipv4Addr::LOCALHOST))])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_self_managed_certificate_is_trusted_renewed_and_left_alone_when_good() {
    let plane = control_plane::shared();
    let namespace = plane.namespace("webhook");
    let tokens = webhook_rights(&namespace, &[KEEPER, SECOND]);
    let client_of = |account: &str, token: &str| {
        let (account, token, namespace) = (account.to_owned(), token.to_owned(), namespace.clone());
        async move { Client::try_from(plane.config_for(&account, &token, &namespace).await).unwrap() }
    };
    let admin = plane.client(&namespace).await;
    let crds: Api<CustomResourceDefinition> = Api::all(admin.clone());
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), &namespace);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    crds.create(&PostParams::default(), &crd(&format!("https://{address}/convert"))).await.unwrap();
    let established = tokio::task::spawn_blocking(|| {
        let name = format!("crd/{}", crd_name());
        control_plane::shared().kubectl(&["wait", "--for=condition=Established", &name, "--timeout=60s"])
    });
    assert!(established.await.unwrap().is_ok());

    // The webhook serves as soon as the keeper has a certificate for it.
    let current = tls::CurrentCertificate::empty();
    let server = tokio::spawn(tls::serve(listener, router(), current.clone()));
    let names = loopback(&namespace);
    let target = CaBundleTarget::conversion_of(&crd_name());
    let keeper =
        SelfManaged::new(client_of(KEEPER, &tokens[0]).await, &namespace, SECRET, names.clone(), target.clone())
            .with_jitter(Duration::ZERO);
    let keeping = tokio::spawn(keeper.run(current.clone()));
    wait_until(Duration::from_secs(60), "a certificate served", || async { current.is_set() }).await;

    // The Secret: a kubernetes.io/tls Secret with a certificate for the names, good for a year.
    let secret = secrets.get(SECRET).await.unwrap();
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let now = Timestamp::now();
    let Decision::Keep(kept) = decide(Some(&secret), &names, now) else { panic!("the Secret's certificate serves") };
    assert!(kept.renew_at() > now + LIFETIME - RENEW_BEFORE - SignedDuration::from_mins(5), "{kept:?}");
    let material = Material::from_secret(&secret).unwrap();
    let served = https(&address, &material.ca, "127.0.0.1", "GET", "/", "").await.unwrap();
    assert_eq!(served.certificate, certificates(&material.certificate)[0], "the Secret's certificate is served");
    // The CRD trusts its CA, and the API server converts through the webhook.
    assert_eq!(ca_bundle(&crds).await.as_deref(), Some(material.ca.as_str()));
    let v3 = serde_json::from_value::<DynamicObject>(json!({
        "apiVersion": format!("{GROUP}/v3"), "kind": "Blueprint", "metadata": {"name": "kept"},
        "spec": {"blueprint": {"dogus": [{"name": "official/ldap", "version": "2.6.8-1"}]}}}))
    .unwrap();
    let (as_v2, as_v3) = (blueprints(&admin, &namespace, "v2"), blueprints(&admin, &namespace, "v3"));
    // The CRD's versions are served a moment after it is established (and after each change of it).
    wait_until(Duration::from_secs(60), "the v3 create", || async {
        as_v3.create(&PostParams::default(), &v3).await.is_ok()
    })
    .await;
    let read = as_v2.get("kept").await.unwrap();
    assert_eq!(read.types.unwrap().api_version, format!("{GROUP}/v2"));
    // Written: the CA patched into the CRD, then the Secret holding it created (the CRD first: it is
    // the anchor by which a replica tells its own Secret from a forged one). Nothing else.
    assert_eq!(writes(&namespace, KEEPER), ["patch customresourcedefinitions", "create secrets"]);

    // A second replica starting now reads both and writes nothing.
    let second =
        SelfManaged::new(client_of(SECOND, &tokens[1]).await, &namespace, SECRET, names.clone(), target.clone());
    let held = second.ensure().await.unwrap();
    assert_eq!(Some(held.resource_version), secret.metadata.resource_version);
    assert_eq!(held.ca, material.ca);
    assert_eq!(writes(&namespace, SECOND), Vec::<String>::new());

    // A certificate that expires in 10 days (a year old, say; its CA trusted by the CRD, as the
    // operator's own is): the keeper sees it, finds it due and renews it, with a new CA beside the old
    // one.
    let expiring = issue(&names, now - LIFETIME + SignedDuration::from_hours(24 * 10), None).unwrap();
    set_ca_bundle(&crds, &expiring.ca).await;
    let mut edited = secrets.get(SECRET).await.unwrap();
    edited.data = Some(expiring.data());
    let edited = secrets.replace(SECRET, &PostParams::default(), &edited).await.unwrap();
    let renewed = {
        let (secrets, names, edited) = (&secrets, &names, &edited);
        let renewed = std::sync::Mutex::new(None);
        wait_until(Duration::from_secs(60), "the expiring certificate renewed", || async {
            let secret = secrets.get(SECRET).await.unwrap();
            let fresh = secret.metadata.resource_version != edited.metadata.resource_version
                && matches!(decide(Some(&secret), names, Timestamp::now()), Decision::Keep(_));
            if fresh {
                *renewed.lock().unwrap() = Some(Material::from_secret(&secret).unwrap());
            }
            fresh
        })
        .await;
        renewed.into_inner().unwrap().unwrap()
    };
    let bundle = certificates(&renewed.ca);
    assert_eq!(bundle.len(), 2, "the new CA and the old one");
    assert_eq!(bundle[1], certificates(&expiring.ca)[0], "the old CA, trusted while replicas switch");
    wait_until(Duration::from_secs(60), "the renewed certificate served", || async {
        let served = https(&address, &renewed.ca, "127.0.0.1", "GET", "/", "").await;
        served.is_ok_and(|s| s.certificate == certificates(&renewed.certificate)[0])
    })
    .await;
    assert_eq!(ca_bundle(&crds).await.as_deref(), Some(renewed.ca.as_str()), "the CRD trusts both");
    wait_until(Duration::from_secs(60), "a v2 read after the renewal", || async { as_v2.get("kept").await.is_ok() })
        .await;

    // The webhook down: v2 clients get an error; v3 clients do not notice.
    server.abort();
    wait_until(Duration::from_secs(60), "a v2 read failing", || async { as_v2.get("kept").await.is_err() }).await;
    let error = as_v2.get("kept").await.unwrap_err().to_string();
    assert!(error.contains("conversion webhook"), "{error}");
    assert!(as_v3.get("kept").await.is_ok());

    // Least privilege: nothing refused, every verb granted used (the watch is audited once it ends).
    keeping.abort();
    let audited =
        || [KEEPER, SECOND].iter().flat_map(|account| plane.audited(&user_of(&namespace, account))).collect::<Vec<_>>();
    wait_until(Duration::from_secs(60), "the watch ended", || async {
        audited().iter().any(|r| r.verb == "watch" && r.resource() == "secrets")
    })
    .await;
    let requests = audited();
    let refused: Vec<String> =
        requests.iter().filter(|r| r.code() == 403).map(|r| format!("{} {}", r.verb, r.request_uri)).collect();
    assert_eq!(refused, Vec::<String>::new());
    let mut used: Vec<String> = requests.iter().map(|r| format!("{} {}", r.resource(), r.verb)).collect();
    used.sort();
    used.dedup();
    assert_eq!(
        used,
        [
            "customresourcedefinitions get",
            "customresourcedefinitions patch",
            "secrets create",
            "secrets get",
            "secrets update",
            "secrets watch"
        ],
        "a streaming list (a watch) fills the Secret's cache: no list where the server serves them"
    );
    let blueprint_crd = blueprint_operator::webhook::certificates::ca_bundle::BLUEPRINT_CRD;
    assert!(requests.iter().all(|r| !r.request_uri.contains(blueprint_crd)), "the shared Blueprint CRD untouched");

    crds.delete(&crd_name(), &DeleteParams::default()).await.unwrap();
    plane.kubectl(&["delete", "clusterrole", &format!("webhook-test-{namespace}")]).unwrap();
    for account in [KEEPER, SECOND] {
        plane.kubectl(&["delete", "clusterrolebinding", &format!("webhook-test-{namespace}-{account}")]).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_one_certificate_and_a_secret_spoiled_by_hand_is_made_again() {
    let plane = control_plane::shared();
    let namespace = plane.namespace("webhook-race");
    let admin = plane.client(&namespace).await;
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), &namespace);
    let names = loopback(&namespace);
    // A CRD that does not exist: nothing to write the CA into (logged), the certificate is kept anyway.
    let target = CaBundleTarget::conversion_of("absent.webhook.test.cloudogu.com");
    let keeper = || SelfManaged::new(admin.clone(), &namespace, SECRET, names.clone(), target.clone());

    // Two replicas starting together: one creates the Secret, the other's create meets it and uses it.
    let (first, second) = (keeper(), keeper());
    let (one, other) = tokio::join!(first.ensure(), second.ensure());
    let (one, other) = (one.unwrap(), other.unwrap());
    assert_eq!(one.resource_version, other.resource_version);
    assert_eq!(one.ca, other.ca);

    // A running replica makes a new one when it is deleted, and replaces one that does not serve.
    let current = tls::CurrentCertificate::empty();
    let keeping = tokio::spawn(keeper().run(current.clone()));
    wait_until(Duration::from_secs(60), "a certificate served", || async { current.is_set() }).await;
    let serves = |secret: &Secret| matches!(decide(Some(secret), &names, Timestamp::now()), Decision::Keep(_));
    secrets.delete(SECRET, &DeleteParams::default()).await.unwrap();
    wait_until(Duration::from_secs(60), "the Secret made again", || async {
        secrets.get_opt(SECRET).await.unwrap().is_some_and(|s| serves(&s))
    })
    .await;
    let mut spoiled = secrets.get(SECRET).await.unwrap();
    spoiled.data.as_mut().unwrap().insert("tls.crt".into(), k8s_openapi::ByteString(b"garbage".to_vec()));
    let spoiled = secrets.replace(SECRET, &PostParams::default(), &spoiled).await.unwrap();
    wait_until(Duration::from_secs(60), "the spoiled Secret replaced", || async {
        let secret = secrets.get(SECRET).await.unwrap();
        secret.metadata.resource_version != spoiled.metadata.resource_version && serves(&secret)
    })
    .await;
    wait_until(Duration::from_secs(60), "the new certificate served", || async {
        let material = Material::from_secret(&secrets.get(SECRET).await.unwrap()).unwrap();
        current.get().is_some_and(|served| served.cert[0].to_vec() == certificates(&material.certificate)[0])
    })
    .await;
    keeping.abort();
}

/// Issue 27, finding 5: the webhook's Secret replaced by one with an attacker's CA and a certificate
/// valid for every name was adopted, and within 5 s the CRD's `caBundle` held the attacker's CA: write
/// access to one namespaced Secret became trust in a cluster-scoped object. Now the CRD is the anchor:
/// the foreign Secret is replaced, the CRD never carries the attacker's CA (every version of it is
/// watched), and conversion goes on through the operator's certificate. Likewise an attacker's CA
/// slipped into `ca.crt` beside the operator's own certificate and key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_ca_in_the_secret_is_replaced_and_never_trusted_by_the_crd() {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};

    let plane = control_plane::shared();
    let namespace = plane.namespace("webhook-foreign");
    // A group of its own: two CRDs of one group may not both name the kind Blueprint.
    let group = "foreign.test.cloudogu.com";
    let name = format!("foreignblueprints.{group}");
    let token = webhook_rights_on(&namespace, &[KEEPER], &name).remove(0);
    let admin = plane.client(&namespace).await;
    let crds: Api<CustomResourceDefinition> = Api::all(admin.clone());
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), &namespace);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let mut definition = serde_json::to_value(crd(&format!("https://{address}/convert"))).unwrap();
    definition["metadata"]["name"] = json!(name);
    definition["spec"]["group"] = json!(group);
    definition["spec"]["names"] = json!({"kind": "Blueprint", "listKind": "BlueprintList",
                                         "plural": "foreignblueprints", "singular": "foreignblueprint"});
    crds.create(&PostParams::default(), &serde_json::from_value(definition).unwrap()).await.unwrap();
    // Every caBundle the CRD ever holds, from a watch of it (no version is missed).
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let watching = tokio::spawn({
        let (seen, crds) = (seen.clone(), crds.clone());
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        async move {
            let mut changes = watcher(crds, config).applied_objects().boxed();
            while let Some(Ok(crd)) = changes.next().await {
                let bundle = crd.spec.conversion.and_then(|c| c.webhook?.client_config?.ca_bundle);
                seen.lock().unwrap().push(bundle.map(|b| String::from_utf8(b.0).unwrap()).unwrap_or_default());
            }
        }
    });
    let current = tls::CurrentCertificate::empty();
    let server = tokio::spawn(tls::serve(listener, router(), current.clone()));
    let names = loopback(&namespace);
    let target = CaBundleTarget::conversion_of(&name);
    let operator = Client::try_from(plane.config_for(KEEPER, &token, &namespace).await).unwrap();
    let keeping =
        tokio::spawn(SelfManaged::new(operator, &namespace, SECRET, names.clone(), target).run(current.clone()));
    wait_until(Duration::from_secs(60), "a certificate served", || async { current.is_set() }).await;
    let ours = Material::from_secret(&secrets.get(SECRET).await.unwrap()).unwrap();

    let attackers = issue(&names, Timestamp::now(), None).unwrap();
    let attacker_ca = certificates(&attackers.ca)[0].clone();
    let mut slipped = ours.clone();
    slipped.ca.push_str(&attackers.ca);
    for forged in [attackers.clone(), slipped] {
        let mut secret = secrets.get(SECRET).await.unwrap();
        secret.data = Some(forged.data());
        let forged_version =
            secrets.replace(SECRET, &PostParams::default(), &secret).await.unwrap().metadata.resource_version;
        wait_until(Duration::from_secs(60), "the foreign Secret replaced", || async {
            let secret = secrets.get(SECRET).await.unwrap();
            let material = Material::from_secret(&secret).unwrap();
            secret.metadata.resource_version != forged_version && !certificates(&material.ca).contains(&attacker_ca)
        })
        .await;
        // What the keeper serves now is signed by a CA the CRD holds.
        wait_until(Duration::from_secs(60), "the replaced certificate served", || async {
            let bundle = ca_bundle_of(&crds, &name).await.unwrap_or_default();
            let material = Material::from_secret(&secrets.get(SECRET).await.unwrap()).unwrap();
            let served = https(&address, &bundle, "127.0.0.1", "GET", "/", "").await;
            served.is_ok_and(|s| s.certificate == certificates(&material.certificate)[0])
        })
        .await;
    }
    // A moment for anything late, then every version of the CRD checked.
    tokio::time::sleep(Duration::from_secs(2)).await;
    keeping.abort();
    server.abort();
    watching.abort();
    let seen = seen.lock().unwrap().clone();
    assert!(seen.iter().any(|bundle| !bundle.is_empty()), "the watch saw the operator's CA written");
    for bundle in &seen {
        assert!(!certificates(bundle).contains(&attacker_ca), "the CRD carried the attacker's CA: {seen:?}");
    }
    crds.delete(&name, &DeleteParams::default()).await.unwrap();
    plane.kubectl(&["delete", "clusterrole", &format!("webhook-test-{namespace}")]).unwrap();
    plane.kubectl(&["delete", "clusterrolebinding", &format!("webhook-test-{namespace}-{KEEPER}")]).unwrap();
}

async fn ca_bundle_of(crds: &Api<CustomResourceDefinition>, name: &str) -> Option<String> {
    let crd = crds.get(name).await.unwrap();
    let bundle = crd.spec.conversion?.webhook?.client_config?.ca_bundle?;
    Some(String::from_utf8(bundle.0).unwrap())
}

/// cert-manager mode (`WEBHOOK_CERTIFICATE`): the operator, with only the webhook's rights, makes the
/// shipped CRD name the Certificate for cert-manager's CA injector and its own Service, in one patch,
/// and at a second start writes nothing. (No cert-manager here: what the injector then does is its own.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_cert_manager_the_crd_names_the_certificate_and_the_service_once() {
    use blueprint_operator::webhook::certificates::ca_bundle::{INJECT_CA_FROM, Injected, name_injector};

    let plane = control_plane::shared();
    let namespace = plane.namespace("webhook-cm");
    let name = format!("injectedblueprints.{GROUP}");
    let token = webhook_rights_on(&namespace, &[KEEPER], &name).remove(0);
    let admin = plane.client(&namespace).await;
    let mut definition = serde_json::to_value(crd("https://127.0.0.1:1/convert")).unwrap();
    definition["metadata"]["name"] = json!(name);
    definition["spec"]["names"] = json!({"kind": "InjectedBlueprint", "listKind": "InjectedBlueprintList",
                                         "plural": "injectedblueprints", "singular": "injectedblueprint"});
    // As shipped: the Service in `ecosystem`, no caBundle.
    definition["spec"]["conversion"]["webhook"]["clientConfig"] =
        json!({"service": {"namespace": "ecosystem", "name": SERVICE, "path": "/convert", "port": 443}});
    let definition: CustomResourceDefinition = serde_json::from_value(definition).unwrap();
    let admin_crds: Api<CustomResourceDefinition> = Api::all(admin);
    admin_crds.create(&PostParams::default(), &definition).await.unwrap();

    let operator = Client::try_from(plane.config_for(KEEPER, &token, &namespace).await).unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(operator);
    let target = CaBundleTarget::conversion_of(&name).with_service(&namespace, SERVICE);
    let inject_from = format!("{namespace}/blueprint-operator-webhook");
    assert_eq!(name_injector(&crds, &target, &inject_from).await.unwrap(), Injected::Patched);
    let crd = admin_crds.get(&name).await.unwrap();
    assert_eq!(crd.metadata.annotations.unwrap()[INJECT_CA_FROM], inject_from);
    let client_config = crd.spec.conversion.unwrap().webhook.unwrap().client_config.unwrap();
    let service = client_config.service.unwrap();
    assert_eq!((service.namespace.as_str(), service.name.as_str()), (namespace.as_str(), SERVICE));
    assert_eq!((service.path.as_deref(), service.port), (Some("/convert"), Some(443)), "kept by the merge");
    assert_eq!(client_config.ca_bundle, None, "the caBundle is the CA injector's");

    // A second start: read, nothing written.
    assert_eq!(name_injector(&crds, &target, &inject_from).await.unwrap(), Injected::Current);
    assert_eq!(writes(&namespace, KEEPER), ["patch customresourcedefinitions"]);
    admin_crds.delete(&name, &DeleteParams::default()).await.unwrap();
}
