//! Against a real kube-apiserver with etcd (built by `make kube`, started once per test process):
//! the CRDs, kubectl, least-privilege RBAC and leader election. The end-to-end scenarios and the API
//! emulator's rules run here too, from their own folders (`sandbox::e2e::on_kube_apiserver`,
//! `sandbox::emulator::on_kube_apiserver`).

mod caches;
mod conversion;
mod crds;
mod debug_mode;
mod helm;
mod kubectl;
mod leader;
mod live_plan;
mod migration;
mod rbac;
mod restore;
mod status_cli;
mod streaming_lists;
mod v3_era;
mod webhook;

pub use blueprint_operator::sandbox::control_plane;

/// Writes the `status` of `document` (a Blueprint created already in `namespace`) through the status
/// subresource of `resource` (`blueprint`, `blueprints.v3.<group>`), as the operator writes it.
fn write_status(resource: &str, namespace: &str, document: &serde_json::Value) -> Result<String, String> {
    let name = document["metadata"]["name"].as_str().unwrap_or_default();
    let patch = serde_json::json!({"status": document["status"]}).to_string();
    control_plane::shared().kubectl(&[
        "patch",
        resource,
        name,
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        &patch,
    ])
}
