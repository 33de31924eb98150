//! The pure reconcile machine of blueprint-operator.
//!
//! [`reconcile`] maps an [`Observation`] (the cluster as observed plus the operator's own facts) to a
//! [`Decision`] (the complete new status, ordered actions, events and a requeue). [`record_failure`]
//! decides again when the executor could not perform an action, and [`after_status_write`] when to
//! look again once the status was written. A [`Reading`] of the Blueprint tells the shell what to
//! observe (dogu descriptors, referenced Secrets) and serves the decision too. Nothing here does I/O or
//! reads a clock: the same observation always gives the same decision.
//!
//! The public surface is what its users need: the Kubernetes types ([`api`]), the observation and the
//! decision with their parts, the names of shared objects ([`naming`]), the config format shared with
//! the dogu operator ([`config_format`]), the conversion between the Blueprint API's versions
//! ([`conversion`]), dogu descriptors ([`descriptor`]), which Secrets a blueprint may read
//! ([`secret_access`]), which of a decision's actions may run at once ([`schedule`]), the condition and event
//! reasons, and the entry functions. Everything else is private to the crate.

#![warn(unreachable_pub)]

pub mod api;
pub mod conditions;
pub mod config_format;
pub mod conversion;
pub mod decision;
pub mod descriptor;
pub mod events;
#[cfg(feature = "fixtures")]
pub mod fixtures;
pub mod keys_from_secrets;
pub mod naming;
pub mod observation;
pub mod reconcile_request;
pub mod schedule;
pub mod secret_access;

mod diff;
mod forbidden;
mod health;
mod model;
mod objects;
mod problem;
mod reading;
mod reconcile;
mod references;
mod status_size;
mod text;
mod up_to_date;
mod validation;

pub use decision::{Action, ApplyFailure, Decision, Event, EventType, FailureKind, Operation, Requeue, Stage, State};
pub use model::DoguReadings;
pub use observation::Observation;
pub use reading::Reading;
pub use reconcile::{StatusWriteResult, after_status_write, reconcile, reconcile_kept, reconcile_read, record_failure};
pub use status_size::{OBJECT_LIMIT, STATUS_PARTS_LIMIT, size as json_len};

/// Whether `text` is a version the operator can run as (`OPERATOR_VERSION`: a semantic version, read
/// as component versions are) that `own_versions` admits as one of its releases; the error says why not.
pub fn check_operator_version(text: &str, own_versions: &semver::VersionReq) -> Result<(), String> {
    let version = model::ComponentVersion::parse(text).map_err(|problem| problem.to_string())?;
    if version.core_matches(own_versions) {
        Ok(())
    } else {
        Err(format!("{own_versions} does not admit this operator's own version {text}"))
    }
}

/// Whether `text` is a qualified component name (`namespace/name`, as `OPERATOR_COMPONENT` is given).
pub fn check_component_name(text: &str) -> Result<(), String> {
    model::ComponentName::parse(text).map(drop).map_err(|problem| problem.to_string())
}

/// The whole number of bytes a Kubernetes quantity stands for (`64Mi`, `1G`, `1048576`), for settings
/// given as quantities; an error for a fraction or a negative number.
pub fn quantity_bytes(text: &str) -> Result<u64, String> {
    let quantity = model::Quantity::parse(text).map_err(|problem| problem.to_string())?;
    quantity
        .whole()
        .and_then(|bytes| u64::try_from(bytes).ok())
        .ok_or_else(|| format!("{text:?} is not a whole, non-negative number of bytes"))
}
