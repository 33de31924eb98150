//! D56: a reconcile asked for by hand (the annotation `blueprint-operator.k8s.cloudogu.com/reconcile-
//! requested-at`, `blueprint-operator reconcile`): the decision handles a new request once, says so in
//! a Normal event naming the value (first, since it is why the reconcile happened), and decides
//! otherwise exactly what it decides without one.

use super::*;

#[test]
fn a_new_request_is_handled_once_and_changes_nothing_else() {
    let completed = Scenario::new(INSTALL_NEXUS).with_dogu("official/nexus", "3.2.1-1").decide();
    let settled = || Scenario::new(INSTALL_NEXUS).with_dogu("official/nexus", "3.2.1-1").after(&completed);
    let without = settled().decide();
    let requested = settled().with_reconcile_request("2026-12-04T10:00:00.123456789Z", None).decide();
    assert_eq!(requested.handled_request.as_deref(), Some("2026-12-04T10:00:00.123456789Z"));
    assert_eq!(event_reasons(&requested), ["ReconcileRequested"]);
    assert_eq!(
        event(&requested, "ReconcileRequested").message,
        "reconcile requested at 2026-12-04T10:00:00.123456789Z: handled"
    );
    assert_eq!(
        (requested.state, &requested.status, &requested.actions),
        (without.state, &without.status, &without.actions)
    );
    assert_eq!(requested.requeue, without.requeue);

    let handled = settled()
        .with_reconcile_request("2026-12-04T10:00:00.123456789Z", Some("2026-12-04T10:00:00.123456789Z"))
        .decide();
    assert_eq!(handled.handled_request, None);
    assert!(handled.events.is_empty(), "{:?}", handled.events);
}

#[test]
fn the_request_comes_first_among_the_events() {
    let decision = Scenario::new(INSTALL_NEXUS).with_reconcile_request("now", Some("before")).decide();
    assert_eq!(event_reasons(&decision).first(), Some(&"ReconcileRequested"));
    assert!(event_reasons(&decision).contains(&"DogusApplied"));
}
