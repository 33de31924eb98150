//! The webhook's HTTPS server: an axum `Router` behind rustls (tokio-rustls, hyper-util), whose
//! certificate can be swapped while it serves. The server asks [`CurrentCertificate`] for the
//! certificate at every TLS handshake, so a new one is served from the next connection on; connections
//! already open keep the one they were made with. Used by `run`, by the tests, and by anything else
//! that serves the conversion webhook (the real control plane of the sandbox).

use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// How long a client may take for its TLS handshake; one that takes longer is disconnected (it would
/// hold a task and a socket for as long as it liked).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's headers on an open connection.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// Asked at every handshake for a certificate that replaces the current one (`None`: keep it).
type Newer = Box<dyn Fn() -> Option<Arc<CertifiedKey>> + Send + Sync>;

/// The certificate the server presents: set, replaced at any time, read at every handshake. Empty, the
/// server refuses every handshake (nothing to present).
pub struct CurrentCertificate {
    current: RwLock<Option<Arc<CertifiedKey>>>,
    newer: Option<Newer>,
}

impl CurrentCertificate {
    /// No certificate yet (one is [`set`](Self::set) later).
    pub fn empty() -> Arc<Self> {
        Arc::new(CurrentCertificate { current: RwLock::new(None), newer: None })
    }

    /// Serving `key` until another is set.
    pub fn new(key: Arc<CertifiedKey>) -> Arc<Self> {
        Arc::new(CurrentCertificate { current: RwLock::new(Some(key)), newer: None })
    }

    /// Serving `first`, and at every handshake whatever `newer` returns instead (the certificate
    /// files: `newer` says whether they changed, without a timer or a file watch).
    pub fn refreshed_by(
        first: Arc<CertifiedKey>,
        newer: impl Fn() -> Option<Arc<CertifiedKey>> + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(CurrentCertificate { current: RwLock::new(Some(first)), newer: Some(Box::new(newer)) })
    }

    /// The next handshake presents `key`.
    pub fn set(&self, key: Arc<CertifiedKey>) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Some(key);
    }

    /// The certificate presented now (`newer` is not asked).
    pub fn get(&self) -> Option<Arc<CertifiedKey>> {
        self.current.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Whether a handshake can succeed: a certificate is set.
    pub fn is_set(&self) -> bool {
        self.current.read().unwrap_or_else(PoisonError::into_inner).is_some()
    }
}

/// Never shows the key: only whether there is a certificate.
impl fmt::Debug for CurrentCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CurrentCertificate").field("set", &self.is_set()).finish()
    }
}

impl ResolvesServerCert for CurrentCertificate {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        if let Some(key) = self.newer.as_ref().and_then(|newer| newer()) {
            self.set(key);
        }
        self.get()
    }
}

/// The TLS configuration of the server: rustls on ring (as every TLS of the operator), TLS 1.2 and
/// 1.3, no client certificates (the API server presents none to a conversion webhook unless it is
/// configured to), HTTP/1.1.
pub fn server_config(certificate: Arc<CurrentCertificate>) -> Arc<rustls::ServerConfig> {
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("ring supports rustls' default protocol versions")
        .with_no_client_auth()
        .with_cert_resolver(certificate);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// Serves `router` over HTTPS on `listener` with the certificate `certificate` holds at each
/// handshake, until it is dropped (its connections with it). A refused handshake (a client that does
/// not trust the certificate, or a port scan) ends only its connection.
pub async fn serve(listener: tokio::net::TcpListener, router: axum::Router, certificate: Arc<CurrentCertificate>) {
    let acceptor = tokio_rustls::TlsAcceptor::from(server_config(certificate));
    let mut connections = tokio::task::JoinSet::new();
    loop {
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
                tracing::warn!(%error, "the webhook cannot accept a connection; trying again in 1 s");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let (acceptor, router) = (acceptor.clone(), router.clone());
        connections.spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(error)) => return handshake_failed(&error),
                Err(_) => return tracing::debug!("webhook TLS handshake: timed out"),
            };
            let service = TowerToHyperService::new(router);
            let served = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(tls), service)
                .await;
            if let Err(error) = served {
                tracing::debug!(%error, "webhook connection ended with an error");
            }
        });
    }
}

fn is_connection_error(error: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(error.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset)
}

/// A client that refused the certificate says so with an alert: worth a warning (the API server does
/// not trust it: is the CRD's `caBundle` current?). Anything else is a client's business.
fn handshake_failed(error: &std::io::Error) {
    let alert = error.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()).and_then(|e| match e {
        rustls::Error::AlertReceived(alert) => Some(*alert),
        _ => None,
    });
    use rustls::AlertDescription::{BadCertificate, CertificateExpired, CertificateUnknown, UnknownCA};
    match alert {
        Some(alert @ (BadCertificate | UnknownCA | CertificateExpired | CertificateUnknown)) => tracing::warn!(
            alert = ?alert,
            "a client refused the webhook's certificate (if it is the API server: does the CRD's caBundle hold the CA that signed it?)"
        ),
        _ => tracing::debug!(%error, "webhook TLS handshake failed"),
    }
}
