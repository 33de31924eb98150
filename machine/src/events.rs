//! Event reasons and messages. Events are for humans; the machine emits each one once per transition
//! or applied stage, never once per reconcile.

use std::collections::BTreeMap;

use crate::decision::{Event, EventType, Stage};
use crate::diff::Diff;

pub mod reason {
    pub const BLUEPRINT_SPEC_INVALID: &str = "BlueprintSpecInvalid";
    pub const MISSING_CONFIG_REFERENCES: &str = "MissingConfigReferences";
    pub const INVALID_CLUSTER_STATE: &str = "InvalidClusterState";
    pub const MULTIPLE_BLUEPRINTS: &str = "MultipleBlueprints";
    pub const STATE_DIFF_DETERMINED: &str = "StateDiffDetermined";
    pub const STATE_DIFF_COMPONENT_DETERMINED: &str = "StateDiffComponentDetermined";
    pub const ECOSYSTEM_HEALTHY: &str = "EcosystemHealthy";
    pub const ECOSYSTEM_UNHEALTHY: &str = "EcosystemUnhealthy";
    pub const ECOSYSTEM_CONFIG_APPLIED: &str = "EcosystemConfigApplied";
    pub const COMPONENTS_APPLIED: &str = "ComponentsApplied";
    pub const DOGUS_APPLIED: &str = "DogusApplied";
    pub const DOGUS_NOT_UP_TO_DATE: &str = "DogusNotUpToDate";
    pub const EXECUTION_FAILED: &str = "ExecutionFailed";
    pub const BLUEPRINT_STOPPED: &str = "BlueprintStopped";
    pub const REVERSE_PROXY_IGNORED: &str = "ReverseProxyIgnored";
    pub const RESTORE_IN_PROGRESS: &str = "RestoreInProgress";
    pub const AWAIT_SELF_UPGRADE: &str = "AwaitSelfUpgrade";
    pub const SELF_UPGRADE_COMPLETED: &str = "SelfUpgradeCompleted";
    pub const COMPLETED: &str = "Completed";
    /// Ours: a reconcile asked for by hand was handled (D56).
    pub const RECONCILE_REQUESTED: &str = "ReconcileRequested";
}

pub const STOPPED_MESSAGE: &str = "Blueprint is set as stopped and will not be applied. Remove flag to continue";
pub const AWAIT_SELF_UPGRADE_MESSAGE: &str =
    "the operator awaits an upgrade for itself before other changes will be applied";
pub const SELF_UPGRADE_COMPLETED_MESSAGE: &str = "if a self upgrade was necessary, it was successful";
pub const COMPLETED_MESSAGE: &str = "Blueprint was applied: all dogus run the wanted version and configuration";
pub const CONFIG_APPLIED_MESSAGE: &str = "ecosystem config applied";

pub fn normal(reason: &str, message: impl Into<String>) -> Event {
    Event { type_: EventType::Normal, reason: reason.to_owned(), message: one_line(&message.into()), stage: None }
}

pub fn warning(reason: &str, message: impl Into<String>) -> Event {
    Event { type_: EventType::Warning, reason: reason.to_owned(), message: one_line(&message.into()), stage: None }
}

/// A message on one line (docs/differences.md D47): its lines trimmed and joined with "; ", or with a
/// space after a line that ends in a colon (it introduces the next). Events are shown in tables
/// (`kubectl describe`, `kubectl get events`), where a second line breaks the row.
pub fn one_line(text: &str) -> String {
    if !text.contains('\n') {
        return text.trim().to_owned();
    }
    let mut out = String::with_capacity(text.len());
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if !out.is_empty() {
            out.push_str(if out.ends_with(':') { " " } else { "; " });
        }
        out.push_str(line);
    }
    out
}

/// An event that reports the actions of a stage; published only if they were all performed.
pub fn applied(stage: Stage, reason: &str, message: impl Into<String>) -> Event {
    Event { stage: Some(stage), ..normal(reason, message) }
}

/// `"set": 2, "remove": 1` in the order of the action strings.
fn counts<'a>(actions: impl Iterator<Item = &'a str>) -> (usize, String) {
    let mut map: BTreeMap<&str, usize> = BTreeMap::new();
    for action in actions {
        *map.entry(action).or_default() += 1;
    }
    let total = map.values().sum();
    let text = map.iter().map(|(a, n)| format!("\"{a}\": {n}")).collect::<Vec<_>>().join(", ");
    (total, text)
}

pub fn state_diff_message(diff: &Diff<'_>) -> String {
    let config_actions = diff
        .global
        .iter()
        .map(|c| c.action.as_str())
        .chain(diff.dogu_config.values().flatten().map(|c| c.action.as_str()))
        .chain(diff.sensitive_config.values().flatten().map(|c| c.action.as_str()));
    let (config_total, config_counts) = counts(config_actions);
    let (dogu_total, dogu_counts) = counts(diff.dogus.iter().flat_map(|d| d.actions.iter().map(|a| a.as_str())));
    format!(
        "state diff determined:\n  {config_total} config changes ({config_counts})\n  {dogu_total} dogu actions ({dogu_counts})"
    )
}

pub fn component_diff_message(diff: &Diff<'_>) -> String {
    let (total, text) = counts(diff.components.iter().flat_map(|c| c.actions.iter().map(|a| a.as_str())));
    format!("component state diff determined: {total} actions ({text})")
}

/// `"name": [a, b], "other": [c]`
pub fn applied_list<'a, A: std::fmt::Display + 'a>(entries: impl Iterator<Item = (&'a str, &'a [A])>) -> String {
    entries
        .map(|(name, actions)| {
            let actions: Vec<String> = actions.iter().map(|a| a.to_string()).collect();
            format!("\"{name}\": [{}]", actions.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn not_up_to_date_message(dogus: &[String]) -> String {
    format!("{} dogu(s) not up to date yet: {}", dogus.len(), dogus.join(", "))
}
