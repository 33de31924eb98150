//! `blueprint-operator status [NAME] [--watch [--next]]`: a Blueprint on a live cluster as a person
//! wants to see it: where it stands, what each dogu and component is busy with, its conditions and the
//! recent events of its current generation (src/progress.rs renders them, as for the sandbox). With
//! `--watch`, what changes as it happens (watches, no polling) until it is completed, blocked or
//! stopped; with `--next` too, that of the next generation (started before `kubectl apply`, it follows
//! that apply instead of ending at once on the completed one before it).
//!
//! The namespace: `-n`, else the kubeconfig context's (as `plan` on a live cluster and kubectl).
//!
//! Exit code, as `plan`'s: 0 completed; 2 not completed yet (or, watching, not within `--timeout`);
//! 1 blocked, stopped, or an error.

use std::io::Write;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde::Serialize;

use blueprint_machine::api::{Blueprint, Component, Dogu};

use crate::observe::decoded::Decoded;
use crate::progress::{self, Changes, EventLine, Phase};

/// How many of the Blueprint's events the view shows.
const RECENT_EVENTS: usize = 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Yaml,
}

pub struct StatusArgs {
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub context: Option<String>,
    pub watch: bool,
    /// With `watch`: follow the next generation, not the current one.
    pub next: bool,
    pub timeout: Duration,
    pub output: Format,
}

#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("no cluster to read: {0}")]
    Kubeconfig(String),
    #[error("cannot read {what} in namespace {namespace:?}: {source}")]
    Read { what: &'static str, namespace: String, source: kube::Error },
    #[error("no Blueprint in namespace {0:?}")]
    NoBlueprint(String),
    #[error("Blueprint {name:?} not found in namespace {namespace:?}")]
    NotFound { name: String, namespace: String },
    #[error("{count} Blueprints in namespace {namespace:?} ({names}): name one")]
    Several { count: usize, namespace: String, names: String },
    #[error("cannot change Blueprint {name:?} in namespace {namespace:?}: {source}")]
    Write { name: String, namespace: String, source: kube::Error },
    #[error("the watch of {0} ended: {1}")]
    Watch(&'static str, String),
}

/// The view as JSON or YAML.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Report<'a> {
    name: &'a str,
    namespace: &'a str,
    generation: Option<i64>,
    observed_generation: Option<i64>,
    #[serde(flatten)]
    phase: Phase,
    waiting_for: Vec<String>,
    conditions: &'a [k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    events: &'a [EventLine],
}

pub async fn run(args: StatusArgs, out: &mut impl Write) -> Result<u8, StatusError> {
    let (client, default_namespace) =
        crate::kubeconfig::client(args.context.as_deref()).await.map_err(StatusError::Kubeconfig)?;
    let namespace = args.namespace.clone().unwrap_or(default_namespace);
    let name = match &args.name {
        Some(name) => name.clone(),
        None => only_blueprint(&client, &namespace).await?,
    };
    if args.watch {
        let follow = if args.next { Follow::Next } else { Follow::Current };
        return watch(&client, &namespace, &name, follow, args.timeout, out).await;
    }
    let read = |what: &'static str| {
        let namespace = namespace.clone();
        move |source| StatusError::Read { what, namespace, source }
    };
    let blueprints = Api::<Decoded<Blueprint>>::namespaced(client.clone(), &namespace);
    let blueprint = match blueprints.get_opt(&name).await.map_err(read("Blueprint"))? {
        Some(Decoded::Object(blueprint)) => std::sync::Arc::unwrap_or_clone(blueprint),
        Some(Decoded::Undecodable(_)) | None => return Err(StatusError::NotFound { name, namespace }),
    };
    let all = ListParams::default();
    let (dogus, _) = crate::kubeconfig::list::<Dogu>(&client, &namespace, &all).await.map_err(read("Dogu"))?;
    let (components, _) =
        crate::kubeconfig::list::<Component>(&client, &namespace, &all).await.map_err(read("Component"))?;
    let events = Api::<Event>::namespaced(client.clone(), &namespace)
        .list(&ListParams::default())
        .await
        .map_err(read("Event"))?
        .items;
    let generation = blueprint.metadata.generation.unwrap_or_default();
    let events = recent(progress::of_generation(events_of(&events, &name), generation));
    let phase = progress::phase(&blueprint);
    let text = match args.output {
        Format::Text => progress::render(&blueprint, &dogus, &components, &events),
        Format::Json | Format::Yaml => {
            let status = blueprint.status.as_deref();
            let report = Report {
                name: &name,
                namespace: &namespace,
                generation: blueprint.metadata.generation,
                observed_generation: status.and_then(|s| s.observed_generation),
                phase: phase.clone(),
                waiting_for: progress::busy(&dogus, &components),
                conditions: status.map(|s| s.conditions.as_slice()).unwrap_or_default(),
                events: &events,
            };
            if args.output == Format::Json {
                serde_json::to_string_pretty(&report).expect("a report serializes") + "\n"
            } else {
                serde_saphyr::to_string(&report).expect("a report serializes")
            }
        }
    };
    let _ = out.write_all(text.as_bytes());
    Ok(phase.exit_code())
}

/// The name of the namespace's only Blueprint.
pub(crate) async fn only_blueprint(client: &kube::Client, namespace: &str) -> Result<String, StatusError> {
    let listed = Api::<Decoded<Blueprint>>::namespaced(client.clone(), namespace)
        .list_metadata(&ListParams::default())
        .await
        .map_err(|source| StatusError::Read { what: "Blueprint", namespace: namespace.to_owned(), source })?;
    let mut names: Vec<String> = listed.items.into_iter().filter_map(|b| b.metadata.name).collect();
    match names.len() {
        0 => Err(StatusError::NoBlueprint(namespace.to_owned())),
        1 => Ok(names.remove(0)),
        count => Err(StatusError::Several { count, namespace: namespace.to_owned(), names: names.join(", ") }),
    }
}

/// The events about Blueprint `name`, oldest first.
fn events_of<'e>(events: impl IntoIterator<Item = &'e Event>, name: &str) -> Vec<EventLine> {
    let events: Vec<serde_json::Value> = events.into_iter().filter_map(|e| serde_json::to_value(e).ok()).collect();
    progress::blueprint_events(&events, name)
}

fn recent(mut events: Vec<EventLine>) -> Vec<EventLine> {
    let skip = events.len().saturating_sub(RECENT_EVENTS);
    events.drain(..skip);
    events
}

/// Which generation `status --watch` follows to its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Follow {
    /// The Blueprint's current generation (or the one an apply gives it meanwhile).
    Current,
    /// The next one: a generation newer than the one seen first (or the Blueprint's creation).
    Next,
}

/// Follows the Blueprint, its namespace's Dogus and Components and its events through watches,
/// printing what changes, until it completes (0), is blocked or stopped (1), or `timeout` passes (2).
async fn watch(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    follow: Follow,
    timeout: Duration,
    out: &mut impl Write,
) -> Result<u8, StatusError> {
    let by_name = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let (blueprints, blueprint_writer) = reflector::store::<Decoded<Blueprint>>();
    let (dogus, dogu_writer) = reflector::store::<Decoded<Dogu>>();
    let (components, component_writer) = reflector::store::<Decoded<Component>>();
    let (events, event_writer) = reflector::store::<Event>();
    let api = |client: &kube::Client| client.clone();
    // Each watch event is one "something changed" tick; the view is recomputed from the stores.
    let ticks = futures::stream::select_all([
        reflector::reflector(
            blueprint_writer,
            watcher(Api::namespaced(api(client), namespace), by_name).default_backoff(),
        )
        .map(|r| r.map(drop).map_err(|e| ("Blueprint", e)))
        .boxed(),
        reflector::reflector(dogu_writer, watcher(Api::namespaced(api(client), namespace), Default::default()))
            .map(|r| r.map(drop).map_err(|e| ("Dogu", e)))
            .boxed(),
        reflector::reflector(component_writer, watcher(Api::namespaced(api(client), namespace), Default::default()))
            .map(|r| r.map(drop).map_err(|e| ("Component", e)))
            .boxed(),
        reflector::reflector(event_writer, watcher(Api::namespaced(api(client), namespace), Default::default()))
            .map(|r| r.map(drop).map_err(|e| ("Event", e)))
            .boxed(),
    ]);
    futures::pin_mut!(ticks);
    let started = Instant::now();
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut changes = Changes::default();
    let mut headline = String::new();
    // Following the next generation, nothing from before it is history to show.
    let mut history_skipped = follow == Follow::Next;
    let mut waiting = Waiting::new(follow);
    loop {
        tokio::select! {
            tick = ticks.next() => match tick {
                Some(Ok(())) => {}
                Some(Err((what, error))) => return Err(StatusError::Watch(what, error.to_string())),
                None => return Err(StatusError::Watch("the cluster", "no more events".into())),
            },
            () = &mut deadline => {
                let state = blueprints.state().first().and_then(|b| b.object().map(|b| progress::sentence(&progress::phase(b))));
                let _ = writeln!(out, "not completed within {}: {}", crate::config::show(timeout), state.unwrap_or_else(|| "no such Blueprint".into()));
                return Ok(2);
            }
        }
        if !blueprints_listed(&blueprints) {
            continue;
        }
        let blueprint = blueprints.state().first().and_then(|b| b.object().cloned());
        let at = started.elapsed().as_secs_f64();
        if let Some(line) = waiting.still(name, blueprint.as_deref()) {
            let _ = writeln!(out, "[{at:6.1}s] {line}");
            let _ = out.flush();
        }
        if waiting.is_waiting() {
            continue;
        }
        let Some(blueprint) = blueprint else { continue };
        let dogus: Vec<Dogu> = dogus.state().iter().filter_map(|d| d.object().map(|o| (**o).clone())).collect();
        let components: Vec<Component> =
            components.state().iter().filter_map(|c| c.object().map(|o| (**o).clone())).collect();
        let generation = blueprint.metadata.generation.unwrap_or_default();
        let events = progress::of_generation(events_of(events.state().iter().map(|e| &**e), name), generation);
        if !history_skipped && !events.is_empty() {
            // The events from before the watch: only the recent ones are shown.
            changes.skip_events(&events[..events.len().saturating_sub(RECENT_EVENTS)]);
            history_skipped = true;
        }
        let phase = progress::phase(&blueprint);
        let sentence = progress::sentence(&phase);
        if sentence != headline {
            let _ = writeln!(out, "[{at:6.1}s] Blueprint {name:?} (generation {generation}): {sentence}");
            headline = sentence;
        }
        for line in changes.lines(Some(&blueprint), &progress::busy(&dogus, &components), &events) {
            let _ = writeln!(out, "[{at:6.1}s]   {line}");
        }
        let _ = out.flush();
        match phase {
            Phase::Completed | Phase::Blocked(_) | Phase::Stopped => return Ok(phase.exit_code()),
            Phase::InProgress(_) => {}
        }
    }
}

/// The Blueprint's watch has listed it (or found it missing): before that, an empty store says
/// nothing.
fn blueprints_listed(store: &reflector::Store<Decoded<Blueprint>>) -> bool {
    // `wait_until_ready` resolves once the first list is in; polled without waiting.
    futures::FutureExt::now_or_never(store.wait_until_ready()).is_some_and(|r| r.is_ok())
}

/// Before the generation to follow is there: what `status --watch` waits for, said once.
#[derive(Debug)]
enum Waiting {
    /// Following the current generation: nothing to wait for (but the Blueprint's creation).
    No {
        said_missing: bool,
    },
    /// For a generation newer than `after` (`None`: not seen yet; the first sight sets it, and a
    /// Blueprint created meanwhile is the next generation).
    Next {
        after: Option<Option<i64>>,
    },
    Done,
}

impl Waiting {
    fn new(follow: Follow) -> Self {
        match follow {
            Follow::Current => Waiting::No { said_missing: false },
            Follow::Next => Waiting::Next { after: None },
        }
    }

    fn is_waiting(&self) -> bool {
        matches!(self, Waiting::Next { .. })
    }

    /// Takes in the Blueprint as it is now; a line to print when what is awaited is first known.
    fn still(&mut self, name: &str, blueprint: Option<&Blueprint>) -> Option<String> {
        let generation = blueprint.map(|b| b.metadata.generation.unwrap_or_default());
        match self {
            Waiting::No { said_missing } => match blueprint {
                None if !*said_missing => {
                    *said_missing = true;
                    Some(format!("Blueprint {name:?}: waiting for it to be created"))
                }
                _ => None,
            },
            Waiting::Next { after: after @ None } => {
                *after = Some(generation);
                Some(match generation {
                    Some(g) => {
                        format!("Blueprint {name:?} (generation {g}): waiting for its next generation (kubectl apply)")
                    }
                    None => format!("Blueprint {name:?}: waiting for it to be created"),
                })
            }
            Waiting::Next { after: Some(before) } => {
                if generation.is_some() && generation > *before {
                    *self = Waiting::Done;
                }
                None
            }
            Waiting::Done => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_generation(generation: i64) -> Blueprint {
        let mut blueprint = blueprint_machine::fixtures::blueprint("{displayName: x}");
        blueprint.metadata.generation = Some(generation);
        blueprint
    }

    #[test]
    fn waiting_for_the_next_generation_ends_with_a_newer_one() {
        let mut waiting = Waiting::new(Follow::Next);
        let said = waiting.still("bp", Some(&at_generation(3))).unwrap();
        assert_eq!(said, "Blueprint \"bp\" (generation 3): waiting for its next generation (kubectl apply)");
        assert!(waiting.is_waiting());
        assert_eq!(waiting.still("bp", Some(&at_generation(3))), None, "said once");
        assert!(waiting.is_waiting(), "the completed generation 3 is not followed");
        waiting.still("bp", Some(&at_generation(4)));
        assert!(!waiting.is_waiting());
    }

    #[test]
    fn a_blueprint_created_after_the_start_is_the_next_generation() {
        let mut waiting = Waiting::new(Follow::Next);
        assert_eq!(waiting.still("bp", None).unwrap(), "Blueprint \"bp\": waiting for it to be created");
        assert!(waiting.is_waiting());
        waiting.still("bp", Some(&at_generation(1)));
        assert!(!waiting.is_waiting());
    }

    #[test]
    fn following_the_current_generation_waits_for_nothing() {
        let mut waiting = Waiting::new(Follow::Current);
        assert!(!waiting.is_waiting());
        assert_eq!(waiting.still("bp", Some(&at_generation(1))), None);
        let mut missing = Waiting::new(Follow::Current);
        assert!(missing.still("bp", None).is_some());
        assert_eq!(missing.still("bp", None), None);
    }
}
