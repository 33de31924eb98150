//! Ecosystem health: every Dogu CR and every Component CR must report `available`, and every required
//! component (from the health config) must be installed. The ignore flags drop a whole side.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::model::{Flags, Installed};
use crate::problem::Problem;

const AVAILABLE: &str = "available";

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Health {
    Healthy,
    Unhealthy {
        dogus: Vec<String>,
        components: Vec<String>,
    },
    /// Health could not be determined (the health config is malformed).
    Unknown(Problem),
}

impl Health {
    pub(crate) fn evaluate(
        installed: &Installed<'_>,
        health_config: Option<&BTreeMap<String, String>>,
        flags: Flags,
    ) -> Self {
        let dogus: Vec<String> = if flags.ignore_dogu_health {
            Vec::new()
        } else {
            installed.dogu_health.iter().filter(|(_, h)| **h != AVAILABLE).map(|(n, _)| (*n).to_owned()).collect()
        };
        let components: Vec<String> = if flags.ignore_component_health {
            Vec::new()
        } else {
            let required = match required_components(health_config) {
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
            Health::Healthy
        } else {
            Health::Unhealthy { dogus, components }
        }
    }

    /// The names listed in the unhealthy message.
    pub(crate) fn unhealthy_summary(dogus: &[String], components: &[String]) -> String {
        format!(
            "  {} dogu(s) are unhealthy: {}\n  {} component(s) are unhealthy: {}",
            dogus.len(),
            dogus.join(", "),
            components.len(),
            components.join(", ")
        )
    }
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
