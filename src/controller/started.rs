//! What the readiness probe learns from the controller: whether its caches are synced, and whether it
//! waits for this operator's own kinds to be served.
//!
//! A kind is not served while a Go operator's Blueprint CRD (one API version) is still in place, or
//! before the BlueprintMask CRD exists; a Go operator 3.x's CRD serves v3 under its own schema, which
//! the start's discovery tells from ours (`controller::own_crd_discovered`). The way in from a Go
//! operator installs the operator first (`helm install --skip-crds`) and applies our CRDs once its
//! webhook serves, so that no stored Blueprint is ever unreadable (docs/migration.md, step 3).
//! Meanwhile the replica that leads is ready with its webhook, as a standby is: the API server converts
//! only through ready replicas, and the CRD that points at them is applied only after one is ready. Its
//! watches retry until the kinds are served; then the caches fill as at any start.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use futures::StreamExt;
use kube::runtime::watcher;

use super::triggers::Events;

/// The controller's start, as the readiness probe sees it.
#[derive(Debug, Default)]
pub struct Started {
    synced: AtomicBool,
    /// One bit per [`OwnKind`] whose list the API server answered with 404 since it last listed.
    unserved: AtomicU8,
}

/// The kinds this operator's chart installs the CRDs of.
#[derive(Clone, Copy, Debug)]
pub enum OwnKind {
    Blueprint,
    BlueprintMask,
}

impl OwnKind {
    fn bit(self) -> u8 {
        match self {
            OwnKind::Blueprint => 1,
            OwnKind::BlueprintMask => 2,
        }
    }

    fn resource(self) -> &'static str {
        match self {
            OwnKind::Blueprint => "blueprints.k8s.cloudogu.com/v3",
            OwnKind::BlueprintMask => "blueprintmasks.k8s.cloudogu.com/v3",
        }
    }
}

impl Started {
    /// Every cache has listed its objects.
    pub fn synced(&self) -> bool {
        self.synced.load(Ordering::Relaxed)
    }

    pub fn mark_synced(&self) {
        self.synced.store(true, Ordering::Relaxed);
    }

    /// The caches cannot fill because one of this operator's kinds is not served (yet).
    pub fn waiting_for_crds(&self) -> bool {
        !self.synced() && self.unserved.load(Ordering::Relaxed) != 0
    }

    /// Notes whether `kind` is served; whether that changed.
    pub fn note(&self, kind: OwnKind, served: bool) -> bool {
        let before = if served {
            self.unserved.fetch_and(!kind.bit(), Ordering::Relaxed)
        } else {
            self.unserved.fetch_or(kind.bit(), Ordering::Relaxed)
        };
        (before & kind.bit() == 0) != served
    }

    /// `events` of `kind`'s watch, noting whether its list finds the kind served: a 404 marks it
    /// missing (once logged), a completed list served again.
    pub fn note_served<K: Send + 'static>(self: &std::sync::Arc<Self>, kind: OwnKind, events: Events<K>) -> Events<K> {
        let started = self.clone();
        events
            .inspect(move |event| {
                let served = match event {
                    // A path the API server does not serve is a plain-text 404, which kube makes a
                    // Status with that code and no reason (`is_not_found` looks at the reason only).
                    // The cache asks with a streaming list (a watch) or, where those are refused, a list.
                    Err(
                        watcher::Error::InitialListFailed(kube::Error::Api(status))
                        | watcher::Error::WatchStartFailed(kube::Error::Api(status)),
                    ) if status.code == 404 => false,
                    Ok(watcher::Event::InitDone) => true,
                    _ => return,
                };
                if !started.note(kind, served) {
                    return;
                }
                if served {
                    tracing::info!(resource = kind.resource(), "served now");
                } else {
                    tracing::warn!(
                        resource = kind.resource(),
                        "not served: waiting for this operator's CRD (the webhook serves meanwhile; docs/migration.md)"
                    );
                }
            })
            .boxed()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use futures::StreamExt;
    use kube::core::Status;
    use kube::runtime::watcher;

    use super::*;

    fn not_found_status() -> Box<Status> {
        Status::failure("404 page not found", "Failed to parse error data").with_code(404).boxed()
    }

    /// The 404 of a streaming list (a watch), the caches' way on a server that serves them.
    fn not_found() -> Result<watcher::Event<()>, watcher::Error> {
        Err(watcher::Error::WatchStartFailed(kube::Error::Api(not_found_status())))
    }

    /// The 404 of a list, where the server refuses streaming lists.
    fn list_not_found() -> Result<watcher::Event<()>, watcher::Error> {
        Err(watcher::Error::InitialListFailed(kube::Error::Api(not_found_status())))
    }

    fn forbidden() -> Result<watcher::Event<()>, watcher::Error> {
        let status = Status::failure("forbidden", "Forbidden").with_code(403);
        Err(watcher::Error::InitialListFailed(kube::Error::Api(status.boxed())))
    }

    async fn drain(started: &Arc<Started>, kind: OwnKind, events: Vec<Result<watcher::Event<()>, watcher::Error>>) {
        started.note_served(kind, futures::stream::iter(events).boxed()).collect::<Vec<_>>().await;
    }

    #[tokio::test]
    async fn a_kind_not_served_waits_until_both_kinds_list_and_the_caches_sync() {
        let started = Arc::new(Started::default());
        assert!(!started.waiting_for_crds(), "nothing listed yet: not waiting, not ready");
        drain(&started, OwnKind::Blueprint, vec![not_found(), not_found()]).await;
        drain(&started, OwnKind::BlueprintMask, vec![list_not_found()]).await;
        assert!(started.waiting_for_crds());
        // The Blueprint CRD applied: its list completes; the mask's is still missing.
        drain(&started, OwnKind::Blueprint, vec![Ok(watcher::Event::Init), Ok(watcher::Event::InitDone)]).await;
        assert!(started.waiting_for_crds(), "the BlueprintMask kind is still not served");
        drain(&started, OwnKind::BlueprintMask, vec![Ok(watcher::Event::InitDone)]).await;
        assert!(!started.waiting_for_crds(), "both served: ready once the caches sync, not before");
        started.mark_synced();
        assert!(started.synced() && !started.waiting_for_crds());
    }

    /// Only a kind the API server does not know is waited for: an error of another kind (RBAC, the
    /// server down) leaves the replica unready, as before.
    #[tokio::test]
    async fn other_list_errors_are_not_waiting_for_a_crd() {
        let started = Arc::new(Started::default());
        drain(&started, OwnKind::Blueprint, vec![forbidden()]).await;
        assert!(!started.waiting_for_crds());
    }
}
