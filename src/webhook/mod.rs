//! The Blueprint conversion webhook (docs/webhook.md): the API server stores Blueprints as v3 and asks
//! the webhook to convert them for v2 clients (docs/api-versions.md).
//!
//! - [`review`] answers a `ConversionReview` from the API server, each object converted by the
//!   machine's one conversion function, in the order sent. An object that cannot be converted fails the
//!   whole review with its index and why (the API server then reports the error to the client that
//!   asked; it never gets a half-converted list). [`router`] serves it as `POST /convert`.
//! - [`tls`] serves a router over HTTPS with a certificate that can be swapped while it serves.
//! - [`certificates`] says where that certificate comes from: cert-manager's files, or a CA and
//!   certificate made here and kept in a Secret, the CA written into the CRD's `caBundle`.
//! - [`start`] puts them together for `run`, on every replica (not only the leader: the API server
//!   needs the webhook for every v2 read, whoever leads).

pub mod certificates;
pub mod tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::routing::post;
use blueprint_machine::conversion::{ApiVersion, convert};
use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};

/// The answer to one review.
pub fn review(review: ConversionReview) -> ConversionReview {
    let request = match ConversionRequest::from_review(review) {
        Ok(request) => request,
        Err(error) => {
            return ConversionResponse::invalid(Status::failure(&error.to_string(), "BadRequest")).into_review();
        }
    };
    let desired = request.desired_api_version.clone();
    let converted: Result<Vec<_>, String> = match ApiVersion::parse(&desired) {
        None => Err(format!("desiredAPIVersion {desired:?} is not a served Blueprint version (v2 or v3)")),
        Some((_, to)) => request
            .objects
            .iter()
            .enumerate()
            .map(|(index, object)| convert(object, to).map_err(|e| format!("object {index}: {e}")))
            .collect(),
    };
    let response = ConversionResponse::for_request(request);
    match converted {
        Ok(objects) => response.success(objects),
        Err(message) => response.failure(Status::failure(&message, "ConversionFailed")),
    }
    .into_review()
}

/// `POST /convert`: a `ConversionReview` in, the answered one out (a body that is not one: 400).
pub fn router() -> axum::Router {
    axum::Router::new().route(
        "/convert",
        post(|body: axum::body::Bytes| async move {
            let (status, answer) = match serde_json::from_slice::<ConversionReview>(&body) {
                Ok(asked) => (http::StatusCode::OK, serde_json::to_vec(&review(asked))),
                Err(error) => {
                    (http::StatusCode::BAD_REQUEST, Ok(format!("not a ConversionReview: {error}").into_bytes()))
                }
            };
            let body = answer.unwrap_or_else(|e| e.to_string().into_bytes());
            (status, [(http::header::CONTENT_TYPE, "application/json")], body)
        }),
    )
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
