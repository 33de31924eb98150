//! Entries in name order, built once from a list and then looked up: what `Installed` keeps of the
//! Dogu CRs. A B-tree map of a few hundred bytes per entry moved every entry again into its nodes and
//! freed node by node, every reconcile: at 5,000 dogus a fifth of a steady reconcile went to building
//! and dropping it. Lookups by name are few now (the dogus of the blueprint are paired with theirs in
//! one walk, see `pairs`), so a sorted list serves.

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
}

#[cfg(test)]
mod tests {
    use super::ByName;

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
}
