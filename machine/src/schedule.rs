//! Which of a decision's actions may run at once, and which starts first (D59).
//!
//! The stages keep their order where it matters: an action waits for
//! - the self-upgrade and every component action before it, and each of those for everything before
//!   it (they are applied one by one, in the order decided);
//! - the previous action on the same object;
//! - if it writes config: every pause before it (a dogu is paused before its config changes);
//! - if it is a dogu's (create, upgrade, resume, delete): the global config's writes and that dogu's own
//!   config writes before it.
//!
//! Nothing else: a dogu's CR does not wait for another dogu's config. Of the actions that may start, the
//! executor starts first a dogu's config writes just before that dogu's own action, so that each dogu
//! follows its config at once and the dogu operator starts on the first dogu while the later dogus'
//! config is still being written. (All config first, then all dogus, kept a 1,000-dogu install's first
//! Dogu CR back by 0.8-1.8 s on a real API server, docs/performance.md.)
//!
//! A failure stops what it could spoil: no further action of its stage or a later one starts, while
//! the earlier stages' actions still do, so that an earlier stage is always applied completely and its
//! events stay true ([`crate::record_failure`] drops the events of the failed stage and the later ones).
//!
//! The [`Scheduler`] is pure: the executor asks it what to start and tells it what ended; the
//! property tests drive it the same way.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use crate::decision::{Action, ConfigTarget, Operation, Stage};

/// The scheduling state of one decision's actions.
#[derive(Debug)]
pub struct Scheduler {
    stages: Vec<Stage>,
    /// Per action: every action below this index is performed before it starts.
    after_all: Vec<usize>,
    /// Per action: how many of its particular prerequisites are not performed yet.
    missing: Vec<usize>,
    /// Per action: the later actions that name it as a prerequisite.
    dependents: Vec<Vec<usize>>,
    /// Per index `i`: the actions whose `after_all` is `i`.
    waiting_for_prefix: Vec<Vec<usize>>,
    /// Per action: its place among actions that may start at the same time (lower first).
    rank: Vec<usize>,
    ready: BinaryHeap<Reverse<(usize, usize)>>,
    performed: Vec<bool>,
    /// The lowest index not performed yet.
    prefix: usize,
    /// The earliest stage that failed, with the lowest failed index of that stage.
    failure: Option<(Stage, usize)>,
}

impl Scheduler {
    pub fn new(actions: &[Action]) -> Self {
        let n = actions.len();
        let mut after_all = vec![0; n];
        let mut prerequisites: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut last_on_object: BTreeMap<String, usize> = BTreeMap::new();
        let mut last_barrier: Option<usize> = None;
        let mut last_pause: Option<usize> = None;
        // Config writes since the last barrier: the global config's, and each dogu's by name.
        let mut global_writes: Vec<usize> = Vec::new();
        let mut dogu_writes: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (index, action) in actions.iter().enumerate() {
            let object = action.operation.object();
            let below = |i: Option<usize>| i.map_or(0, |i| i + 1);
            if is_barrier(action) {
                after_all[index] = index;
                last_barrier = Some(index);
                last_pause = None;
                global_writes.clear();
                dogu_writes.clear();
            } else {
                after_all[index] = below(last_barrier);
                let own = &mut prerequisites[index];
                own.extend(last_on_object.get(&object).copied());
                match (&action.operation, action.stage) {
                    (Operation::WriteConfig { target, .. }, _) => {
                        after_all[index] = after_all[index].max(below(last_pause));
                        match target {
                            ConfigTarget::Global => global_writes.push(index),
                            ConfigTarget::Dogu(dogu) | ConfigTarget::Sensitive(dogu) => {
                                dogu_writes.entry(dogu.as_str()).or_default().push(index);
                            }
                        }
                    }
                    (_, Stage::Config) => last_pause = Some(index),
                    (operation, Stage::Dogus) => {
                        own.extend(&global_writes);
                        if let Some(writes) = dogu_name(operation).and_then(|dogu| dogu_writes.get(dogu)) {
                            own.extend(writes);
                        }
                    }
                    _ => {}
                }
                own.sort_unstable();
                own.dedup();
            }
            last_on_object.insert(object, index);
        }
        let rank = ranks(actions);
        let mut dependents = vec![Vec::new(); n];
        let mut missing = vec![0; n];
        for (index, own) in prerequisites.iter().enumerate() {
            missing[index] = own.len();
            for &prerequisite in own {
                dependents[prerequisite].push(index);
            }
        }
        let mut waiting_for_prefix = vec![Vec::new(); n + 1];
        for (index, &prefix) in after_all.iter().enumerate() {
            waiting_for_prefix[prefix].push(index);
        }
        let mut scheduler = Scheduler {
            stages: actions.iter().map(|a| a.stage).collect(),
            after_all,
            missing,
            dependents,
            waiting_for_prefix,
            rank,
            ready: BinaryHeap::new(),
            performed: vec![false; n],
            prefix: 0,
            failure: None,
        };
        for index in std::mem::take(&mut scheduler.waiting_for_prefix[0]) {
            if scheduler.missing[index] == 0 {
                scheduler.ready.push(Reverse((scheduler.rank[index], index)));
            }
        }
        scheduler
    }

    /// The next action to start, if one may start now (each is handed out once).
    pub fn start(&mut self) -> Option<usize> {
        while let Some(Reverse((_, index))) = self.ready.pop() {
            match self.failure {
                Some((stage, _)) if self.stages[index] >= stage => continue,
                _ => return Some(index),
            }
        }
        None
    }

    /// Tells that the action `index` ended: performed, or failed.
    pub fn finished(&mut self, index: usize, performed: bool) {
        if !performed {
            let failed = (self.stages[index], index);
            self.failure = Some(self.failure.map_or(failed, |earlier| earlier.min(failed)));
            return;
        }
        self.performed[index] = true;
        // First the prefix: an action released by both conditions now is released once, below.
        while self.prefix < self.performed.len() && self.performed[self.prefix] {
            self.prefix += 1;
            for waiting in std::mem::take(&mut self.waiting_for_prefix[self.prefix]) {
                if self.missing[waiting] == 0 {
                    self.ready.push(Reverse((self.rank[waiting], waiting)));
                }
            }
        }
        for dependent in std::mem::take(&mut self.dependents[index]) {
            self.missing[dependent] -= 1;
            if self.missing[dependent] == 0 && self.after_all[dependent] <= self.prefix {
                self.ready.push(Reverse((self.rank[dependent], dependent)));
            }
        }
    }

    /// How many actions were performed.
    pub fn performed(&self) -> usize {
        self.performed.iter().filter(|&&performed| performed).count()
    }

    /// The failure to report: of the earliest stage that failed, the lowest index.
    pub fn failure(&self) -> Option<usize> {
        self.failure.map(|(_, index)| index)
    }
}

/// The self-upgrade and the components are applied one by one, in the order decided.
fn is_barrier(action: &Action) -> bool {
    matches!(action.stage, Stage::SelfUpgrade | Stage::Components)
}

/// The dogu an action of the dogu stage acts on.
fn dogu_name(operation: &Operation) -> Option<&str> {
    match operation {
        Operation::CreateDogu { object } => object.metadata.name.as_deref(),
        Operation::PatchDogu { name, .. } | Operation::DeleteDogu { name } => Some(name),
        _ => None,
    }
}

/// The order among actions that may start at once: a dogu's config writes right before that dogu's own
/// action, everything else in the decided order.
fn ranks(actions: &[Action]) -> Vec<usize> {
    let mut first_dogu_action: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, action) in actions.iter().enumerate().rev() {
        if action.stage == Stage::Dogus
            && let Some(dogu) = dogu_name(&action.operation)
        {
            first_dogu_action.insert(dogu, index);
        }
    }
    let key = |index: usize| match &actions[index].operation {
        Operation::WriteConfig { target: ConfigTarget::Dogu(dogu) | ConfigTarget::Sensitive(dogu), .. } => {
            first_dogu_action.get(dogu.as_str()).copied().filter(|&at| at > index).unwrap_or(index)
        }
        _ => index,
    };
    let mut order: Vec<usize> = (0..actions.len()).collect();
    order.sort_by_key(|&index| (key(index), index));
    let mut rank = vec![0; actions.len()];
    for (place, index) in order.into_iter().enumerate() {
        rank[index] = place;
    }
    rank
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Dogu;
    use crate::observation::ObjectBase;

    fn write(target: ConfigTarget) -> Action {
        let operation =
            Operation::WriteConfig { target, base: ObjectBase::Absent, set: Vec::new(), remove: Vec::new() };
        Action { stage: Stage::Config, reason: String::new(), operation }
    }

    fn pause(dogu: &str) -> Action {
        let operation = Operation::PatchDogu { name: dogu.into(), patch: serde_json::json!({}) };
        Action { stage: Stage::Config, reason: "pause".into(), operation }
    }

    fn create(dogu: &str) -> Action {
        let mut object = Dogu::default();
        object.metadata.name = Some(dogu.into());
        Action {
            stage: Stage::Dogus,
            reason: String::new(),
            operation: Operation::CreateDogu { object: Box::new(object) },
        }
    }

    fn patch(dogu: &str) -> Action {
        let operation = Operation::PatchDogu { name: dogu.into(), patch: serde_json::json!({}) };
        Action { stage: Stage::Dogus, reason: String::new(), operation }
    }

    fn component(name: &str) -> Action {
        let operation = Operation::DeleteComponent { name: name.into() };
        Action { stage: Stage::Components, reason: String::new(), operation }
    }

    /// Everything that may start now, in the order handed out.
    fn startable(scheduler: &mut Scheduler) -> Vec<usize> {
        std::iter::from_fn(|| scheduler.start()).collect()
    }

    #[test]
    fn each_dogu_follows_its_own_config_and_the_global_config() {
        let dogu = |name: &str| ConfigTarget::Dogu(name.into());
        let sensitive = |name: &str| ConfigTarget::Sensitive(name.into());
        // 0 global, 1 a's config, 2 a's secret, 3 b's config, 4 c's config (c has no dogu action),
        // 5 create a, 6 create b.
        let actions = [
            write(ConfigTarget::Global),
            write(dogu("a")),
            write(sensitive("a")),
            write(dogu("b")),
            write(dogu("c")),
            create("a"),
            create("b"),
        ];
        let mut scheduler = Scheduler::new(&actions);
        assert_eq!(startable(&mut scheduler), [0, 4, 1, 2, 3], "every config write at once, a's before b's");
        scheduler.finished(1, true);
        scheduler.finished(3, true);
        assert!(startable(&mut scheduler).is_empty(), "the dogus wait for the global config");
        scheduler.finished(0, true);
        assert_eq!(startable(&mut scheduler), [6], "b's config is written; a's secret is not");
        scheduler.finished(2, true);
        assert_eq!(startable(&mut scheduler), [5]);
        for index in [4, 5, 6] {
            scheduler.finished(index, true);
        }
        assert_eq!((scheduler.performed(), scheduler.failure()), (7, None));
    }

    #[test]
    fn the_pauses_come_before_every_config_write_and_the_same_object_in_order() {
        // 0, 1 pause a and b; 2 global; 3 a's config; 4 upgrade (and resume) a; 5 resume b; 6 a's again.
        let actions = [
            pause("a"),
            pause("b"),
            write(ConfigTarget::Global),
            write(ConfigTarget::Dogu("a".into())),
            patch("a"),
            patch("b"),
            patch("a"),
        ];
        let mut scheduler = Scheduler::new(&actions);
        assert_eq!(startable(&mut scheduler), [0, 1]);
        scheduler.finished(1, true);
        assert!(startable(&mut scheduler).is_empty(), "b's pause alone does not release the writes");
        scheduler.finished(0, true);
        assert_eq!(startable(&mut scheduler), [2, 3]);
        scheduler.finished(3, true);
        scheduler.finished(2, true);
        assert_eq!(startable(&mut scheduler), [4, 5], "b waits for its own pause and the global config");
        scheduler.finished(5, true);
        assert!(startable(&mut scheduler).is_empty());
        scheduler.finished(4, true);
        assert_eq!(startable(&mut scheduler), [6], "the second action on dogus/a after the first");
    }

    #[test]
    fn components_are_applied_one_by_one_between_the_config_and_the_dogus() {
        let actions = [write(ConfigTarget::Dogu("a".into())), component("x"), component("y"), create("a")];
        let mut scheduler = Scheduler::new(&actions);
        for index in 0..actions.len() {
            assert_eq!(startable(&mut scheduler), [index]);
            scheduler.finished(index, true);
        }
        assert!(startable(&mut scheduler).is_empty());
    }

    #[test]
    fn a_failure_stops_its_stage_and_the_later_ones_but_not_the_earlier() {
        let dogu = |name: &str| ConfigTarget::Dogu(name.into());
        let actions = [write(dogu("a")), write(dogu("b")), create("a"), create("b"), create("c")];
        let mut scheduler = Scheduler::new(&actions);
        assert_eq!(startable(&mut scheduler), [0, 1, 4]);
        scheduler.finished(0, true);
        assert_eq!(startable(&mut scheduler), [2]);
        scheduler.finished(2, false);
        assert_eq!(scheduler.failure(), Some(2));
        scheduler.finished(4, true);
        scheduler.finished(1, true);
        assert!(startable(&mut scheduler).is_empty(), "b's CR does not start after a dogu failed");
        assert_eq!(scheduler.performed(), 3);

        // A config failure after a dogu's: the earlier stage is the one reported.
        let mut scheduler = Scheduler::new(&actions);
        assert_eq!(startable(&mut scheduler), [0, 1, 4]);
        scheduler.finished(4, false);
        assert!(startable(&mut scheduler).is_empty());
        scheduler.finished(0, true);
        assert!(startable(&mut scheduler).is_empty(), "no dogu starts after a dogu failed");
        scheduler.finished(1, false);
        assert_eq!(scheduler.failure(), Some(1));
    }

    #[test]
    fn nothing_to_do_is_done_at_once() {
        let mut scheduler = Scheduler::new(&[]);
        assert_eq!((scheduler.start(), scheduler.performed(), scheduler.failure()), (None, 0, None));
    }
}
