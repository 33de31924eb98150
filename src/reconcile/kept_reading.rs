//! Each Blueprint's reading (parsed, statically validated, masked: `blueprint_machine::Reading`) kept
//! from one reconcile to the next while neither the Blueprint object nor the masks of its namespace
//! changed. Most reconciles are of an unchanged Blueprint (a Dogu's status moved, a config object was
//! written): reading it again every time was about a third of a steady reconcile's decision
//! (docs/performance.md). The reading is a pure function of these objects, so keeping it changes no
//! decision; the cached objects are immutable `Arc`s, replaced on every change, so "the same `Arc`"
//! means "the same object". A reconcile that writes the status forgets the reading: the write
//! replaces the object, so the reading could not serve again, and would keep the old object (at 1,000
//! dogus, megabytes) alive beside the new one until the next reconcile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use blueprint_machine::Reading;
use blueprint_machine::api::{Blueprint, BlueprintMaskObject};

/// What a reading is of: the Blueprint it borrows from, and the masks it was read with.
pub struct ReadingSource {
    blueprint: Arc<Blueprint>,
    masks: Vec<Arc<BlueprintMaskObject>>,
}

impl ReadingSource {
    fn is(&self, blueprint: &Arc<Blueprint>, masks: &[Arc<BlueprintMaskObject>]) -> bool {
        Arc::ptr_eq(&self.blueprint, blueprint)
            && self.masks.len() == masks.len()
            // The store lists its objects in no fixed order: the same set, whatever the order.
            && masks.iter().all(|mask| self.masks.iter().any(|kept| Arc::ptr_eq(kept, mask)))
    }
}

self_cell::self_cell!(
    /// A reading together with the objects it borrows from.
    pub struct KeptReading {
        owner: ReadingSource,
        #[covariant]
        dependent: Reading,
    }
);

impl KeptReading {
    pub fn reading(&self) -> &Reading<'_> {
        self.borrow_dependent()
    }
}

/// The reading of each Blueprint, by name, as its last reconcile read it.
#[derive(Default)]
pub struct KeptReadings {
    by_name: Mutex<HashMap<String, Arc<KeptReading>>>,
}

impl KeptReadings {
    /// The reading of `blueprint` with `masks`: the kept one if it is of these very objects, else
    /// read now and kept for the next reconcile of `name`.
    pub fn read(&self, name: &str, blueprint: &Arc<Blueprint>, masks: &[Arc<BlueprintMaskObject>]) -> Arc<KeptReading> {
        let mut by_name = self.by_name.lock().expect("not poisoned");
        match by_name.get(name) {
            Some(kept) if kept.borrow_owner().is(blueprint, masks) => return Arc::clone(kept),
            // Of an object the cache replaced: freed before the new reading is made, not beside it.
            _ => drop(by_name.remove(name)),
        }
        drop(by_name);
        // Read outside the lock: a reconcile of another Blueprint does not wait for it.
        let source = ReadingSource { blueprint: Arc::clone(blueprint), masks: masks.to_vec() };
        let read = Arc::new(KeptReading::new(source, |source| Reading::of(&source.blueprint, &source.masks)));
        self.by_name.lock().expect("not poisoned").insert(name.to_owned(), Arc::clone(&read));
        read
    }

    /// Whether a reading of the Blueprint `name` is kept.
    pub fn holds(&self, name: &str) -> bool {
        self.by_name.lock().expect("not poisoned").contains_key(name)
    }

    /// The Blueprint is gone, or about to be replaced (this process wrote its status): its reading,
    /// and the object it holds, go now instead of beside the next one.
    pub fn forget(&self, name: &str) {
        self.by_name.lock().expect("not poisoned").remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blueprint(dogu_version: &str) -> Arc<Blueprint> {
        let spec =
            format!("{{displayName: x, blueprint: {{dogus: [{{name: official/ldap, version: {dogu_version}}}]}}}}");
        Arc::new(blueprint_machine::fixtures::blueprint(&spec))
    }

    fn wanted(read: &KeptReading) -> Vec<(String, String)> {
        read.reading().wanted_descriptors()
    }

    #[test]
    fn the_same_objects_are_read_once() {
        let readings = KeptReadings::default();
        let object = blueprint("2.6.2-1");
        let first = readings.read("ces", &object, &[]);
        let second = readings.read("ces", &object, &[]);
        assert!(Arc::ptr_eq(&first, &second), "the kept reading is used again");
        assert_eq!(wanted(&second), [("official/ldap".to_owned(), "2.6.2-1".to_owned())]);
    }

    #[test]
    fn a_changed_blueprint_or_mask_is_read_again() {
        let readings = KeptReadings::default();
        let first = readings.read("ces", &blueprint("2.6.2-1"), &[]);
        // An equal object that is not the same one: the cache replaced it (a new resourceVersion).
        let replaced = blueprint("2.6.3-1");
        let second = readings.read("ces", &replaced, &[]);
        assert!(!Arc::ptr_eq(&first, &second));
        assert_eq!(wanted(&second), [("official/ldap".to_owned(), "2.6.3-1".to_owned())]);

        let mask = Arc::new(blueprint_machine::fixtures::blueprint_mask("m", "{blueprintMask: {dogus: []}}"));
        let masked = readings.read("ces", &replaced, std::slice::from_ref(&mask));
        assert!(!Arc::ptr_eq(&second, &masked), "a new mask in the namespace: read again");
        let again = readings.read("ces", &replaced, std::slice::from_ref(&mask));
        assert!(Arc::ptr_eq(&masked, &again));
        assert!(!Arc::ptr_eq(&again, &readings.read("ces", &replaced, &[])), "the mask is gone: read again");
    }

    #[test]
    fn the_reading_of_a_replaced_object_lets_the_object_go() {
        let readings = KeptReadings::default();
        let old = blueprint("2.6.2-1");
        drop(readings.read("ces", &old, &[]));
        assert_eq!(Arc::strong_count(&old), 2, "kept with its reading");
        drop(readings.read("ces", &blueprint("2.6.3-1"), &[]));
        assert_eq!(Arc::strong_count(&old), 1, "nothing holds the replaced object");
    }

    #[test]
    fn a_forgotten_blueprint_is_read_again() {
        let readings = KeptReadings::default();
        let object = blueprint("2.6.2-1");
        let first = readings.read("ces", &object, &[]);
        readings.forget("ces");
        assert!(!Arc::ptr_eq(&first, &readings.read("ces", &object, &[])));
    }
}
