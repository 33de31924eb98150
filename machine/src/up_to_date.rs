//! Whether the dogus the blueprint wants run what it wants: their installed version is the wanted one,
//! and they (re)started after their config (global, own, sensitive) was last written.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::model::{DoguPairs, InstalledDogu};
use crate::observation::Observation;

/// The wanted dogus that are not up to date yet, sorted.
pub(crate) fn stale_dogus(pairs: &DoguPairs<'_>, observation: &Observation) -> Vec<String> {
    let mut stale: Vec<String> = pairs
        .wanted()
        .filter(|(_, dogu)| !dogu.is_some_and(|dogu| runs_what_it_was_asked(dogu, observation)))
        .map(|(target, _)| target.name.simple.clone())
        .collect();
    stale.sort();
    stale
}

/// Whether the dogu runs the version its Dogu CR asks for and started after its config was last written.
pub(crate) fn runs_what_it_was_asked(dogu: &InstalledDogu<'_>, observation: &Observation) -> bool {
    runs_its_version(dogu) && !awaits_restart(dogu, observation)
}

/// Whether the dogu runs the version its Dogu CR asks for.
fn runs_its_version(dogu: &InstalledDogu<'_>) -> bool {
    dogu.installed_version.as_ref() == Some(&dogu.version)
}

/// Whether the dogu started before the last write of its config (global, its own, its sensitive):
/// the restart that write causes is still to come. A config object that does not exist has no time
/// and makes nothing stale.
fn awaits_restart(dogu: &InstalledDogu<'_>, observation: &Observation) -> bool {
    let name = dogu.name.simple.as_str();
    let config_times = [
        observation.global_config.last_updated(),
        observation.dogu_config(name).last_updated(),
        observation.sensitive_config(name).last_updated(),
    ];
    config_times.into_iter().flatten().any(|updated| started_before(dogu.started_at, updated))
}

/// Whether every wanted dogu runs the version its Dogu CR asks for (config times aside).
pub(crate) fn all_installed(pairs: &DoguPairs<'_>) -> bool {
    pairs.wanted().all(|(_, dogu)| dogu.is_some_and(runs_its_version))
}

/// A dogu that never reported a start is older than any config write. The API server records write
/// times in whole seconds (managedFields), so a start in the same second as the write may have come
/// before it: only a start in a later second shows the dogu runs what was written. (A restart caused
/// by the write itself ends seconds later; the dogu operator records whole seconds too.)
fn started_before(started_at: Option<&Time>, updated: &Time) -> bool {
    started_at.is_none_or(|started| started.0.as_second() <= updated.0.as_second())
}

#[cfg(test)]
mod tests {
    use super::started_before;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn at(text: &str) -> Time {
        Time(text.parse().unwrap())
    }

    /// Found on a real kube-apiserver: a config written at 12:00:05.7 is recorded as 12:00:05, and a
    /// dogu that started at 12:00:05.2, before the write, was taken for one running the new config.
    #[test]
    fn a_start_in_the_second_of_a_write_may_have_preceded_it() {
        let written = at("2026-01-01T12:00:05Z");
        assert!(started_before(Some(&at("2026-01-01T12:00:05.2Z")), &written));
        assert!(started_before(Some(&at("2026-01-01T12:00:05Z")), &written));
        assert!(started_before(Some(&at("2026-01-01T12:00:04.9Z")), &written));
        assert!(!started_before(Some(&at("2026-01-01T12:00:06Z")), &written), "a start a second later ran it");
        assert!(started_before(None, &written), "a dogu that never started");
    }
}
