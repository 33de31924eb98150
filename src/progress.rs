//! What a Blueprint is doing, in sentences a person reads: where it stands (completed, blocked,
//! stopped, or what it waits for), what each dogu and component is busy with, its conditions and
//! events on one line each. Shared by `status` (a live cluster) and the sandbox's progress display, so
//! both say the same thing about the same objects. Pure: objects in, text out.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use serde::Serialize;

use blueprint_machine::api::{Blueprint, Component, Dogu};

/// Where a Blueprint stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "phase", content = "reason")]
pub enum Phase {
    /// `Completed=True` for the current generation.
    Completed,
    /// `Valid` or `Executable` is False: nothing changes without a new spec.
    Blocked(String),
    /// `spec.stopped`: computed and shown, nothing applied.
    Stopped,
    /// Being applied, or waiting for something; what, in words.
    InProgress(String),
}

impl Phase {
    /// `status`'s exit code, as `plan`'s: 0 done, 2 still changing, 1 cannot go on by itself.
    pub fn exit_code(&self) -> u8 {
        match self {
            Phase::Completed => 0,
            Phase::InProgress(_) => 2,
            Phase::Blocked(_) | Phase::Stopped => 1,
        }
    }
}

/// One event, as read from the cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventLine {
    /// The Event object's name: what tells two events apart (their notes may be the same).
    #[serde(skip)]
    pub name: String,
    /// RFC 3339, as the API server gave it (may be empty).
    pub time: String,
    /// The Blueprint's generation the event is about (the operator's label); `None` for events of
    /// operators that did not label them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    #[serde(rename = "type")]
    pub type_: String,
    pub reason: String,
    pub note: String,
}

impl EventLine {
    /// An `events.k8s.io/v1` Event as JSON (the sandbox reads untyped objects).
    pub fn from_json(event: &serde_json::Value) -> Self {
        let text = |pointer: &str| event.pointer(pointer).and_then(serde_json::Value::as_str).unwrap_or_default();
        let time = [text("/series/lastObservedTime"), text("/eventTime"), text("/metadata/creationTimestamp")]
            .into_iter()
            .find(|t| !t.is_empty())
            .unwrap_or_default();
        let generation = event
            .pointer("/metadata/labels")
            .and_then(|labels| labels.get(crate::publish::GENERATION_LABEL))
            .and_then(serde_json::Value::as_str)
            .and_then(|g| g.parse().ok());
        EventLine {
            name: text("/metadata/name").into(),
            time: time.to_owned(),
            generation,
            type_: text("/type").into(),
            reason: text("/reason").into(),
            note: text("/note").into(),
        }
    }
}

/// The events about Blueprint `name` (not the namespace's others: a Service's `ClusterIPNotAllocated`
/// is no news about a Blueprint), oldest first.
pub fn blueprint_events<'e>(events: impl IntoIterator<Item = &'e serde_json::Value>, name: &str) -> Vec<EventLine> {
    let about = |event: &serde_json::Value| {
        let regarding = &event["regarding"];
        regarding["kind"] == "Blueprint" && regarding["name"] == name
    };
    let mut lines: Vec<EventLine> = events.into_iter().filter(|e| about(e)).map(EventLine::from_json).collect();
    lines.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.name.cmp(&b.name)));
    lines
}

/// Of `events`, those about `generation` (and those whose generation is not known).
pub fn of_generation(events: Vec<EventLine>, generation: i64) -> Vec<EventLine> {
    events.into_iter().filter(|e| e.generation.is_none_or(|g| g == generation)).collect()
}

pub fn condition<'b>(blueprint: &'b Blueprint, type_: &str) -> Option<&'b Condition> {
    blueprint.status.as_ref()?.conditions.iter().find(|c| c.type_ == type_)
}

/// The status describes the Blueprint's current generation.
fn observed(blueprint: &Blueprint) -> bool {
    blueprint.status.as_ref().is_some_and(|s| s.observed_generation == blueprint.metadata.generation)
}

pub fn phase(blueprint: &Blueprint) -> Phase {
    let current = observed(blueprint);
    if current && condition(blueprint, "Completed").is_some_and(|c| c.status == "True") {
        return Phase::Completed;
    }
    if blueprint.spec.spec.as_ref().and_then(|s| s.stopped) == Some(true) {
        return Phase::Stopped;
    }
    if current {
        // A restore pauses the Blueprint; its end resumes it (no new spec needed).
        if let Some(c) = condition(blueprint, "Executable").filter(|c| c.reason == "RestoreInProgress") {
            return Phase::InProgress(format!("paused: {}", one_line(&c.message)));
        }
        for type_ in ["Valid", "Executable"] {
            if let Some(c) = condition(blueprint, type_).filter(|c| c.status == "False") {
                return Phase::Blocked(format!("{type_}=False ({}): {}", c.reason, one_line(&c.message)));
            }
        }
    }
    Phase::InProgress(describe(blueprint))
}

/// What an unfinished Blueprint waits for, from its conditions.
fn describe(blueprint: &Blueprint) -> String {
    if !observed(blueprint) {
        return "waiting for the operator to reconcile this generation".into();
    }
    let pending = |t: &str| condition(blueprint, t).filter(|c| c.status == "False");
    if let Some(c) = pending("EcosystemHealthy") {
        // The first line is a heading ("ecosystem health:").
        let details = c.message.split_once('\n').map(|(_, rest)| rest).unwrap_or(&c.message);
        return format!("waiting for a healthy ecosystem ({})", one_line(details));
    }
    if let Some(c) = pending("SelfUpgradeCompleted") {
        return format!("waiting for the operator's self-upgrade: {}", one_line(&c.message));
    }
    match condition(blueprint, "Completed").filter(|c| c.status != "True") {
        Some(c) if !c.message.is_empty() => format!("applying: {}", one_line(&c.message)),
        _ => "reconciling".into(),
    }
}

/// The one-line sentence of a phase.
pub fn sentence(phase: &Phase) -> String {
    match phase {
        Phase::Completed => "completed: every dogu and component runs what the blueprint wants".into(),
        Phase::Blocked(reason) => format!("blocked: {reason}"),
        Phase::Stopped => "stopped (spec.stopped): nothing is applied until spec.stopped is removed".into(),
        Phase::InProgress(what) => what.clone(),
    }
}

/// What each dogu and component is busy with (installing, upgrading, restarting, unhealthy), named
/// per object; those at rest are left out.
pub fn busy(dogus: &[Dogu], components: &[Component]) -> Vec<String> {
    let dogus = dogus.iter().map(|d| {
        let status = d.status.as_ref().map(|s| Reported {
            doing: s.status.as_deref().unwrap_or(""),
            health: s.health.as_deref().unwrap_or(""),
            stopped: s.stopped == Some(true),
        });
        work("dogu", d.metadata.name.as_deref(), &d.spec.version, status)
    });
    let components = components.iter().map(|c| {
        let status = c.status.as_ref().map(|s| Reported {
            doing: s.status.as_deref().unwrap_or(""),
            health: s.health.as_deref().unwrap_or(""),
            stopped: false,
        });
        work("component", c.metadata.name.as_deref(), &c.spec.version, status)
    });
    dogus.chain(components).flatten().collect()
}

/// What a dogu's or component's operator reports in its status.
struct Reported<'s> {
    doing: &'s str,
    health: &'s str,
    stopped: bool,
}

/// The line for one dogu or component (`kind`), if it is at work; `None` without a status means its
/// operator has not picked it up yet.
fn work(kind: &str, name: Option<&str>, wanted: &str, status: Option<Reported<'_>>) -> Option<String> {
    let name = name.unwrap_or("?");
    let Some(Reported { doing, health, stopped }) = status else {
        return Some(format!("{kind} {name}: waiting for the {kind} operator ({wanted})"));
    };
    match doing {
        "installing" => Some(format!("{kind} {name}: installing {wanted}")),
        "upgrading" => Some(format!("{kind} {name}: upgrading to {wanted}")),
        "deleting" => Some(format!("{kind} {name}: being removed")),
        _ if stopped => Some(format!("{kind} {name}: stopped")),
        "installed" | "" if health != "available" => {
            let how = if health.is_empty() { "not healthy yet" } else { "unhealthy" };
            Some(format!("{kind} {name}: {how} {wanted}"))
        }
        "installed" | "" => None,
        other => Some(format!("{kind} {name}: {other}")),
    }
}

/// A condition on one line: `Type=Status (Reason): message`.
pub fn condition_line(condition: &Condition) -> String {
    let message = one_line(&condition.message);
    let message = if message.is_empty() { String::new() } else { format!(": {message}") };
    format!("{}={} ({}){message}", condition.type_, condition.status, condition.reason)
}

/// An event on one line: `Type Reason: note`.
pub fn event_line(event: &EventLine) -> String {
    format!("{} {}: {}", event.type_, event.reason, one_line(&event.note))
}

/// A message on one line (conditions may span lines, a terminal line may not): the machine's rule for
/// event messages.
pub use blueprint_machine::events::one_line;

/// What changed since the last look, as lines to print: conditions that changed, new events, dogus and
/// components that started or finished work. Used by `status --watch` and the sandbox.
#[derive(Debug, Default)]
pub struct Changes {
    conditions: BTreeMap<String, (String, String, String)>,
    /// The events shown (or skipped) already, by name.
    events_seen: BTreeSet<String>,
    busy: BTreeSet<String>,
}

impl Changes {
    /// These events are not news (a watch that starts late shows only the recent ones).
    pub fn skip_events(&mut self, events: &[EventLine]) {
        self.events_seen.extend(events.iter().map(|e| e.name.clone()));
    }

    pub fn lines(&mut self, blueprint: Option<&Blueprint>, busy: &[String], events: &[EventLine]) -> Vec<String> {
        let mut lines = Vec::new();
        for condition in blueprint.and_then(|b| b.status.as_ref()).map(|s| s.conditions.as_slice()).unwrap_or_default()
        {
            let now = (condition.status.clone(), condition.reason.clone(), condition.message.clone());
            if self.conditions.get(&condition.type_) != Some(&now) {
                lines.push(condition_line(condition));
                self.conditions.insert(condition.type_.clone(), now);
            }
        }
        let now: BTreeSet<String> = busy.iter().cloned().collect();
        for started in now.difference(&self.busy) {
            lines.push(started.clone());
        }
        for finished in self.busy.difference(&now) {
            // "dogu redmine: installing 5.1.8-1" → "dogu redmine: done"
            let subject = finished.split_once(": ").map(|(s, _)| s).unwrap_or(finished);
            if !now.iter().any(|line| line.starts_with(&format!("{subject}: "))) {
                lines.push(format!("{subject}: done"));
            }
        }
        self.busy = now;
        for event in events {
            if self.events_seen.insert(event.name.clone()) {
                lines.push(format!("event {}", event_line(event)));
            }
        }
        lines
    }
}

/// The whole view of `status NAME`.
pub fn render(blueprint: &Blueprint, dogus: &[Dogu], components: &[Component], events: &[EventLine]) -> String {
    let mut out = String::new();
    let name = blueprint.metadata.name.as_deref().unwrap_or("?");
    let generation = blueprint.metadata.generation.unwrap_or_default();
    let observed = blueprint.status.as_ref().and_then(|s| s.observed_generation);
    let _ = writeln!(out, "Blueprint {name:?} (generation {generation}): {}", sentence(&phase(blueprint)));
    if observed != Some(generation) {
        let seen = observed.map(|g| format!("generation {g}")).unwrap_or_else(|| "no generation".into());
        let _ = writeln!(out, "  the operator has reconciled {seen} so far");
    }
    let busy = busy(dogus, components);
    if !busy.is_empty() {
        let _ = writeln!(out, "\nWaiting for:");
        for line in &busy {
            let _ = writeln!(out, "  {line}");
        }
    }
    if let Some(status) = &blueprint.status {
        let _ = writeln!(out, "\nConditions:");
        let width = status.conditions.iter().map(|c| c.type_.len()).max().unwrap_or(0);
        for c in &status.conditions {
            let message = one_line(&c.message);
            let _ = writeln!(out, "  {:width$}  {:7}  {:24} {message}", c.type_, c.status, c.reason);
        }
    }
    if !events.is_empty() {
        let _ = writeln!(out, "\nRecent events:");
        for event in events {
            let time = if event.time.is_empty() { String::new() } else { format!("{}  ", event.time) };
            let _ = writeln!(out, "  {time}{}", event_line(event));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use blueprint_machine::fixtures::{blueprint, component_cr, dogu_cr};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn with_conditions(mut b: Blueprint, conditions: &[(&str, &str, &str, &str)]) -> Blueprint {
        b.metadata.generation = Some(2);
        b.status = Some(std::sync::Arc::new(blueprint_machine::api::BlueprintStatus {
            observed_generation: Some(2),
            conditions: conditions
                .iter()
                .map(|(t, s, r, m)| Condition {
                    type_: (*t).into(),
                    status: (*s).into(),
                    reason: (*r).into(),
                    message: (*m).into(),
                    observed_generation: Some(2),
                    last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
                })
                .collect(),
            ..Default::default()
        }));
        b
    }

    const SPEC: &str = "{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 3.2.1-1}]}}";

    #[test]
    fn phases_follow_the_conditions_of_the_current_generation() {
        let done = with_conditions(blueprint(SPEC), &[("Completed", "True", "Completed", "")]);
        assert_eq!(phase(&done), Phase::Completed);
        let mut old = done.clone();
        old.metadata.generation = Some(3);
        assert_eq!(phase(&old), Phase::InProgress("waiting for the operator to reconcile this generation".into()));
        let blocked = with_conditions(
            blueprint(SPEC),
            &[
                ("Valid", "True", "Valid", ""),
                ("Executable", "False", "ForbiddenOperations", "cas: action \"downgrade\" is not allowed\nmore"),
            ],
        );
        assert_eq!(
            phase(&blocked),
            Phase::Blocked(
                "Executable=False (ForbiddenOperations): cas: action \"downgrade\" is not allowed; more".into()
            )
        );
        assert_eq!(phase(&blocked).exit_code(), 1);
        let unhealthy = with_conditions(
            blueprint(SPEC),
            &[("EcosystemHealthy", "False", "Unhealthy", "ecosystem health:\n  1 dogu(s) are unhealthy: cas\n")],
        );
        assert_eq!(
            phase(&unhealthy),
            Phase::InProgress("waiting for a healthy ecosystem (1 dogu(s) are unhealthy: cas)".into())
        );
        assert_eq!(phase(&unhealthy).exit_code(), 2);
    }

    #[test]
    fn a_restore_pauses_and_is_not_blocked() {
        let paused = with_conditions(
            blueprint(SPEC),
            &[(
                "Executable",
                "False",
                "RestoreInProgress",
                "a restore is in progress (nightly): nothing is applied until it has ended",
            )],
        );
        assert_eq!(
            phase(&paused),
            Phase::InProgress(
                "paused: a restore is in progress (nightly): nothing is applied until it has ended".into()
            )
        );
        assert_eq!(phase(&paused).exit_code(), 2, "status --watch goes on waiting");
    }

    /// The finding: a stopped Blueprint was shown as "reconciling" until the sandbox timed out.
    #[test]
    fn a_stopped_blueprint_says_it_is_stopped() {
        let mut stopped = with_conditions(blueprint(SPEC), &[("Completed", "Unknown", "NotEvaluated", "")]);
        std::sync::Arc::make_mut(stopped.spec.spec.as_mut().unwrap()).stopped = Some(true);
        assert_eq!(phase(&stopped), Phase::Stopped);
        assert!(sentence(&phase(&stopped)).starts_with("stopped (spec.stopped)"));
    }

    #[test]
    fn busy_names_each_dogu_and_component_at_work() {
        let mut installing = dogu_cr("official/redmine", "5.1.8-1");
        installing.status =
            Some(blueprint_machine::api::DoguStatus { status: Some("installing".into()), ..Default::default() });
        let mut unhealthy = dogu_cr("official/cas", "7.1.5-2");
        unhealthy.status = Some(blueprint_machine::api::DoguStatus {
            status: Some("installed".into()),
            health: Some("unavailable".into()),
            ..Default::default()
        });
        let mut fine = dogu_cr("official/ldap", "2.6.8-3");
        fine.status = Some(blueprint_machine::api::DoguStatus {
            status: Some("installed".into()),
            health: Some("available".into()),
            ..Default::default()
        });
        let mut upgrading = component_cr("k8s/k8s-longhorn", "1.7.1-2");
        upgrading.status =
            Some(blueprint_machine::api::ComponentStatus { status: Some("upgrading".into()), ..Default::default() });
        assert_eq!(
            busy(&[installing, unhealthy, fine], &[upgrading]),
            [
                "dogu redmine: installing 5.1.8-1",
                "dogu cas: unhealthy 7.1.5-2",
                "component k8s-longhorn: upgrading to 1.7.1-2"
            ]
        );
    }

    #[test]
    fn changes_print_what_is_new_once() {
        let mut changes = Changes::default();
        let b = with_conditions(blueprint(SPEC), &[("Completed", "False", "StateDiffHasChanges", "applying")]);
        let event = EventLine {
            name: "e1".into(),
            time: String::new(),
            generation: None,
            type_: "Normal".into(),
            reason: "X".into(),
            note: "y".into(),
        };
        let busy = vec!["dogu redmine: installing 5.1.8-1".to_owned()];
        let first = changes.lines(Some(&b), &busy, std::slice::from_ref(&event));
        assert_eq!(
            first,
            [
                "Completed=False (StateDiffHasChanges): applying",
                "dogu redmine: installing 5.1.8-1",
                "event Normal X: y"
            ]
        );
        assert!(changes.lines(Some(&b), &busy, std::slice::from_ref(&event)).is_empty(), "nothing new");
        let done = with_conditions(blueprint(SPEC), &[("Completed", "True", "Completed", "")]);
        assert_eq!(
            changes.lines(Some(&done), &[], std::slice::from_ref(&event)),
            ["Completed=True (Completed)", "dogu redmine: done"]
        );
    }

    /// The finding: the sandbox on a real API server printed a Service's `ClusterIPNotAllocated`.
    #[test]
    fn only_the_blueprints_events_of_its_generation_are_shown() {
        let event = |name: &str, kind: &str, regarding: &str, generation: Option<&str>| {
            let labels = generation.map(|g| serde_json::json!({crate::publish::GENERATION_LABEL: g}));
            serde_json::json!({
                "metadata": {"name": name, "labels": labels},
                "eventTime": format!("2026-12-04T10:00:0{}Z", name.len()),
                "regarding": {"kind": kind, "name": regarding},
                "type": "Normal", "reason": "R", "note": name,
            })
        };
        let events = [
            event("a", "Service", "kubernetes", None),
            event("bb", "Blueprint", "blueprint-ces", Some("1")),
            event("ccc", "Blueprint", "other", Some("2")),
            event("dddd", "Blueprint", "blueprint-ces", Some("2")),
            event("eeeee", "Blueprint", "blueprint-ces", None),
        ];
        let about = blueprint_events(&events, "blueprint-ces");
        assert_eq!(about.iter().map(|e| e.note.as_str()).collect::<Vec<_>>(), ["bb", "dddd", "eeeee"]);
        let current = of_generation(about, 2);
        assert_eq!(current.iter().map(|e| e.note.as_str()).collect::<Vec<_>>(), ["dddd", "eeeee"]);
        assert_eq!(current[0].generation, Some(2));
    }

    #[test]
    fn every_line_of_the_view_is_one_line_per_item() {
        let b = with_conditions(blueprint(SPEC), &[("Completed", "False", "StateDiffHasChanges", "a\nb")]);
        let event = EventLine {
            name: "e1".into(),
            time: String::new(),
            generation: None,
            type_: "Normal".into(),
            reason: "StateDiffDetermined".into(),
            note: "state diff determined:\n  1 dogu action".into(),
        };
        let text = render(&b, &[], &[], &[event]);
        assert!(text.contains("\n  Completed  False    StateDiffHasChanges      a; b\n"), "{text}");
        assert!(text.contains("\n  Normal StateDiffDetermined: state diff determined: 1 dogu action\n"), "{text}");
    }
}
