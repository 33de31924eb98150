//! Secret references of sensitive config entries, resolved to digests.

use std::collections::{BTreeMap, BTreeSet};

use crate::diff::ResolvedSecrets;
use crate::observation::ReferencedSecret;
use crate::problem::Problem;
use crate::validation::EffectiveBlueprint;

/// The Secrets the effective blueprint reads sensitive values from.
pub(crate) fn referenced_secret_names(effective: &EffectiveBlueprint<'_>) -> BTreeSet<String> {
    references(effective).map(|(_, _, r)| r.name.clone()).collect()
}

fn references<'e, 'a>(
    effective: &'e EffectiveBlueprint<'a>,
) -> impl Iterator<Item = (&'a str, &'a str, &'a crate::api::SecretReference)> + 'e {
    effective.config.dogus.iter().flat_map(|(dogu, entries)| {
        entries.iter().filter(|e| e.sensitive && !e.absent).filter_map(move |e| e.secret_ref.map(|r| (*dogu, e.key, r)))
    })
}

/// Resolves every reference; the problem lists every missing Secret and key.
pub(crate) fn resolve<'a>(
    effective: &EffectiveBlueprint<'a>,
    secrets: &'a BTreeMap<String, ReferencedSecret>,
) -> (ResolvedSecrets<'a>, Option<Problem>) {
    let mut resolved = ResolvedSecrets::new();
    let mut missing_secrets = BTreeSet::new();
    let mut problems = Vec::new();
    for (dogu, key, reference) in references(effective) {
        match secrets.get(&reference.name) {
            Some(ReferencedSecret::Present { keys }) => match keys.get(&reference.key) {
                Some(digest) => {
                    resolved.insert((dogu, key), digest);
                }
                None => problems.push(Problem::new(format!(
                    "referenced key \"{}\" in secret \"{}\" does not exist",
                    reference.key, reference.name
                ))),
            },
            Some(ReferencedSecret::Unreadable) => {
                if missing_secrets.insert(reference.name.clone()) {
                    problems.push(Problem::new(format!(
                        "referenced secret \"{}\" cannot be read: it does not fit the Secret type",
                        reference.name
                    )));
                }
            }
            Some(ReferencedSecret::Missing) | None => {
                if missing_secrets.insert(reference.name.clone()) {
                    problems.push(Problem::new(format!("referenced secret \"{}\" does not exist", reference.name)));
                }
            }
        }
    }
    let problem = Problem::wrap_all("could not load sensitive config via references", problems)
        .map(|p| Problem::wrap("could not load referenced sensitive config", vec![p]));
    (resolved, problem)
}
