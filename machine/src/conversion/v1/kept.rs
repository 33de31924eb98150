//! The two annotations of the v1 conversion, typed: what v1 cannot hold of a v3 Blueprint (on a v1
//! object, [`V3_FIELDS_ANNOTATION`]) and what v3 cannot hold of a v1 Blueprint (on a v3 or v2 object,
//! [`V1_FIELDS_ANNOTATION`]).
//!
//! Whatever a client sends back is read through them, so they are untrusted input: an annotation that
//! is not in this form, or a kept config entry v3's rules forbid, refuses the conversion (and with it
//! the write) naming what is wrong, as for v2 (issue 27, finding 6).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use serde::{Deserialize, Serialize};

use crate::api::{BlueprintMaskReference, ConfigEntry};

use super::super::{ConversionError, V1_FIELDS_ANNOTATION, V3_FIELDS_ANNOTATION};

/// On a v1 object: the fields of its v3 form that v1 cannot hold.
#[derive(Serialize, Deserialize, Default, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct V3Fields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) display_name: Option<String>,
    /// The mask as a reference to a `BlueprintMask` object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) blueprint_mask_ref: Option<BlueprintMaskReference>,
    /// `storageClassName` by dogu name and which of the dogus with that name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) storage_class_names: Vec<KeptClass>,
    /// Global config entries v1 cannot hold (from Secrets or ConfigMaps, sensitive), with their place.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) global: Vec<KeptEntry>,
    /// The same, by dogu.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) dogus: BTreeMap<String, Vec<KeptEntry>>,
    /// The status's conditions, which v1 has none of.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) observed_generation: Option<i64>,
    /// The v1 fields the v3 object held (a v1 object read as v3 and converted back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) v1: Option<V1Fields>,
}

/// A dogu's storage class.
#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct KeptClass {
    pub(super) dogu: String,
    pub(super) occurrence: usize,
    pub(super) storage_class_name: String,
}

/// A config entry at its place in its list (counted in the v3 list).
#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct KeptEntry {
    pub(super) at: usize,
    pub(super) entry: ConfigEntry,
}

impl V3Fields {
    pub(super) fn is_empty(&self) -> bool {
        *self == V3Fields::default()
    }

    pub(super) fn read(text: &str) -> Result<V3Fields, ConversionError> {
        let forged = |problem: String| ConversionError::ForgedAnnotation { annotation: V3_FIELDS_ANNOTATION, problem };
        let fields: V3Fields = serde_json::from_str(text).map_err(|e| forged(e.to_string()))?;
        for class in &fields.storage_class_names {
            if class.storage_class_name.len() > 253 {
                return Err(forged(format!("the storageClassName of {} is longer than 253 characters", class.dogu)));
            }
        }
        let lists = std::iter::once((None, &fields.global)).chain(fields.dogus.iter().map(|(d, l)| (Some(d), l)));
        for (dogu, list) in lists {
            for kept in list {
                if let Err(problem) = check_entry(&kept.entry) {
                    let place = dogu.map_or("global config".to_owned(), |d| format!("the config of {d}"));
                    return Err(forged(format!("{place}: {}: {problem}", kept.entry.key)));
                }
            }
        }
        Ok(fields)
    }
}

/// v3's rules for one config entry (the CRD's CEL rules, which a conversion must not get around).
fn check_entry(entry: &ConfigEntry) -> Result<(), &'static str> {
    let absent = entry.absent == Some(true);
    let sensitive = entry.sensitive == Some(true);
    let (value, secret, config_map) = (entry.value.is_some(), entry.secret_ref.is_some(), entry.config_ref.is_some());
    if absent && (value || secret || config_map) {
        return Err("absent entries cannot have a value or a reference");
    }
    if sensitive && (value || config_map) {
        return Err("sensitive entries cannot have a value or a configRef");
    }
    if [value, secret, config_map].iter().filter(|set| **set).count() > 1 {
        return Err("an entry has one of value, secretRef and configRef");
    }
    Ok(())
}

/// On a v3 (or v2) object read from v1: what v1 held that v3 cannot.
#[derive(Serialize, Deserialize, Default, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct V1Fields {
    /// The Go operator's phase (`completed`, `failed`, ...), shown again by v1 while no condition says
    /// more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The mask's id (read, never used by the Go operator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blueprint_mask_id: Option<String>,
    /// Sensitive keys whose value the Go operator replaced by `*****` once it applied them, by dogu:
    /// not managed in v3 (the values stay as they are).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub censored: BTreeMap<String, Vec<String>>,
    /// `spec.blueprint` and `spec.blueprintMask` when they were not the JSON v1 defines, as they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable_blueprint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable_mask: Option<String>,
    /// What v3 could not take over (a value of v1 that v3 has no place for): the Blueprint is invalid
    /// until it is fixed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

impl V1Fields {
    pub(super) fn is_empty(&self) -> bool {
        *self == V1Fields::default()
    }

    /// The annotation's content, if it is one of ours; what is wrong with it otherwise.
    pub fn read(text: &str) -> Result<V1Fields, ConversionError> {
        serde_json::from_str(text)
            .map_err(|e| ConversionError::ForgedAnnotation { annotation: V1_FIELDS_ANNOTATION, problem: e.to_string() })
    }
}
