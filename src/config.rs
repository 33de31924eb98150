//! The operator's settings, from the environment (as upstream's chart sets them).

use std::net::SocketAddr;
use std::time::Duration;

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

/// Where dogu descriptors come from when the local store does not have them (used by the registry
/// client; read and checked here so that a misconfiguration stops the start).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RegistrySettings {
    pub endpoint: Option<String>,
    pub username: Option<String>,
    pub password: Option<String>,
    /// `default` (`<endpoint>/dogus/<ns>/<name>/<version>`) or `index`.
    pub url_schema: String,
    pub proxy_url: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The namespace the operator works in (`NAMESPACE`, required).
    pub namespace: String,
    /// A level (`debug`, `info`, ...) or a tracing filter directive (`LOG_LEVEL`, default `info`).
    pub log_level: String,
    pub log_format: LogFormat,
    /// Trailing-edge debounce of reconcile triggers (`DEBOUNCE_WINDOW`, default 1s).
    pub debounce: Duration,
    /// The running operator's version (`OPERATOR_VERSION`, default: the build's version).
    pub operator_version: String,
    pub registry: RegistrySettings,
    /// `/metrics` (`METRICS_BIND_ADDRESS`, default `0.0.0.0:8080`).
    pub metrics_address: SocketAddr,
    /// `/healthz`, `/readyz` (`HEALTH_PROBE_BIND_ADDRESS`, default `0.0.0.0:8081`).
    pub health_address: SocketAddr,
    /// Leader election on a Lease (`LEADER_ELECT`, default true).
    pub leader_election: bool,
    /// This replica's identity in the Lease (`POD_NAME`, default: the host name).
    pub identity: String,
}

pub const LEASE_NAME: &str = "k8s-blueprint-operator-leader";

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
        let debounce = match lookup("DEBOUNCE_WINDOW") {
            None => Duration::from_secs(1),
            Some(text) => {
                parse_duration(&text).map_err(|problem| SettingsError::Invalid { name: "DEBOUNCE_WINDOW", problem })?
            }
        };
        let address = |name: &'static str, default: &str| -> Result<SocketAddr, SettingsError> {
            let text = lookup(name).unwrap_or_else(|| default.to_owned());
            // Upstream's flags accept ":8080" for all interfaces.
            let text = if text.starts_with(':') { format!("0.0.0.0{text}") } else { text };
            text.parse().map_err(|e| SettingsError::Invalid { name, problem: format!("{text:?}: {e}") })
        };
        let leader_election = match lookup("LEADER_ELECT").as_deref() {
            None | Some("true") | Some("1") => true,
            Some("false") | Some("0") => false,
            Some(other) => {
                return Err(SettingsError::Invalid {
                    name: "LEADER_ELECT",
                    problem: format!("{other:?} is not a boolean"),
                });
            }
        };
        let operator_version = lookup("OPERATOR_VERSION").unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned());
        if blueprint_machine::model::ComponentVersion::parse(&operator_version).is_err() {
            return Err(SettingsError::Invalid {
                name: "OPERATOR_VERSION",
                problem: format!("{operator_version:?} is not a semantic version"),
            });
        }
        let registry = RegistrySettings {
            endpoint: lookup("DOGU_REGISTRY_ENDPOINT"),
            username: lookup("DOGU_REGISTRY_USERNAME"),
            password: lookup("DOGU_REGISTRY_PASSWORD"),
            url_schema: match lookup("DOGU_REGISTRY_URLSCHEMA").as_deref() {
                Some("index") => "index".to_owned(),
                _ => "default".to_owned(),
            },
            proxy_url: lookup("PROXY_URL"),
        };
        Ok(Settings {
            namespace,
            log_level: lookup("LOG_LEVEL").unwrap_or_else(|| "info".to_owned()),
            log_format,
            debounce,
            operator_version,
            registry,
            metrics_address: address("METRICS_BIND_ADDRESS", "0.0.0.0:8080")?,
            health_address: address("HEALTH_PROBE_BIND_ADDRESS", "0.0.0.0:8081")?,
            leader_election,
            identity: lookup("POD_NAME")
                .or_else(|| lookup("HOSTNAME"))
                .unwrap_or_else(|| format!("k8s-blueprint-operator-{}", std::process::id())),
        })
    }
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
        assert_eq!(s.debounce, Duration::from_secs(1));
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
        assert_eq!(s.debounce, Duration::from_millis(250));
        assert_eq!(s.log_format, LogFormat::Json);
        assert_eq!(s.metrics_address.port(), 9090);
        assert!(!s.leader_election);
        assert_eq!(s.registry.url_schema, "index");
    }

    #[test]
    fn invalid_values_are_named() {
        let error = settings(&[("NAMESPACE", "x"), ("DEBOUNCE_WINDOW", "soon")]).unwrap_err();
        assert!(error.to_string().starts_with("environment variable DEBOUNCE_WINDOW is invalid"), "{error}");
        let error = settings(&[("NAMESPACE", "x"), ("OPERATOR_VERSION", "latest")]).unwrap_err();
        assert!(error.to_string().contains("OPERATOR_VERSION"), "{error}");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert!(parse_duration("1d").is_err());
    }
}
