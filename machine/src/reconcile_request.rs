//! A reconcile asked for by hand, as Flux's `reconcile.fluxcd.io/requestedAt`: `blueprint-operator
//! reconcile` (or anyone) sets the Blueprint's annotation [`ANNOTATION`] to a new value, by convention
//! the time of the request. The operator reconciles at once, past any backoff, and says that it
//! handled the request: a Normal event `ReconcileRequested` naming the value (published with the
//! reconcile's other events, after its status write), which `reconcile` waits for.
//!
//! The machine decides whether a request is new: the shell observes the annotation and the value it
//! handled last; the decision names the value it handles. The shell remembers the value in its memory,
//! so an operator restarted since reports the request once more (with the reconcile every start
//! makes); docs/differences.md D56.

use serde::{Deserialize, Serialize};

/// The Blueprint annotation that asks for a reconcile.
pub const ANNOTATION: &str = "blueprint-operator.k8s.cloudogu.com/reconcile-requested-at";

/// How much of a requested value an event repeats (the annotation may hold up to 256 KiB).
const SHOWN_CHARS: usize = 64;

/// The annotation as observed, with the request handled last.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ReconcileRequest {
    /// The annotation's value.
    pub requested_at: String,
    /// The value of the request this operator handled last for this Blueprint, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled: Option<String>,
}

impl ReconcileRequest {
    /// The request has not been handled yet.
    pub fn is_new(&self) -> bool {
        self.last_handled.as_deref() != Some(self.requested_at.as_str())
    }

    /// The event that says the request is handled.
    pub(crate) fn handled_event(&self) -> crate::decision::Event {
        crate::events::normal(
            crate::events::reason::RECONCILE_REQUESTED,
            format!("reconcile requested at {}: handled", shown(&self.requested_at)),
        )
    }
}

/// The value as an event shows it: on one line, at most [`SHOWN_CHARS`] characters.
pub fn shown(value: &str) -> String {
    let line = crate::events::one_line(value);
    match line.char_indices().nth(SHOWN_CHARS) {
        Some((end, _)) => format!("{} …", &line[..end]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(requested_at: &str, last_handled: Option<&str>) -> ReconcileRequest {
        ReconcileRequest { requested_at: requested_at.into(), last_handled: last_handled.map(Into::into) }
    }

    #[test]
    fn a_request_is_new_until_its_value_was_handled() {
        assert!(request("2026-12-04T10:00:00Z", None).is_new());
        assert!(request("2026-12-04T10:00:00Z", Some("2026-12-04T09:00:00Z")).is_new());
        assert!(!request("2026-12-04T10:00:00Z", Some("2026-12-04T10:00:00Z")).is_new());
    }

    #[test]
    fn the_event_shows_the_value_on_one_line_and_bounded() {
        let event = request("2026-12-04T10:00:00Z", None).handled_event();
        assert_eq!(event.reason, "ReconcileRequested");
        assert_eq!(event.message, "reconcile requested at 2026-12-04T10:00:00Z: handled");
        let long = "x".repeat(300);
        assert_eq!(shown(&long).chars().count(), SHOWN_CHARS + 2);
        assert_eq!(shown("a\nb"), "a; b");
    }
}
