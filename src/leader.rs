//! Leader election on a `coordination.k8s.io` Lease, so that two replicas never both write.

use kube::Client;
use kube_lease_manager::{LeaseManagerBuilder, LeaseManagerError};
use tokio::sync::watch;

/// Seconds a leader's claim is valid without renewal.
const LEASE_DURATION: u64 = 15;
/// Seconds before expiry the leader renews.
const LEASE_GRACE: u64 = 5;

/// Holding (or waiting for) the lease. Dropping it releases the lease.
pub struct Leadership {
    state: watch::Receiver<bool>,
}

impl Leadership {
    pub async fn start(client: Client, namespace: &str, name: &str, identity: &str) -> Result<Self, LeaseManagerError> {
        let manager = LeaseManagerBuilder::new(client, name)
            .with_namespace(namespace)
            .with_identity(identity)
            .with_duration(LEASE_DURATION)
            .with_grace(LEASE_GRACE)
            .build()
            .await?;
        let (state, _task) = manager.watch().await;
        Ok(Leadership { state })
    }

    /// Waits until this replica leads. `false` if the lease manager stopped.
    pub async fn acquired(&mut self) -> bool {
        loop {
            if *self.state.borrow_and_update() {
                return true;
            }
            if self.state.changed().await.is_err() {
                return false;
            }
        }
    }

    /// Resolves when this replica no longer leads.
    pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut state = self.state.clone();
        async move {
            loop {
                if !*state.borrow_and_update() {
                    return;
                }
                if state.changed().await.is_err() {
                    return;
                }
            }
        }
    }
}
