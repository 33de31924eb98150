//! Label and field selectors, with Kubernetes' syntax: `a=b`, `a==b`, `a!=b`, `a`, `!a`,
//! `a in (x,y)`, `a notin (x,y)` for labels; `path=value`, `path!=value` for fields.

use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut requirements = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let requirement = if let Some(key) = part.strip_prefix('!') {
                Requirement::NotExists(key.trim().to_owned())
            } else if let Some((key, values)) = part.split_once(" notin ") {
                Requirement::NotIn(key.trim().to_owned(), set(values)?)
            } else if let Some((key, values)) = part.split_once(" in ") {
                Requirement::In(key.trim().to_owned(), set(values)?)
            } else if let Some((key, value)) = part.split_once("!=") {
                Requirement::NotEquals(key.trim().to_owned(), value.trim().to_owned())
            } else if let Some((key, value)) = part.split_once("==").or_else(|| part.split_once('=')) {
                Requirement::Equals(key.trim().to_owned(), value.trim().to_owned())
            } else {
                Requirement::Exists(part.to_owned())
            };
            requirements.push(requirement);
        }
        Ok(LabelSelector(requirements))
    }

    pub fn matches(&self, object: &Value) -> bool {
        let label = |key: &str| object.pointer("/metadata/labels").and_then(|l| l.get(key)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => label(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => label(k) != Some(v.as_str()),
            Requirement::Exists(k) => label(k).is_some(),
            Requirement::NotExists(k) => label(k).is_none(),
            Requirement::In(k, values) => label(k).is_some_and(|l| values.iter().any(|v| v == l)),
            Requirement::NotIn(k, values) => label(k).is_none_or(|l| !values.iter().any(|v| v == l)),
        })
    }
}

fn set(values: &str) -> Result<Vec<String>, String> {
    let inner = values
        .trim()
        .strip_prefix('(')
        .and_then(|v| v.strip_suffix(')'))
        .ok_or_else(|| format!("expected a set in parentheses, found {values:?}"))?;
    Ok(inner.split(',').map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()).collect())
}

/// Splits on commas outside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(String, String, bool)>);

impl FieldSelector {
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut terms = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (path, value, equal) = if let Some((p, v)) = part.split_once("!=") {
                (p, v, false)
            } else if let Some((p, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (p, v, true)
            } else {
                return Err(format!("invalid field selector {part:?}"));
            };
            terms.push((path.trim().to_owned(), value.trim().to_owned(), equal));
        }
        Ok(FieldSelector(terms))
    }

    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(path, value, equal)| {
            let pointer = format!("/{}", path.replace('.', "/"));
            let actual = object.pointer(&pointer).map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
            (actual.as_deref().unwrap_or("") == value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(labels: Value) -> Value {
        json!({"metadata": {"name": "x", "namespace": "ns", "labels": labels}})
    }

    /// Kubernetes rule: label selectors (equality- and set-based requirements, ANDed).
    #[test]
    fn label_selectors_follow_the_kubernetes_syntax() {
        let o = object(json!({"app": "ces", "tier": "db"}));
        for (selector, expected) in [
            ("app=ces", true),
            ("app==ces", true),
            ("app!=ces", false),
            ("app", true),
            ("!app", false),
            ("!missing", true),
            ("tier in (db, web)", true),
            ("tier notin (db)", false),
            ("missing notin (db)", true),
            ("app=ces,tier=web", false),
            ("app=ces,tier in (db,web)", true),
            ("", true),
        ] {
            assert_eq!(LabelSelector::parse(selector).unwrap().matches(&o), expected, "{selector}");
        }
        assert!(LabelSelector::parse("tier in db").is_err());
    }

    /// Kubernetes rule: field selectors on `metadata.name` and `metadata.namespace`.
    #[test]
    fn field_selectors_match_paths() {
        let o = object(json!({}));
        assert!(FieldSelector::parse("metadata.name=x").unwrap().matches(&o));
        assert!(!FieldSelector::parse("metadata.name=y").unwrap().matches(&o));
        assert!(FieldSelector::parse("metadata.name!=y,metadata.namespace=ns").unwrap().matches(&o));
        assert!(FieldSelector::parse("bogus").is_err());
    }
}
