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

    use crate::api::BlueprintManifest;

    #[test]
    fn decoded_lists_have_no_spare_capacity() {
        let entries: Vec<_> = (0..5).map(|k| json!({"key": format!("k{k}"), "value": "v"})).collect();
        let dogus: Vec<_> = (0..5).map(|i| json!({"name": format!("official/d{i}"), "version": "1.0.0-1"})).collect();
        let manifest: BlueprintManifest = serde_json::from_value(json!({
            "dogus": dogus,
            "config": {"dogus": {"d0": entries}, "global": entries}
        }))
        .unwrap();
        let config = manifest.config.as_ref().unwrap();
        let lists = [
            manifest.dogus.as_ref().unwrap().capacity(),
            config.global.as_ref().unwrap().capacity(),
            config.dogus.as_ref().unwrap()["d0"].capacity(),
        ];
        assert_eq!(lists, [5, 5, 5], "each list's capacity is its length");
    }
}
