//! The conversion webhook's answer: a `ConversionReview` from the API server, each object converted
//! by the machine's one conversion function (docs/api-versions.md), in the order sent. An object that
//! cannot be converted fails the whole review with its index and why (the API server then reports
//! the error to the client that asked; it never gets a half-converted list).
//!
//! Served as `POST /convert` ([`router`]). Not yet wired into `run` (with its serving certificate and
//! the CRD's `caBundle`): the real-API-server test serves it over TLS itself.

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
