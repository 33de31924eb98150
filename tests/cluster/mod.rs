//! Against a real kube-apiserver with etcd (built by `make kube`, started once per test process):
//! the CRDs, kubectl, least-privilege RBAC and leader election. The end-to-end scenarios and the API
//! emulator's rules run here too, from their own folders (`sandbox::e2e::on_kube_apiserver`,
//! `sandbox::emulator::on_kube_apiserver`).

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
mod v3_era;
mod webhook;

pub use blueprint_operator::sandbox::control_plane;
