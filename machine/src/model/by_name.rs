//! Entries in name order, built once from a list and then looked up: what `Installed` keeps of the
//! Dogu CRs; and lookups in name order that walk instead of searching. A B-tree map of a few hundred bytes per entry moved every entry again into its nodes and
//! freed node by node, every reconcile: at 5,000 dogus a fifth of a steady reconcile went to building
//! and dropping it. Lookups by name are few now (the dogus of the blueprint are paired with theirs in
//! one walk, see `pairs`), so a sorted list serves.

use std::collections::BTreeMap;
use std::iter::Peekable;

/// `(name, entry)` pairs, in name order, one per name.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ByName<'o, T> {
    entries: Vec<(&'o str, T)>,
}

impl<'o, T> Default for ByName<'o, T> {
    fn default() -> Self {
        ByName { entries: Vec::new() }
    }
}

impl<'o, T> ByName<'o, T> {
    /// From entries in any order; of two entries of one name, the later one is kept (as inserting
    /// into a map would). Entries already in name order are only walked by the sort.
    pub(crate) fn collect(mut entries: Vec<(&'o str, T)>) -> Self {
        entries.sort_by(|a, b| a.0.cmp(b.0));
        // `dedup_by` keeps the first of a run of equal names: the later entry's value is moved there.
        entries.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                std::mem::swap(later, kept);
            }
            same
        });
        ByName { entries }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&T> {
        self.entries.binary_search_by(|(key, _)| (*key).cmp(name)).ok().map(|at| &self.entries[at].1)
    }

    /// In name order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&'o str, &T)> + '_ {
        self.entries.iter().map(|(name, entry)| (*name, entry))
    }

    /// The entries looked up in name order (see [`InOrder`]).
    pub(crate) fn in_order<'s>(
        &'s self,
    ) -> InOrder<'s, impl Iterator<Item = (&'s str, &'s T)> + 's, impl Fn(&str) -> Option<&'s T> + 's> {
        InOrder::new(self.entries.iter().map(|(name, entry)| (*name as &'s str, entry)), move |name: &str| {
            self.get(name)
        })
    }
}

/// Looks names up among entries in name order by walking on from the last name found: for names asked
/// for in ascending order (a blueprint's dogus), each is found where the walk stands instead of by a
/// search from the start (at 5,000 dogus, lookups of every dogu's Dogu CR and config objects were two
/// fifths of a steady reconcile). A name asked for out of order is searched for, so any order is right.
pub(crate) struct InOrder<'m, I: Iterator, S> {
    walk: Peekable<I>,
    search: S,
    /// The last key the walk passed: every name not above it may lie behind the walk.
    passed: Option<&'m str>,
}

impl<'m, V: 'm, I, S> InOrder<'m, I, S>
where
    I: Iterator<Item = (&'m str, &'m V)>,
    S: Fn(&str) -> Option<&'m V>,
{
    /// `entries` in name order; `search` finds any name among them.
    fn new(entries: I, search: S) -> Self {
        InOrder { walk: entries.peekable(), search, passed: None }
    }

    pub(crate) fn get(&mut self, name: &str) -> Option<&'m V> {
        if self.passed.is_some_and(|passed| name <= passed) {
            return (self.search)(name);
        }
        // One comparison per key passed (a name found compares once, not twice).
        while let Some(&(key, value)) = self.walk.peek() {
            match key.cmp(name) {
                std::cmp::Ordering::Less => {
                    self.passed = Some(key);
                    self.walk.next();
                }
                std::cmp::Ordering::Equal => return Some(value),
                std::cmp::Ordering::Greater => return None,
            }
        }
        None
    }
}

/// The entries of `map` looked up in name order (see [`InOrder`]).
pub(crate) fn in_order<'m, V>(
    map: &'m BTreeMap<String, V>,
) -> InOrder<'m, impl Iterator<Item = (&'m str, &'m V)> + 'm, impl Fn(&str) -> Option<&'m V> + 'm> {
    InOrder::new(map.iter().map(|(key, value)| (key.as_str(), value)), move |name: &str| map.get(name))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::{ByName, in_order};

    #[test]
    fn entries_are_found_by_name_in_name_order_the_later_of_two_kept() {
        let by_name = ByName::collect(vec![("c", 1), ("a", 2), ("b", 3), ("a", 4), ("c", 5), ("c", 6)]);
        assert_eq!(by_name.iter().collect::<Vec<_>>(), [("a", &4), ("b", &3), ("c", &6)]);
        assert_eq!(by_name.get("a"), Some(&4));
        assert_eq!(by_name.get("b"), Some(&3));
        assert_eq!(by_name.get("bb"), None);
        assert_eq!(by_name.get(""), None);
        assert_eq!(ByName::<u8>::collect(Vec::new()).iter().count(), 0);
    }

    #[test]
    fn names_asked_for_in_any_order_are_found_as_by_a_search() {
        let map: BTreeMap<String, usize> =
            ["b", "d", "f", "h"].iter().enumerate().map(|(i, k)| (k.to_string(), i)).collect();
        let list = ByName::collect(map.iter().map(|(k, v)| (k.as_str(), *v)).collect());
        let orders: [&[&str]; 4] = [
            &["a", "b", "c", "d", "e", "f", "g", "h", "i"],
            &["h", "b", "f", "a", "d", "d", "i", "c"],
            &["b", "b", "i", "h", "a"],
            &[],
        ];
        for order in orders {
            let mut in_map = in_order(&map);
            let mut in_list = list.in_order();
            for name in order {
                assert_eq!(in_map.get(name), map.get(*name), "{name} in {order:?}");
                assert_eq!(in_list.get(name), map.get(*name), "{name} in {order:?}, from a list");
            }
        }
    }
}
