//! The conversion webhook's settings (`WEBHOOK_*`, docs/webhook.md).

use std::net::SocketAddr;
use std::path::PathBuf;

use super::{SettingsError, boolean};
use crate::webhook::certificates::SubjectName;
use crate::webhook::{CertificateSource, WebhookSettings};

/// The self-managed certificate's Secret unless `WEBHOOK_SECRET` names another.
pub const DEFAULT_SECRET: &str = "blueprint-operator-webhook-cert";

/// The webhook's settings: every `WEBHOOK_*` variable is read and checked, also when it is disabled.
/// With `WEBHOOK_CERT_DIR`, the variables of the self-managed certificate are refused (they would
/// silently not apply).
pub(super) fn webhook(
    lookup: &impl Fn(&str) -> Option<String>,
    address: SocketAddr,
) -> Result<Option<WebhookSettings>, SettingsError> {
    let enabled = boolean(lookup, "WEBHOOK_ENABLED", true)?;
    let directory = lookup("WEBHOOK_CERT_DIR").map(PathBuf::from);
    let name = |variable: &'static str, default: &str, kind: &str, valid: fn(&str) -> bool| {
        let given = lookup(variable);
        match &given {
            Some(text) if !valid(text) => {
                Err(SettingsError::Invalid { name: variable, problem: format!("{text:?} is not {kind}") })
            }
            _ => Ok((given.is_some(), given.unwrap_or_else(|| default.to_owned()))),
        }
    };
    let (secret_given, secret) = name("WEBHOOK_SECRET", DEFAULT_SECRET, "a Secret's name", is_dns_subdomain)?;
    let (_, service) = name("WEBHOOK_SERVICE", "blueprint-operator-webhook", "a Service's name", is_dns_label)?;
    let (_, certificate) = name("WEBHOOK_CERTIFICATE", "", "a Certificate's name", is_dns_subdomain)?;
    let certificate = (!certificate.is_empty()).then_some(certificate);
    let extra_names = match lookup("WEBHOOK_EXTRA_NAMES") {
        None => Vec::new(),
        Some(list) => list
            .split(',')
            .filter(|part| !part.trim().is_empty())
            .map(SubjectName::parse)
            .collect::<Result<_, _>>()
            .map_err(|problem| SettingsError::Invalid { name: "WEBHOOK_EXTRA_NAMES", problem })?,
    };
    let certificate = match directory {
        Some(directory) => {
            let self_managed = [("WEBHOOK_SECRET", secret_given), ("WEBHOOK_EXTRA_NAMES", !extra_names.is_empty())];
            if let Some((name, _)) = self_managed.iter().find(|(_, given)| *given) {
                return Err(SettingsError::Invalid {
                    name,
                    problem: "set for the self-managed certificate, but WEBHOOK_CERT_DIR names certificate files (cert-manager's): set one of them".into(),
                });
            }
            CertificateSource::Files { directory, certificate, service }
        }
        None if certificate.is_some() => {
            return Err(SettingsError::Invalid {
                name: "WEBHOOK_CERTIFICATE",
                problem: "names cert-manager's Certificate, but WEBHOOK_CERT_DIR (its files) is not set".into(),
            });
        }
        None => CertificateSource::SelfManaged { secret, service, extra_names },
    };
    Ok(enabled.then_some(WebhookSettings { address, certificate }))
}

/// A DNS-1123 subdomain: what Kubernetes accepts as a Secret's name.
fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(is_dns_label)
}

/// A DNS-1123 label: lower-case letters, digits and `-`, at most 63, neither first nor last a `-`.
fn is_dns_label(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::super::Settings;
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Result<Settings, SettingsError> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Settings::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn the_webhook_settings() {
        let s = settings(&[("NAMESPACE", "x")]).unwrap();
        let webhook = s.webhook.unwrap();
        assert_eq!(webhook.address, "0.0.0.0:9443".parse().unwrap());
        assert_eq!(
            webhook.certificate,
            CertificateSource::SelfManaged {
                secret: "blueprint-operator-webhook-cert".into(),
                service: "blueprint-operator-webhook".into(),
                extra_names: vec![],
            }
        );
        let s = settings(&[
            ("NAMESPACE", "x"),
            ("WEBHOOK_BIND_ADDRESS", ":8443"),
            ("WEBHOOK_SECRET", "my-cert"),
            ("WEBHOOK_EXTRA_NAMES", "127.0.0.1, webhook.example.com,"),
        ])
        .unwrap();
        let webhook = s.webhook.unwrap();
        assert_eq!(webhook.address.port(), 8443);
        let CertificateSource::SelfManaged { secret, extra_names, .. } = webhook.certificate else { panic!() };
        assert_eq!(secret, "my-cert");
        assert_eq!(
            extra_names,
            [SubjectName::parse("127.0.0.1").unwrap(), SubjectName::parse("webhook.example.com").unwrap()]
        );
        let s = settings(&[("NAMESPACE", "x"), ("WEBHOOK_CERT_DIR", "/tmp/k8s-webhook-server/serving-certs")]).unwrap();
        assert_eq!(
            s.webhook.unwrap().certificate,
            CertificateSource::Files {
                directory: "/tmp/k8s-webhook-server/serving-certs".into(),
                certificate: None,
                service: "blueprint-operator-webhook".into(),
            }
        );
        let s = settings(&[
            ("NAMESPACE", "x"),
            ("WEBHOOK_CERT_DIR", "/certs"),
            ("WEBHOOK_CERTIFICATE", "blueprint-operator-webhook"),
            ("WEBHOOK_SERVICE", "bp-webhook"),
        ])
        .unwrap();
        assert_eq!(
            s.webhook.unwrap().certificate,
            CertificateSource::Files {
                directory: "/certs".into(),
                certificate: Some("blueprint-operator-webhook".into()),
                service: "bp-webhook".into(),
            }
        );
        assert_eq!(settings(&[("NAMESPACE", "x"), ("WEBHOOK_ENABLED", "false")]).unwrap().webhook, None);

        for (pairs, message) in [
            (
                vec![("WEBHOOK_ENABLED", "no")],
                "environment variable WEBHOOK_ENABLED is invalid: \"no\" is not a boolean",
            ),
            (vec![("WEBHOOK_BIND_ADDRESS", "9443")], "environment variable WEBHOOK_BIND_ADDRESS is invalid"),
            (
                vec![("WEBHOOK_SECRET", "My_Cert")],
                "environment variable WEBHOOK_SECRET is invalid: \"My_Cert\" is not a Secret's name",
            ),
            (
                vec![("WEBHOOK_SERVICE", "a.b")],
                "environment variable WEBHOOK_SERVICE is invalid: \"a.b\" is not a Service's name",
            ),
            (
                vec![("WEBHOOK_EXTRA_NAMES", "127.0.0.1,not a name")],
                "environment variable WEBHOOK_EXTRA_NAMES is invalid: \"not a name\" is neither an IP address nor a DNS name",
            ),
            (
                vec![("WEBHOOK_CERT_DIR", "/certs"), ("WEBHOOK_SECRET", "c")],
                "environment variable WEBHOOK_SECRET is invalid: set for the self-managed certificate, but WEBHOOK_CERT_DIR",
            ),
            (
                vec![("WEBHOOK_CERT_DIR", "/certs"), ("WEBHOOK_EXTRA_NAMES", "::1")],
                "environment variable WEBHOOK_EXTRA_NAMES is invalid: set for",
            ),
            (
                vec![("WEBHOOK_CERTIFICATE", "blueprint-operator-webhook")],
                "environment variable WEBHOOK_CERTIFICATE is invalid: names cert-manager's Certificate, but WEBHOOK_CERT_DIR",
            ),
            (
                vec![("WEBHOOK_CERT_DIR", "/certs"), ("WEBHOOK_CERTIFICATE", "Not_A_Name")],
                "environment variable WEBHOOK_CERTIFICATE is invalid: \"Not_A_Name\" is not a Certificate's name",
            ),
            // Checked also when the webhook is off: a bad value is never silently ignored.
            (
                vec![("WEBHOOK_ENABLED", "false"), ("WEBHOOK_SERVICE", "-x")],
                "environment variable WEBHOOK_SERVICE is invalid",
            ),
        ] {
            let mut pairs = pairs;
            pairs.push(("NAMESPACE", "x"));
            let error = settings(&pairs).unwrap_err().to_string();
            assert!(error.starts_with(message), "{error}");
        }
    }
}
