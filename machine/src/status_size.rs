//! Bounds what the status adds to the Blueprint object, so that the status write cannot fail for size.
//!
//! The API server stores an object in etcd only up to 1.5 MiB (etcd's default request limit), and a
//! Blueprint's `spec` is there already (twice with `kubectl apply`'s last-applied annotation). The
//! status repeats the effective blueprint and lists a diff entry per dogu: a blueprint of 5,000 dogus
//! gave a 1.19 MB status and a 1.7 MB object, which can never be written. So the two large parts of
//! the status are kept within a budget: up to [`STATUS_PARTS_LIMIT`], and less when the Blueprint's own
//! metadata and spec leave less room under [`OBJECT_LIMIT`] (a third of the room is left to the
//! `managedFields` the server keeps for the status). Beyond the budget, the effective blueprint is
//! omitted when it would take more than half of it, and the state diff keeps its first entries (in
//! name order) and counts the rest; the `Completed` condition says so.

use serde::Serialize;

use crate::api::{Blueprint, StateDiff};
use crate::reading::Published;

/// What the operator lets a Blueprint object grow to (etcd's default limit is 1,572,864 bytes).
pub const OBJECT_LIMIT: usize = 1_400_000;
/// The most the effective blueprint and the state diff together take in the status.
pub const STATUS_PARTS_LIMIT: usize = 512 * 1024;
/// Parts this small are kept without measuring the Blueprint itself (the common case: cheap).
const ALWAYS_FITS: usize = 64 * 1024;

/// The effective blueprint and state diff to publish, and what was left out.
#[derive(Debug)]
pub(crate) struct Fitted {
    pub effective_blueprint: Option<Published>,
    pub state_diff: StateDiff,
    /// Why and what was summarised, for the `Completed` condition; `None` when nothing was.
    pub note: Option<String>,
}

/// Fits the effective blueprint and the state diff of a Blueprint's
/// status into the budget; `own_size` gives the length of the Blueprint's metadata and spec (see
/// [`own_size`]), asked for only when the parts are not small.
pub(crate) fn fit(
    own_size: impl FnOnce() -> usize,
    effective_blueprint: Option<Published>,
    state_diff: StateDiff,
) -> Fitted {
    let effective_size = effective_blueprint.as_ref().map_or(0, |published| published.size);
    let diff_size = size(&state_diff);
    if effective_size + diff_size <= ALWAYS_FITS {
        return Fitted { effective_blueprint, state_diff, note: None };
    }
    let own = own_size();
    let budget = STATUS_PARTS_LIMIT.min(OBJECT_LIMIT.saturating_sub(own) * 2 / 3);
    if effective_size + diff_size <= budget {
        return Fitted { effective_blueprint, state_diff, note: None };
    }
    let mut left_out = Vec::new();
    let (effective_blueprint, effective_size) = if effective_size > budget / 2 {
        left_out.push(format!("effectiveBlueprint omitted ({effective_size} bytes)"));
        (None, 0)
    } else {
        (effective_blueprint, effective_size)
    };
    let (state_diff, omitted) = trim(state_diff, budget.saturating_sub(effective_size));
    left_out.extend(omitted);
    let note = format!(
        "The status is summarised to stay within {budget} bytes (the Blueprint object must stay under the API server's size limit): {}.",
        left_out.join("; ")
    );
    Fitted { effective_blueprint, state_diff, note: Some(note) }
}

/// The length of the JSON of the Blueprint's metadata and spec: what the status shares the object's
/// size limit with.
pub(crate) fn own_size(blueprint: &Blueprint) -> usize {
    size(&blueprint.metadata) + blueprint.blueprint_spec().map_or(0, size)
}

/// Keeps the diff's first entries, map by map, within `budget` bytes; says what was left out.
fn trim(diff: StateDiff, budget: usize) -> (StateDiff, Vec<String>) {
    if size(&diff) <= budget {
        return (diff, Vec::new());
    }
    let mut room = budget;
    let mut left_out = Vec::new();
    let mut take = |what: &str, total: usize, entries: &mut dyn Iterator<Item = usize>| -> usize {
        let mut kept = 0;
        for entry in entries {
            if entry > room {
                break;
            }
            room -= entry;
            kept += 1;
        }
        if kept < total {
            left_out.push(format!("stateDiff shows {kept} of {total} {what}"));
        }
        kept
    };
    // The entry's size in the document: key, value and separators.
    let keyed = |name: &String, value: &dyn erased::Sized| name.len() + value.serialized_len() + 4;
    let dogus =
        take("dogu diffs", diff.dogu_diffs.len(), &mut diff.dogu_diffs.iter().map(|(name, value)| keyed(name, value)));
    let components = take(
        "component diffs",
        diff.component_diffs.len(),
        &mut diff.component_diffs.iter().map(|(name, value)| keyed(name, value)),
    );
    let configs = take(
        "dogu config diffs",
        diff.dogu_config_diffs.len(),
        &mut diff.dogu_config_diffs.iter().map(|(name, value)| keyed(name, value)),
    );
    let global = take(
        "global config diffs",
        diff.global_config_diff.len(),
        &mut diff.global_config_diff.iter().map(|e| size(e) + 1),
    );
    let StateDiff { dogu_diffs, component_diffs, dogu_config_diffs, global_config_diff } = diff;
    let trimmed = StateDiff {
        dogu_diffs: dogu_diffs.into_iter().take(dogus).collect(),
        component_diffs: component_diffs.into_iter().take(components).collect(),
        dogu_config_diffs: dogu_config_diffs.into_iter().take(configs).collect(),
        global_config_diff: global_config_diff.into_iter().take(global).collect(),
    };
    (trimmed, left_out)
}

/// The length of a value's JSON, without building it (the shell sizes its request bodies with it).
pub fn size<T: Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail, and the status types serialize infallibly.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Sizes of differently typed map values behind one closure.
mod erased {
    pub(super) trait Sized {
        fn serialized_len(&self) -> usize;
    }

    impl<T: serde::Serialize> Sized for T {
        fn serialized_len(&self) -> usize {
            super::size(self)
        }
    }
}
