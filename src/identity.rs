//! Who this operator is when a blueprint names its component: its version, which versions of the
//! component are releases of this implementation, and whether a hand-over to another implementation
//! was allowed (docs/migration.md, "The operator's own component"); and which Secrets are its own,
//! which a blueprint never reads (D53).

use std::collections::BTreeSet;

use blueprint_machine::observation::{OperatorFacts, ProvidedDependency};
use blueprint_machine::secret_access::SecretAccess;
use semver::VersionReq;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorIdentity {
    /// The running version (`OPERATOR_VERSION`).
    pub version: String,
    /// The qualified name of the component it is installed as (`OPERATOR_COMPONENT`).
    pub component: String,
    /// `OPERATOR_COMPONENT_VERSIONS`; default: the build's major line ([`default_own_versions`]).
    pub own_versions: VersionReq,
    /// `ALLOW_OPERATOR_REPLACEMENT`.
    pub allow_replacement: bool,
    /// Feature flags: `AUTH_REGISTRATION_ENABLED` (cas), `DISABLE_POSTFIX_DEPENDENCY_CHECK` (postfix).
    pub provided_dependencies: BTreeSet<ProvidedDependency>,
    /// Its own Secrets (`WEBHOOK_SECRET`) and which others a blueprint may read (`SECRET_REFERENCES`).
    pub secret_access: SecretAccess,
}

impl OperatorIdentity {
    /// This build, its releases the build's major line, no replacement allowed.
    pub fn of_build(version: impl Into<String>) -> Self {
        OperatorIdentity {
            version: version.into(),
            component: blueprint_machine::naming::OWN_COMPONENT.to_owned(),
            own_versions: default_own_versions(),
            allow_replacement: false,
            provided_dependencies: BTreeSet::new(),
            secret_access: SecretAccess {
                own: BTreeSet::from([crate::config::DEFAULT_WEBHOOK_SECRET.to_owned()]),
                ..SecretAccess::default()
            },
        }
    }

    /// What a reconcile knows about the operator, in `namespace`.
    pub fn facts(&self, namespace: &str) -> OperatorFacts {
        OperatorFacts {
            own_versions: Some(self.own_versions.clone()),
            allow_replacement: self.allow_replacement,
            provided_dependencies: self.provided_dependencies.clone(),
            component: self.component.clone(),
            secret_access: self.secret_access.clone(),
            ..OperatorFacts::new(namespace, Some(self.version.clone()))
        }
    }
}

/// The major line of this build (`>=0.0.0, <1.0.0` for 0.x): this project's releases, told apart from
/// Cloudogu's Go operator (1.x and later) that is installed under the same component name.
pub fn default_own_versions() -> VersionReq {
    let major: u64 = env!("CARGO_PKG_VERSION_MAJOR").parse().unwrap_or_default();
    VersionReq::parse(&format!(">={major}.0.0, <{}.0.0", major + 1)).unwrap_or(VersionReq::STAR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_admits_this_build_and_refuses_the_go_operators_versions() {
        let own = default_own_versions();
        let this = semver::Version::parse(env!("CARGO_PKG_VERSION")).unwrap();
        assert!(own.matches(&this), "{own} must admit {this}");
        assert!(!own.matches(&semver::Version::new(2, 7, 0)), "{own} must refuse Cloudogu's 2.7.0");
    }

    #[test]
    fn facts_carry_the_identity() {
        let identity = OperatorIdentity { allow_replacement: true, ..OperatorIdentity::of_build("0.3.0") };
        let facts = identity.facts("ecosystem");
        assert_eq!(facts.version.as_deref(), Some("0.3.0"));
        assert_eq!(facts.own_versions, Some(default_own_versions()));
        assert!(facts.allow_replacement);
        assert_eq!(facts.namespace, "ecosystem");
    }
}
