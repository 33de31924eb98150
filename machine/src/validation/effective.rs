//! The effective blueprint: the blueprint with the mask applied.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::api::BlueprintManifest;
use crate::model::{Config, ParsedBlueprint, TargetComponent, TargetDogu, written_list};
use crate::problem::Problem;

#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct EffectiveBlueprint<'a> {
    pub dogus: Vec<TargetDogu>,
    pub components: Vec<TargetComponent<'a>>,
    pub config: Config<'a>,
}

impl<'a> EffectiveBlueprint<'a> {
    /// Applies the mask. Static validation has already rejected masks that do not match.
    pub(crate) fn compute(blueprint: ParsedBlueprint<'a>) -> Result<Self, Problem> {
        let ParsedBlueprint { dogus, components, mut config, mask, flags, .. } = blueprint;
        // By name: the mask may be as long as the blueprint.
        let mask: BTreeMap<&str, _> = mask.iter().map(|m| (m.name.simple.as_str(), m)).collect();
        let dogus = dogus
            .into_iter()
            .map(|mut effective| {
                if let Some(masked) = mask.get(effective.name.simple.as_str()) {
                    if let Some(version) = &masked.version {
                        effective.version = Some(version.clone());
                    }
                    if masked.name.namespace != effective.name.namespace && flags.allow_dogu_namespace_switch {
                        effective.name.namespace = masked.name.namespace.clone();
                    }
                    effective.absent = masked.absent;
                    if masked.absent {
                        config.dogus.remove(effective.name.simple.as_str());
                    }
                }
                effective
            })
            .collect::<Vec<_>>();

        let present: BTreeSet<&str> = dogus.iter().filter(|e| !e.absent).map(|e| e.name.simple.as_str()).collect();
        let problems: Vec<Problem> = config
            .dogus
            .keys()
            .filter(|d| !present.contains(**d))
            .map(|d| {
                Problem::new(format!(
                    "setting config for dogu \"{d}\" is not allowed as it will not be installed with the blueprint"
                ))
            })
            .collect();
        if let Some(problem) = Problem::join(problems) {
            return Err(problem);
        }
        Ok(EffectiveBlueprint { dogus, components, config })
    }

    /// Dogus that must be installed.
    pub(crate) fn wanted_dogus(&self) -> impl Iterator<Item = &TargetDogu> {
        self.dogus.iter().filter(|d| !d.absent)
    }

    /// Whether `written` (a stored `status.effectiveBlueprint`) is what [`to_api`](Self::to_api)
    /// writes, compared without building it: in a steady state it is, and building the manifest
    /// (a string per dogu name, version, config key and value) was a quarter of a reconcile.
    pub(crate) fn written_as(&self, written: &BlueprintManifest) -> bool {
        let dogus_match =
            written_list(self.dogus.iter(), written.dogus.as_ref().map(|d| d.iter()), |dogu, w| dogu.written_as(w));
        let components_match =
            written_list(self.components.iter(), written.components.as_ref().map(|c| c.iter()), |component, w| {
                component.to_api() == *w
            });
        dogus_match && components_match && self.config.written_as(written.config.as_ref())
    }

    /// The manifest of `status.effectiveBlueprint`: the first of `candidates` (the stored one, the
    /// spec's), shared, that is what this one writes (nothing is built then); otherwise built.
    pub(crate) fn to_api_reusing<'m>(
        &self,
        candidates: impl IntoIterator<Item = &'m Arc<BlueprintManifest>>,
    ) -> Arc<BlueprintManifest> {
        match candidates.into_iter().find(|candidate| self.written_as(candidate)) {
            Some(written) => Arc::clone(written),
            None => Arc::new(self.to_api()),
        }
    }

    pub(crate) fn to_api(&self) -> BlueprintManifest {
        BlueprintManifest {
            dogus: (!self.dogus.is_empty()).then(|| self.dogus.iter().map(TargetDogu::to_api).collect()),
            components: (!self.components.is_empty())
                .then(|| self.components.iter().map(TargetComponent::to_api).collect()),
            config: self.config.to_api(),
        }
    }
}
