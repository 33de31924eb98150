//! HTTP/1.1 serving with bounds no client can lift (issue 27, finding 2): the conversion webhook
//! (over TLS, [`crate::webhook::tls`]) and the operations endpoints (`/metrics`, `/healthz`,
//! `/readyz`, [`crate::http`]) are served here, each with
//!
//! - a **connection limit**: at the limit no further connection is accepted (it waits in the
//!   kernel's backlog, holding no descriptor of ours) until one ends. Before, 1,100 idle connections
//!   to the metrics port took every descriptor (`ulimit -n 1024`): the probes stopped answering and
//!   the API client could not connect;
//! - a **handshake timeout** (TLS) and a **header timeout**: a connection that does not send a
//!   request's headers in time, also an idle keep-alive connection, is closed (hyper starts that
//!   timer whenever it waits for a request);
//! - a **read buffer** of a few KiB per connection: what a client sends ahead is not buffered beyond it;
//! - and, in the routers, a timeout for a whole request, its body included (`tower-http`): 200
//!   connections trickling a body one byte in 5 s stayed open past 65 s before.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};

/// What one server allows a client.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// Connections open at once.
    pub connections: usize,
    /// How long a client may take to send a request's headers (and to start the next one on a
    /// kept-alive connection).
    pub headers: Duration,
    /// hyper's read buffer per connection (at least 8 KiB + 8 KiB for hyper).
    pub buffer: usize,
}

/// A connection's first step after TCP: none (plain HTTP), or a TLS handshake; `None`: it failed
/// (and was reported), the connection ends.
pub type Handshake<Io> =
    Arc<dyn Fn(TcpStream) -> Pin<Box<dyn Future<Output = Option<Io>> + Send>> + Send + Sync + 'static>;

/// Serves `router` on `listener` within `bounds`, each connection after `handshake`, until the
/// future is dropped (its connections with it).
pub async fn serve<Io>(listener: TcpListener, router: axum::Router, bounds: Bounds, handshake: Handshake<Io>)
where
    Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let slots = Arc::new(tokio::sync::Semaphore::new(bounds.connections));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        // A free slot first: at the limit, connections wait in the backlog, not in our descriptors.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            Some(_) = connections.join_next() => continue,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            // A connection ended: forget it.
            Some(_) = connections.join_next() => continue,
        };
        let tcp = match accepted {
            Ok((tcp, _)) => tcp,
            // One connection's failure (reset before it was accepted).
            Err(error) if is_connection_error(&error) => continue,
            // Out of file descriptors, say: trying at once would spin.
            Err(error) => {
                tracing::warn!(%error, address = ?listener.local_addr().ok(), "cannot accept a connection; trying again in 1 s");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let (handshake, router) = (handshake.clone(), router.clone());
        connections.spawn(async move {
            let _slot = slot;
            let Some(io) = handshake(tcp).await else { return };
            let served = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(bounds.headers)
                .max_buf_size(bounds.buffer)
                .serve_connection(TokioIo::new(io), TowerToHyperService::new(router))
                .await;
            if let Err(error) = served {
                tracing::debug!(%error, "a connection ended with an error");
            }
        });
    }
}

/// Plain HTTP: no handshake.
pub fn plain() -> Handshake<TcpStream> {
    Arc::new(|tcp| Box::pin(async move { Some(tcp) }))
}

fn is_connection_error(error: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(error.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset)
}
