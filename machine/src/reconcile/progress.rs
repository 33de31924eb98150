//! Progress is written at most every [`PROGRESS_REFRESH`] (D58): a status whose only news is progress is
//! not written again within that time of the operator's own last status write; the reconcile comes back
//! when the refresh is due. Progress is the text of a progress message (which dogus the ecosystem still
//! waits for, which the install still waits for), and a state diff that became empty: the applied
//! changes took effect (D60), with the effective blueprint that no longer has to be summarised beside
//! it. Any other change (a condition's status or reason, a diff with changes, a generation, an event,
//! an action) is written at once, as before.
//!
//! Why: on a real kube-apiserver, writing the status of a 1,000-dogu Blueprint took 0.7-1.3 s of the API
//! server's time, and during an install the list of dogus still at work changes with every Dogu event:
//! each such write slowed the dogu operator's own writes to a third for a second (audit log,
//! docs/performance.md). Upstream re-checks health every 10 s; so does this refresh.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use crate::api::BlueprintStatus;
use crate::conditions::{COMPLETED, ECOSYSTEM_HEALTHY};
use crate::decision::{PROGRESS_DUE, Requeue};
use crate::naming;

/// How long after the operator's last status write a mere progress message waits.
pub(super) const PROGRESS_REFRESH: Duration = Duration::from_secs(10);

/// The conditions whose messages are progress lists.
const PROGRESS_CONDITIONS: [&str; 2] = [ECOSYSTEM_HEALTHY, COMPLETED];

/// When the operator last wrote the stored status: the newest `managedFields` entry, if it is the
/// operator's write of the status subresource. Another writer's (a status edited by hand, D54) is
/// undone at once, never held back.
pub(super) fn own_status_write(meta: &ObjectMeta) -> Option<&Time> {
    let newest = naming::newest_write(meta.managed_fields.as_deref()?)?;
    if naming::own_status_write(newest) { newest.time.as_ref() } else { None }
}

/// How long until the refresh is due, if the only differences of `wanted` from `stored` are progress
/// (see the module) and the operator wrote `stored` less than [`PROGRESS_REFRESH`] before `now`: then
/// `stored` is what the decision keeps, as it is (the same object: a held diff is not copied).
pub(super) fn hold_back(
    stored: &BlueprintStatus,
    wanted: &BlueprintStatus,
    written: &Time,
    now: &Time,
) -> Option<Duration> {
    let elapsed = now.0.as_millisecond() - written.0.as_millisecond();
    let refresh = PROGRESS_REFRESH.as_millis() as i64;
    // A write "in the future" is another clock's: nothing is held on it.
    if !(0..refresh).contains(&elapsed) {
        return None;
    }
    // Cheap first: whether any message changed or the diff emptied; the full comparison only then.
    let messages_changed = stored.conditions.len() == wanted.conditions.len()
        && stored.conditions.iter().zip(&wanted.conditions).any(|(old, new)| old.message != new.message);
    let emptied = has_changes(stored) && !has_changes(wanted);
    if !messages_changed && !emptied {
        return None;
    }
    // An emptied diff also brings back an effective blueprint the full diff had left no room for
    // (`status_size`): that is the same progress. Anything else in them is news.
    let parts_same = if emptied {
        stored.effective_blueprint.is_none() || stored.effective_blueprint == wanted.effective_blueprint
    } else {
        stored.state_diff == wanted.state_diff && stored.effective_blueprint == wanted.effective_blueprint
    };
    // The conditions' transition times need no comparison: a time moves only with its status.
    let same = parts_same
        && stored.observed_generation == wanted.observed_generation
        && stored.same_conditions_apart_from(wanted, &PROGRESS_CONDITIONS);
    same.then(|| Duration::from_millis((refresh - elapsed) as u64))
}

/// The status shows a state diff with changes.
fn has_changes(status: &BlueprintStatus) -> bool {
    status.state_diff.as_ref().is_some_and(|diff| !diff.is_empty())
}

/// `requeue`, but back no later than `due` (a held-back progress refresh).
pub(super) fn no_later_than(requeue: Requeue, due: Duration) -> Requeue {
    match requeue {
        Requeue::AwaitChange => Requeue::After { after: due, reason: PROGRESS_DUE.to_owned() },
        Requeue::After { after, .. } if due < after => Requeue::After { after: due, reason: PROGRESS_DUE.to_owned() },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ManagedFieldsEntry};
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::naming::FIELD_MANAGER;

    fn at(seconds: i64) -> Time {
        Time(Timestamp::from_second(1_767_225_600 + seconds).unwrap())
    }

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            observed_generation: Some(1),
            last_transition_time: at(0),
        }
    }

    fn status(health: &str, completed: &str) -> BlueprintStatus {
        BlueprintStatus {
            conditions: vec![
                condition(ECOSYSTEM_HEALTHY, "False", "ApplyInProgress", health),
                condition(COMPLETED, "False", "StateDiffHasChanges", completed),
            ],
            observed_generation: Some(1),
            ..BlueprintStatus::default()
        }
    }

    fn entry(manager: &str, subresource: Option<&str>, time: i64) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            subresource: subresource.map(Into::into),
            time: Some(at(time)),
            ..ManagedFieldsEntry::default()
        }
    }

    #[test]
    fn a_new_progress_message_waits_for_the_refresh_and_says_when() {
        let stored = status("2 dogu(s) are at work: a, b", "waiting for a, b");
        let wanted = status("1 dogu(s) are at work: b", "waiting for b");
        let due = hold_back(&stored, &wanted, &at(100), &at(103));
        assert_eq!(due, Some(Duration::from_secs(7)), "the stored status is kept: nothing to write");
        assert_eq!(
            no_later_than(Requeue::after(10, "unhealthy"), Duration::from_secs(7)),
            Requeue::After { after: Duration::from_secs(7), reason: PROGRESS_DUE.to_owned() }
        );
        assert_eq!(no_later_than(Requeue::after(1, "x"), Duration::from_secs(7)), Requeue::after(1, "x"));
        assert!(matches!(no_later_than(Requeue::AwaitChange, Duration::from_secs(7)), Requeue::After { .. }));
    }

    #[test]
    fn a_progress_message_is_written_once_the_refresh_is_due_or_when_the_clocks_disagree() {
        let stored = status("2 dogu(s) are at work: a, b", "waiting for a, b");
        for now in [110, 200, 99] {
            let wanted = status("1 dogu(s) are at work: b", "waiting for b");
            assert_eq!(hold_back(&stored, &wanted, &at(100), &at(now)), None, "now = {now}");
        }
    }

    #[test]
    fn any_other_news_is_written_at_once() {
        let stored = status("2 dogu(s) are at work: a, b", "waiting for a, b");
        let write = |change: &dyn Fn(&mut BlueprintStatus)| {
            let mut wanted = status("1 dogu(s) are at work: b", "waiting for b");
            change(&mut wanted);
            hold_back(&stored, &wanted, &at(100), &at(101))
        };
        assert!(write(&|_| {}).is_some(), "the progress alone is held");
        assert_eq!(write(&|s| s.conditions[0].status = "True".into()), None, "a status");
        assert_eq!(write(&|s| s.conditions[0].reason = "Unhealthy".into()), None, "a reason");
        assert_eq!(write(&|s| s.conditions[1].observed_generation = Some(2)), None, "a generation");
        assert_eq!(write(&|s| s.observed_generation = Some(2)), None, "the observed generation");
        assert_eq!(write(&|s| s.state_diff = Some(Default::default())), None, "the state diff");
        assert_eq!(write(&|s| s.conditions.push(condition("Valid", "True", "Valid", ""))), None, "a condition more");
        let mut other = status("2 dogu(s) are at work: a, b", "waiting for a, b");
        other.conditions[0].type_ = "Valid".into();
        let mut wanted = other.clone();
        wanted.conditions[0].message = "another problem".into();
        assert_eq!(hold_back(&other, &wanted, &at(100), &at(101)), None, "a problem's message is news");
        assert_eq!(hold_back(&stored, &stored.clone(), &at(100), &at(101)), None, "nothing to hold");
    }

    /// A diff of one dogu install: what a reconcile that installs it shows.
    fn with_diff(mut status: BlueprintStatus, dogus: &[&str]) -> BlueprintStatus {
        let entries = dogus.iter().map(|name| (name.to_string(), Default::default()));
        status.state_diff = Some(crate::api::StateDiff { dogu_diffs: entries.collect(), ..Default::default() });
        status
    }

    #[test]
    fn an_emptied_diff_waits_for_the_refresh_with_the_effective_blueprint_it_brings_back() {
        let hold = |stored: &BlueprintStatus, wanted: &BlueprintStatus| hold_back(stored, wanted, &at(100), &at(102));
        let stored = with_diff(status("1 dogu(s) are unhealthy: a", "being applied"), &["a"]);
        let emptied = with_diff(status("1 dogu(s) are unhealthy: a", "being applied"), &[]);
        assert_eq!(hold(&stored, &emptied), Some(Duration::from_secs(8)));
        // The full diff had left no room for the effective blueprint (`status_size`): back with the
        // emptied diff, and held with it.
        let mut back = with_diff(status("1 dogu(s) are unhealthy: a", "being applied"), &[]);
        back.effective_blueprint = Some(Default::default());
        assert_eq!(hold(&stored, &back), Some(Duration::from_secs(8)));
        // With progress in the messages too.
        let shorter = with_diff(status("1 dogu(s) are unhealthy: b", "being applied"), &[]);
        assert_eq!(hold(&stored, &shorter), Some(Duration::from_secs(8)));

        // News: a diff that changed but still has changes, a condition's status, another effective
        // blueprint than the one stored, an emptied diff of a stored status that had none.
        let other = with_diff(status("1 dogu(s) are unhealthy: a", "being applied"), &["b"]);
        assert_eq!(hold(&stored, &other), None, "another diff");
        let mut healthy = emptied.clone();
        healthy.conditions[0].status = "True".into();
        assert_eq!(hold(&stored, &healthy), None, "a condition's status");
        let mut shown = stored.clone();
        shown.effective_blueprint = Some(Default::default());
        let mut another = emptied.clone();
        another.effective_blueprint = Some(std::sync::Arc::new(crate::api::BlueprintManifest {
            dogus: Some(vec![Default::default()]),
            ..Default::default()
        }));
        assert_eq!(hold(&shown, &another), None, "another effective blueprint");
        let no_diff = status("1 dogu(s) are unhealthy: a", "being applied");
        assert_eq!(hold(&no_diff, &emptied), None, "an empty diff where none was stored is news");
    }

    #[test]
    fn only_the_operators_own_status_write_holds_progress_back() {
        let meta =
            |entries: Vec<ManagedFieldsEntry>| ObjectMeta { managed_fields: Some(entries), ..Default::default() };
        let ours = entry(FIELD_MANAGER, Some("status"), 100);
        assert_eq!(own_status_write(&meta(vec![entry("kubectl", None, 50), ours.clone()])), Some(&at(100)));
        // A status edited by hand (D54) after it, or in the same second: undone at once.
        assert_eq!(own_status_write(&meta(vec![ours.clone(), entry("kubectl-edit", Some("status"), 101)])), None);
        assert_eq!(own_status_write(&meta(vec![entry("kubectl-edit", Some("status"), 100), ours.clone()])), None);
        assert_eq!(own_status_write(&meta(vec![ours, entry("kubectl-edit", Some("status"), 100)])), None);
        // The operator's own writes of other parts (a spec's conversion) are not its status.
        assert_eq!(own_status_write(&meta(vec![entry(FIELD_MANAGER, None, 100)])), None);
        assert_eq!(own_status_write(&ObjectMeta::default()), None);
    }
}
