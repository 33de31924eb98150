//! What one reconcile decides: the complete new status, the ordered actions, the events, the requeue,
//! and the state the blueprint is in.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::api::{BlueprintStatus, Component, Dogu, SecretReference};
use crate::naming::label;
use crate::observation::ObjectBase;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub state: State,
    /// The complete status to write; `None` when nothing must be written (no Blueprint, or a
    /// situation in which no Blueprint may be touched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Arc<BlueprintStatus>>,
    #[serde(default)]
    pub actions: Vec<Action>,
    #[serde(default)]
    pub events: Vec<Event>,
    pub requeue: Requeue,
    /// The value of the reconcile request this decision handles (see `reconcile_request`): the shell
    /// remembers it once the decision's status is the stored one, and starts its backoff afresh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handled_request: Option<String>,
}

/// Where a blueprint stands, derived afresh from every observation; the conditions are its public
/// projection.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// No Blueprint to reconcile.
    NoBlueprint,
    /// More than one Blueprint in the namespace: none is processed.
    MultipleBlueprints,
    /// The blueprint cannot be parsed, or is statically or dynamically invalid.
    Invalid,
    /// Dogu descriptors could not be loaded, so validity is not known yet.
    ValidationPending,
    /// The diff contains forbidden actions, references are missing, or cluster objects are unreadable.
    NotExecutable,
    /// `spec.stopped`: everything computed, nothing applied.
    Stopped,
    /// A restore of the platform is in progress: everything computed, nothing applied.
    RestoreInProgress,
    /// The ecosystem is not healthy (or health cannot be determined); nothing is applied.
    AwaitingHealth,
    /// The operator's own component is being upgraded; nothing else is applied until it runs.
    SelfUpgrading,
    ApplyingConfig,
    ApplyingComponents,
    ApplyingDogus,
    /// Nothing left to apply; waiting for dogus to run the wanted version and configuration.
    AwaitingDogus,
    Completed,
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// The stages in the order they apply.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "camelCase")]
pub enum Stage {
    SelfUpgrade,
    Config,
    Components,
    Dogus,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::SelfUpgrade => "self-upgrade",
            Stage::Config => "config",
            Stage::Components => "components",
            Stage::Dogus => "dogus",
        })
    }
}

/// One write, with everything the executor needs to perform it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    pub stage: Stage,
    /// Why, in words (`install`, `upgrade, update reverse proxy`, `pause for config change`).
    pub reason: String,
    #[serde(flatten)]
    pub operation: Operation,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Operation {
    /// Create this Dogu CR (an existing identical object counts as done).
    CreateDogu {
        object: Box<Dogu>,
    },
    /// Send this JSON merge patch to `dogus/<name>`.
    PatchDogu {
        name: String,
        patch: serde_json::Value,
    },
    /// Delete `dogus/<name>` (an absent object counts as done).
    DeleteDogu {
        name: String,
    },
    CreateComponent {
        object: Box<Component>,
    },
    PatchComponent {
        name: String,
        patch: serde_json::Value,
    },
    DeleteComponent {
        name: String,
    },
    /// Set and remove keys of a config object, conditional on the state it was observed in.
    WriteConfig {
        target: ConfigTarget,
        base: ObjectBase,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        set: Vec<ConfigSet>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        remove: Vec<String>,
    },
}

impl Operation {
    /// The object the operation writes, as `kind/name`.
    pub fn object(&self) -> String {
        match self {
            Operation::CreateDogu { object } => {
                format!("dogus/{}", object.metadata.name.as_deref().unwrap_or_default())
            }
            Operation::PatchDogu { name, .. } | Operation::DeleteDogu { name } => {
                format!("dogus/{name}")
            }
            Operation::CreateComponent { object } => {
                format!("components/{}", object.metadata.name.as_deref().unwrap_or_default())
            }
            Operation::PatchComponent { name, .. } | Operation::DeleteComponent { name } => {
                format!("components/{name}")
            }
            Operation::WriteConfig { target, .. } => target.object(),
        }
    }
}

/// Which config object a write goes to.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "camelCase", tag = "store", content = "dogu")]
pub enum ConfigTarget {
    /// ConfigMap `global-config`.
    Global,
    /// ConfigMap `<dogu>-config`.
    Dogu(String),
    /// Secret `<dogu>-config`.
    Sensitive(String),
}

impl ConfigTarget {
    pub fn object_name(&self) -> String {
        match self {
            ConfigTarget::Global => crate::naming::GLOBAL_CONFIG.to_owned(),
            ConfigTarget::Dogu(dogu) | ConfigTarget::Sensitive(dogu) => crate::naming::dogu_config(dogu),
        }
    }

    pub fn object(&self) -> String {
        match self {
            ConfigTarget::Sensitive(_) => format!("secrets/{}", self.object_name()),
            _ => format!("configmaps/{}", self.object_name()),
        }
    }

    /// Which config an object holds, from its labels: global, a dogu's, or a dogu's sensitive config.
    pub fn from_labels(labels: Option<&BTreeMap<String, String>>) -> Option<Self> {
        let labels = labels?;
        let dogu = || labels.get(label::DOGU).cloned();
        match labels.get(label::CONFIG_TYPE)?.as_str() {
            label::GLOBAL_CONFIG_TYPE => Some(ConfigTarget::Global),
            label::DOGU_CONFIG_TYPE => dogu().map(ConfigTarget::Dogu),
            label::SENSITIVE_CONFIG_TYPE => dogu().map(ConfigTarget::Sensitive),
            _ => None,
        }
    }

    /// The labels of the config object the operator creates for this target.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([(label::APP.to_owned(), label::APP_CES.to_owned())]);
        let (kind, dogu) = match self {
            ConfigTarget::Global => (label::GLOBAL_CONFIG_TYPE, None),
            ConfigTarget::Dogu(dogu) => (label::DOGU_CONFIG_TYPE, Some(dogu)),
            ConfigTarget::Sensitive(dogu) => (label::SENSITIVE_CONFIG_TYPE, Some(dogu)),
        };
        labels.insert(label::CONFIG_TYPE.to_owned(), kind.to_owned());
        if let Some(dogu) = dogu {
            labels.insert(label::DOGU.to_owned(), dogu.clone());
        }
        labels
    }
}

/// A key to set, with its value or, for sensitive config, the Secret key to copy it from.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ConfigSet {
    pub key: String,
    #[serde(flatten)]
    pub value: ConfigValue,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum ConfigValue {
    Value(String),
    /// Read by the executor at execution time; the value never appears in a decision.
    SecretRef(SecretReference),
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

/// A Kubernetes event on the Blueprint.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    #[serde(rename = "type")]
    pub type_: EventType,
    pub reason: String,
    pub message: String,
    /// Set for events that report applied actions: they are published only if that stage's actions
    /// were all performed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
}

/// The reason of a requeue that comes back when progress held back is due (D58): the status it held is
/// the stored one.
pub const PROGRESS_DUE: &str = "progress is due (held back within 10 s of the last status write)";

/// When to reconcile again.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Requeue {
    /// Only when something watched changes.
    AwaitChange,
    /// After a fixed delay (something is in progress that is not fully observable by watches).
    After {
        #[serde(with = "seconds")]
        after: Duration,
        reason: String,
    },
    /// With per-object exponential backoff (a transient failure).
    Backoff { reason: String },
}

impl Requeue {
    pub fn after(seconds: u64, reason: impl Into<String>) -> Self {
        Requeue::After { after: Duration::from_secs(seconds), reason: reason.into() }
    }
}

mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
    }
}

/// Why performing an action failed, as the executor reports it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ApplyFailure {
    /// Index into [`Decision::actions`] of the action that failed: if more than one failed, the lowest
    /// of the earliest stage that failed ([`crate::schedule::Scheduler::failure`]). Every action of an
    /// earlier stage was performed; of its stage and the later ones, any other action may have been.
    pub action: usize,
    pub kind: FailureKind,
    /// What went wrong, for the condition and the event (never contains a secret value).
    pub message: String,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum FailureKind {
    /// The object changed since it was observed (409): re-observe and decide again.
    Conflict,
    /// Something the action needs does not exist (e.g. the referenced Secret vanished).
    NotFound,
    /// The API server rejected the request (422, 403, ...).
    Rejected,
    /// A transient failure (5xx, timeout, connection).
    Transient,
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FailureKind::Conflict => "conflict",
            FailureKind::NotFound => "not found",
            FailureKind::Rejected => "rejected",
            FailureKind::Transient => "transient",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_labels_read_back_as_their_target() {
        for target in [ConfigTarget::Global, ConfigTarget::Dogu("cas".into()), ConfigTarget::Sensitive("cas".into())] {
            assert_eq!(ConfigTarget::from_labels(Some(&target.labels())), Some(target));
        }
        let local_registry = crate::naming::local_registry_labels("cas");
        assert_eq!(ConfigTarget::from_labels(Some(&local_registry)), None, "a cache of descriptors, not config");
        assert_eq!(ConfigTarget::from_labels(None), None);
    }
}
