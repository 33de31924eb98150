//! A readable difference of two decisions: one line per changed leaf, addressed by a path whose list
//! elements are named by what they are (a condition by its type, an action by its kind and object,
//! an entry by its name or key), not by their position.

use serde_json::Value;

use blueprint_machine::decision::Decision;

/// Longest rendering of one value before it is cut.
const SHOWN: usize = 160;

/// `recorded → now` lines; empty when the decisions are equal.
pub fn differences(recorded: &Decision, now: &Decision) -> Vec<String> {
    if recorded == now {
        return Vec::new();
    }
    let recorded = serde_json::to_value(recorded).expect("decisions serialize");
    let now = serde_json::to_value(now).expect("decisions serialize");
    let mut lines = Vec::new();
    // The state first: it says the most in the fewest words.
    for field in ["state", "requeue", "status", "actions", "events"] {
        diff(field, recorded.get(field).unwrap_or(&Value::Null), now.get(field).unwrap_or(&Value::Null), &mut lines);
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
    let (Some(a), Some(b)) = (keys(path, recorded), keys(path, now)) else {
        // Unnamed elements: compared by position.
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
    for (key, x) in a.iter().zip(recorded) {
        let child = format!("{path}[{key}]");
        match b.iter().position(|k| k == key) {
            Some(at) => diff(&child, x, &now[at], lines),
            None => lines.push(format!("{child}: removed {}", show(x))),
        }
    }
    for (key, y) in b.iter().zip(now) {
        if !a.contains(key) {
            lines.push(format!("{path}[{key}]: added {}", show(y)));
        }
    }
    let common_a: Vec<&String> = a.iter().filter(|k| b.contains(k)).collect();
    let common_b: Vec<&String> = b.iter().filter(|k| a.contains(k)).collect();
    if common_a != common_b {
        lines.push(format!("{path}: order {} → {}", join(&common_a), join(&common_b)));
    }
}

fn join(keys: &[&String]) -> String {
    keys.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")
}

/// The name of every element, when each has a distinct one.
fn keys(path: &str, list: &[Value]) -> Option<Vec<String>> {
    let keys: Vec<String> = list.iter().map(|v| key(path, v)).collect::<Option<_>>()?;
    let mut unique = keys.clone();
    unique.sort();
    unique.dedup();
    (unique.len() == keys.len()).then_some(keys)
}

fn key(path: &str, value: &Value) -> Option<String> {
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
        return Some(format!("{} {object}", text("/kind")?));
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
