//! The sandbox's remote dogu registry: an HTTP server on loopback that answers like the Cloudogu
//! registry (both URL schemas, basic auth), so the operator reaches it through its real registry
//! client. Faults can be injected (an HTTP status, a malformed answer, a slow answer) and every
//! request is logged.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use base64::Engine;
use http::{HeaderMap, StatusCode, header};
use tokio::task::JoinHandle;

/// What the next matching request gets instead of the descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// This status, with a short body.
    Status(u16),
    /// `200 OK` with a body that is not JSON.
    Malformed,
    /// The right answer, after this long (tokio time: a paused clock skips it).
    Delay(Duration),
}

/// One request as the registry saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistryRequest {
    pub path: String,
    /// The user of the request's basic auth, if it sent one that decodes.
    pub user: Option<String>,
    /// The user of the `Proxy-Authorization` basic auth (when reached through a proxy).
    pub proxy_user: Option<String>,
    /// Whether the request's target was absolute (`GET http://host/path`): it came through a proxy.
    pub absolute: bool,
    pub status: u16,
}

#[derive(Default)]
struct Shared {
    /// `(qualified name, version)` → the `dogu.json` text.
    descriptors: Mutex<BTreeMap<(String, String), String>>,
    credentials: Option<(String, String)>,
    faults: Mutex<VecDeque<Fault>>,
    requests: Mutex<Vec<RegistryRequest>>,
}

#[derive(Clone)]
pub struct RegistryServer {
    shared: Arc<Shared>,
}

/// A served registry; the server stops when this is dropped.
pub struct Served {
    pub registry: RegistryServer,
    pub address: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Served {
    /// The endpoint to configure (`DOGU_REGISTRY_ENDPOINT`).
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.address)
    }
}

impl RegistryServer {
    /// A registry that requires basic auth with `credentials`, when given.
    pub fn new(credentials: Option<(String, String)>) -> Self {
        RegistryServer { shared: Arc::new(Shared { credentials, ..Default::default() }) }
    }

    /// Adds a descriptor (its `dogu.json` text); returns its (name, version).
    pub fn add(&self, text: &str) -> Result<(String, String), String> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not a valid dogu.json: {e}"))?;
        let field = |name: &str| value.get(name).and_then(serde_json::Value::as_str).map(str::to_owned);
        let (Some(name), Some(version)) = (field("Name"), field("Version")) else {
            return Err("a dogu.json needs Name and Version".into());
        };
        self.add_at(&name, &version, text);
        Ok((name, version))
    }

    /// Serves `text` as the descriptor of `name` in `version`, whatever it says (a broken mirror).
    pub fn add_at(&self, name: &str, version: &str, text: &str) {
        let key = (name.to_owned(), version.to_owned());
        self.shared.descriptors.lock().expect("not poisoned").insert(key, text.to_owned());
    }

    pub fn len(&self) -> usize {
        self.shared.descriptors.lock().expect("not poisoned").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The next `count` requests get `fault`.
    pub fn inject(&self, fault: Fault, count: usize) {
        self.shared.faults.lock().expect("not poisoned").extend(std::iter::repeat_n(fault, count));
    }

    /// The faults not met yet are dropped: the registry answers again.
    pub fn clear_faults(&self) {
        self.shared.faults.lock().expect("not poisoned").clear();
    }

    pub fn requests(&self) -> Vec<RegistryRequest> {
        self.shared.requests.lock().expect("not poisoned").clone()
    }

    pub fn router(&self) -> Router {
        Router::new().fallback(answer).with_state(self.shared.clone())
    }

    /// Serves on `address` (port 0: any free port) until the returned value is dropped.
    pub async fn serve(&self, address: SocketAddr) -> std::io::Result<Served> {
        let listener = tokio::net::TcpListener::bind(address).await?;
        let address = listener.local_addr()?;
        let router = self.router();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Ok(Served { registry: self.clone(), address, task })
    }
}

fn basic_user(headers: &HeaderMap, name: header::HeaderName) -> Option<(String, String)> {
    let value = headers.get(name)?.to_str().ok()?;
    let encoded = value.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

/// `/dogus/<ns>/<name>/<version>` (default schema) or `/<ns>/<name>/<version>/index.json` (index), each
/// segment percent-decoded (as clients encode them).
fn descriptor_key(path: &str) -> Option<(String, String)> {
    let decoded: Vec<String> = path
        .trim_start_matches('/')
        .split('/')
        .map(|segment| percent_encoding::percent_decode_str(segment).decode_utf8().map(|s| s.into_owned()))
        .collect::<Result<_, _>>()
        .ok()?;
    let segments: Vec<&str> = decoded.iter().map(String::as_str).collect();
    match segments.as_slice() {
        ["dogus", namespace, name, version] => Some((format!("{namespace}/{name}"), (*version).to_owned())),
        [namespace, name, version, "index.json"] => Some((format!("{namespace}/{name}"), (*version).to_owned())),
        _ => None,
    }
}

async fn answer(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let uri = request.uri().clone();
    let headers = request.headers().clone();
    let authorization = basic_user(&headers, header::AUTHORIZATION);
    let fault = shared.faults.lock().expect("not poisoned").pop_front();
    if let Some(Fault::Delay(delay)) = &fault {
        tokio::time::sleep(*delay).await;
    }
    let (status, body) = match fault {
        Some(Fault::Status(code)) => {
            (StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), "injected fault".to_owned())
        }
        _ if shared.credentials.is_some() && authorization != shared.credentials => {
            (StatusCode::UNAUTHORIZED, "unauthorized".to_owned())
        }
        Some(Fault::Malformed) => (StatusCode::OK, "{\"Name\": ".to_owned()),
        _ => match descriptor_key(uri.path())
            .and_then(|key| shared.descriptors.lock().expect("not poisoned").get(&key).cloned())
        {
            Some(text) => (StatusCode::OK, text),
            None => (StatusCode::NOT_FOUND, "not found".to_owned()),
        },
    };
    shared.requests.lock().expect("not poisoned").push(RegistryRequest {
        path: uri.path().to_owned(),
        user: authorization.map(|(user, _)| user),
        proxy_user: basic_user(&headers, header::PROXY_AUTHORIZATION).map(|(user, _)| user),
        absolute: uri.authority().is_some(),
        status: status.as_u16(),
    });
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .expect("a valid response")
}
