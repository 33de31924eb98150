//! `kubectl get` output: a LIST asked for `as=Table` is answered with the CRD's printer columns, the
//! columns the real server prints for the built-in kinds a user looks at (ConfigMaps, Secrets, core
//! Events), else name and age; rendered as the API server renders them (dates as ages).

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::Emulator;
use super::resources::{self, ResourceType};

/// One column: its definition and how a cell of it is made from an object.
struct Column {
    name: String,
    type_: String,
    /// 0: `kubectl get` shows it; 1: only `-o wide`.
    priority: u8,
    cell: Cell,
}

enum Cell {
    /// A printer column's JSONPath (a `date` is shown as an age).
    Path(String),
    /// The number of entries of these maps.
    Count(&'static [&'static str]),
    /// An Event's last time seen (its series', its last timestamp, else its event time), as an age.
    LastSeen,
    /// `kind/name` of the Event's object, the kind in lower case.
    EventObject,
}

impl Column {
    fn new(name: &str, type_: &str, priority: u8, cell: Cell) -> Column {
        Column { name: name.into(), type_: type_.into(), priority, cell }
    }

    fn render(&self, object: &Value, now: Timestamp) -> Value {
        let age_of = |value: Option<&Value>| {
            value
                .and_then(Value::as_str)
                .and_then(|t| t.parse::<Timestamp>().ok())
                .map(|time| json!(age(now.duration_since(time).as_secs())))
        };
        match &self.cell {
            Cell::Path(path) => {
                let value = json_path(object, path).unwrap_or(Value::Null);
                if self.type_ == "date" { age_of(Some(&value)).unwrap_or(value) } else { value }
            }
            Cell::Count(fields) => {
                json!(fields.iter().filter_map(|f| object.get(*f)?.as_object()).map(|m| m.len()).sum::<usize>())
            }
            Cell::LastSeen => age_of(object.pointer("/series/lastObservedTime"))
                .or_else(|| age_of(object.get("lastTimestamp")))
                .or_else(|| age_of(object.get("eventTime")))
                .unwrap_or_else(|| json!("<unknown>")),
            Cell::EventObject => {
                let kind = object.pointer("/involvedObject/kind").and_then(Value::as_str).unwrap_or_default();
                let name = object.pointer("/involvedObject/name").and_then(Value::as_str).unwrap_or_default();
                json!(format!("{}/{name}", kind.to_lowercase()))
            }
        }
    }
}

/// The columns of `resource` after Name.
fn columns(resource: &ResourceType) -> Vec<Column> {
    let age = || Column::new("Age", "date", 0, Cell::Path(".metadata.creationTimestamp".into()));
    if let Some(printer_columns) = resources::crd_version(resource).and_then(|v| v.additional_printer_columns.as_ref())
    {
        return printer_columns
            .iter()
            .map(|c| {
                let priority = u8::try_from(c.priority.unwrap_or(0)).unwrap_or(1);
                Column::new(&c.name, &c.type_, priority, Cell::Path(c.json_path.clone()))
            })
            .collect();
    }
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "ConfigMap") => vec![Column::new("Data", "string", 0, Cell::Count(&["data", "binaryData"])), age()],
        ("", "Secret") => vec![
            Column::new("Type", "string", 0, Cell::Path(".type".into())),
            Column::new("Data", "string", 0, Cell::Count(&["data"])),
            age(),
        ],
        ("", "Event") => vec![
            Column::new("Last Seen", "string", 0, Cell::LastSeen),
            Column::new("Type", "string", 0, Cell::Path(".type".into())),
            Column::new("Reason", "string", 0, Cell::Path(".reason".into())),
            Column::new("Object", "string", 0, Cell::EventObject),
            Column::new("Message", "string", 0, Cell::Path(".message".into())),
            Column::new("Count", "string", 1, Cell::Path(".count".into())),
        ],
        _ => vec![age()],
    }
}

impl Emulator {
    /// `kubectl get` output: a row per item, Name first, then `resource`'s columns.
    pub(super) fn table(&self, resource: &ResourceType, items: &[Value], metadata: Value) -> Value {
        let mut columns = columns(resource);
        // Name comes first, except for Events: there it comes last, and only with `-o wide`.
        let name = Column::new("Name", "string", 0, Cell::Path(".metadata.name".into()));
        if resource.is_core_event() {
            columns.push(Column { priority: 1, ..name });
        } else {
            columns.insert(0, name);
        }
        let definitions: Vec<Value> = columns
            .iter()
            .map(|c| {
                let format = if c.name == "Name" { "name" } else { "" };
                json!({"name": c.name, "type": c.type_, "format": format, "description": c.name, "priority": c.priority})
            })
            .collect();
        let now = (self.inner.clock)();
        let rows: Vec<Value> = items
            .iter()
            .map(|item| {
                let cells: Vec<Value> = columns.iter().map(|column| column.render(item, now)).collect();
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
