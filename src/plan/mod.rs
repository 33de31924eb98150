//! `blueprint-operator plan`: what would one reconcile decide, offline, from files.

pub mod input;
pub mod render;

use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use blueprint_machine::decision::{Action, Decision, Event, Requeue, State};
use blueprint_machine::observation::{Observation, OperatorFacts};
use blueprint_machine::{api::BlueprintStatus, conditions};

use crate::observe::{Digester, Snapshot};

pub use input::InputError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

pub struct PlanArgs {
    pub blueprint: PathBuf,
    pub cluster: PathBuf,
    pub descriptors: Option<PathBuf>,
    pub now: Option<Timestamp>,
    pub namespace: Option<String>,
    pub operator_version: Option<String>,
    /// See [`crate::identity::OperatorIdentity`].
    pub own_versions: semver::VersionReq,
    pub allow_replacement: bool,
    pub format: Format,
}

/// What `plan` prints and how it exits.
pub struct PlanOutput {
    pub stdout: String,
    pub warnings: Vec<String>,
    /// 0: nothing to do, 2: changes pending, 1: the blueprint cannot be processed.
    pub exit_code: i32,
    pub error: Option<String>,
}

#[derive(Serialize)]
struct JsonPlan<'a> {
    state: State,
    status: Option<&'a BlueprintStatus>,
    actions: &'a [Action],
    events: &'a [Event],
    requeue: &'a Requeue,
}

pub fn run(args: &PlanArgs) -> Result<PlanOutput, InputError> {
    let (observation, warnings) = observe(args)?;
    let decision = blueprint_machine::reconcile(&observation);
    let name = observation.blueprint.as_ref().and_then(|b| b.metadata.name.clone()).unwrap_or_default();
    let stdout = match args.format {
        Format::Text => render::text(&name, &decision),
        Format::Json => {
            let plan = JsonPlan {
                state: decision.state,
                status: decision.status.as_deref(),
                actions: &decision.actions,
                events: &decision.events,
                requeue: &decision.requeue,
            };
            serde_json::to_string_pretty(&plan).expect("decisions serialize") + "\n"
        }
    };
    let (exit_code, error) = exit(&decision);
    Ok(PlanOutput { stdout, warnings, exit_code, error })
}

fn exit(decision: &Decision) -> (i32, Option<String>) {
    let valid = decision.status.as_ref().and_then(|s| s.conditions.iter().find(|c| c.type_ == conditions::VALID));
    let valid_message = || valid.map(|c| c.message.clone()).unwrap_or_default();
    match decision.state {
        State::Invalid => (1, Some(format!("the blueprint is invalid: {}", valid_message()))),
        // The registry answered, and has no such dogu version (Valid=False): in a cluster the operator
        // asks again later, but for this plan the blueprint is invalid. Without an answer (no
        // --descriptors, an unreachable registry: Valid=Unknown) the plan stands.
        State::ValidationPending if valid.is_some_and(|c| c.status == "False") => {
            (1, Some(format!("the blueprint is invalid: {}", valid_message())))
        }
        State::MultipleBlueprints => {
            (1, Some("more than one Blueprint in the namespace; none would be processed".into()))
        }
        State::NoBlueprint => (1, Some("no blueprint".into())),
        _ => {
            let pending = !decision.actions.is_empty()
                || decision.status.as_ref().and_then(|s| s.state_diff.as_ref()).is_some_and(|d| !d.is_empty());
            (if pending { 2 } else { 0 }, None)
        }
    }
}

/// Builds the observation one reconcile would see.
pub fn observe(args: &PlanArgs) -> Result<(Observation, Vec<String>), InputError> {
    let mut blueprint = input::read_blueprint(&args.blueprint)?;
    let cluster = input::read_cluster(&args.cluster)?;
    let mut warnings: Vec<String> =
        cluster.ignored.iter().map(|o| format!("ignoring {o}: not an object the operator reads")).collect();
    warnings.extend(input::v3_fields_not_applied(&blueprint));

    let namespace = args
        .namespace
        .clone()
        .or_else(|| blueprint.metadata.namespace.clone())
        .unwrap_or_else(|| "ecosystem".to_owned());
    let name = blueprint.metadata.name.clone().unwrap_or_default();
    let in_namespace = |ns: &Option<String>| ns.as_deref().is_none_or(|ns| ns == namespace);

    // A Blueprint of the same name in the cluster supplies the stored status the plan starts from.
    if let Some(stored) = cluster.blueprints.iter().find(|b| b.metadata.name.as_deref() == Some(name.as_str())) {
        if blueprint.status.is_none() {
            blueprint.status = stored.status.clone();
        }
        if blueprint.metadata.generation.is_none() {
            let stored_generation = stored.metadata.generation.unwrap_or(1);
            let spec_changed = stored.spec != blueprint.spec;
            blueprint.metadata.generation = Some(stored_generation + i64::from(spec_changed));
        }
    }
    if blueprint.metadata.generation.is_none() {
        blueprint.metadata.generation = Some(1);
    }
    let mut names: std::collections::BTreeSet<&str> = cluster
        .blueprints
        .iter()
        .filter(|b| in_namespace(&b.metadata.namespace))
        .filter_map(|b| b.metadata.name.as_deref())
        .collect();
    names.insert(name.as_str());

    let mut skipped = 0;
    let mut keep = |ns: &Option<String>| {
        let keep = in_namespace(ns);
        skipped += usize::from(!keep);
        keep
    };
    let dogus: Vec<_> = cluster.dogus.iter().filter(|o| keep(&o.metadata.namespace)).cloned().map(Arc::new).collect();
    let components: Vec<_> =
        cluster.components.iter().filter(|o| keep(&o.metadata.namespace)).cloned().map(Arc::new).collect();
    let config_maps: Vec<_> = cluster.config_maps.iter().filter(|o| keep(&o.metadata.namespace)).collect();
    let secrets: Vec<_> = cluster.secrets.iter().filter(|o| keep(&o.metadata.namespace)).collect();
    if skipped > 0 {
        warnings.push(format!("ignoring {skipped} object(s) outside the namespace {namespace:?}"));
    }

    let wanted = blueprint_machine::Reading::of(&blueprint).wanted_descriptors();
    let descriptors = input::read_descriptors(args.descriptors.as_deref(), &wanted)?;
    let now = args.now.unwrap_or_else(now_in_seconds);
    let snapshot = Snapshot {
        now: Time(now),
        operator: OperatorFacts {
            own_versions: Some(args.own_versions.clone()),
            allow_replacement: args.allow_replacement,
            ..OperatorFacts::new(namespace.clone(), args.operator_version.clone())
        },
        blueprint: Some(Arc::new(blueprint)),
        blueprint_count: names.len(),
        other_blueprints: names.iter().filter(|other| **other != name.as_str()).map(|n| n.to_string()).collect(),
        dogus,
        components,
        config_maps,
        secrets,
        undecodable: Vec::new(),
        referenced_secrets: None,
        descriptors,
    };
    Ok((snapshot.observe(&Digester::random()), warnings))
}

/// The current time at the precision Kubernetes stores (seconds).
pub fn now_in_seconds() -> Timestamp {
    Timestamp::from_second(Timestamp::now().as_second()).expect("the current time is a valid timestamp")
}
