//! Bad input never panics: arbitrary bytes, and valid documents mutated at random places (values
//! replaced by other JSON, by awkward strings and numbers, removed, repeated), for a Blueprint, a Dogu
//! CR, a Component CR, config YAML and dogu.json. Whatever parses is reconciled; the decision must be
//! well-formed and say what is wrong. Over 10,000 cases in all with the default counts.

use blueprint_machine::api::{Blueprint, Component, Dogu};
use blueprint_machine::descriptor::DoguDescriptor;
use blueprint_machine::observation::{ConfigObservation, DescriptorLookup};
use blueprint_machine::{Decision, config_format};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::cases;
use blueprint_machine::fixtures::{Scenario, component_cr, dogu_cr};

const BLUEPRINT: &str = include_str!("../../../examples/fresh-install/blueprint.yaml");
const DESCRIPTOR: &str = include_str!("../../../examples/descriptors/official/redmine/5.1.8-1.json");

/// Strings that break naive parsers of names, versions, quantities and keys.
const AWKWARD: &[&str] = &[
    "",
    " ",
    "0",
    "-1",
    "1e309",
    "99999999999999999999999999Ei",
    "12345678901234567890.5Pi",
    "NaN",
    "1.2.3-4",
    "1.2.3-",
    "v1.0.0",
    "9999999999999999999999-1",
    "official/",
    "/",
    "//",
    "official//redmine",
    "official/redmine/x",
    "k8s/",
    "é",
    "\u{0}",
    "..",
    "../..",
    "a/b/c/",
    "/a",
    "a//b",
    "5Gi",
    "5Gix",
    "0.5Gi",
    "-5Gi",
    "1e3",
    "100M",
    ">=",
    ">=1.0.0-1",
    "<",
    "null",
    "true",
    "{}",
    "[]",
    "🙂",
    "ConfigMap",
    "sensitive",
    LONG,
];
const LONG: &str = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";

fn awkward() -> impl Strategy<Value = Value> {
    prop_oneof![
        proptest::sample::select(AWKWARD).prop_map(|s| Value::String(s.to_owned())),
        any::<String>().prop_map(Value::String),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
    ]
}

fn any_json() -> impl Strategy<Value = Value> {
    awkward().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(proptest::sample::select(AWKWARD).prop_map(str::to_owned), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[derive(Clone, Debug)]
enum Mutation {
    Replace(usize, Value),
    Remove(usize),
    Repeat(usize),
    /// A small edit of one of the document's strings, so that names, versions and sizes become
    /// almost-right values (the ones that reach the parsers behind the schema).
    EditText(usize, TextEdit),
}

#[derive(Clone, Debug)]
enum TextEdit {
    Append(String),
    Truncate(usize),
    Insert(usize, char),
    LongDigits(String),
}

fn text_edit() -> impl Strategy<Value = TextEdit> {
    let signs = vec!['-', '.', '=', '<', '>', '/', '+', 'v', '0', '9', ' ', 'e', 'i'];
    prop_oneof![
        "[-.=<>/v0-9a-z+ ]{1,4}".prop_map(TextEdit::Append),
        any::<usize>().prop_map(TextEdit::Truncate),
        (any::<usize>(), proptest::sample::select(signs)).prop_map(|(at, c)| TextEdit::Insert(at, c)),
        "[1-9][0-9]{14,30}".prop_map(TextEdit::LongDigits),
    ]
}

fn edit_text(text: &str, edit: &TextEdit) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    match edit {
        TextEdit::Append(tail) => format!("{text}{tail}"),
        TextEdit::Truncate(at) => chars[..at % (chars.len() + 1)].iter().collect(),
        TextEdit::Insert(at, c) => {
            chars.insert(at % (chars.len() + 1), *c);
            chars.into_iter().collect()
        }
        TextEdit::LongDigits(digits) => match text.find(|c: char| c.is_ascii_digit()) {
            // The first run of digits becomes a number too long for any integer type.
            Some(start) => {
                let end = text[start..].find(|c: char| !c.is_ascii_digit()).map_or(text.len(), |e| start + e);
                format!("{}{digits}{}", &text[..start], &text[end..])
            }
            None => format!("{text}{digits}"),
        },
    }
}

fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    let one = prop_oneof![
        4 => (any::<usize>(), text_edit()).prop_map(|(at, e)| Mutation::EditText(at, e)),
        4 => (any::<usize>(), any_json()).prop_map(|(at, v)| Mutation::Replace(at, v)),
        2 => any::<usize>().prop_map(Mutation::Remove),
        1 => any::<usize>().prop_map(Mutation::Repeat),
    ];
    proptest::collection::vec(one, 1..6)
}

/// Every node's path (object keys and array indices), in document order.
fn paths(value: &Value, prefix: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    out.push(prefix.clone());
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                prefix.push(Value::String(key.clone()));
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                prefix.push(json!(index));
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn node_ref<'v>(value: &'v Value, path: &[Value]) -> Option<&'v Value> {
    path.iter().try_fold(value, |current, step| match step {
        Value::String(key) => current.get(key.as_str()),
        Value::Number(index) => current.get(index.as_u64()? as usize),
        _ => None,
    })
}

fn node<'v>(value: &'v mut Value, path: &[Value]) -> Option<&'v mut Value> {
    path.iter().try_fold(value, |current, step| match step {
        Value::String(key) => current.get_mut(key.as_str()),
        Value::Number(index) => current.get_mut(index.as_u64()? as usize),
        _ => None,
    })
}

fn mutate(mut document: Value, mutations: &[Mutation]) -> Value {
    for mutation in mutations {
        let mut all = Vec::new();
        paths(&document, &mut Vec::new(), &mut all);
        let pick = |at: usize| all[at % all.len()].clone();
        match mutation {
            Mutation::EditText(at, edit) => {
                let strings: Vec<&Vec<Value>> =
                    all.iter().filter(|path| matches!(node_ref(&document, path), Some(Value::String(_)))).collect();
                if strings.is_empty() {
                    continue;
                }
                let path = strings[at % strings.len()].clone();
                if let Some(Value::String(text)) = node(&mut document, &path) {
                    *text = edit_text(text, edit);
                }
            }
            Mutation::Replace(at, value) => {
                if let Some(target) = node(&mut document, &pick(*at)) {
                    *target = value.clone();
                }
            }
            Mutation::Remove(at) | Mutation::Repeat(at) => {
                let path = pick(*at);
                let Some((last, parent)) = path.split_last() else { continue };
                let Some(parent) = node(&mut document, parent) else { continue };
                match (parent, last, mutation) {
                    (Value::Object(map), Value::String(key), Mutation::Remove(_)) => {
                        map.remove(key);
                    }
                    (Value::Array(items), Value::Number(index), Mutation::Remove(_)) => {
                        let index = index.as_u64().unwrap() as usize;
                        if index < items.len() {
                            items.remove(index);
                        }
                    }
                    (Value::Array(items), Value::Number(index), Mutation::Repeat(_)) => {
                        let index = index.as_u64().unwrap() as usize;
                        if let Some(item) = items.get(index).cloned() {
                            items.push(item);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    document
}

/// A decision is well-formed whatever the input: one condition of each type, valid statuses and
/// reasons, and a message wherever a condition says something is wrong.
fn well_formed(decision: &Decision) -> Result<(), TestCaseError> {
    let Some(status) = &decision.status else { return Ok(()) };
    let mut types: Vec<&str> = status.conditions.iter().map(|c| c.type_.as_str()).collect();
    types.sort();
    types.dedup();
    prop_assert_eq!(types.len(), status.conditions.len(), "a condition type twice");
    for condition in &status.conditions {
        prop_assert!(["True", "False", "Unknown"].contains(&condition.status.as_str()));
        prop_assert!(
            !condition.reason.is_empty()
                && condition.reason.chars().all(|c| c.is_ascii_alphanumeric() || "_,:".contains(c))
        );
        if condition.status == "False" && ["Valid", "Executable"].contains(&condition.type_.as_str()) {
            prop_assert!(!condition.message.trim().is_empty(), "{} is False without saying why", condition.type_);
        }
        prop_assert!(condition.message.len() <= 32768);
    }
    Ok(())
}

fn base_blueprint() -> Value {
    static BASE: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    BASE.get_or_init(|| {
        let blueprint: Blueprint = serde_saphyr::from_str(BLUEPRINT).unwrap();
        serde_json::to_value(blueprint).unwrap()
    })
    .clone()
}

/// A cluster the example blueprint meets in the middle of an upgrade.
fn cluster() -> Scenario {
    Scenario::new("blueprint: {dogus: []}")
        .with_dogu("official/ldap", "2.6.7-4")
        .with_dogu("official/cas", "7.1.4-1")
        .with_component("k8s/k8s-longhorn", "1.7.1-1")
        .with_global(&[("fqdn", "old.example.com")], None)
        .with_secret("redmine-ldap-secret", &[("password", "s3cret")])
}

fn with_blueprint(blueprint: Blueprint) -> Scenario {
    let mut scenario = cluster();
    scenario.blueprint = Some(blueprint);
    scenario
}

proptest! {
    #![proptest_config(cases(2000))]

    /// Seen failing with: the CLI's reader taking the first document of a YAML stream without
    /// checking that there is one (empty input).
    #[test]
    fn arbitrary_bytes_parse_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = serde_saphyr::from_str::<Blueprint>(&text);
        let _ = config_format::parse(&text);
        let _ = serde_json::from_slice::<DoguDescriptor>(&bytes);
        let _ = serde_json::from_slice::<Dogu>(&bytes);
        let _ = serde_json::from_slice::<Component>(&bytes);
    }
}

proptest! {
    #![proptest_config(cases(3000))]

    /// Seen failing with: dogu names split with `split_once('/').unwrap()` (a name without a slash).
    #[test]
    fn a_mutated_blueprint_is_decided_without_panicking(mutations in mutations()) {
        let document = mutate(base_blueprint(), &mutations);
        // As YAML (a superset of JSON), as a blueprint file is read.
        let text = serde_json::to_string(&document).unwrap();
        if let Ok(blueprint) = serde_saphyr::from_str::<Blueprint>(&text) {
            well_formed(&with_blueprint(blueprint).decide())?;
        }
    }
}

/// Quantity-shaped text: signs, long digit runs, fractions, every suffix, exponents.
fn quantity_text() -> impl Strategy<Value = String> {
    "[+-]?[0-9]{0,32}(\\.[0-9]{0,12})?(|n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]{1,4}|x)"
}

proptest! {
    #![proptest_config(cases(1000))]

    /// Volume and body sizes in the blueprint and in Dogu CRs are parsed (and multiplied out) by the
    /// machine: no text makes it overflow or panic.
    /// Seen failing with: the quantity parser multiplying the mantissa by the binary suffix without an
    /// overflow check (`99999999999999999999999999Ei`).
    #[test]
    fn any_quantity_text_is_decided_without_panicking(size in quantity_text(), body in quantity_text()) {
        let mut document = base_blueprint();
        document["spec"]["blueprint"]["dogus"][0]["platformConfig"] =
            json!({"resource": {"minVolumeSize": size}, "reverseProxy": {"maxBodySize": body}});
        let blueprint: Blueprint = serde_json::from_value(document).unwrap();
        well_formed(&with_blueprint(blueprint).decide())?;
        let mut scenario = cluster();
        scenario.dogu_mut("ldap").spec.resources =
            Some(serde_json::from_value(json!({"dataVolumeSize": size, "minDataVolumeSize": body})).unwrap());
        well_formed(&scenario.decide())?;
    }
}

proptest! {
    #![proptest_config(cases(1500))]

    /// Seen failing with: dogu version numbers parsed with `parse().unwrap()` (a run of digits
    /// longer than `u64`).
    #[test]
    fn a_mutated_dogu_cr_is_decided_without_panicking(mutations in mutations()) {
        let document = mutate(serde_json::to_value(dogu_cr("official/redmine", "5.1.6-1")).unwrap(), &mutations);
        if let Ok(dogu) = serde_json::from_value::<Dogu>(document) {
            let blueprint = serde_json::from_value(base_blueprint()).unwrap();
            well_formed(&with_blueprint(blueprint).with_dogu_cr(dogu).decide())?;
        }
    }

    /// Seen failing with: a panic on an unknown operator in a dependency's version constraint (`=>=`).
    #[test]
    fn a_mutated_dogu_json_is_decided_without_panicking(mutations in mutations()) {
        let document = mutate(serde_json::from_str(DESCRIPTOR).unwrap(), &mutations);
        if let Ok(descriptor) = serde_json::from_value::<DoguDescriptor>(document) {
            let blueprint = serde_json::from_value(base_blueprint()).unwrap();
            let scenario = with_blueprint(blueprint)
                .with_lookup("official/redmine", "5.1.8-1", DescriptorLookup::Found { descriptor: descriptor.into() });
            well_formed(&scenario.decide())?;
        }
    }

    /// Seen failing with: `unreachable!` for config values that are neither strings nor maps.
    #[test]
    fn mutated_config_yaml_is_decided_without_panicking(mutations in mutations(), raw in any::<bool>()) {
        let yaml = "fqdn: ces.example.com\nadmin_group: admins\nsection:\n  key: value\n  other: [1, 2]\n";
        let text = if raw {
            // Arbitrary text where YAML is expected.
            format!("{:?}", mutations)
        } else {
            let value: Value = serde_saphyr::from_str(yaml).unwrap();
            serde_saphyr::to_string(&mutate(value, &mutations)).unwrap_or_default()
        };
        let observation = match config_format::parse(&text) {
            Ok(entries) => ConfigObservation::Present { entries, from_secrets: Default::default(), unrecorded: Default::default(), last_updated: None, resource_version: Some("1".into()) },
            Err(e) => ConfigObservation::Malformed { reason: e.to_string(), last_updated: None, resource_version: Some("1".into()) },
        };
        let blueprint = serde_json::from_value(base_blueprint()).unwrap();
        let mut scenario = with_blueprint(blueprint);
        scenario.global = observation;
        well_formed(&scenario.decide())?;
    }
}

proptest! {
    #![proptest_config(cases(1000))]

    /// Seen failing with: component version numbers parsed with `parse::<u64>().unwrap()`.
    #[test]
    fn a_mutated_component_cr_is_decided_without_panicking(mutations in mutations()) {
        let document = mutate(serde_json::to_value(component_cr("k8s/k8s-longhorn", "1.7.1-1")).unwrap(), &mutations);
        if let Ok(component) = serde_json::from_value::<Component>(document) {
            let blueprint = serde_json::from_value(base_blueprint()).unwrap();
            well_formed(&with_blueprint(blueprint).with_component_cr(component).decide())?;
        }
    }
}
