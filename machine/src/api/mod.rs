//! Kubernetes object types the machine reads and writes: the Blueprint CRD (ours) and the Dogu and
//! Component CRDs (owned by the dogu and component operators).

pub mod blueprint;
mod compact;
pub mod component;
pub mod dogu;
pub mod mask;
mod meta;
mod schema;
pub mod v1;
pub mod v3;

pub use blueprint::*;
pub use component::{Component, ComponentSpec, ComponentStatus};
pub use dogu::{Dogu, DoguMount, DoguResources, DoguSpec, DoguStatus, QuantityText, UpgradeConfig};
pub use mask::{BlueprintMaskObject, BlueprintMaskSpec};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_core::CustomResourceExt;

/// The Service the API server sends conversion reviews to: the operator's (deploy/, the chart).
pub const WEBHOOK_SERVICE: &str = "blueprint-operator-webhook";
/// The namespace of [`WEBHOOK_SERVICE`] in the shipped CRD (the CES namespace; the chart sets its own).
pub const WEBHOOK_NAMESPACE: &str = "ecosystem";
/// The path of the conversion webhook.
pub const WEBHOOK_PATH: &str = "/convert";

/// The Blueprint CRD as we install it: `v3` (stored), `v2` and `v1` (deprecated), converted by the
/// operator's webhook.
///
/// Derived from the types (v3), then adjusted where the derive cannot say what upstream's CRD says:
/// `spec` is optional at the root (a spec-less Blueprint is stored by the API server, and the operator
/// reports it as invalid instead of failing to decode it); v3's rules are added, and v2's schema is
/// derived from v3's ([`v3`]).
pub fn blueprint_crd() -> CustomResourceDefinition {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
        CustomResourceConversion, ServiceReference, WebhookClientConfig, WebhookConversion,
    };

    let mut crd = with_list_kind(BlueprintCrd::crd());
    let mut stored = crd.spec.versions.pop().expect("the derive makes one version");
    if let Some(root) = stored.schema.as_mut().and_then(|s| s.open_api_v3_schema.as_mut()) {
        root.description = Some(
            "Blueprint describes the wanted state of a Cloudogu EcoSystem: dogus, components and configuration.".into(),
        );
        root.required = None;
        // Named after the kind, not after the derive's root type (see `Blueprint`).
        root.title = Some("Blueprint".into());
    }
    let schema_of = |version: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionVersion| {
        serde_json::to_value(version.schema.as_ref().and_then(|s| s.open_api_v3_schema.as_ref())).expect("schemas serialize")
    };
    let mut v3_schema = schema_of(&stored);
    v3::add_v3_rules(&mut v3_schema);
    let v2_schema = v3::v2_schema(&v3_schema);
    let set_schema = |version: &mut k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionVersion,
                      schema: serde_json::Value| {
        if let Some(validation) = version.schema.as_mut() {
            validation.open_api_v3_schema = Some(serde_json::from_value(schema).expect("a schema of our own"));
        }
    };
    let mut v2 = stored.clone();
    v2.name = "v2".into();
    v2.storage = false;
    set_schema(&mut v2, v2_schema);
    set_schema(&mut stored, v3_schema);
    stored.storage = true;
    crd.spec.versions = vec![v1::version(), v2, stored];
    crd.spec.conversion = Some(CustomResourceConversion {
        strategy: "Webhook".into(),
        webhook: Some(WebhookConversion {
            conversion_review_versions: vec!["v1".into()],
            client_config: Some(WebhookClientConfig {
                service: Some(ServiceReference {
                    name: WEBHOOK_SERVICE.into(),
                    namespace: WEBHOOK_NAMESPACE.into(),
                    path: Some(WEBHOOK_PATH.into()),
                    port: Some(443),
                }),
                ..Default::default()
            }),
        }),
    });
    crd
}

/// The BlueprintMask CRD as we install it (upstream's identity: `blueprintmasks`, short name `bpm`).
pub fn blueprint_mask_crd() -> CustomResourceDefinition {
    let mut crd = with_list_kind(BlueprintMaskObject::crd());
    for version in &mut crd.spec.versions {
        if let Some(root) = version.schema.as_mut().and_then(|s| s.open_api_v3_schema.as_mut()) {
            root.description = Some(
                "BlueprintMask overrides the dogus of the Blueprints that reference it (spec.blueprintMask.crRef)."
                    .into(),
            );
            root.title = Some("BlueprintMask".into());
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
