//! The annotation [`super::V3_FIELDS_ANNOTATION`]: what v2 cannot hold of a v3 Blueprint, written by
//! the conversion to v2 and read back, type-checked against v3's schema, by the conversion to v3.
//!
//! Whatever a v2 client sends is read back through it, so it is untrusted input: a field v3's schema
//! forbids (a `storageClassName` that is not a string of at most 253 characters, a `configRef` that is
//! not `{name, key}`, a mask field v3 does not have), or an annotation not in the form written here,
//! refuses the conversion (and with it the write) naming what is wrong. Without the check a v2 writer
//! could store v3 values that v3's schema forbids, after which every v3 update of the object was
//! refused (issue 27, finding 6).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::ConversionError;
use super::json::{ArrayOut, ObjectOut, Text, is_object};

/// v3's bound on `storageClassName` (a DNS subdomain; the CRD's `maxLength`).
const STORAGE_CLASS_MAX: usize = 253;

/// Where a config entry is: its dogu (`None`: global config), its key, which of the entries with it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct EntryPlace<'a> {
    pub(super) dogu: Option<Cow<'a, str>>,
    pub(super) key: Cow<'a, str>,
    pub(super) occurrence: usize,
}

/// The annotation's content, borrowed from the object (to v2) or from the annotation's text (to v3).
#[derive(Debug, Default)]
pub(super) struct Kept<'a> {
    /// The v3 mask's fields besides its manifest (`crRef`).
    pub(super) mask: Option<Vec<(Cow<'a, str>, &'a RawValue)>>,
    /// `storageClassName` by dogu name and occurrence, sorted by them (to v3).
    pub(super) storage_classes: Vec<((Cow<'a, str>, usize), &'a RawValue)>,
    /// `configRef` by entry place, sorted by it (to v3).
    pub(super) config_refs: Vec<(EntryPlace<'a>, &'a RawValue)>,
    pub(super) created: Created,
}

/// What the conversion to v2 had to create to hold the annotation (removed again on the way back).
#[derive(Debug, Default, PartialEq, Eq, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) enum Created {
    #[default]
    Nothing,
    Annotations,
    Metadata,
}

impl<'a> Kept<'a> {
    pub(super) fn is_empty(&self) -> bool {
        self.mask.is_none() && self.storage_classes.is_empty() && self.config_refs.is_empty()
    }

    /// The annotation's text (JSON).
    pub(super) fn write(&self) -> String {
        let mut out = Vec::new();
        let mut object = ObjectOut::open(&mut out);
        if let Some(mask) = &self.mask {
            let mut fields = ObjectOut::open(object.key("blueprintMask"));
            for (key, value) in mask {
                fields.raw(key, value);
            }
            fields.close();
        }
        if !self.storage_classes.is_empty() {
            let mut classes = ArrayOut::open(object.key("storageClassNames"));
            for ((dogu, occurrence), class) in &self.storage_classes {
                let mut entry = ObjectOut::open(classes.item());
                entry.string("dogu", dogu);
                entry.key("occurrence").extend_from_slice(occurrence.to_string().as_bytes());
                entry.raw("storageClassName", class);
                entry.close();
            }
            classes.close();
        }
        match self.created {
            Created::Nothing => {}
            Created::Annotations => object.string("created", "annotations"),
            Created::Metadata => object.string("created", "metadata"),
        }
        if !self.config_refs.is_empty() {
            let mut refs = ArrayOut::open(object.key("configRefs"));
            for (place, config_ref) in &self.config_refs {
                let mut entry = ObjectOut::open(refs.item());
                entry.string("key", &place.key);
                entry.key("occurrence").extend_from_slice(place.occurrence.to_string().as_bytes());
                entry.raw("configRef", config_ref);
                if let Some(dogu) = &place.dogu {
                    entry.string("dogu", dogu);
                }
                entry.close();
            }
            refs.close();
        }
        object.close();
        String::from_utf8(out).expect("JSON written from JSON text")
    }

    /// The annotation `text` as the conversion to v2 writes it, every value of a type v3 allows; why
    /// not, in one line.
    pub(super) fn read(text: &'a str) -> Result<Kept<'a>, ConversionError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct Wire<'t> {
            #[serde(borrow, default)]
            blueprint_mask: Option<&'t RawValue>,
            #[serde(borrow, default)]
            storage_class_names: Vec<WireClass<'t>>,
            #[serde(borrow, default)]
            config_refs: Vec<WireRef<'t>>,
            #[serde(default)]
            created: Created,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct WireClass<'t> {
            #[serde(borrow)]
            dogu: Text<'t>,
            occurrence: usize,
            #[serde(borrow)]
            storage_class_name: &'t RawValue,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct WireRef<'t> {
            #[serde(borrow, default)]
            dogu: Option<Text<'t>>,
            #[serde(borrow)]
            key: Text<'t>,
            occurrence: usize,
            #[serde(borrow)]
            config_ref: &'t RawValue,
        }
        let forged = |why: String| ConversionError::ForgedV3Fields(why);
        let wire: Wire<'a> = serde_json::from_str(text).map_err(|e| forged(e.to_string()))?;
        let mask = match wire.blueprint_mask {
            None => None,
            Some(mask) => Some(mask_fields(mask).map_err(forged)?),
        };
        let mut storage_classes = Vec::with_capacity(wire.storage_class_names.len());
        for (index, class) in wire.storage_class_names.into_iter().enumerate() {
            check_storage_class(class.storage_class_name)
                .map_err(|why| forged(format!("storageClassNames[{index}].storageClassName {why}")))?;
            storage_classes.push(((class.dogu.0, class.occurrence), class.storage_class_name));
        }
        storage_classes.sort_by(|a, b| a.0.cmp(&b.0));
        let mut config_refs = Vec::with_capacity(wire.config_refs.len());
        for (index, entry) in wire.config_refs.into_iter().enumerate() {
            check_config_ref(entry.config_ref).map_err(|why| forged(format!("configRefs[{index}].configRef {why}")))?;
            let place = EntryPlace { dogu: entry.dogu.map(|d| d.0), key: entry.key.0, occurrence: entry.occurrence };
            config_refs.push((place, entry.config_ref));
        }
        config_refs.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Kept { mask, storage_classes, config_refs, created: wire.created })
    }

    /// The storage class kept for the `occurrence` of the dogu `name`.
    pub(super) fn storage_class(&self, name: &str, occurrence: usize) -> Option<&'a RawValue> {
        let at = self.storage_classes.binary_search_by(|((dogu, o), _)| (dogu.as_ref(), *o).cmp(&(name, occurrence)));
        at.ok().map(|at| self.storage_classes[at].1)
    }

    /// The `configRef` kept for the entry at `place`.
    pub(super) fn config_ref(&self, place: &EntryPlace<'_>) -> Option<&'a RawValue> {
        let at = self.config_refs.binary_search_by(|(p, _)| {
            (p.dogu.as_deref(), p.key.as_ref(), p.occurrence).cmp(&(
                place.dogu.as_deref(),
                place.key.as_ref(),
                place.occurrence,
            ))
        });
        at.ok().map(|at| self.config_refs[at].1)
    }
}

/// The kept mask's fields: v3's mask besides its manifest has `crRef` (`{name}`) alone.
fn mask_fields(mask: &RawValue) -> Result<Vec<(Cow<'_, str>, &RawValue)>, String> {
    if !is_object(mask) {
        return Err("blueprintMask must be an object".into());
    }
    let mut fields = Vec::new();
    super::json::for_each_field(mask, |key, value| {
        if key != "crRef" {
            return Err(format!("blueprintMask.{key} is not a field v3's mask keeps there (crRef is)"));
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct MaskReference {
            name: String,
        }
        serde_json::from_str::<MaskReference>(value.get())
            .map_err(|e| format!("blueprintMask.crRef must be {{name: string}}: {e}"))?;
        fields.push((key, value));
        Ok(())
    })?;
    Ok(fields)
}

/// v3's `storageClassName`: a string of at most 253 characters.
fn check_storage_class(class: &RawValue) -> Result<(), String> {
    match super::json::string(class) {
        Some(text) if text.chars().count() <= STORAGE_CLASS_MAX => Ok(()),
        _ => Err(format!("must be a string of at most {STORAGE_CLASS_MAX} characters")),
    }
}

/// v3's `configRef`: `{name: string, key: string}`.
fn check_config_ref(config_ref: &RawValue) -> Result<(), String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct ConfigMapKeyReference {
        name: String,
        key: String,
    }
    serde_json::from_str::<ConfigMapKeyReference>(config_ref.get())
        .map(drop)
        .map_err(|e| format!("must be {{name: string, key: string}}: {e}"))
}
