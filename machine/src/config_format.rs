//! The config registry format shared with the dogu operator: a `config.yaml` whose nesting encodes
//! `/`-separated keys, with string leaves. `logging/root=WARN` is stored as `logging: {root: WARN}`.
//!
//! Pure functions used on both sides of the machine: the observer parses with [`parse`], the machine
//! checks planned changes with [`apply`], the executor renders what it writes with [`render`].

use std::collections::BTreeMap;

use serde_json::Value;

/// The data key of config ConfigMaps and Secrets.
pub const DATA_KEY: &str = "config.yaml";

/// The most `/`-separated parts a key the operator writes may have (checked by static validation):
/// each part is one nesting level of `config.yaml`.
pub const MAX_KEY_PARTS: usize = 64;

/// How deeply `config.yaml` may nest when it is read. Far more than any key the operator writes, so
/// that it reads back everything it wrote, also the deeper keys written before keys were limited
/// (such an object is then readable, and the blueprint can go on); still bounded, so that a hostile
/// document cannot exhaust the stack (measured: 256 levels parse on a 2 MiB thread stack).
pub const READ_MAX_DEPTH: usize = 256;

const _: () = assert!(MAX_KEY_PARTS < READ_MAX_DEPTH, "the operator must be able to read what it writes");

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("config.yaml is not valid YAML: {0}")]
    Yaml(String),
    #[error("config.yaml must be a mapping of keys to values")]
    NotAMapping,
    #[error("could not convert the value of key {0} to a string")]
    NotAString(String),
    #[error("key is empty")]
    EmptyKey,
    #[error("key {0} must not be a dictionary")]
    KeyIsDictionary(String),
    #[error("key {0} is already used as dictionary")]
    UsedAsDictionary(String),
    #[error("dictionary with key {key} already has a value: key {parent} already has Value set")]
    ParentHasValue { key: String, parent: String },
    #[error("key {key} has {parts} parts separated by \"/\"; at most {MAX_KEY_PARTS} are allowed")]
    TooDeep { key: String, parts: usize },
}

/// Reads `config.yaml` into flat keys. An empty document is an empty config.
pub fn parse(text: &str) -> Result<BTreeMap<String, String>, ConfigError> {
    if text.trim().is_empty() {
        return Ok(BTreeMap::new());
    }
    let options = serde_saphyr::options! { budget: serde_saphyr::budget! { max_depth: READ_MAX_DEPTH } };
    let value: Value = serde_saphyr::from_str_with_options(text, options).map_err(yaml_error)?;
    let mut entries = BTreeMap::new();
    match value {
        Value::Null => {}
        Value::Object(map) => flatten("", &map, &mut entries)?,
        _ => return Err(ConfigError::NotAMapping),
    }
    Ok(entries)
}

/// The parser's error in one line: the lines after the first quote the document (a condition message
/// and an event are one line, and the document may be long).
fn yaml_error(error: serde_saphyr::Error) -> ConfigError {
    let text = error.to_string();
    ConfigError::Yaml(text.lines().next().unwrap_or_default().trim().to_owned())
}

fn flatten(
    prefix: &str,
    map: &serde_json::Map<String, Value>,
    out: &mut BTreeMap<String, String>,
) -> Result<(), ConfigError> {
    for (key, value) in map {
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}/{key}") };
        match value {
            Value::Object(inner) => flatten(&path, inner, out)?,
            Value::String(s) => {
                out.insert(path, s.clone());
            }
            _ => return Err(ConfigError::NotAString(path)),
        }
    }
    Ok(())
}

/// Normalises a key as the registry does (a leading `/` is dropped) and checks its shape.
pub fn normalize_key(key: &str) -> Result<&str, ConfigError> {
    let key = key.strip_prefix('/').unwrap_or(key);
    if key.is_empty() {
        return Err(ConfigError::EmptyKey);
    }
    if key.ends_with('/') {
        return Err(ConfigError::KeyIsDictionary(key.to_owned()));
    }
    Ok(key)
}

/// Checks that a key the operator is to write can be read back ([`MAX_KEY_PARTS`]). Keys that are
/// only removed are not checked: removing a deeper key written before keys were limited must work.
pub fn check_writable(key: &str) -> Result<(), ConfigError> {
    let key = normalize_key(key)?;
    let parts = key.split('/').count();
    if parts > MAX_KEY_PARTS {
        return Err(ConfigError::TooDeep { key: key.to_owned(), parts });
    }
    Ok(())
}

/// Sets and removes keys, enforcing the registry's rule that a key is either a value or a dictionary.
pub fn apply<'a>(
    entries: &mut BTreeMap<String, String>,
    set: impl IntoIterator<Item = (&'a str, String)>,
    remove: impl IntoIterator<Item = &'a str>,
) -> Result<(), ConfigError> {
    for key in remove {
        let key = normalize_key(key)?;
        entries.remove(key);
    }
    for (key, value) in set {
        check_writable(key)?;
        let key = normalize_key(key)?;
        check_can_set(entries, key)?;
        entries.insert(key.to_owned(), value);
    }
    Ok(())
}

/// Whether `key` can hold a value next to the keys that exist.
pub fn check_can_set<V>(entries: &BTreeMap<String, V>, key: &str) -> Result<(), ConfigError> {
    let dictionary = format!("{key}/");
    if entries.range(dictionary.clone()..).next().is_some_and(|(k, _)| k.starts_with(&dictionary)) {
        return Err(ConfigError::UsedAsDictionary(key.to_owned()));
    }
    for (i, _) in key.match_indices('/') {
        let parent = &key[..i];
        if entries.contains_key(parent) {
            return Err(ConfigError::ParentHasValue { key: key.to_owned(), parent: parent.to_owned() });
        }
    }
    Ok(())
}

/// Renders flat keys as the nested `config.yaml`.
pub fn render(entries: &BTreeMap<String, String>) -> String {
    let mut root = serde_json::Map::new();
    for (key, value) in entries {
        let mut node = &mut root;
        let mut parts = key.split('/').peekable();
        while let Some(part) = parts.next() {
            if parts.peek().is_none() {
                node.insert(part.to_owned(), Value::String(value.clone()));
            } else {
                let child = node.entry(part.to_owned()).or_insert_with(|| Value::Object(Default::default()));
                if !child.is_object() {
                    // Unreachable for entries built through `apply`; keep the value rather than panic.
                    *child = Value::Object(Default::default());
                }
                node = child.as_object_mut().expect("just made an object");
            }
        }
    }
    if root.is_empty() {
        return String::new();
    }
    serde_saphyr::to_string(&Value::Object(root)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_nested_keys_and_ambiguous_strings() {
        let mut entries = BTreeMap::new();
        for (k, v) in [
            ("logging/root", "WARN"),
            ("sa-ldap/password", "x"),
            ("fqdn", "ces.example.com"),
            ("port", "8080"),
            ("flag", "true"),
            ("empty", ""),
        ] {
            entries.insert(k.to_owned(), v.to_owned());
        }
        let text = render(&entries);
        assert!(text.contains("logging:"), "{text}");
        assert_eq!(parse(&text).unwrap(), entries);
    }

    #[test]
    fn rejects_values_that_are_not_strings() {
        assert_eq!(parse("a:\n  b: 1\n"), Err(ConfigError::NotAString("a/b".into())));
        assert_eq!(parse("- a\n"), Err(ConfigError::NotAMapping));
        assert!(matches!(parse("a: [\n"), Err(ConfigError::Yaml(_))));
        assert_eq!(parse("").unwrap(), BTreeMap::new());
    }

    #[test]
    fn a_key_is_either_a_value_or_a_dictionary() {
        let mut entries: BTreeMap<String, String> = [("a/b".to_owned(), "1".to_owned())].into();
        assert_eq!(apply(&mut entries, [("a", "x".to_owned())], []), Err(ConfigError::UsedAsDictionary("a".into())));
        assert_eq!(
            apply(&mut entries, [("a/b/c", "x".to_owned())], []),
            Err(ConfigError::ParentHasValue { key: "a/b/c".into(), parent: "a/b".into() })
        );
        assert_eq!(apply(&mut entries, [("/", "x".to_owned())], []), Err(ConfigError::EmptyKey));
        assert_eq!(apply(&mut entries, [("a/", "x".to_owned())], []), Err(ConfigError::KeyIsDictionary("a/".into())));
        apply(&mut entries, [("/a/c", "2".to_owned())], ["a/b", "missing"]).unwrap();
        assert_eq!(entries, [("a/c".to_owned(), "2".to_owned())].into());
        // removing the child first frees the dictionary for a value
        apply(&mut entries, [("a", "v".to_owned())], ["a/c"]).unwrap();
        assert_eq!(entries, [("a".to_owned(), "v".to_owned())].into());
    }
}
