//! Kubernetes object types the machine reads and writes: the Blueprint CRD (ours) and the Dogu and
//! Component CRDs (owned by the dogu and component operators).

pub mod blueprint;
pub mod component;
pub mod dogu;
mod meta;
mod schema;
pub mod v3;

pub use blueprint::*;
pub use component::{Component, ComponentSpec, ComponentStatus};
pub use dogu::{Dogu, DoguMount, DoguResources, DoguSpec, DoguStatus, QuantityText, UpgradeConfig};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_core::CustomResourceExt;

/// The Blueprint CRD as we install it.
///
/// Derived from the types, then adjusted where the derive cannot say what upstream's CRD says:
/// `spec` is optional at the root (a spec-less Blueprint is stored by the API server, and the operator
/// reports it as invalid instead of failing to decode it).
pub fn blueprint_crd() -> CustomResourceDefinition {
    let mut crd = with_list_kind(BlueprintCrd::crd());
    for version in &mut crd.spec.versions {
        if let Some(root) = version.schema.as_mut().and_then(|s| s.open_api_v3_schema.as_mut()) {
            root.description = Some(
                "Blueprint describes the wanted state of a Cloudogu EcoSystem: dogus, components and configuration."
                    .into(),
            );
            root.required = None;
            // Named after the kind, not after the derive's root type (see `Blueprint`).
            root.title = Some("Blueprint".into());
        }
    }
    crd
}

/// The Dogu CRD used by the sandbox's API emulator (the real one is installed by the dogu operator).
pub fn dogu_crd() -> CustomResourceDefinition {
    with_list_kind(Dogu::crd())
}

/// The Component CRD used by the sandbox's API emulator (the real one comes with the component operator).
pub fn component_crd() -> CustomResourceDefinition {
    with_list_kind(Component::crd())
}

/// `listKind` as controller-gen writes it (`<Kind>List`); the derive leaves it to the API server.
fn with_list_kind(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    crd.spec.names.list_kind = Some(format!("{}List", crd.spec.names.kind));
    crd
}
