//! The self-managed certificate's trust anchor (issue 27, finding 5): the CRD's `caBundle`.
//!
//! The Secret is writable by whoever may write Secrets in the operator's namespace; the CRD is not
//! (cluster-scoped: the operator's ClusterRole and cluster admins). Before, a Secret replaced by one
//! with an attacker's CA and a certificate valid for the Service's names was adopted, and the
//! operator wrote the attacker's CA into the CRD within seconds: write access to one namespaced
//! Secret became trust in a cluster-scoped object. Now the operator takes a Secret's material as its
//! own only when every CA of its `ca.crt` is in the CRD's `caBundle` already, which only the operator
//! writes, and only with CAs it has just made (written into the CRD *before* the Secret that holds
//! them) or that the CRD trusted before. Anything else is foreign: replaced, none of its CAs carried
//! over. (A CRD re-applied without its `caBundle` therefore makes the operator issue a new CA: it
//! cannot tell its own Secret from a forged one without the CRD.)

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use rustls_pki_types::CertificateDer;
use serde_json::Value;

use super::ca_bundle::CaBundleTarget;
use super::{Assessment, Decision, Material, ServingNames, adoptable, certificates, decide, pem, validity};

/// Why a Secret's material is not taken.
const FOREIGN: &str = "its CA is not one the CRD trusts (not issued by this operator)";

/// The CAs the API server trusts for the webhook, as the CRD's `caBundle` holds them.
#[derive(Clone, Debug, PartialEq)]
pub enum Trusted {
    /// The `caBundle`'s CAs (none: it is empty or missing).
    Bundle(Vec<CertificateDer<'static>>),
    /// The CRD does not exist or has no webhook conversion: nothing is trusted through it, so any
    /// certificate that serves will do (as before; the CRD is read again at the next change).
    Unanchored,
}

impl Trusted {
    /// The `caBundle` (PEM) as read; `None`: the CRD has none to keep.
    pub fn of(bundle: Option<&str>) -> Trusted {
        match bundle {
            None => Trusted::Unanchored,
            Some(pem) => Trusted::Bundle(certificates(pem).unwrap_or_default()),
        }
    }

    /// Whether every CA of `ca_pem` (a Secret's `ca.crt`) is trusted already.
    pub fn covers(&self, ca_pem: &str) -> bool {
        match self {
            Trusted::Unanchored => true,
            Trusted::Bundle(trusted) => {
                certificates(ca_pem).is_some_and(|cas| cas.iter().all(|ca| trusted.contains(ca)))
            }
        }
    }

    /// The first trusted CA that is valid at `now`, as PEM: trusted on beside a new one, so that
    /// replicas still serving a certificate it signed stay trusted while they switch.
    pub fn current(&self, now: Timestamp) -> Option<String> {
        let Trusted::Bundle(trusted) = self else { return None };
        let valid = |ca: &&CertificateDer<'static>| validity(ca).is_some_and(|(from, to)| from <= now && now < to);
        trusted.iter().find(valid).map(|ca| pem(ca))
    }
}

/// [`decide`] for material the CRD trusts: a Secret whose CAs are not all trusted is replaced, and
/// none of them is carried over.
pub fn decide_trusted(read: Option<&Secret>, names: &ServingNames, now: Timestamp, trusted: &Trusted) -> Decision {
    if let Some(secret) = read
        && let Ok(material) = Material::from_secret(secret)
        && !trusted.covers(&material.ca)
    {
        let resource_version = secret.metadata.resource_version.clone().unwrap_or_default();
        return Decision::Replace { resource_version, reason: FOREIGN.into(), previous_ca: None };
    }
    decide(read, names, now)
}

/// [`adoptable`] for material the CRD trusts only.
pub fn adoptable_trusted(
    secret: &Secret,
    names: &ServingNames,
    now: Timestamp,
    trusted: &Trusted,
) -> Result<Assessment, String> {
    let material = Material::from_secret(secret)?;
    if !trusted.covers(&material.ca) {
        return Err(FOREIGN.into());
    }
    adoptable(secret, names, now)
}

/// What `target`'s CRD trusts now (one read).
pub async fn read(crds: &Api<CustomResourceDefinition>, target: &CaBundleTarget) -> Result<Trusted, kube::Error> {
    let Some(crd) = crds.get_opt(&target.crd).await? else { return Ok(Trusted::Unanchored) };
    let crd = serde_json::to_value(crd).map_err(kube::Error::SerdeError)?;
    Ok(Trusted::of(bundle_at(&crd, &target.pointer).as_deref()))
}

/// The PEM text of the `caBundle` at `pointer` of `crd` (empty when it has none); `None` where the
/// CRD has no object to hold one (no webhook conversion).
fn bundle_at(crd: &Value, pointer: &str) -> Option<String> {
    use base64::Engine;
    let (parent, field) = pointer.rsplit_once('/')?;
    let parent = crd.pointer(parent).filter(|p| p.is_object())?;
    let encoded = parent.get(field.replace("~1", "/").replace("~0", "~")).and_then(Value::as_str).unwrap_or_default();
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded).unwrap_or_default();
    Some(String::from_utf8(decoded).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::super::{SubjectName, issue};
    use super::*;

    fn names() -> ServingNames {
        ServingNames::new("blueprint-operator-webhook", "ecosystem", &[SubjectName::parse("127.0.0.1").unwrap()])
    }

    fn now() -> Timestamp {
        "2026-03-01T12:00:00Z".parse().unwrap()
    }

    fn secret(material: &Material) -> Secret {
        let mut secret = Secret { data: Some(material.data()), ..Secret::default() };
        secret.metadata.resource_version = Some("7".into());
        secret
    }

    /// The finding: a Secret with an attacker's CA and a certificate valid for every name was taken as
    /// the operator's. It is replaced, and its CA is not carried into the new `ca.crt`.
    #[test]
    fn material_of_a_ca_the_crd_does_not_trust_is_foreign_and_replaced() {
        let ours = issue(&names(), now(), None).unwrap();
        let attackers = issue(&names(), now(), None).unwrap();
        let trusted = Trusted::of(Some(&ours.ca));
        assert!(matches!(decide_trusted(Some(&secret(&ours)), &names(), now(), &trusted), Decision::Keep(_)));
        let Decision::Replace { reason, previous_ca, .. } =
            decide_trusted(Some(&secret(&attackers)), &names(), now(), &trusted)
        else {
            panic!("foreign: replaced")
        };
        assert_eq!((reason.as_str(), previous_ca), (FOREIGN, None));
        assert_eq!(adoptable_trusted(&secret(&attackers), &names(), now(), &trusted).unwrap_err(), FOREIGN);
        assert!(adoptable_trusted(&secret(&ours), &names(), now(), &trusted).is_ok());
        // Our certificate and key, with the attacker's CA slipped into ca.crt beside ours: foreign too
        // (keeping it would write that CA into the CRD).
        let mut slipped = ours.clone();
        slipped.ca.push_str(&attackers.ca);
        assert!(matches!(
            decide_trusted(Some(&secret(&slipped)), &names(), now(), &trusted),
            Decision::Replace { previous_ca: None, .. }
        ));
        // An empty caBundle trusts nothing; a CRD without webhook conversion anchors nothing.
        assert!(!Trusted::of(Some("")).covers(&ours.ca));
        assert!(Trusted::of(None).covers(&attackers.ca));
    }

    #[test]
    fn the_current_ca_is_the_first_of_the_bundle_still_valid() {
        let old = issue(&names(), now() - super::super::LIFETIME - super::super::LIFETIME, None).unwrap();
        let ours = issue(&names(), now(), None).unwrap();
        let trusted = Trusted::of(Some(&format!("{}{}", old.ca, ours.ca)));
        assert_eq!(trusted.current(now()), Some(ours.ca.clone()), "the expired one is not carried");
        assert_eq!(Trusted::Unanchored.current(now()), None);
    }

    #[test]
    fn the_bundle_is_read_at_the_pointer() {
        use base64::Engine;
        let encoded = base64::engine::general_purpose::STANDARD.encode("PEM");
        let crd = serde_json::json!({"spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": encoded}}}}});
        let pointer = super::super::ca_bundle::CONVERSION_CA_BUNDLE;
        assert_eq!(bundle_at(&crd, pointer).as_deref(), Some("PEM"));
        let empty = serde_json::json!({"spec": {"conversion": {"webhook": {"clientConfig": {}}}}});
        assert_eq!(bundle_at(&empty, pointer).as_deref(), Some(""));
        assert_eq!(bundle_at(&serde_json::json!({"spec": {"conversion": {"strategy": "None"}}}), pointer), None);
    }
}
