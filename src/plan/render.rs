//! `plan`'s text output: what will happen to each dogu, component and config key and why, the
//! conditions, what blocks progress, and the actions of this reconcile.

use std::fmt::Write;

use blueprint_machine::api::{
    BlueprintStatus, ComponentDiff, ComponentDiffState, ConfigEntryDiff, DoguDiff, DoguDiffState, StateDiff,
};
use blueprint_machine::conditions;
use blueprint_machine::decision::{ConfigValue, Decision, Operation, Requeue, State};

pub fn text(blueprint_name: &str, decision: &Decision) -> String {
    let mut out = String::new();
    let status = decision.status.as_ref();
    let generation = status.and_then(|s| s.observed_generation).unwrap_or_default();
    let _ = writeln!(out, "Blueprint {blueprint_name:?} (generation {generation}): {}", describe(decision.state));
    if let Some(diff) = status.and_then(|s| s.state_diff.as_ref()) {
        uninstalls(&mut out, diff);
        changes(&mut out, diff);
    }
    if let Some(status) = status {
        conditions_table(&mut out, status);
    }
    blocked(&mut out, decision);
    actions(&mut out, decision);
    events(&mut out, decision);
    let _ = writeln!(out, "\nNext: {}", requeue(&decision.requeue));
    out
}

fn describe(state: State) -> &'static str {
    match state {
        State::NoBlueprint => "no blueprint",
        State::MultipleBlueprints => "more than one Blueprint in the namespace; none is processed",
        State::Invalid => "invalid",
        State::ValidationPending => "validation pending (dogu descriptors unavailable)",
        State::NotExecutable => "not executable",
        State::Stopped => "stopped (dry run: nothing is applied)",
        State::RestoreInProgress => "paused: a restore is in progress",
        State::AwaitingHealth => "waiting for a healthy ecosystem",
        State::SelfUpgrading => "upgrading the operator itself",
        State::ApplyingConfig => "applying config",
        State::ApplyingComponents => "applying components",
        State::ApplyingDogus => "applying dogus",
        State::AwaitingDogus => "waiting for dogus to run the wanted version and config",
        State::Completed => "completed",
    }
}

/// Uninstalls first and loud: removing a dogu may remove its data volumes with it, and a component's
/// removal takes what it runs; a reader skimming a long plan must not miss one.
fn uninstalls(out: &mut String, diff: &StateDiff) {
    let uninstall = |actions: &[String]| actions.iter().any(|a| a == "uninstall");
    let dogus: Vec<&str> =
        diff.dogu_diffs.iter().filter(|(_, d)| uninstall(&d.needed_actions)).map(|(n, _)| n.as_str()).collect();
    let components: Vec<&str> =
        diff.component_diffs.iter().filter(|(_, c)| uninstall(&c.needed_actions)).map(|(n, _)| n.as_str()).collect();
    if !dogus.is_empty() {
        let _ = writeln!(
            out,
            "\n!!! UNINSTALL {} dogu(s): {}. Their data volumes may be deleted with them; back them up first.",
            dogus.len(),
            dogus.join(", ")
        );
    }
    if !components.is_empty() {
        let _ = writeln!(
            out,
            "\n!!! UNINSTALL {} component(s): {}. What they run is removed with them.",
            components.len(),
            components.join(", ")
        );
    }
}

fn changes(out: &mut String, diff: &StateDiff) {
    if diff.is_empty() {
        let _ = writeln!(out, "\nNo changes: the ecosystem matches the effective blueprint.");
        return;
    }
    if !diff.dogu_diffs.is_empty() {
        let _ = writeln!(out, "\nDogus:");
        for (name, d) in &diff.dogu_diffs {
            let _ = writeln!(out, "  {} {name:<24} {}", symbol(&d.needed_actions), dogu_line(d));
        }
    }
    if !diff.component_diffs.is_empty() {
        let _ = writeln!(out, "\nComponents:");
        for (name, c) in &diff.component_diffs {
            let _ = writeln!(out, "  {} {name:<24} {}", symbol(&c.needed_actions), component_line(c));
        }
    }
    if !diff.global_config_diff.is_empty() || !diff.dogu_config_diffs.is_empty() {
        let _ = writeln!(out, "\nConfig:");
        if !diff.global_config_diff.is_empty() {
            let _ = writeln!(out, "  global:");
            config_lines(out, &diff.global_config_diff, false);
        }
        for (dogu, d) in &diff.dogu_config_diffs {
            if !d.dogu_config_diff.is_empty() {
                let _ = writeln!(out, "  {dogu}:");
                config_lines(out, &d.dogu_config_diff, false);
            }
            if !d.sensitive_dogu_config_diff.is_empty() {
                let _ = writeln!(out, "  {dogu} (sensitive):");
                config_lines(out, &d.sensitive_dogu_config_diff, true);
            }
        }
    }
}

fn symbol(actions: &[String]) -> char {
    let has = |a: &str| actions.iter().any(|x| x == a);
    if has("downgrade") || has("component namespace switch") {
        '!'
    } else if has("install") {
        '+'
    } else if has("uninstall") {
        '-'
    } else {
        '~'
    }
}

fn version(state: &DoguDiffState) -> String {
    if state.absent {
        "absent".into()
    } else {
        format!("{}/{}", state.namespace, state.version.as_deref().unwrap_or("?"))
    }
}

fn dogu_line(d: &DoguDiff) -> String {
    let why = d.needed_actions.join(", ");
    let mut line = format!("{why}: {} → {}", version(&d.actual), version(&d.expected));
    // The storage class is chosen once, at install (it cannot change later).
    let class = d.expected.resource_config.as_ref().and_then(|r| r.storage_class_name.as_deref());
    if let (true, Some(class)) = (d.actual.absent && !d.expected.absent, class) {
        let _ = write!(line, "  (storage class {class:?})");
    }
    if d.needed_actions.iter().any(|a| a == "downgrade") {
        line.push_str("  (forbidden: downgrades are not allowed)");
    }
    line
}

fn component_version(state: &ComponentDiffState) -> String {
    if state.absent {
        "absent".into()
    } else {
        format!("{}/{}", state.distribution_namespace, state.version.as_deref().unwrap_or("?"))
    }
}

fn component_line(c: &ComponentDiff) -> String {
    let mut line = format!(
        "{}: {} → {}",
        c.needed_actions.join(", "),
        component_version(&c.actual),
        component_version(&c.expected)
    );
    if c.needed_actions.iter().any(|a| a == "update component package config")
        && let Some(config) = &c.expected.deploy_config
    {
        let _ = write!(line, "  deployConfig: {config}");
    }
    line
}

fn config_lines(out: &mut String, entries: &[ConfigEntryDiff], sensitive: bool) {
    for entry in entries {
        // A normal config value without a value shown came from a Secret (`secretRef` without `sensitive`).
        let shown = |state: &blueprint_machine::api::ConfigValueState, hidden: &str| match &state.value {
            Some(value) => format!("{value:?}"),
            None => hidden.to_owned(),
        };
        let line = match (entry.needed_action.as_str(), sensitive) {
            ("remove", true) => "remove".to_owned(),
            ("remove", false) => format!("remove (was {})", shown(&entry.actual, "a value from a Secret")),
            (_, true) if entry.actual.exists => "set to a new value from its Secret".to_owned(),
            (_, true) => "set from its Secret".to_owned(),
            (_, false) if entry.actual.exists => format!(
                "{} → {}",
                shown(&entry.actual, "(a value from a Secret)"),
                shown(&entry.expected, "(the value of its Secret)")
            ),
            (_, false) => format!("set {}", shown(&entry.expected, "from its Secret")),
        };
        let mark = if entry.needed_action == "remove" {
            '-'
        } else if entry.actual.exists {
            '~'
        } else {
            '+'
        };
        let _ = writeln!(out, "    {mark} {:<30} {line}", entry.key);
    }
}

fn conditions_table(out: &mut String, status: &BlueprintStatus) {
    let _ = writeln!(out, "\nConditions:");
    for c in &status.conditions {
        // The first line, and the next with it when the first introduces it ("ecosystem health:").
        let mut lines = c.message.lines();
        let mut message = lines.next().unwrap_or("").to_owned();
        if message.ends_with(':')
            && let Some(next) = lines.next()
        {
            message = format!("{message} {}", next.trim());
        }
        let more = if lines.next().is_some() { " …" } else { "" };
        // A condition this reconcile did not evaluate still describes an older generation.
        let stale = match (c.observed_generation, status.observed_generation) {
            (Some(seen), Some(now)) if seen != now => format!(" (from generation {seen})"),
            _ => String::new(),
        };
        let _ = writeln!(out, "  {:<22} {:<8} {:<24} {message}{more}{stale}", c.type_, c.status, c.reason);
    }
}

fn blocked(out: &mut String, decision: &Decision) {
    let Some(status) = &decision.status else {
        return;
    };
    let condition = |t: &str| status.conditions.iter().find(|c| c.type_ == t);
    let why = match decision.state {
        State::Invalid | State::ValidationPending => condition(conditions::VALID),
        State::NotExecutable => condition(conditions::EXECUTABLE),
        State::AwaitingHealth => condition(conditions::ECOSYSTEM_HEALTHY),
        State::SelfUpgrading => condition(conditions::SELF_UPGRADE_COMPLETED),
        State::AwaitingDogus => condition(conditions::COMPLETED),
        _ => None,
    };
    if let Some(c) = why.filter(|c| !c.message.is_empty()) {
        let _ = writeln!(out, "\nBlocked ({} {}):", c.type_, c.status);
        for line in c.message.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
}

fn actions(out: &mut String, decision: &Decision) {
    if decision.actions.is_empty() {
        let _ = writeln!(out, "\nActions: none in this reconcile.");
        return;
    }
    let _ = writeln!(out, "\nActions of this reconcile, in order:");
    for (i, action) in decision.actions.iter().enumerate() {
        let what = match &action.operation {
            Operation::CreateDogu { .. } | Operation::CreateComponent { .. } => "create",
            Operation::PatchDogu { .. } | Operation::PatchComponent { .. } => "patch",
            Operation::DeleteDogu { .. } | Operation::DeleteComponent { .. } => "delete",
            Operation::WriteConfig { .. } => "write",
        };
        let _ =
            writeln!(out, "  {:>2}. [{}] {what} {}: {}", i + 1, action.stage, action.operation.object(), action.reason);
        if let Operation::WriteConfig { set, remove, .. } = &action.operation {
            for s in set {
                let source = match &s.value {
                    ConfigValue::Value(v) => format!("{v:?}"),
                    ConfigValue::SecretRef(r) => format!("from Secret {}/{}", r.name, r.key),
                };
                let _ = writeln!(out, "        set {} = {source}", s.key);
            }
            for key in remove {
                let _ = writeln!(out, "        remove {key}");
            }
        }
    }
}

fn events(out: &mut String, decision: &Decision) {
    if decision.events.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nEvents:");
    for e in &decision.events {
        let mut lines = e.message.lines();
        let _ = writeln!(out, "  {:<8} {:<30} {}", format!("{:?}", e.type_), e.reason, lines.next().unwrap_or(""));
        for line in lines {
            let _ = writeln!(out, "  {:<8} {:<30} {line}", "", "");
        }
    }
}

fn requeue(requeue: &Requeue) -> String {
    match requeue {
        Requeue::AwaitChange => "reconcile again when something watched changes".into(),
        Requeue::After { after, reason } => {
            format!("reconcile again in {}s ({reason})", after.as_secs_f64())
        }
        Requeue::Backoff { reason } => format!("retry with backoff ({reason})"),
    }
}
