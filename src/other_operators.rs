//! Kinds of other operators' CRDs that a reconcile reads: the backup operator's Restores (nothing is
//! applied while one is in progress, D50) and the debug-mode operator's `DebugMode` (log levels are not
//! enforced while it is active, D51). Their CRDs are not installed everywhere, so the kinds are found by
//! discovery at the start; where one is absent, it is not watched and there are none of it. (An operator
//! installed later is noticed at this operator's next start.)

use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::reflector::{Store, store::Writer};

pub const GROUP: &str = "k8s.cloudogu.com";
pub const RESTORE: &str = "Restore";
pub const DEBUG_MODE: &str = "DebugMode";

/// How long the discovery may take before the operator starts without these kinds (it must not hold the
/// start, and a shutdown, while the API server does not answer).
const DISCOVERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The kinds the API server serves.
#[derive(Clone, Debug, Default)]
pub struct Discovered {
    pub restore: Option<ApiResource>,
    pub debug_mode: Option<ApiResource>,
}

pub async fn discover(client: &kube::Client) -> Discovered {
    match tokio::time::timeout(DISCOVERY_TIMEOUT, kube::discovery::oneshot::group(client, GROUP)).await {
        // Across the group's versions, not `recommended_kind`: that looks in the group's preferred
        // version only (v2: Blueprints, Dogus), and these kinds are v1.
        Ok(Ok(group)) => {
            let resources = group.resources_by_stability();
            let find = |kind: &str| resources.iter().map(|(resource, _)| resource).find(|r| r.kind == kind).cloned();
            let discovered = Discovered { restore: find(RESTORE), debug_mode: find(DEBUG_MODE) };
            tracing::info!(
                restores = discovered.restore.is_some(),
                debug_mode = discovered.debug_mode.is_some(),
                "kinds of other operators watched"
            );
            discovered
        }
        Ok(Err(error)) => {
            tracing::info!(%error, "no kinds of other operators discovered: restores and debug mode are not watched");
            Discovered::default()
        }
        Err(_) => {
            tracing::warn!(
                "the discovery did not answer within {DISCOVERY_TIMEOUT:?}: restores and debug mode are not watched"
            );
            Discovered::default()
        }
    }
}

/// A store that stays empty: the kind is not served.
pub fn none(kind: &str) -> Store<DynamicObject> {
    Writer::new(ApiResource::from_gvk(&GroupVersionKind::gvk(GROUP, "v1", kind))).as_reader()
}
