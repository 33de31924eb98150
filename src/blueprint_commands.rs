//! A person's hand on a Blueprint, as Flux's CLI has it for its objects:
//!
//! - `suspend`: `spec.stopped: true`: the operator computes and shows everything, applies nothing;
//! - `resume`: `spec.stopped` removed: the operator applies the Blueprint again;
//! - `reconcile`: the annotation `blueprint-operator.k8s.cloudogu.com/reconcile-requested-at` set to
//!   now: the operator reconciles at once, past any backoff (a failed apply waits up to 5 minutes),
//!   and says so in a `ReconcileRequested` event naming that value.
//!
//! Each waits until the operator took it up (the new generation observed; the request's event), then
//! prints where the Blueprint stands. Exit code 0: taken up; 2: not within `--timeout` (is the operator
//! running? `blueprint-operator version`); 1: an error. The namespace: `-n`, else the kubeconfig
//! context's, as for `status`.

use std::io::Write;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::events::v1::Event;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::json;

use blueprint_machine::api::Blueprint;
use blueprint_machine::reconcile_request::{self, ANNOTATION};

use crate::observe::decoded::Decoded;
use crate::progress;
use crate::status_command::{StatusError, only_blueprint};

/// The Blueprint a command acts on, and how long it waits for the operator.
#[derive(clap::Args, Debug)]
pub struct TargetArgs {
    /// The Blueprint; default: the namespace's only one.
    pub name: Option<String>,
    /// Default: the kubeconfig context's namespace.
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// The kubeconfig context; default: the current one.
    #[arg(long)]
    pub context: Option<String>,
    /// How long to wait for the operator to take it up (500ms, 30s, 2m).
    #[arg(long, default_value = "2m", value_parser = crate::config::parse_duration)]
    pub timeout: Duration,
}

/// What is done to the Blueprint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hand {
    Suspend,
    Resume,
    Reconcile,
}

/// The field manager of the commands' writes (`kubectl get bp -o yaml --show-managed-fields`).
const FIELD_MANAGER: &str = "blueprint-operator-cli";

pub async fn run(hand: Hand, args: TargetArgs, out: &mut impl Write) -> Result<u8, StatusError> {
    let (client, default_namespace) =
        crate::kubeconfig::client(args.context.as_deref()).await.map_err(StatusError::Kubeconfig)?;
    let namespace = args.namespace.unwrap_or(default_namespace);
    let name = match args.name {
        Some(name) => name,
        None => only_blueprint(&client, &namespace).await?,
    };
    let api = Api::<Decoded<Blueprint>>::namespaced(client.clone(), &namespace);
    let read = |source| StatusError::Read { what: "Blueprint", namespace: namespace.clone(), source };
    let blueprint = match api.get_opt(&name).await.map_err(read)? {
        Some(Decoded::Object(blueprint)) => blueprint,
        Some(Decoded::Undecodable(_)) | None => return Err(StatusError::NotFound { name, namespace }),
    };
    let stopped = blueprint.spec.spec.as_ref().and_then(|s| s.stopped) == Some(true);
    let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    let write = |source| StatusError::Write { name: name.clone(), namespace: namespace.clone(), source };
    match hand {
        Hand::Suspend | Hand::Resume => {
            let (patch, already) = match hand {
                Hand::Suspend => (json!({"spec": {"stopped": true}}), stopped.then_some("suspended already")),
                _ => (json!({"spec": {"stopped": null}}), (!stopped).then_some("not suspended")),
            };
            if let Some(already) = already {
                let _ = writeln!(out, "Blueprint {name:?} is {already} (spec.stopped): nothing to do");
                return Ok(0);
            }
            let written = api.patch(&name, &params, &Patch::Merge(&patch)).await.map_err(write)?;
            let generation = written.meta().generation.unwrap_or_default();
            let done = if hand == Hand::Suspend { "suspended" } else { "resumed" };
            let _ = writeln!(out, "Blueprint {name:?} {done} (generation {generation})");
            let _ = out.flush();
            taken_up(&api, &name, &namespace, Awaited::Generation(generation), args.timeout, out).await
        }
        Hand::Reconcile => {
            // Flux's format: the time, to the nanosecond, so that each request is a new value.
            let value = k8s_openapi::jiff::Timestamp::now().to_string();
            // Watched before the request is made, so that the answer cannot come first.
            let events = Api::<Event>::namespaced(client.clone(), &namespace);
            let answers = watcher(events, watcher::Config::default()).boxed();
            let patch = json!({"metadata": {"annotations": {ANNOTATION: value}}});
            api.patch(&name, &params, &Patch::Merge(&patch)).await.map_err(write)?;
            let _ = writeln!(out, "Blueprint {name:?}: reconcile requested at {value}");
            let _ = out.flush();
            let awaited = Awaited::Handled { value, answers };
            taken_up(&api, &name, &namespace, awaited, args.timeout, out).await
        }
    }
}

/// What shows that the operator took a change up.
enum Awaited {
    /// The status describes this generation (or a newer one).
    Generation(i64),
    /// The `ReconcileRequested` event naming this value, among the namespace's events.
    Handled { value: String, answers: futures::stream::BoxStream<'static, watcher::Result<watcher::Event<Event>>> },
}

/// Waits for `awaited` within `timeout`, then says where the Blueprint stands.
async fn taken_up(
    api: &Api<Decoded<Blueprint>>,
    name: &str,
    namespace: &str,
    awaited: Awaited,
    timeout: Duration,
    out: &mut impl Write,
) -> Result<u8, StatusError> {
    let waited = match awaited {
        Awaited::Generation(generation) => {
            let by_name = watcher::Config::default().fields(&format!("metadata.name={name}"));
            let mut blueprints = watcher(api.clone(), by_name).boxed();
            let observed = async {
                while let Some(event) = blueprints.next().await {
                    let event = event.map_err(|e| StatusError::Watch("Blueprint", e.to_string()))?;
                    let seen = match event {
                        watcher::Event::Apply(b) | watcher::Event::InitApply(b) => b.object().cloned(),
                        _ => None,
                    };
                    let observed = seen.as_ref().and_then(|b| b.status.as_ref()?.observed_generation);
                    if observed.is_some_and(|g| g >= generation) {
                        return Ok(());
                    }
                }
                Err(StatusError::Watch("Blueprint", "no more events".into()))
            };
            tokio::time::timeout(timeout, observed).await.map(|r| r.map(|()| "took up the change".to_owned()))
        }
        Awaited::Handled { value, mut answers } => {
            let wanted = format!("reconcile requested at {}: handled", reconcile_request::shown(&value));
            let handled = async {
                while let Some(event) = answers.next().await {
                    let event = event.map_err(|e| StatusError::Watch("Event", e.to_string()))?;
                    let (watcher::Event::Apply(event) | watcher::Event::InitApply(event)) = event else { continue };
                    let about = event
                        .regarding
                        .as_ref()
                        .is_some_and(|r| r.kind.as_deref() == Some("Blueprint") && r.name.as_deref() == Some(name));
                    if about
                        && event.reason.as_deref() == Some(blueprint_machine::events::reason::RECONCILE_REQUESTED)
                        && event.note.as_deref() == Some(wanted.as_str())
                    {
                        return Ok(());
                    }
                }
                Err(StatusError::Watch("Event", "no more events".into()))
            };
            tokio::time::timeout(timeout, handled).await.map(|r| r.map(|()| "handled the request".to_owned()))
        }
    };
    match waited {
        Err(_) => {
            let _ = writeln!(
                out,
                "the operator has not taken it up within {}: is it running in namespace {namespace:?}? \
                 (`blueprint-operator version`)",
                crate::config::show(timeout)
            );
            Ok(2)
        }
        Ok(Err(error)) => Err(error),
        Ok(Ok(what)) => {
            let read = |source| StatusError::Read { what: "Blueprint", namespace: namespace.to_owned(), source };
            let now = match api.get_opt(name).await.map_err(read)? {
                Some(Decoded::Object(blueprint)) => blueprint,
                _ => return Err(StatusError::NotFound { name: name.to_owned(), namespace: namespace.to_owned() }),
            };
            let generation = now.metadata.generation.unwrap_or_default();
            let sentence = progress::sentence(&progress::phase(&now));
            let _ = writeln!(out, "the operator {what}: Blueprint {name:?} (generation {generation}): {sentence}");
            Ok(0)
        }
    }
}
