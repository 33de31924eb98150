//! The status's state diff between v1 and v3: the same diff in two shapes (`installationState` and
//! `absent`, empty strings and none); a sensitive value never shows in either.

use std::collections::BTreeMap;

use super::wire::*;
use crate::api::{CombinedDoguConfigDiff, ConfigEntryDiff, DoguDiff, DoguDiffState};

pub(super) fn diff_to_v3(diff: StateDiffV1) -> StateDiffV3 {
    let dogu_state = |s: DoguDiffStateV1| DoguDiffState {
        namespace: s.namespace.unwrap_or_default(),
        version: s.version.filter(|v| !v.is_empty()),
        absent: s.installation_state == "absent",
        resource_config: s.resource_config.filter(|r| *r != Default::default()).map(Box::new),
        reverse_proxy_config: s.reverse_proxy_config.filter(|r| *r != Default::default()).map(Box::new),
        additional_mounts: s.additional_mounts,
    };
    let component_state = |s: ComponentDiffStateV1| ComponentDiffStateV3 {
        distribution_namespace: s.distribution_namespace.unwrap_or_default(),
        version: s.version.filter(|v| !v.is_empty()),
        absent: s.installation_state == "absent",
        deploy_config: s.deploy_config,
    };
    StateDiffV3 {
        dogu_diffs: each(diff.dogu_diffs, |d| DoguDiff {
            actual: dogu_state(d.actual),
            expected: dogu_state(d.expected),
            needed_actions: d.needed_actions,
        }),
        component_diffs: each(diff.component_diffs, |d| ComponentDiffV3 {
            actual: component_state(d.actual),
            expected: component_state(d.expected),
            needed_actions: d.needed_actions,
        }),
        dogu_config_diffs: each(diff.dogu_config_diffs, without_sensitive_values),
        global_config_diff: diff.global_config_diff,
    }
}

pub(super) fn diff_to_v1(diff: StateDiffV3) -> StateDiffV1 {
    let state = |absent: bool| if absent { "absent" } else { "present" }.to_owned();
    let dogu_state = |s: DoguDiffState| DoguDiffStateV1 {
        namespace: Some(s.namespace).filter(|n| !n.is_empty()),
        installation_state: state(s.absent),
        version: s.version,
        resource_config: s.resource_config.map(|mut r| {
            r.storage_class_name = None;
            *r
        }),
        reverse_proxy_config: s.reverse_proxy_config.map(|r| *r),
        additional_mounts: s.additional_mounts,
    };
    let component_state = |s: ComponentDiffStateV3| ComponentDiffStateV1 {
        distribution_namespace: Some(s.distribution_namespace).filter(|n| !n.is_empty()),
        installation_state: state(s.absent),
        version: s.version,
        deploy_config: s.deploy_config,
    };
    StateDiffV1 {
        dogu_diffs: each(diff.dogu_diffs, |d| DoguDiffV1 {
            actual: dogu_state(d.actual),
            expected: dogu_state(d.expected),
            needed_actions: d.needed_actions,
        }),
        component_diffs: each(diff.component_diffs, |d| ComponentDiffV1 {
            actual: component_state(d.actual),
            expected: component_state(d.expected),
            needed_actions: d.needed_actions,
        }),
        dogu_config_diffs: each(diff.dogu_config_diffs, without_sensitive_values),
        global_config_diff: diff.global_config_diff,
    }
}

/// Every entry of a diff's map, by name, through `convert`.
fn each<D, E>(diffs: BTreeMap<String, D>, convert: impl Fn(D) -> E) -> BTreeMap<String, E> {
    diffs.into_iter().map(|(name, d)| (name, convert(d))).collect()
}

/// A state diff never shows a sensitive value (v1's `*****` included).
fn without_sensitive_values(mut diff: CombinedDoguConfigDiff) -> CombinedDoguConfigDiff {
    for entry in &mut diff.sensitive_dogu_config_diff {
        let ConfigEntryDiff { actual, expected, .. } = entry;
        actual.value = None;
        expected.value = None;
    }
    diff
}
