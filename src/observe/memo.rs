//! The config objects' observations kept from one reconcile to the next, by `resourceVersion`.
//!
//! Parsing every config object's `config.yaml` was nine tenths of a steady-state reconcile's CPU in
//! the operator (`benches/observe.rs`: 0.64 ms of observation beside 0.05 ms of decision at 30 dogus,
//! 14 ms beside 2.7 ms at 1,000). An object that has not been written since carries the same
//! `resourceVersion`, and its observation depends on nothing else but the keys the blueprint fills
//! from Secrets (and the process's digester, fixed for its lifetime): such an observation is kept and
//! cloned instead of parsed. An object without a `resourceVersion` (a file given to `plan`) is always
//! parsed.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use blueprint_machine::observation::{ConfigObservation, SecretDigest};

/// The kept observations of both kinds of config objects. One per process: the observations of
/// sensitive config hold digests of the process's [`Digester`](super::Digester).
#[derive(Default)]
pub struct KeptConfigs {
    pub config_maps: ConfigMemo<String>,
    pub secrets: ConfigMemo<SecretDigest>,
}

/// The observations of the config objects of one kind (config ConfigMaps, or sensitive-config
/// Secrets), by object name.
pub struct ConfigMemo<V> {
    kept: Mutex<Kept<V>>,
}

struct Kept<V> {
    by_name: HashMap<String, Entry<V>>,
    /// The number of the latest pass; an entry not looked up in it is forgotten at its end.
    pass: u64,
}

struct Entry<V> {
    resource_version: String,
    filled: BTreeSet<String>,
    observation: Arc<ConfigObservation<V>>,
    /// The pass that looked it up last.
    seen: u64,
}

impl<V> Default for ConfigMemo<V> {
    fn default() -> Self {
        ConfigMemo { kept: Mutex::new(Kept { by_name: HashMap::new(), pass: 0 }) }
    }
}

impl<V> ConfigMemo<V> {
    /// Starts one observation of all objects of the kind: what it does not look up is forgotten when
    /// it ends (the object was deleted or lost its labels).
    pub fn pass(&self) -> Pass<'_, V> {
        let mut kept = self.kept.lock().expect("not poisoned");
        kept.pass += 1;
        Pass { kept }
    }
}

/// One observation of all config objects of a kind (it holds the memo: reconciles observe one at a
/// time, and an observation takes microseconds).
pub struct Pass<'m, V> {
    kept: MutexGuard<'m, Kept<V>>,
}

impl<V> Pass<'_, V> {
    /// The observation of the object `name` at `resource_version` with the blueprint filling `filled`
    /// from Secrets: the kept one when it was made of the same (shared, not copied), else `observe()`.
    pub fn observe(
        &mut self,
        name: &str,
        resource_version: Option<&str>,
        filled: &BTreeSet<String>,
        observe: impl FnOnce() -> ConfigObservation<V>,
    ) -> Arc<ConfigObservation<V>> {
        let Some(resource_version) = resource_version else { return Arc::new(observe()) };
        let pass = self.kept.pass;
        if let Some(entry) = self.kept.by_name.get_mut(name)
            && entry.resource_version == resource_version
            && entry.filled == *filled
        {
            entry.seen = pass;
            return entry.observation.clone();
        }
        let observation = Arc::new(observe());
        let entry = Entry {
            resource_version: resource_version.to_owned(),
            filled: filled.clone(),
            observation: observation.clone(),
            seen: pass,
        };
        self.kept.by_name.insert(name.to_owned(), entry);
        observation
    }
}

impl<V> Drop for Pass<'_, V> {
    fn drop(&mut self) {
        let pass = self.kept.pass;
        self.kept.by_name.retain(|_, entry| entry.seen == pass);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn present(value: &str) -> ConfigObservation<String> {
        ConfigObservation::Present {
            entries: [("key".to_owned(), value.to_owned())].into(),
            from_secrets: Default::default(),
            unrecorded: Default::default(),
            last_updated: None,
            resource_version: None,
        }
    }

    /// How often `observe` parsed, over the passes given as (name, version, filled key) lookups.
    fn parses(passes: &[&[(&str, Option<&str>, &str)]]) -> Vec<usize> {
        let memo = ConfigMemo::default();
        passes
            .iter()
            .map(|lookups| {
                let mut pass = memo.pass();
                let mut parsed = 0;
                for (name, version, filled) in *lookups {
                    let filled = BTreeSet::from_iter((!filled.is_empty()).then(|| filled.to_string()));
                    let observed = pass.observe(name, *version, &filled, || {
                        parsed += 1;
                        present(name)
                    });
                    assert_eq!(*observed, present(name));
                }
                parsed
            })
            .collect()
    }

    #[test]
    fn an_unchanged_object_is_parsed_once() {
        let same = [("a", Some("1"), ""), ("b", Some("2"), "")];
        assert_eq!(parses(&[&same, &same, &same]), [2, 0, 0]);
    }

    #[test]
    fn a_new_version_or_other_keys_from_secrets_are_parsed_again() {
        let first = [("a", Some("1"), ""), ("b", Some("2"), "")];
        let written = [("a", Some("3"), ""), ("b", Some("2"), "")];
        let filled = [("a", Some("3"), ""), ("b", Some("2"), "password")];
        assert_eq!(parses(&[&first, &written, &filled]), [2, 1, 1]);
    }

    #[test]
    fn an_object_without_a_version_is_always_parsed() {
        let file = [("a", None, "")];
        assert_eq!(parses(&[&file, &file]), [1, 1]);
    }

    /// A deleted object is forgotten: created again with a version it had once (an emulator that
    /// counts per object), it is parsed again.
    #[test]
    fn an_object_gone_for_one_pass_is_forgotten() {
        let both = [("a", Some("1"), ""), ("b", Some("1"), "")];
        let only_b = [("b", Some("1"), "")];
        assert_eq!(parses(&[&both, &only_b, &both]), [2, 0, 1]);
    }
}
