//! Against a real kube-apiserver with etcd (built by `make kube`, started once per test process):
//! the CRDs, kubectl, the end-to-end scenarios, least-privilege RBAC, leader election, and the API
//! emulator's rules (each the twin of an emulator test).

mod crds;
mod kubectl;
mod leader;
mod rbac;

pub use blueprint_operator::sandbox::control_plane;
