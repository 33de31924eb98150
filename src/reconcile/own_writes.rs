//! The status writes of this process, so that a watch event can be told apart as ours: the event of
//! our own write triggers nothing, any other change of a Blueprint's status (a hand edit such as
//! `Completed=False/Tampered`) triggers the reconcile that restores it (`controller::triggers`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The `resourceVersion` the last status write of this process produced, by Blueprint name.
#[derive(Clone, Default)]
pub struct OwnStatusWrites(Arc<Mutex<HashMap<String, String>>>);

impl OwnStatusWrites {
    /// Our status write of `name` produced `resource_version`.
    pub fn record(&self, name: &str, resource_version: String) {
        self.0.lock().expect("not poisoned").insert(name.to_owned(), resource_version);
    }

    /// Whether `resource_version` of `name` is what our last status write of it produced.
    pub fn is_ours(&self, name: &str, resource_version: Option<&str>) -> bool {
        let written = self.0.lock().expect("not poisoned");
        resource_version.is_some_and(|version| written.get(name).is_some_and(|ours| ours == version))
    }

    /// Forgets a Blueprint that is gone.
    pub fn forget(&self, name: &str) {
        self.0.lock().expect("not poisoned").remove(name);
    }
}
