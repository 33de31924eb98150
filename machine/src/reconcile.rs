//! The reconcile pipeline: parse → static validation → effective blueprint → dynamic validation →
//! health → references → state diff → gates → stages → conditions → events → requeue.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::api::{Blueprint, BlueprintManifest, BlueprintStatus, StateDiff};
use crate::conditions::{self, Conditions, Status, reason};
use crate::decision::{
    Action, ApplyFailure, ConfigSet, ConfigTarget, ConfigValue, Decision, Event, FailureKind, Operation, Requeue,
    Stage, State,
};
use crate::diff::{self, ComponentAction, ComponentChange, ConfigAction, ConfigChange, Diff, DoguAction};
use crate::events::{self, reason as event};
use crate::forbidden;
use crate::health::Health;
use crate::model::{ComponentName, ComponentVersion, Installed, ParseFailure, ParsedBlueprint};
use crate::objects;
use crate::observation::{ConfigObservation, Observation};
use crate::problem::Problem;
use crate::references;
use crate::status_size;
use crate::up_to_date;
use crate::validation::{EffectiveBlueprint, Validity, dynamic, statics};

/// Decides one reconcile. Total (never panics) and deterministic.
pub fn reconcile(observation: &Observation) -> Decision {
    let Some(blueprint) = observation.blueprint.as_ref() else {
        return Decision {
            state: State::NoBlueprint,
            status: None,
            actions: Vec::new(),
            events: Vec::new(),
            requeue: Requeue::AwaitChange,
        };
    };
    let mut run = Run::new(observation, blueprint);
    if observation.blueprint_count > 1 {
        // Which one would win is not ours to guess: touch nothing, and say so on every Blueprint. The
        // deletion of a Blueprint triggers the others.
        let (state, requeue) = run.multiple_blueprints();
        return run.finish(state, requeue);
    }
    let (state, requeue) = run.evaluate();
    run.finish(state, requeue)
}

/// Decides again after the executor failed to perform `failure.action` of `decision` (the actions
/// before it were performed).
pub fn record_failure(observation: &Observation, decision: &Decision, failure: &ApplyFailure) -> Decision {
    let mut decision = decision.clone();
    let Some(stage) = decision.actions.get(failure.action).map(|a| a.stage) else {
        return decision;
    };
    // What a failed stage (or a later one) would have reported as applied did not happen.
    decision.events.retain(|e| e.stage.is_none_or(|s| s < stage));
    if failure.kind == FailureKind::Conflict {
        // Someone else wrote the object since it was observed: nothing failed, decide again on fresh state.
        decision.requeue = Requeue::after(1, format!("conflict while applying {stage}: {}", failure.message));
        return decision;
    }
    let action = &decision.actions[failure.action];
    let (condition_reason, context) = match (stage, &action.operation) {
        (Stage::SelfUpgrade, _) => {
            (reason::COMPONENT_APPLY_FAILURE, "an error occurred while applying the self-upgrade to the ecosystem")
        }
        (Stage::Config, Operation::WriteConfig { target: ConfigTarget::Global, .. }) => {
            (reason::CONFIG_APPLY_FAILURE, "could not apply global config")
        }
        (Stage::Config, Operation::WriteConfig { target: ConfigTarget::Dogu(_), .. }) => {
            (reason::CONFIG_APPLY_FAILURE, "could not apply normal dogu config")
        }
        (Stage::Config, Operation::WriteConfig { target: ConfigTarget::Sensitive(_), .. }) => {
            (reason::CONFIG_APPLY_FAILURE, "could not apply sensitive dogu config")
        }
        (Stage::Config, _) => (reason::CONFIG_APPLY_FAILURE, "could not pause reconciliation for some dogus"),
        (Stage::Components, _) => {
            (reason::COMPONENT_APPLY_FAILURE, "an error occurred while applying component state to the ecosystem")
        }
        (Stage::Dogus, _) => {
            (reason::DOGU_APPLY_FAILURE, "an error occurred while applying dogu state to the ecosystem")
        }
    };
    let message = format!("{context}: {}: {}", action.operation.object(), failure.message);
    if let (Some(status), Some(blueprint)) =
        (decision.status.as_mut().map(Arc::make_mut), observation.blueprint.as_ref())
    {
        let stored = blueprint.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
        let mut conditions =
            Conditions::resume(stored, &status.conditions, observation.now.clone(), generation(blueprint));
        conditions.set(conditions::LAST_APPLY_SUCCEEDED, Status::False, condition_reason, message.clone());
        if conditions.changed(conditions::LAST_APPLY_SUCCEEDED) {
            decision.events.push(events::warning(event::EXECUTION_FAILED, message.clone()));
        }
        status.conditions = conditions.into_vec();
    }
    decision.requeue = match failure.kind {
        FailureKind::NotFound => Requeue::after(10, message),
        _ => Requeue::Backoff { reason: message },
    };
    decision
}

fn waiting_for(stale: &[String]) -> String {
    format!(
        "Blueprint is being applied. Waiting for dogus to run the wanted version and configuration: {}",
        stale.join(", ")
    )
}

fn generation(blueprint: &Blueprint) -> i64 {
    blueprint.metadata.generation.unwrap_or(0)
}

/// The state of one reconcile while it is being decided.
struct Run<'o> {
    observation: &'o Observation,
    blueprint: &'o Blueprint,
    generation: i64,
    conditions: Conditions,
    effective_blueprint: Option<BlueprintManifest>,
    state_diff: Option<StateDiff>,
    unhealthy_summary: Option<String>,
    diff_events: Vec<Event>,
    stopped_event: Option<Event>,
    stage_events: Vec<Event>,
    waiting_event: Option<Event>,
    actions: Vec<Action>,
    /// What of the status was summarised to fit its size budget (see `status_size`).
    status_note: Option<String>,
}

impl<'o> Run<'o> {
    fn new(observation: &'o Observation, blueprint: &'o Blueprint) -> Self {
        let generation = generation(blueprint);
        let stored = blueprint.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
        Run {
            observation,
            blueprint,
            generation,
            conditions: Conditions::new(stored, observation.now.clone(), generation),
            effective_blueprint: None,
            state_diff: None,
            unhealthy_summary: None,
            diff_events: Vec::new(),
            stopped_event: None,
            stage_events: Vec::new(),
            waiting_event: None,
            actions: Vec::new(),
            status_note: None,
        }
    }

    fn stored_status(&self) -> Option<&'o BlueprintStatus> {
        self.blueprint.status.as_deref()
    }

    fn invalid(&mut self, why: &str, message: impl Into<String>) -> (State, Requeue) {
        self.conditions.set(conditions::VALID, Status::False, why, message);
        (State::Invalid, Requeue::AwaitChange)
    }

    fn multiple_blueprints(&mut self) -> (State, Requeue) {
        let observation = self.observation;
        let mut names: Vec<&str> = observation.other_blueprints.iter().map(String::as_str).collect();
        names.extend(self.blueprint.metadata.name.as_deref());
        names.sort_unstable();
        let listed =
            if names.len() == observation.blueprint_count { format!(" ({})", names.join(", ")) } else { String::new() };
        self.conditions.set(
            conditions::EXECUTABLE,
            Status::False,
            reason::MULTIPLE_BLUEPRINTS,
            format!(
                "{} Blueprints in namespace {}{listed}: only one Blueprint per namespace is processed, so none is; delete all but one",
                observation.blueprint_count, observation.operator.namespace
            ),
        );
        // Not even the generation completed before is kept applied while no Blueprint is processed.
        self.conditions.set(
            conditions::COMPLETED,
            Status::Unknown,
            reason::NOT_EVALUATED,
            format!(
                "generation {} is not kept applied: more than one Blueprint in the namespace (see Executable)",
                self.generation
            ),
        );
        (State::MultipleBlueprints, Requeue::AwaitChange)
    }

    fn evaluate(&mut self) -> (State, Requeue) {
        let observation = self.observation;
        if let Some(undecodable) = &self.blueprint.undecodable_spec {
            let name = self.blueprint.metadata.name.as_deref().unwrap_or_default();
            return self.invalid(
                reason::INVALID,
                format!("could not deserialize blueprint CR \"{name}\": {}", undecodable.problem),
            );
        }
        let parsed = match ParsedBlueprint::parse(self.blueprint.blueprint_spec()) {
            Ok(parsed) => parsed,
            Err(ParseFailure::MissingSpec) => {
                return self
                    .invalid(reason::INVALID, "the Blueprint has no spec.blueprint, so there is nothing to apply");
            }
            Err(ParseFailure::Malformed(problem)) => {
                let name = self.blueprint.metadata.name.as_deref().unwrap_or_default();
                return self
                    .invalid(reason::INVALID, format!("could not deserialize blueprint CR \"{name}\": {problem}"));
            }
        };
        if let Err(problem) = statics::validate(&parsed) {
            return self.invalid(reason::INVALID, problem.to_string());
        }
        let flags = parsed.flags;
        let effective = match EffectiveBlueprint::compute(parsed) {
            Ok(effective) => effective,
            Err(problem) => return self.invalid(reason::INCONSISTENT, problem.to_string()),
        };
        self.effective_blueprint = Some(effective.to_api());

        let validity = dynamic::validate(&effective, &observation.descriptors);
        match &validity {
            Validity::Valid => self.conditions.set(conditions::VALID, Status::True, reason::VALID, ""),
            Validity::Invalid(problem) | Validity::DescriptorsNotFound(problem) => {
                self.conditions.set(conditions::VALID, Status::False, reason::INCONSISTENT, problem.to_string())
            }
            Validity::DescriptorsUnavailable(problem) => {
                self.conditions.set(conditions::VALID, Status::Unknown, reason::CANNOT_VALIDATE, problem.to_string())
            }
        };

        let installed = Installed::read(&observation.dogus, &observation.components, &observation.undecodable);
        let health = Health::evaluate(&installed, observation.health_config.as_ref(), flags);
        self.set_health(&health, flags);

        let (resolved, missing_references) = references::resolve(&effective, &observation.referenced_secrets);
        let (diff, unreadable) = diff::compute(&effective, &installed, observation, &resolved);
        self.record_diff(&diff);

        let own_component = own_component_name(&observation.operator.component);
        let forbidden = forbidden::check(&diff, flags, &own_component);
        let executable = if let Some(problem) = &missing_references {
            self.conditions.set(
                conditions::EXECUTABLE,
                Status::False,
                reason::MISSING_CONFIG_REFERENCES,
                problem.to_string(),
            );
            false
        } else if let Some(problem) = Problem::join(unreadable) {
            self.conditions.set(
                conditions::EXECUTABLE,
                Status::False,
                reason::INVALID_CLUSTER_STATE,
                problem.to_string(),
            );
            false
        } else if let Some(problem) = forbidden {
            self.conditions.set(
                conditions::EXECUTABLE,
                Status::False,
                reason::FORBIDDEN_OPERATIONS,
                problem.to_string(),
            );
            false
        } else {
            self.conditions.set(conditions::EXECUTABLE, Status::True, reason::EXECUTABLE, "");
            true
        };

        // Gates: validity, executability, stopped, completion, health.
        match validity {
            Validity::Valid => {}
            Validity::Invalid(_) => return (State::Invalid, Requeue::AwaitChange),
            Validity::DescriptorsNotFound(_) => {
                return (
                    State::ValidationPending,
                    Requeue::after(10, "a wanted dogu version is unknown to the dogu registry"),
                );
            }
            Validity::DescriptorsUnavailable(_) => {
                return (
                    State::ValidationPending,
                    Requeue::Backoff { reason: "dogu descriptors could not be loaded".into() },
                );
            }
        }
        if !executable {
            let requeue = if missing_references.is_some() {
                Requeue::after(10, "referenced Secrets or keys are missing")
            } else {
                Requeue::AwaitChange
            };
            return (State::NotExecutable, requeue);
        }
        if flags.stopped {
            if self.stored_status().and_then(|s| s.observed_generation) != Some(self.generation) {
                self.stopped_event = Some(events::normal(event::BLUEPRINT_STOPPED, events::STOPPED_MESSAGE));
            }
            return (State::Stopped, Requeue::AwaitChange);
        }
        let was_completed =
            self.conditions.stored(conditions::COMPLETED).is_some_and(|c| c.status == Status::True.as_str());
        // A completed blueprint stays completed while nothing differs, whatever the health says (a dogu
        // that flaps after completion does not reopen it). But "nothing differs" compares Dogu CR specs,
        // and a CR recreated by a reconcile that crashed before its status write has the wanted spec
        // and nothing installed yet: only a blueprint whose dogus all run their CR's version keeps it.
        if diff.is_empty() && was_completed {
            if up_to_date::all_installed(&effective, &installed) {
                self.conditions.set(conditions::COMPLETED, Status::True, reason::COMPLETED, "");
                return (State::Completed, Requeue::AwaitChange);
            }
            let stale = up_to_date::stale_dogus(&effective, &installed, observation);
            self.conditions.set(
                conditions::COMPLETED,
                Status::False,
                reason::STATE_DIFF_HAS_CHANGES,
                waiting_for(&stale),
            );
        }
        match health {
            Health::Healthy => {}
            Health::Unhealthy { .. } => {
                return (State::AwaitingHealth, Requeue::after(10, "the ecosystem is not healthy"));
            }
            Health::Unknown(_) => {
                return (
                    State::AwaitingHealth,
                    Requeue::Backoff { reason: "ecosystem health cannot be determined".into() },
                );
            }
        }

        // Stage: self-upgrade. Nothing else is applied until the operator runs the wanted version.
        match self_upgrade(&effective, &diff, &installed, observation, &own_component) {
            SelfUpgrade::Done => {
                self.conditions.set(conditions::SELF_UPGRADE_COMPLETED, Status::True, reason::COMPLETED, "");
            }
            SelfUpgrade::Apply(change) => {
                self.conditions.set(conditions::SELF_UPGRADE_COMPLETED, Status::False, reason::AWAIT_SELF_UPGRADE, "");
                self.actions.push(component_action(Stage::SelfUpgrade, change, &observation.operator.namespace));
                return (State::SelfUpgrading, Requeue::after(5, "await self upgrade"));
            }
            SelfUpgrade::Waiting(why) => {
                self.conditions.set(conditions::SELF_UPGRADE_COMPLETED, Status::False, reason::AWAIT_SELF_UPGRADE, why);
                return (State::SelfUpgrading, Requeue::after(5, "await self upgrade"));
            }
        }

        // Stage: configuration, with dogus paused that must not restart before their upgrade.
        let paused_now = self.config_stage(&diff, &installed);
        let config_applied = !self.actions.is_empty();

        // Stage: components. Dogus wait for a fresh health check after component changes.
        let component_changes: Vec<&ComponentChange<'_>> =
            diff.components.iter().filter(|c| c.name() != own_component).collect();
        if !component_changes.is_empty() {
            for change in &component_changes {
                self.actions.push(component_action(Stage::Components, change, &observation.operator.namespace));
            }
            self.stage_events.push(events::applied(
                Stage::Components,
                event::COMPONENTS_APPLIED,
                format!(
                    "components applied: {}",
                    events::applied_list(component_changes.iter().map(|c| (c.name(), c.actions.as_slice())))
                ),
            ));
            return (State::ApplyingComponents, Requeue::after(1, "components applied; check health before dogus"));
        }

        // Stage: dogus.
        let dogu_actions = self.dogu_stage(&diff, &installed, &effective, &paused_now);
        if dogu_actions > 0 {
            return (State::ApplyingDogus, Requeue::after(1, "dogus applied; re-evaluate"));
        }
        if config_applied {
            return (State::ApplyingConfig, Requeue::after(1, "config applied; re-evaluate"));
        }

        // Nothing left to apply: complete once every wanted dogu runs what the blueprint wants.
        let stale = up_to_date::stale_dogus(&effective, &installed, observation);
        if !stale.is_empty() {
            let changed = self.conditions.set(
                conditions::COMPLETED,
                Status::False,
                reason::STATE_DIFF_HAS_CHANGES,
                waiting_for(&stale),
            );
            if changed {
                self.waiting_event =
                    Some(events::normal(event::DOGUS_NOT_UP_TO_DATE, events::not_up_to_date_message(&stale)));
            }
            return (State::AwaitingDogus, Requeue::after(10, "dogus are not up to date yet"));
        }
        self.conditions.set(conditions::COMPLETED, Status::True, reason::COMPLETED, "");
        self.conditions.set(conditions::LAST_APPLY_SUCCEEDED, Status::True, reason::APPLY_SUCCEEDED, "");
        (State::Completed, Requeue::AwaitChange)
    }

    fn set_health(&mut self, health: &Health, flags: crate::model::Flags) {
        match health {
            Health::Healthy => self.conditions.set(
                conditions::ECOSYSTEM_HEALTHY,
                Status::True,
                reason::HEALTHY,
                format!(
                    "dogu health ignored: {}; component health ignored: {}",
                    flags.ignore_dogu_health, flags.ignore_component_health
                ),
            ),
            Health::Unhealthy { dogus, components } => {
                let summary = Health::unhealthy_summary(dogus, components);
                let changed = self.conditions.set(
                    conditions::ECOSYSTEM_HEALTHY,
                    Status::False,
                    reason::UNHEALTHY,
                    format!("ecosystem health:\n{summary}"),
                );
                self.unhealthy_summary = Some(summary);
                changed
            }
            Health::Unknown(problem) => self.conditions.set(
                conditions::ECOSYSTEM_HEALTHY,
                Status::Unknown,
                reason::CANNOT_CHECK_HEALTH,
                problem.to_string(),
            ),
        };
    }

    fn record_diff(&mut self, diff: &Diff<'_>) {
        // What is published (and compared with what was), within the status' size budget.
        let fitted = status_size::fit(self.blueprint, self.effective_blueprint.take(), diff.to_api());
        self.effective_blueprint = fitted.effective_blueprint;
        self.status_note = fitted.note;
        let state_diff = fitted.state_diff;
        if !diff.is_empty() {
            self.conditions.set(
                conditions::COMPLETED,
                Status::False,
                reason::STATE_DIFF_HAS_CHANGES,
                "Blueprint is being applied.",
            );
        }
        let stored = self.stored_status().and_then(|s| s.state_diff.as_ref());
        let changed = match stored {
            Some(stored) => stored != &state_diff,
            None => !state_diff.is_empty(),
        };
        if changed {
            if !diff.dogus.is_empty() || diff.has_config_changes() {
                self.diff_events.push(events::normal(event::STATE_DIFF_DETERMINED, events::state_diff_message(diff)));
            }
            if !diff.components.is_empty() {
                self.diff_events
                    .push(events::normal(event::STATE_DIFF_COMPONENT_DETERMINED, events::component_diff_message(diff)));
            }
        }
        self.state_diff = Some(state_diff);
    }

    /// Pause patches, then normal dogu config, sensitive dogu config and global config writes.
    /// Returns the dogus paused by this decision.
    fn config_stage(&mut self, diff: &Diff<'_>, installed: &Installed) -> BTreeSet<String> {
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
            let store = observation.dogu_configs.get(dogu).unwrap_or(&ConfigObservation::Missing);
            self.actions.push(value_write(ConfigTarget::Dogu(dogu.clone()), store.base(), changes));
        }
        for (dogu, changes) in &diff.sensitive_config {
            let store = observation.sensitive_configs.get(dogu).unwrap_or(&ConfigObservation::Missing);
            let set: Vec<ConfigSet> = changes
                .iter()
                .filter(|c| c.action == ConfigAction::Set)
                .filter_map(|c| {
                    c.source
                        .clone()
                        .map(|source| ConfigSet { key: c.key.clone(), value: ConfigValue::SecretRef(source) })
                })
                .collect();
            let remove: Vec<String> =
                changes.iter().filter(|c| c.action == ConfigAction::Remove).map(|c| c.key.clone()).collect();
            self.actions.push(Action {
                stage: Stage::Config,
                reason: write_reason(set.len(), remove.len()),
                operation: Operation::WriteConfig {
                    target: ConfigTarget::Sensitive(dogu.clone()),
                    base: store.base(),
                    set,
                    remove,
                },
            });
        }
        if !diff.global.is_empty() {
            self.actions.push(value_write(ConfigTarget::Global, observation.global_config.base(), &diff.global));
        }
        if self.actions.len() > before {
            self.stage_events.push(events::applied(
                Stage::Config,
                event::ECOSYSTEM_CONFIG_APPLIED,
                events::CONFIG_APPLIED_MESSAGE,
            ));
        }
        paused_now
    }

    /// Creates, patches and deletes Dogu CRs; resumes managed dogus that are paused without a pending
    /// upgrade. Returns the number of actions added.
    fn dogu_stage(
        &mut self,
        diff: &Diff<'_>,
        installed: &Installed,
        effective: &EffectiveBlueprint,
        paused_now: &BTreeSet<String>,
    ) -> usize {
        let namespace = &self.observation.operator.namespace;
        let before = self.actions.len();
        for change in &diff.dogus {
            let name = change.name().to_owned();
            let reason = change.actions.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(", ");
            let operation = if change.has(DoguAction::Install) {
                Operation::CreateDogu { object: Box::new(objects::dogu_object(change.target, namespace)) }
            } else if change.has(DoguAction::Uninstall) {
                Operation::DeleteDogu { name }
            } else {
                let unpause = change.installed.is_some_and(|d| d.paused) || paused_now.contains(&name);
                Operation::PatchDogu { name, patch: objects::dogu_patch(change, unpause) }
            };
            self.actions.push(Action { stage: Stage::Dogus, reason, operation });
        }
        if !diff.dogus.is_empty() {
            self.stage_events.push(events::applied(
                Stage::Dogus,
                event::DOGUS_APPLIED,
                format!(
                    "dogus applied: {}",
                    events::applied_list(diff.dogus.iter().map(|d| (d.name(), d.actions.as_slice())))
                ),
            ));
        }
        for target in effective.wanted_dogus() {
            let name = &target.name.simple;
            let paused = installed.dogus.get(name.as_str()).is_some_and(|d| d.paused);
            if paused && diff.dogu(name).is_none() {
                self.actions.push(Action {
                    stage: Stage::Dogus,
                    reason: "resume reconciliation: no upgrade is pending".into(),
                    operation: Operation::PatchDogu { name: name.clone(), patch: objects::pause_patch(false) },
                });
            }
        }
        // Deterministic order within the stage: by object name.
        self.actions[before..].sort_by_key(|a| a.operation.object());
        self.actions.len() - before
    }

    /// `Completed` must not claim anything for a generation that did not get as far as the completion
    /// check (the printer column showed `True` while a newer generation was not executable).
    fn completion_not_evaluated(&mut self, state: State) {
        let fresh =
            self.conditions.get(conditions::COMPLETED).is_some_and(|c| c.observed_generation == Some(self.generation));
        if fresh {
            return;
        }
        let why = match state {
            State::Invalid => "the blueprint is invalid (see Valid)",
            State::ValidationPending => "the blueprint cannot be validated yet (see Valid)",
            State::NotExecutable => "the blueprint cannot be applied (see Executable)",
            State::MultipleBlueprints => "more than one Blueprint in the namespace (see Executable)",
            State::Stopped => "the blueprint is stopped (spec.stopped)",
            State::AwaitingHealth => "the ecosystem is not healthy (see EcosystemHealthy)",
            State::SelfUpgrading => "the operator is upgrading itself (see SelfUpgradeCompleted)",
            _ => "not evaluated",
        };
        self.conditions.set(
            conditions::COMPLETED,
            Status::Unknown,
            reason::NOT_EVALUATED,
            format!("generation {} is not applied: {why}", self.generation),
        );
    }

    fn finish(mut self, state: State, requeue: Requeue) -> Decision {
        self.completion_not_evaluated(state);
        if let Some(note) = self.status_note.take()
            && let Some(completed) = self.conditions.get(conditions::COMPLETED).cloned()
        {
            let status = match completed.status.as_str() {
                "True" => Status::True,
                "False" => Status::False,
                _ => Status::Unknown,
            };
            let message = if completed.message.is_empty() { note } else { format!("{} {note}", completed.message) };
            self.conditions.set(conditions::COMPLETED, status, &completed.reason, message);
        }
        // Two kinds of events: problems (an invalid or not executable blueprint) are reported whenever the
        // problem changes, so that a new error is seen; states (healthy, self-upgrade, completed) only
        // when the condition's status transitions.
        let mut events = Vec::new();
        let c = &self.conditions;
        if c.changed(conditions::VALID) && c.is(conditions::VALID, Status::False) {
            events.push(events::warning(event::BLUEPRINT_SPEC_INVALID, message(c, conditions::VALID)));
        }
        if c.transitioned(conditions::ECOSYSTEM_HEALTHY) && c.is(conditions::ECOSYSTEM_HEALTHY, Status::True) {
            events.push(events::normal(event::ECOSYSTEM_HEALTHY, message(c, conditions::ECOSYSTEM_HEALTHY)));
        }
        if c.transitioned(conditions::ECOSYSTEM_HEALTHY)
            && c.is(conditions::ECOSYSTEM_HEALTHY, Status::False)
            && let Some(summary) = &self.unhealthy_summary
        {
            events.push(events::warning(
                event::ECOSYSTEM_UNHEALTHY,
                format!(
                    "Ecosystem became unhealthy (up-to-date list is in the EcosystemHealthy condition):\n{summary}"
                ),
            ));
        }
        events.append(&mut self.diff_events);
        if c.changed(conditions::EXECUTABLE) && c.is(conditions::EXECUTABLE, Status::False) {
            let reason = match c.get(conditions::EXECUTABLE).map(|c| c.reason.as_str()) {
                Some(reason::MISSING_CONFIG_REFERENCES) => event::MISSING_CONFIG_REFERENCES,
                Some(reason::INVALID_CLUSTER_STATE) => event::INVALID_CLUSTER_STATE,
                Some(reason::MULTIPLE_BLUEPRINTS) => event::MULTIPLE_BLUEPRINTS,
                _ => event::BLUEPRINT_SPEC_INVALID,
            };
            events.push(events::warning(reason, message(c, conditions::EXECUTABLE)));
        }
        events.extend(self.stopped_event.take());
        if c.transitioned(conditions::SELF_UPGRADE_COMPLETED) {
            if c.is(conditions::SELF_UPGRADE_COMPLETED, Status::False) {
                events.push(events::normal(event::AWAIT_SELF_UPGRADE, events::AWAIT_SELF_UPGRADE_MESSAGE));
            } else if c.is(conditions::SELF_UPGRADE_COMPLETED, Status::True) {
                events.push(events::normal(event::SELF_UPGRADE_COMPLETED, events::SELF_UPGRADE_COMPLETED_MESSAGE));
            }
        }
        events.append(&mut self.stage_events);
        events.extend(self.waiting_event.take());
        if c.transitioned(conditions::COMPLETED) && c.is(conditions::COMPLETED, Status::True) {
            events.push(events::normal(event::COMPLETED, events::COMPLETED_MESSAGE));
        }
        Decision {
            state,
            status: Some(Arc::new(BlueprintStatus {
                conditions: self.conditions.into_vec(),
                effective_blueprint: self.effective_blueprint,
                state_diff: self.state_diff,
                observed_generation: Some(self.generation),
            })),
            actions: self.actions,
            events,
            requeue,
        }
    }
}

fn message(conditions: &Conditions, type_: &str) -> String {
    conditions.get(type_).map(|c| c.message.clone()).unwrap_or_default()
}

fn own_component_name(qualified: &str) -> String {
    ComponentName::parse(qualified).map(|n| n.simple).unwrap_or_else(|_| qualified.to_owned())
}

fn write_reason(set: usize, remove: usize) -> String {
    match (set, remove) {
        (s, 0) => format!("set {s} key(s)"),
        (0, r) => format!("remove {r} key(s)"),
        (s, r) => format!("set {s} key(s), remove {r} key(s)"),
    }
}

fn value_write(target: ConfigTarget, base: crate::observation::ObjectBase, changes: &[ConfigChange]) -> Action {
    let set: Vec<ConfigSet> = changes
        .iter()
        .filter(|c| c.action == ConfigAction::Set)
        .map(|c| ConfigSet { key: c.key.clone(), value: ConfigValue::Value(c.expected.clone().unwrap_or_default()) })
        .collect();
    let remove: Vec<String> =
        changes.iter().filter(|c| c.action == ConfigAction::Remove).map(|c| c.key.clone()).collect();
    Action {
        stage: Stage::Config,
        reason: write_reason(set.len(), remove.len()),
        operation: Operation::WriteConfig { target, base, set, remove },
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
    effective: &EffectiveBlueprint,
    diff: &'d Diff<'a>,
    installed: &Installed,
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

/// Which dogu descriptors a reconcile of this Blueprint needs: `(qualified name, version)` of every
/// wanted dogu. Empty when the blueprint does not get as far as dynamic validation.
pub fn wanted_descriptors(blueprint: &Blueprint) -> Vec<(String, String)> {
    effective_blueprint(blueprint)
        .map(|effective| {
            effective
                .wanted_dogus()
                .map(|d| (d.name.to_string(), d.version.as_ref().map(|v| v.raw().to_owned()).unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default()
}

/// Which Secrets a reconcile of this Blueprint reads sensitive values from.
pub fn referenced_secrets(blueprint: &Blueprint) -> BTreeSet<String> {
    effective_blueprint(blueprint).map(|e| references::referenced_secret_names(&e)).unwrap_or_default()
}

fn effective_blueprint(blueprint: &Blueprint) -> Option<EffectiveBlueprint<'_>> {
    let parsed = ParsedBlueprint::parse(blueprint.blueprint_spec()).ok()?;
    statics::validate(&parsed).ok()?;
    EffectiveBlueprint::compute(parsed).ok()
}
