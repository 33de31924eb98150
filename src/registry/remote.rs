//! The remote dogu registry: `GET` of one `dogu.json` per (qualified name, version), as the Cloudogu
//! registry serves it. One attempt per lookup: a failure is reported, and the reconcile that needed
//! the descriptor requeues (no retry loop inside a reconcile).

use std::path::PathBuf;
use std::time::Duration;

use reqwest::{StatusCode, Url};

use blueprint_machine::model::DoguDescriptor;

use super::tls;

/// How descriptor URLs are built from the endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UrlSchema {
    /// `<endpoint>/dogus/<namespace>/<name>/<version>`
    Default,
    /// `<endpoint>/<namespace>/<name>/<version>/index.json`
    Index,
}

/// Everything the client needs; parsed from the environment by `config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteSettings {
    pub endpoint: String,
    pub schema: UrlSchema,
    pub credentials: Option<(String, String)>,
    /// An HTTP proxy; user info in the URL becomes the proxy's basic auth.
    pub proxy: Option<String>,
    pub timeout: Duration,
    /// A PEM file of CAs to trust besides the platform's roots.
    pub extra_ca: Option<PathBuf>,
}

/// Why a descriptor could not be fetched. `NotFound` is an answer; everything else means the
/// registry could not be asked, and the message says what to check.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum RemoteError {
    #[error("the dogu registry has no {name} {version}")]
    NotFound { name: String, version: String },
    #[error(
        "the dogu registry at {endpoint} refused the credentials (HTTP {status}): check DOGU_REGISTRY_USERNAME and DOGU_REGISTRY_PASSWORD"
    )]
    Credentials { endpoint: String, status: StatusCode },
    #[error("the dogu registry at {endpoint} answered HTTP {status} for {name} {version}")]
    Status { endpoint: String, status: StatusCode, name: String, version: String },
    #[error("the dogu registry at {endpoint} did not answer within {timeout:?}")]
    Timeout { endpoint: String, timeout: Duration },
    #[error("the dogu registry at {endpoint} cannot be reached: {problem}")]
    Transport { endpoint: String, problem: String },
    #[error("the dogu registry's answer for {name} {version} is not a dogu descriptor: {problem}")]
    Malformed { name: String, version: String, problem: String },
    #[error("the dogu registry answered the request for {name} {version} with the descriptor of {got}")]
    WrongDescriptor { name: String, version: String, got: String },
}

impl RemoteError {
    /// The label of the outcome in the metrics.
    pub fn outcome(&self) -> &'static str {
        match self {
            RemoteError::NotFound { .. } => "notFound",
            RemoteError::Credentials { .. } => "credentials",
            RemoteError::Status { .. } => "status",
            RemoteError::Timeout { .. } => "timeout",
            RemoteError::Transport { .. } => "transport",
            RemoteError::Malformed { .. } | RemoteError::WrongDescriptor { .. } => "malformed",
        }
    }
}

/// A fetched descriptor: parsed for validation, and the registry's text as it came (the local store
/// keeps the whole `dogu.json`, which the dogu operator reads too).
#[derive(Clone, Debug)]
pub struct Fetched {
    pub descriptor: DoguDescriptor,
    pub text: String,
}

#[derive(Clone)]
pub struct RemoteRegistry {
    http: reqwest::Client,
    base: Url,
    schema: UrlSchema,
    credentials: Option<(String, String)>,
    timeout: Duration,
    /// The endpoint as shown in messages (never with user info).
    shown: String,
}

impl std::fmt::Debug for RemoteRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Credentials stay out of every debug print.
        f.debug_struct("RemoteRegistry").field("endpoint", &self.shown).field("schema", &self.schema).finish()
    }
}

impl RemoteRegistry {
    pub fn new(settings: &RemoteSettings) -> Result<Self, String> {
        let mut base = Url::parse(settings.endpoint.trim())
            .map_err(|e| format!("DOGU_REGISTRY_ENDPOINT {:?} is not a URL: {e}", settings.endpoint))?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            return Err(format!("DOGU_REGISTRY_ENDPOINT {:?} is not an http(s) URL", settings.endpoint));
        }
        if !base.username().is_empty() || base.password().is_some() {
            return Err(
                "DOGU_REGISTRY_ENDPOINT must not contain credentials; set DOGU_REGISTRY_USERNAME and DOGU_REGISTRY_PASSWORD"
                    .into(),
            );
        }
        {
            let mut segments = base.path_segments_mut().map_err(|_| "DOGU_REGISTRY_ENDPOINT has no path")?;
            segments.pop_if_empty();
        }
        // Upstream appends `dogus/` itself with the default schema, and accepts endpoints that end in it.
        if settings.schema == UrlSchema::Default
            && base.path_segments().and_then(|mut s| s.next_back()) == Some("dogus")
        {
            base.path_segments_mut().map_err(|_| "DOGU_REGISTRY_ENDPOINT has no path")?.pop();
        }
        let shown = base.as_str().trim_end_matches('/').to_owned();

        let mut builder = reqwest::Client::builder()
            .timeout(settings.timeout)
            .tls_backend_preconfigured(tls::client_config(settings.extra_ca.as_deref())?)
            .user_agent(concat!("blueprint-operator/", env!("CARGO_PKG_VERSION")));
        builder = match &settings.proxy {
            Some(proxy) => {
                // The URL may carry the proxy's password: messages never repeat it.
                let url = Url::parse(proxy).map_err(|e| format!("invalid proxy url (PROXY_URL): {e}"))?;
                if !matches!(url.scheme(), "http" | "https") {
                    return Err(format!("invalid proxy url (PROXY_URL): the scheme {:?} is not http(s)", url.scheme()));
                }
                let proxy = reqwest::Proxy::all(url)
                    .map_err(|e| format!("invalid proxy url (PROXY_URL): {}", error_chain(&e.without_url())))?;
                builder.proxy(proxy)
            }
            // Without PROXY_URL no proxy is used, whatever HTTP_PROXY says: one place configures it.
            None => builder.no_proxy(),
        };
        let http = builder.build().map_err(|e| format!("cannot build the registry client: {e}"))?;
        Ok(RemoteRegistry {
            http,
            base,
            schema: settings.schema,
            credentials: settings.credentials.clone(),
            timeout: settings.timeout,
            shown,
        })
    }

    pub fn endpoint(&self) -> &str {
        &self.shown
    }

    /// The URL of `name` (`namespace/simple`) in `version`.
    pub fn url(&self, name: &str, version: &str) -> Url {
        let (namespace, simple) = name.split_once('/').unwrap_or(("", name));
        let mut url = self.base.clone();
        {
            let mut segments = url.path_segments_mut().expect("checked when the client was built");
            match self.schema {
                UrlSchema::Default => segments.extend(["dogus", namespace, simple, version]),
                UrlSchema::Index => segments.extend([namespace, simple, version, "index.json"]),
            };
        }
        url
    }

    /// One request for the descriptor of `name` in `version`.
    pub async fn fetch(&self, name: &str, version: &str) -> Result<Fetched, RemoteError> {
        let endpoint = || self.shown.clone();
        let mut request = self.http.get(self.url(name, version));
        if let Some((user, password)) = &self.credentials {
            request = request.basic_auth(user, Some(password));
        }
        let transport = |error: reqwest::Error| {
            if error.is_timeout() {
                RemoteError::Timeout { endpoint: endpoint(), timeout: self.timeout }
            } else {
                RemoteError::Transport { endpoint: endpoint(), problem: error_chain(&error.without_url()) }
            }
        };
        let response = request.send().await.map_err(transport)?;
        let status = response.status();
        match status {
            StatusCode::NOT_FOUND => {
                return Err(RemoteError::NotFound { name: name.to_owned(), version: version.to_owned() });
            }
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                return Err(RemoteError::Credentials { endpoint: endpoint(), status });
            }
            status if !status.is_success() => {
                return Err(RemoteError::Status {
                    endpoint: endpoint(),
                    status,
                    name: name.to_owned(),
                    version: version.to_owned(),
                });
            }
            _ => {}
        }
        let text = response.text().await.map_err(transport)?;
        let malformed =
            |problem: String| RemoteError::Malformed { name: name.to_owned(), version: version.to_owned(), problem };
        let descriptor: DoguDescriptor = serde_json::from_str(&text).map_err(|e| malformed(e.to_string()))?;
        if descriptor.name != name || descriptor.version != version {
            return Err(RemoteError::WrongDescriptor {
                name: name.to_owned(),
                version: version.to_owned(),
                got: format!("{} {}", descriptor.name, descriptor.version),
            });
        }
        Ok(Fetched { descriptor, text })
    }
}

/// `error: cause: cause`, the way the causes of a connection failure are worth reading.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
