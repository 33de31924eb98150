//! Ecosystem health: every Dogu CR and every Component CR must report `available`, and every required
//! component (from the health config) must be installed. The ignore flags drop a whole side.
//!
//! An unhealthy object is either *at work* (being installed, upgraded, or restarted for a config
//! write: the dogu or component operator is busy with it, usually because of this blueprint's apply)
//! or *faulty* (it runs what its CR asks for and still is not available, or it is missing). Only a
//! faulty one is a fault worth a Warning (docs/differences.md D55).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::model::{Flags, Installed};
use crate::observation::Observation;
use crate::problem::Problem;

const AVAILABLE: &str = "available";

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Health {
    Healthy,
    Unhealthy(Unhealthy),
    /// Health could not be determined (the health config is malformed).
    Unknown(Problem),
}

/// The unhealthy dogus and components, by name, sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Unhealthy {
    pub dogus: Vec<String>,
    pub components: Vec<String>,
    /// Of those, the ones their operator is busy with (installing, upgrading, restarting).
    pub at_work: Vec<String>,
}

impl Unhealthy {
    /// Every unhealthy object is at work: the apply in progress explains the unhealthiness.
    pub(crate) fn all_at_work(&self) -> bool {
        self.dogus.iter().chain(&self.components).all(|name| self.at_work.contains(name))
    }

    /// What a health check finds right after these objects were created: none reports a health yet, and
    /// its operator is at work on each (an install).
    pub(crate) fn just_created(mut dogus: Vec<String>, mut components: Vec<String>) -> Self {
        dogus.sort();
        components.sort();
        let at_work = dogus.iter().chain(&components).cloned().collect();
        Unhealthy { dogus, components, at_work }
    }

    /// The lines of the condition's message: one per side that has unhealthy objects.
    pub(crate) fn summary(&self) -> String {
        summary(&self.dogus, &self.components)
    }

    /// The same, of the faulty objects only (the Warning names those).
    pub(crate) fn faulty_summary(&self) -> String {
        let faulty =
            |names: &[String]| -> Vec<String> { names.iter().filter(|n| !self.at_work.contains(n)).cloned().collect() };
        summary(&faulty(&self.dogus), &faulty(&self.components))
    }
}

/// `  2 dogu(s) are unhealthy: a, b` and `  1 component(s) are unhealthy: c`, a side without any left
/// out (upstream prints `0 component(s) are unhealthy: ` with nothing after the colon).
fn summary(dogus: &[String], components: &[String]) -> String {
    let mut lines = Vec::new();
    if !dogus.is_empty() {
        lines.push(format!("  {} dogu(s) are unhealthy: {}", dogus.len(), dogus.join(", ")));
    }
    if !components.is_empty() {
        lines.push(format!("  {} component(s) are unhealthy: {}", components.len(), components.join(", ")));
    }
    lines.join("\n")
}

impl Health {
    pub(crate) fn evaluate(installed: &Installed<'_>, observation: &Observation, flags: Flags) -> Self {
        let dogus: Vec<String> = if flags.ignore_dogu_health {
            Vec::new()
        } else {
            installed.dogu_health.iter().filter(|(_, h)| **h != AVAILABLE).map(|(n, _)| (*n).to_owned()).collect()
        };
        let components: Vec<String> = if flags.ignore_component_health {
            Vec::new()
        } else {
            let required = match required_components(observation.health_config.as_ref()) {
                Ok(required) => required,
                Err(problem) => return Health::Unknown(problem),
            };
            let mut unhealthy: Vec<String> = installed
                .component_health
                .iter()
                .filter(|(_, h)| **h != AVAILABLE)
                .map(|(n, _)| (*n).to_owned())
                .collect();
            unhealthy.extend(required.into_iter().filter(|r| !installed.component_health.contains_key(r.as_str())));
            unhealthy.sort();
            unhealthy.dedup();
            unhealthy
        };
        if dogus.is_empty() && components.is_empty() {
            return Health::Healthy;
        }
        let dogus_at_work = dogus.iter().filter(|name| dogu_at_work(installed, observation, name));
        let components_at_work = components.iter().filter(|name| component_at_work(installed, name));
        let at_work = dogus_at_work.chain(components_at_work).cloned().collect();
        Health::Unhealthy(Unhealthy { dogus, components, at_work })
    }
}

/// The dogu operator is busy with this dogu: it does not run its CR's version yet (installing,
/// upgrading), or it started before the last write of its config (the restart that write causes is
/// due). A dogu whose CR cannot be read is not known to be at work.
fn dogu_at_work(installed: &Installed<'_>, observation: &Observation, name: &str) -> bool {
    installed.dogus.get(name).is_some_and(|dogu| !crate::up_to_date::runs_what_it_was_asked(dogu, observation))
}

/// The component operator is busy with this component: it does not run its CR's version yet. A
/// required component without a CR is missing, not at work.
fn component_at_work(installed: &Installed<'_>, name: &str) -> bool {
    installed.components.get(name).is_some_and(|c| c.installed_version.as_ref() != Some(&c.version))
}

#[derive(Deserialize)]
struct ComponentsSection {
    #[serde(default)]
    required: Vec<RequiredComponent>,
}

#[derive(Deserialize)]
struct RequiredComponent {
    name: String,
}

/// Components that must be installed, from the `components` key of the health ConfigMap. (Its `wait`
/// key configured a blocking wait upstream no longer has; it is ignored.)
fn required_components(config: Option<&BTreeMap<String, String>>) -> Result<Vec<String>, Problem> {
    let Some(text) = config.and_then(|c| c.get("components")) else {
        return Ok(Vec::new());
    };
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let section: ComponentsSection = serde_saphyr::from_str(text).map_err(|e| {
        Problem::wrap(
            "cannot retrieve required components",
            vec![Problem::new(format!(
                "failed to parse component health config in ConfigMap \"{}\": {e}",
                crate::naming::HEALTH_CONFIG
            ))],
        )
    })?;
    Ok(section.required.into_iter().map(|r| r.name).collect())
}
