//! `kubectl get` output: a LIST asked for `as=Table` is answered with the CRD's printer columns
//! (else name and age), rendered as the API server renders them (dates as ages).

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::Emulator;
use super::resources::{self, ResourceType};

impl Emulator {
    /// `kubectl get` output: the CRD's printer columns, else name and age.
    pub(super) fn table(&self, resource: &ResourceType, items: &[Value], metadata: Value) -> Value {
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
