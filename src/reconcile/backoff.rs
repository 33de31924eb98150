//! Per-Blueprint exponential backoff with jitter for transient failures (initial 1 s, at most 5 min),
//! forgotten after a reconcile that needs no backoff.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use backoff::backoff::Backoff;
use backoff::{ExponentialBackoff, ExponentialBackoffBuilder};

pub const INITIAL: Duration = Duration::from_secs(1);
pub const MAX: Duration = Duration::from_secs(300);

#[derive(Default)]
pub struct BackoffTracker {
    per_object: Mutex<HashMap<String, ExponentialBackoff>>,
}

impl BackoffTracker {
    /// The delay before the next attempt for `name`; grows with each call until [`reset`](Self::reset).
    pub fn next(&self, name: &str) -> Duration {
        let mut map = self.per_object.lock().expect("not poisoned");
        let backoff = map.entry(name.to_owned()).or_insert_with(|| {
            ExponentialBackoffBuilder::new()
                .with_initial_interval(INITIAL)
                .with_max_interval(MAX)
                .with_multiplier(2.0)
                .with_randomization_factor(0.2)
                // Never give up: a Blueprint is retried as long as it exists.
                .with_max_elapsed_time(None)
                .build()
        });
        backoff.next_backoff().unwrap_or(MAX)
    }

    pub fn reset(&self, name: &str) {
        self.per_object.lock().expect("not poisoned").remove(name);
    }

    /// How many objects are in backoff.
    pub fn len(&self) -> usize {
        self.per_object.lock().expect("not poisoned").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_to_the_maximum_and_resets() {
        let tracker = BackoffTracker::default();
        let first = tracker.next("b");
        assert!(first >= Duration::from_millis(800) && first <= Duration::from_millis(1200), "{first:?}");
        let mut last = first;
        for _ in 0..20 {
            last = tracker.next("b");
        }
        assert!(last <= MAX + MAX / 5 && last >= MAX - MAX / 5, "{last:?}");
        assert_eq!(tracker.len(), 1);
        tracker.reset("b");
        assert!(tracker.is_empty());
        assert!(tracker.next("b") <= Duration::from_millis(1200));
    }
}
