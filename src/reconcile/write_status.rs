//! Step 4, write the status: once, and only if it differs from the stored one (see `crate::status`).
//! What was written is remembered, so that the next reconcile does not decide on the cache's older
//! copy.

use blueprint_machine::api::Blueprint;
use blueprint_machine::decision::Decision;

use super::Context;
use crate::status::{self, StatusWrite};

pub(super) async fn write_status(
    context: &Context,
    name: &str,
    blueprint: Option<&Blueprint>,
    decision: &Decision,
) -> StatusWrite {
    let (Some(blueprint), Some(wanted)) = (blueprint, decision.status.as_ref()) else {
        return StatusWrite::Unchanged;
    };
    let version = blueprint.metadata.resource_version.clone().unwrap_or_default();
    let Some(patch) = status::status_patch(blueprint.status.as_deref(), wanted, &version) else {
        return StatusWrite::Unchanged;
    };
    match status::write(&context.client, &context.namespace, name, &patch).await {
        Ok(resource_version) => {
            context.metrics.status_writes.inc();
            if let Some(version) = &resource_version {
                context.own_status_writes.record(name, version.clone());
            }
            context.remember_written(
                name,
                version,
                status::written(blueprint, wanted, resource_version, context.now()),
            );
            StatusWrite::Written
        }
        Err(kube::Error::Api(e)) if e.code == 409 => StatusWrite::Conflict,
        Err(e) => StatusWrite::Failed { message: e.to_string() },
    }
}
