//! Converting a Blueprint between `k8s.cloudogu.com/v2` and `k8s.cloudogu.com/v3`, losslessly in both
//! directions (docs/api-versions.md). One pure function for every user of it: the conversion webhook,
//! the sandbox's emulator and `blueprint-operator convert`.
//!
//! It works on the object's JSON text, not on typed structs, so that nothing it does not know about is
//! lost on the way (a field of a newer release, a value the schema would reject): a conversion must
//! never drop data, and must not fail on an object it merely finds odd (the API server could not serve
//! it any more). And it reads the text where it lies ([`convert_into`]): what it does not change is
//! copied as text, never decoded into values, so converting an object takes little more memory than
//! its text in and out, whatever the object holds (issue 27: a review of 2 MB decoded into values
//! and cloned took 68 MB). The two versions differ in the spec only; metadata and status pass through.
//!
//! | v3 | v2 |
//! |---|---|
//! | `blueprintMask.manifest` | `blueprintMask` (the manifest inline) |
//! | `blueprintMask.crRef` (and any other mask field) | kept in the annotation |
//! | `…dogus[].platformConfig.resource.storageClassName` | kept in the annotation, by dogu name |
//! | config entries' `configRef` | kept in the annotation, by dogu, key and occurrence |
//!
//! The annotation ([`V3_FIELDS_ANNOTATION`]) exists on a v2 object only while it holds something; a v2
//! object without it converts to v3 and back unchanged, a v3 object to v2 and back unchanged. What a
//! v2 client sends back in it is checked against v3's schema (`kept`), and a v2 edit wins over what it
//! kept where v3's rules allow only one of them (`to_v3`): the conversion to v3 writes nothing v3
//! would refuse.

mod json;
mod kept;
mod to_v2;
mod to_v3;
pub mod v1;

use serde_json::Value;
use serde_json::value::RawValue;

/// On a v2 or v1 object: the fields of its v3 form that the version cannot hold, as JSON (reserved: do
/// not write it).
pub const V3_FIELDS_ANNOTATION: &str = "blueprint.k8s.cloudogu.com/v3-fields";
/// On a v3 or v2 object read from v1: what v1 held that v3 cannot ([`v1::V1Fields`]; reserved).
pub const V1_FIELDS_ANNOTATION: &str = "blueprint.k8s.cloudogu.com/v1-fields";

/// A served version of the Blueprint API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ApiVersion {
    /// Cloudogu's Go operator 2.x: the blueprint and its mask as JSON texts ([`v1`]).
    V1,
    V2,
    V3,
}

impl ApiVersion {
    /// The group and version of an `apiVersion` such as `k8s.cloudogu.com/v3`. Any group: the tests
    /// install the same kind under a group of their own.
    pub fn parse(api_version: &str) -> Option<(&str, ApiVersion)> {
        let (group, version) = api_version.split_once('/')?;
        match version {
            "v1" => Some((group, ApiVersion::V1)),
            "v2" => Some((group, ApiVersion::V2)),
            "v3" => Some((group, ApiVersion::V3)),
            _ => None,
        }
    }

    /// `v1`, `v2` or `v3`.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiVersion::V1 => "v1",
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
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("kind {0:?} is not a Blueprint")]
    NotABlueprint(String),
    #[error("apiVersion {0:?} is not a served Blueprint version (v1, v2 or v3, such as k8s.cloudogu.com/v3)")]
    UnknownVersion(String),
    #[error("{path} must be an object")]
    NotAnObjectAt { path: &'static str },
    #[error(
        "the annotation {V3_FIELDS_ANNOTATION} does not hold what v3 allows ({0}); it holds the v3 fields of a Blueprint read through v2 and is not to be written by hand: remove it, or write the Blueprint through v3"
    )]
    ForgedV3Fields(String),
    #[error(
        "the annotation {annotation} does not hold what the conversion writes there ({problem}); it is the conversion's, not to be written by hand: remove it"
    )]
    ForgedAnnotation { annotation: &'static str, problem: String },
}

/// `object` (a Blueprint of either served version) in version `to`, in the same group.
pub fn convert(object: &Value, to: ApiVersion) -> Result<Value, ConversionError> {
    let text = object.to_string();
    let converted = convert_text(&text, to)?;
    Ok(serde_json::from_slice(&converted).expect("the conversion writes JSON"))
}

/// The JSON text `object` (a Blueprint of either served version) in version `to`, as JSON text.
pub fn convert_text(object: &str, to: ApiVersion) -> Result<Vec<u8>, ConversionError> {
    let raw: &RawValue = serde_json::from_str(object).map_err(|e| ConversionError::NotJson(e.to_string()))?;
    let mut out = Vec::with_capacity(object.len());
    convert_into(raw, to, &mut out)?;
    Ok(out)
}

/// Writes `object` (a Blueprint of either served version, as JSON text) in version `to` to `out`.
/// The object is read where it lies: besides `out` (about its size), the conversion holds the
/// annotation's content and a count per distinct dogu name and config key of a list, nothing more.
/// On an error, `out` holds part of an object: discard what was written after its length before.
pub fn convert_into(object: &RawValue, to: ApiVersion, out: &mut Vec<u8>) -> Result<(), ConversionError> {
    if !json::is_object(object) {
        return Err(ConversionError::NotAnObject);
    }
    let text_of = |name: &str| json::field(object, name).and_then(|(_, value)| json::string(value)).unwrap_or_default();
    let kind = text_of("kind");
    if kind != "Blueprint" {
        return Err(ConversionError::NotABlueprint(kind.into_owned()));
    }
    let api_version = text_of("apiVersion");
    let (group, from) =
        ApiVersion::parse(&api_version).ok_or_else(|| ConversionError::UnknownVersion(api_version.to_string()))?;
    let converted = format!("{group}/{}", to.as_str());
    match (from, to) {
        (ApiVersion::V2, ApiVersion::V3) => to_v3::write(object, &converted, out),
        (ApiVersion::V3, ApiVersion::V2) => to_v2::write(object, &converted, out),
        (ApiVersion::V1, ApiVersion::V3) => v1::to_v3(object.get(), &converted, out),
        (ApiVersion::V3, ApiVersion::V1) => v1::to_v1(object.get(), &converted, out),
        // Between v1 and v2 through v3 (each way is lossless).
        (ApiVersion::V1, ApiVersion::V2) => {
            let v3 = through(object, ApiVersion::V3, group)?;
            to_v2::write(&v3, &converted, out)
        }
        (ApiVersion::V2, ApiVersion::V1) => {
            let v3 = through(object, ApiVersion::V3, group)?;
            v1::to_v1(v3.get(), &converted, out)
        }
        _ => json::rewrite_object(
            object,
            out,
            &["apiVersion"],
            |key, _, root| {
                root.string(key, &converted);
                Ok(())
            },
            |_| Ok(()),
        ),
    }
}

/// `object` converted to `version` (in `group`), as text.
fn through(object: &RawValue, version: ApiVersion, group: &str) -> Result<Box<RawValue>, ConversionError> {
    let mut text = Vec::with_capacity(object.get().len());
    let api_version = format!("{group}/{}", version.as_str());
    match version {
        ApiVersion::V3 => match ApiVersion::parse(
            &json::field(object, "apiVersion").and_then(|(_, v)| json::string(v)).unwrap_or_default(),
        ) {
            Some((_, ApiVersion::V1)) => v1::to_v3(object.get(), &api_version, &mut text)?,
            _ => to_v3::write(object, &api_version, &mut text)?,
        },
        _ => unreachable!("conversions go through v3"),
    }
    let text = String::from_utf8(text).map_err(|e| ConversionError::NotJson(e.to_string()))?;
    RawValue::from_string(text).map_err(|e| ConversionError::NotJson(e.to_string()))
}
