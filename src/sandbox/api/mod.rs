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
//! watch event, `managedFields` with their times, metadata-only lists and watches
//! (`as=PartialObjectMetadata`), and the discovery endpoints kubectl needs.
//! Not emulated: admission, schema validation and pruning, RBAC, garbage collection by owner.
//!
//! This module holds the emulator, its state and the routing of a request to its handler; one module
//! per concern does the rest: `serve` (the router, the in-process client, the HTTP edge of a
//! request), `discovery` (discovery and OpenAPI), `reads` (GET, LIST), `tables` (kubectl's Table
//! output), `writes` (create, replace, the update rules, delete), `patch` (PATCH, server-side apply),
//! `events` (the core/v1 view of events), `watch`, `faults` (fault controls, the request log),
//! `access` (seeding and inspection without HTTP) and `error` (the `Status` errors), on top of
//! `store`, `resources`, `selectors` and `managed`.

pub mod managed;
pub mod resources;
pub mod selectors;
pub mod store;

mod access;
mod discovery;
mod error;
mod faults;
mod patch;
pub mod protobuf;
mod reads;
mod serve;
mod tables;
mod watch;
mod writes;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{HeaderMap, Method, Response, header};
use k8s_openapi::jiff::Timestamp;

pub use error::ApiError;
pub use faults::LoggedRequest;
pub use tables::json_path;

use faults::Faults;
use resources::ResourceType;
use serve::{error_response, json_response, parse_body};
use store::Store;

/// The emulator's clock (the tests' is virtual).
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// The emulator's state, shared by its clones.
struct Inner {
    resources: Vec<ResourceType>,
    store: Mutex<Store>,
    clock: Clock,
    faults: Mutex<Faults>,
    log: Mutex<Vec<LoggedRequest>>,
    /// Bumped to end every open watch.
    watch_epoch: tokio::sync::watch::Sender<u64>,
}

/// The emulator; clones share one cluster.
#[derive(Clone)]
pub struct Emulator {
    inner: Arc<Inner>,
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

    /// Now, in whole seconds (as the API server writes timestamps).
    fn now(&self) -> String {
        let now = (self.inner.clock)();
        Timestamp::from_second(now.as_second()).unwrap_or(now).to_string()
    }

    /// The resource type of a kind.
    fn resource(&self, api_version: &str, kind: &str) -> Option<&ResourceType> {
        self.inner.resources.iter().find(|r| r.api_version() == api_version && r.kind == kind)
    }

    /// The resource type a path names.
    fn resource_by_plural(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceType> {
        self.inner.resources.iter().find(|r| r.group == group && r.version == version && r.plural == plural)
    }

    /// Routes a request: discovery, else the resource its path names and the verb its method and path
    /// make.
    fn dispatch(
        &self,
        method: &Method,
        path: &str,
        query: &BTreeMap<String, String>,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Response<Body> {
        let segments: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
        if let Some(response) = self.discovery(&segments) {
            return response;
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
        if resource.is_core_event() && method != Method::GET {
            return error_response(&ApiError::new(
                405,
                "MethodNotAllowed",
                "the sandbox serves core v1 Events read-only, as a view of events.k8s.io/v1 Events: write those",
            ));
        }
        let all_namespaces = resource.namespaced && namespace.is_none();
        let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
        let manager = query.get("fieldManager").cloned().unwrap_or_else(|| "unknown".to_owned());
        let result = match (method, &target.name) {
            (&Method::GET, None) if query.get("watch").is_some_and(|w| w == "true" || w == "1") => {
                let namespace = if all_namespaces { None } else { Some(target.namespace.clone()) };
                return self.watch(resource, namespace, query, headers);
            }
            (&Method::GET, None) => {
                self.do_list(resource, if all_namespaces { None } else { Some(&target.namespace) }, query, headers)
            }
            (&Method::GET, Some(name)) => self.do_get(resource, &target.namespace, name, headers),
            (&Method::POST, None) => match parse_body(content_type, body) {
                Ok(object) => self.do_create(resource, &target.namespace, object, &manager).map(|v| (201, v)),
                Err(e) => Err(e),
            },
            (&Method::PUT, Some(_)) => match parse_body(content_type, body) {
                Ok(object) => self.do_replace(&target, object, &manager).map(|v| (200, v)),
                Err(e) => Err(e),
            },
            (&Method::PATCH, Some(_)) => {
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
}
