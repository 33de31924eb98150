//! Writes the Blueprint status: once per reconcile at most, only when it changed (ignoring
//! `lastTransitionTime`), as a JSON merge patch of what changed (removed fields sent as `null`),
//! conditional on the `resourceVersion` the decision was based on. A 409 means the decision was made
//! on a stale Blueprint: nothing is written and its events are not published.

use blueprint_machine::api::{Blueprint, BlueprintStatus};
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Map, Value};

use blueprint_machine::objects::MANAGER;

/// The `/status` merge patch that turns `stored` into `wanted`, or `None` when they are equal.
pub fn status_patch(
    stored: Option<&BlueprintStatus>,
    wanted: &BlueprintStatus,
    resource_version: &str,
) -> Option<Value> {
    if stored.is_some_and(|stored| equal_ignoring_transition_times(stored, wanted)) {
        return None;
    }
    let before = stored.map(|s| serde_json::to_value(s).expect("statuses serialize")).unwrap_or(Value::Null);
    let after = serde_json::to_value(wanted).expect("statuses serialize");
    Some(serde_json::json!({
        "metadata": {"resourceVersion": resource_version},
        "status": merge_diff(&before, &after),
    }))
}

fn equal_ignoring_transition_times(a: &BlueprintStatus, b: &BlueprintStatus) -> bool {
    a.effective_blueprint == b.effective_blueprint
        && a.state_diff == b.state_diff
        && a.observed_generation == b.observed_generation
        && a.conditions.len() == b.conditions.len()
        && a.conditions.iter().zip(&b.conditions).all(|(x, y)| {
            x.type_ == y.type_
                && x.status == y.status
                && x.reason == y.reason
                && x.message == y.message
                && x.observed_generation == y.observed_generation
        })
}

/// RFC 7386: a merge patch that turns `before` into `after` (objects recurse, removed members become
/// `null`, everything else is replaced).
pub fn merge_diff(before: &Value, after: &Value) -> Value {
    match (before, after) {
        (Value::Object(old), Value::Object(new)) => {
            let mut patch = Map::new();
            for (key, value) in new {
                match old.get(key) {
                    Some(previous) if previous == value => {}
                    Some(previous) if previous.is_object() && value.is_object() => {
                        patch.insert(key.clone(), merge_diff(previous, value));
                    }
                    _ => {
                        patch.insert(key.clone(), value.clone());
                    }
                }
            }
            for key in old.keys().filter(|k| !new.contains_key(*k)) {
                patch.insert(key.clone(), Value::Null);
            }
            Value::Object(patch)
        }
        _ => after.clone(),
    }
}

/// Sends the patch; returns the Blueprint as written.
pub async fn write(api: &Api<Blueprint>, name: &str, patch: &Value) -> Result<Blueprint, kube::Error> {
    let params = PatchParams { field_manager: Some(MANAGER.to_owned()), ..Default::default() };
    api.patch_status(name, &params, &Patch::Merge(patch)).await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn merge_diffs_remove_with_null_and_replace_lists() {
        let before = json!({"a": 1, "b": {"c": 1, "d": 2}, "l": [1, 2], "gone": true});
        let after = json!({"a": 1, "b": {"c": 3}, "l": [1]});
        assert_eq!(merge_diff(&before, &after), json!({"b": {"c": 3, "d": null}, "l": [1], "gone": null}));
        assert_eq!(merge_diff(&Value::Null, &json!({"x": 1})), json!({"x": 1}));
    }
}
