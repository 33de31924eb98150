//! Serving: the emulator as an axum router (over HTTP on loopback, or in-process as a kube
//! client's tower service), and the HTTP edge of every request: the injected delays and failures,
//! reading the body and query, logging, and encoding answers as JSON.

use std::collections::BTreeMap;

use axum::body::Body;
use axum::http::{Request, Response, StatusCode, header};
use serde_json::Value;

use super::Emulator;
use super::error::{ApiError, reason_for};
use super::faults::LoggedRequest;

impl Emulator {
    /// The router, for serving over HTTP.
    pub fn router(&self) -> axum::Router {
        let emulator = self.clone();
        axum::Router::new().fallback(move |request: Request<Body>| {
            let emulator = emulator.clone();
            async move { emulator.handle(request).await }
        })
    }

    /// A kube client talking to this emulator in-process (no sockets).
    pub fn client(&self, namespace: &str) -> kube::Client {
        kube::Client::new(self.router(), namespace)
    }

    /// Serves over HTTP on `address` (port 0 picks one); returns the bound address.
    pub async fn serve(&self, address: std::net::SocketAddr) -> std::io::Result<std::net::SocketAddr> {
        let listener = tokio::net::TcpListener::bind(address).await?;
        let bound = listener.local_addr()?;
        let router = self.router();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Ok(bound)
    }

    /// One request at the HTTP edge: the injected delay and failure, else the dispatch; logged.
    async fn handle(&self, request: Request<Body>) -> Response<Body> {
        let method = request.method().clone();
        let path = request.uri().path().to_owned();
        let query_text = request.uri().query().unwrap_or_default().to_owned();
        let headers = request.headers().clone();
        let user_agent = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        let delay = self.response_delay();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let injected = self.injected_failure(method.as_str(), &path);
        let bytes = axum::body::to_bytes(request.into_body(), 64 * 1024 * 1024).await.unwrap_or_default();
        let response = match injected {
            Some(code) => error_response(&ApiError::new(code, reason_for(code), format!("injected failure ({code})"))),
            None => {
                let query = parse_query(&query_text);
                self.dispatch(&method, &path, &query, &headers, &bytes)
            }
        };
        self.log_request(LoggedRequest {
            method: method.to_string(),
            path,
            query: query_text,
            user_agent,
            status: response.status().as_u16(),
            body: String::from_utf8_lossy(&bytes).into_owned(),
        });
        response
    }
}

pub(super) fn parse_query(query: &str) -> BTreeMap<String, String> {
    form_urlencoded::parse(query.as_bytes()).into_owned().collect()
}

/// A create's or an update's object: protobuf (as kubectl sends built-in kinds), else JSON or YAML.
pub(super) fn parse_body(content_type: &str, body: &[u8]) -> Result<Value, ApiError> {
    if content_type.starts_with(super::protobuf::CONTENT_TYPE) {
        return super::protobuf::decode(body);
    }
    serde_json::from_slice(body)
        .or_else(|_| std::str::from_utf8(body).map_err(|_| ()).and_then(|t| serde_saphyr::from_str(t).map_err(|_| ())))
        .map_err(|_| ApiError::new(400, "BadRequest", "the request body is not a JSON or YAML object"))
}

pub(super) fn json_response(code: u16, value: Value) -> Response<Body> {
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::OK))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(value.to_string()))
        .expect("a valid response")
}

pub(super) fn error_response(error: &ApiError) -> Response<Body> {
    json_response(error.code, error.body())
}
