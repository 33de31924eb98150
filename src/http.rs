//! The operations endpoints: `/healthz` (the process serves), `/readyz` (the caches are synced) and
//! `/metrics` (Prometheus text format).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::metrics::Metrics;

#[derive(Clone)]
struct State {
    ready: Arc<AtomicBool>,
    metrics: Arc<Metrics>,
}

pub fn router(ready: Arc<AtomicBool>, metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(|axum::extract::State(state): axum::extract::State<State>| async move {
                if state.ready.load(Ordering::Relaxed) {
                    (StatusCode::OK, "ready").into_response()
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, "caches not synced").into_response()
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
}

/// Serves the router on `address` until the process ends.
pub async fn serve(address: SocketAddr, router: Router) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    axum::serve(listener, router).await
}
