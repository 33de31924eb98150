//! The webhook's HTTPS server: an axum `Router` behind rustls (tokio-rustls, hyper-util), whose
//! certificate can be swapped while it serves. The server asks [`CurrentCertificate`] for the
//! certificate at every TLS handshake, so a new one is served from the next connection on; connections
//! already open keep the one they were made with. Used by `run`, by the tests, and by anything else
//! that serves the conversion webhook (the real control plane of the sandbox).

use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// How long a client may take for its TLS handshake; one that takes longer is disconnected (it would
/// hold a task and a socket for as long as it liked).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the webhook allows a client (`crate::serve`): 64 connections (the API server keeps a few
/// alive; each costs rustls' and hyper's buffers, some 50 KiB), 10 s for a request's headers, a read
/// buffer of 16 KiB. A review's body and its conversion have their own bounds (`super::router`).
pub const BOUNDS: crate::serve::Bounds =
    crate::serve::Bounds { connections: 64, headers: Duration::from_secs(10), buffer: 16 * 1024 };

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
/// handshake, until it is dropped (its connections with it), within [`BOUNDS`]. A refused handshake
/// (a client that does not trust the certificate, or a port scan) ends only its connection.
pub async fn serve(listener: tokio::net::TcpListener, router: axum::Router, certificate: Arc<CurrentCertificate>) {
    let acceptor = tokio_rustls::TlsAcceptor::from(server_config(certificate));
    let handshake: crate::serve::Handshake<_> = Arc::new(move |tcp| {
        let acceptor = acceptor.clone();
        Box::pin(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => Some(tls),
                Ok(Err(error)) => {
                    handshake_failed(&error);
                    None
                }
                Err(_) => {
                    tracing::debug!("webhook TLS handshake: timed out");
                    None
                }
            }
        })
    });
    crate::serve::serve(listener, router, BOUNDS, handshake).await;
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
