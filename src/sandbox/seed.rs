//! What the sandbox's cluster starts with: the objects of a snapshot (or the built-in ecosystem), and
//! dogu descriptors in the remote registry (those of installed dogus also in the local dogu registry,
//! the `dogu-spec-<dogu>` ConfigMaps, as the dogu operator keeps them).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use blueprint_machine::descriptor::DoguDescriptor;

use super::api::ApiError;
use super::cluster::Cluster;
use super::dogu_registry::RegistryServer;

/// The fresh-install example: the default blueprint of `sandbox`.
pub const DEFAULT_BLUEPRINT: &str = include_str!("../../examples/fresh-install/blueprint.yaml");
/// A fresh ecosystem: the dogu and component operators, the global config, the health config.
pub const DEFAULT_CLUSTER: &str = include_str!("../../examples/fresh-install/cluster.yaml");

/// The built-in dogu registry: descriptors of every dogu the examples use.
pub const BUILTIN_DESCRIPTORS: &[&str] = &[
    include_str!("../../examples/descriptors/k8s/nginx-ingress/1.11.5-1.json"),
    include_str!("../../examples/descriptors/k8s/nginx-static/1.26.3-1.json"),
    include_str!("../../examples/descriptors/k8s/nginx-static/1.26.3-2.json"),
    include_str!("../../examples/descriptors/official/cas/7.1.3-1.json"),
    include_str!("../../examples/descriptors/official/cas/7.1.4-1.json"),
    include_str!("../../examples/descriptors/official/cas/7.1.5-2.json"),
    include_str!("../../examples/descriptors/official/ldap/2.6.7-4.json"),
    include_str!("../../examples/descriptors/official/ldap/2.6.8-3.json"),
    include_str!("../../examples/descriptors/official/postfix/3.9.0-2.json"),
    include_str!("../../examples/descriptors/official/postgresql/14.15-1.json"),
    include_str!("../../examples/descriptors/official/postgresql/14.17-2.json"),
    include_str!("../../examples/descriptors/official/redmine/5.1.6-1.json"),
    include_str!("../../examples/descriptors/official/redmine/5.1.8-1.json"),
];

/// Why the sandbox cannot be seeded: a snapshot or descriptor that does not read, or an object the
/// emulator refuses.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    #[error("not valid YAML: {0}")]
    NotYaml(String),
    #[error("not a valid dogu.json: {0}")]
    NotDescriptor(String),
    #[error("a dogu.json needs Name and Version")]
    Unnamed,
    #[error("{path}: {source}")]
    InFile { path: String, source: Box<SeedError> },
    #[error("{path}: the descriptor of {name} {version} must be stored as {expected}")]
    Misplaced { path: String, name: String, version: String, expected: String },
    #[error("{path}: {source}")]
    ReadDir { path: String, source: std::io::Error },
    #[error(transparent)]
    File(#[from] crate::files::FileError),
    #[error("the API server refused an object: {0}")]
    Refused(String),
}

/// A descriptor to serve: parsed (name, version) and the `dogu.json` text as the registry serves it.
#[derive(Clone, Debug)]
pub struct SeedDescriptor {
    pub descriptor: DoguDescriptor,
    pub text: String,
}

impl SeedDescriptor {
    pub fn parse(text: &str) -> Result<Self, SeedError> {
        let descriptor: DoguDescriptor =
            serde_json::from_str(text).map_err(|e| SeedError::NotDescriptor(e.to_string()))?;
        if descriptor.name.is_empty() || descriptor.version.is_empty() {
            return Err(SeedError::Unnamed);
        }
        Ok(SeedDescriptor { descriptor, text: text.to_owned() })
    }
}

pub fn builtin_descriptors() -> Vec<SeedDescriptor> {
    BUILTIN_DESCRIPTORS
        .iter()
        .map(|text| SeedDescriptor::parse(text).expect("the built-in descriptors parse"))
        .collect()
}

/// A descriptor is served under the name and version it states; one stored under another dogu's path
/// would shadow that dogu's descriptor (or be served twice), so the path must say what it holds.
fn check_place(dir: &Path, path: &Path, descriptor: &DoguDescriptor) -> Result<(), SeedError> {
    let expected = dir.join(&descriptor.name).join(format!("{}.json", descriptor.version));
    if path == expected {
        return Ok(());
    }
    Err(SeedError::Misplaced {
        path: path.display().to_string(),
        name: descriptor.name.clone(),
        version: descriptor.version.clone(),
        expected: expected.display().to_string(),
    })
}

/// Every `DIR/<namespace>/<name>/<version>.json`.
pub fn read_descriptors(dir: &Path) -> Result<Vec<SeedDescriptor>, SeedError> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(next) = pending.pop() {
        let unreadable = |source| SeedError::ReadDir { path: next.display().to_string(), source };
        let entries = std::fs::read_dir(&next).map_err(unreadable)?;
        for entry in entries {
            let path = entry.map_err(unreadable)?.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let text = crate::files::read_text(&path, crate::files::DESCRIPTOR_FILE_LIMIT)?;
                let seed = SeedDescriptor::parse(&text)
                    .map_err(|e| SeedError::InFile { path: path.display().to_string(), source: Box::new(e) })?;
                check_place(dir, &path, &seed.descriptor)?;
                found.push(seed);
            }
        }
    }
    Ok(found)
}

/// Serves the descriptors from the remote registry, and puts those of the dogus installed in the
/// emulator into the local dogu registry (`dogu-spec-<dogu>`), as the dogu operator would have.
pub async fn registry(
    cluster: &Cluster,
    remote: &RegistryServer,
    namespace: &str,
    descriptors: &[SeedDescriptor],
) -> Result<(), ApiError> {
    let installed: BTreeMap<String, String> = cluster
        .list("k8s.cloudogu.com/v2", "Dogu", namespace)
        .await
        .iter()
        .filter_map(|dogu| {
            let name = dogu.pointer("/spec/name")?.as_str()?.to_owned();
            let version = dogu.pointer("/spec/version")?.as_str()?.to_owned();
            Some((name, version))
        })
        .collect();
    let mut local: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for seed in descriptors {
        remote.add(&seed.text).map_err(|message| ApiError::new(422, "Invalid", message))?;
        let name = &seed.descriptor.name;
        if installed.get(name) == Some(&seed.descriptor.version) {
            let simple = name.rsplit('/').next().unwrap_or(name).to_owned();
            local.entry(simple).or_default().insert(seed.descriptor.version.clone(), seed.text.clone());
        }
    }
    for (dogu, versions) in local {
        let name = blueprint_machine::naming::local_registry(&dogu);
        // A snapshot of a cluster (taken with kubectl) may hold the ConfigMap already: add to it.
        let added = cluster
            .edit("v1", "ConfigMap", namespace, &name, |map| {
                for (version, text) in &versions {
                    map["data"][version] = json!(text);
                }
            })
            .await;
        match added {
            Err(error) if error.code == 404 => {
                cluster
                    .create(json!({
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {
                            "name": name,
                            "namespace": namespace,
                            "labels": blueprint_machine::naming::local_registry_labels(&dogu),
                        },
                        "data": versions,
                    }))
                    .await?;
            }
            other => drop(other?),
        }
    }
    Ok(())
}

/// Objects of a snapshot (a `List` or YAML documents), as `kubectl get -o yaml` prints them. Blueprints
/// are left out: the sandbox applies its own.
pub fn objects(text: &str) -> Result<Vec<Value>, SeedError> {
    let documents: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| SeedError::NotYaml(e.to_string()))?;
    let mut objects = Vec::new();
    for document in documents.into_iter().filter(|d| !d.is_null()) {
        match document.get("items") {
            Some(Value::Array(items))
                if document.get("kind").and_then(Value::as_str).is_some_and(|k| k.ends_with("List")) =>
            {
                objects.extend(items.iter().cloned())
            }
            _ => objects.push(document),
        }
    }
    Ok(objects.into_iter().filter(|o| o.get("kind").and_then(Value::as_str) != Some("Blueprint")).collect())
}

/// Creates the objects in `namespace` (server fields dropped), then sets their status as written.
pub async fn cluster(cluster: &Cluster, namespace: &str, objects: &[Value]) -> Result<(), SeedError> {
    for object in objects {
        let mut object = object.clone();
        let status = object.as_object_mut().and_then(|o| o.remove("status"));
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in ["resourceVersion", "uid", "managedFields", "creationTimestamp", "generation", "selfLink"] {
                metadata.remove(field);
            }
            metadata.insert("namespace".into(), json!(namespace));
        }
        let created = cluster.create(object).await.map_err(|e| SeedError::Refused(e.message.clone()))?;
        if let Some(status) = status {
            let api_version = created["apiVersion"].as_str().unwrap_or_default().to_owned();
            let kind = created["kind"].as_str().unwrap_or_default().to_owned();
            let name = created["metadata"]["name"].as_str().unwrap_or_default().to_owned();
            let result = cluster.update_status(&api_version, &kind, namespace, &name, status.clone()).await;
            if result.is_err() {
                // Kinds without a status subresource take it with the object.
                cluster
                    .edit(&api_version, &kind, namespace, &name, |o| o["status"] = status.clone())
                    .await
                    .map_err(|e| SeedError::Refused(e.message))?;
            }
        }
    }
    Ok(())
}
