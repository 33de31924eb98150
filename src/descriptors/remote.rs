//! The remote dogu registry: `GET` of one `dogu.json` per (qualified name, version), as the Cloudogu
//! registry serves it. One attempt per lookup: a failure is reported, and the reconcile that needed
//! the descriptor requeues (no retry loop inside a reconcile).

use std::path::PathBuf;
use std::time::Duration;

use reqwest::{StatusCode, Url};

use blueprint_machine::descriptor::DoguDescriptor;

use super::tls;

/// How descriptor URLs are built from the endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UrlSchema {
    /// `<endpoint>/dogus/<namespace>/<name>/<version>`
    Default,
    /// `<endpoint>/<namespace>/<name>/<version>/index.json`
    Index,
}

impl std::fmt::Display for UrlSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UrlSchema::Default => "default",
            UrlSchema::Index => "index",
        })
    }
}

/// Everything the client needs; parsed from the environment by `config`.
#[derive(Clone, PartialEq, Eq)]
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

impl std::fmt::Debug for RemoteSettings {
    // The password and the proxy URL (which may hold the proxy's) stay out of every debug print.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSettings")
            .field("endpoint", &self.endpoint)
            .field("schema", &self.schema)
            .field("user", &self.credentials.as_ref().map(|(user, _)| user))
            .field("proxy", &self.proxy.as_ref().map(|_| "(set)"))
            .field("timeout", &self.timeout)
            .field("extra_ca", &self.extra_ca)
            .finish()
    }
}

/// The largest answer read: a dogu.json is a few kilobytes, and the local dogu registry keeps it in a
/// ConfigMap (at most 1 MiB); a larger answer is not a descriptor, and must not exhaust memory.
pub const MAX_DESCRIPTOR_BYTES: usize = 1 << 20;

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
    #[error("the proxy refused the credentials (HTTP 407): check the user and password in PROXY_URL")]
    ProxyCredentials,
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
            RemoteError::Credentials { .. } | RemoteError::ProxyCredentials => "credentials",
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

/// Why the registry client cannot be built from its settings. The messages never repeat the endpoint
/// or the proxy URL: they may carry credentials or a token.
#[derive(Debug, thiserror::Error)]
pub enum RegistrySettingsError {
    #[error("DOGU_REGISTRY_ENDPOINT is not a URL: {0}")]
    NotUrl(String),
    #[error(
        "DOGU_REGISTRY_ENDPOINT must not contain credentials; set DOGU_REGISTRY_USERNAME and DOGU_REGISTRY_PASSWORD"
    )]
    CredentialsInEndpoint,
    #[error("DOGU_REGISTRY_ENDPOINT is not an http(s) URL (the scheme is {0:?})")]
    NotHttp(String),
    #[error("DOGU_REGISTRY_ENDPOINT must not have a query or a fragment")]
    QueryOrFragment,
    #[error("DOGU_REGISTRY_ENDPOINT has no path")]
    NoPath,
    #[error("DOGU_REGISTRY_TIMEOUT must be longer than zero")]
    ZeroTimeout,
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    #[error("invalid proxy url (PROXY_URL): {0}")]
    Proxy(String),
    #[error("cannot build the registry client: {0}")]
    Client(reqwest::Error),
}

impl RemoteRegistry {
    pub fn new(settings: &RemoteSettings) -> Result<Self, RegistrySettingsError> {
        use RegistrySettingsError as E;
        let mut base = Url::parse(settings.endpoint.trim()).map_err(|e| E::NotUrl(e.to_string()))?;
        if !base.username().is_empty() || base.password().is_some() {
            return Err(E::CredentialsInEndpoint);
        }
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            return Err(E::NotHttp(base.scheme().to_owned()));
        }
        if base.query().is_some() || base.fragment().is_some() {
            return Err(E::QueryOrFragment);
        }
        if settings.timeout.is_zero() {
            return Err(E::ZeroTimeout);
        }
        // `https://host/api/v2//` is `https://host/api/v2`.
        while base.path().len() > 1 && base.path().ends_with('/') {
            base.path_segments_mut().map_err(|_| E::NoPath)?.pop();
        }
        // Upstream appends `dogus/` itself with the default schema, and accepts endpoints that end in it.
        if settings.schema == UrlSchema::Default
            && base.path_segments().and_then(|mut s| s.next_back()) == Some("dogus")
        {
            base.path_segments_mut().map_err(|_| E::NoPath)?.pop();
        }
        let shown = base.as_str().trim_end_matches('/').to_owned();

        let mut builder = reqwest::Client::builder()
            .timeout(settings.timeout)
            .tls_backend_preconfigured(tls::client_config(settings.extra_ca.as_deref())?)
            .user_agent(concat!("blueprint-operator/", env!("CARGO_PKG_VERSION")));
        builder = match &settings.proxy {
            Some(proxy) => {
                // The URL may carry the proxy's password: messages never repeat it.
                let url = Url::parse(proxy).map_err(|e| E::Proxy(e.to_string()))?;
                if !matches!(url.scheme(), "http" | "https") {
                    return Err(E::Proxy(format!("the scheme {:?} is not http(s)", url.scheme())));
                }
                let proxy = reqwest::Proxy::all(url).map_err(|e| E::Proxy(error_chain(&e.without_url())))?;
                builder.proxy(proxy)
            }
            // Without PROXY_URL no proxy is used, whatever HTTP_PROXY says: one place configures it.
            None => builder.no_proxy(),
        };
        let http = builder.build().map_err(E::Client)?;
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
            StatusCode::PROXY_AUTHENTICATION_REQUIRED => return Err(RemoteError::ProxyCredentials),
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
        let malformed =
            |problem: String| RemoteError::Malformed { name: name.to_owned(), version: version.to_owned(), problem };
        let too_large = || malformed(format!("the answer is larger than {MAX_DESCRIPTOR_BYTES} bytes"));
        if response.content_length().is_some_and(|length| length > MAX_DESCRIPTOR_BYTES as u64) {
            return Err(too_large());
        }
        let mut response = response;
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(transport)? {
            if body.len() + chunk.len() > MAX_DESCRIPTOR_BYTES {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        let mut value: serde_json::Value = serde_json::from_slice(&body).map_err(|e| malformed(e.to_string()))?;
        let converted = v1_dependencies_to_v2(&mut value);
        let descriptor: DoguDescriptor = serde_json::from_value(value.clone()).map_err(|e| malformed(e.to_string()))?;
        // The local dogu registry is read by the dogu operator too, which reads only the v2 format: a
        // v1 descriptor is stored as v2. Otherwise the registry's text is kept as it came.
        let text = match converted {
            true => value.to_string(),
            false => String::from_utf8(body).map_err(|e| malformed(e.to_string()))?,
        };
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

/// Rewrites v1 dependency lists (`["nginx"]`) as v2 (`[{"type": "dogu", "name": "nginx"}]`); true when
/// anything was rewritten.
fn v1_dependencies_to_v2(descriptor: &mut serde_json::Value) -> bool {
    let mut converted = false;
    for field in ["Dependencies", "OptionalDependencies"] {
        let Some(list) = descriptor.get_mut(field).and_then(serde_json::Value::as_array_mut) else { continue };
        for dependency in list.iter_mut() {
            if let Some(name) = dependency.as_str() {
                *dependency = serde_json::json!({"type": "dogu", "name": name});
                converted = true;
            }
        }
    }
    converted
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
