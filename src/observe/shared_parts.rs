//! A Blueprint's spec and effective blueprint, shared between the objects of its watch events, and
//! with each other.
//!
//! Every status write brings the whole Blueprint back as a watch event, decoded afresh: at 1,000
//! dogus a spec and an effective blueprint of about 0.6 MB each, while the object they replace is
//! still held by the cache or a reconcile. An event whose spec (or effective blueprint) equals the
//! previous event's takes that one's, and the copy just decoded is dropped at once: the copies alive
//! together share one spec and one effective blueprint. Without a mask the effective blueprint is
//! the spec's manifest, and then it is that manifest: one copy for both. Only weak references are
//! kept here: a Blueprint gone from the cache and every reconcile is not held by this.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use blueprint_machine::api::{Blueprint, BlueprintManifest, BlueprintSpec};

use super::decoded::Decoded;

/// The parts last seen, by Blueprint name.
#[derive(Default)]
pub struct SharedParts {
    seen: HashMap<String, Parts>,
}

#[derive(Default)]
struct Parts {
    spec: Weak<BlueprintSpec>,
    effective: Weak<BlueprintManifest>,
}

impl SharedParts {
    /// `decoded` with the parts of the previous event of its Blueprint where they are equal, and its
    /// own remembered for the next. Only an object nobody else holds yet (as a watch event's is) is
    /// changed.
    pub fn share(&mut self, decoded: &mut Decoded<Blueprint>) {
        let Decoded::Object(object) = decoded else { return };
        let Some(blueprint) = Arc::get_mut(object) else { return };
        let name = blueprint.metadata.name.clone().unwrap_or_default();
        let parts = self.seen.entry(name).or_default();
        if let Some(spec) = blueprint.spec.spec.as_mut() {
            share(spec, &mut parts.spec);
        }
        let wanted = blueprint.spec.spec.as_ref().and_then(|spec| spec.blueprint.clone());
        let status = blueprint.status.as_mut().and_then(Arc::get_mut);
        if let Some(effective) = status.and_then(|s| s.effective_blueprint.as_mut())
            && !wanted.is_some_and(|wanted| take_if_same(effective, wanted))
        {
            share(effective, &mut parts.effective);
        }
        // Names whose objects are gone everywhere are forgotten.
        self.seen.retain(|_, parts| parts.spec.strong_count() > 0 || parts.effective.strong_count() > 0);
    }
}

/// `part` replaced by the `seen` one if that is still alive and equal; else remembered as `seen`.
fn share<T: PartialEq>(part: &mut Arc<T>, seen: &mut Weak<T>) {
    if !seen.upgrade().is_some_and(|previous| take_if_same(part, previous)) {
        *seen = Arc::downgrade(part);
    }
}

/// Whether `candidate` is `part` or equal to it; if so, `part` is `candidate` now.
fn take_if_same<T: PartialEq>(part: &mut Arc<T>, candidate: Arc<T>) -> bool {
    let same = Arc::ptr_eq(&candidate, part) || *candidate == **part;
    if same {
        *part = candidate;
    }
    same
}

#[cfg(test)]
mod tests {
    use blueprint_machine::api::{BlueprintBody, BlueprintStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn event(name: &str, dogu: &str) -> Decoded<Blueprint> {
        let dogus = Some(vec![serde_json::from_value(serde_json::json!({"name": dogu})).unwrap()]);
        let manifest = BlueprintManifest { dogus, ..Default::default() };
        let spec = BlueprintSpec { blueprint: Some(Arc::new(manifest.clone())), ..Default::default() };
        Decoded::Object(Arc::new(Blueprint {
            metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
            spec: BlueprintBody { spec: Some(Arc::new(spec)) },
            status: Some(Arc::new(BlueprintStatus {
                effective_blueprint: Some(Arc::new(manifest)),
                ..Default::default()
            })),
            undecodable_spec: None,
        }))
    }

    fn parts(decoded: &Decoded<Blueprint>) -> (Arc<BlueprintSpec>, Arc<BlueprintManifest>) {
        let blueprint = decoded.object().unwrap();
        let status = blueprint.status.as_ref().unwrap();
        (blueprint.spec.spec.clone().unwrap(), status.effective_blueprint.clone().unwrap())
    }

    #[test]
    fn equal_parts_of_the_next_event_are_the_previous_ones() {
        let mut shared = SharedParts::default();
        let mut first = event("bp", "official/cas");
        shared.share(&mut first);
        let mut second = event("bp", "official/cas");
        shared.share(&mut second);
        let ((spec1, effective1), (spec2, effective2)) = (parts(&first), parts(&second));
        assert!(Arc::ptr_eq(&spec1, &spec2) && Arc::ptr_eq(&effective1, &effective2), "shared");

        let mut changed = event("bp", "official/ldap");
        shared.share(&mut changed);
        let (spec3, effective3) = parts(&changed);
        assert!(!Arc::ptr_eq(&spec2, &spec3) && !Arc::ptr_eq(&effective2, &effective3), "a new spec is its own");
        assert_eq!(spec3.blueprint.as_ref().and_then(|m| m.dogus.as_ref()).map(Vec::len), Some(1));

        let mut other = event("other", "official/ldap");
        shared.share(&mut other);
        assert!(!Arc::ptr_eq(&parts(&other).0, &spec3), "another Blueprint's parts are its own");
    }

    /// Without a mask the effective blueprint equals the spec's manifest: one copy serves both; with
    /// one (a different manifest) each stays its own.
    #[test]
    fn an_effective_blueprint_equal_to_the_spec_is_the_specs_manifest() {
        let mut shared = SharedParts::default();
        let mut unmasked = event("bp", "official/cas");
        shared.share(&mut unmasked);
        let (spec, effective) = parts(&unmasked);
        assert!(Arc::ptr_eq(spec.blueprint.as_ref().unwrap(), &effective), "one manifest");

        let mut masked = event("other", "official/cas");
        if let Decoded::Object(object) = &mut masked {
            let status = Arc::make_mut(Arc::make_mut(object).status.as_mut().unwrap());
            status.effective_blueprint = Some(Arc::new(BlueprintManifest::default()));
        }
        shared.share(&mut masked);
        let (spec, effective) = parts(&masked);
        assert!(!Arc::ptr_eq(spec.blueprint.as_ref().unwrap(), &effective));
        assert_eq!(effective.dogus, None, "the effective blueprint as stored");
    }

    #[test]
    fn nothing_is_held_once_the_objects_are_gone() {
        let mut shared = SharedParts::default();
        let mut first = event("bp", "official/cas");
        shared.share(&mut first);
        drop(first);
        let mut next = event("next", "official/cas");
        shared.share(&mut next);
        assert_eq!(shared.seen.len(), 1, "the dropped Blueprint's name is forgotten");
        // An object someone else holds already is left as it is.
        let held = event("next", "official/cas");
        let mut copy = held.clone();
        shared.share(&mut copy);
        assert!(Arc::ptr_eq(&parts(&copy).0, &parts(&held).0) && !Arc::ptr_eq(&parts(&copy).0, &parts(&next).0));
    }
}
