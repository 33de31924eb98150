//! Converting a Blueprint between `k8s.cloudogu.com/v2` and `k8s.cloudogu.com/v3`, losslessly in both
//! directions (docs/api-versions.md). One pure function for every user of it: the conversion webhook,
//! the sandbox's emulator and `blueprint-operator convert`.
//!
//! It works on the object as JSON, not on typed structs, so that nothing it does not know about is
//! lost on the way (a field of a newer release, a value the schema would reject): a conversion must
//! never drop data, and must not fail on an object it merely finds odd (the API server could not serve
//! it any more). The two versions differ in the spec only; metadata and status pass through.
//!
//! | v3 | v2 |
//! |---|---|
//! | `blueprintMask.manifest` | `blueprintMask` (the manifest inline) |
//! | `blueprintMask.crRef` (and any other mask field) | kept in the annotation |
//! | `…dogus[].platformConfig.resource.storageClassName` | kept in the annotation, by dogu name |
//! | config entries' `configRef` | kept in the annotation, by dogu, key and occurrence |
//!
//! The annotation ([`V3_FIELDS_ANNOTATION`]) exists on a v2 object only while it holds something; a v2
//! object without it converts to v3 and back unchanged, a v3 object to v2 and back unchanged.

use serde_json::{Map, Value, json};

/// On a v2 object: the fields of its v3 form that v2 cannot hold, as JSON (reserved: do not write it).
pub const V3_FIELDS_ANNOTATION: &str = "blueprint.k8s.cloudogu.com/v3-fields";

/// A served version of the Blueprint API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ApiVersion {
    V2,
    V3,
}

impl ApiVersion {
    /// The group and version of an `apiVersion` such as `k8s.cloudogu.com/v3`. Any group: the tests
    /// install the same kind under a group of their own.
    pub fn parse(api_version: &str) -> Option<(&str, ApiVersion)> {
        let (group, version) = api_version.split_once('/')?;
        match version {
            "v2" => Some((group, ApiVersion::V2)),
            "v3" => Some((group, ApiVersion::V3)),
            _ => None,
        }
    }

    /// `v2` or `v3`.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiVersion::V2 => "v2",
            ApiVersion::V3 => "v3",
        }
    }
}

/// Why an object could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConversionError {
    #[error("not an object")]
    NotAnObject,
    #[error("kind {0:?} is not a Blueprint")]
    NotABlueprint(String),
    #[error("apiVersion {0:?} is not a served Blueprint version (v2 or v3, such as k8s.cloudogu.com/v3)")]
    UnknownVersion(String),
    #[error("{path} must be an object")]
    NotAnObjectAt { path: &'static str },
}

/// `object` (a Blueprint of either served version) in version `to`, in the same group.
pub fn convert(object: &Value, to: ApiVersion) -> Result<Value, ConversionError> {
    let fields = object.as_object().ok_or(ConversionError::NotAnObject)?;
    let kind = fields.get("kind").and_then(Value::as_str).unwrap_or_default();
    if kind != "Blueprint" {
        return Err(ConversionError::NotABlueprint(kind.to_owned()));
    }
    let api_version = fields.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let (group, from) =
        ApiVersion::parse(api_version).ok_or_else(|| ConversionError::UnknownVersion(api_version.to_owned()))?;
    let converted_version = format!("{group}/{}", to.as_str());
    let mut converted = object.clone();
    match (from, to) {
        (ApiVersion::V2, ApiVersion::V3) => to_v3(&mut converted)?,
        (ApiVersion::V3, ApiVersion::V2) => to_v2(&mut converted)?,
        _ => {}
    }
    converted["apiVersion"] = json!(converted_version);
    Ok(converted)
}

/// What v2 cannot hold of a v3 Blueprint: the annotation's content.
#[derive(Debug, Default, PartialEq)]
struct V3Fields {
    /// The v3 mask without its manifest (`crRef`, ...), when it was not just a manifest.
    mask: Option<Map<String, Value>>,
    /// `storageClassName` by dogu name and which of the dogus of that name.
    storage_classes: Vec<(String, usize, Value)>,
    /// `configRef` by where its entry is.
    config_refs: Vec<(EntryPlace, Value)>,
    /// What the conversion to v2 had to create to hold the annotation (removed again on the way back).
    created: Created,
}

#[derive(Debug, Default, PartialEq, Clone, Copy)]
enum Created {
    #[default]
    Nothing,
    Annotations,
    Metadata,
}

/// A config entry's place: its dogu (or global), its key, and which of the entries with that key.
#[derive(Debug, Clone, PartialEq, Eq)]
struct EntryPlace {
    dogu: Option<String>,
    key: String,
    occurrence: usize,
}

impl V3Fields {
    fn is_empty(&self) -> bool {
        self.mask.is_none() && self.storage_classes.is_empty() && self.config_refs.is_empty()
    }

    fn to_json(&self) -> Value {
        let mut value = Map::new();
        if let Some(mask) = &self.mask {
            value.insert("blueprintMask".into(), Value::Object(mask.clone()));
        }
        if !self.storage_classes.is_empty() {
            let classes: Vec<Value> = self
                .storage_classes
                .iter()
                .map(|(dogu, occurrence, class)| json!({"dogu": dogu, "occurrence": occurrence, "storageClassName": class}))
                .collect();
            value.insert("storageClassNames".into(), Value::Array(classes));
        }
        match self.created {
            Created::Nothing => {}
            Created::Annotations => _ = value.insert("created".into(), json!("annotations")),
            Created::Metadata => _ = value.insert("created".into(), json!("metadata")),
        }
        if !self.config_refs.is_empty() {
            let refs: Vec<Value> = self
                .config_refs
                .iter()
                .map(|(place, config_ref)| {
                    let mut entry = json!({"key": place.key, "occurrence": place.occurrence, "configRef": config_ref});
                    if let Some(dogu) = &place.dogu {
                        entry["dogu"] = json!(dogu);
                    }
                    entry
                })
                .collect();
            value.insert("configRefs".into(), Value::Array(refs));
        }
        Value::Object(value)
    }

    /// The annotation's content; `None` when it is not what [`V3Fields::to_json`] writes (then it is
    /// left where it is, untouched).
    fn from_json(text: &str) -> Option<V3Fields> {
        let value: Value = serde_json::from_str(text).ok()?;
        let fields = value.as_object()?;
        let mask = match fields.get("blueprintMask") {
            None => None,
            Some(mask) => Some(mask.as_object()?.clone()),
        };
        let mut storage_classes = Vec::new();
        for class in fields.get("storageClassNames").map(|c| c.as_array()).unwrap_or(Some(&Vec::new()))? {
            let dogu = class.get("dogu")?.as_str()?.to_owned();
            let occurrence = usize::try_from(class.get("occurrence")?.as_u64()?).ok()?;
            storage_classes.push((dogu, occurrence, class.get("storageClassName")?.clone()));
        }
        let created = match fields.get("created").map(Value::as_str) {
            None => Created::Nothing,
            Some(Some("annotations")) => Created::Annotations,
            Some(Some("metadata")) => Created::Metadata,
            Some(_) => return None,
        };
        let mut config_refs = Vec::new();
        for entry in fields.get("configRefs").map(|r| r.as_array()).unwrap_or(Some(&Vec::new()))? {
            let place = EntryPlace {
                dogu: match entry.get("dogu") {
                    None => None,
                    Some(dogu) => Some(dogu.as_str()?.to_owned()),
                },
                key: entry.get("key")?.as_str()?.to_owned(),
                occurrence: usize::try_from(entry.get("occurrence")?.as_u64()?).ok()?,
            };
            config_refs.push((place, entry.get("configRef")?.clone()));
        }
        Some(V3Fields { mask, storage_classes, config_refs, created })
    }
}

/// v3 → v2: the manifest inline, the rest into the annotation.
fn to_v2(object: &mut Value) -> Result<(), ConversionError> {
    let mut kept = V3Fields::default();
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        if let Some(mask) = spec.remove("blueprintMask") {
            let Value::Object(mut mask) = mask else {
                return Err(ConversionError::NotAnObjectAt { path: "spec.blueprintMask" });
            };
            match mask.remove("manifest") {
                Some(manifest) => {
                    spec.insert("blueprintMask".into(), manifest);
                    if !mask.is_empty() {
                        kept.mask = Some(mask);
                    }
                }
                None => kept.mask = Some(mask),
            }
        }
        if let Some(manifest) = spec.get_mut("blueprint").and_then(Value::as_object_mut) {
            if let Some(dogus) = manifest.get_mut("dogus").and_then(Value::as_array_mut) {
                for_each_occurrence(dogus, "name", |name, occurrence, dogu| {
                    let class = dogu
                        .get_mut("platformConfig")
                        .and_then(|p| p.get_mut("resource"))
                        .and_then(Value::as_object_mut)
                        .and_then(|resource| resource.remove("storageClassName"));
                    if let Some(class) = class {
                        kept.storage_classes.push((name.to_owned(), occurrence, class));
                    }
                });
            }
            if let Some(config) = manifest.get_mut("config").and_then(Value::as_object_mut) {
                for (dogu, entries) in config_entries(config) {
                    for_each_occurrence(entries, "key", |key, occurrence, entry| {
                        if let Some(config_ref) = entry.remove("configRef") {
                            let place = EntryPlace { dogu: dogu.clone(), key: key.to_owned(), occurrence };
                            kept.config_refs.push((place, config_ref));
                        }
                    });
                }
            }
        }
    }
    if !kept.is_empty() {
        let fields = object.as_object_mut().expect("checked");
        if !fields.contains_key("metadata") {
            kept.created = Created::Metadata;
        }
        let metadata = object_field(fields, "metadata").ok_or(ConversionError::NotAnObjectAt { path: "metadata" })?;
        if kept.created == Created::Nothing && !metadata.contains_key("annotations") {
            kept.created = Created::Annotations;
        }
        let annotations = object_field(metadata, "annotations")
            .ok_or(ConversionError::NotAnObjectAt { path: "metadata.annotations" })?;
        annotations.insert(V3_FIELDS_ANNOTATION.into(), json!(kept.to_json().to_string()));
    }
    Ok(())
}

/// v2 → v3: the inline mask as the manifest, and what the annotation kept back in its place.
fn to_v3(object: &mut Value) -> Result<(), ConversionError> {
    let kept = take_annotation(object).unwrap_or_default();
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let inline = spec.remove("blueprintMask");
    let mut mask = kept.mask.clone();
    if let Some(inline) = inline {
        mask.get_or_insert_with(Map::new).insert("manifest".into(), inline);
    }
    if let Some(mask) = mask {
        spec.insert("blueprintMask".into(), Value::Object(mask));
    }
    if kept.storage_classes.is_empty() && kept.config_refs.is_empty() {
        return Ok(());
    }
    let manifest = object_field(spec, "blueprint").ok_or(ConversionError::NotAnObjectAt { path: "spec.blueprint" })?;
    if let Some(dogus) = manifest.get_mut("dogus").and_then(Value::as_array_mut) {
        // Each class back on the dogu it was taken from; none when a v2 edit removed that dogu.
        for_each_occurrence(dogus, "name", |name, occurrence, dogu| {
            let class = kept.storage_classes.iter().find(|(n, o, _)| n == name && *o == occurrence);
            if let Some((_, _, class)) = class
                && let Some(resource) = object_field(dogu, "platformConfig").and_then(|p| object_field(p, "resource"))
            {
                resource.insert("storageClassName".into(), class.clone());
            }
        });
    }
    if let Some(config) = manifest.get_mut("config").and_then(Value::as_object_mut) {
        for (dogu, entries) in config_entries(config) {
            for_each_occurrence(entries, "key", |key, occurrence, entry| {
                let place = EntryPlace { dogu: dogu.clone(), key: key.to_owned(), occurrence };
                // A v2 edit that gave the entry a value of its own wins: the reference is dropped.
                let own_value = ["value", "secretRef"].iter().any(|f| entry.contains_key(*f));
                if let Some((_, config_ref)) = kept.config_refs.iter().find(|(p, _)| *p == place)
                    && !own_value
                {
                    entry.insert("configRef".into(), config_ref.clone());
                }
            });
        }
    }
    Ok(())
}

/// The annotation's content, removed from the object; nothing (and the annotation left alone) when
/// there is none or it is not ours.
fn take_annotation(object: &mut Value) -> Option<V3Fields> {
    let annotations = object.pointer_mut("/metadata/annotations")?.as_object_mut()?;
    let kept = V3Fields::from_json(annotations.get(V3_FIELDS_ANNOTATION)?.as_str()?)?;
    annotations.remove(V3_FIELDS_ANNOTATION);
    let fields = object.as_object_mut().expect("checked");
    match kept.created {
        Created::Nothing => {}
        Created::Annotations => {
            if let Some(metadata) = fields.get_mut("metadata").and_then(Value::as_object_mut)
                && metadata.get("annotations").and_then(Value::as_object).is_some_and(Map::is_empty)
            {
                metadata.remove("annotations");
            }
        }
        Created::Metadata => {
            if fields.get("metadata").is_some_and(|m| m == &json!({"annotations": {}})) {
                fields.remove("metadata");
            }
        }
    }
    Some(kept)
}

/// The config's entry lists: each dogu's (by name) and the global one (`None`).
fn config_entries(config: &mut Map<String, Value>) -> Vec<(Option<String>, &mut Vec<Value>)> {
    let mut lists = Vec::new();
    for (field, value) in config.iter_mut() {
        match (field.as_str(), value) {
            ("dogus", Value::Object(dogus)) => {
                for (dogu, entries) in dogus.iter_mut() {
                    if let Some(entries) = entries.as_array_mut() {
                        lists.push((Some(dogu.clone()), entries));
                    }
                }
            }
            ("global", Value::Array(entries)) => lists.push((None, entries)),
            _ => {}
        }
    }
    lists
}

/// The object at `key` of `map`, made empty when missing; `None` when something else is there.
fn object_field<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    map.entry(key).or_insert_with(|| json!({})).as_object_mut()
}

/// Calls `visit` with each object item's identity (its `field`: a dogu's name, an entry's key), which
/// of the items with that identity it is, and the item. Both directions place kept fields by this.
fn for_each_occurrence(items: &mut [Value], field: &str, mut visit: impl FnMut(&str, usize, &mut Map<String, Value>)) {
    let mut seen: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for item in items.iter_mut() {
        let Some(item) = item.as_object_mut() else { continue };
        let identity = item.get(field).and_then(Value::as_str).unwrap_or_default().to_owned();
        let occurrence = seen.entry(identity.clone()).or_default();
        visit(&identity, *occurrence, item);
        *occurrence += 1;
    }
}
