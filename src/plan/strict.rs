//! Strict input: a field of a Blueprint file that the Blueprint's schema does not have is an error that
//! names its path and line (`spec.blueprintMsk`, line 7), not a field dropped without a word (a typo in
//! `blueprintMask` lost the mask). The schema is the CRD's own (v2, or v3 for a v3 document), so a file
//! is held to what `kubectl apply` is held to on a real API server (strict field validation).

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_saphyr::Spanned;

/// A YAML document with the position of every mapping key.
enum Node {
    Map(Vec<(Spanned<String>, Node)>),
    Seq(Vec<Node>),
    Scalar,
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a YAML node")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            entries.push((key, map.next_value::<Node>()?));
        }
        Ok(Node::Map(entries))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_str<E>(self, _: &str) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        Node::deserialize(deserializer)
    }
}

/// One field the schema does not have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownField {
    /// `spec.blueprint.dogus[2].versoin`
    pub path: String,
    pub line: u64,
    pub column: u64,
    /// The closest field the schema has there, if one is close.
    pub suggestion: Option<String>,
}

impl std::fmt::Display for UnknownField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}, column {}: unknown field {}", self.line, self.column, self.path)?;
        if let Some(suggestion) = &self.suggestion {
            write!(f, " (did you mean {suggestion}?)")?;
        }
        Ok(())
    }
}

/// The fields of the one document in `text` that `schema` (an OpenAPI v3 schema as a CRD has it) does
/// not have; empty if the text is not a document this can read (the decoder reports that).
pub fn unknown_fields(text: &str, schema: &Value) -> Vec<UnknownField> {
    let Ok(node) = serde_saphyr::from_str::<Node>(text) else { return Vec::new() };
    let mut found = Vec::new();
    walk(&node, schema, "", &mut found);
    found
}

fn walk(node: &Node, schema: &Value, path: &str, found: &mut Vec<UnknownField>) {
    match node {
        Node::Map(entries) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            let open = schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
                // `metadata` and other objects without a declared shape: the API server checks them.
                || (properties.is_none() && additional.is_none());
            for (key, value) in entries {
                // Every object has these; a CRD's schema need not declare them.
                if path.is_empty() && ["apiVersion", "kind", "metadata"].contains(&key.value.as_str()) {
                    continue;
                }
                let child = if path.is_empty() { key.value.clone() } else { format!("{path}.{}", key.value) };
                match (properties.and_then(|p| p.get(&key.value)), additional) {
                    (Some(property), _) => walk(value, property, &child, found),
                    (None, Some(values)) => walk(value, values, &child, found),
                    (None, None) if open => {}
                    (None, None) => found.push(UnknownField {
                        path: child,
                        line: key.referenced.line(),
                        column: key.referenced.column(),
                        suggestion: properties
                            .and_then(|p| closest(&key.value, p.keys()))
                            .map(|name| if path.is_empty() { name.to_owned() } else { format!("{path}.{name}") }),
                    }),
                }
            }
        }
        Node::Seq(items) => {
            if let Some(items_schema) = schema.get("items") {
                for (index, item) in items.iter().enumerate() {
                    walk(item, items_schema, &format!("{path}[{index}]"), found);
                }
            }
        }
        Node::Scalar => {}
    }
}

/// The known name closest to `typed`, if it is close enough to be what was meant.
fn closest<'k>(typed: &str, known: impl Iterator<Item = &'k String>) -> Option<&'k str> {
    known
        .map(|name| (strsim::jaro_winkler(&typed.to_lowercase(), &name.to_lowercase()), name))
        .filter(|(score, _)| *score >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, name)| name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {
                "blueprintMask": {"type": "object", "properties": {"dogus": {"type": "array", "items": {
                    "type": "object", "properties": {"name": {"type": "string"}, "version": {"type": "string"}}}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            }},
        }})
    }

    #[test]
    fn unknown_fields_are_named_with_path_line_and_a_suggestion() {
        let text = "apiVersion: v1\nkind: X\nmetadata:\n  anything: 1\nspec:\n  blueprintMsk:\n    dogus: []\n  blueprintMask:\n    dogus:\n      - name: a\n        versoin: 1\n  labels: {a: b}\n  free: {x: {y: 1}}\n";
        let found = unknown_fields(text, &schema());
        assert_eq!(
            found.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "line 6, column 3: unknown field spec.blueprintMsk (did you mean spec.blueprintMask?)",
                "line 11, column 9: unknown field spec.blueprintMask.dogus[0].versoin (did you mean spec.blueprintMask.dogus[0].version?)",
            ]
        );
    }

    #[test]
    fn a_far_name_gets_no_suggestion_and_json_works_too() {
        let found = unknown_fields(r#"{"spec": {"zzz": 1}}"#, &schema());
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].path.as_str(), found[0].line, found[0].suggestion.as_deref()), ("spec.zzz", 1, None));
        assert!(unknown_fields("spec: [unclosed", &schema()).is_empty(), "not readable: left to the decoder");
    }
}
