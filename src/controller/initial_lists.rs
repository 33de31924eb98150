//! The caches' initial lists as streaming lists: one WATCH with `sendInitialEvents=true` per cache in
//! place of a LIST and then a WATCH. That halves the start's requests (and every relist's), and no
//! list page is held whole while it is decoded: the objects arrive one watch event at a time.
//!
//! An API server with the WatchList feature gate off (Kubernetes 1.27 to 1.31 by default, and 1.33)
//! refuses the parameter with 422 Invalid, and kube-runtime's watcher would retry the refused request
//! for ever. Here the refused watcher starts again with a LIST and a WATCH (at the start, or at any
//! later relist), and so does every watcher started after it in this process: the refusal is
//! remembered.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use kube::api::Api;
use kube::runtime::watcher;
use kube::{Error, Resource};
use serde::de::DeserializeOwned;

/// How this process's watchers fill their caches; clones share what the API server answered.
#[derive(Clone, Default)]
pub struct InitialLists {
    refused: Arc<AtomicBool>,
}

impl InitialLists {
    /// The watch events of `api` with `config`, first filled by a streaming list, or by a LIST where
    /// the API server refuses streaming lists.
    pub fn watch<K>(&self, api: Api<K>, config: watcher::Config) -> Watch<K>
    where
        K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
    {
        if self.refused() {
            return Watch { current: watcher(api, config).boxed(), fallback: None, lists: self.clone() };
        }
        let streaming = watcher(api.clone(), config.clone().streaming_lists()).boxed();
        Watch { current: streaming, fallback: Some((api, config)), lists: self.clone() }
    }

    /// Whether the API server refused a streaming list.
    pub fn refused(&self) -> bool {
        self.refused.load(Ordering::Relaxed)
    }
}

/// The events of one watcher (see [`InitialLists::watch`]).
pub struct Watch<K> {
    current: BoxStream<'static, watcher::Result<watcher::Event<K>>>,
    /// What a LIST and WATCH needs, while the watcher asks for streaming lists: kept after the server
    /// accepted one, since a relist (after 410 Gone) asks again, and a server whose WatchList gate was
    /// turned off meanwhile (an upgrade to 1.33, a control plane of mixed versions) refuses it then.
    fallback: Option<(Api<K>, watcher::Config)>,
    lists: InitialLists,
}

// The inner stream is boxed and the rest is never pinned.
impl<K> Unpin for Watch<K> {}

impl<K> Stream for Watch<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    type Item = watcher::Result<watcher::Event<K>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            match ready!(this.current.poll_next_unpin(cx)) {
                Some(Err(error)) if this.fallback.is_some() && refuses_streaming(&error) => {
                    let (api, config) = this.fallback.take().expect("checked above");
                    if !this.lists.refused.swap(true, Ordering::Relaxed) {
                        tracing::info!(%error, "the API server refuses streaming lists: the caches list, then watch");
                    }
                    this.current = watcher(api, config).boxed();
                }
                other => return Poll::Ready(other),
            }
        }
    }
}

/// The refusal of `sendInitialEvents`: the request is invalid (422, or 400 from an older server's
/// parameter checks). Any other error (the server unreachable, RBAC) is the watcher's to retry.
fn refuses_streaming(error: &watcher::Error) -> bool {
    matches!(error, watcher::Error::WatchStartFailed(Error::Api(status)) if status.code == 422 || status.code == 400)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn start_failed(code: u16) -> watcher::Error {
        watcher::Error::WatchStartFailed(Error::Api(Box::new(Status::failure("refused", "Invalid").with_code(code))))
    }

    #[test]
    fn only_an_invalid_request_refuses_streaming_lists() {
        assert!(refuses_streaming(&start_failed(422)));
        assert!(refuses_streaming(&start_failed(400)));
        assert!(!refuses_streaming(&start_failed(403)), "RBAC: a LIST would be refused too");
        assert!(!refuses_streaming(&start_failed(500)));
        assert!(!refuses_streaming(&watcher::Error::InitialListFailed(Error::Api(Box::new(
            Status::failure("refused", "Invalid").with_code(422)
        )))));
    }
}
