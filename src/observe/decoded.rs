//! Objects decoded one by one: an object of a watched kind that does not fit its type is kept with
//! its metadata and the reason, reported by name, and never blocks the other objects.
//!
//! kube's watcher decodes a whole list at once: one undecodable object failed the list, so the cache
//! was never filled (a new replica never became ready, the running one dropped the event), and
//! kube-client logged the whole response body, with every Secret of the namespace in it. Decoded one
//! by one, the list always decodes, and nothing but the object's name and the kind of problem is
//! logged.

use std::borrow::Cow;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use blueprint_machine::api::{Blueprint, Component, Dogu};

/// An object as the API server sent it: decoded, or not.
#[derive(Clone, Debug)]
pub enum Decoded<K> {
    Object(Arc<K>),
    Undecodable(Arc<Undecodable>),
}

/// An object that does not fit its type: its metadata, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Undecodable {
    pub metadata: ObjectMeta,
    /// One line, without the object's content when it may be sensitive (Secrets).
    pub problem: String,
}

impl<K> Decoded<K> {
    pub fn object(&self) -> Option<&Arc<K>> {
        match self {
            Decoded::Object(object) => Some(object),
            Decoded::Undecodable(_) => None,
        }
    }

    pub fn undecodable(&self) -> Option<&Undecodable> {
        match self {
            Decoded::Object(_) => None,
            Decoded::Undecodable(undecodable) => Some(undecodable),
        }
    }
}

impl<K: Resource<DynamicType = ()> + Clone> Resource for Decoded<K> {
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(dt: &()) -> Cow<'_, str> {
        K::kind(dt)
    }

    fn group(dt: &()) -> Cow<'_, str> {
        K::group(dt)
    }

    fn version(dt: &()) -> Cow<'_, str> {
        K::version(dt)
    }

    fn plural(dt: &()) -> Cow<'_, str> {
        K::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        match self {
            Decoded::Object(object) => object.meta(),
            Decoded::Undecodable(undecodable) => &undecodable.metadata,
        }
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        // Only called on a freshly decoded object (to slim it), which nothing else shares yet.
        match self {
            Decoded::Object(object) => Arc::make_mut(object).meta_mut(),
            Decoded::Undecodable(undecodable) => &mut Arc::make_mut(undecodable).metadata,
        }
    }
}

/// A second, forgiving decoding, for the kinds that have one: a Blueprint whose spec does not fit is
/// still a Blueprint (with the spec kept as sent), so that its status can say what is wrong.
pub trait Lenient: Sized {
    fn decode_lenient(_json: &str) -> Option<Self> {
        None
    }
}

impl Lenient for Blueprint {
    fn decode_lenient(json: &str) -> Option<Self> {
        Blueprint::decode_lenient(json).ok()
    }
}

impl Lenient for Dogu {}
impl Lenient for blueprint_machine::api::BlueprintMaskObject {}
impl Lenient for Component {}
impl Lenient for ConfigMap {}
impl Lenient for Secret {}

impl<'de, K> Deserialize<'de> for Decoded<K>
where
    K: DeserializeOwned + Lenient + Resource<DynamicType = ()>,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // The object's text, borrowed from the watch line or response body it is decoded from (kube's
        // client decodes every answer from its text). A copy of it (a megabyte for a Blueprint of
        // 1,000 dogus during its install) was the operator's peak memory.
        let raw = <&'de RawValue>::deserialize(deserializer)?;
        match serde_json::from_str::<K>(raw.get()) {
            Ok(object) => Ok(Decoded::Object(Arc::new(object))),
            Err(error) => {
                if let Some(object) = K::decode_lenient(raw.get()) {
                    return Ok(Decoded::Object(Arc::new(object)));
                }
                #[derive(Deserialize)]
                struct MetadataOnly {
                    #[serde(default)]
                    metadata: ObjectMeta,
                }
                let metadata = serde_json::from_str::<MetadataOnly>(raw.get()).map(|m| m.metadata).unwrap_or_default();
                let kind = K::kind(&());
                let problem = problem(&kind, &error);
                tracing::warn!(
                    kind = %kind,
                    namespace = metadata.namespace.as_deref().unwrap_or_default(),
                    name = metadata.name.as_deref().unwrap_or_default(),
                    resource_version = metadata.resource_version.as_deref().unwrap_or_default(),
                    %problem,
                    "an object cannot be decoded; it is skipped"
                );
                Ok(Decoded::Undecodable(Arc::new(Undecodable { metadata, problem })))
            }
        }
    }
}

/// Why an object does not fit `kind`, in one line. serde's messages quote the offending value, so for
/// a Secret only the position is kept.
fn problem(kind: &str, error: &serde_json::Error) -> String {
    if kind == "Secret" {
        return format!(
            "the {kind} does not fit its type at column {} (details withheld: Secrets hold sensitive values)",
            error.column()
        );
    }
    let text = error.to_string();
    format!("the {kind} does not fit its type: {}", text.lines().next().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Secret;
    use kube::core::{ObjectList, WatchEvent};

    use super::*;

    const GOOD: &str = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"good","namespace":"ecosystem"},"data":{"k":"c2VjcmV0LXZhbHVl"}}"#;
    const BAD: &str = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"bad","namespace":"ecosystem"},"data":{"k":"not base64!!","other":"c2VjcmV0LXZhbHVl"}}"#;

    #[test]
    fn a_list_with_an_undecodable_item_decodes_the_others() {
        let list = format!(
            r#"{{"apiVersion":"v1","kind":"SecretList","metadata":{{"resourceVersion":"9"}},"items":[{GOOD},{BAD}]}}"#
        );
        // The list as a whole does not decode as the plain type (what kube's watcher did)...
        assert!(serde_json::from_str::<ObjectList<Secret>>(&list).is_err());
        // ...one by one it does.
        let list: ObjectList<Decoded<Secret>> = serde_json::from_str(&list).unwrap();
        assert_eq!(list.metadata.resource_version.as_deref(), Some("9"));
        let good = list.items[0].object().unwrap();
        assert_eq!(good.data.as_ref().unwrap()["k"].0, b"secret-value");
        let bad = list.items[1].undecodable().unwrap();
        assert_eq!(bad.metadata.name.as_deref(), Some("bad"));
        assert!(bad.problem.contains("details withheld"), "{}", bad.problem);
        assert!(!bad.problem.contains("not base64") && !bad.problem.contains("c2Vj"), "{}", bad.problem);
    }

    #[test]
    fn a_watch_event_with_an_undecodable_object_is_kept_by_name() {
        let line = format!(r#"{{"type":"MODIFIED","object":{BAD}}}"#);
        let WatchEvent::Modified(Decoded::Undecodable(bad)) =
            serde_json::from_str::<WatchEvent<Decoded<Secret>>>(&line).unwrap()
        else {
            panic!("not kept")
        };
        assert_eq!(bad.metadata.name.as_deref(), Some("bad"));
    }
}
