//! The emulator's storage: objects, the resource version counter and the watch history.

use std::collections::{BTreeMap, VecDeque};

use serde_json::Value;
use tokio::sync::broadcast;

/// `(resource key, namespace, name)`; the namespace is `""` for cluster-scoped objects.
pub type ObjectKey = (String, String, String);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    Added,
    Modified,
    Deleted,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Added => "ADDED",
            Change::Modified => "MODIFIED",
            Change::Deleted => "DELETED",
        }
    }
}

/// One change, as watches see it.
#[derive(Clone, Debug)]
pub struct Record {
    pub resource_version: u64,
    pub resource: String,
    pub namespace: String,
    pub change: Change,
    pub object: Value,
    /// The object before a modification: a watch with a selector sees a change that makes an object
    /// match or stop matching as its addition or deletion, as the API server's watch cache shows it.
    pub previous: Option<Value>,
}

pub struct Store {
    /// The newest resource version handed out.
    pub revision: u64,
    pub objects: BTreeMap<ObjectKey, Value>,
    history: VecDeque<Record>,
    /// Changes up to this version are forgotten: a watch from an older version gets 410 Gone.
    pub compacted: u64,
    max_history: usize,
    pub changes: broadcast::Sender<Record>,
}

impl Store {
    pub fn new(max_history: usize) -> Self {
        Store {
            revision: 1,
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            compacted: 0,
            max_history,
            changes: broadcast::channel(16_384).0,
        }
    }

    pub fn next_revision(&mut self) -> u64 {
        self.revision += 1;
        self.revision
    }

    /// Stores a changed object (already carrying its new resource version) and tells the watches.
    pub fn record(&mut self, key: ObjectKey, change: Change, object: Value, resource_version: u64) {
        let previous = match change {
            Change::Deleted => {
                self.objects.remove(&key);
                None
            }
            Change::Added => {
                self.objects.insert(key.clone(), object.clone());
                None
            }
            Change::Modified => self.objects.insert(key.clone(), object.clone()),
        };
        let record = Record { resource_version, resource: key.0, namespace: key.1, change, object, previous };
        self.history.push_back(record.clone());
        while self.history.len() > self.max_history {
            if let Some(dropped) = self.history.pop_front() {
                self.compacted = dropped.resource_version;
            }
        }
        let _ = self.changes.send(record);
    }

    /// Forgets the whole history (as etcd compaction does).
    pub fn compact(&mut self) {
        self.history.clear();
        self.compacted = self.revision;
    }

    /// Changes after `since`, or `None` when they are no longer known.
    pub fn since(&self, since: u64) -> Option<Vec<Record>> {
        if since < self.compacted {
            return None;
        }
        Some(self.history.iter().filter(|r| r.resource_version > since).cloned().collect())
    }
}
