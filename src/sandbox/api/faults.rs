//! Fault controls and the request log: what the tests and the sandbox use to make the emulated
//! cluster misbehave (injected errors, slow responses, dropped watches, compaction) and to see
//! what the operator asked of it.

use std::time::Duration;

use super::Emulator;

/// A request as the emulator received it (for tests and the sandbox's summary).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedRequest {
    pub method: String,
    pub path: String,
    pub query: String,
    pub user_agent: String,
    pub status: u16,
    /// The request body (the emulator is the cluster: this may hold what the cluster holds).
    pub body: String,
}

impl LoggedRequest {
    /// The Kubernetes verb of the request.
    pub fn verb(&self) -> &'static str {
        let uri = if self.query.is_empty() { self.path.clone() } else { format!("{}?{}", self.path, self.query) };
        let request =
            http::Request::builder().method(self.method.as_str()).uri(uri).body(()).expect("a logged request");
        crate::metrics::verb(&request)
    }
}

/// An injected failure: the next `remaining` requests whose method and path match are answered with
/// `status`.
#[derive(Clone, Debug)]
struct FaultRule {
    method: Option<String>,
    path_contains: String,
    remaining: usize,
    status: u16,
}

#[derive(Default)]
pub(super) struct Faults {
    rules: Vec<FaultRule>,
    delay: Duration,
    streaming_lists_refused: bool,
}

impl Emulator {
    /// Answers the next `times` requests with `method` (any if `None`) whose path contains
    /// `path_contains` with an error of `status`.
    pub fn fail_next(&self, method: Option<&str>, path_contains: &str, times: usize, status: u16) {
        self.inner.faults.lock().expect("not poisoned").rules.push(FaultRule {
            method: method.map(str::to_owned),
            path_contains: path_contains.to_owned(),
            remaining: times,
            status,
        });
    }

    /// Delays every response.
    pub fn delay_responses(&self, delay: Duration) {
        self.inner.faults.lock().expect("not poisoned").delay = delay;
    }

    /// Refuses watches with `sendInitialEvents` (streaming lists) as an API server with the WatchList
    /// feature gate off does (Kubernetes 1.27–1.31 by default, and 1.33): 422 Invalid.
    pub fn refuse_streaming_lists(&self) {
        self.inner.faults.lock().expect("not poisoned").streaming_lists_refused = true;
    }

    /// Ends every open watch (clients re-watch from their last resource version).
    pub fn drop_watches(&self) {
        self.inner.watch_epoch.send_modify(|epoch| *epoch += 1);
    }

    /// Forgets the change history: watches from an older resource version get 410 Gone.
    pub fn compact(&self) {
        self.inner.store.lock().expect("not poisoned").compact();
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.inner.log.lock().expect("not poisoned").clone()
    }

    pub fn clear_requests(&self) {
        self.inner.log.lock().expect("not poisoned").clear();
    }

    /// The delay every response waits (see `delay_responses`).
    pub(super) fn response_delay(&self) -> Duration {
        self.inner.faults.lock().expect("not poisoned").delay
    }

    /// Whether watches with `sendInitialEvents` are refused (see `refuse_streaming_lists`).
    pub(super) fn streaming_lists_refused(&self) -> bool {
        self.inner.faults.lock().expect("not poisoned").streaming_lists_refused
    }

    /// The status of an injected failure for this request, if a rule matches (using up one of its
    /// `remaining` answers).
    pub(super) fn injected_failure(&self, method: &str, path: &str) -> Option<u16> {
        let mut faults = self.inner.faults.lock().expect("not poisoned");
        let rule = faults.rules.iter_mut().find(|r| {
            r.remaining > 0 && r.method.as_deref().is_none_or(|m| m == method) && path.contains(&r.path_contains)
        });
        rule.map(|r| {
            r.remaining -= 1;
            r.status
        })
    }

    /// Adds a request to the log (see `requests`).
    pub(super) fn log_request(&self, request: LoggedRequest) {
        self.inner.log.lock().expect("not poisoned").push(request);
    }
}
