//! Which Secrets a blueprint may read (docs/differences.md D53).
//!
//! A `secretRef` makes the operator copy a Secret's value into config: sensitive config, or (D52) a
//! ConfigMap every reader of config can read. Whoever may write a Blueprint must not be able to read
//! through it what they may not read themselves: the operator's own Secrets (its webhook key),
//! ServiceAccount tokens, Helm releases (every value of a release, its credentials included) and the
//! credentials of other workloads. So a reference is checked before anything is read from it:
//!
//! - **never**, whatever the Secret is labelled: the operator's own Secrets (by name), a dogu's
//!   sensitive config (the operator writes those: a reference would copy one dogu's secrets into
//!   another's, or into plain config), ServiceAccount tokens, bootstrap tokens and Helm releases;
//! - **only when opted in** (labelled [`OPT_IN_LABEL`]`=true`): credentials of the other built-in
//!   types (`kubernetes.io/tls`, `kubernetes.io/dockerconfigjson`, `kubernetes.io/dockercfg`,
//!   `kubernetes.io/basic-auth`, `kubernetes.io/ssh-auth`);
//! - anything else (`Opaque`, a type of another tool): allowed, as upstream allows it, unless the
//!   operator runs with [`SecretReferences::LabelledOnly`], where only opted-in Secrets are.
//!
//! Labelling a Secret takes `patch` on it, and a patch's answer is the whole Secret: whoever can opt a
//! Secret in can read it already. The observer reports only what this needs ([`SecretTraits`]: the
//! type and two labels); the decision is here.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The label by which a Secret is opted in to being read by blueprints (value `true`).
pub const OPT_IN_LABEL: &str = "blueprint-operator.k8s.cloudogu.com/referenceable";

/// Which Secrets a blueprint may reference besides the protected ones (`SECRET_REFERENCES`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SecretReferences {
    /// Every Secret but the protected ones (upstream's blueprints work unchanged).
    #[default]
    AllButProtected,
    /// Only Secrets labelled [`OPT_IN_LABEL`]`=true` (and never the protected ones).
    LabelledOnly,
}

impl SecretReferences {
    /// The setting's value, as `SECRET_REFERENCES` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            SecretReferences::AllButProtected => "all-but-protected",
            SecretReferences::LabelledOnly => "labelled-only",
        }
    }

    /// The mode `text` names (`all-but-protected` or `labelled-only`).
    pub fn parse(text: &str) -> Option<Self> {
        [SecretReferences::AllButProtected, SecretReferences::LabelledOnly].into_iter().find(|m| m.as_str() == text)
    }
}

/// What the operator knows about the Secrets it guards: its own (by name) and the mode.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SecretAccess {
    /// The operator's own Secrets in its namespace (the webhook's certificate, `WEBHOOK_SECRET`).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub own: BTreeSet<String>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub mode: SecretReferences,
}

impl SecretAccess {
    pub fn is_default(&self) -> bool {
        self == &SecretAccess::default()
    }
}

fn is_default(mode: &SecretReferences) -> bool {
    *mode == SecretReferences::default()
}

/// What decides whether a referenced Secret may be read, as observed: its `type` and two labels.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SecretTraits {
    /// `type` as stored (none: `Opaque`).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub secret_type: Option<String>,
    /// Labelled [`OPT_IN_LABEL`]`=true`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub opted_in: bool,
    /// Labelled as a dogu's sensitive config (`k8s.cloudogu.com/type=sensitive-config`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sensitive_config: bool,
}

impl SecretTraits {
    pub fn is_default(&self) -> bool {
        self == &SecretTraits::default()
    }
}

/// Why a blueprint may not read a Secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// One of the operator's own Secrets.
    OperatorsOwn,
    /// A dogu's sensitive config.
    SensitiveConfig,
    /// A type that is never read: ServiceAccount and bootstrap tokens, Helm releases.
    NeverReadType(&'static str),
    /// Credentials of a built-in type, not opted in.
    CredentialsNotOptedIn(&'static str),
    /// Not opted in, and only opted-in Secrets may be read ([`SecretReferences::LabelledOnly`]).
    NotOptedIn,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::OperatorsOwn => f.write_str("it is one of the operator's own Secrets"),
            Refusal::SensitiveConfig => {
                f.write_str("it is a dogu's sensitive config (reference the Secret its values came from)")
            }
            Refusal::NeverReadType(type_) => write!(f, "Secrets of type {type_} are never read"),
            Refusal::CredentialsNotOptedIn(type_) => {
                write!(f, "it holds credentials (type {type_}); label it {OPT_IN_LABEL}=true to allow it")
            }
            Refusal::NotOptedIn => write!(
                f,
                "only Secrets labelled {OPT_IN_LABEL}=true may be referenced (SECRET_REFERENCES=labelled-only)"
            ),
        }
    }
}

/// Types whose Secrets a blueprint never reads.
const NEVER_READ: [&str; 3] =
    ["kubernetes.io/service-account-token", "bootstrap.kubernetes.io/token", "helm.sh/release.v1"];

/// Types of credentials, read only when opted in.
const CREDENTIALS: [&str; 5] = [
    "kubernetes.io/tls",
    "kubernetes.io/dockerconfigjson",
    "kubernetes.io/dockercfg",
    "kubernetes.io/basic-auth",
    "kubernetes.io/ssh-auth",
];

/// Why the Secret `name` with `traits` may not be read by a blueprint; `None`: it may.
pub fn refusal(name: &str, traits: &SecretTraits, access: &SecretAccess) -> Option<Refusal> {
    if access.own.contains(name) {
        return Some(Refusal::OperatorsOwn);
    }
    if traits.sensitive_config {
        return Some(Refusal::SensitiveConfig);
    }
    let secret_type = traits.secret_type.as_deref().unwrap_or_default();
    if let Some(type_) = NEVER_READ.iter().find(|t| **t == secret_type) {
        return Some(Refusal::NeverReadType(type_));
    }
    if traits.opted_in {
        return None;
    }
    if let Some(type_) = CREDENTIALS.iter().find(|t| **t == secret_type) {
        return Some(Refusal::CredentialsNotOptedIn(type_));
    }
    match access.mode {
        SecretReferences::AllButProtected => None,
        SecretReferences::LabelledOnly => Some(Refusal::NotOptedIn),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of_type(secret_type: &str) -> SecretTraits {
        SecretTraits { secret_type: Some(secret_type.into()), ..SecretTraits::default() }
    }

    fn access(mode: SecretReferences) -> SecretAccess {
        SecretAccess { own: BTreeSet::from(["blueprint-operator-webhook-cert".to_owned()]), mode }
    }

    #[test]
    fn protected_secrets_are_refused_whatever_their_labels() {
        let default = access(SecretReferences::AllButProtected);
        let labelled = |traits: SecretTraits| SecretTraits { opted_in: true, ..traits };
        let own = labelled(of_type("kubernetes.io/tls"));
        assert_eq!(refusal("blueprint-operator-webhook-cert", &own, &default), Some(Refusal::OperatorsOwn));
        for never in NEVER_READ {
            assert!(
                matches!(refusal("s", &labelled(of_type(never)), &default), Some(Refusal::NeverReadType(_))),
                "{never}"
            );
        }
        let sensitive = labelled(SecretTraits { sensitive_config: true, ..SecretTraits::default() });
        assert_eq!(refusal("ldap-config", &sensitive, &default), Some(Refusal::SensitiveConfig));
    }

    #[test]
    fn credentials_need_the_label_and_opaque_secrets_need_it_only_in_labelled_only_mode() {
        let default = access(SecretReferences::AllButProtected);
        let strict = access(SecretReferences::LabelledOnly);
        for credentials in CREDENTIALS {
            assert!(matches!(refusal("s", &of_type(credentials), &default), Some(Refusal::CredentialsNotOptedIn(_))));
            let opted_in = SecretTraits { opted_in: true, ..of_type(credentials) };
            assert_eq!(refusal("s", &opted_in, &default), None, "{credentials}");
        }
        for plain in [SecretTraits::default(), of_type("Opaque"), of_type("example.com/custom")] {
            assert_eq!(refusal("s", &plain, &default), None);
            assert_eq!(refusal("s", &plain, &strict), Some(Refusal::NotOptedIn));
            assert_eq!(refusal("s", &SecretTraits { opted_in: true, ..plain }, &strict), None);
        }
    }

    #[test]
    fn the_modes_read_as_the_setting_writes_them() {
        for mode in [SecretReferences::AllButProtected, SecretReferences::LabelledOnly] {
            assert_eq!(SecretReferences::parse(mode.as_str()), Some(mode));
            assert_eq!(serde_json::to_value(mode).unwrap(), mode.as_str());
        }
        assert_eq!(SecretReferences::parse("all"), None);
    }
}
