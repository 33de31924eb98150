//! `blueprint-operator plan`: what would one reconcile decide, offline, from files.

pub mod input;
pub mod live;
pub mod render;
pub mod strict;

use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use blueprint_machine::api::{Blueprint, BlueprintStatus};
use blueprint_machine::conditions;
use blueprint_machine::decision::{Action, Decision, Event, Requeue, State};
use blueprint_machine::observation::{DescriptorEntry, Observation, OperatorFacts};
use k8s_openapi::api::core::v1::ConfigMap;

use crate::observe::{Digester, KeptConfigs, Snapshot};

pub use input::InputError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Yaml,
}

pub struct PlanArgs {
    /// The Blueprint's file; none: the namespace's only Blueprint in the cluster (or the snapshot).
    pub blueprint: Option<PathBuf>,
    /// Snapshots of the cluster's objects (all of them together); none: the live cluster of the
    /// kubeconfig ([`live::run`]).
    pub cluster: Vec<PathBuf>,
    /// The kubeconfig context for a live plan; `None`: the current one.
    pub context: Option<String>,
    pub descriptors: Option<PathBuf>,
    pub now: Option<Timestamp>,
    pub namespace: Option<String>,
    pub operator_version: Option<String>,
    /// See [`crate::identity::OperatorIdentity`].
    pub own_versions: semver::VersionReq,
    pub component: String,
    pub allow_replacement: bool,
    /// Feature flags: dependencies the platform provides (see [`crate::identity::OperatorIdentity`]).
    pub provided_dependencies: std::collections::BTreeSet<blueprint_machine::observation::ProvidedDependency>,
    /// The operator's own Secrets and which Secrets a blueprint may read (D53).
    pub secret_access: blueprint_machine::secret_access::SecretAccess,
    pub format: Format,
}

/// What `plan` prints and how it exits.
pub struct PlanOutput {
    pub stdout: String,
    pub warnings: Vec<String>,
    /// What the reader should know about where the plan's input came from (stderr, `note:`).
    pub notes: Vec<String>,
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

/// A plan from a snapshot file (`--cluster`).
pub fn run(args: &PlanArgs) -> Result<PlanOutput, InputError> {
    if args.cluster.is_empty() {
        return Err(InputError { file: PathBuf::from("--cluster"), message: "no cluster snapshot was given".into() });
    }
    let mut cluster = input::ClusterObjects::default();
    for file in &args.cluster {
        cluster.extend(input::read_cluster(file)?);
    }
    let (blueprint, namespace) = match &args.blueprint {
        Some(file) => {
            let blueprint = input::read_blueprint(file)?;
            let namespace = namespace_of(args, &blueprint, "ecosystem");
            (blueprint, namespace)
        }
        None => {
            let namespace = args.namespace.clone().unwrap_or_else(|| "ecosystem".to_owned());
            let stored =
                cluster.blueprints.iter().filter(|b| b.metadata.namespace.as_deref().is_none_or(|ns| ns == namespace));
            let blueprint = only_blueprint(stored.cloned().collect(), &namespace, "the snapshot")
                .map_err(|message| InputError { file: PathBuf::from("--cluster"), message })?;
            (blueprint, namespace)
        }
    };
    let wanted = blueprint_machine::Reading::of(&blueprint, &cluster.masks_in(&namespace)).wanted_descriptors();
    let config_maps: Vec<&ConfigMap> = cluster
        .config_maps
        .iter()
        .filter(|c| c.metadata.namespace.as_deref().is_none_or(|ns| ns == namespace))
        .collect();
    let descriptors = input::read_descriptors(&config_maps, args.descriptors.as_deref(), &wanted)?;
    Ok(plan(args, blueprint, &cluster, descriptors, &namespace))
}

/// The one Blueprint of `namespace` in `stored` (as `status` picks it), or why there is none to plan.
pub(crate) fn only_blueprint(mut stored: Vec<Blueprint>, namespace: &str, place: &str) -> Result<Blueprint, String> {
    match stored.len() {
        1 => Ok(stored.remove(0)),
        0 => Err(format!("no Blueprint in namespace {namespace:?} of {place}: give the Blueprint with -f FILE")),
        count => {
            let names: Vec<&str> = stored.iter().filter_map(|b| b.metadata.name.as_deref()).collect();
            Err(format!(
                "{count} Blueprints in namespace {namespace:?} of {place} ({}): give the one to plan with -f FILE",
                names.join(", ")
            ))
        }
    }
}

/// The namespace the plan is for: `--namespace`, else the Blueprint's, else `fallback`.
pub(crate) fn namespace_of(args: &PlanArgs, blueprint: &Blueprint, fallback: &str) -> String {
    args.namespace.clone().or_else(|| blueprint.metadata.namespace.clone()).unwrap_or_else(|| fallback.to_owned())
}

/// The decision of one reconcile on these objects, rendered, with its exit code.
pub fn plan(
    args: &PlanArgs,
    blueprint: Blueprint,
    cluster: &input::ClusterObjects,
    descriptors: Vec<DescriptorEntry>,
    namespace: &str,
) -> PlanOutput {
    let (observation, warnings) = observe(args, blueprint, cluster, descriptors, namespace);
    let decision = blueprint_machine::reconcile(&observation);
    let name = observation.blueprint.as_ref().and_then(|b| b.metadata.name.clone()).unwrap_or_default();
    let stdout = match args.format {
        Format::Text => render::text(&name, &decision),
        Format::Json | Format::Yaml => {
            let plan = JsonPlan {
                state: decision.state,
                status: decision.status.as_deref(),
                actions: &decision.actions,
                events: &decision.events,
                requeue: &decision.requeue,
            };
            if args.format == Format::Json {
                serde_json::to_string_pretty(&plan).expect("decisions serialize") + "\n"
            } else {
                serde_saphyr::to_string(&plan).expect("decisions serialize")
            }
        }
    };
    let (exit_code, error) = exit(&decision);
    PlanOutput { stdout, warnings, notes: Vec::new(), exit_code, error }
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
fn observe(
    args: &PlanArgs,
    mut blueprint: Blueprint,
    cluster: &input::ClusterObjects,
    descriptors: Vec<DescriptorEntry>,
    namespace: &str,
) -> (Observation, Vec<String>) {
    let mut warnings: Vec<String> =
        cluster.ignored.iter().map(|o| format!("ignoring {o}: not an object the operator reads")).collect();

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

    let now = args.now.unwrap_or_else(now_in_seconds);
    let snapshot = Snapshot {
        now: Time(now),
        operator: OperatorFacts {
            own_versions: Some(args.own_versions.clone()),
            allow_replacement: args.allow_replacement,
            provided_dependencies: args.provided_dependencies.clone(),
            component: args.component.clone(),
            secret_access: args.secret_access.clone(),
            ..OperatorFacts::new(namespace, args.operator_version.clone())
        },
        blueprint: Some(Arc::new(blueprint)),
        blueprint_masks: cluster.masks_in(namespace),
        blueprint_count: names.len(),
        other_blueprints: names.iter().filter(|other| **other != name.as_str()).map(|n| n.to_string()).collect(),
        dogus,
        components,
        config_maps,
        secrets,
        undecodable: cluster.undecodable.iter().map(|(kind, u)| (*kind, &**u)).collect(),
        referenced_secrets: None,
        referenced_config_maps: None,
        keys_filled_from_secrets: None,
        descriptors,
        restores: cluster.restores.iter().map(crate::observe::restore_observation).collect(),
        debug_mode: cluster.debug_modes.iter().find_map(crate::observe::debug_mode_observation),
    };
    (snapshot.observe(&Digester::random(), &KeptConfigs::default()), warnings)
}

/// The current time at the precision Kubernetes stores (seconds).
pub fn now_in_seconds() -> Timestamp {
    Timestamp::from_second(Timestamp::now().as_second()).expect("the current time is a valid timestamp")
}
