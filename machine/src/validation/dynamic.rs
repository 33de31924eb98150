//! Dynamic validation: checks that need the wanted dogus' descriptors (`dogu.json`): dependencies and
//! additional mounts; and the one that needs the installed dogus: a storage class is set at install
//! and cannot change.

use std::collections::{BTreeMap, BTreeSet};

use super::effective::EffectiveBlueprint;
use crate::model::by_name::ByName;
use crate::model::{DoguDescriptor, TargetDogu, VersionConstraint};
use crate::model::{DoguPairs, InstalledDogu};
use crate::observation::{DescriptorEntry, DescriptorLookup, ProvidedDependency};
use crate::problem::Problem;

/// Dependencies that single-node installations needed and that no blueprint lists.
const EXEMPT_DEPENDENCIES: [&str; 2] = ["registrator", "nginx"];

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Validity {
    Valid,
    /// Dependencies or mounts are not satisfied.
    Invalid(Problem),
    /// The registry has no descriptor for at least one wanted dogu (version).
    DescriptorsNotFound(Problem),
    /// Descriptors could not be loaded; validity is unknown.
    DescriptorsUnavailable(Problem),
}

/// `provided`: dependencies the platform provides without the dogu (feature flags); `pairs`: the
/// wanted dogus with their installed Dogu CRs.
pub(crate) fn validate(
    effective: &EffectiveBlueprint,
    descriptors: &[DescriptorEntry],
    provided: &BTreeSet<ProvidedDependency>,
    pairs: &DoguPairs<'_>,
) -> Validity {
    // The shell looks the descriptors up in the order of the wanted dogus: each is found at its dogu's
    // position. Only where that is not so (a recorded observation of another build, a test) are they
    // looked up in an index, keyed by (namespace, simple name, version) so that lookups need no
    // formatting (and no hashing: a B-tree of borrowed keys is cheaper for the sizes blueprints have).
    let index = std::cell::OnceCell::new();
    let lookup = |position: usize, key: (&str, &str, &str)| {
        let at_position = descriptors.get(position).filter(|e| {
            e.version == key.2 && e.name.split_once('/').is_some_and(|(ns, simple)| (ns, simple) == (key.0, key.1))
        });
        match at_position {
            Some(entry) => Some(&entry.lookup),
            None => {
                let index: &BTreeMap<(&str, &str, &str), &DescriptorLookup> = index.get_or_init(|| {
                    descriptors
                        .iter()
                        .filter_map(|e| {
                            e.name.split_once('/').map(|(ns, simple)| ((ns, simple, e.version.as_str()), &e.lookup))
                        })
                        .collect()
                });
                index.get(&key).copied()
            }
        }
    };
    let wanted: Vec<&TargetDogu> = effective.wanted_dogus().collect();

    let mut found: Vec<(&TargetDogu, &DoguDescriptor)> = Vec::with_capacity(wanted.len());
    let mut not_found = Vec::new();
    let mut unavailable = Vec::new();
    for (position, dogu) in wanted.iter().enumerate() {
        let name = &dogu.name;
        let version = dogu.version.as_ref().map(|v| v.raw()).unwrap_or("");
        match lookup(position, (name.namespace.as_str(), name.simple.as_str(), version)) {
            Some(DescriptorLookup::Found { descriptor }) => found.push((dogu, &**descriptor)),
            Some(DescriptorLookup::NotFound) => {
                not_found.push(Problem::new(format!("dogu \"{name}\" with version \"{version}\" could not be found")))
            }
            Some(DescriptorLookup::Unavailable { reason }) => unavailable
                .push(Problem::new(format!("failed to get dogu \"{name}\" with version \"{version}\": {reason}"))),
            None => unavailable.push(Problem::new(format!(
                "failed to get dogu \"{name}\" with version \"{version}\": the descriptor was not looked up"
            ))),
        }
    }
    if let Some(problem) =
        Problem::wrap_all("remote dogu registry has no dogu specification for at least one wanted dogu", not_found)
    {
        return Validity::DescriptorsNotFound(problem);
    }
    if let Some(problem) = Problem::wrap_all(
        "cannot load dogu specifications from remote registry for dogu dependency validation",
        unavailable,
    ) {
        return Validity::DescriptorsUnavailable(problem);
    }

    // Every dogu's dependencies are looked up by name: a sorted list keeps that linear in the blueprint
    // (the wanted dogus are mostly in name order already, which the sort only walks).
    let by_name = ByName::collect(wanted.iter().map(|w| (w.name.simple.as_str(), *w)).collect());
    let problems: Vec<Problem> = [
        Problem::wrap_all(
            "dependencies are not satisfied in effective blueprint",
            found
                .iter()
                .filter_map(|(dogu, descriptor)| dependency_problems(dogu, descriptor, &by_name, provided))
                .collect(),
        ),
        Problem::wrap_all(
            "additionalMounts are invalid in effective blueprint",
            found.iter().flat_map(|(dogu, descriptor)| mount_problems(dogu, descriptor)).collect(),
        ),
        Problem::wrap_all(
            "storage classes are invalid in effective blueprint",
            pairs.wanted().filter_map(|(dogu, installed)| storage_class_problem(dogu, installed?)).collect(),
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    match Problem::wrap_all("blueprint spec is invalid", problems) {
        Some(problem) => Validity::Invalid(problem),
        None => Validity::Valid,
    }
}

/// A wanted dogu that is installed must want the storage class it was installed with: the class of a
/// volume cannot change (absent and `""` differ: the cluster's default class, or none).
fn storage_class_problem(dogu: &TargetDogu, installed: &InstalledDogu<'_>) -> Option<Problem> {
    let (wanted, actual) = (dogu.storage_class.as_deref(), installed.storage_class);
    if wanted == actual {
        return None;
    }
    let shown = |class: Option<&str>| match class {
        None => "none (the cluster's default class)".to_owned(),
        Some(class) => format!("{class:?}"),
    };
    let fix = match actual {
        None => "remove storageClassName from the blueprint".to_owned(),
        Some(class) => format!("set storageClassName: {class:?} in the blueprint"),
    };
    Some(Problem::new(format!(
        "wanted dogu \"{}\"'s storage class differs from installed dogu: {} != {}: it is set at install and cannot change ({fix})",
        dogu.name,
        shown(wanted),
        shown(actual)
    )))
}

fn dependency_problems(
    dogu: &TargetDogu,
    descriptor: &DoguDescriptor,
    wanted: &ByName<'_, &TargetDogu>,
    provided: &BTreeSet<ProvidedDependency>,
) -> Option<Problem> {
    let mut problems = Vec::new();
    for dependency in descriptor.dependencies.iter().filter(|d| d.is_dogu()) {
        let name = dependency.name.as_str();
        if EXEMPT_DEPENDENCIES.contains(&name) || provided.iter().any(|p| p.dogu() == name) {
            continue;
        }
        let Some(present) = wanted.get(dependency.name.as_str()) else {
            problems.push(Problem::new(format!(
                "dependency '{}' in version '{}' is not a present dogu in the effective blueprint",
                dependency.name, dependency.version
            )));
            continue;
        };
        let Some(version) = &present.version else {
            continue;
        };
        match VersionConstraint::parse(&dependency.version) {
            Err(e) => problems.push(Problem::wrap(
                format!(
                    "failed to parse version comparator of version {} for dogu dependency {}",
                    dependency.version, present.name
                ),
                vec![e],
            )),
            Ok(constraint) if !constraint.allows(version) => problems.push(Problem::new(format!(
                "parsed version {} does not fulfill version requirement of {} dogu {}",
                version, dependency.version, present.name
            ))),
            Ok(_) => {}
        }
    }
    if problems.is_empty() {
        // Not formatted for the many dogus whose dependencies are satisfied (every reconcile).
        return None;
    }
    Problem::wrap_all(format!("dependencies for dogu '{}' are not satisfied in blueprint", dogu.name), problems)
}

fn mount_problems(dogu: &TargetDogu, descriptor: &DoguDescriptor) -> Vec<Problem> {
    if dogu.mounts.is_empty() {
        return Vec::new();
    }
    let allowed: Vec<&str> =
        descriptor.volumes.iter().filter(|v| v.clients.is_empty()).map(|v| v.name.as_str()).collect();
    dogu.mounts
        .iter()
        .filter(|m| !allowed.contains(&m.volume.as_str()))
        .map(|m| {
            let quoted: Vec<String> = allowed.iter().map(|a| format!("{a:?}")).collect();
            Problem::new(format!(
                "volume \"{}\" in additional mount for dogu \"{}\" is invalid because either the volume does not exist or it has volume clients. It needs to be one of [{}]",
                m.volume,
                dogu.name,
                quoted.join(" ")
            ))
        })
        .collect()
}
