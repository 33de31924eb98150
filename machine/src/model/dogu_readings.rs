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

/// The readings of a list of Dogu CRs.
#[derive(Debug, Default)]
pub struct DoguReadings {
    /// One per object, in the list's order.
    entries: Vec<Entry>,
    /// The places of the objects with a name, in name order (of two of one name, the later last).
    order: Vec<usize>,
}

#[derive(Debug)]
struct Entry {
    /// The object read. A weak reference keeps its allocation, so no other object can take its
    /// address while the entry lives, but not the object's contents: an object the cache replaced is
    /// freed but for its top-level struct (no copy of a changed object's strings stays behind).
    object: Weak<Dogu>,
    /// `None` for an object without a name (it is not read). Boxed: an entry may move into the next
    /// reconcile's list, and a reading is a few hundred bytes.
    reading: Option<Result<Box<DoguReading>, Unreadable>>,
}

/// Why an object could not be read, with its name (a reading has its own).
#[derive(Debug)]
struct Unreadable {
    name: Box<str>,
    problem: Problem,
}

impl Entry {
    fn read(object: &Arc<Dogu>) -> Entry {
        let reading = object.metadata.name.as_deref().map(|name| {
            DoguReading::read(name, object).map(Box::new).map_err(|problem| Unreadable { name: name.into(), problem })
        });
        Entry { object: Arc::downgrade(object), reading }
    }

    fn is_of(&self, object: &Arc<Dogu>) -> bool {
        std::ptr::eq(self.object.as_ptr(), Arc::as_ptr(object))
    }
}

impl DoguReadings {
    /// The readings of `objects`: a reading of `kept` whose object is one of them, the very same, is
    /// used again; the others are read.
    pub fn of(objects: &[Arc<Dogu>], mut kept: DoguReadings) -> DoguReadings {
        if kept.entries.len() == objects.len() {
            // The cache lists its objects in the same places from one reconcile to the next while none
            // is added or removed: an object replaced in its place is read, the others are kept where
            // they are (a comparison of addresses each).
            let mut same_names = true;
            for (entry, object) in kept.entries.iter_mut().zip(objects) {
                if !entry.is_of(object) {
                    let read = Entry::read(object);
                    same_names &= name(&read) == name(entry);
                    *entry = read;
                }
            }
            if !same_names {
                kept.order = name_order(objects);
            }
            return kept;
        }
        // Objects added or gone: each kept reading is looked for by its object's name, both in name
        // order, in one walk.
        let order = name_order(objects);
        let mut slots: Vec<Option<Entry>> = kept.entries.into_iter().map(Some).collect();
        let mut kept_in_order = kept.order.iter().filter_map(|&at| slots[at].take()).peekable();
        let mut entries: Vec<Option<Entry>> = std::iter::repeat_with(|| None).take(objects.len()).collect();
        for &at in &order {
            let object = &objects[at];
            let wanted = object.metadata.name.as_deref();
            while kept_in_order.next_if(|entry| name(entry) < wanted).is_some() {}
            let reused = kept_in_order.next_if(|entry| name(entry) == wanted && entry.is_of(object));
            entries[at] = Some(reused.unwrap_or_else(|| Entry::read(object)));
        }
        let entries =
            entries.into_iter().zip(objects).map(|(entry, object)| entry.unwrap_or_else(|| Entry::read(object)));
        DoguReadings { entries: entries.collect(), order }
    }

    /// Whether these are the readings of `objects`, each of the very object in its place.
    pub fn is_of(&self, objects: &[Arc<Dogu>]) -> bool {
        self.entries.len() == objects.len()
            && self.entries.iter().zip(objects).all(|(entry, object)| entry.is_of(object))
    }

    /// How many objects were read (those with a name).
    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }

    /// Each object of `objects` (those these are the readings of) that has a name, with its reading,
    /// in name order.
    pub(crate) fn of_objects<'o>(
        &'o self,
        objects: &'o [Arc<Dogu>],
    ) -> impl Iterator<Item = (&'o Dogu, Result<&'o DoguReading, &'o Problem>)> + 'o {
        self.order.iter().filter_map(|&at| {
            let reading = self.entries[at].reading.as_ref()?.as_deref().map_err(|unreadable| &unreadable.problem);
            Some((&*objects[at], reading))
        })
    }
}

/// The name of the object an entry read (`None`: it has none).
fn name(entry: &Entry) -> Option<&str> {
    match entry.reading.as_ref()? {
        // A reading is of the object of its name.
        Ok(reading) => Some(&reading.name.simple),
        Err(unreadable) => Some(&unreadable.name),
    }
}

/// The places of the objects with a name, in name order (stable: of two of one name, the later last).
fn name_order(objects: &[Arc<Dogu>]) -> Vec<usize> {
    let mut named: Vec<(usize, &str)> = Vec::with_capacity(objects.len());
    named.extend(objects.iter().enumerate().filter_map(|(at, object)| Some((at, object.metadata.name.as_deref()?))));
    named.sort_by(|a, b| a.1.cmp(b.1));
    named.into_iter().map(|(at, _)| at).collect()
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
        let entry = readings.entries.iter().find(|e| super::name(e) == Some(name)).expect("read");
        match &entry.reading {
            Some(Ok(reading)) => reading,
            _ => panic!("{name} is not readable"),
        }
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
        let kept_ldap: *const DoguReading = reading_of(&first, "ldap");
        let kept_redmine: *const DoguReading = reading_of(&first, "redmine");

        // ldap replaced in its place (a new version): only it is read again.
        let replaced = vec![Arc::clone(&objects[0]), dogu("ldap", "2.6.8-2"), Arc::clone(&objects[2])];
        let second = DoguReadings::of(&replaced, first);
        assert!(second.is_of(&replaced));
        assert!(std::ptr::eq(kept_cas, reading_of(&second, "cas")), "the same object: its reading kept");
        assert!(std::ptr::eq(kept_redmine, reading_of(&second, "redmine")));
        assert!(!std::ptr::eq(kept_ldap, reading_of(&second, "ldap")));
        let expected = [("cas", "7.0.8-1"), ("ldap", "2.6.8-2"), ("redmine", "5.1.3-1")];
        assert_eq!(read(&second, &replaced), expected.map(|(n, v)| (n.to_owned(), v.to_owned())));

        // redmine gone, postfix new, the list in another order: cas is found by its name.
        let changed =
            vec![dogu("postfix", "3.9.0-1"), Arc::clone(&replaced[0]), dogu("ldap", "2.6.8-3"), dogu("a", "1.0.0-1")];
        let third = DoguReadings::of(&changed, second);
        assert!(third.is_of(&changed));
        assert!(std::ptr::eq(kept_cas, reading_of(&third, "cas")), "found by its name");
        let expected = [("a", "1.0.0-1"), ("cas", "7.0.8-1"), ("ldap", "2.6.8-3"), ("postfix", "3.9.0-1")];
        assert_eq!(read(&third, &changed), expected.map(|(n, v)| (n.to_owned(), v.to_owned())));

        // A name changed in its place (one object gone, another added where it was): the name order
        // is worked out again.
        let renamed =
            vec![Arc::clone(&changed[0]), Arc::clone(&changed[1]), Arc::clone(&changed[2]), dogu("zammad", "6.0.0-1")];
        let fourth = DoguReadings::of(&renamed, third);
        let expected = [("cas", "7.0.8-1"), ("ldap", "2.6.8-3"), ("postfix", "3.9.0-1"), ("zammad", "6.0.0-1")];
        assert_eq!(read(&fourth, &renamed), expected.map(|(n, v)| (n.to_owned(), v.to_owned())));
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
        assert!(matches!(again.entries[0].reading, Some(Err(_))));
        assert!(again.entries[1].reading.is_none(), "an object without a name is not read");
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
