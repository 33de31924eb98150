//! Which keys of a normal config object (a ConfigMap) hold values copied from a Secret: a `secretRef`
//! without `sensitive` puts a Secret's value into the normal config (API v3). Such a value must never
//! be shown (not in an observation, the state diff, a journal or a log), also after the blueprint has
//! stopped filling the key from the Secret. So the object itself records the keys, in an annotation
//! the operator writes in the same write as the values; the observer digests those keys' values like
//! sensitive ones. (docs/differences.md D52)
//!
//! Pure functions shared by the observer (read the annotation), the executor and the property tests'
//! model (how a write changes it).

use std::collections::{BTreeMap, BTreeSet};

use crate::config_format::{self, ConfigError};

/// The annotation of a config ConfigMap: a JSON list of the (flattened, `a/b`) keys whose values came
/// from a Secret. Absent: none did.
pub const ANNOTATION: &str = "blueprint-operator.k8s.cloudogu.com/keys-from-secrets";

/// The keys the annotation names, normalized as stored (a hand-written `/a/b` is `a/b`).
pub fn parse(text: &str) -> Result<BTreeSet<String>, String> {
    let names: Vec<String> =
        serde_json::from_str(text).map_err(|_| format!("annotation {ANNOTATION} is not a JSON list of config keys"))?;
    Ok(names
        .iter()
        .map(|name| config_format::normalize_key(name).unwrap_or(name).to_owned())
        .filter(|key| !key.is_empty())
        .collect())
}

/// The annotation's value for these keys; `None`: the annotation is to be removed.
pub fn render(keys: &BTreeSet<String>) -> Option<String> {
    (!keys.is_empty()).then(|| serde_json::to_string(keys).expect("a set of strings serializes"))
}

/// One key a write sets.
pub struct Set<'a> {
    pub key: &'a str,
    pub value: String,
    /// The value was read from a Secret.
    pub from_secret: bool,
}

/// Applies a write to a config object's entries and to its keys from Secrets: a key set from a Secret
/// joins them, a key set to a plain value or removed leaves them, and a name without a key in the
/// object (removed by someone else) is dropped.
pub fn apply<'a>(
    entries: &mut BTreeMap<String, String>,
    from_secrets: &mut BTreeSet<String>,
    set: impl IntoIterator<Item = Set<'a>>,
    remove: impl IntoIterator<Item = &'a str> + Clone,
) -> Result<(), ConfigError> {
    let set: Vec<Set<'a>> = set.into_iter().collect();
    let mut filled = Vec::new();
    for entry in &set {
        let key = config_format::normalize_key(entry.key)?;
        if entry.from_secret {
            filled.push(key.to_owned());
        } else {
            from_secrets.remove(key);
        }
    }
    for key in remove.clone() {
        from_secrets.remove(config_format::normalize_key(key)?);
    }
    config_format::apply(entries, set.into_iter().map(|s| (s.key, s.value)), remove)?;
    from_secrets.extend(filled);
    from_secrets.retain(|key| entries.contains_key(key));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set<'a>(key: &'a str, value: &str, from_secret: bool) -> Set<'a> {
        Set { key, value: value.to_owned(), from_secret }
    }

    #[test]
    fn a_write_records_what_came_from_a_secret_and_forgets_what_no_longer_does() {
        let mut entries = BTreeMap::from([("stale".to_owned(), "x".to_owned())]);
        let mut from_secrets = BTreeSet::from(["gone".to_owned(), "stale".to_owned()]);
        apply(&mut entries, &mut from_secrets, [set("a/b", "s3cr3t", true), set("c", "plain", false)], []).unwrap();
        // `gone` names no key any more; `stale` still holds a value from a Secret.
        assert_eq!(from_secrets, BTreeSet::from(["a/b".to_owned(), "stale".to_owned()]));

        apply(&mut entries, &mut from_secrets, [set("/a/b", "now plain", false)], ["stale"]).unwrap();
        assert!(from_secrets.is_empty(), "{from_secrets:?}");
        assert_eq!(entries.get("a/b").map(String::as_str), Some("now plain"));
        assert_eq!(render(&from_secrets), None);
    }

    #[test]
    fn the_annotation_round_trips_and_garbage_is_an_error_naming_it() {
        let keys = BTreeSet::from(["a/b".to_owned(), "c".to_owned()]);
        let text = render(&keys).unwrap();
        assert_eq!(text, r#"["a/b","c"]"#);
        assert_eq!(parse(&text).unwrap(), keys);
        assert_eq!(parse(r#"["/a/b", "c", ""]"#).unwrap(), keys, "normalized as stored");
        let error = parse("a/b,c").unwrap_err();
        assert!(error.contains(ANNOTATION), "{error}");
    }

    #[test]
    fn a_rejected_write_is_an_error() {
        let mut entries = BTreeMap::from([("a".to_owned(), "x".to_owned())]);
        let mut from_secrets = BTreeSet::new();
        assert!(apply(&mut entries, &mut from_secrets, [set("a/b", "v", true)], []).is_err());
    }
}
