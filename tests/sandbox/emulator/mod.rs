//! The API emulator's rules, each a function named after the Kubernetes rule it follows, run twice:
//! on the emulator (tokio's paused clock) and, as its differential twin, on the real kube-apiserver
//! with etcd (`make kube`; a namespace of its own). Both answer through a `kube::Client`, so a rule
//! sends the same requests to both and asserts the same answers; where a rule's answer depends on the
//! clock (timestamps), it asserts what holds on both and the exact value where time is virtual.
//! `controls` holds what needs the emulator's own controls (injected faults, dropped watches).

mod controls;
mod rules;

use std::time::Duration;

use blueprint_operator::sandbox::api::Emulator;
use blueprint_operator::sandbox::control_plane::{self, ControlPlane};
use http::Request;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

/// The emulator's test namespace.
const NS: &str = "ecosystem";

/// An emulator on a virtual clock that follows tokio's (paused) time.
pub fn emulator() -> Emulator {
    let start = tokio::time::Instant::now();
    Emulator::new(std::sync::Arc::new(move || {
        Timestamp::from_second(1_767_225_600).unwrap()
            + k8s_openapi::jiff::SignedDuration::try_from(start.elapsed()).unwrap()
    }))
}

/// The server a rule runs against.
#[derive(Clone)]
pub enum Server {
    Emulator(Emulator),
    KubeApiserver(&'static ControlPlane),
}

/// A server, a client of it, and the namespace a rule works in.
#[derive(Clone)]
pub struct Rig {
    pub server: Server,
    pub client: kube::Client,
    pub namespace: String,
}

impl Rig {
    async fn on(emulated: bool) -> Rig {
        if emulated {
            let emulator = emulator();
            let client = emulator.client(NS);
            Rig { server: Server::Emulator(emulator), client, namespace: NS.into() }
        } else {
            let plane = control_plane::shared();
            let namespace = plane.namespace("rules");
            let client = plane.client(&namespace).await;
            Rig { server: Server::KubeApiserver(plane), client, namespace }
        }
    }

    pub fn emulated(&self) -> bool {
        matches!(self.server, Server::Emulator(_))
    }

    /// `/api/v1/namespaces/<ns>/configmaps`.
    pub fn configmaps(&self) -> String {
        format!("/api/v1/namespaces/{}/configmaps", self.namespace)
    }

    /// `/api/v1/namespaces/<ns>/secrets`.
    pub fn secrets(&self) -> String {
        format!("/api/v1/namespaces/{}/secrets", self.namespace)
    }

    /// `/apis/k8s.cloudogu.com/v2/namespaces/<ns>/dogus`.
    pub fn dogus(&self) -> String {
        format!("/apis/k8s.cloudogu.com/v2/namespaces/{}/dogus", self.namespace)
    }

    /// `/apis/coordination.k8s.io/v1/namespaces/<ns>/leases`.
    pub fn leases(&self) -> String {
        format!("/apis/coordination.k8s.io/v1/namespaces/{}/leases", self.namespace)
    }

    /// One request; the status code and the body (JSON, or null).
    pub async fn call(&self, method: &str, uri: &str, content_type: &str, body: Value) -> (u16, Value) {
        let (status, bytes) = self.send(method, uri, &[("content-type", content_type)], body).await;
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    /// One request with the given headers; the status code and the raw body.
    pub async fn send(&self, method: &str, uri: &str, headers: &[(&str, &str)], body: Value) -> (u16, Vec<u8>) {
        let body = if body.is_null() { Vec::new() } else { body.to_string().into_bytes() };
        self.send_bytes(method, uri, headers, body).await
    }

    /// One request with the given headers and body bytes; the status code and the raw body.
    pub async fn send_bytes(&self, method: &str, uri: &str, headers: &[(&str, &str)], body: Vec<u8>) -> (u16, Vec<u8>) {
        let mut request = Request::builder().method(method).uri(uri);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = self.client.send(request.body(body.into()).unwrap()).await.expect("the server answers");
        let status = response.status().as_u16();
        let bytes = response.into_body().collect_bytes().await.expect("the body is read");
        (status, bytes.to_vec())
    }

    /// A watch's whole text (the watch must end: give it `timeoutSeconds`).
    pub async fn watch_text(&self, uri: &str) -> String {
        let (status, bytes) = self.send("GET", uri, &[], Value::Null).await;
        assert_eq!(status, 200, "{uri}");
        String::from_utf8(bytes).unwrap()
    }

    /// A watch's events, one JSON object per line.
    pub async fn watch_lines(&self, uri: &str) -> Vec<Value> {
        self.watch_text(uri).await.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    /// Forgets the history up to now: the emulator's store, or etcd's (what the API server does on
    /// its compaction interval).
    pub async fn compact(&self) {
        match &self.server {
            Server::Emulator(emulator) => emulator.compact(),
            Server::KubeApiserver(plane) => {
                plane.compact().await.unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }

    /// Lets time pass: virtual time on the emulator; on the real server, none (no fixed sleeps):
    /// rules assert only orderings there.
    pub async fn advance(&self, duration: Duration) {
        if self.emulated() {
            tokio::time::advance(duration).await;
        }
    }
}

pub fn urlencode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// Each rule as a test on both servers: `on_the_emulator::<rule>` and `on_kube_apiserver::<rule>`.
macro_rules! on_both_servers {
    ($($rule:ident),* $(,)?) => {
        mod on_the_emulator {
            $(
                #[tokio::test(start_paused = true)]
                async fn $rule() {
                    super::rules::$rule(super::Rig::on(true).await).await;
                }
            )*
        }
        mod on_kube_apiserver {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $rule() {
                    super::rules::$rule(super::Rig::on(false).await).await;
                }
            )*
        }
    };
}

on_both_servers!(
    create_fills_server_fields_and_rejects_duplicates,
    get_of_a_missing_object_is_not_found,
    list_filters_and_pages,
    put_is_optimistically_concurrent,
    patches_of_every_kind,
    server_side_apply,
    status_subresource_and_generation,
    no_op_writes_change_nothing_and_managed_fields_keep_times,
    delete_with_finalizers,
    watch_semantics,
    a_selector_watch_sees_objects_enter_and_leave_it,
    discovery,
    tables_use_printer_columns,
    tables_of_built_in_kinds,
    secret_string_data_becomes_data,
    metadata_only_lists_and_watches_carry_no_data,
    protobuf_bodies_create_config_maps_and_secrets,
    openapi_v3_serves_the_crds_schemas,
    a_reflector_follows_changes,
);
