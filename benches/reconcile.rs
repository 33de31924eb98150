//! The cost of one `reconcile`: a 30-dogu blueprint with 200 config keys, fresh install, steady state
//! and upgrade. (The full series over blueprint sizes is its own issue.)

use std::collections::BTreeMap;

use blueprint_machine::api::{Blueprint, BlueprintBody, BlueprintSpec, Dogu, DoguSpec, DoguStatus};
use blueprint_machine::model::DoguDescriptor;
use blueprint_machine::observation::{
    ConfigObservation, DescriptorEntry, DescriptorLookup, Observation, OperatorFacts,
};
use criterion::{Criterion, criterion_group, criterion_main};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

const DOGUS: usize = 30;
const KEYS_PER_DOGU: usize = 6;
const GLOBAL_KEYS: usize = 20;

fn blueprint(version: &str) -> Blueprint {
    let dogus: Vec<_> =
        (0..DOGUS).map(|i| json!({"name": format!("official/dogu{i:02}"), "version": version})).collect();
    let config: BTreeMap<String, Vec<serde_json::Value>> = (0..DOGUS)
        .map(|i| {
            let entries = (0..KEYS_PER_DOGU)
                .map(|k| json!({"key": format!("section/key{k}"), "value": format!("value-{k}")}))
                .collect();
            (format!("dogu{i:02}"), entries)
        })
        .collect();
    let global: Vec<_> = (0..GLOBAL_KEYS).map(|k| json!({"key": format!("global/key{k}"), "value": "g"})).collect();
    let spec: BlueprintSpec = serde_json::from_value(json!({
        "displayName": "bench",
        "blueprint": {"dogus": dogus, "config": {"dogus": config, "global": global}}
    }))
    .unwrap();
    Blueprint {
        metadata: ObjectMeta { name: Some("bench".into()), generation: Some(1), ..Default::default() },
        spec: BlueprintBody { spec: Some(spec) },
        status: None,
    }
}

fn installed(version: &str) -> Vec<Dogu> {
    (0..DOGUS)
        .map(|i| Dogu {
            metadata: ObjectMeta { name: Some(format!("dogu{i:02}")), ..Default::default() },
            spec: DoguSpec { name: format!("official/dogu{i:02}"), version: version.into(), ..Default::default() },
            status: Some(DoguStatus {
                installed_version: Some(version.into()),
                health: Some("available".into()),
                started_at: Some(Time(Timestamp::from_second(2_000_000_000).unwrap())),
                ..Default::default()
            }),
        })
        .collect()
}

fn observation(wanted: &str, installed_dogus: Vec<Dogu>, configured: bool) -> Observation {
    let blueprint = blueprint(wanted);
    let descriptors = blueprint_machine::wanted_descriptors(&blueprint)
        .into_iter()
        .map(|(name, version)| DescriptorEntry {
            lookup: DescriptorLookup::Found {
                descriptor: DoguDescriptor { name: name.clone(), version: version.clone(), ..Default::default() },
            },
            name,
            version,
        })
        .collect();
    let store = |entries: BTreeMap<String, String>| ConfigObservation::Present {
        entries,
        last_updated: Some(Time(Timestamp::from_second(1_900_000_000).unwrap())),
        resource_version: Some("1".into()),
    };
    let dogu_configs = (0..DOGUS)
        .map(|i| {
            let entries = if configured {
                (0..KEYS_PER_DOGU).map(|k| (format!("section/key{k}"), format!("value-{k}"))).collect()
            } else {
                BTreeMap::new()
            };
            (format!("dogu{i:02}"), store(entries))
        })
        .collect();
    let global = if configured {
        (0..GLOBAL_KEYS).map(|k| (format!("global/key{k}"), "g".to_string())).collect()
    } else {
        BTreeMap::new()
    };
    Observation {
        now: Time(Timestamp::from_second(2_000_000_100).unwrap()),
        operator: OperatorFacts::new("ecosystem", None),
        blueprint: Some(blueprint),
        blueprint_count: 1,
        dogus: installed_dogus,
        components: vec![],
        global_config: store(global),
        dogu_configs,
        sensitive_configs: BTreeMap::new(),
        referenced_secrets: BTreeMap::new(),
        descriptors,
        health_config: None,
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("reconcile/30-dogus-200-keys");
    let fresh = observation("1.0.0-1", vec![], false);
    group.bench_function("fresh-install", |b| b.iter(|| blueprint_machine::reconcile(std::hint::black_box(&fresh))));
    // Steady state: everything applied and completed.
    let mut steady = observation("1.0.0-1", installed("1.0.0-1"), true);
    let completed = blueprint_machine::reconcile(&steady);
    assert_eq!(completed.state, blueprint_machine::State::Completed);
    steady.blueprint.as_mut().unwrap().status = completed.status;
    group.bench_function("steady-state", |b| b.iter(|| blueprint_machine::reconcile(std::hint::black_box(&steady))));
    let upgrade = observation("1.1.0-1", installed("1.0.0-1"), true);
    group.bench_function("upgrade", |b| b.iter(|| blueprint_machine::reconcile(std::hint::black_box(&upgrade))));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
