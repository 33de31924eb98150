//! Leader election on a `coordination.k8s.io` Lease, so that two replicas never both write.
//!
//! The rules are client-go's: a candidate takes the Lease when nobody holds it, or when the holder's
//! record has not changed for a whole lease duration *as this candidate observed it* (its own
//! monotonic clock, so clock skew between nodes does not matter). The leader renews every
//! [`LeaseTiming::retry`], and it leads only while its last successful renewal is younger than
//! [`LeaseTiming::renew_deadline`], which is shorter than the lease duration: a leader whose renewals
//! fail stops writing before anyone else may take over. [`WriteGuard`] enforces that on the API client
//! itself (every write is checked, whatever sends it), and on shutdown the Lease is released so that a
//! standby takes over at once instead of after the lease duration.
//!
//! (kube-lease-manager, used before, renewed once per lease duration, could not say whether its last
//! renewal succeeded, and did not release the Lease when the process ended: a standby waited 8–15 s,
//! and a replaced leader wrote on for seconds after another had taken the Lease.)

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::watch;
use tokio::time::Instant;

use blueprint_machine::naming::FIELD_MANAGER;

/// The Lease's annotation naming the version of the operator that holds it (the leader: the one that
/// acts), renewed with every renewal: what `blueprint-operator version` reports of the cluster.
pub const VERSION_ANNOTATION: &str = "blueprint-operator.k8s.cloudogu.com/version";

/// How long a Lease holds, and how the leader keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTiming {
    /// How long others wait after the holder's last renewal before they take the Lease.
    pub duration: Duration,
    /// How long after its last successful renewal the leader stops writing (less than `duration`).
    pub renew_deadline: Duration,
    /// How often the leader renews and a candidate tries.
    pub retry: Duration,
}

impl Default for LeaseTiming {
    /// client-go's defaults.
    fn default() -> Self {
        LeaseTiming {
            duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry: Duration::from_secs(2),
        }
    }
}

/// Whether this replica may write now: it leads, and its last renewal is recent enough.
#[derive(Clone)]
pub struct WriteGuard(watch::Receiver<Option<Instant>>);

impl WriteGuard {
    /// A guard that always allows (no leader election).
    pub fn always() -> Self {
        WriteGuard(watch::channel(Some(far_future())).1)
    }

    pub fn may_write(&self) -> bool {
        self.0.borrow().is_some_and(|until| Instant::now() < until)
    }
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600)
}

/// Taking part in the election. Dropping it stops the election without releasing; call
/// [`Leadership::release`] on shutdown.
pub struct Leadership {
    /// Until when this replica may write; `None` while it does not lead.
    valid_until: watch::Receiver<Option<Instant>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Leadership {
    /// Starts campaigning for the Lease `name` in `namespace` as `identity`, running `version` (which
    /// the Lease shows while this replica holds it: `blueprint-operator version`).
    pub fn start(
        client: Client,
        namespace: &str,
        name: &str,
        identity: &str,
        version: &str,
        timing: LeaseTiming,
    ) -> Self {
        let (sender, valid_until) = watch::channel(None);
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let elector = Elector {
            api: Api::namespaced(client, namespace),
            name: name.to_owned(),
            identity: identity.to_owned(),
            version: version.to_owned(),
            timing,
            observed: None,
            valid_until: sender,
        };
        let task = tokio::spawn(elector.run(stopped));
        Leadership { valid_until, stop: Some(stop), task: Some(task) }
    }

    /// The guard for the API client of everything that writes.
    pub fn guard(&self) -> WriteGuard {
        WriteGuard(self.valid_until.clone())
    }

    /// Resolves once this replica leads.
    pub async fn acquired(&mut self) {
        let _ = self.valid_until.wait_for(Option::is_some).await;
    }

    /// Resolves when this replica, having led, no longer may write (its renewals failed for the renew
    /// deadline, or another identity holds the Lease).
    pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut valid_until = self.valid_until.clone();
        async move {
            loop {
                let until = *valid_until.borrow_and_update();
                match until {
                    None => return,
                    Some(until) => {
                        tokio::select! {
                            _ = tokio::time::sleep_until(until) => return,
                            changed = valid_until.changed() => if changed.is_err() { return },
                        }
                    }
                }
            }
        }
    }

    /// Stops campaigning and, if this replica holds the Lease, gives it up (bounded by `timeout`), so
    /// that a standby takes over at once.
    pub async fn release(mut self, timeout: Duration) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take()
            && tokio::time::timeout(timeout, task).await.is_err()
        {
            tracing::warn!("the Lease could not be released in time; a standby takes over once it expires");
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// The holder's record as this candidate last saw it, and when it saw it change.
struct Observed {
    holder: Option<String>,
    renew_time: Option<MicroTime>,
    at: Instant,
}

struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
    version: String,
    timing: LeaseTiming,
    observed: Option<Observed>,
    valid_until: watch::Sender<Option<Instant>>,
}

impl Elector {
    async fn run(mut self, mut stopped: tokio::sync::oneshot::Receiver<()>) {
        loop {
            let attempt = Instant::now();
            match self.try_acquire_or_renew().await {
                Ok(true) => {
                    if self.valid_until.borrow().is_none() {
                        tracing::info!(identity = %self.identity, lease = %self.name, "leading");
                    }
                    // Counted from when the attempt began: the server may have applied it at once.
                    self.valid_until.send_replace(Some(attempt + self.timing.renew_deadline));
                }
                Ok(false) => {
                    if self.valid_until.borrow().is_some() {
                        tracing::warn!(identity = %self.identity, "another replica holds the Lease: no longer leading");
                        self.valid_until.send_replace(None);
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "the Lease could not be read or renewed");
                    // Still leading until the renew deadline passes (the guard checks the time).
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(self.timing.retry) => {}
                _ = &mut stopped => break,
            }
        }
        if self.valid_until.borrow().is_some() {
            self.valid_until.send_replace(None);
            match self.release().await {
                Ok(()) => tracing::info!(lease = %self.name, "released the Lease"),
                Err(error) => tracing::warn!(%error, "could not release the Lease"),
            }
        }
    }

    /// Takes or renews the Lease: `Ok(true)` when this replica holds it afterwards.
    async fn try_acquire_or_renew(&mut self) -> Result<bool, kube::Error> {
        let now = MicroTime(Timestamp::now());
        let duration_seconds = i32::try_from(self.timing.duration.as_secs()).unwrap_or(i32::MAX);
        let Some(lease) = self.api.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    annotations: Some([(VERSION_ANNOTATION.to_owned(), self.version.clone())].into()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(duration_seconds),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..Default::default()
                }),
            };
            return match self
                .api
                .create(&PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() }, &lease)
                .await
            {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let changed = self.observed.as_ref().is_none_or(|o| o.holder != holder || o.renew_time != spec.renew_time);
        if changed {
            self.observed =
                Some(Observed { holder: holder.clone(), renew_time: spec.renew_time.clone(), at: Instant::now() });
        }
        let ours = holder.as_deref() == Some(self.identity.as_str());
        let held_duration =
            spec.lease_duration_seconds.map_or(self.timing.duration, |s| Duration::from_secs(s.max(0) as u64));
        let expired = self.observed.as_ref().is_some_and(|o| o.at + held_duration <= Instant::now());
        if !ours && holder.is_some() && !expired {
            return Ok(false);
        }
        let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!ours);
        let patch = json!({
            "metadata": {
                "resourceVersion": lease.metadata.resource_version,
                "annotations": {VERSION_ANNOTATION: self.version},
            },
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": duration_seconds,
                "acquireTime": if ours { spec.acquire_time.clone() } else { Some(now.clone()) },
                "renewTime": now,
                "leaseTransitions": transitions,
            },
        });
        match self.api.patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => Ok(true),
            // Someone else wrote it since it was read: decided again at the next attempt.
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Gives the Lease up: no holder, so that candidates take it at their next attempt.
    async fn release(&self) -> Result<(), kube::Error> {
        let Some(lease) = self.api.get_opt(&self.name).await? else { return Ok(()) };
        let holder = lease.spec.as_ref().and_then(|s| s.holder_identity.as_deref());
        if holder != Some(self.identity.as_str()) {
            return Ok(());
        }
        let patch = json!({
            "metadata": {"resourceVersion": lease.metadata.resource_version},
            "spec": {"holderIdentity": null, "leaseDurationSeconds": 1, "renewTime": MicroTime(Timestamp::now())},
        });
        self.api.patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch)).await.map(drop)
    }
}

/// The error of a write refused because this replica may not write.
#[derive(Debug, thiserror::Error)]
#[error("not the leader (or its last Lease renewal is too old): the write was not sent")]
pub struct NotLeading;

/// A tower layer for the API client: refuses every write (anything but GET) while the guard does not
/// allow writing. Reads (caches, watches) go on.
pub fn guard_layer(
    guard: WriteGuard,
) -> tower::filter::FilterLayer<
    impl Fn(http::Request<kube::client::Body>) -> Result<http::Request<kube::client::Body>, NotLeading> + Clone,
> {
    let guard = Arc::new(guard);
    tower::filter::FilterLayer::new(move |request: http::Request<kube::client::Body>| {
        if request.method() == http::Method::GET || guard.may_write() { Ok(request) } else { Err(NotLeading) }
    })
}
