//! The backup operator's Restores (`restores.k8s.cloudogu.com`): while one is in progress nothing is
//! applied (the machine decides that from `observe::restore_observation`). Their CRD belongs to the
//! backup operator and is not installed everywhere, so the kind is found by discovery at the start; where
//! it is absent, nothing is watched and there are no restores. (A backup operator installed later is
//! noticed at the operator's next start.)

use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::reflector::{Store, store::Writer};

pub const GROUP: &str = "k8s.cloudogu.com";
pub const KIND: &str = "Restore";

/// How long the discovery may take before the operator starts without restores (it must not hold the
/// start, and a shutdown, while the API server does not answer).
const DISCOVERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The Restore resource the API server serves, if it serves one.
pub async fn discover(client: &kube::Client) -> Option<ApiResource> {
    match tokio::time::timeout(DISCOVERY_TIMEOUT, kube::discovery::oneshot::group(client, GROUP)).await {
        // Not `recommended_kind`: that looks in the group's preferred version only, and the group's
        // preferred version (v2: Blueprints, Dogus) is not the Restore's (v1).
        Ok(Ok(group)) => {
            group.resources_by_stability().into_iter().map(|(resource, _)| resource).find(|r| r.kind == KIND)
        }
        Ok(Err(error)) => {
            tracing::info!(%error, "no {KIND} kind discovered: restores are not watched");
            None
        }
        Err(_) => {
            tracing::warn!(
                "the discovery of {KIND} did not answer within {DISCOVERY_TIMEOUT:?}: restores are not watched"
            );
            None
        }
    }
}

/// A store that stays empty: no Restore kind.
pub fn none() -> Store<DynamicObject> {
    Writer::new(ApiResource::from_gvk(&GroupVersionKind::gvk(GROUP, "v1", KIND))).as_reader()
}
