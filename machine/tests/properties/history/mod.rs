//! Generated histories: what can happen between and during reconciles — spec edits, operator
//! progress, health flaps, broken dogus, drift by administrators, registry outages, crashes in the
//! middle of a reconcile, stale reads — and a runner that applies them to the model cluster, checking
//! every reconcile on the way.

mod checks;
mod edits;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use blueprint_machine::api::{BlueprintDogu, BlueprintSpec, ConfigEntry, Dogu, MaskDogu};
use blueprint_machine::decision::{Decision, PROGRESS_DUE, Requeue};
use blueprint_machine::{State, conditions};
use proptest::prelude::*;

use super::generate::{self, DOGUS, KEYS, VALUES, VERSIONS};
use super::model::{self, Model, Store};

use checks::{no_regression, satisfied};
use edits::apply_drift;
pub use edits::apply_edit;

/// One thing that happens.
#[derive(Clone, Debug)]
pub enum Step {
    /// A reconcile: observe, decide, perform every action, write the status.
    Reconcile,
    /// A reconcile cut off in the batch of actions in flight when `performed` had ended (the executor
    /// sends up to 8 that the scheduler releases at once): every earlier batch is done, of that batch
    /// the actions `within` selects (bit i: its i-th action), nothing later; the process dies before
    /// the status write and the next one starts with nothing in memory.
    Crash {
        performed: usize,
        within: u8,
    },
    /// A reconcile on an observation whose Dogus (`dogus`), Components and config (`config`) are
    /// `age` snapshots old: caches that have not yet shown recent writes. Its actions are sent
    /// `in_flight` at a time (1 to the executor's 8), so a failure may come with any other actions
    /// under way.
    Stale {
        age: usize,
        dogus: bool,
        config: bool,
        in_flight: usize,
    },
    /// The dogu and component operators catch up: install, upgrade, restart, report health.
    Progress,
    /// The dogu operator brings one dogu up, seconds after the last step: progress within the time a
    /// status write holds further progress back (D58).
    DoguProgress {
        dogu: usize,
    },
    /// A dogu reports unavailable for a while (it recovers with the next progress).
    Flap {
        dogu: usize,
    },
    /// A dogu the dogu operator cannot bring up: it stays unavailable until repaired.
    Break {
        dogu: usize,
    },
    Repair {
        dogu: usize,
    },
    RegistryDown,
    RegistryUp,
    /// The blueprint's spec changes (a new generation).
    Edit(Edit),
    /// An administrator changes the cluster by hand.
    Drift(Drift),
}

#[derive(Clone, Debug)]
pub enum Edit {
    VersionUp {
        dogu: usize,
    },
    Add {
        dogu: usize,
    },
    Remove {
        dogu: usize,
    },
    Mask {
        dogu: usize,
    },
    Unmask {
        dogu: usize,
    },
    /// `dogu: None` is the global config.
    ConfigSet {
        dogu: Option<usize>,
        key: usize,
        value: usize,
    },
    ConfigRemove {
        dogu: Option<usize>,
        key: usize,
    },
    Stopped(bool),
    IgnoreDoguHealth(bool),
    IgnoreComponentHealth(bool),
}

#[derive(Clone, Debug)]
pub enum Drift {
    DeleteDogu {
        dogu: usize,
    },
    /// The Dogu CR's volume size and mounts edited away.
    EditDogu {
        dogu: usize,
    },
    ConfigValue {
        dogu: Option<usize>,
        key: usize,
        value: usize,
    },
}

pub fn edit() -> impl Strategy<Value = Edit> {
    let dogu = || 0..DOGUS.len();
    let config_dogu = || proptest::option::weighted(0.7, 0..DOGUS.len());
    prop_oneof![
        3 => dogu().prop_map(|dogu| Edit::VersionUp { dogu }),
        2 => dogu().prop_map(|dogu| Edit::Add { dogu }),
        2 => dogu().prop_map(|dogu| Edit::Remove { dogu }),
        1 => dogu().prop_map(|dogu| Edit::Mask { dogu }),
        1 => dogu().prop_map(|dogu| Edit::Unmask { dogu }),
        3 => (config_dogu(), 0..KEYS.len(), 0..VALUES.len())
            .prop_map(|(dogu, key, value)| Edit::ConfigSet { dogu, key, value }),
        2 => (config_dogu(), 0..KEYS.len()).prop_map(|(dogu, key)| Edit::ConfigRemove { dogu, key }),
        1 => any::<bool>().prop_map(Edit::Stopped),
        1 => any::<bool>().prop_map(Edit::IgnoreDoguHealth),
        1 => any::<bool>().prop_map(Edit::IgnoreComponentHealth),
    ]
}

fn drift() -> impl Strategy<Value = Drift> {
    prop_oneof![
        (0..DOGUS.len()).prop_map(|dogu| Drift::DeleteDogu { dogu }),
        (0..DOGUS.len()).prop_map(|dogu| Drift::EditDogu { dogu }),
        (proptest::option::weighted(0.7, 0..DOGUS.len()), 0..KEYS.len(), 0..VALUES.len())
            .prop_map(|(dogu, key, value)| Drift::ConfigValue { dogu, key, value }),
    ]
}

/// Anything, crashes and stale reads included.
/// A stale reconcile (see [`Step::Stale`]).
pub fn stale() -> impl Strategy<Value = Step> {
    (1..4usize, any::<bool>(), any::<bool>(), 1..=model::IN_FLIGHT)
        .prop_map(|(age, dogus, config, in_flight)| Step::Stale { age, dogus, config, in_flight })
}

pub fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => Just(Step::Reconcile),
        2 => (0..6usize, any::<u8>()).prop_map(|(performed, within)| Step::Crash { performed, within }),
        2 => stale(),
        6 => Just(Step::Progress),
        4 => (0..DOGUS.len()).prop_map(|dogu| Step::DoguProgress { dogu }),
        1 => (0..DOGUS.len()).prop_map(|dogu| Step::Flap { dogu }),
        1 => (0..DOGUS.len()).prop_map(|dogu| Step::Break { dogu }),
        1 => (0..DOGUS.len()).prop_map(|dogu| Step::Repair { dogu }),
        1 => Just(Step::RegistryDown),
        1 => Just(Step::RegistryUp),
        4 => edit().prop_map(Step::Edit),
        2 => drift().prop_map(Step::Drift),
    ]
}

/// Without stale reads (the crash and missed-event comparisons need a run that a stale read cannot
/// make differ by an early conflict).
pub fn fresh_step() -> impl Strategy<Value = Step> {
    step().prop_filter("no stale read", |s| !matches!(s, Step::Stale { .. }))
}

/// The cluster as the objects the blueprint shapes: what two runs must agree on.
#[derive(Debug, PartialEq)]
pub struct ClusterState {
    pub dogus: BTreeMap<String, serde_json::Value>,
    pub components: BTreeMap<String, serde_json::Value>,
    pub config: BTreeMap<String, BTreeMap<String, String>>,
}

pub fn cluster_state(model: &Model) -> ClusterState {
    let spec = |value: serde_json::Value| {
        let mut spec = value["spec"].clone();
        // A volume size of "0" asks for the dogu operator's default, as no size does.
        let default_size = |size: &serde_json::Value| size.is_null() || size == "0";
        let resources = &spec["resources"];
        if !resources.is_null()
            && default_size(&resources["minDataVolumeSize"])
            && default_size(&resources["dataVolumeSize"])
            && resources["storageClassName"].is_null()
        {
            spec.as_object_mut().unwrap().remove("resources");
        }
        spec
    };
    let mut config = BTreeMap::new();
    if let Some(global) = &model.global {
        config.insert("global".to_owned(), global.entries.clone());
    }
    for (dogu, store) in &model.dogu_config {
        config.insert(format!("dogu {dogu}"), store.entries.clone());
    }
    for (dogu, store) in &model.sensitive {
        config.insert(format!("sensitive {dogu}"), store.entries.clone());
    }
    // An empty config object holds what no object holds: no key.
    config.retain(|_, entries: &mut BTreeMap<String, String>| !entries.is_empty());
    ClusterState {
        dogus: model.dogus.iter().map(|(n, d)| (n.clone(), spec(serde_json::to_value(d).unwrap()))).collect(),
        components: model.components.iter().map(|(n, c)| (n.clone(), spec(serde_json::to_value(c).unwrap()))).collect(),
        config,
    }
}

/// Which conditions an event reports on, and whether it needs a status transition (a state event) or
/// any change of the condition (a problem event: a new error is worth a new event).
fn reported_by(reason: &str) -> Option<(&'static [&'static str], bool)> {
    use blueprint_machine::events::reason as r;
    const VALIDITY: &[&str] = &[conditions::VALID, conditions::EXECUTABLE];
    Some(match reason {
        r::BLUEPRINT_SPEC_INVALID => (VALIDITY, false),
        r::MISSING_CONFIG_REFERENCES | r::INVALID_CLUSTER_STATE => (&[conditions::EXECUTABLE], false),
        r::ECOSYSTEM_HEALTHY => (&[conditions::ECOSYSTEM_HEALTHY], true),
        // A fault appears also while the ecosystem was unhealthy from an apply in progress: a change
        // of the reason (D55).
        r::ECOSYSTEM_UNHEALTHY => (&[conditions::ECOSYSTEM_HEALTHY], false),
        r::AWAIT_SELF_UPGRADE | r::SELF_UPGRADE_COMPLETED => (&[conditions::SELF_UPGRADE_COMPLETED], true),
        r::COMPLETED => (&[conditions::COMPLETED], true),
        r::EXECUTION_FAILED => (&[conditions::LAST_APPLY_SUCCEEDED], false),
        _ => return None,
    })
}

/// A model cluster and the reconciles run on it.
pub struct Run {
    pub model: Model,
    /// Earlier models, newest last (for stale reads).
    past: VecDeque<Model>,
    /// Every decision, in order.
    pub decisions: Vec<Decision>,
    /// The highest `observedGeneration` stored so far.
    observed_generation: i64,
}

impl Run {
    pub fn new(model: Model) -> Self {
        Run { model, past: VecDeque::new(), decisions: Vec::new(), observed_generation: 0 }
    }

    pub fn apply(&mut self, step: &Step) -> Result<(), TestCaseError> {
        self.past.push_back(self.model.clone());
        if self.past.len() > 4 {
            self.past.pop_front();
        }
        match step {
            Step::Reconcile => self.reconcile(None)?,
            Step::Crash { performed, within } => self.reconcile(Some((*performed, *within)))?,
            Step::Stale { age, dogus, config, in_flight } => self.stale(*age, *dogus, *config, *in_flight)?,
            Step::Progress => self.model.operators_progress(),
            Step::DoguProgress { dogu } => self.model.dogu_progress(DOGUS[*dogu]),
            Step::Flap { dogu } => {
                if let Some(d) = self.model.dogus.get_mut(DOGUS[*dogu]) {
                    d.status.get_or_insert_with(Default::default).health = Some("unavailable".into());
                }
            }
            Step::Break { dogu } => {
                self.model.broken.insert(DOGUS[*dogu].to_owned());
            }
            Step::Repair { dogu } => {
                self.model.broken.remove(DOGUS[*dogu]);
            }
            Step::RegistryDown => self.model.registry_down = true,
            Step::RegistryUp => self.model.registry_down = false,
            Step::Edit(edit) => apply_edit(&mut self.model, edit),
            Step::Drift(drift) => apply_drift(&mut self.model, drift),
        }
        self.model.now += 1;
        Ok(())
    }

    /// One reconcile on the current model; `cut`: where the process dies (see [`Step::Crash`]).
    fn reconcile(&mut self, cut: Option<(usize, u8)>) -> Result<(), TestCaseError> {
        let observation = self.model.observe();
        let decision = blueprint_machine::reconcile(&observation);
        self.check(&observation, &decision)?;
        let performed: BTreeSet<usize> = match cut {
            None => (0..decision.actions.len()).collect(),
            Some((at, within)) => {
                let mut performed = BTreeSet::new();
                for batch in model::batches(&decision) {
                    if performed.len() + batch.len() > at {
                        let selected = batch.iter().enumerate().filter(|(i, _)| within & (1 << (i % 8)) != 0);
                        performed.extend(selected.map(|(_, index)| *index));
                        break;
                    }
                    performed.extend(batch);
                }
                performed
            }
        };
        let performed = |index: usize| performed.contains(&index);
        if let Err(failure) = self.model.execute_only(&decision, performed) {
            // On a fresh observation nothing may fail: a failure is a wrong decision (a create of
            // something that exists, a write based on a version that is not the observed one).
            return Err(TestCaseError::fail(format!(
                "an action failed on a fresh observation: {failure:?}\n{decision:#?}"
            )));
        }
        // A crash comes before the status write, however many actions were performed.
        if cut.is_none() {
            self.store(&decision);
        }
        self.decisions.push(decision);
        Ok(())
    }

    /// A reconcile on an observation whose object caches lag; the Blueprint is current (the reflector
    /// is monotonic and the operator reads its own status writes). Optimistic concurrency must make
    /// any write the current cluster would regress through fail instead.
    fn stale(&mut self, age: usize, dogus: bool, config: bool, in_flight: usize) -> Result<(), TestCaseError> {
        let Some(old) = self.past.len().checked_sub(age + 1).and_then(|i| self.past.get(i)).cloned() else {
            return self.reconcile(None);
        };
        let mut seen = self.model.clone();
        if dogus {
            seen.dogus = old.dogus.clone();
            seen.components = old.components.clone();
        }
        if config {
            seen.global = old.global.clone();
            seen.dogu_config = old.dogu_config.clone();
            seen.sensitive = old.sensitive.clone();
        }
        let observation = seen.observe();
        let decision = blueprint_machine::reconcile(&observation);
        self.check(&observation, &decision)?;
        let before = self.model.clone();
        let (performed, result) = self.model.execute_scheduled(&decision, in_flight);
        no_regression(&before, &self.model)?;
        let decision = match result {
            Err(failure) => blueprint_machine::record_failure(&observation, &decision, &failure),
            Ok(()) => decision,
        };
        // An event that reports a stage as applied is published only if all of that stage was (D59).
        for event in &decision.events {
            let Some(stage) = event.stage else { continue };
            let missing: Vec<usize> =
                (0..performed.len()).filter(|&i| decision.actions[i].stage == stage && !performed[i]).collect();
            prop_assert!(missing.is_empty(), "{} reports {stage} applied; not performed: {missing:?}", event.reason);
        }
        self.store(&decision);
        self.decisions.push(decision);
        Ok(())
    }

    fn store(&mut self, decision: &Decision) {
        self.model.store_status(decision.status.as_ref());
        if let Some(generation) = decision.status.as_ref().and_then(|s| s.observed_generation) {
            self.observed_generation = self.observed_generation.max(generation);
        }
    }

    /// What must hold for every decision, beyond `assert_safe`: transition times move exactly with the
    /// status, `observedGeneration` never goes back, and an event reports a transition only when there
    /// is one, at most once.
    fn check(&self, observation: &blueprint_machine::Observation, decision: &Decision) -> Result<(), TestCaseError> {
        super::assert_safe(observation, decision)?;
        let stored = observation.blueprint.as_ref().and_then(|b| b.status.as_ref());
        let stored_conditions = stored.map(|s| s.conditions.as_slice()).unwrap_or_default();
        if let Some(status) = &decision.status {
            for condition in &status.conditions {
                match stored_conditions.iter().find(|c| c.type_ == condition.type_) {
                    Some(before) if before.status == condition.status => prop_assert_eq!(
                        &before.last_transition_time,
                        &condition.last_transition_time,
                        "{} kept its status {} but its transition time moved",
                        condition.type_,
                        condition.status
                    ),
                    _ => prop_assert_eq!(
                        &condition.last_transition_time,
                        &observation.now,
                        "{} changed its status but not its transition time",
                        condition.type_
                    ),
                }
            }
            let generation = status.observed_generation.unwrap_or_default();
            prop_assert!(
                generation >= self.observed_generation,
                "observedGeneration went back from {} to {generation}",
                self.observed_generation
            );
        }
        // At most one event per condition change, and only when there is one.
        let condition = |conditions: Option<&[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition]>,
                         type_: &str| {
            conditions
                .and_then(|c| c.iter().find(|c| c.type_ == type_))
                .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
        };
        let after_conditions = decision.status.as_ref().map(|s| s.conditions.as_slice());
        let mut events_by_group: BTreeMap<&[&str], usize> = BTreeMap::new();
        for event in &decision.events {
            let Some((group, transition)) = reported_by(&event.reason) else { continue };
            *events_by_group.entry(group).or_default() += 1;
            let moved = group.iter().filter(|type_| {
                let (before, after) = (condition(Some(stored_conditions), type_), condition(after_conditions, type_));
                if transition { before.map(|b| b.0) != after.map(|a| a.0) } else { before != after }
            });
            prop_assert!(moved.count() > 0, "event {} without a change of {group:?}", event.reason);
        }
        for (group, count) in events_by_group {
            prop_assert!(count <= group.len(), "{count} events for the changes of {group:?}: {:?}", decision.events);
        }
        if decision.status.as_ref() == stored && decision.actions.is_empty() {
            prop_assert!(decision.events.is_empty(), "events without any change: {:?}", decision.events);
        }
        // Progress held back (D58) is all a reconcile has to say: the stored status, kept as it is,
        // and the reconcile back once the refresh is due.
        if let Requeue::After { after, reason } = &decision.requeue
            && reason == PROGRESS_DUE
        {
            prop_assert!(stored.is_some_and(|s| decision.status.as_ref() == Some(s)), "held, yet a new status");
            prop_assert!(decision.actions.is_empty() && decision.events.is_empty(), "held with news: {decision:?}");
            prop_assert!(*after <= std::time::Duration::from_secs(10), "held for {after:?}");
            // What it held back is progress and nothing else: the status the same observation gives
            // where nothing is held (no write of the operator's on record).
            let mut unheld = observation.clone();
            if let Some(blueprint) = unheld.blueprint.as_mut() {
                std::sync::Arc::make_mut(blueprint).metadata.managed_fields = None;
            }
            let wanted = blueprint_machine::reconcile(&unheld).status.expect("a status");
            only_progress(stored.expect("a stored status"), &wanted)?;
        }
        Ok(())
    }

    /// The spec becomes stable and the operators make progress: the stop flag is lifted, broken dogus
    /// repaired, the registry is back.
    pub fn settle(&mut self) {
        if self.model.blueprint.blueprint_spec().and_then(|s| s.stopped) == Some(true) {
            apply_edit(&mut self.model, &Edit::Stopped(false));
        }
        self.model.broken.clear();
        self.model.registry_down = false;
    }

    /// Reconciles (each followed by operator progress) until `Completed=True`; the number it took.
    pub fn converge(&mut self, bound: usize) -> Result<usize, TestCaseError> {
        for round in 1..=bound {
            self.reconcile(None)?;
            if self.decisions.last().unwrap().state == State::Completed {
                // From then on, nothing more is decided.
                let observation = self.model.observe();
                let after = blueprint_machine::reconcile(&observation);
                self.check(&observation, &after)?;
                prop_assert!(after.actions.is_empty(), "actions after completion: {:#?}", after.actions);
                prop_assert!(after.events.is_empty(), "events after completion: {:?}", after.events);
                prop_assert_eq!(after.state, State::Completed);
                satisfied(&self.model)?;
                return Ok(round);
            }
            self.model.operators_progress();
        }
        let states: Vec<_> = self.decisions.iter().rev().take(bound).map(|d| d.state).collect();
        let conditions = self.decisions.last().and_then(|d| d.status.as_ref()).map(|s| {
            s.conditions
                .iter()
                .map(|c| format!("{}={} {}: {}", c.type_, c.status, c.reason, c.message))
                .collect::<Vec<_>>()
        });
        Err(TestCaseError::fail(format!(
            "not completed within {bound} reconciles (last first): {states:?}; last conditions: {conditions:#?}"
        )))
    }
}

/// Whether `wanted` differs from `stored` in progress only (D58, D60): the messages of
/// `EcosystemHealthy` and `Completed` (the dogus still waited for), and a state diff that became empty,
/// with the effective blueprint that the full diff had left no room for.
fn only_progress(
    stored: &blueprint_machine::api::BlueprintStatus,
    wanted: &blueprint_machine::api::BlueprintStatus,
) -> Result<(), TestCaseError> {
    let progress = [conditions::ECOSYSTEM_HEALTHY, conditions::COMPLETED];
    prop_assert!(
        stored.same_conditions_apart_from(wanted, &progress),
        "a held status differs in more than progress: {:#?}\nagainst {:#?}",
        stored.conditions,
        wanted.conditions
    );
    prop_assert_eq!(stored.observed_generation, wanted.observed_generation);
    let changes =
        |status: &blueprint_machine::api::BlueprintStatus| status.state_diff.as_ref().is_some_and(|d| !d.is_empty());
    if changes(stored) && !changes(wanted) {
        prop_assert!(
            stored.effective_blueprint.is_none() || stored.effective_blueprint == wanted.effective_blueprint,
            "a held emptied diff came with another effective blueprint"
        );
    } else {
        prop_assert_eq!(&stored.state_diff, &wanted.state_diff, "a held status with another state diff");
        prop_assert_eq!(&stored.effective_blueprint, &wanted.effective_blueprint);
    }
    Ok(())
}

fn simple(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}
