//! A readable difference of two decisions: one line per changed leaf, addressed by a path whose list
//! elements are named by what they are (a condition by its type, an action by its stage, kind and
//! object, an event by its reason, an entry by its name or key), not by their position. Elements that
//! share a name are numbered in order (`patchDogu redmine`, `patchDogu redmine#2`).

use serde_json::Value;

use blueprint_machine::decision::Decision;

/// Longest rendering of one value before it is cut.
const SHOWN: usize = 160;

/// `recorded → now` lines; empty exactly when the decisions are equal.
pub fn differences(recorded: &Decision, now: &Decision) -> Vec<String> {
    if recorded == now {
        return Vec::new();
    }
    let recorded = serde_json::to_value(recorded).expect("decisions serialize");
    let now = serde_json::to_value(now).expect("decisions serialize");
    let mut lines = Vec::new();
    // The state first: it says the most in the fewest words; then every other field, whatever the
    // Decision holds.
    let mut fields: Vec<String> =
        vec!["state".into(), "requeue".into(), "status".into(), "actions".into(), "events".into()];
    for value in [&recorded, &now] {
        for key in value.as_object().into_iter().flat_map(|o| o.keys()) {
            if !fields.contains(key) {
                fields.push(key.clone());
            }
        }
    }
    for field in &fields {
        diff(field, recorded.get(field).unwrap_or(&Value::Null), now.get(field).unwrap_or(&Value::Null), &mut lines);
    }
    if lines.is_empty() {
        // Unequal, but no leaf differs in its JSON: say so rather than call them identical.
        lines.push("the decisions differ in a way their JSON does not show".into());
    }
    lines
}

fn diff(path: &str, recorded: &Value, now: &Value, lines: &mut Vec<String>) {
    if recorded == now {
        return;
    }
    match (recorded, now) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let child = format!("{path}.{key}");
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => diff(&child, x, y, lines),
                    (Some(x), None) => lines.push(format!("{child}: {} → (absent)", show(x))),
                    (None, Some(y)) => lines.push(format!("{child}: (absent) → {}", show(y))),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => diff_lists(path, a, b, lines),
        _ => lines.push(format!("{path}: {} → {}", show(recorded), show(now))),
    }
}

fn diff_lists(path: &str, recorded: &[Value], now: &[Value], lines: &mut Vec<String>) {
    let (Some(a), Some(b)) = (names(path, recorded), names(path, now)) else {
        // Unnamed elements (scalars, anonymous objects): compared by position.
        for index in 0..recorded.len().max(now.len()) {
            let child = format!("{path}[{index}]");
            match (recorded.get(index), now.get(index)) {
                (Some(x), Some(y)) => diff(&child, x, y, lines),
                (Some(x), None) => lines.push(format!("{child}: removed {}", show(x))),
                (None, Some(y)) => lines.push(format!("{child}: added {}", show(y))),
                (None, None) => {}
            }
        }
        return;
    };
    for (name, x) in a.iter().zip(recorded) {
        let child = format!("{path}[{name}]");
        match b.iter().position(|n| n == name) {
            Some(at) => diff(&child, x, &now[at], lines),
            None => lines.push(format!("{child}: removed {}", show(x))),
        }
    }
    for (name, y) in b.iter().zip(now) {
        if !a.contains(name) {
            lines.push(format!("{path}[{name}]: added {}", show(y)));
        }
    }
    let common_a: Vec<&String> = a.iter().filter(|n| b.contains(n)).collect();
    let common_b: Vec<&String> = b.iter().filter(|n| a.contains(n)).collect();
    if common_a != common_b {
        lines.push(format!("{path}: order {} → {}", join(&common_a), join(&common_b)));
    }
}

fn join(names: &[&String]) -> String {
    names.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", ")
}

/// The name of every element, when each has one; repeated names are numbered in order.
fn names(path: &str, list: &[Value]) -> Option<Vec<String>> {
    let plain: Vec<String> = list.iter().map(|v| name(path, v)).collect::<Option<_>>()?;
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    Some(
        plain
            .iter()
            .map(|n| {
                let count = seen.entry(n.as_str()).or_default();
                *count += 1;
                if *count == 1 { n.clone() } else { format!("{n}#{count}") }
            })
            .collect(),
    )
}

fn name(path: &str, value: &Value) -> Option<String> {
    let text = |pointer: &str| value.pointer(pointer).and_then(Value::as_str);
    if path.ends_with("actions") {
        let object = match (text("/name"), text("/object/metadata/name"), value.get("target")) {
            (Some(name), _, _) | (None, Some(name), _) => name.to_owned(),
            (None, None, Some(target)) => {
                let store = target.get("store").and_then(Value::as_str)?;
                match target.get("dogu").and_then(Value::as_str) {
                    Some(dogu) => format!("{store}:{dogu}"),
                    None => store.to_owned(),
                }
            }
            _ => return None,
        };
        return Some(format!("{} {} {object}", text("/stage")?, text("/kind")?));
    }
    if path.ends_with("conditions") {
        return text("/type").map(str::to_owned);
    }
    if path.ends_with("events") {
        return text("/reason").map(str::to_owned);
    }
    text("/name").or_else(|| text("/key")).or_else(|| text("/dogu")).map(str::to_owned)
}

fn show(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= SHOWN {
        return text;
    }
    let cut: String = text.chars().take(SHOWN).collect();
    format!("{cut}…")
}
