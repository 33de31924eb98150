//! The cluster a sandbox works on: the embedded API emulator, or a real kube-apiserver (reached through
//! a kube client). Seeding, the scenarios' reads and edits, and the simulated operators go through
//! this, so the same scenario runs on both.

use std::collections::HashMap;
use std::sync::Mutex;

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use super::api::{ApiError, Emulator};

pub enum Cluster {
    Emulator(Emulator),
    Remote(Remote),
}

/// A real API server, through an admin client.
pub struct Remote {
    client: kube::Client,
    resources: Mutex<HashMap<(String, String), ApiResource>>,
}

impl Remote {
    pub fn new(client: kube::Client) -> Self {
        Remote { client, resources: Mutex::new(HashMap::new()) }
    }

    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The API resource of a kind, found by discovery (once per kind).
    async fn resource(&self, api_version: &str, kind: &str) -> Result<ApiResource, ApiError> {
        let key = (api_version.to_owned(), kind.to_owned());
        if let Some(found) = self.resources.lock().expect("not poisoned").get(&key) {
            return Ok(found.clone());
        }
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, _) = kube::discovery::pinned_kind(&self.client, &gvk).await.map_err(|e| error(&e))?;
        self.resources.lock().expect("not poisoned").insert(key, resource.clone());
        Ok(resource)
    }

    async fn api(&self, api_version: &str, kind: &str, namespace: &str) -> Result<Api<DynamicObject>, ApiError> {
        let resource = self.resource(api_version, kind).await?;
        Ok(if namespace.is_empty() {
            Api::all_with(self.client.clone(), &resource)
        } else {
            Api::namespaced_with(self.client.clone(), namespace, &resource)
        })
    }
}

fn error(error: &kube::Error) -> ApiError {
    match error {
        // The server's own reason where it is one the emulator speaks (`AlreadyExists` and `Conflict` are
        // both 409); else one from the code.
        kube::Error::Api(status) => {
            const REASONS: [&str; 8] = [
                "AlreadyExists",
                "Conflict",
                "NotFound",
                "Invalid",
                "BadRequest",
                "Forbidden",
                "Gone",
                "TooManyRequests",
            ];
            let reason = REASONS.into_iter().find(|r| *r == status.reason).unwrap_or(match status.code {
                404 => "NotFound",
                409 => "Conflict",
                422 => "Invalid",
                _ => "Error",
            });
            ApiError::new(status.code, reason, status.message.clone())
        }
        other => ApiError::new(500, "Error", other.to_string()),
    }
}

fn value(object: DynamicObject) -> Value {
    serde_json::to_value(object).expect("objects serialize")
}

impl Cluster {
    /// The object, as stored.
    pub async fn get(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        match self {
            Cluster::Emulator(emulator) => emulator.get(api_version, kind, namespace, name),
            Cluster::Remote(remote) => {
                let api = remote.api(api_version, kind, namespace).await.ok()?;
                api.get_opt(name).await.ok().flatten().map(value)
            }
        }
    }

    /// Every object of a kind in `namespace`.
    pub async fn list(&self, api_version: &str, kind: &str, namespace: &str) -> Vec<Value> {
        match self {
            Cluster::Emulator(emulator) => emulator
                .list(api_version, kind)
                .into_iter()
                .filter(|o| o.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default() == namespace)
                .collect(),
            Cluster::Remote(remote) => match remote.api(api_version, kind, namespace).await {
                Ok(api) => api.list(&Default::default()).await.map(|l| l.items.into_iter().map(value).collect()),
                Err(_) => Ok(Vec::new()),
            }
            .unwrap_or_default(),
        }
    }

    /// Creates `object` (its apiVersion, kind and metadata.namespace say where).
    pub async fn create(&self, object: Value) -> Result<Value, ApiError> {
        match self {
            Cluster::Emulator(emulator) => emulator.create(object),
            Cluster::Remote(remote) => {
                let api_version = object["apiVersion"].as_str().unwrap_or_default().to_owned();
                let kind = object["kind"].as_str().unwrap_or_default().to_owned();
                let namespace = object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default();
                let api = remote.api(&api_version, &kind, namespace).await?;
                let object: DynamicObject =
                    serde_json::from_value(object).map_err(|e| ApiError::new(400, "BadRequest", e.to_string()))?;
                api.create(&PostParams::default(), &object).await.map(value).map_err(|e| error(&e))
            }
        }
    }

    /// Changes an object as a user would (read, change, write back with its `resourceVersion`; read
    /// again on a conflict, as `kubectl edit` asks the user to).
    pub async fn edit(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        mut change: impl FnMut(&mut Value),
    ) -> Result<Value, ApiError> {
        match self {
            Cluster::Emulator(emulator) => emulator.edit(api_version, kind, namespace, name, change),
            Cluster::Remote(remote) => {
                let api = remote.api(api_version, kind, namespace).await?;
                let mut attempts = 0;
                loop {
                    let current = api.get(name).await.map_err(|e| error(&e))?;
                    let mut edited = value(current);
                    change(&mut edited);
                    let object: DynamicObject =
                        serde_json::from_value(edited).map_err(|e| ApiError::new(400, "BadRequest", e.to_string()))?;
                    match api.replace(name, &PostParams::default(), &object).await {
                        Err(kube::Error::Api(status)) if status.code == 409 && attempts < 10 => attempts += 1,
                        other => return other.map(value).map_err(|e| error(&e)),
                    }
                }
            }
        }
    }

    /// Sets an object's status, as its operator would.
    pub async fn update_status(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        status: Value,
    ) -> Result<Value, ApiError> {
        match self {
            Cluster::Emulator(emulator) => emulator.update_status(api_version, kind, namespace, name, status),
            Cluster::Remote(remote) => {
                let api = remote.api(api_version, kind, namespace).await?;
                let patch = json!({"status": status});
                api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(value)
                    .map_err(|e| error(&e))
            }
        }
    }

    /// Deletes an object as a user would.
    pub async fn delete(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Result<(), ApiError> {
        match self {
            Cluster::Emulator(emulator) => emulator.delete(api_version, kind, namespace, name).map(drop),
            Cluster::Remote(remote) => {
                let api = remote.api(api_version, kind, namespace).await?;
                api.delete(name, &DeleteParams::default()).await.map(drop).map_err(|e| error(&e))
            }
        }
    }

    /// A kube client of this cluster: the admin's on a real server, in-process on the emulator.
    pub fn kube_client(&self, namespace: &str) -> kube::Client {
        match self {
            Cluster::Emulator(emulator) => emulator.client(namespace),
            Cluster::Remote(remote) => remote.client().clone(),
        }
    }

    /// The emulator, for what only it can do (fault controls, its request log).
    pub fn emulator(&self) -> Option<&Emulator> {
        match self {
            Cluster::Emulator(emulator) => Some(emulator),
            Cluster::Remote(_) => None,
        }
    }
}
