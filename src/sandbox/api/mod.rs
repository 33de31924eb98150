//! An in-process Kubernetes API emulator: the REST semantics the operator and kubectl rely on, for
//! the registered resources, served over HTTP on loopback or as an in-process tower service.
//!
//! Emulated rules (each has a test naming it): GET, LIST (label and field selectors, `limit` and
//! `continue`), WATCH (from a `resourceVersion`, initial events, bookmarks, `timeoutSeconds`,
//! `sendInitialEvents`, ERROR 410 after compaction), POST (`generateName`, `uid`,
//! `creationTimestamp`, `generation` = 1), PUT with optimistic concurrency (stale `resourceVersion` →
//! 409), PATCH (merge, JSON patch, strategic merge as merge, server-side apply with field managers and
//! conflicts), DELETE with finalizers, the `/status` subresource (status writes change only status and
//! vice versa), `generation` bumped only by spec changes, no-op writes that change nothing and emit no
//! watch event, `managedFields` with their times, and the discovery endpoints kubectl needs.
//! Not emulated: admission, schema validation and pruning, RBAC, garbage collection by owner.

pub mod managed;
pub mod resources;
pub mod selectors;
pub mod store;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Request, Response, StatusCode, header};
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use managed::{ManagedFields, Writer};
use resources::ResourceType;
use selectors::{FieldSelector, LabelSelector};
use store::{Change, Record, Store};

/// The emulator's clock (the tests' is virtual).
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// A request as the emulator received it (for tests and the sandbox's summary).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedRequest {
    pub method: String,
    pub path: String,
    pub query: String,
    pub user_agent: String,
    pub status: u16,
    /// The request body (the emulator is the cluster: this may hold what the cluster holds).
    pub body: String,
}

impl LoggedRequest {
    /// The Kubernetes verb of the request.
    pub fn verb(&self) -> &'static str {
        let uri = if self.query.is_empty() { self.path.clone() } else { format!("{}?{}", self.path, self.query) };
        let request =
            http::Request::builder().method(self.method.as_str()).uri(uri).body(()).expect("a logged request");
        crate::metrics::verb(&request)
    }
}

/// An injected failure: the next `remaining` requests whose method and path match are answered with
/// `status`.
#[derive(Clone, Debug)]
struct FaultRule {
    method: Option<String>,
    path_contains: String,
    remaining: usize,
    status: u16,
}

#[derive(Default)]
struct Faults {
    rules: Vec<FaultRule>,
    delay: Duration,
}

struct Inner {
    resources: Vec<ResourceType>,
    store: Mutex<Store>,
    clock: Clock,
    faults: Mutex<Faults>,
    log: Mutex<Vec<LoggedRequest>>,
    /// Bumped to end every open watch.
    watch_epoch: tokio::sync::watch::Sender<u64>,
}

#[derive(Clone)]
pub struct Emulator {
    inner: Arc<Inner>,
}

/// A Kubernetes `Status` error.
#[derive(Clone, Debug)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError { code, reason, message: message.into() }
    }

    fn body(&self) -> Value {
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": self.message, "reason": self.reason, "code": self.code})
    }
}

/// What a write path resolved to.
struct Target<'r> {
    resource: &'r ResourceType,
    namespace: String,
    name: Option<String>,
    subresource: Option<String>,
}

impl Emulator {
    pub fn new(clock: Clock) -> Self {
        let emulator = Emulator {
            inner: Arc::new(Inner {
                resources: resources::all(),
                store: Mutex::new(Store::new(10_000)),
                clock,
                faults: Mutex::new(Faults::default()),
                log: Mutex::new(Vec::new()),
                watch_epoch: tokio::sync::watch::channel(0).0,
            }),
        };
        for crd in resources::crds() {
            let object = serde_json::to_value(crd).expect("CRDs serialize");
            emulator.create(object).expect("the CRDs are created once");
        }
        emulator
    }

    /// An emulator on the wall clock.
    pub fn wall_clock() -> Self {
        Emulator::new(Arc::new(Timestamp::now))
    }

    fn now(&self) -> String {
        let now = (self.inner.clock)();
        Timestamp::from_second(now.as_second()).unwrap_or(now).to_string()
    }

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

    // ---- fault controls ----

    /// Answers the next `times` requests with `method` (any if `None`) whose path contains
    /// `path_contains` with an error of `status`.
    pub fn fail_next(&self, method: Option<&str>, path_contains: &str, times: usize, status: u16) {
        self.inner.faults.lock().expect("not poisoned").rules.push(FaultRule {
            method: method.map(str::to_owned),
            path_contains: path_contains.to_owned(),
            remaining: times,
            status,
        });
    }

    /// Delays every response.
    pub fn delay_responses(&self, delay: Duration) {
        self.inner.faults.lock().expect("not poisoned").delay = delay;
    }

    /// Ends every open watch (clients re-watch from their last resource version).
    pub fn drop_watches(&self) {
        self.inner.watch_epoch.send_modify(|epoch| *epoch += 1);
    }

    /// Forgets the change history: watches from an older resource version get 410 Gone.
    pub fn compact(&self) {
        self.inner.store.lock().expect("not poisoned").compact();
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.inner.log.lock().expect("not poisoned").clone()
    }

    pub fn clear_requests(&self) {
        self.inner.log.lock().expect("not poisoned").clear();
    }

    // ---- direct access (seeding, inspection) ----

    fn resource(&self, api_version: &str, kind: &str) -> Option<&ResourceType> {
        self.inner.resources.iter().find(|r| r.api_version() == api_version && r.kind == kind)
    }

    fn resource_by_plural(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceType> {
        self.inner.resources.iter().find(|r| r.group == group && r.version == version && r.plural == plural)
    }

    /// Creates an object as an API client would (manager `sandbox`).
    pub fn create(&self, object: Value) -> Result<Value, ApiError> {
        let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default().to_owned();
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default().to_owned();
        let resource = self
            .resource(&api_version, &kind)
            .ok_or_else(|| ApiError::new(404, "NotFound", format!("no resource for {api_version} {kind}")))?
            .clone();
        let namespace = if resource.namespaced {
            object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default").to_owned()
        } else {
            String::new()
        };
        self.do_create(&resource, &namespace, object, "sandbox")
    }

    /// An object, if it exists.
    pub fn get(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        let resource = self.resource(api_version, kind)?;
        let namespace = if resource.namespaced { namespace } else { "" };
        self.inner
            .store
            .lock()
            .expect("not poisoned")
            .objects
            .get(&(resource.key(), namespace.into(), name.into()))
            .cloned()
    }

    /// Every object of a kind.
    pub fn list(&self, api_version: &str, kind: &str) -> Vec<Value> {
        let Some(resource) = self.resource(api_version, kind) else { return vec![] };
        let key = resource.key();
        self.inner
            .store
            .lock()
            .expect("not poisoned")
            .objects
            .iter()
            .filter(|((r, _, _), _)| *r == key)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Replaces an object's status as a controller would (manager `sandbox`).
    pub fn update_status(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        status: Value,
    ) -> Result<Value, ApiError> {
        let resource =
            self.resource(api_version, kind).ok_or_else(|| ApiError::new(404, "NotFound", "no such kind"))?.clone();
        let target = Target {
            resource: &resource,
            namespace: namespace.into(),
            name: Some(name.into()),
            subresource: Some("status".into()),
        };
        self.update_with(&target, "sandbox", |current| {
            let mut next = current.clone();
            next["status"] = status;
            Ok(next)
        })
    }

    /// Changes an object as a user would (manager `kubectl-edit`).
    pub fn edit(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        change: impl FnOnce(&mut Value),
    ) -> Result<Value, ApiError> {
        let resource =
            self.resource(api_version, kind).ok_or_else(|| ApiError::new(404, "NotFound", "no such kind"))?.clone();
        let target =
            Target { resource: &resource, namespace: namespace.into(), name: Some(name.into()), subresource: None };
        self.update_with(&target, "kubectl-edit", |current| {
            let mut next = current.clone();
            change(&mut next);
            Ok(next)
        })
    }

    /// Deletes an object as a user would.
    pub fn delete(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Result<Value, ApiError> {
        let resource =
            self.resource(api_version, kind).ok_or_else(|| ApiError::new(404, "NotFound", "no such kind"))?.clone();
        let namespace = if resource.namespaced { namespace } else { "" };
        self.do_delete(&resource, namespace, name)
    }

    // ---- HTTP ----

    async fn handle(&self, request: Request<Body>) -> Response<Body> {
        let method = request.method().clone();
        let path = request.uri().path().to_owned();
        let query_text = request.uri().query().unwrap_or_default().to_owned();
        let headers = request.headers().clone();
        let user_agent = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        let delay = self.inner.faults.lock().expect("not poisoned").delay;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let injected = {
            let mut faults = self.inner.faults.lock().expect("not poisoned");
            let rule = faults.rules.iter_mut().find(|r| {
                r.remaining > 0
                    && r.method.as_deref().is_none_or(|m| m == method.as_str())
                    && path.contains(&r.path_contains)
            });
            rule.map(|r| {
                r.remaining -= 1;
                r.status
            })
        };
        let bytes = axum::body::to_bytes(request.into_body(), 64 * 1024 * 1024).await.unwrap_or_default();
        let response = match injected {
            Some(code) => error_response(&ApiError::new(code, reason_for(code), format!("injected failure ({code})"))),
            None => {
                let query = parse_query(&query_text);
                self.dispatch(&method, &path, &query, &headers, &bytes)
            }
        };
        self.inner.log.lock().expect("not poisoned").push(LoggedRequest {
            method: method.to_string(),
            path,
            query: query_text,
            user_agent,
            status: response.status().as_u16(),
            body: String::from_utf8_lossy(&bytes).into_owned(),
        });
        response
    }

    fn dispatch(
        &self,
        method: &Method,
        path: &str,
        query: &BTreeMap<String, String>,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Response<Body> {
        let segments: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
        match segments.as_slice() {
            ["version"] => return json_response(200, self.version()),
            // OpenAPI v3 documents that declare the `fieldValidation` parameter, so that kubectl leaves
            // validation to the server (which, as documented, does not validate schemas).
            ["openapi", "v3"] => return json_response(200, self.openapi_root()),
            ["openapi", "v3", "api", "v1"] => return json_response(200, self.openapi_group("", "v1")),
            ["openapi", "v3", "apis", group, version] => return json_response(200, self.openapi_group(group, version)),
            ["api"] => {
                return json_response(
                    200,
                    json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}),
                );
            }
            ["apis"] => return json_response(200, self.group_list()),
            ["api", "v1"] => return json_response(200, self.resource_list("", "v1")),
            ["apis", group] => {
                return match self.group(group) {
                    Some(g) => json_response(200, g),
                    None => error_response(&ApiError::new(
                        404,
                        "NotFound",
                        "the server could not find the requested resource",
                    )),
                };
            }
            ["apis", group, version] => return json_response(200, self.resource_list(group, version)),
            _ => {}
        }
        let (group, version, rest) = match segments.as_slice() {
            ["api", "v1", rest @ ..] => ("", "v1", rest),
            ["apis", group, version, rest @ ..] => (*group, *version, rest),
            _ => {
                return error_response(&ApiError::new(
                    404,
                    "NotFound",
                    "the server could not find the requested resource",
                ));
            }
        };
        let (namespace, rest) = match rest {
            ["namespaces", ns, plural, rest @ ..] => {
                (Some(*ns), std::iter::once(*plural).chain(rest.iter().copied()).collect::<Vec<_>>())
            }
            other => (None, other.to_vec()),
        };
        let Some((plural, rest)) = rest.split_first() else {
            return error_response(&ApiError::new(404, "NotFound", "the server could not find the requested resource"));
        };
        let Some(resource) = self.resource_by_plural(group, version, plural) else {
            return error_response(&ApiError::new(
                404,
                "NotFound",
                format!("the server could not find the requested resource ({plural})"),
            ));
        };
        let target = Target {
            resource,
            namespace: if resource.namespaced { namespace.unwrap_or_default().to_owned() } else { String::new() },
            name: rest.first().map(|s| (*s).to_owned()),
            subresource: rest.get(1).map(|s| (*s).to_owned()),
        };
        if target.subresource.as_deref().is_some_and(|s| s != "status" || !resource.status_subresource) {
            return error_response(&ApiError::new(
                404,
                "NotFound",
                "the server could not find the requested subresource",
            ));
        }
        let all_namespaces = resource.namespaced && namespace.is_none();
        let manager = query.get("fieldManager").cloned().unwrap_or_else(|| "unknown".to_owned());
        let result = match (method, &target.name) {
            (&Method::GET, None) if query.get("watch").is_some_and(|w| w == "true" || w == "1") => {
                return self.watch(resource, if all_namespaces { None } else { Some(target.namespace.clone()) }, query);
            }
            (&Method::GET, None) => {
                self.do_list(resource, if all_namespaces { None } else { Some(&target.namespace) }, query, headers)
            }
            (&Method::GET, Some(name)) => self.do_get(resource, &target.namespace, name),
            (&Method::POST, None) => match parse_body(body) {
                Ok(object) => self.do_create(resource, &target.namespace, object, &manager).map(|v| (201, v)),
                Err(e) => Err(e),
            },
            (&Method::PUT, Some(_)) => match parse_body(body) {
                Ok(object) => self.do_replace(&target, object, &manager).map(|v| (200, v)),
                Err(e) => Err(e),
            },
            (&Method::PATCH, Some(_)) => {
                let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
                let force = query.get("force").is_some_and(|f| f == "true");
                self.do_patch(&target, content_type, body, &manager, force)
            }
            (&Method::DELETE, Some(name)) => self.do_delete(resource, &target.namespace, name).map(|v| (200, v)),
            _ => Err(ApiError::new(405, "MethodNotAllowed", format!("{method} is not supported here"))),
        };
        match result {
            Ok((code, value)) => json_response(code, value),
            Err(error) => error_response(&error),
        }
    }

    fn version(&self) -> Value {
        json!({"major": "1", "minor": "34", "gitVersion": "v1.34.0-blueprint-operator-sandbox", "platform": "linux/amd64", "goVersion": "n/a", "compiler": "n/a", "buildDate": "2026-01-01T00:00:00Z", "gitCommit": "", "gitTreeState": "clean"})
    }

    fn openapi_root(&self) -> Value {
        let mut paths = serde_json::Map::new();
        paths.insert("api/v1".into(), json!({"serverRelativeURL": "/openapi/v3/api/v1?hash=1"}));
        for (group, versions) in self.groups() {
            for version in versions {
                paths.insert(
                    format!("apis/{group}/{version}"),
                    json!({"serverRelativeURL": format!("/openapi/v3/apis/{group}/{version}?hash=1")}),
                );
            }
        }
        json!({"paths": paths})
    }

    fn openapi_group(&self, group: &str, version: &str) -> Value {
        let parameters = json!([
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
            {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
            {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
        ]);
        let mut paths = serde_json::Map::new();
        let mut schemas = serde_json::Map::new();
        for r in self.inner.resources.iter().filter(|r| r.group == group && r.version == version) {
            let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
            let prefix = if group.is_empty() { format!("/api/{version}") } else { format!("/apis/{group}/{version}") };
            let collection = if r.namespaced {
                format!("{prefix}/namespaces/{{namespace}}/{}", r.plural)
            } else {
                format!("{prefix}/{}", r.plural)
            };
            let operation = |verb: &str| json!({"operationId": format!("{verb}{}", r.kind), "parameters": parameters, "x-kubernetes-group-version-kind": gvk, "responses": {}});
            paths.insert(collection.clone(), json!({"get": operation("list"), "post": operation("create")}));
            paths.insert(format!("{collection}/{{name}}"), json!({"get": operation("read"), "put": operation("replace"), "patch": operation("patch"), "delete": operation("delete")}));
            let reversed: Vec<&str> = r.group.split('.').rev().collect();
            let schema_name = if r.group.is_empty() {
                format!("io.k8s.api.core.{}.{}", r.version, r.kind)
            } else {
                format!("{}.{}.{}", reversed.join("."), r.version, r.kind)
            };
            schemas.insert(schema_name, json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "x-kubernetes-group-version-kind": [gvk]}));
        }
        json!({"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.34.0"}, "paths": paths, "components": {"schemas": schemas}})
    }

    fn groups(&self) -> BTreeMap<String, Vec<String>> {
        let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for r in self.inner.resources.iter().filter(|r| !r.group.is_empty()) {
            let versions = groups.entry(r.group.clone()).or_default();
            if !versions.contains(&r.version) {
                versions.push(r.version.clone());
            }
        }
        groups
    }

    fn group_json(name: &str, versions: &[String]) -> Value {
        let list: Vec<Value> =
            versions.iter().map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v})).collect();
        json!({"name": name, "versions": list, "preferredVersion": list[0]})
    }

    fn group_list(&self) -> Value {
        let groups: Vec<Value> = self.groups().iter().map(|(n, v)| Self::group_json(n, v)).collect();
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
    }

    fn group(&self, name: &str) -> Option<Value> {
        let groups = self.groups();
        let versions = groups.get(name)?;
        let mut group = Self::group_json(name, versions);
        group["kind"] = json!("APIGroup");
        group["apiVersion"] = json!("v1");
        Some(group)
    }

    fn resource_list(&self, group: &str, version: &str) -> Value {
        let mut list = Vec::new();
        for r in self.inner.resources.iter().filter(|r| r.group == group && r.version == version) {
            list.push(json!({
                "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced, "kind": r.kind,
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": r.short_names,
            }));
            if r.status_subresource {
                list.push(json!({"name": format!("{}/status", r.plural), "singularName": "", "namespaced": r.namespaced, "kind": r.kind, "verbs": ["get", "patch", "update"]}));
            }
        }
        let group_version = if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") };
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": list})
    }

    fn do_get(&self, resource: &ResourceType, namespace: &str, name: &str) -> Result<(u16, Value), ApiError> {
        let store = self.inner.store.lock().expect("not poisoned");
        store
            .objects
            .get(&(resource.key(), namespace.to_owned(), name.to_owned()))
            .cloned()
            .map(|v| (200, v))
            .ok_or_else(|| not_found(resource, name))
    }

    fn do_list(
        &self,
        resource: &ResourceType,
        namespace: Option<&str>,
        query: &BTreeMap<String, String>,
        headers: &HeaderMap,
    ) -> Result<(u16, Value), ApiError> {
        let labels = LabelSelector::parse(query.get("labelSelector").map(String::as_str).unwrap_or(""))
            .map_err(|e| ApiError::new(400, "BadRequest", e))?;
        let fields = FieldSelector::parse(query.get("fieldSelector").map(String::as_str).unwrap_or(""))
            .map_err(|e| ApiError::new(400, "BadRequest", e))?;
        let store = self.inner.store.lock().expect("not poisoned");
        let after = match query.get("continue").filter(|c| !c.is_empty()) {
            Some(token) => {
                let (version, key) =
                    token.split_once(':').ok_or_else(|| ApiError::new(400, "BadRequest", "invalid continue token"))?;
                let version: u64 =
                    version.parse().map_err(|_| ApiError::new(400, "BadRequest", "invalid continue token"))?;
                if version < store.compacted {
                    return Err(ApiError::new(
                        410,
                        "Expired",
                        "The provided continue parameter is too old to display a consistent list result.",
                    ));
                }
                Some(key.to_owned())
            }
            None => None,
        };
        let limit: usize = query.get("limit").and_then(|l| l.parse().ok()).filter(|l| *l > 0).unwrap_or(usize::MAX);
        let key = resource.key();
        let mut matching = store
            .objects
            .iter()
            .filter(|((r, ns, _), _)| *r == key && namespace.is_none_or(|n| n == ns))
            .filter(|(_, v)| labels.matches(v) && fields.matches(v))
            .filter(|((_, ns, name), _)| after.as_ref().is_none_or(|a| format!("{ns}/{name}") > *a));
        let items: Vec<Value> = matching.by_ref().take(limit).map(|(_, v)| v.clone()).collect();
        let remaining = matching.count();
        let mut metadata = json!({"resourceVersion": store.revision.to_string()});
        if remaining > 0
            && let Some(last) = items.last()
        {
            let ns = last.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("");
            let name = last.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
            metadata["continue"] = json!(format!("{}:{ns}/{name}", store.revision));
            metadata["remainingItemCount"] = json!(remaining);
        }
        let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or_default();
        if accept.contains("as=Table") {
            return Ok((200, self.table(resource, &items, metadata)));
        }
        Ok((
            200,
            json!({"apiVersion": resource.api_version(), "kind": format!("{}List", resource.kind), "metadata": metadata, "items": items}),
        ))
    }

    /// `kubectl get` output: the CRD's printer columns, else name and age.
    fn table(&self, resource: &ResourceType, items: &[Value], metadata: Value) -> Value {
        let crd = resources::crds()
            .into_iter()
            .find(|c| c.spec.group == resource.group && c.spec.names.plural == resource.plural);
        let columns: Vec<(String, String, String)> = crd
            .and_then(|c| c.spec.versions.into_iter().find(|v| v.name == resource.version))
            .and_then(|v| v.additional_printer_columns)
            .map(|cols| cols.into_iter().map(|c| (c.name, c.type_, c.json_path)).collect())
            .unwrap_or_else(|| vec![("Age".into(), "date".into(), ".metadata.creationTimestamp".into())]);
        let mut definitions =
            vec![json!({"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0})];
        definitions.extend(columns.iter().map(
            |(name, type_, _)| json!({"name": name, "type": type_, "format": "", "description": name, "priority": 0}),
        ));
        let now = (self.inner.clock)();
        let rows: Vec<Value> = items
            .iter()
            .map(|item| {
                let mut cells = vec![item.pointer("/metadata/name").cloned().unwrap_or(Value::Null)];
                cells.extend(columns.iter().map(|(_, type_, path)| {
                    let value = json_path(item, path).unwrap_or(Value::Null);
                    // Dates are shown as ages, as the API server renders them.
                    match (type_.as_str(), value.as_str().and_then(|t| t.parse::<Timestamp>().ok())) {
                        ("date", Some(time)) => json!(age(now.duration_since(time).as_secs())),
                        _ => value,
                    }
                }));
                json!({"cells": cells, "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": item["metadata"]}})
            })
            .collect();
        json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata, "columnDefinitions": definitions, "rows": rows})
    }

    fn do_create(
        &self,
        resource: &ResourceType,
        namespace: &str,
        object: Value,
        manager: &str,
    ) -> Result<Value, ApiError> {
        self.insert(resource, namespace, object, manager, None)
    }

    /// Creates an object; `managed` is the ownership an apply established (else the creator owns all).
    fn insert(
        &self,
        resource: &ResourceType,
        namespace: &str,
        mut object: Value,
        manager: &str,
        managed: Option<ManagedFields>,
    ) -> Result<Value, ApiError> {
        if !object.is_object() {
            return Err(ApiError::new(400, "BadRequest", "the body must be an object"));
        }
        object["apiVersion"] = json!(resource.api_version());
        object["kind"] = json!(resource.kind);
        if !object.get("metadata").is_some_and(Value::is_object) {
            object["metadata"] = json!({});
        }
        if let Some(given) = object.pointer("/metadata/namespace").and_then(Value::as_str)
            && resource.namespaced
            && given != namespace
        {
            return Err(ApiError::new(
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        let name = match object.pointer("/metadata/name").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => match object.pointer("/metadata/generateName").and_then(Value::as_str) {
                Some(prefix) => format!("{prefix}{}", random_suffix()),
                None => {
                    return Err(ApiError::new(
                        422,
                        "Invalid",
                        "metadata.name: Required value: name or generateName is required",
                    ));
                }
            },
        };
        normalize_secret(resource, &mut object);
        if resource.status_subresource {
            // Status is ignored on create when it is a subresource.
            if let Some(map) = object.as_object_mut() {
                map.remove("status");
            }
        }
        let now = self.now();
        let mut store = self.inner.store.lock().expect("not poisoned");
        let key = (resource.key(), namespace.to_owned(), name.clone());
        if store.objects.contains_key(&key) {
            return Err(ApiError::new(409, "AlreadyExists", format!("{} \"{name}\" already exists", resource.plural)));
        }
        let version = store.next_revision();
        let metadata = object["metadata"].as_object_mut().expect("made an object");
        metadata.insert("name".into(), json!(name));
        if resource.namespaced {
            metadata.insert("namespace".into(), json!(namespace));
        } else {
            metadata.remove("namespace");
        }
        metadata.insert("uid".into(), json!(uid(version)));
        metadata.insert("creationTimestamp".into(), json!(now));
        metadata.insert("resourceVersion".into(), json!(version.to_string()));
        if resource.generation {
            metadata.insert("generation".into(), json!(1));
        }
        metadata.remove("managedFields");
        metadata.remove("deletionTimestamp");
        let managed = managed.unwrap_or_else(|| {
            let mut managed = ManagedFields::default();
            let writer = Writer { manager, api_version: &resource.api_version(), time: &now, subresource: None };
            managed.record_update(writer, &Value::Null, &object);
            managed
        });
        managed.write(&mut object);
        mirror_event(&mut store, resource, Change::Added, &object, version);
        store.record(key, Change::Added, object.clone(), version);
        Ok(object)
    }

    fn do_replace(&self, target: &Target<'_>, object: Value, manager: &str) -> Result<Value, ApiError> {
        let sent_version = object.pointer("/metadata/resourceVersion").and_then(Value::as_str).map(str::to_owned);
        if sent_version.is_none() && target.resource.generation {
            return Err(ApiError::new(
                422,
                "Invalid",
                "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
            ));
        }
        self.update_with(target, manager, move |_| Ok(object))
    }

    fn do_patch(
        &self,
        target: &Target<'_>,
        content_type: &str,
        body: &[u8],
        manager: &str,
        force: bool,
    ) -> Result<(u16, Value), ApiError> {
        let media = content_type.split(';').next().unwrap_or_default().trim();
        match media {
            "application/apply-patch+yaml" => {
                if manager == "unknown" {
                    return Err(ApiError::new(
                        422,
                        "Invalid",
                        "fieldManager: Required value: is required for apply patch",
                    ));
                }
                let text =
                    std::str::from_utf8(body).map_err(|_| ApiError::new(400, "BadRequest", "the body is not UTF-8"))?;
                let config: Value = serde_saphyr::from_str(text)
                    .map_err(|e| ApiError::new(400, "BadRequest", format!("invalid apply configuration: {e}")))?;
                self.apply(target, config, manager, force)
            }
            "application/merge-patch+json"
            | "application/strategic-merge-patch+json"
            | "application/json-patch+json" => {
                let patch: Value = serde_json::from_slice(body)
                    .map_err(|e| ApiError::new(400, "BadRequest", format!("invalid patch: {e}")))?;
                let json_patch = media == "application/json-patch+json";
                let patch_ops: Option<json_patch::Patch> = if json_patch {
                    Some(
                        serde_json::from_value(patch.clone())
                            .map_err(|e| ApiError::new(400, "BadRequest", format!("invalid JSON patch: {e}")))?,
                    )
                } else {
                    None
                };
                self.update_with(target, manager, move |current| {
                    let mut next = current.clone();
                    match &patch_ops {
                        Some(ops) => json_patch::patch(&mut next, ops).map_err(|e| {
                            ApiError::new(422, "Invalid", format!("the JSON patch cannot be applied: {e}"))
                        })?,
                        None => json_patch::merge(&mut next, &patch),
                    }
                    Ok(next)
                })
                .map(|v| (200, v))
            }
            other => {
                Err(ApiError::new(415, "UnsupportedMediaType", format!("the media type {other:?} is not supported")))
            }
        }
    }

    fn apply(&self, target: &Target<'_>, config: Value, manager: &str, force: bool) -> Result<(u16, Value), ApiError> {
        let name = target.name.clone().unwrap_or_default();
        let key = (target.resource.key(), target.namespace.clone(), name.clone());
        let exists = self.inner.store.lock().expect("not poisoned").objects.contains_key(&key);
        let now = self.now();
        let api_version = target.resource.api_version();
        if !exists {
            if target.subresource.is_some() {
                return Err(not_found(target.resource, &name));
            }
            let mut managed = ManagedFields::default();
            let mut object = managed
                .apply(
                    Writer { manager, api_version: &api_version, time: &now, subresource: None },
                    &Value::Null,
                    &config,
                    force,
                )
                .map_err(|c| ApiError::new(409, "Conflict", c.message()))?;
            object["metadata"]["name"] = json!(name);
            return self.insert(target.resource, &target.namespace, object, manager, Some(managed)).map(|v| (201, v));
        }
        let subresource = target.subresource.clone();
        let result = self.update_raw(target, manager, move |current, managed| {
            let mut sent = config.clone();
            if let Some(version) = sent.pointer("/metadata/resourceVersion").cloned() {
                if Some(&version) != current.pointer("/metadata/resourceVersion") {
                    return Err(ApiError::new(
                        409,
                        "Conflict",
                        "the object has been modified; please apply your changes to the latest version and try again",
                    ));
                }
                sent["metadata"].as_object_mut().map(|m| m.remove("resourceVersion"));
            }
            managed
                .apply(
                    Writer { manager, api_version: &api_version, time: &now, subresource: subresource.as_deref() },
                    current,
                    &sent,
                    force,
                )
                .map_err(|c| ApiError::new(409, "Conflict", c.message()))
        })?;
        Ok((200, result))
    }

    /// An update through `change` with the update rules: preconditions, the status split, generation,
    /// no-op detection, ownership, finalizers.
    fn update_with(
        &self,
        target: &Target<'_>,
        manager: &str,
        change: impl FnOnce(&Value) -> Result<Value, ApiError>,
    ) -> Result<Value, ApiError> {
        self.update_raw(target, manager, move |current, _| {
            let next = change(current)?;
            // A resourceVersion in what was sent is a precondition (optimistic concurrency).
            if let Some(sent) = next.pointer("/metadata/resourceVersion")
                && Some(sent) != current.pointer("/metadata/resourceVersion")
            {
                return Err(ApiError::new(
                    409,
                    "Conflict",
                    "the object has been modified; please apply your changes to the latest version and try again",
                ));
            }
            Ok(next)
        })
    }

    fn update_raw(
        &self,
        target: &Target<'_>,
        manager: &str,
        change: impl FnOnce(&Value, &mut ManagedFields) -> Result<Value, ApiError>,
    ) -> Result<Value, ApiError> {
        let resource = target.resource;
        let name = target.name.clone().unwrap_or_default();
        let key = (resource.key(), target.namespace.clone(), name.clone());
        let now = self.now();
        let mut store = self.inner.store.lock().expect("not poisoned");
        let current = store.objects.get(&key).cloned().ok_or_else(|| not_found(resource, &name))?;
        let mut managed = ManagedFields::read(&current);
        let managed_before = managed.clone();
        let mut next = change(&current, &mut managed)?;
        let apply = managed != managed_before;
        if !next.is_object() {
            return Err(ApiError::new(400, "BadRequest", "the result must be an object"));
        }
        normalize_secret(resource, &mut next);
        // The status subresource: object writes keep the stored status, status writes keep the rest.
        if resource.status_subresource {
            if target.subresource.as_deref() == Some("status") {
                let status = next.get("status").cloned();
                next = current.clone();
                match status {
                    Some(status) => next["status"] = status,
                    None => {
                        next.as_object_mut().expect("an object").remove("status");
                    }
                }
            } else {
                match current.get("status") {
                    Some(status) => next["status"] = status.clone(),
                    None => {
                        next.as_object_mut().expect("an object").remove("status");
                    }
                }
            }
        }
        // Identity and bookkeeping are the server's.
        next["apiVersion"] = current["apiVersion"].clone();
        next["kind"] = current["kind"].clone();
        for field in
            ["name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "generation", "resourceVersion"]
        {
            match current["metadata"].get(field) {
                Some(value) => next["metadata"][field] = value.clone(),
                None => {
                    next["metadata"].as_object_mut().map(|m| m.remove(field));
                }
            }
        }
        if resource.generation && spec_of(&current) != spec_of(&next) {
            let generation = current.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
            next["metadata"]["generation"] = json!(generation + 1);
        }
        // Ownership of what this write changed.
        if !apply {
            let api_version = resource.api_version();
            let writer =
                Writer { manager, api_version: &api_version, time: &now, subresource: target.subresource.as_deref() };
            managed.record_update(writer, &current, &next);
        }
        managed.write(&mut next);
        // A write that changes nothing is not a change: no new version, no watch event.
        if without_bookkeeping(&current) == without_bookkeeping(&next) {
            return Ok(current);
        }
        let version = store.next_revision();
        next["metadata"]["resourceVersion"] = json!(version.to_string());
        let finalizers_empty = next.pointer("/metadata/finalizers").and_then(Value::as_array).is_none_or(Vec::is_empty);
        let change = if next.pointer("/metadata/deletionTimestamp").is_some() && finalizers_empty {
            Change::Deleted
        } else {
            Change::Modified
        };
        mirror_event(&mut store, resource, change, &next, version);
        store.record(key, change, next.clone(), version);
        Ok(next)
    }

    fn do_delete(&self, resource: &ResourceType, namespace: &str, name: &str) -> Result<Value, ApiError> {
        let key = (resource.key(), namespace.to_owned(), name.to_owned());
        let now = self.now();
        let mut store = self.inner.store.lock().expect("not poisoned");
        let mut current = store.objects.get(&key).cloned().ok_or_else(|| not_found(resource, name))?;
        let version = store.next_revision();
        current["metadata"]["resourceVersion"] = json!(version.to_string());
        let has_finalizers =
            current.pointer("/metadata/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty());
        if has_finalizers {
            // Deletion waits for the finalizers: the object is only marked.
            if current.pointer("/metadata/deletionTimestamp").is_none() {
                current["metadata"]["deletionTimestamp"] = json!(now);
                current["metadata"]["deletionGracePeriodSeconds"] = json!(0);
            }
            store.record(key, Change::Modified, current.clone(), version);
        } else {
            store.record(key, Change::Deleted, current.clone(), version);
        }
        Ok(current)
    }

    fn watch(
        &self,
        resource: &ResourceType,
        namespace: Option<String>,
        query: &BTreeMap<String, String>,
    ) -> Response<Body> {
        let labels = match LabelSelector::parse(query.get("labelSelector").map(String::as_str).unwrap_or("")) {
            Ok(l) => l,
            Err(e) => return error_response(&ApiError::new(400, "BadRequest", e)),
        };
        let fields = match FieldSelector::parse(query.get("fieldSelector").map(String::as_str).unwrap_or("")) {
            Ok(f) => f,
            Err(e) => return error_response(&ApiError::new(400, "BadRequest", e)),
        };
        let timeout = query.get("timeoutSeconds").and_then(|t| t.parse::<u64>().ok()).map(Duration::from_secs);
        let bookmarks = query.get("allowWatchBookmarks").is_some_and(|b| b == "true" || b == "1");
        let initial_events = query.get("sendInitialEvents").is_some_and(|s| s == "true");
        let since: Option<u64> =
            query.get("resourceVersion").filter(|v| !v.is_empty() && *v != "0").and_then(|v| v.parse().ok());
        let resource_key = resource.key();
        let api_version = resource.api_version();
        let kind = resource.kind.clone();
        let wanted = move |record: &Record| {
            record.resource == resource_key
                && namespace.as_ref().is_none_or(|n| *n == record.namespace)
                && labels.matches(&record.object)
                && fields.matches(&record.object)
        };

        let (mut sender, receiver) = futures::channel::mpsc::channel::<Result<Bytes, Infallible>>(64);
        let (backlog, mut live, current) = {
            let store = self.inner.store.lock().expect("not poisoned");
            let live = store.changes.subscribe();
            let backlog: Result<Vec<Record>, ()> = match since {
                Some(version) => store.since(version).ok_or(()),
                None => Ok(store
                    .objects
                    .iter()
                    .map(|((r, ns, _), object)| Record {
                        resource_version: 0,
                        resource: r.clone(),
                        namespace: ns.clone(),
                        change: Change::Added,
                        object: object.clone(),
                    })
                    .collect()),
            };
            (backlog, live, store.revision)
        };
        let mut epoch = self.inner.watch_epoch.subscribe();
        epoch.borrow_and_update();
        let compacted_message = format!("too old resource version: {} ({current})", since.unwrap_or_default());
        tokio::spawn(async move {
            let line = |event_type: &str, object: &Value| Ok(watch_line(event_type, object));
            let backlog = match backlog {
                Ok(backlog) => backlog,
                Err(()) => {
                    let error = ApiError::new(410, "Expired", compacted_message);
                    let _ = futures::SinkExt::send(&mut sender, line("ERROR", &error.body())).await;
                    return;
                }
            };
            let mut last = since.unwrap_or(current);
            for record in backlog.iter().filter(|r| wanted(r)) {
                last = last.max(record.resource_version);
                if futures::SinkExt::send(&mut sender, line(record.change.as_str(), &record.object)).await.is_err() {
                    return;
                }
            }
            if initial_events {
                let bookmark = json!({"kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": current.to_string(), "annotations": {"k8s.io/initial-events-end": "true"}}});
                if futures::SinkExt::send(&mut sender, line("BOOKMARK", &bookmark)).await.is_err() {
                    return;
                }
            }
            let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
            let mut ticker = tokio::time::interval(Duration::from_secs(60));
            ticker.tick().await;
            loop {
                let until_deadline = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = until_deadline => return,
                    _ = epoch.changed() => return,
                    _ = ticker.tick(), if bookmarks => {
                        let bookmark = json!({"kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": last.to_string()}});
                        if futures::SinkExt::send(&mut sender, line("BOOKMARK", &bookmark)).await.is_err() {
                            return;
                        }
                    }
                    received = live.recv() => match received {
                        Ok(record) => {
                            if record.resource_version <= last && since.is_some() {
                                continue;
                            }
                            last = last.max(record.resource_version);
                            if wanted(&record) && futures::SinkExt::send(&mut sender, line(record.change.as_str(), &record.object)).await.is_err() {
                                return;
                            }
                        }
                        // Fell behind or the store is gone: end the watch; the client re-watches.
                        Err(_) => return,
                    },
                }
            }
        });
        Response::builder()
            .status(200)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from_stream(receiver.map(|chunk| chunk)))
            .expect("a valid response")
    }
}

/// An events.k8s.io/v1 Event is also a core/v1 Event (one object, two API versions): the core view is
/// what `kubectl describe` lists.
fn mirror_event(store: &mut Store, resource: &ResourceType, change: Change, event: &Value, version: u64) {
    if resource.group != "events.k8s.io" {
        return;
    }
    let time = event.get("eventTime").cloned().unwrap_or(Value::Null);
    let last = event.pointer("/series/lastObservedTime").cloned().unwrap_or(time.clone());
    let core = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": event["metadata"],
        "involvedObject": event.get("regarding").cloned().unwrap_or(Value::Null),
        "related": event.get("related").cloned().unwrap_or(Value::Null),
        "reason": event.get("reason").cloned().unwrap_or(Value::Null),
        "message": event.get("note").cloned().unwrap_or(Value::Null),
        "type": event.get("type").cloned().unwrap_or(Value::Null),
        "action": event.get("action").cloned().unwrap_or(Value::Null),
        "source": {"component": event.get("reportingController").cloned().unwrap_or(Value::Null)},
        "reportingComponent": event.get("reportingController").cloned().unwrap_or(Value::Null),
        "reportingInstance": event.get("reportingInstance").cloned().unwrap_or(Value::Null),
        "eventTime": time,
        "firstTimestamp": time_seconds(&time),
        "lastTimestamp": time_seconds(&last),
        "count": event.pointer("/series/count").cloned().unwrap_or(json!(1)),
    });
    let namespace = event.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default().to_owned();
    let name = event.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_owned();
    store.record(("/events".into(), namespace, name), change, core, version);
}

/// A MicroTime as a Time (seconds).
fn time_seconds(time: &Value) -> Value {
    match time.as_str().and_then(|t| t.parse::<Timestamp>().ok()) {
        Some(t) => json!(Timestamp::from_second(t.as_second()).unwrap_or(t).to_string()),
        None => Value::Null,
    }
}

/// `45s`, `3m12s`, `2h5m`, `3d4h`, as kubectl shows ages.
fn age(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        0..=119 => format!("{s}s"),
        120..=3599 => format!("{}m{}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h{}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{}h", s / 86_400, (s % 86_400) / 3600),
    }
}

fn spec_of(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("metadata");
        map.remove("status");
    }
    copy
}

fn without_bookkeeping(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(metadata) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("resourceVersion");
        metadata.remove("managedFields");
    }
    copy
}

/// A Secret's `stringData` is write-only: it is merged into `data`.
fn normalize_secret(resource: &ResourceType, object: &mut Value) {
    if resource.group.is_empty()
        && resource.kind == "Secret"
        && let Some(Value::Object(strings)) = object.as_object_mut().and_then(|o| o.remove("stringData"))
    {
        use base64::Engine;
        let data = object.as_object_mut().expect("an object").entry("data").or_insert_with(|| json!({}));
        for (key, value) in strings {
            if let Some(text) = value.as_str() {
                data[key] = json!(base64::engine::general_purpose::STANDARD.encode(text));
            }
        }
    }
}

fn not_found(resource: &ResourceType, name: &str) -> ApiError {
    let group = if resource.group.is_empty() { String::new() } else { format!(".{}", resource.group) };
    ApiError::new(404, "NotFound", format!("{}{group} \"{name}\" not found", resource.plural))
}

fn reason_for(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        409 => "Conflict",
        410 => "Expired",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "InternalError",
    }
}

/// A unique id; it starts with the creation revision, so sorting by uid is sorting by creation.
fn uid(version: u64) -> String {
    let random = random_suffix();
    format!("00000000-0000-4000-8000-{:07x}{random}", version % 0x1000_0000)
}

fn random_suffix() -> String {
    let mut bytes = [0u8; 5];
    getrandom::fill(&mut bytes).expect("randomness is available");
    bytes.iter().map(|b| (b'a' + b % 26) as char).collect()
}

/// One line of a watch stream: `{"type":…,"object":…}`, in that order, as the API server writes it.
/// The order matters to clients: kube's decoder reads the object straight into its type when it knows
/// the event type first, and buffers the whole object otherwise.
fn watch_line(event_type: &str, object: &Value) -> Bytes {
    let mut line = Vec::with_capacity(256);
    line.extend_from_slice(b"{\"type\":");
    serde_json::to_writer(&mut line, event_type).expect("a string serializes");
    line.extend_from_slice(b",\"object\":");
    serde_json::to_writer(&mut line, object).expect("a JSON value serializes");
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

fn parse_query(query: &str) -> BTreeMap<String, String> {
    form_urlencoded::parse(query.as_bytes()).into_owned().collect()
}

fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .or_else(|_| std::str::from_utf8(body).map_err(|_| ()).and_then(|t| serde_saphyr::from_str(t).map_err(|_| ())))
        .map_err(|_| ApiError::new(400, "BadRequest", "the request body is not a JSON or YAML object"))
}

fn json_response(code: u16, value: Value) -> Response<Body> {
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::OK))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(value.to_string()))
        .expect("a valid response")
}

fn error_response(error: &ApiError) -> Response<Body> {
    json_response(error.code, error.body())
}

/// The JSONPath subset printer columns use: `.a.b` and `.a.list[?(@.k == 'v')].c`.
pub fn json_path(object: &Value, path: &str) -> Option<Value> {
    let mut node = object.clone();
    let mut rest = path.trim_start_matches('.');
    while !rest.is_empty() {
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        let (field, tail) = rest.split_at(end);
        if !field.is_empty() {
            node = node.get(field)?.clone();
        }
        rest = tail;
        if let Some(filter) = rest.strip_prefix("[?(@.") {
            let close = filter.find(")]")?;
            let (condition, after) = filter.split_at(close);
            let (key, value) = condition.split_once("==")?;
            let value = value.trim().trim_matches('\'').trim_matches('"');
            node = node
                .as_array()?
                .iter()
                .find(|item| item.get(key.trim()).and_then(Value::as_str) == Some(value))?
                .clone();
            rest = &after[2..];
        }
        rest = rest.trim_start_matches('.');
    }
    Some(node)
}
