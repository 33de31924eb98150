//! Reconciles asked for by hand (`blueprint-operator reconcile`, the Blueprint's annotation
//! `blueprint-operator.k8s.cloudogu.com/reconcile-requested-at`): which value this process handled
//! last per Blueprint. The machine decides whether the annotation is a new request; this memory is what
//! it compares with. It is this process's: an operator started since handles the last request once
//! more, with the reconcile every start makes (docs/differences.md D56).

use std::collections::HashMap;
use std::sync::Mutex;

use blueprint_machine::api::Blueprint;
use blueprint_machine::reconcile_request::{ANNOTATION, ReconcileRequest};

#[derive(Default)]
pub struct HandledRequests {
    last: Mutex<HashMap<String, String>>,
}

impl HandledRequests {
    /// The request the Blueprint's annotation makes, with the value handled last; `None` without the
    /// annotation.
    pub fn observe(&self, blueprint: &Blueprint) -> Option<ReconcileRequest> {
        let requested_at = requested_at(blueprint)?;
        let name = blueprint.metadata.name.as_deref().unwrap_or_default();
        let last_handled = self.last.lock().expect("not poisoned").get(name).cloned();
        Some(ReconcileRequest { requested_at: requested_at.to_owned(), last_handled })
    }

    /// The reconcile that handled `value` for Blueprint `name` is done: its status is the stored one.
    pub fn handled(&self, name: &str, value: &str) {
        self.last.lock().expect("not poisoned").insert(name.to_owned(), value.to_owned());
    }

    /// The Blueprint is gone.
    pub fn forget(&self, name: &str) {
        self.last.lock().expect("not poisoned").remove(name);
    }
}

/// The Blueprint's reconcile annotation, if it has one.
pub fn requested_at(blueprint: &Blueprint) -> Option<&str> {
    blueprint.metadata.annotations.as_ref()?.get(ANNOTATION).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annotated(value: Option<&str>) -> Blueprint {
        let mut blueprint = blueprint_machine::fixtures::blueprint("{displayName: x}");
        blueprint.metadata.annotations = value.map(|v| [(ANNOTATION.to_owned(), v.to_owned())].into());
        blueprint
    }

    #[test]
    fn a_request_is_observed_with_the_value_handled_last() {
        let requests = HandledRequests::default();
        assert_eq!(requests.observe(&annotated(None)), None);
        let blueprint = annotated(Some("2026-12-04T10:00:00Z"));
        let observed = requests.observe(&blueprint).unwrap();
        assert!(observed.is_new());
        let name = blueprint.metadata.name.clone().unwrap();
        requests.handled(&name, "2026-12-04T10:00:00Z");
        assert!(!requests.observe(&blueprint).unwrap().is_new(), "handled once");
        requests.forget(&name);
        assert!(requests.observe(&blueprint).unwrap().is_new());
    }
}
