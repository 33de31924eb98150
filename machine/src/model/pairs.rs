//! The effective blueprint's dogus, each beside the Dogu CR installed for it: found once per reconcile
//! for every check that walks the wanted dogus (validation of storage classes, the diff, the pause and
//! completion checks). Each of them looked every dogu up by name: at 5,000 dogus four B-tree lookups
//! per dogu were two fifths of a steady reconcile.

use super::{Installed, InstalledDogu, TargetDogu};
use crate::validation::EffectiveBlueprint;

/// Each dogu of the effective blueprint (absent ones too, in blueprint order) with its readable Dogu CR,
/// if there is one; and what else is installed.
#[derive(Debug)]
pub(crate) struct DoguPairs<'a> {
    pairs: Vec<(&'a TargetDogu, Option<&'a InstalledDogu<'a>>)>,
    installed: &'a Installed<'a>,
}

impl<'a> DoguPairs<'a> {
    pub(crate) fn pair(effective: &'a EffectiveBlueprint<'_>, installed: &'a Installed<'a>) -> Self {
        // The blueprint's dogus are usually in name order, as the Dogu CRs are: one walk finds them.
        let mut installed_dogus = installed.dogus.in_order();
        let pairs =
            effective.dogus.iter().map(|target| (target, installed_dogus.get(target.name.simple.as_str()))).collect();
        DoguPairs { pairs, installed }
    }

    /// Every dogu of the effective blueprint, absent ones too, with its Dogu CR.
    pub(crate) fn all(&self) -> impl Iterator<Item = (&'a TargetDogu, Option<&'a InstalledDogu<'a>>)> + '_ {
        self.pairs.iter().copied()
    }

    /// The dogus that must be installed, with their Dogu CRs.
    pub(crate) fn wanted(&self) -> impl Iterator<Item = (&'a TargetDogu, Option<&'a InstalledDogu<'a>>)> + '_ {
        self.all().filter(|(target, _)| !target.absent)
    }

    /// Everything read from the Dogu and Component CRs.
    pub(crate) fn installed(&self) -> &'a Installed<'a> {
        self.installed
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::fixtures;
    use crate::reading::Reading;

    fn paired_names(blueprint_order: &[&str], installed: &[&str]) -> Vec<(String, Option<String>)> {
        let dogus: Vec<String> =
            blueprint_order.iter().map(|n| format!("{{name: official/{n}, version: 1.0.0}}")).collect();
        let blueprint = fixtures::blueprint(&format!("{{blueprint: {{dogus: [{}]}}}}", dogus.join(", ")));
        let reading = Reading::of(&blueprint, &[]);
        let read = reading.result.as_ref().expect("the blueprint reads");
        let crs: Vec<_> =
            installed.iter().map(|n| Arc::new(fixtures::dogu_cr(&format!("official/{n}"), "1.0.0"))).collect();
        let readings = crate::DoguReadings::of(&crs, Default::default());
        let installed = Installed::read(&crs, &readings, &[], &[]);
        let pairs = DoguPairs::pair(&read.effective, &installed);
        pairs.all().map(|(target, dogu)| (target.name.simple.clone(), dogu.map(|d| d.name.simple.clone()))).collect()
    }

    fn expected(blueprint_order: &[&str], installed: &[&str]) -> Vec<(String, Option<String>)> {
        blueprint_order.iter().map(|n| (n.to_string(), installed.contains(n).then(|| n.to_string()))).collect()
    }

    #[test]
    fn each_dogu_is_paired_with_its_own_cr_whatever_the_blueprint_order() {
        let installed = ["b", "d", "e", "x", "a0"];
        for order in [&["a", "b", "c", "d", "e"][..], &["e", "a", "d", "c", "b"], &["y", "z"], &["b"], &[]] {
            assert_eq!(paired_names(order, &installed), expected(order, &installed), "blueprint order {order:?}");
        }
        assert_eq!(paired_names(&["a", "b"], &[]), expected(&["a", "b"], &[]), "nothing installed");
    }
}
