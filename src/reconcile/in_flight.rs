//! The reconciles in flight: a shutdown waits for them, and only for them.

use std::sync::Arc;

/// Counts the reconciles in flight.
#[derive(Clone, Default)]
pub struct InFlight(Arc<tokio::sync::watch::Sender<usize>>);

impl InFlight {
    /// Counts one reconcile until the guard is dropped.
    pub fn enter(&self) -> InFlightGuard {
        self.0.send_modify(|n| *n += 1);
        InFlightGuard(self.0.clone())
    }

    /// Resolves when no reconcile is in flight.
    pub async fn idle(&self) {
        let mut receiver = self.0.subscribe();
        let _ = receiver.wait_for(|n| *n == 0).await;
    }
}

pub struct InFlightGuard(Arc<tokio::sync::watch::Sender<usize>>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}
