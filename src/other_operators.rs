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
    /// Whether Blueprints are served in v1 too, as only this operator's CRD serves them (a Go
    /// operator's serves one version: 2.x's v1, 3.0.0-CR1's v2, 3.x's v3). `None`: not known (the
    /// discovery failed), which does not hold the start.
    pub own_blueprint_crd: Option<bool>,
}

/// The version both kinds are served in (and the Components': it is served wherever a CES platform is).
const VERSION: &str = "v1";

/// One request: the resources of `k8s.cloudogu.com/v1`, not the group's discovery (`/apis` and then
/// every version of the group, four requests).
pub async fn discover(client: &kube::Client) -> Discovered {
    let group_version = format!("{GROUP}/{VERSION}");
    match tokio::time::timeout(DISCOVERY_TIMEOUT, client.list_api_group_resources(&group_version)).await {
        Ok(Ok(list)) => {
            let find = |kind: &str| {
                // The kind's own resource, not a subresource (`restores/status` has the kind too).
                let resource = list.resources.iter().find(|r| r.kind == kind && !r.name.contains('/'))?;
                let gvk = GroupVersionKind::gvk(GROUP, VERSION, kind);
                Some(ApiResource::from_gvk_with_plural(&gvk, &resource.name))
            };
            let own_blueprint_crd = Some(list.resources.iter().any(|r| r.name == "blueprints"));
            Discovered { restore: find(RESTORE), debug_mode: find(DEBUG_MODE), own_blueprint_crd }
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
