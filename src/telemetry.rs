//! Structured logs with `tracing`: text for people, JSON for log pipelines.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Installs the global subscriber. `level` is a level name (`debug`, `info`, ...) or a filter
/// directive; an unparsable value falls back to `info` (as upstream does) and says so.
pub fn init(level: &str, format: LogFormat) {
    let (filter, fallback) = match EnvFilter::try_new(level) {
        Ok(filter) => (filter, false),
        Err(_) => (EnvFilter::new("info"), true),
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
