//! `metadata.managedFields`: which field manager owns which fields, and when it last wrote.
//!
//! Server-side apply is emulated on top of it: an apply owns the fields it sends; sending a field
//! another manager owns with a different value is a conflict (409) unless forced; fields an applier
//! stops sending are removed unless someone else owns them. Other writes (create, update, patch) take
//! ownership of the fields they change. Lists are atomic (owned as a whole), as for most list fields.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

type Path = Vec<String>;

#[derive(Clone, Debug, PartialEq)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: String,
    subresource: Option<String>,
    fields: BTreeSet<Path>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ManagedFields(Vec<Entry>);

/// Who writes, when, through which subresource.
#[derive(Clone, Copy, Debug)]
pub struct Writer<'a> {
    pub manager: &'a str,
    pub api_version: &'a str,
    pub time: &'a str,
    pub subresource: Option<&'a str>,
}

/// Fields another manager owns with a different value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    pub fields: Vec<(String, String)>,
}

impl Conflict {
    pub fn message(&self) -> String {
        let list: Vec<String> =
            self.fields.iter().map(|(path, manager)| format!("conflict with \"{manager}\": {path}")).collect();
        format!("Apply failed with {} conflict(s): {}", list.len(), list.join("; "))
    }
}

/// The managed paths of an object: everything but the identity and bookkeeping in `metadata`.
fn managed_paths(object: &Value) -> BTreeSet<Path> {
    let mut paths = BTreeSet::new();
    if let Value::Object(map) = object {
        for (key, value) in map {
            match key.as_str() {
                "apiVersion" | "kind" => {}
                "metadata" => {
                    for field in ["labels", "annotations", "finalizers"] {
                        if let Some(v) = value.get(field) {
                            leaves(v, vec!["metadata".into(), field.into()], &mut paths);
                        }
                    }
                }
                _ => leaves(value, vec![key.clone()], &mut paths),
            }
        }
    }
    paths
}

fn leaves(value: &Value, prefix: Path, out: &mut BTreeSet<Path>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                let mut path = prefix.clone();
                path.push(key.clone());
                leaves(child, path, out);
            }
        }
        _ => {
            out.insert(prefix);
        }
    }
}

fn at<'v>(value: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

fn remove_at(value: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut node = value;
    for key in parents {
        match node.get_mut(key) {
            Some(next) => node = next,
            None => return,
        }
    }
    if let Value::Object(map) = node {
        map.remove(last);
    }
}

fn render(paths: &BTreeSet<Path>) -> Value {
    let mut root = Map::new();
    for path in paths {
        let mut node = &mut root;
        for key in path {
            node = node
                .entry(format!("f:{key}"))
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
                .expect("built as objects");
        }
    }
    Value::Object(root)
}

fn parse(fields: &Value, prefix: Path, out: &mut BTreeSet<Path>) {
    match fields {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                let Some(name) = key.strip_prefix("f:") else { continue };
                let mut path = prefix.clone();
                path.push(name.to_owned());
                parse(child, path, out);
            }
        }
        _ => {
            if !prefix.is_empty() {
                out.insert(prefix);
            }
        }
    }
}

impl ManagedFields {
    pub fn read(object: &Value) -> Self {
        let entries = object
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .map(|entries| {
                entries
                    .iter()
                    .map(|e| {
                        let mut fields = BTreeSet::new();
                        if let Some(f) = e.get("fieldsV1") {
                            parse(f, vec![], &mut fields);
                        }
                        let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
                        Entry {
                            manager: text("manager"),
                            operation: text("operation"),
                            api_version: text("apiVersion"),
                            time: text("time"),
                            subresource: e.get("subresource").and_then(Value::as_str).map(str::to_owned),
                            fields,
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        ManagedFields(entries)
    }

    pub fn write(&self, object: &mut Value) {
        let entries: Vec<Value> = self
            .0
            .iter()
            .filter(|e| !e.fields.is_empty())
            .map(|e| {
                let mut entry = json!({
                    "manager": e.manager,
                    "operation": e.operation,
                    "apiVersion": e.api_version,
                    "time": e.time,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": render(&e.fields),
                });
                if let Some(sub) = &e.subresource {
                    entry["subresource"] = json!(sub);
                }
                entry
            })
            .collect();
        if entries.is_empty() && object.get("metadata").is_none() {
            return;
        }
        if let Some(root) = object.as_object_mut() {
            root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
        }
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            if entries.is_empty() {
                metadata.remove("managedFields");
            } else {
                metadata.insert("managedFields".into(), Value::Array(entries));
            }
        }
    }

    fn entry(&mut self, manager: &str, operation: &str, subresource: Option<&str>) -> &mut Entry {
        let position = self
            .0
            .iter()
            .position(|e| e.manager == manager && e.operation == operation && e.subresource.as_deref() == subresource);
        match position {
            Some(i) => &mut self.0[i],
            None => {
                self.0.push(Entry {
                    manager: manager.to_owned(),
                    operation: operation.to_owned(),
                    api_version: String::new(),
                    time: String::new(),
                    subresource: subresource.map(str::to_owned),
                    fields: BTreeSet::new(),
                });
                self.0.last_mut().expect("just pushed")
            }
        }
    }

    /// A create, update or patch by `manager` changed `before` into `after`.
    pub fn record_update(&mut self, writer: Writer<'_>, before: &Value, after: &Value) {
        let Writer { manager, api_version, time, subresource } = writer;
        let old = managed_paths(before);
        let new = managed_paths(after);
        let changed: BTreeSet<Path> = new.iter().filter(|p| at(before, p) != at(after, p)).cloned().collect();
        let removed: BTreeSet<Path> = old.difference(&new).cloned().collect();
        if changed.is_empty() && removed.is_empty() {
            return;
        }
        for entry in &mut self.0 {
            entry.fields.retain(|p| !changed.contains(p) && !removed.contains(p));
        }
        let entry = self.entry(manager, "Update", subresource);
        entry.fields.extend(changed);
        entry.api_version = api_version.to_owned();
        entry.time = time.to_owned();
    }

    /// Server-side apply of `config` by `manager` to `current` (`Value::Null` when the object does not
    /// exist). Returns the new object.
    pub fn apply(
        &mut self,
        writer: Writer<'_>,
        current: &Value,
        config: &Value,
        force: bool,
    ) -> Result<Value, Conflict> {
        let Writer { manager, api_version, time, subresource } = writer;
        let sent = managed_paths(config);
        let mut conflicts = Vec::new();
        for entry in self.0.iter().filter(|e| e.manager != manager) {
            for path in sent.iter().filter(|p| entry.fields.contains(*p)) {
                if at(current, path) != at(config, path) {
                    conflicts.push((format!(".{}", path.join(".")), entry.manager.clone()));
                }
            }
        }
        if !conflicts.is_empty() && !force {
            return Err(Conflict { fields: conflicts });
        }
        let mut result = if current.is_null() { json!({}) } else { current.clone() };
        // Fields this applier set before and no longer sends are removed, unless another manager owns them.
        let previous = self.entry(manager, "Apply", subresource).fields.clone();
        for path in previous.difference(&sent) {
            let owned_elsewhere = self.0.iter().any(|e| e.manager != manager && e.fields.contains(path));
            if !owned_elsewhere {
                remove_at(&mut result, path);
            }
        }
        json_patch::merge(&mut result, &without_nulls(config));
        if force {
            for entry in self.0.iter_mut().filter(|e| e.manager != manager) {
                entry.fields.retain(|p| !sent.contains(p));
            }
        }
        let entry = self.entry(manager, "Apply", subresource);
        entry.fields = sent;
        entry.api_version = api_version.to_owned();
        entry.time = time.to_owned();
        Ok(result)
    }
}

/// An applied configuration's explicit `null`s mean "not set by me", not "delete".
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), without_nulls(v))).collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by(manager: &str, time: &str) -> Writer<'static> {
        Writer {
            manager: Box::leak(manager.to_owned().into_boxed_str()),
            api_version: "v1",
            time: Box::leak(time.to_owned().into_boxed_str()),
            subresource: None,
        }
    }

    /// Kubernetes rule (server-side apply): a field owned by another manager with a different value
    /// conflicts unless the apply is forced; equal values are shared.
    #[test]
    fn apply_conflicts_with_other_owners_unless_forced() {
        let mut managed = ManagedFields::default();
        let lease = managed
            .apply(
                by("a", "t1"),
                &Value::Null,
                &json!({"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}),
                false,
            )
            .unwrap();
        let conflict =
            managed.apply(by("b", "t2"), &lease, &json!({"spec": {"holderIdentity": "b"}}), false).unwrap_err();
        assert_eq!(conflict.fields, [(".spec.holderIdentity".to_owned(), "a".to_owned())]);
        let shared = managed.apply(by("b", "t2"), &lease, &json!({"spec": {"leaseDurationSeconds": 15}}), false);
        assert!(shared.is_ok(), "an equal value is not a conflict");
        let forced = managed.apply(by("b", "t3"), &lease, &json!({"spec": {"holderIdentity": "b"}}), true).unwrap();
        assert_eq!(forced["spec"]["holderIdentity"], "b");
    }

    /// Kubernetes rule: an update takes ownership of the fields it changes, so a later apply by the
    /// previous owner of those fields no longer conflicts with it... but the updater's value stays unless
    /// the applier sends its own.
    #[test]
    fn updates_take_ownership_of_changed_fields() {
        let mut managed = ManagedFields::default();
        let before = managed.apply(by("a", "t1"), &Value::Null, &json!({"spec": {"x": 1, "y": 1}}), false).unwrap();
        let mut after = before.clone();
        after["spec"]["x"] = json!(2);
        managed.record_update(by("b", "t2"), &before, &after);
        let mut object = after.clone();
        managed.write(&mut object);
        let entries = object["metadata"]["managedFields"].as_array().unwrap().clone();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1]["manager"], "b");
        assert_eq!(entries[1]["fieldsV1"], json!({"f:spec": {"f:x": {}}}));
        assert_eq!(ManagedFields::read(&object), managed, "fieldsV1 round-trips");
        // Apply without x: a's x was taken by b, so it stays; y is a's and stays.
        let result = managed.apply(by("a", "t3"), &after, &json!({"spec": {"y": 1}}), false).unwrap();
        assert_eq!(result["spec"], json!({"x": 2, "y": 1}));
        // Apply without y: removed, as only a owned it.
        let result = managed.apply(by("a", "t4"), &result, &json!({"spec": {}}), false).unwrap();
        assert_eq!(result["spec"], json!({"x": 2}));
    }
}
