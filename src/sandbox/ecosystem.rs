//! Simulated dogu and component operators: they act on Dogu and Component CRs through the API like the
//! real ones do. A new or upgraded dogu becomes `available` with `status.installedVersion` set after a
//! delay; a dogu whose config changed after it started restarts (`status.startedAt` moves); paused
//! dogus (`spec.pauseReconciliation`) are neither upgraded nor restarted; deleting a Dogu CR removes its
//! config objects. Failures can be injected: a dogu that never becomes healthy, an install that fails.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde_json::json;
use tokio::sync::Notify;
use tokio::time::Instant;

use blueprint_machine::api::{Component, Dogu};

use crate::observe::decoded::Decoded;
use crate::observe::{config_target, last_updated};
use blueprint_machine::decision::ConfigTarget;
use blueprint_machine::naming::selector;

#[derive(Clone, Debug)]
pub struct Behaviour {
    /// From a Dogu or Component CR's creation to installed and healthy.
    pub install: Duration,
    /// From a version change to the new version running.
    pub upgrade: Duration,
    /// From a config change to the restarted dogu.
    pub restart: Duration,
    /// Dogus that never become healthy.
    pub never_healthy: BTreeSet<String>,
    /// Dogus and components whose installation fails.
    pub failing_installs: BTreeSet<String>,
    /// Restarts are rolling: a restarting dogu stays available (else it reports no health meanwhile).
    pub rolling_restarts: bool,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            install: Duration::from_secs(3),
            upgrade: Duration::from_secs(2),
            restart: Duration::from_secs(1),
            never_healthy: BTreeSet::new(),
            failing_installs: BTreeSet::new(),
            rolling_restarts: false,
        }
    }
}

/// What an object is waiting for, and since when.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Work {
    Install { version: String },
    Restart,
}

/// Runs both simulated operators until the task is dropped. `installed` is told the versions the
/// component operator installs (`name`, `version`), so that the sandbox can roll out a new operator.
pub async fn run(
    client: Client,
    namespace: String,
    behaviour: Behaviour,
    clock: Arc<dyn Fn() -> Timestamp + Send + Sync>,
    installed: tokio::sync::mpsc::UnboundedSender<(String, String)>,
) {
    let wake = Arc::new(Notify::new());
    // Decoded one by one, as the controller does: an object that does not fit is skipped.
    let dogus = reflect::<Decoded<Dogu>>(&client, &namespace, watcher::Config::default(), wake.clone());
    let components = reflect::<Decoded<Component>>(&client, &namespace, watcher::Config::default(), wake.clone());
    let configs = reflect::<Decoded<ConfigMap>>(
        &client,
        &namespace,
        watcher::Config::default().labels(selector::CES_OBJECTS),
        wake.clone(),
    );
    let secrets = reflect::<Decoded<Secret>>(
        &client,
        &namespace,
        watcher::Config::default().labels(selector::SENSITIVE_CONFIG),
        wake.clone(),
    );
    let dogu_api = Api::<Dogu>::namespaced(client.clone(), &namespace);
    let component_api = Api::<Component>::namespaced(client.clone(), &namespace);
    let config_api = Api::<ConfigMap>::namespaced(client.clone(), &namespace);
    let secret_api = Api::<Secret>::namespaced(client.clone(), &namespace);
    let params = PatchParams::default();
    let now = || Time(Timestamp::from_second((clock)().as_second()).unwrap_or_else(|_| (clock)()));

    let mut dogu_work: BTreeMap<String, (Work, Instant)> = BTreeMap::new();
    // What this operator finished last, per dogu object (its uid: a deleted and re-created Dogu is a
    // new one, even if this operator never saw it gone): until its cache shows the write, it is done.
    let mut finished: BTreeMap<String, (String, Time)> = BTreeMap::new();
    let mut component_work: BTreeMap<String, (String, Instant)> = BTreeMap::new();
    // The version each component (by uid) was installed at by us.
    let mut installed_components: BTreeMap<String, String> = BTreeMap::new();
    let mut known_dogus: BTreeSet<String> = BTreeSet::new();
    loop {
        // The earliest moment a finished piece of work may report its start (see below).
        let mut next_second: Option<Instant> = None;
        // The dogus whose work is done but waits for that moment: `next_second` is when they are due.
        let mut waiting_for_second: BTreeSet<String> = BTreeSet::new();
        // Dogus.
        let current: BTreeMap<String, Arc<Dogu>> =
            dogus.state().iter().filter_map(|d| d.object().cloned()).map(|d| (d.name_any(), d)).collect();
        for gone in known_dogus.difference(&current.keys().cloned().collect()).cloned().collect::<Vec<_>>() {
            // The dogu operator removes a deleted dogu's config.
            let _ = config_api.delete(&format!("{gone}-config"), &DeleteParams::default()).await;
            let _ = secret_api.delete(&format!("{gone}-config"), &DeleteParams::default()).await;
            dogu_work.remove(&gone);
        }
        known_dogus = current.keys().cloned().collect();
        let uids: BTreeSet<String> = current.values().filter_map(|d| d.metadata.uid.clone()).collect();
        finished.retain(|uid, _| uids.contains(uid));
        for (name, dogu) in &current {
            let uid = dogu.metadata.uid.clone().unwrap_or_default();
            let mut status = dogu.status.clone().unwrap_or_default();
            if let Some((version, started)) = finished.get(&uid)
                && *version == dogu.spec.version
                && (status.installed_version.as_deref() != Some(version.as_str())
                    || status.started_at.as_ref().is_none_or(|s| s < started))
            {
                // The cache lags behind our own status write.
                status.installed_version = Some(version.clone());
                status.started_at = Some(started.clone());
                status.status = Some("installed".into());
            }
            let paused = dogu.spec.pause_reconciliation == Some(true);
            let installed_version = status.installed_version.clone().unwrap_or_default();
            let config_changed = !installed_version.is_empty()
                && config_times(&configs, &secrets, name)
                    .into_iter()
                    // Write times are whole seconds: a start in the write's second may have preceded it.
                    .any(|t| status.started_at.as_ref().is_none_or(|s| s.0.as_second() <= t.0.as_second()));
            let wanted = if installed_version != dogu.spec.version {
                Some(Work::Install { version: dogu.spec.version.clone() })
            } else if config_changed {
                Some(Work::Restart)
            } else {
                None
            };
            // Paused: nothing new starts; what already began (a pod already restarting, an upgrade
            // already rolled out) runs to its end, as it does in a cluster. The pause can reach this
            // operator's cache after the config write it was meant to precede.
            let in_progress = wanted.as_ref().is_some_and(|w| dogu_work.get(name).is_some_and(|(begun, _)| begun == w));
            match (wanted, paused && !in_progress) {
                (None, _) => {
                    dogu_work.remove(name);
                    if status.health.as_deref() != Some(health_of(&behaviour, name)) && !installed_version.is_empty() {
                        let _ = dogu_api
                            .patch_status(
                                name,
                                &params,
                                &Patch::Merge(json!({"status": {"health": health_of(&behaviour, name)}})),
                            )
                            .await;
                    }
                }
                (Some(_), true) => {} // paused: nothing moves
                (Some(work), false) => {
                    let started = match dogu_work.get(name) {
                        Some((existing, since)) if *existing == work => *since,
                        _ => {
                            let since = Instant::now();
                            dogu_work.insert(name.clone(), (work.clone(), since));
                            let phase = match &work {
                                Work::Install { .. } if installed_version.is_empty() => "installing",
                                Work::Install { .. } => "upgrading",
                                Work::Restart => "restarting",
                            };
                            let health = match &work {
                                Work::Restart if behaviour.rolling_restarts => health_of(&behaviour, name),
                                _ => "",
                            };
                            let _ = dogu_api
                                .patch_status(
                                    name,
                                    &params,
                                    &Patch::Merge(json!({"status": {"status": phase, "health": health}})),
                                )
                                .await;
                            since
                        }
                    };
                    let delay = match &work {
                        Work::Install { .. } if installed_version.is_empty() => behaviour.install,
                        Work::Install { .. } => behaviour.upgrade,
                        Work::Restart => behaviour.restart,
                    };
                    if behaviour.failing_installs.contains(name) {
                        if status.status.as_deref() != Some("installation failed") {
                            let _ = dogu_api
                                .patch_status(
                                    name,
                                    &params,
                                    &Patch::Merge(
                                        json!({"status": {"status": "installation failed", "health": "unavailable"}}),
                                    ),
                                )
                                .await;
                        }
                        continue;
                    }
                    // A dogu (re)starts reading its config: it reports a start in a later second than
                    // the config's last write, as a real one does (a restart takes seconds). Else a
                    // restart ending in the second of the write would be taken for one that preceded
                    // it (D45), and restarted again: every dogu restarted twice per config change.
                    let config_read = config_times(&configs, &secrets, name).into_iter().max();
                    let wait_for_second = config_read.and_then(|written| after_the_second_of(&written, (clock)()));
                    if let Some(wait) = wait_for_second.filter(|_| Instant::now() >= started + delay) {
                        next_second =
                            Some(next_second.map_or(Instant::now() + wait, |d: Instant| d.min(Instant::now() + wait)));
                        waiting_for_second.insert(name.clone());
                    } else if Instant::now() >= started + delay {
                        let version = match &work {
                            Work::Install { version } => version.clone(),
                            Work::Restart => installed_version.clone(),
                        };
                        let started_at = now();
                        finished.insert(uid.clone(), (version.clone(), started_at.clone()));
                        let _ = dogu_api
                            .patch_status(
                                name,
                                &params,
                                &Patch::Merge(json!({"status": {
                                    "status": "installed",
                                    "installedVersion": version,
                                    "health": health_of(&behaviour, name),
                                    "startedAt": started_at,
                                }})),
                            )
                            .await;
                        dogu_work.remove(name);
                    }
                }
            }
        }

        // Components.
        let component_uids: BTreeSet<String> =
            components.state().iter().filter_map(|c| c.object()?.metadata.uid.clone()).collect();
        installed_components.retain(|uid, _| component_uids.contains(uid));
        for component in components.state().iter().filter_map(|c| c.object().cloned()) {
            let name = component.name_any();
            let uid = component.metadata.uid.clone().unwrap_or_default();
            let status = component.status.clone().unwrap_or_default();
            // Installed already: as the cache shows, or (the cache lagging behind our own status
            // write) as we wrote it; taking a lagging cache for new work would mark an installed
            // component as installing again.
            if status.installed_version.as_deref() == Some(component.spec.version.as_str())
                || installed_components.get(&uid) == Some(&component.spec.version)
            {
                component_work.remove(&name);
                continue;
            }
            let since = match component_work.get(&name) {
                Some((version, since)) if *version == component.spec.version => *since,
                _ => {
                    let since = Instant::now();
                    component_work.insert(name.clone(), (component.spec.version.clone(), since));
                    let phase = if status.installed_version.is_none() { "installing" } else { "upgrading" };
                    let _ = component_api
                        .patch_status(&name, &params, &Patch::Merge(json!({"status": {"status": phase, "health": ""}})))
                        .await;
                    since
                }
            };
            if behaviour.failing_installs.contains(&name) {
                continue;
            }
            let delay = if status.installed_version.is_none() { behaviour.install } else { behaviour.upgrade };
            if Instant::now() >= since + delay {
                let done = json!({"status": {"status": "installed", "installedVersion": component.spec.version, "health": "available"}});
                if component_api.patch_status(&name, &params, &Patch::Merge(done)).await.is_ok() {
                    component_work.remove(&name);
                    installed_components.insert(uid, component.spec.version.clone());
                    let _ = installed.send((name.clone(), component.spec.version.clone()));
                } else {
                    // Tried again after another install's time, not at once.
                    component_work.insert(name.clone(), (component.spec.version.clone(), Instant::now()));
                }
            }
        }

        // Sleep until the next piece of work is due or something changes.
        // (A dogu waiting for the next second is not due at its work's end, which has passed: that
        // would wake this loop at once, again and again, and a paused clock would never advance.)
        let due = dogu_work
            .iter()
            .filter(|(name, _)| !waiting_for_second.contains(*name))
            .map(|(name, (work, since))| {
                let delay = match work {
                    Work::Install { .. }
                        if current.get(name).and_then(|d| d.status.as_ref()?.installed_version.as_ref()).is_none() =>
                    {
                        behaviour.install
                    }
                    Work::Install { .. } => behaviour.upgrade,
                    Work::Restart => behaviour.restart,
                };
                *since + delay
            })
            .chain(component_work.values().map(|(_, since)| *since + behaviour.install.max(behaviour.upgrade)))
            .chain(next_second)
            .min();
        match due {
            Some(due) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(due) => {}
                    _ = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
    }
}

/// How long until the second after `written` begins, if `now` is not past it yet.
fn after_the_second_of(written: &Time, now: Timestamp) -> Option<Duration> {
    let next_second = written.0.as_second() + 1;
    let left = next_second as i128 * 1_000_000_000 - now.as_nanosecond();
    (left > 0).then(|| Duration::from_nanos(left as u64))
}

fn health_of<'a>(behaviour: &Behaviour, name: &str) -> &'a str {
    if behaviour.never_healthy.contains(name) { "unavailable" } else { "available" }
}

/// When the dogu's config objects (global, its own, its sensitive) were last written.
fn config_times(configs: &Store<Decoded<ConfigMap>>, secrets: &Store<Decoded<Secret>>, dogu: &str) -> Vec<Time> {
    let mut times = Vec::new();
    for map in configs.state() {
        match config_target(map.meta()) {
            Some(ConfigTarget::Global) => times.extend(last_updated(map.meta())),
            Some(ConfigTarget::Dogu(d)) if d == dogu => times.extend(last_updated(map.meta())),
            _ => {}
        }
    }
    for secret in secrets.state() {
        if let Some(ConfigTarget::Sensitive(d)) = config_target(secret.meta())
            && d == dogu
        {
            times.extend(last_updated(secret.meta()));
        }
    }
    times
}

/// A reflector store, kept current by a spawned watch that wakes the operators on every change.
fn reflect<K>(client: &Client, namespace: &str, config: watcher::Config, wake: Arc<Notify>) -> Store<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (reader, writer) = reflector::store();
    let api = Api::<K>::namespaced(client.clone(), namespace);
    // Every event wakes the operators, `InitDone` included: a list's objects appear in the store only
    // at its end, so waking on the listed objects alone could leave the operators looking at the store
    // before the list (they then slept until the next change; seen as a rare stall on a real server).
    let stream = reflector::reflector(writer, watcher(api, config)).default_backoff();
    tokio::spawn(async move {
        stream
            .for_each(|_| {
                wake.notify_one();
                async {}
            })
            .await;
    });
    reader
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_ends_in_the_second_after_the_config_write() {
        let written = Time("2026-12-04T10:00:05Z".parse().unwrap());
        let at = |text: &str| text.parse::<Timestamp>().unwrap();
        assert_eq!(after_the_second_of(&written, at("2026-12-04T10:00:05.7Z")), Some(Duration::from_millis(300)));
        assert_eq!(after_the_second_of(&written, at("2026-12-04T10:00:05Z")), Some(Duration::from_secs(1)));
        assert_eq!(after_the_second_of(&written, at("2026-12-04T10:00:06Z")), None);
    }
}
