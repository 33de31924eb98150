//! The journal: one JSON line per reconcile with what the operator observed, decided and did, so that
//! a reconcile can be re-run offline (`replay`) by a newer operator and every change of behaviour
//! shows up as a readable difference.
//!
//! Secrets appear only as digests: the Observation never holds a plaintext value (its sensitive config,
//! referenced Secrets and the normal config's values copied from Secrets are HMAC digests; a config
//! ConfigMap holding such values is not read through a `configRef`), and decisions refer to Secrets by
//! name and key. One more
//! place could hold one: a Blueprint whose author wrote a sensitive value in plain text (which static
//! validation rejects) — the journal replaces such values, and drops the Blueprint's annotations (where
//! tools such as kubectl keep copies of the spec) and managed fields. Neither changes a decision: the
//! machine rejects a sensitive entry with a value, whatever it is, and reads no annotation.

pub mod compare;
pub mod reader;
pub mod replay;
pub mod writer;

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::{Deserialize, Serialize};

use blueprint_machine::decision::{ApplyFailure, Decision};
use blueprint_machine::observation::Observation;

use crate::status::StatusWrite;

pub use reader::{ReadError, read_files};
pub use writer::{Journal, JournalSettings, JournalWriter};

/// The format this build writes. Bump it whenever the serialized Observation, Decision or Record
/// changes so that an older file would not read back the same (and teach [`reader`] the old format or
/// the message that names it).
pub const FORMAT: u32 = 1;

/// One reconcile: what it observed, decided and did. What a reconcile returns, and what the journal
/// writes as one JSON line (the observation redacted, see [`redacted`]).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Record {
    pub format: u32,
    pub operator_version: String,
    pub blueprint: String,
    /// The observation's time (the reconcile's "now").
    pub time: Time,
    /// `None` when the reconcile could not observe (see `execution.error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observation>,
    /// What `reconcile` decided from the observation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    pub execution: Execution,
}

/// What the shell did with the decision.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Execution {
    /// How many of the decision's actions were performed: all of them without a failure; after one,
    /// every action of the earlier stages and some of its stage and the later ones (`schedule`).
    pub performed: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<ApplyFailure>,
    /// What `record_failure` made of the failure (the status that was written instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_after_failure: Option<Decision>,
    pub status: StatusWrite,
    pub events_published: usize,
    /// When the next reconcile was scheduled; `None`: when something changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_after_seconds: Option<f64>,
    /// Why the reconcile could not observe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What stands in for a sensitive value written in plain text.
pub const REDACTED: &str = "(redacted by the journal)";

/// The observation without plaintext sensitive values (see the module documentation).
pub fn redacted(mut observation: Observation) -> Observation {
    let Some(blueprint) = observation.blueprint.as_mut() else { return observation };
    // The journal's own copy: the shared one stays as the cache holds it.
    let blueprint = Arc::make_mut(blueprint);
    // Tools keep copies of the spec in annotations (kubectl's last-applied configuration, GitOps
    // tools' applied state); the machine reads none of them. Of the managed fields it reads who wrote
    // last and when (a progress held back after its own status write, D58): that is kept, as the
    // cache keeps it, and no field set.
    blueprint.metadata.annotations = None;
    crate::caches::keep_newest_write(&mut blueprint.metadata);
    let config = blueprint
        .spec
        .spec
        .as_mut()
        .map(Arc::make_mut)
        .and_then(|s| s.blueprint.as_mut())
        .map(Arc::make_mut)
        .and_then(|m| m.config.as_mut());
    if let Some(config) = config {
        let entries =
            config.global.iter_mut().flatten().chain(config.dogus.iter_mut().flat_map(|d| d.values_mut().flatten()));
        for entry in entries.filter(|e| e.sensitive == Some(true) && e.value.is_some()) {
            entry.value = Some(REDACTED.to_owned());
        }
    }
    observation
}
