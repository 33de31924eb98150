//! The operator on the node as a user installs it: a namespace seeded as a fresh ecosystem (the dogu
//! and component operators simulated by this process, the dogu registry served to the node's Pods),
//! and the chart installed by the real helm, as it is, with the image imported into the node.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use super::Node;
use crate::sandbox::ecosystem::Behaviour;
use crate::sandbox::seed;
use crate::sandbox::session::{Backend, REGISTRY_CREDENTIALS, Sandbox, SandboxOptions};

/// The chart's release name, as CES installs the operator.
pub const RELEASE: &str = "k8s-blueprint-operator";
/// The chart's Deployment, as upstream's chart names it, whatever the release is called.
pub const DEPLOYMENT: &str = "k8s-blueprint-operator-controller-manager";
/// The chart's ServiceAccount (and Role, binding, budget).
pub const SERVICE_ACCOUNT: &str = "k8s-blueprint-operator";
/// The label every Pod of the chart carries.
pub const POD_SELECTOR: &str = "app.kubernetes.io/name=k8s-blueprint-operator";
/// The Lease the replicas elect their leader with.
pub const LEASE: &str = "k8s-blueprint-operator-leader";

/// The chart in this repository.
pub fn chart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("charts/blueprint-operator")
}

/// The helm `make helm` builds.
pub fn helm_binary() -> PathBuf {
    crate::sandbox::control_plane::bin_dir().join("helm")
}

/// Runs helm as the node's admin in `namespace`, its caches and settings in the node's folder; its
/// output, or why it failed.
pub fn helm(node: &Node, namespace: &str, args: &[&str]) -> Result<String, String> {
    let home = node.dir.join("helm");
    let output = Command::new(helm_binary())
        .args(args)
        .args(["--namespace", namespace])
        .env("KUBECONFIG", &node.plane.kubeconfig)
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .output()
        .map_err(|e| format!("{}: {e}", helm_binary().display()))?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    if output.status.success() { Ok(text) } else { Err(format!("helm {}: {text}", args.join(" "))) }
}

/// A fresh ecosystem in `namespace` (created): the example's objects but the health config, which the
/// chart brings; the dogu registry with the examples' descriptors, on this machine's end of the link to
/// the node, named in the Secret the chart gives the operator; the simulated dogu and component
/// operators running.
pub async fn ecosystem(node: &Node, namespace: &str, behaviour: Behaviour) -> Result<Sandbox, String> {
    seeded_ecosystem(node, namespace, behaviour, seed::DEFAULT_CLUSTER).await
}

/// The same with the objects of `cluster` (a `kubectl get -o yaml` list, such as an example's
/// cluster.yaml) but its Blueprints and health config: an ecosystem some operator installed before.
pub async fn seeded_ecosystem(
    node: &Node,
    namespace: &str,
    behaviour: Behaviour,
    cluster: &str,
) -> Result<Sandbox, String> {
    node.kubectl(&["create", "namespace", namespace])?;
    let options = SandboxOptions {
        backend: Backend::KubeApiserver { admin: Box::new(node.plane.admin_config(namespace).await), operator: None },
        namespace: namespace.to_owned(),
        behaviour,
        registry_address: node.host_address().into(),
        ..SandboxOptions::default()
    };
    let mut sandbox = Sandbox::start(options, None).await.map_err(|e| e.to_string())?;
    let objects: Vec<_> = seed::objects(cluster)
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|object| object.pointer("/metadata/name") != Some(&json!("k8s-blueprint-operator-health-config")))
        .filter(|object| object.get("kind") != Some(&json!("Blueprint")))
        .collect();
    seed::cluster(&sandbox.cluster, namespace, &objects).await.map_err(|e| e.to_string())?;
    seed::registry(&sandbox.cluster, &sandbox.registry, namespace, &seed::builtin_descriptors())
        .await
        .map_err(|e| e.message)?;
    let registry = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "k8s-dogu-operator-dogu-registry", "namespace": namespace},
        "stringData": {
            "endpoint": sandbox.registry_endpoint(),
            "username": REGISTRY_CREDENTIALS.0,
            "password": REGISTRY_CREDENTIALS.1,
        },
    });
    sandbox.cluster.create(registry).await.map_err(|e| e.message)?;
    sandbox.start_ecosystem();
    Ok(sandbox)
}
