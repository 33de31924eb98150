//! The Blueprint conversion webhook (docs/webhook.md): the API server stores Blueprints as v3 and asks
//! the webhook to convert them for v2 clients (docs/api-versions.md).
//!
//! - [`review`] answers a `ConversionReview` from the API server, each object converted by the
//!   machine's one conversion function, in the order sent, from its text into the answer. An object
//!   that cannot be converted fails the whole review with its index and why (the API server then
//!   reports the error to the client that asked; it never gets a half-converted list). [`router`]
//!   serves it as `POST /convert`, within a fixed budget of memory and time (issue 27).
//! - [`tls`] serves a router over HTTPS with a certificate that can be swapped while it serves.
//! - [`certificates`] says where that certificate comes from: cert-manager's files, or a CA and
//!   certificate made here and kept in a Secret, the CA written into the CRD's `caBundle`.
//! - [`start`] puts them together for `run`, on every replica (not only the leader: the API server
//!   needs the webhook for every v2 read, whoever leads).

pub mod certificates;
pub mod review;
pub mod tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::post;
use http::StatusCode;
use tower::limit::ConcurrencyLimitLayer;
use tower_http::timeout::TimeoutLayer;

/// The largest review the webhook reads: the largest object the API server can store (etcd's limit
/// on a request, 1.5 MiB by default, bounds a Blueprint), and room for the review around it. A larger
/// body is refused (413) before it is read. (A list read through v2 is sent as one review: its
/// Blueprints together must fit.)
pub const MAX_REVIEW_BYTES: usize = 1536 * 1024 + 64 * 1024;
/// Reviews converted at once; more wait for their turn, holding only their connection (their body
/// is read in their turn). With a conversion's memory a few times its body's, the webhook's memory
/// beyond its connections stays within a few times [`MAX_REVIEW_BYTES`] for any input.
pub const CONVERSIONS: usize = 2;
/// How long one review may take, its wait for a turn and its body's arrival included (408 after
/// it): a body trickled in cannot hold a turn, nor a waiting connection its place, for longer.
pub const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);

/// `POST /convert`: a `ConversionReview` in, the answered one out (a body that is not one: 400; too
/// large: 413; too slow: 408), within the bounds above.
pub fn router() -> axum::Router {
    axum::Router::new()
        .route(
            "/convert",
            post(|body: axum::body::Bytes| async move {
                // CPU work of milliseconds: off the runtime's threads, which reconcile.
                let answered = tokio::task::spawn_blocking(move || review::answer(&body)).await;
                let (status, answer) = answered
                    .unwrap_or_else(|_| (StatusCode::INTERNAL_SERVER_ERROR, b"the conversion did not finish".to_vec()));
                (status, [(http::header::CONTENT_TYPE, "application/json")], answer)
            }),
        )
        .layer(DefaultBodyLimit::max(MAX_REVIEW_BYTES))
        .layer(ConcurrencyLimitLayer::new(CONVERSIONS))
        .layer(TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, REVIEW_TIMEOUT))
        // The handler made a route now, its layers with it: without a state given, axum makes a
        // closure's route (and so a concurrency limit of its own) anew for every request, and the
        // limit limited nothing (measured: 40 bodies read at once, +57 MB).
        .with_state(())
}

/// How `run` serves the webhook (`WEBHOOK_*`; `WEBHOOK_ENABLED=false`: not at all).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookSettings {
    /// Where it listens (`WEBHOOK_BIND_ADDRESS`, default `0.0.0.0:9443`).
    pub address: SocketAddr,
    pub certificate: CertificateSource,
}

/// Where the serving certificate comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CertificateSource {
    /// `tls.crt` and `tls.key` in `directory` (`WEBHOOK_CERT_DIR`: cert-manager's Secret, mounted).
    /// With `certificate` (`WEBHOOK_CERTIFICATE`, cert-manager's Certificate in the operator's
    /// namespace), the CRD is made to name it for cert-manager's CA injector and to name the Service
    /// `service` (`WEBHOOK_SERVICE`).
    Files { directory: PathBuf, certificate: Option<String>, service: String },
    /// Made here and kept in the Secret `secret` (`WEBHOOK_SECRET`), for the Service `service`
    /// (`WEBHOOK_SERVICE`) and `extra_names` (`WEBHOOK_EXTRA_NAMES`).
    SelfManaged { secret: String, service: String, extra_names: Vec<certificates::SubjectName> },
}

/// Why the webhook cannot start; one line that names what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("the conversion webhook cannot listen on {address}: {source}")]
    Listen { address: SocketAddr, source: std::io::Error },
    #[error(transparent)]
    Files(#[from] certificates::files::FilesError),
}

/// Starts the webhook of `run`: listens on the settings' address at once (a port in use stops the
/// start), and serves `POST /convert` over HTTPS as soon as there is a certificate: the files' (read
/// now: files that make none stop the start), or the self-managed one (kept by a task of its own, which
/// writes its CA into the Blueprint CRD). The certificate it serves: readiness waits for it.
pub async fn start(
    settings: &WebhookSettings,
    client: kube::Client,
    namespace: &str,
) -> Result<Arc<tls::CurrentCertificate>, WebhookError> {
    let address = settings.address;
    let listener =
        tokio::net::TcpListener::bind(address).await.map_err(|source| WebhookError::Listen { address, source })?;
    let certificate = match &settings.certificate {
        CertificateSource::Files { directory, certificate, service } => {
            tracing::info!(%address, dir = %directory.display(), "conversion webhook: certificate files (cert-manager)");
            let serving = certificates::files::serving(directory)?;
            if let Some(certificate) = certificate {
                let target =
                    certificates::ca_bundle::CaBundleTarget::conversion_of(certificates::ca_bundle::BLUEPRINT_CRD)
                        .with_service(namespace, service);
                let inject_from = format!("{namespace}/{certificate}");
                let crds = kube::Api::all(client);
                // Once, until it is done (cert-manager's CA injector keeps the caBundle from then on); a
                // failure (the API server restarting, a missing right) is retried, 1 s doubling to 5 min.
                tokio::spawn(async move {
                    let mut wait = std::time::Duration::from_secs(1);
                    while let Err(error) = certificates::ca_bundle::name_injector(&crds, &target, &inject_from).await {
                        tracing::warn!(%error, crd = %target.crd, retry_in = ?wait, "could not name cert-manager's Certificate in the CRD");
                        tokio::time::sleep(wait).await;
                        wait = (wait * 2).min(std::time::Duration::from_secs(300));
                    }
                });
            }
            serving
        }
        CertificateSource::SelfManaged { secret, service, extra_names } => {
            tracing::info!(%address, %secret, "conversion webhook: self-managed certificate");
            let names = certificates::ServingNames::new(service, namespace, extra_names);
            let target = certificates::ca_bundle::CaBundleTarget::conversion_of(certificates::ca_bundle::BLUEPRINT_CRD)
                .with_service(namespace, service);
            let current = tls::CurrentCertificate::empty();
            let keeper = certificates::self_managed::SelfManaged::new(client, namespace, secret, names, target);
            tokio::spawn(keeper.run(current.clone()));
            current
        }
    };
    tokio::spawn(tls::serve(listener, router(), certificate.clone()));
    Ok(certificate)
}
