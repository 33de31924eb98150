//! The stages, in upstream's order: the operator's own upgrade, configuration (with dogus paused that
//! must not restart before their upgrade), components, dogus, then the completion check. A stage that
//! makes the next one need a fresh observation ends the reconcile there: after the operator's own
//! component, and after components, health is checked again before dogus are touched.

use std::collections::BTreeSet;

use crate::conditions::{self, Status, reason};
use crate::decision::{Action, ConfigSet, ConfigTarget, ConfigValue, Operation, Requeue, Stage, State};
use crate::diff::{ComponentAction, ComponentChange, ConfigAction, ConfigChange, Diff, DoguAction, SensitiveChange};
use crate::events::{self, reason as event};
use crate::health::Health;
use crate::model::{ComponentVersion, DoguPairs, Flags, Installed};
use crate::objects;
use crate::observation::{ObjectBase, Observation};
use crate::up_to_date;
use crate::validation::EffectiveBlueprint;

use super::Run;
use super::event_log::Topic;
use super::findings::own_component_name;
use super::gates::{End, waiting_for};

impl Run<'_> {
    /// Applies the stages the reconcile may run now; ends where the next needs a fresh observation.
    /// (`health`: what the health check before the apply found.)
    pub(super) fn apply(
        &mut self,
        diff: &Diff<'_>,
        effective: &EffectiveBlueprint<'_>,
        pairs: &DoguPairs<'_>,
        health: &Health,
        flags: Flags,
    ) -> End {
        let installed = pairs.installed();
        let namespace = &self.observation.operator.namespace;
        let own_component = own_component_name(&self.observation.operator.component);

        // The operator's own upgrade: nothing else is applied until it runs the wanted version.
        match self_upgrade(effective, diff, installed, self.observation, &own_component) {
            SelfUpgrade::Done => {
                self.conditions.set(conditions::SELF_UPGRADE_COMPLETED, Status::True, reason::COMPLETED, "");
            }
            SelfUpgrade::Apply(change) => {
                self.conditions.set(conditions::SELF_UPGRADE_COMPLETED, Status::False, reason::AWAIT_SELF_UPGRADE, "");
                self.actions.push(component_action(Stage::SelfUpgrade, change, namespace));
                return (State::SelfUpgrading, Requeue::after(5, "await self upgrade"));
            }
            SelfUpgrade::Waiting(why) => {
                self.conditions.set(conditions::SELF_UPGRADE_COMPLETED, Status::False, reason::AWAIT_SELF_UPGRADE, why);
                return (State::SelfUpgrading, Requeue::after(5, "await self upgrade"));
            }
        }

        let paused_now = self.config_stage(diff, installed);
        let config_applied = !self.actions.is_empty();

        // Components; dogus wait for a fresh health check after component changes.
        let component_changes: Vec<&ComponentChange<'_>> =
            diff.components.iter().filter(|c| c.name() != own_component).collect();
        if !component_changes.is_empty() {
            for change in &component_changes {
                self.actions.push(component_action(Stage::Components, change, namespace));
            }
            let applied = events::applied_list(component_changes.iter().map(|c| (c.name(), c.actions.as_slice())));
            self.events.log(
                Topic::Applied,
                events::applied(Stage::Components, event::COMPONENTS_APPLIED, format!("components applied: {applied}")),
            );
            let created = component_changes.iter().filter(|c| c.actions.contains(&ComponentAction::Install));
            self.record_created(health, flags, Vec::new(), created.map(|c| c.name().to_owned()).collect());
            return (State::ApplyingComponents, Requeue::after(1, "components applied; check health before dogus"));
        }

        if self.dogu_stage(diff, pairs, &paused_now) > 0 {
            let created = diff.dogus.iter().filter(|d| d.has(DoguAction::Install));
            self.record_created(health, flags, created.map(|d| d.name().to_owned()).collect(), Vec::new());
            return (State::ApplyingDogus, Requeue::after(1, "dogus applied; re-evaluate"));
        }
        if config_applied {
            return (State::ApplyingConfig, Requeue::after(1, "config applied; re-evaluate"));
        }
        self.completion(pairs)
    }

    /// Nothing left to apply: completed once every wanted dogu runs what the blueprint wants.
    fn completion(&mut self, pairs: &DoguPairs<'_>) -> End {
        let stale = up_to_date::stale_dogus(pairs, self.observation);
        if !stale.is_empty() {
            let changed = self.conditions.set(
                conditions::COMPLETED,
                Status::False,
                reason::STATE_DIFF_HAS_CHANGES,
                waiting_for(&stale),
            );
            if changed {
                let message = events::not_up_to_date_message(&stale);
                self.events.log(Topic::Waiting, events::normal(event::DOGUS_NOT_UP_TO_DATE, message));
            }
            return (State::AwaitingDogus, Requeue::after(10, "dogus are not up to date yet"));
        }
        self.conditions.set(conditions::COMPLETED, Status::True, reason::COMPLETED, "");
        self.conditions.set(conditions::LAST_APPLY_SUCCEEDED, Status::True, reason::APPLY_SUCCEEDED, "");
        (State::Completed, Requeue::AwaitChange)
    }

    /// Pause patches, then normal dogu config, sensitive dogu config and global config writes.
    /// Returns the dogus paused by this decision.
    fn config_stage(&mut self, diff: &Diff<'_>, installed: &Installed<'_>) -> BTreeSet<String> {
        let observation = self.observation;
        let mut paused_now = BTreeSet::new();
        for change in diff.dogus.iter().filter(|c| c.has(DoguAction::Upgrade)) {
            let name = change.name();
            let already_paused = installed.dogus.get(name).is_some_and(|d| d.paused);
            if diff.config_changes_for(name) && !already_paused {
                paused_now.insert(name.to_owned());
                self.actions.push(Action {
                    stage: Stage::Config,
                    reason: "pause reconciliation: its config changes before its upgrade".into(),
                    operation: Operation::PatchDogu { name: name.to_owned(), patch: objects::pause_patch(true) },
                });
            }
        }
        let before = self.actions.len();
        for (dogu, changes) in &diff.dogu_config {
            let store = observation.dogu_config(dogu);
            self.actions.push(value_write(ConfigTarget::Dogu(dogu.clone()), store.base(), changes));
        }
        for (dogu, changes) in &diff.sensitive_config {
            let store = observation.sensitive_config(dogu);
            self.actions.push(sensitive_write(dogu, store.base(), changes));
        }
        if !diff.global.is_empty() {
            self.actions.push(value_write(ConfigTarget::Global, observation.global_config.base(), &diff.global));
        }
        if self.actions.len() > before {
            self.events.log(
                Topic::Applied,
                events::applied(Stage::Config, event::ECOSYSTEM_CONFIG_APPLIED, events::CONFIG_APPLIED_MESSAGE),
            );
        }
        paused_now
    }

    /// Creates, patches and deletes Dogu CRs; resumes managed dogus that are paused without a pending
    /// upgrade. Returns the number of actions added.
    fn dogu_stage(&mut self, diff: &Diff<'_>, pairs: &DoguPairs<'_>, paused_now: &BTreeSet<String>) -> usize {
        let namespace = &self.observation.operator.namespace;
        let before = self.actions.len();
        for change in &diff.dogus {
            let name = change.name().to_owned();
            let reason = change.actions.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(", ");
            let operation = if change.has(DoguAction::Install) {
                Operation::CreateDogu { object: Box::new(objects::dogu_object(change.target, namespace, diff.gateway)) }
            } else if change.has(DoguAction::Uninstall) {
                Operation::DeleteDogu { name }
            } else {
                let unpause = change.installed.is_some_and(|d| d.paused) || paused_now.contains(&name);
                Operation::PatchDogu { name, patch: objects::dogu_patch(change, unpause) }
            };
            self.actions.push(Action { stage: Stage::Dogus, reason, operation });
        }
        if !diff.dogus.is_empty() {
            let applied = events::applied_list(diff.dogus.iter().map(|d| (d.name(), d.actions.as_slice())));
            self.events.log(
                Topic::Applied,
                events::applied(Stage::Dogus, event::DOGUS_APPLIED, format!("dogus applied: {applied}")),
            );
        }
        for name in paused_without_change(diff, pairs) {
            self.actions.push(Action {
                stage: Stage::Dogus,
                reason: "resume reconciliation: no upgrade is pending".into(),
                operation: Operation::PatchDogu { name: name.to_owned(), patch: objects::pause_patch(false) },
            });
        }
        // Deterministic order within the stage: by object name.
        self.actions[before..].sort_by_key(|a| a.operation.object());
        self.actions.len() - before
    }
}

/// The wanted dogus found paused that no change of this diff touches: the dogu stage resumes them
/// (a pause left by a crash between the pause and the upgrade, by an upgrade no longer wanted, or by
/// whoever paused a dogu before the blueprint took it over).
pub(super) fn paused_without_change<'p>(diff: &Diff<'_>, pairs: &'p DoguPairs<'_>) -> impl Iterator<Item = &'p str> {
    pairs
        .wanted()
        .filter(|(_, dogu)| dogu.is_some_and(|d| d.paused))
        .map(|(target, _)| target.name.simple.as_str())
        .filter(move |name| diff.dogu(name).is_none())
}

fn write_reason(set: usize, remove: usize) -> String {
    match (set, remove) {
        (s, 0) => format!("set {s} key(s)"),
        (0, r) => format!("remove {r} key(s)"),
        (s, r) => format!("set {s} key(s), remove {r} key(s)"),
    }
}

fn removed<'c>(changes: impl Iterator<Item = (&'c String, ConfigAction)>) -> Vec<String> {
    changes.filter(|(_, action)| *action == ConfigAction::Remove).map(|(key, _)| key.clone()).collect()
}

/// Values from Secrets (`secretRef` without `sensitive`) are set at execution, as sensitive ones are.
fn value_write(target: ConfigTarget, base: ObjectBase, changes: &[ConfigChange]) -> Action {
    let set: Vec<ConfigSet> = changes
        .iter()
        .filter(|c| c.action == ConfigAction::Set)
        .map(|c| {
            let value = match (&c.source, &c.expected) {
                (Some(source), _) => ConfigValue::SecretRef(source.clone()),
                (None, expected) => {
                    ConfigValue::Value(expected.as_ref().and_then(|v| v.shown()).unwrap_or_default().to_owned())
                }
            };
            ConfigSet { key: c.key.clone(), value }
        })
        .collect();
    let remove = removed(changes.iter().map(|c| (&c.key, c.action)));
    Action {
        stage: Stage::Config,
        reason: write_reason(set.len(), remove.len()),
        operation: Operation::WriteConfig { target, base, set, remove },
    }
}

/// Sensitive values are set from their Secret at execution: the decision names the Secret key only.
fn sensitive_write(dogu: &str, base: ObjectBase, changes: &[SensitiveChange]) -> Action {
    let set: Vec<ConfigSet> = changes
        .iter()
        .filter(|c| c.action == ConfigAction::Set)
        .filter_map(|c| {
            c.source.clone().map(|source| ConfigSet { key: c.key.clone(), value: ConfigValue::SecretRef(source) })
        })
        .collect();
    let remove = removed(changes.iter().map(|c| (&c.key, c.action)));
    Action {
        stage: Stage::Config,
        reason: write_reason(set.len(), remove.len()),
        operation: Operation::WriteConfig { target: ConfigTarget::Sensitive(dogu.to_owned()), base, set, remove },
    }
}

fn component_action(stage: Stage, change: &ComponentChange<'_>, namespace: &str) -> Action {
    let name = change.name().to_owned();
    let reason = change.actions.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(", ");
    let operation = if change.actions.contains(&ComponentAction::Install) {
        let config = change.expected_deploy_config();
        Operation::CreateComponent { object: Box::new(objects::component_object(change.target, &config, namespace)) }
    } else if change.actions.contains(&ComponentAction::Uninstall) {
        Operation::DeleteComponent { name }
    } else {
        Operation::PatchComponent { name, patch: objects::component_patch(change) }
    };
    Action { stage, reason, operation }
}

enum SelfUpgrade<'d, 'a> {
    /// Not in the blueprint, or running the wanted version.
    Done,
    /// The own Component CR must change first.
    Apply(&'d ComponentChange<'a>),
    /// The CR is as wanted; the new version is not installed or not running yet.
    Waiting(String),
}

fn self_upgrade<'d, 'a>(
    effective: &EffectiveBlueprint<'_>,
    diff: &'d Diff<'a>,
    installed: &Installed<'_>,
    observation: &Observation,
    own_component: &str,
) -> SelfUpgrade<'d, 'a> {
    let Some(own) = effective.components.iter().find(|c| c.name.simple == own_component && !c.absent) else {
        return SelfUpgrade::Done;
    };
    if let Some(change) = diff.component(own_component) {
        return SelfUpgrade::Apply(change);
    }
    let Some(wanted) = &own.version else {
        return SelfUpgrade::Done;
    };
    let installed_version = installed.components.get(own_component).and_then(|c| c.installed_version.as_ref());
    if installed_version != Some(wanted) {
        return SelfUpgrade::Waiting(format!(
            "waiting for the component operator to install {own_component} {wanted} (installed: {})",
            installed_version.map(|v| v.to_string()).unwrap_or_else(|| "none".into())
        ));
    }
    match observation.operator.version.as_deref() {
        Some(running) if ComponentVersion::parse(running).ok().as_ref() != Some(wanted) => SelfUpgrade::Waiting(
            format!("waiting for the operator {wanted} to take over (this operator runs {running})"),
        ),
        _ => SelfUpgrade::Done,
    }
}
