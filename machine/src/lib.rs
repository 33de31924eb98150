//! The pure reconcile machine of blueprint-operator.
//!
//! [`reconcile`] maps an [`Observation`] (the cluster as observed plus the operator's own facts) to a
//! [`Decision`] (the complete new status, ordered actions, events and a requeue). [`record_failure`]
//! decides again when the executor could not perform an action. Nothing here does I/O or reads a
//! clock: the same observation always gives the same decision.

pub mod api;
pub mod conditions;
pub mod decision;
pub mod diff;
pub mod events;
pub mod forbidden;
pub mod health;
pub mod model;
pub mod naming;
pub mod objects;
pub mod observation;
pub mod problem;
pub mod reading;
pub mod reconcile;
pub mod references;
pub mod registry_config;
pub mod status_size;
pub mod up_to_date;
pub mod validation;

pub use decision::{Action, ApplyFailure, Decision, Event, EventType, FailureKind, Operation, Requeue, Stage, State};
pub use observation::Observation;
pub use reading::Reading;
pub use reconcile::{StatusWriteResult, after_status_write, reconcile, reconcile_read, record_failure};
