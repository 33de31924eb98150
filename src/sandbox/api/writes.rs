//! Writes: create (POST: `generateName`, `uid`, `creationTimestamp`, `generation` = 1), replace
//! (PUT with optimistic concurrency), the update rules every write goes through (the status
//! subresource split, `generation` bumped only by spec changes, server-owned identity, ownership in
//! `managedFields`, no-op writes that change nothing and emit no watch event) and DELETE with
//! finalizers. PATCH and server-side apply build on these (see `patch`).

use serde_json::{Value, json};

use super::error::{ApiError, not_found};
use super::managed::{ManagedFields, Writer};
use super::resources::ResourceType;
use super::store::Change;
use super::{Emulator, Target};

impl Emulator {
    /// POST: creates an object; its creator (`manager`) owns all of it.
    pub(super) fn do_create(
        &self,
        resource: &ResourceType,
        namespace: &str,
        object: Value,
        manager: &str,
    ) -> Result<Value, ApiError> {
        self.insert(resource, namespace, object, manager, None)
    }

    /// Creates an object; `managed` is the ownership an apply established (else the creator owns all).
    pub(super) fn insert(
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
        // Stored in the storage version (a Blueprint written as v2 is stored as v3).
        let mut object = resource.stored_form(object);
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
            return Err(super::error::already_exists(resource, &name));
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
        store.record(key, Change::Added, object.clone(), version);
        Ok(resource.present(&object))
    }

    /// PUT: replaces an object under the update rules (a kind with a `generation` requires the
    /// `resourceVersion`).
    pub(super) fn do_replace(&self, target: &Target<'_>, object: Value, manager: &str) -> Result<Value, ApiError> {
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

    /// An update through `change` with the update rules: preconditions, the status split, generation,
    /// no-op detection, ownership, finalizers.
    pub(super) fn update_with(
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

    /// The update rules (see `update_with`) around `change`, which also gets the ownership: a change
    /// of it (an apply) is kept as it is, else the write is recorded as an update by `manager`.
    pub(super) fn update_raw(
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
        // The writer changes the object in the version it asked for; it is stored in the storage version.
        let mut next = change(&resource.present(&current), &mut managed)?;
        let apply = managed != managed_before;
        if !next.is_object() {
            return Err(ApiError::new(400, "BadRequest", "the result must be an object"));
        }
        next["apiVersion"] = json!(resource.api_version());
        next["kind"] = json!(resource.kind);
        let mut next = resource.stored_form(next);
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
            return Ok(resource.present(&current));
        }
        let version = store.next_revision();
        next["metadata"]["resourceVersion"] = json!(version.to_string());
        let finalizers_empty = next.pointer("/metadata/finalizers").and_then(Value::as_array).is_none_or(Vec::is_empty);
        let change = if next.pointer("/metadata/deletionTimestamp").is_some() && finalizers_empty {
            Change::Deleted
        } else {
            Change::Modified
        };
        store.record(key, change, next.clone(), version);
        Ok(resource.present(&next))
    }

    /// DELETE: removes an object, or, while it has finalizers, only marks it (`deletionTimestamp`).
    pub(super) fn do_delete(&self, resource: &ResourceType, namespace: &str, name: &str) -> Result<Value, ApiError> {
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
        Ok(resource.present(&current))
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

/// A Secret's `stringData` is write-only: it is merged into `data`; its `type` defaults to `Opaque`.
fn normalize_secret(resource: &ResourceType, object: &mut Value) {
    if !(resource.group.is_empty() && resource.kind == "Secret") {
        return;
    }
    if let Some(fields) = object.as_object_mut()
        && fields.get("type").is_none_or(Value::is_null)
    {
        fields.insert("type".into(), json!("Opaque"));
    }
    if let Some(Value::Object(strings)) = object.as_object_mut().and_then(|o| o.remove("stringData")) {
        use base64::Engine;
        let data = object.as_object_mut().expect("an object").entry("data").or_insert_with(|| json!({}));
        for (key, value) in strings {
            if let Some(text) = value.as_str() {
                data[key] = json!(base64::engine::general_purpose::STANDARD.encode(text));
            }
        }
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
