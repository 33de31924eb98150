//! The events of one decision, in one log. Events arise anywhere in a reconcile (a condition's
//! transition, a diff that changed, a stage that applied something); the log publishes them in a fixed
//! order of what they are about, whatever order they were logged in, so that a user reads them as a
//! story: the request that asked for it, validity, health, the diff, what blocks, what was applied, what is awaited, completion. (An
//! action that fails is reported after all of them, by `record_failure`.)

use crate::decision::Event;

/// What an event is about; events are published in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Topic {
    /// A reconcile asked for by hand is handled: why this reconcile happened.
    Request,
    /// The spec became invalid, or its problem changed.
    Validity,
    /// The ecosystem became healthy or unhealthy.
    Health,
    /// The state diff (dogus and config, then components) changed.
    Diff,
    /// The blueprint became not executable, or its problem changed.
    Executable,
    /// The blueprint is stopped.
    Stopped,
    /// The operator's own upgrade began or completed.
    SelfUpgrade,
    /// A stage applied its actions (config, components, dogus: logged in that order).
    Applied,
    /// Dogus are awaited to run the wanted version and config.
    Waiting,
    /// The blueprint became completed.
    Completed,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct EventLog {
    entries: Vec<(Topic, Event)>,
}

impl EventLog {
    pub(crate) fn log(&mut self, topic: Topic, event: Event) {
        self.entries.push((topic, event));
    }

    /// The events in publishing order (by topic; within a topic, as logged).
    pub(crate) fn into_events(mut self) -> Vec<Event> {
        self.entries.sort_by_key(|(topic, _)| *topic);
        self.entries.into_iter().map(|(_, event)| event).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events;

    #[test]
    fn events_are_published_by_topic_then_in_the_order_logged() {
        let mut log = EventLog::default();
        log.log(Topic::Completed, events::normal("Completed", ""));
        log.log(Topic::Applied, events::normal("ComponentsApplied", ""));
        log.log(Topic::Validity, events::warning("BlueprintSpecInvalid", ""));
        log.log(Topic::Applied, events::normal("DogusApplied", ""));
        let reasons: Vec<String> = log.into_events().into_iter().map(|e| e.reason).collect();
        assert_eq!(reasons, ["BlueprintSpecInvalid", "ComponentsApplied", "DogusApplied", "Completed"]);
    }
}
