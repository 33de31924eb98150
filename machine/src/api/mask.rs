//! The `BlueprintMask` custom resource (`k8s.cloudogu.com/v3`, upstream's since its API v3): a mask
//! kept in an object of its own, referenced by `spec.blueprintMask.crRef` of a Blueprint in the same
//! namespace, so that one blueprint can be shared and each installation masks it.

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::MaskDogu;

/// `spec` of a `BlueprintMask`: the dogus it overrides, as an inline mask's manifest.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "k8s.cloudogu.com",
    version = "v3",
    kind = "BlueprintMask",
    root = "BlueprintMaskObject",
    plural = "blueprintmasks",
    singular = "blueprintmask",
    namespaced,
    shortname = "bpm",
    derive = "Default",
    derive = "PartialEq",
    label("app", "ces"),
    label("app.kubernetes.io/name", "k8s-blueprint-lib"),
    crates(
        kube_core = "::kube_core",
        k8s_openapi = "::k8s_openapi",
        schemars = "::schemars",
        serde = "::serde",
        serde_json = "::serde_json"
    ),
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "description": "The age of the resource"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct BlueprintMaskSpec {
    /// Per dogu: another version, or absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dogus: Option<Vec<MaskDogu>>,
}
