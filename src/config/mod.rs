//! The operator's settings, from the environment (as upstream's chart sets them).

pub mod webhook;

pub use webhook::DEFAULT_SECRET as DEFAULT_WEBHOOK_SECRET;

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use crate::controller::Debounce;
use crate::descriptors::{CacheSettings, RemoteSettings, UrlSchema};
use crate::identity::{OperatorIdentity, default_own_versions};
use crate::webhook::WebhookSettings;
use blueprint_machine::observation::ProvidedDependency;
use blueprint_machine::secret_access::{SecretAccess, SecretReferences};

/// A setting that is missing or does not parse; the message is one line and names the setting.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SettingsError {
    #[error("environment variable {0} must be set")]
    Missing(&'static str),
    #[error("environment variable {name} is invalid: {problem}")]
    Invalid { name: &'static str, problem: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The namespace the operator works in (`NAMESPACE`, required).
    pub namespace: String,
    /// A level (`debug`, `info`, ...) or a tracing filter directive (`LOG_LEVEL`, default `info`).
    pub log_level: String,
    pub log_format: LogFormat,
    /// Trailing-edge debounce of reconcile triggers: `DEBOUNCE_WINDOW` (default 1s, at most
    /// [`MAX_DEBOUNCE_WINDOW`]) after the last trigger, `DEBOUNCE_MAX_DELAY` (default 5s or the window,
    /// at most [`MAX_DEBOUNCE_DELAY`]) after the first at the latest.
    pub debounce: Debounce,
    /// The running operator's version (`OPERATOR_VERSION`, default: the build's version), which
    /// versions of its component are its own (`OPERATOR_COMPONENT_VERSIONS`, default: the build's major
    /// line), and whether a blueprint may replace it with another implementation
    /// (`ALLOW_OPERATOR_REPLACEMENT`, default false).
    pub operator: OperatorIdentity,
    /// The remote dogu registry (`DOGU_REGISTRY_*`, `PROXY_URL`); without an endpoint, only the local
    /// dogu registry is used.
    pub registry: Option<RemoteSettings>,
    /// `DESCRIPTOR_CACHE_SIZE` (default 512), `DESCRIPTOR_NOT_FOUND_TTL` (default 30s).
    pub descriptor_cache: CacheSettings,
    /// `/metrics` (`METRICS_BIND_ADDRESS`, default `0.0.0.0:8080`).
    pub metrics_address: SocketAddr,
    /// `/healthz`, `/readyz` (`HEALTH_PROBE_BIND_ADDRESS`, default `0.0.0.0:8081`).
    pub health_address: SocketAddr,
    /// Leader election on a Lease (`LEADER_ELECT`, default true).
    pub leader_election: bool,
    /// This replica's identity in the Lease (`POD_NAME`, default: the host name).
    pub identity: String,
    /// The conversion webhook (`WEBHOOK_*`); `None` with `WEBHOOK_ENABLED=false`.
    pub webhook: Option<WebhookSettings>,
}

/// Every environment variable `run` reads: its name, its default, what it sets. `run --help` and the
/// man page list them; a test checks that the settings read no other and this lists no unread one.
pub const ENVIRONMENT: &[(&str, &str, &str)] = &[
    ("NAMESPACE", "(required)", "the namespace the operator works in"),
    ("LOG_LEVEL", "info", "a level (error, warn, info, debug, trace) or a tracing filter directive"),
    ("LOG_FORMAT", "text", "text or json"),
    ("DEBOUNCE_WINDOW", "1s", "a reconcile waits this long after the last change (at most 1m)"),
    ("DEBOUNCE_MAX_DELAY", "5s", "and never longer than this after the first (at most 10m)"),
    ("OPERATOR_VERSION", "the build's version", "the version this operator runs as"),
    (
        "OPERATOR_COMPONENT_VERSIONS",
        "the build's major line (>=0.0.0, <1.0.0)",
        "which versions of the operator's component are releases of this operator",
    ),
    ("OPERATOR_COMPONENT", "k8s/k8s-blueprint-operator", "the component this operator is installed as"),
    ("ALLOW_OPERATOR_REPLACEMENT", "false", "let a blueprint replace this operator with another implementation"),
    ("AUTH_REGISTRATION_ENABLED", "false", "authentication by a component: a dogu's dependency on cas is not required"),
    (
        "DISABLE_POSTFIX_DEPENDENCY_CHECK",
        "false",
        "mail by a component: a dogu's dependency on postfix is not required",
    ),
    ("DOGU_REGISTRY_ENDPOINT", "(none: local registry only)", "the remote dogu registry's URL"),
    ("DOGU_REGISTRY_USERNAME", "(none)", "its basic-auth user (with DOGU_REGISTRY_PASSWORD)"),
    ("DOGU_REGISTRY_PASSWORD", "(none)", "its basic-auth password"),
    ("DOGU_REGISTRY_URLSCHEMA", "default", "default (<endpoint>/dogus/...) or index (.../index.json)"),
    ("DOGU_REGISTRY_TIMEOUT", "10s", "how long one registry request may take"),
    ("DOGU_REGISTRY_CA_FILE", "(none)", "a PEM file of CAs to trust besides the system's"),
    ("PROXY_URL", "(none)", "an HTTP proxy for the registry; user info becomes its credentials"),
    ("DESCRIPTOR_CACHE_SIZE", "512", "dogu descriptors kept in memory"),
    ("DESCRIPTOR_NOT_FOUND_TTL", "30s", "how long a registry's \"not found\" is believed"),
    ("METRICS_BIND_ADDRESS", "0.0.0.0:8080", "/metrics"),
    ("HEALTH_PROBE_BIND_ADDRESS", "0.0.0.0:8081", "/healthz and /readyz"),
    ("LEADER_ELECT", "true", "hold a Lease so that one replica reconciles"),
    ("POD_NAME", "HOSTNAME", "this replica's identity in the Lease and in events"),
    ("HOSTNAME", "(set by the container)", "the identity when POD_NAME is not set"),
    (
        "SECRET_REFERENCES",
        "all-but-protected",
        "which Secrets a blueprint may read: all-but-protected, or labelled-only (labelled blueprint-operator.k8s.cloudogu.com/referenceable=true)",
    ),
    ("WEBHOOK_ENABLED", "true", "serve the Blueprint conversion webhook (v2 clients need it)"),
    ("WEBHOOK_BIND_ADDRESS", "0.0.0.0:9443", "the conversion webhook (HTTPS)"),
    ("WEBHOOK_CERT_DIR", "(none: self-managed)", "a folder with tls.crt and tls.key (cert-manager's Secret)"),
    ("WEBHOOK_SECRET", "blueprint-operator-webhook-cert", "self-managed: the Secret of the certificate and its CA"),
    ("WEBHOOK_SERVICE", "blueprint-operator-webhook", "the webhook's Service (the CRD is made to name it)"),
    ("WEBHOOK_CERTIFICATE", "(none)", "cert-manager: its Certificate, named in the CRD for its CA injector"),
    ("WEBHOOK_EXTRA_NAMES", "(none)", "self-managed: more DNS names or IP addresses, comma separated"),
];

/// [`ENVIRONMENT`] as a help section.
pub fn environment_help() -> String {
    let width = ENVIRONMENT.iter().map(|(name, ..)| name.len()).max().unwrap_or(0);
    let mut text = String::from("Environment (name, default, meaning):\n");
    for (name, default, meaning) in ENVIRONMENT {
        text.push_str(&format!("  {name:width$}  {default}\n  {:width$}  {meaning}\n", ""));
    }
    text.push_str("The journal options above can also be set by JOURNAL_PATH, JOURNAL_MAX_BYTES and JOURNAL_KEEP.");
    text
}

/// A longer window would hold every change for longer than anyone waits for an operator to react.
pub const MAX_DEBOUNCE_WINDOW: Duration = Duration::from_secs(60);
/// The longest a change may wait for its reconcile while other changes keep coming.
pub const MAX_DEBOUNCE_DELAY: Duration = Duration::from_secs(600);

impl Settings {
    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_lookup(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }

    /// Reads settings through `lookup` (tests pass a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let namespace = lookup("NAMESPACE").ok_or(SettingsError::Missing("NAMESPACE"))?;
        let log_format = match lookup("LOG_FORMAT").as_deref() {
            None | Some("text") => LogFormat::Text,
            Some("json") => LogFormat::Json,
            Some(other) => {
                return Err(SettingsError::Invalid {
                    name: "LOG_FORMAT",
                    problem: format!("{other:?} is neither text nor json"),
                });
            }
        };
        let debounce = debounce(&lookup)?;
        let address = |name: &'static str, default: &str| -> Result<SocketAddr, SettingsError> {
            let text = lookup(name).unwrap_or_else(|| default.to_owned());
            // Upstream's flags accept ":8080" for all interfaces.
            let text = if text.starts_with(':') { format!("0.0.0.0{text}") } else { text };
            text.parse().map_err(|e| SettingsError::Invalid { name, problem: format!("{text:?}: {e}") })
        };
        let leader_election = boolean(&lookup, "LEADER_ELECT", true)?;
        let mut operator = identity(&lookup)?;
        operator.secret_access = secret_access(&lookup)?;
        let duration = |name: &'static str, default: Duration| -> Result<Duration, SettingsError> {
            match lookup(name) {
                None => Ok(default),
                Some(text) => parse_duration(&text).map_err(|problem| SettingsError::Invalid { name, problem }),
            }
        };
        let registry = registry_settings(&lookup, duration("DOGU_REGISTRY_TIMEOUT", Duration::from_secs(10))?)?;
        let webhook_address = address("WEBHOOK_BIND_ADDRESS", "0.0.0.0:9443")?;
        let webhook = webhook::webhook(&lookup, webhook_address)?;
        let descriptor_cache = CacheSettings {
            capacity: match lookup("DESCRIPTOR_CACHE_SIZE") {
                None => CacheSettings::default().capacity,
                Some(text) => text.parse::<NonZeroUsize>().map_err(|_| SettingsError::Invalid {
                    name: "DESCRIPTOR_CACHE_SIZE",
                    problem: format!("{text:?} is not a positive number of descriptors"),
                })?,
            },
            not_found_ttl: duration("DESCRIPTOR_NOT_FOUND_TTL", CacheSettings::default().not_found_ttl)?,
        };
        Ok(Settings {
            namespace,
            log_level: lookup("LOG_LEVEL").unwrap_or_else(|| "info".to_owned()),
            log_format,
            debounce,
            operator,
            registry,
            descriptor_cache,
            metrics_address: address("METRICS_BIND_ADDRESS", "0.0.0.0:8080")?,
            health_address: address("HEALTH_PROBE_BIND_ADDRESS", "0.0.0.0:8081")?,
            leader_election,
            identity: lookup("POD_NAME")
                .or_else(|| lookup("HOSTNAME"))
                .unwrap_or_else(|| format!("k8s-blueprint-operator-{}", std::process::id())),
            webhook,
        })
    }
}

/// A boolean as Go's `strconv.ParseBool` reads it (the values the Go operator's chart sets work here
/// too): `true`, `1`, `t`, ...; anything else is an error, never a silent default (upstream reads an
/// unparsable feature flag as false).
fn boolean(lookup: &impl Fn(&str) -> Option<String>, name: &'static str, default: bool) -> Result<bool, SettingsError> {
    match lookup(name).as_deref() {
        None => Ok(default),
        Some("true" | "True" | "TRUE" | "t" | "T" | "1") => Ok(true),
        Some("false" | "False" | "FALSE" | "f" | "F" | "0") => Ok(false),
        Some(other) => Err(SettingsError::Invalid { name, problem: format!("{other:?} is not a boolean") }),
    }
}

/// Which Secrets a blueprint may read (`SECRET_REFERENCES`, D53); the operator's own is the webhook's
/// (`WEBHOOK_SECRET`, whether or not the webhook is served: a Secret left from before is still its).
fn secret_access(lookup: &impl Fn(&str) -> Option<String>) -> Result<SecretAccess, SettingsError> {
    let mode = match lookup("SECRET_REFERENCES") {
        None => SecretReferences::default(),
        Some(text) => SecretReferences::parse(&text).ok_or_else(|| SettingsError::Invalid {
            name: "SECRET_REFERENCES",
            problem: format!("{text:?} is neither all-but-protected nor labelled-only"),
        })?,
    };
    let own = lookup("WEBHOOK_SECRET").unwrap_or_else(|| DEFAULT_WEBHOOK_SECRET.to_owned());
    Ok(SecretAccess { own: [own].into(), mode })
}

fn identity(lookup: &impl Fn(&str) -> Option<String>) -> Result<OperatorIdentity, SettingsError> {
    let version = lookup("OPERATOR_VERSION").unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned());
    let own_versions = match lookup("OPERATOR_COMPONENT_VERSIONS") {
        None => default_own_versions(),
        Some(text) => semver::VersionReq::parse(&text).map_err(|e| SettingsError::Invalid {
            name: "OPERATOR_COMPONENT_VERSIONS",
            problem: format!("{text:?} is not a version requirement (such as \">=0.1.0, <1.0.0\"): {e}"),
        })?,
    };
    // A running version outside its own releases would refuse every blueprint that names it.
    if blueprint_machine::check_operator_version(&version, &semver::VersionReq::STAR).is_err() {
        return Err(SettingsError::Invalid {
            name: "OPERATOR_VERSION",
            problem: format!("{version:?} is not a semantic version"),
        });
    }
    if let Err(problem) = blueprint_machine::check_operator_version(&version, &own_versions) {
        return Err(SettingsError::Invalid { name: "OPERATOR_COMPONENT_VERSIONS", problem });
    }
    let allow_replacement = boolean(lookup, "ALLOW_OPERATOR_REPLACEMENT", false)?;
    let component = lookup("OPERATOR_COMPONENT").unwrap_or_else(|| blueprint_machine::naming::OWN_COMPONENT.to_owned());
    if blueprint_machine::check_component_name(&component).is_err() {
        return Err(SettingsError::Invalid {
            name: "OPERATOR_COMPONENT",
            problem: format!("{component:?} is not a qualified component name (namespace/name)"),
        });
    }
    let provided_dependencies = [
        (ProvidedDependency::Cas, "AUTH_REGISTRATION_ENABLED"),
        (ProvidedDependency::Postfix, "DISABLE_POSTFIX_DEPENDENCY_CHECK"),
    ]
    .into_iter()
    .map(|(dependency, name)| Ok(boolean(lookup, name, false)?.then_some(dependency)))
    .filter_map(Result::transpose)
    .collect::<Result<_, SettingsError>>()?;
    Ok(OperatorIdentity {
        version,
        component,
        own_versions,
        allow_replacement,
        provided_dependencies,
        secret_access: SecretAccess::default(),
    })
}

fn debounce(lookup: &impl Fn(&str) -> Option<String>) -> Result<Debounce, SettingsError> {
    let bounded = |name: &'static str, default: Duration, min: Duration, max: Duration| match lookup(name) {
        None => Ok(default),
        Some(text) => {
            let value = parse_duration(&text).map_err(|problem| SettingsError::Invalid { name, problem })?;
            if value > max || value < min {
                return Err(SettingsError::Invalid {
                    name,
                    problem: format!("{text:?} is outside {} to {}", show(min), show(max)),
                });
            }
            Ok(value)
        }
    };
    let window = bounded("DEBOUNCE_WINDOW", Duration::from_secs(1), Duration::ZERO, MAX_DEBOUNCE_WINDOW)?;
    let max_delay = bounded("DEBOUNCE_MAX_DELAY", Debounce::window(window).max_delay, window, MAX_DEBOUNCE_DELAY)?;
    Ok(Debounce { window, max_delay })
}

/// A duration as the settings are written (`0s`, `500ms`, `1m`).
pub fn show(duration: Duration) -> String {
    match duration.as_millis() {
        ms if ms % 60_000 == 0 && ms > 0 => format!("{}m", ms / 60_000),
        ms if ms % 1000 == 0 => format!("{}s", ms / 1000),
        ms => format!("{ms}ms"),
    }
}

/// The remote dogu registry as `run` reads it from the environment (`DOGU_REGISTRY_*`, `PROXY_URL`):
/// `plan` on a live cluster asks it too.
pub fn remote_registry_from_env() -> Result<Option<RemoteSettings>, SettingsError> {
    let lookup = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let timeout = match lookup("DOGU_REGISTRY_TIMEOUT") {
        None => Duration::from_secs(10),
        Some(text) => parse_duration(&text)
            .map_err(|problem| SettingsError::Invalid { name: "DOGU_REGISTRY_TIMEOUT", problem })?,
    };
    registry_settings(&lookup, timeout)
}

fn registry_settings(
    lookup: &impl Fn(&str) -> Option<String>,
    timeout: Duration,
) -> Result<Option<RemoteSettings>, SettingsError> {
    let Some(endpoint) = lookup("DOGU_REGISTRY_ENDPOINT") else {
        return Ok(None);
    };
    // Trimmed and case-insensitive: the value often comes from a Secret written by hand.
    let schema = match lookup("DOGU_REGISTRY_URLSCHEMA").map(|s| s.trim().to_ascii_lowercase()).as_deref() {
        None | Some("") | Some("default") => UrlSchema::Default,
        Some("index") => UrlSchema::Index,
        Some(other) => {
            return Err(SettingsError::Invalid {
                name: "DOGU_REGISTRY_URLSCHEMA",
                problem: format!("{other:?} is neither default nor index"),
            });
        }
    };
    let credentials = match (lookup("DOGU_REGISTRY_USERNAME"), lookup("DOGU_REGISTRY_PASSWORD")) {
        (Some(user), Some(password)) => Some((user, password)),
        (None, None) => None,
        (Some(_), None) => return Err(SettingsError::Missing("DOGU_REGISTRY_PASSWORD")),
        (None, Some(_)) => return Err(SettingsError::Missing("DOGU_REGISTRY_USERNAME")),
    };
    Ok(Some(RemoteSettings {
        endpoint,
        schema,
        credentials,
        proxy: lookup("PROXY_URL"),
        timeout,
        extra_ca: lookup("DOGU_REGISTRY_CA_FILE").map(PathBuf::from),
    }))
}

/// `500ms`, `1s`, `2m`, `1h`, or a plain number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| format!("{text:?} is not a duration such as 500ms, 1s or 2m"))?;
    let seconds = match unit {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(format!("{text:?} has an unknown unit (use ms, s, m or h)")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("{text:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Result<Settings, SettingsError> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Settings::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn namespace_is_required_and_named_in_the_error() {
        let error = settings(&[]).unwrap_err();
        assert_eq!(error.to_string(), "environment variable NAMESPACE must be set");
    }

    #[test]
    fn defaults_and_overrides() {
        let s = settings(&[("NAMESPACE", "ecosystem")]).unwrap();
        assert_eq!(s.debounce, Debounce { window: Duration::from_secs(1), max_delay: Duration::from_secs(5) });
        assert_eq!(s.log_format, LogFormat::Text);
        assert_eq!(s.metrics_address.port(), 8080);
        assert!(s.leader_election);
        let s = settings(&[
            ("NAMESPACE", "ecosystem"),
            ("DEBOUNCE_WINDOW", "250ms"),
            ("LOG_FORMAT", "json"),
            ("METRICS_BIND_ADDRESS", ":9090"),
            ("LEADER_ELECT", "false"),
            ("DOGU_REGISTRY_URLSCHEMA", "index"),
        ])
        .unwrap();
        assert_eq!(s.debounce.window, Duration::from_millis(250));
        assert_eq!(s.log_format, LogFormat::Json);
        assert_eq!(s.metrics_address.port(), 9090);
        assert!(!s.leader_election);
        assert_eq!(s.registry, None, "no endpoint, no remote registry");
        let s = settings(&[
            ("NAMESPACE", "ecosystem"),
            ("DOGU_REGISTRY_ENDPOINT", "https://dogu.example.com/api/v2/"),
            ("DOGU_REGISTRY_USERNAME", "instance"),
            ("DOGU_REGISTRY_PASSWORD", "secret"),
            ("DOGU_REGISTRY_URLSCHEMA", "index"),
            ("DOGU_REGISTRY_TIMEOUT", "3s"),
            ("DESCRIPTOR_CACHE_SIZE", "64"),
            ("DESCRIPTOR_NOT_FOUND_TTL", "2m"),
        ])
        .unwrap();
        let registry = s.registry.unwrap();
        assert_eq!(registry.schema, UrlSchema::Index);
        assert_eq!(registry.credentials, Some(("instance".into(), "secret".into())));
        assert_eq!(registry.timeout, Duration::from_secs(3));
        assert_eq!(s.descriptor_cache.capacity.get(), 64);
        assert_eq!(s.descriptor_cache.not_found_ttl, Duration::from_secs(120));
    }

    #[test]
    fn invalid_values_are_named() {
        let error = settings(&[("NAMESPACE", "x"), ("DEBOUNCE_WINDOW", "soon")]).unwrap_err();
        assert!(error.to_string().starts_with("environment variable DEBOUNCE_WINDOW is invalid"), "{error}");
        let error = settings(&[("NAMESPACE", "x"), ("OPERATOR_VERSION", "latest")]).unwrap_err();
        assert!(error.to_string().contains("OPERATOR_VERSION"), "{error}");
        let endpoint = ("DOGU_REGISTRY_ENDPOINT", "https://dogu.example.com");
        let error = settings(&[("NAMESPACE", "x"), endpoint, ("DOGU_REGISTRY_USERNAME", "u")]).unwrap_err();
        assert_eq!(error, SettingsError::Missing("DOGU_REGISTRY_PASSWORD"));
        let error = settings(&[("NAMESPACE", "x"), endpoint, ("DOGU_REGISTRY_URLSCHEMA", "indx")]).unwrap_err();
        assert!(error.to_string().contains("DOGU_REGISTRY_URLSCHEMA"), "{error}");
        let error = settings(&[("NAMESPACE", "x"), ("DESCRIPTOR_CACHE_SIZE", "0")]).unwrap_err();
        assert!(error.to_string().contains("DESCRIPTOR_CACHE_SIZE"), "{error}");
        let error = settings(&[("NAMESPACE", "x"), ("SECRET_REFERENCES", "labelled")]).unwrap_err();
        assert!(error.to_string().contains("SECRET_REFERENCES is invalid: \"labelled\" is neither"), "{error}");
    }

    /// D53: the webhook's Secret is the operator's own (also under another name); the mode is read.
    #[test]
    fn the_secrets_a_blueprint_may_read() {
        let s = settings(&[("NAMESPACE", "x")]).unwrap();
        assert_eq!(s.operator.secret_access.mode, SecretReferences::AllButProtected);
        assert_eq!(s.operator.secret_access.own, ["blueprint-operator-webhook-cert".to_owned()].into());
        let s = settings(&[("NAMESPACE", "x"), ("WEBHOOK_SECRET", "cert"), ("SECRET_REFERENCES", "labelled-only")]);
        let access = s.unwrap().operator.secret_access;
        assert_eq!((access.mode, access.own), (SecretReferences::LabelledOnly, ["cert".to_owned()].into()));
    }

    /// `run --help` lists exactly what the settings read.
    #[test]
    fn the_environment_list_is_what_the_settings_read() {
        let asked = std::cell::RefCell::new(std::collections::BTreeSet::new());
        let given: HashMap<&str, &str> = [
            ("NAMESPACE", "x"),
            ("DOGU_REGISTRY_ENDPOINT", "https://dogu.example.com/"),
            ("DOGU_REGISTRY_USERNAME", "u"),
            ("DOGU_REGISTRY_PASSWORD", "p"),
        ]
        .into_iter()
        .collect();
        Settings::from_lookup(|name| {
            asked.borrow_mut().insert(name.to_owned());
            given.get(name).map(|v| (*v).to_owned())
        })
        .unwrap();
        let listed: std::collections::BTreeSet<String> = ENVIRONMENT.iter().map(|(n, ..)| (*n).to_owned()).collect();
        assert_eq!(asked.into_inner(), listed);
        let help = environment_help();
        let timeout = help.lines().find(|l| l.starts_with("  DOGU_REGISTRY_TIMEOUT ")).expect("listed");
        assert!(timeout.ends_with(" 10s"), "{help}");
    }

    #[test]
    fn the_operators_own_releases_are_a_version_requirement_that_admits_it() {
        let s = settings(&[("NAMESPACE", "x"), ("OPERATOR_VERSION", "0.4.0")]).unwrap();
        assert_eq!(s.operator.own_versions, default_own_versions());
        assert!(!s.operator.allow_replacement);
        let s = settings(&[
            ("NAMESPACE", "x"),
            ("OPERATOR_VERSION", "3.1.0"),
            ("OPERATOR_COMPONENT_VERSIONS", ">=3.0.0-0"),
            ("ALLOW_OPERATOR_REPLACEMENT", "true"),
        ])
        .unwrap();
        assert_eq!(s.operator.own_versions.to_string(), ">=3.0.0-0");
        assert!(s.operator.allow_replacement);
        let error = settings(&[("NAMESPACE", "x"), ("OPERATOR_VERSION", "2.0.0")]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "environment variable OPERATOR_COMPONENT_VERSIONS is invalid: >=0.0.0, <1.0.0 does not admit this operator's own version 2.0.0"
        );
        let s = settings(&[("NAMESPACE", "x"), ("OPERATOR_COMPONENT", "k8s/blueprint-operator")]).unwrap();
        assert_eq!(s.operator.component, "k8s/blueprint-operator");
        let error = settings(&[("NAMESPACE", "x"), ("OPERATOR_COMPONENT", "blueprint-operator")]).unwrap_err();
        assert!(error.to_string().contains("OPERATOR_COMPONENT is invalid"), "{error}");
        let error = settings(&[("NAMESPACE", "x"), ("OPERATOR_COMPONENT_VERSIONS", "mine")]).unwrap_err();
        assert!(error.to_string().contains("is not a version requirement"), "{error}");
        let flags = settings(&[
            ("NAMESPACE", "x"),
            ("AUTH_REGISTRATION_ENABLED", "True"),
            ("DISABLE_POSTFIX_DEPENDENCY_CHECK", "false"),
        ])
        .unwrap();
        assert_eq!(flags.operator.provided_dependencies, [ProvidedDependency::Cas].into_iter().collect());
        // Upstream reads an unparsable flag as false, silently; here the start stops and says why.
        let error = settings(&[("NAMESPACE", "x"), ("DISABLE_POSTFIX_DEPENDENCY_CHECK", "yes")]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "environment variable DISABLE_POSTFIX_DEPENDENCY_CHECK is invalid: \"yes\" is not a boolean"
        );
        let error = settings(&[("NAMESPACE", "x"), ("ALLOW_OPERATOR_REPLACEMENT", "yes")]).unwrap_err();
        assert!(
            error.to_string().contains("ALLOW_OPERATOR_REPLACEMENT is invalid: \"yes\" is not a boolean"),
            "{error}"
        );
    }

    /// The finding: `DEBOUNCE_WINDOW=3000000000000000h` was accepted, and the operator never reconciled
    /// again.
    #[test]
    fn absurd_debounce_settings_stop_the_start() {
        let error = settings(&[("NAMESPACE", "x"), ("DEBOUNCE_WINDOW", "3000000000000000h")]).unwrap_err();
        assert!(error.to_string().starts_with("environment variable DEBOUNCE_WINDOW is invalid"), "{error}");
        let error = settings(&[("NAMESPACE", "x"), ("DEBOUNCE_WINDOW", "2m")]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "environment variable DEBOUNCE_WINDOW is invalid: \"2m\" is outside 0s to 1m",
            "{error}"
        );
        let error =
            settings(&[("NAMESPACE", "x"), ("DEBOUNCE_WINDOW", "2s"), ("DEBOUNCE_MAX_DELAY", "1s")]).unwrap_err();
        assert!(error.to_string().contains("DEBOUNCE_MAX_DELAY") && error.to_string().contains("2s to 10m"), "{error}");
        let s = settings(&[("NAMESPACE", "x"), ("DEBOUNCE_WINDOW", "10s")]).unwrap();
        assert_eq!(s.debounce.max_delay, Duration::from_secs(10), "the default delay is at least the window");
        let s = settings(&[("NAMESPACE", "x"), ("DEBOUNCE_MAX_DELAY", "30s")]).unwrap();
        assert_eq!(s.debounce, Debounce { window: Duration::from_secs(1), max_delay: Duration::from_secs(30) });
    }

    #[test]
    fn the_url_schema_is_read_as_a_hand_written_secret_holds_it() {
        let endpoint = ("DOGU_REGISTRY_ENDPOINT", "https://dogu.example.com");
        let s = settings(&[("NAMESPACE", "x"), endpoint, ("DOGU_REGISTRY_URLSCHEMA", "Index\n")]).unwrap();
        assert_eq!(s.registry.unwrap().schema, UrlSchema::Index);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert!(parse_duration("1d").is_err());
    }
}
