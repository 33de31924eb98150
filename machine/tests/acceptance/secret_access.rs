//! D53: a blueprint reads only Secrets it may read. Issue 27, finding 3: a user who may write
//! Blueprints but not read Secrets put the webhook's private key and an admin password into a
//! ConfigMap they could read, by `secretRef`s to those Secrets.

use std::collections::BTreeSet;

use blueprint_machine::secret_access::{OPT_IN_LABEL, SecretAccess, SecretReferences, SecretTraits};
use blueprint_machine::{Requeue, State};

use blueprint_machine::fixtures::*;

/// The finding's blueprint: postfix config from the webhook's certificate Secret and from an admin's
/// password, without `sensitive` (a ConfigMap every config reader can read).
const EXFILTRATING: &str = "displayName: x
blueprint:
  dogus:
    - {name: official/postfix, version: 3.2.1-1}
  config:
    dogus:
      postfix:
        - {key: relay/key, secretRef: {name: blueprint-operator-webhook-cert, key: tls.key}}
        - {key: relay/password, secretRef: {name: admin-db-password, key: password}}
";

const KEY: &str = "-----BEGIN PRIVATE KEY-----";
const PASSWORD: &str = "adm1n-passw0rd";

fn of_type(secret_type: &str) -> SecretTraits {
    SecretTraits { secret_type: Some(secret_type.into()), ..SecretTraits::default() }
}

fn operators_own(mode: SecretReferences) -> SecretAccess {
    SecretAccess { own: BTreeSet::from(["blueprint-operator-webhook-cert".to_owned()]), mode }
}

fn scenario(webhook_cert: SecretTraits, admin: SecretTraits, mode: SecretReferences) -> Scenario {
    Scenario::v3(EXFILTRATING)
        .with_dogu("official/postfix", "3.2.1-1")
        .with_secret_of("blueprint-operator-webhook-cert", &[("tls.key", KEY)], webhook_cert)
        .with_secret_of("admin-db-password", &[("password", PASSWORD)], admin)
        .with_secret_access(operators_own(mode))
}

/// `Valid=False` naming each refused Secret with why; nothing written, nothing of the Secrets shown.
fn refused(decision: &blueprint_machine::Decision) -> &str {
    assert_eq!(cond(decision, "Valid"), pair("False", "ForbiddenSecretReferences"));
    assert!(decision.actions.is_empty(), "{:?}", decision.actions);
    assert_eq!((decision.state, &decision.requeue), (State::Invalid, &Requeue::AwaitChange));
    let text = serde_json::to_string(decision).unwrap();
    assert!(!text.contains(KEY) && !text.contains(PASSWORD), "{text}");
    message(decision, "Valid")
}

#[test]
fn d53_the_operators_own_secret_is_never_read_whatever_its_labels() {
    let labelled = SecretTraits { opted_in: true, ..of_type("kubernetes.io/tls") };
    let decision = scenario(labelled, SecretTraits::default(), SecretReferences::AllButProtected).decide();
    let m = refused(&decision);
    assert!(m.contains("the blueprint references Secrets it may not read"), "{m}");
    assert!(
        m.contains(
            "secret \"blueprint-operator-webhook-cert\" cannot be referenced: it is one of the operator's own Secrets"
        ),
        "{m}"
    );
    assert!(!m.contains("admin-db-password"), "an Opaque Secret is upstream's to read: {m}");
}

#[test]
fn d53_tokens_helm_releases_and_sensitive_config_are_never_read() {
    for traits in [
        of_type("kubernetes.io/service-account-token"),
        of_type("helm.sh/release.v1"),
        of_type("bootstrap.kubernetes.io/token"),
        SecretTraits { sensitive_config: true, ..SecretTraits::default() },
    ] {
        let opted_in = SecretTraits { opted_in: true, ..traits.clone() };
        let decision = scenario(SecretTraits::default(), opted_in, SecretReferences::AllButProtected)
            .with_secret_access(SecretAccess::default())
            .decide();
        let m = refused(&decision);
        assert!(m.contains("secret \"admin-db-password\" cannot be referenced"), "{traits:?}: {m}");
    }
}

#[test]
fn d53_credentials_of_other_workloads_need_the_opt_in_label() {
    for credentials in ["kubernetes.io/tls", "kubernetes.io/dockerconfigjson", "kubernetes.io/basic-auth"] {
        let decision = scenario(SecretTraits::default(), of_type(credentials), SecretReferences::AllButProtected)
            .with_secret_access(SecretAccess::default())
            .decide();
        let m = refused(&decision);
        assert!(m.contains(&format!("it holds credentials (type {credentials}); label it {OPT_IN_LABEL}=true")), "{m}");
        let opted_in = SecretTraits { opted_in: true, ..of_type(credentials) };
        let decision = scenario(SecretTraits::default(), opted_in, SecretReferences::AllButProtected)
            .with_secret_access(SecretAccess::default())
            .decide();
        assert_eq!(cond(&decision, "Valid"), pair("True", "Valid"), "{credentials} opted in");
    }
}

#[test]
fn d53_labelled_only_reads_nothing_but_opted_in_secrets() {
    let decision = scenario(SecretTraits::default(), SecretTraits::default(), SecretReferences::LabelledOnly)
        .with_secret_access(SecretAccess { mode: SecretReferences::LabelledOnly, ..SecretAccess::default() })
        .decide();
    let m = refused(&decision);
    for name in ["blueprint-operator-webhook-cert", "admin-db-password"] {
        assert!(
            m.contains(&format!("secret \"{name}\" cannot be referenced: only Secrets labelled {OPT_IN_LABEL}=true")),
            "{m}"
        );
    }
    let opted_in = SecretTraits { opted_in: true, ..SecretTraits::default() };
    let decision = scenario(opted_in.clone(), opted_in, SecretReferences::LabelledOnly)
        .with_secret_access(SecretAccess { mode: SecretReferences::LabelledOnly, ..SecretAccess::default() })
        .decide();
    assert_eq!(cond(&decision, "Valid"), pair("True", "Valid"));
    assert!(!decision.actions.is_empty(), "the opted-in Secrets are applied");
}

/// Upstream's blueprints keep working: an `Opaque` Secret (what `kubectl create secret generic`
/// makes) is read as before in the default mode.
#[test]
fn d53_opaque_secrets_are_read_by_default() {
    let spec = EXFILTRATING.replace("blueprint-operator-webhook-cert", "relay-key");
    let decision = Scenario::v3(&spec)
        .with_dogu("official/postfix", "3.2.1-1")
        .with_secret_of("relay-key", &[("tls.key", KEY)], of_type("Opaque"))
        .with_secret("admin-db-password", &[("password", PASSWORD)])
        .with_secret_access(operators_own(SecretReferences::AllButProtected))
        .decide();
    assert_eq!(cond(&decision, "Valid"), pair("True", "Valid"));
    assert!(!decision.actions.is_empty());
}
