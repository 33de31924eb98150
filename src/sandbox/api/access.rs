//! Direct access, without HTTP: seeding and inspecting the emulated cluster from the sandbox and the
//! tests, with the same rules (and the same field managers in `managedFields`) as the API paths.

use serde_json::Value;

use super::error::ApiError;
use super::{Emulator, Target};

impl Emulator {
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
            .map(|object| resource.present(object))
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
            .map(|(_, v)| resource.present(v))
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
}
