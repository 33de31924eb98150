//! Discovery: `/version`, `/api`, `/apis` and the resource lists kubectl and kube's discovery read,
//! and OpenAPI v3 documents: the CRDs' own schemas (what `kubectl explain` reads), the built-in kinds
//! schemaless; every write declares `fieldValidation`, so kubectl leaves validation to the server.

use std::collections::BTreeMap;

use axum::body::Body;
use axum::http::Response;
use serde_json::{Value, json};

use super::Emulator;
use super::error::ApiError;
use super::resources::{self, ResourceType};
use super::serve::{error_response, json_response};

impl Emulator {
    /// The answer for a discovery or OpenAPI path; `None` for every other path.
    pub(super) fn discovery(&self, segments: &[&str]) -> Option<Response<Body>> {
        let response = match segments {
            ["version"] => json_response(200, self.version()),
            // OpenAPI v3 documents that declare the `fieldValidation` parameter, so that kubectl leaves
            // validation to the server (which, as documented, does not validate schemas).
            ["openapi", "v3"] => json_response(200, self.openapi_root()),
            ["openapi", "v3", "api", "v1"] => json_response(200, self.openapi_group("", "v1")),
            ["openapi", "v3", "apis", group, version] => json_response(200, self.openapi_group(group, version)),
            ["api"] => json_response(
                200,
                json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}),
            ),
            ["apis"] => json_response(200, self.group_list()),
            ["api", "v1"] => json_response(200, self.resource_list("", "v1")),
            ["apis", group] => match self.group(group) {
                Some(g) => json_response(200, g),
                None => {
                    error_response(&ApiError::new(404, "NotFound", "the server could not find the requested resource"))
                }
            },
            ["apis", group, version] => json_response(200, self.resource_list(group, version)),
            _ => return None,
        };
        Some(response)
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
            let mut schema = crd_schema(r)
                .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
            schema["x-kubernetes-group-version-kind"] = json!([gvk]);
            schemas.insert(schema_name, schema);
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
}

/// The schema of a custom resource's version, from its CRD (what the real server publishes).
fn crd_schema(resource: &ResourceType) -> Option<Value> {
    let schema = resources::crd_version(resource)?.schema.as_ref()?.open_api_v3_schema.as_ref()?;
    serde_json::to_value(schema).ok()
}
