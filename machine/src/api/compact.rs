//! Decoding lists at their length. serde grows a decoded `Vec` by doubling, so a list of five config
//! entries keeps room for eight, and a manifest's lists are kept as long as the Blueprint is cached:
//! at 1,000 dogus with 5 keys each, a third of a decoded manifest was unused capacity.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};

/// An optional list, without spare capacity.
pub(super) fn list<'de, D, T>(deserializer: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let mut list = Option::<Vec<T>>::deserialize(deserializer)?;
    if let Some(list) = list.as_mut() {
        list.shrink_to_fit();
    }
    Ok(list)
}

/// A list, without spare capacity.
pub(super) fn vec<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let mut list = Vec::<T>::deserialize(deserializer)?;
    list.shrink_to_fit();
    Ok(list)
}

/// An optional map of lists, each without spare capacity.
pub(super) fn lists_by_key<'de, D, T>(deserializer: D) -> Result<Option<BTreeMap<String, Vec<T>>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let mut lists = Option::<BTreeMap<String, Vec<T>>>::deserialize(deserializer)?;
    for list in lists.iter_mut().flat_map(BTreeMap::values_mut) {
        list.shrink_to_fit();
    }
    Ok(lists)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::api::{BlueprintManifest, StateDiff};

    #[test]
    fn decoded_lists_have_no_spare_capacity() {
        let entries: Vec<_> = (0..5).map(|k| json!({"key": format!("k{k}"), "value": "v"})).collect();
        let dogus: Vec<_> = (0..5).map(|i| json!({"name": format!("official/d{i}"), "version": "1.0.0-1"})).collect();
        // Decoded from text, as from a watch: from a `serde_json::Value` serde knows each list's length
        // and allocates it exactly anyway.
        let text = json!({"dogus": dogus, "config": {"dogus": {"d0": entries}, "global": entries}}).to_string();
        let manifest: BlueprintManifest = serde_json::from_str(&text).unwrap();
        let config = manifest.config.as_ref().unwrap();
        let lists = [
            manifest.dogus.as_ref().unwrap().capacity(),
            config.global.as_ref().unwrap().capacity(),
            config.dogus.as_ref().unwrap()["d0"].capacity(),
        ];
        assert_eq!(lists, [5, 5, 5], "each list's capacity is its length");
    }

    #[test]
    fn decoded_state_diffs_have_no_spare_capacity() {
        let entry = |k: usize| json!({"key": format!("k{k}"), "actual": {"exists": false}, "expected": {"value": "v", "exists": true}, "neededAction": "set"});
        let entries: Vec<_> = (0..5).map(entry).collect();
        let state = json!({"namespace": "official", "absent": false, "additionalMounts": [
            {"sourceType": "ConfigMap", "name": "a", "volume": "v"},
            {"sourceType": "ConfigMap", "name": "b", "volume": "v"},
            {"sourceType": "ConfigMap", "name": "c", "volume": "v"}
        ]});
        let text = json!({
            "doguDiffs": {"d0": {"actual": state, "expected": state, "neededActions": ["install", "upgrade", "x"]}},
            "doguConfigDiffs": {"d0": {"doguConfigDiff": entries, "sensitiveDoguConfigDiff": entries}},
            "globalConfigDiff": entries
        })
        .to_string();
        let diff: StateDiff = serde_json::from_str(&text).unwrap();
        let dogu = &diff.dogu_diffs["d0"];
        let config = &diff.dogu_config_diffs["d0"];
        let lists = [
            dogu.needed_actions.capacity(),
            dogu.actual.additional_mounts.capacity(),
            config.dogu_config_diff.capacity(),
            config.sensitive_dogu_config_diff.capacity(),
            diff.global_config_diff.capacity(),
        ];
        assert_eq!(lists, [3, 3, 5, 5, 5], "each list's capacity is its length");
    }
}
