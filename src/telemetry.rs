//! Structured logs with `tracing`: text for people, JSON for log pipelines.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// kube-client logs the whole response body at WARN when it cannot decode it: a list of Secrets is
/// every value in it. The operator decodes watched objects one by one (`observe::decoded`), so this
/// should not happen; should it happen anyway, that line is not written (unless a filter names
/// `kube_client` itself).
const NO_RESPONSE_BODIES: &str = "kube_client::client=error";

/// Installs the global subscriber. `level` is a level name (`debug`, `info`, ...) or a filter
/// directive; an unparsable value falls back to `info` (as upstream does) and says so.
pub fn init(level: &str, format: LogFormat) {
    let (filter, fallback) = match EnvFilter::try_new(directives(level)) {
        Ok(filter) => (filter, false),
        Err(_) => (EnvFilter::new(directives("info")), true),
    };
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_target(false).with_ansi(ansi);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(true).with_span_list(false).init(),
    }
    if fallback {
        tracing::warn!(level, "LOG_LEVEL is not a level or filter; logging at info");
    }
}

fn directives(level: &str) -> String {
    if level.contains("kube_client") { level.to_owned() } else { format!("{level},{NO_RESPONSE_BODIES}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_bodies_of_the_client_are_not_logged_unless_asked_for() {
        assert_eq!(directives("debug"), "debug,kube_client::client=error");
        assert!(EnvFilter::try_new(directives("debug")).is_ok());
        assert!(EnvFilter::try_new(directives("info,blueprint_operator=trace")).is_ok());
        assert_eq!(directives("kube_client=trace"), "kube_client=trace");
    }
}
