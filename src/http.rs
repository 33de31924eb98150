//! The operations endpoints: `/healthz` (the process serves), `/readyz` (every [`Readiness`] check
//! passes: the conversion webhook serves, the leader's caches are synced) and `/metrics` (Prometheus
//! text format); served within bounds no client can lift ([`BOUNDS`], `crate::serve`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::metrics::Metrics;

/// What `/readyz` checks: named conditions, all of which must hold. Its 503 names those that do not.
#[derive(Clone, Default)]
pub struct Readiness {
    checks: Vec<(&'static str, Check)>,
}

type Check = Arc<dyn Fn() -> bool + Send + Sync>;

impl Readiness {
    /// Ready when `check` holds too; `name` says what is missing when it does not.
    pub fn with(mut self, name: &'static str, check: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.checks.push((name, Arc::new(check)));
        self
    }

    /// The names of the checks that do not hold (none: ready).
    pub fn missing(&self) -> Vec<&'static str> {
        self.checks.iter().filter(|(_, check)| !check()).map(|(name, _)| *name).collect()
    }
}

/// A flag as a readiness check.
pub fn flag(flag: &Arc<AtomicBool>) -> impl Fn() -> bool + Send + Sync + 'static {
    let flag = flag.clone();
    move || flag.load(Ordering::Relaxed)
}

#[derive(Clone)]
struct State {
    ready: Readiness,
    metrics: Arc<Metrics>,
}

/// What the operations endpoints allow a client (`crate::serve`): 32 connections (Prometheus and the
/// kubelet's probes need a few), 10 s for a request's headers, 16 KiB of read buffer; and every
/// request answered within [`REQUEST_TIMEOUT`].
pub const BOUNDS: crate::serve::Bounds =
    crate::serve::Bounds { connections: 32, headers: Duration::from_secs(10), buffer: 16 * 1024 };
/// How long one request to the operations endpoints may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

pub fn router(ready: Readiness, metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(|axum::extract::State(state): axum::extract::State<State>| async move {
                match state.ready.missing().as_slice() {
                    [] => (StatusCode::OK, "ready".to_owned()).into_response(),
                    missing => {
                        (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {}", missing.join(", "))).into_response()
                    }
                }
            }),
        )
        .route(
            "/metrics",
            get(|axum::extract::State(state): axum::extract::State<State>| async move {
                (
                    [(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
                    state.metrics.encode(),
                )
            }),
        )
        .with_state(State { ready, metrics })
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, REQUEST_TIMEOUT))
}

/// Serves the router on `listener` within [`BOUNDS`] until the process ends.
pub async fn serve(listener: tokio::net::TcpListener, router: Router) {
    crate::serve::serve(listener, router, BOUNDS, crate::serve::plain()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_when_every_check_holds_and_the_missing_ones_are_named() {
        let (caches, webhook) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let ready = Readiness::default().with("webhook serving", flag(&webhook)).with("caches synced", flag(&caches));
        assert_eq!(ready.missing(), ["webhook serving", "caches synced"]);
        webhook.store(true, Ordering::Relaxed);
        assert_eq!(ready.missing(), ["caches synced"]);
        caches.store(true, Ordering::Relaxed);
        assert!(ready.missing().is_empty());
        assert!(Readiness::default().missing().is_empty());
    }
}
