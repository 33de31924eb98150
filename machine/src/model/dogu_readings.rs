//! Each Dogu CR read once ([`DoguReading`]: parsed and checked) and kept from one reconcile to the
//! next while its object is the same. Most reconciles follow a change of one object (a Dogu's status
//! moved, a config object was written): reading every Dogu CR again each time was a fifth to a quarter
//! of a steady reconcile at 5,000 dogus (docs/performance.md). A reading is a function of its object
//! alone, and the observed objects are immutable `Arc`s replaced on every change, so "the same `Arc`"
//! means "the same object": keeping readings changes no decision.
//!
//! Pure like the rest of the machine: the shell keeps the value between reconciles and hands it back;
//! readings of other objects than the observation's are never used (see [`DoguReadings::is_of`]).

use std::sync::{Arc, Weak};

use super::installed::DoguReading;
use crate::api::Dogu;
use crate::problem::Problem;

/// The readings of a list of Dogu CRs, in name order.
#[derive(Debug, Default)]
pub struct DoguReadings {
    entries: Vec<Entry>,
}

#[derive(Debug)]
struct Entry {
    /// Where the object is in the list these are the readings of.
    at: usize,
    /// The object read. A weak reference keeps its allocation, so no other object can take its
    /// address while the entry lives, but not the object's contents: an object the cache replaced is
    /// freed but for its top-level struct (no copy of a changed object's strings stays behind).
    object: Weak<Dogu>,
    /// Boxed: a kept entry moves into the next reconcile's list, and a reading is a few hundred bytes.
    reading: Result<Box<DoguReading>, Unreadable>,
}

/// Why an object could not be read, with its name (a reading has its own).
#[derive(Debug)]
struct Unreadable {
    name: Box<str>,
    problem: Problem,
}

impl Entry {
    fn name(&self) -> &str {
        match &self.reading {
            Ok(reading) => &reading.name.simple,
            Err(unreadable) => &unreadable.name,
        }
    }

    fn is_of(&self, object: &Arc<Dogu>) -> bool {
        std::ptr::eq(self.object.as_ptr(), Arc::as_ptr(object))
    }
}

impl DoguReadings {
    /// The readings of `objects` (objects without a name have none): a reading of `kept` whose
    /// object is one of them, the very same, is used again; the others are read.
    pub fn of(objects: &[Arc<Dogu>], kept: DoguReadings) -> DoguReadings {
        let mut in_order: Vec<(usize, &str)> = objects
            .iter()
            .enumerate()
            .filter_map(|(at, object)| Some((at, object.metadata.name.as_deref()?)))
            .collect();
        // Stable: of two objects of one name, the later stays later (it wins, see `Installed`).
        in_order.sort_by(|a, b| a.1.cmp(b.1));
        let mut kept = kept.entries.into_iter().peekable();
        let entries = in_order
            .into_iter()
            .map(|(at, name)| {
                let object = &objects[at];
                // The kept entries are in name order too: walk them alongside.
                while kept.next_if(|entry| entry.name() < name).is_some() {}
                match kept.next_if(|entry| entry.name() == name && entry.is_of(object)) {
                    Some(entry) => Entry { at, ..entry },
                    None => Entry { at, object: Arc::downgrade(object), reading: read(name, object) },
                }
            })
            .collect();
        DoguReadings { entries }
    }

    /// Whether these are the readings of `objects`, each of the very object there.
    pub fn is_of(&self, objects: &[Arc<Dogu>]) -> bool {
        let named = objects.iter().filter(|object| object.metadata.name.is_some()).count();
        // Each entry names a different place: as many entries as named objects cover them all.
        self.entries.len() == named
            && self.entries.iter().all(|entry| objects.get(entry.at).is_some_and(|object| entry.is_of(object)))
    }

    /// How many objects were read.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Each object of `objects` (those these are the readings of) with its reading, in name order.
    pub(crate) fn of_objects<'o>(
        &'o self,
        objects: &'o [Arc<Dogu>],
    ) -> impl Iterator<Item = (&'o Dogu, Result<&'o DoguReading, &'o Problem>)> + 'o {
        self.entries.iter().map(|entry| {
            let reading = entry.reading.as_deref().map_err(|unreadable| &unreadable.problem);
            (&*objects[entry.at], reading)
        })
    }
}

fn read(name: &str, object: &Dogu) -> Result<Box<DoguReading>, Unreadable> {
    DoguReading::read(name, object).map(Box::new).map_err(|problem| Unreadable { name: name.into(), problem })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    fn dogu(name: &str, version: &str) -> Arc<Dogu> {
        Arc::new(fixtures::dogu_cr(&format!("official/{name}"), version))
    }

    /// `(name, version read or the problem)` of each reading, in order.
    fn read(readings: &DoguReadings, objects: &[Arc<Dogu>]) -> Vec<(String, String)> {
        readings
            .of_objects(objects)
            .map(|(object, reading)| {
                let read = reading.map_or_else(|p| p.to_string(), |r| r.version.raw().to_owned());
                (object.metadata.name.clone().unwrap_or_default(), read)
            })
            .collect()
    }

    fn reading_of<'r>(readings: &'r DoguReadings, name: &str) -> &'r DoguReading {
        let entry = readings.entries.iter().find(|e| e.name() == name).expect("read");
        entry.reading.as_deref().expect("readable")
    }

    #[test]
    fn readings_are_in_name_order_whatever_the_objects_order() {
        let objects = vec![dogu("redmine", "5.1.3-1"), dogu("cas", "7.0.8-1"), dogu("ldap", "2.6.8-1")];
        let readings = DoguReadings::of(&objects, DoguReadings::default());
        assert!(readings.is_of(&objects));
        let expected = [("cas", "7.0.8-1"), ("ldap", "2.6.8-1"), ("redmine", "5.1.3-1")];
        assert_eq!(read(&readings, &objects), expected.map(|(n, v)| (n.to_owned(), v.to_owned())));
    }

    #[test]
    fn the_same_object_is_not_read_again_a_replaced_one_is() {
        let objects = vec![dogu("cas", "7.0.8-1"), dogu("ldap", "2.6.8-1"), dogu("redmine", "5.1.3-1")];
        let first = DoguReadings::of(&objects, DoguReadings::default());
        let kept_cas: *const DoguReading = reading_of(&first, "cas");
        let kept_redmine: *const DoguReading = reading_of(&first, "redmine");

        // ldap replaced (a new version), redmine gone, postfix new; the list in another order.
        let changed = vec![dogu("postfix", "3.9.0-1"), dogu("ldap", "2.6.8-2"), Arc::clone(&objects[0])];
        let second = DoguReadings::of(&changed, first);
        assert!(second.is_of(&changed));
        assert!(std::ptr::eq(kept_cas, reading_of(&second, "cas")), "the same object: its reading kept");
        let expected = [("cas", "7.0.8-1"), ("ldap", "2.6.8-2"), ("postfix", "3.9.0-1")];
        assert_eq!(read(&second, &changed), expected.map(|(n, v)| (n.to_owned(), v.to_owned())));
        assert!(!second.entries.iter().any(|e| std::ptr::eq(kept_redmine, &**e.reading.as_ref().unwrap())));
    }

    #[test]
    fn readings_of_other_objects_are_not_theirs() {
        let objects = vec![dogu("cas", "7.0.8-1"), dogu("ldap", "2.6.8-1")];
        let readings = DoguReadings::of(&objects, DoguReadings::default());
        // Equal objects that are not the same ones (the cache replaced them), one more, one fewer.
        let equal = vec![dogu("cas", "7.0.8-1"), dogu("ldap", "2.6.8-1")];
        assert!(!readings.is_of(&equal));
        assert!(!readings.is_of(&[Arc::clone(&objects[0])]));
        let more = vec![Arc::clone(&objects[0]), Arc::clone(&objects[1]), dogu("redmine", "5.1.3-1")];
        assert!(!readings.is_of(&more));
        // The same objects in another order are found where they are.
        let swapped = vec![Arc::clone(&objects[1]), Arc::clone(&objects[0])];
        assert!(!readings.is_of(&swapped), "places differ");
        assert!(DoguReadings::of(&swapped, readings).is_of(&swapped));
    }

    #[test]
    fn an_unreadable_object_is_kept_with_its_problem_and_an_unnamed_one_is_left_out() {
        let mut broken = fixtures::dogu_cr("official/cas", "7.0.8-1");
        broken.spec.version = "seven".into();
        let mut unnamed = fixtures::dogu_cr("official/ldap", "2.6.8-1");
        unnamed.metadata.name = None;
        let objects = vec![Arc::new(broken), Arc::new(unnamed)];
        let readings = DoguReadings::of(&objects, DoguReadings::default());
        assert!(readings.is_of(&objects));
        let read = read(&readings, &objects);
        assert_eq!(read.len(), 1);
        assert!(read[0].1.contains("cannot read dogu CR \"cas\""), "{read:?}");
        let again = DoguReadings::of(&objects, readings);
        assert!(std::ptr::eq(again.entries[0].object.as_ptr(), Arc::as_ptr(&objects[0])));
        assert!(again.entries[0].reading.is_err());
    }

    #[test]
    fn of_two_objects_of_one_name_both_are_read_in_their_order() {
        let objects = vec![dogu("cas", "7.0.8-1"), dogu("ldap", "2.6.8-1"), dogu("cas", "7.0.9-1")];
        let first = DoguReadings::of(&objects, DoguReadings::default());
        let expected = [("cas", "7.0.8-1"), ("cas", "7.0.9-1"), ("ldap", "2.6.8-1")];
        assert_eq!(read(&first, &objects), expected.map(|(n, v)| (n.to_owned(), v.to_owned())));
        let second = DoguReadings::of(&objects, first);
        assert_eq!(read(&second, &objects), expected.map(|(n, v)| (n.to_owned(), v.to_owned())));
    }

    #[test]
    fn a_kept_reading_does_not_keep_a_replaced_objects_contents() {
        let old = dogu("cas", "7.0.8-1");
        let readings = DoguReadings::of(std::slice::from_ref(&old), DoguReadings::default());
        assert_eq!((Arc::strong_count(&old), Arc::weak_count(&old)), (1, 1));
        let weak = Arc::downgrade(&old);
        drop(old);
        assert!(weak.upgrade().is_none(), "the object itself is freed while its reading is kept");
        let fresh = vec![dogu("cas", "7.0.9-1")];
        let readings = DoguReadings::of(&fresh, readings);
        assert_eq!(read(&readings, &fresh), [("cas".to_owned(), "7.0.9-1".to_owned())]);
    }
}
