//! Trailing-edge debounce of reconcile triggers, bounded: a burst of changes becomes one reconcile
//! `window` after the last of them, but never later than `max_delay` after the first.
//!
//! kube-runtime's own debounce pushes a reconcile back with every new trigger, without bound: a
//! Component label edited every 0.26 s held a Blueprint spec change for as long as the edits went on.

use std::collections::HashMap;
use std::hash::Hash;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use futures::stream::{Fuse, StreamExt};
use tokio::time::Instant;
use tokio_util::time::{DelayQueue, delay_queue};

/// When a trigger that keeps coming is let through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Debounce {
    /// Quiet time after the last trigger.
    pub window: Duration,
    /// The longest a trigger waits, however many follow it (at least `window`).
    pub max_delay: Duration,
}

impl Debounce {
    /// The maximum delay when none is configured (or the window is longer).
    pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(5);

    /// A window with the default maximum delay.
    pub fn window(window: Duration) -> Self {
        Debounce { window, max_delay: Self::DEFAULT_MAX_DELAY.max(window) }
    }

    /// When a key first triggered at `first` and last at `last` is let through.
    pub fn deadline(&self, first: Instant, last: Instant) -> Instant {
        (last + self.window).min(first + self.max_delay.max(self.window))
    }
}

struct Waiting {
    key: delay_queue::Key,
    first: Instant,
}

/// The stream of `input`'s items, each let through once per burst (see the module documentation).
pub struct Debounced<S: Stream> {
    input: Fuse<S>,
    policy: Debounce,
    queue: DelayQueue<S::Item>,
    waiting: HashMap<S::Item, Waiting>,
}

impl<S> Debounced<S>
where
    S: Stream,
    S::Item: Clone + Eq + Hash,
{
    pub fn new(input: S, policy: Debounce) -> Self {
        Debounced { input: input.fuse(), policy, queue: DelayQueue::new(), waiting: HashMap::new() }
    }

    fn trigger(&mut self, item: S::Item) {
        let now = Instant::now();
        match self.waiting.get(&item) {
            Some(waiting) => {
                let deadline = self.policy.deadline(waiting.first, now);
                self.queue.reset_at(&waiting.key, deadline);
            }
            None => {
                let key = self.queue.insert_at(item.clone(), self.policy.deadline(now, now));
                self.waiting.insert(item, Waiting { key, first: now });
            }
        }
    }
}

impl<S> Stream for Debounced<S>
where
    S: Stream + Unpin,
    S::Item: Clone + Eq + Hash + Unpin,
{
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        while let Poll::Ready(Some(item)) = this.input.poll_next_unpin(cx) {
            this.trigger(item);
        }
        match this.queue.poll_expired(cx) {
            Poll::Ready(Some(expired)) => {
                let item = expired.into_inner();
                this.waiting.remove(&item);
                Poll::Ready(Some(item))
            }
            // Nothing waits: done once the input is, else woken by the input.
            Poll::Ready(None) if this.input.is_done() => Poll::Ready(None),
            Poll::Ready(None) | Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use futures::channel::mpsc;

    use super::*;

    const POLICY: Debounce = Debounce { window: Duration::from_secs(1), max_delay: Duration::from_secs(5) };

    #[tokio::test(start_paused = true)]
    async fn a_burst_becomes_one_item_a_window_after_its_last_trigger() {
        let (sender, receiver) = mpsc::unbounded();
        let mut debounced = Debounced::new(receiver, POLICY);
        let start = Instant::now();
        tokio::spawn(async move {
            for _ in 0..3 {
                sender.unbounded_send("a").unwrap();
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            sender.unbounded_send("b").unwrap();
        });
        let first = debounced.next().await.unwrap();
        assert_eq!((first, start.elapsed()), ("a", Duration::from_millis(1600)));
        assert_eq!(debounced.next().await, Some("b"));
        assert_eq!(start.elapsed(), Duration::from_millis(1900));
        assert_eq!(debounced.next().await, None, "ends with its input");
    }

    /// The finding: triggers every 0.26 s for 18 s held the reconcile for all of that time.
    #[tokio::test(start_paused = true)]
    async fn triggers_that_keep_coming_are_let_through_after_the_maximum_delay() {
        let (sender, receiver) = mpsc::unbounded();
        let mut debounced = Debounced::new(receiver, POLICY);
        let start = Instant::now();
        tokio::spawn(async move {
            for _ in 0..70 {
                if sender.unbounded_send("blueprint").is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(260)).await;
            }
        });
        let mut let_through = Vec::new();
        while let Some(item) = debounced.next().await {
            let_through.push((item, start.elapsed()));
        }
        // Each at most `max_delay` after the first trigger it covers (at 0, 5.2, 10.4 and 15.6 s); the
        // last one a window after the last trigger (17.94 s).
        let millis: Vec<u128> = let_through.iter().map(|(_, at)| at.as_millis()).collect();
        assert_eq!(millis, [5000, 10200, 15400, 18940], "70 triggers in 18 s: 4 reconciles, not 70 and not 0");
    }
}
