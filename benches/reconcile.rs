//! The cost of one `reconcile` in three situations (fresh install, steady state, upgrade), and of the
//! steady state as the controller decides it, with the Blueprint's reading kept from the reconcile
//! before (`steady-state-reading-kept`):
//! - the design budget's case: 30 dogus with 200 config keys (6 per dogu, 20 global);
//! - the series over blueprint sizes: 10, 30, 100, 1,000 and 5,000 dogus with 5 config keys each, to
//!   show that the cost grows linearly with the blueprint (no quadratic step in diff or validation).

use std::collections::BTreeMap;
use std::sync::Arc;

use blueprint_machine::api::{Blueprint, BlueprintBody, BlueprintSpec, Dogu, DoguSpec, DoguStatus};
use blueprint_machine::descriptor::DoguDescriptor;
use blueprint_machine::observation::{
    ConfigObservation, DescriptorEntry, DescriptorLookup, Observation, OperatorFacts,
};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

// The allocator of the operator binary (src/main.rs), so that the numbers are the operator's.
blueprint_operator::global_allocator!();

/// The shape of a generated blueprint.
#[derive(Clone, Copy)]
struct Size {
    dogus: usize,
    keys_per_dogu: usize,
    global_keys: usize,
}

const BUDGET: Size = Size { dogus: 30, keys_per_dogu: 6, global_keys: 20 };
const SERIES: [usize; 5] = [10, 30, 100, 1_000, 5_000];

fn blueprint(size: Size, version: &str) -> Blueprint {
    let dogus: Vec<_> =
        (0..size.dogus).map(|i| json!({"name": format!("official/dogu{i:04}"), "version": version})).collect();
    let config: BTreeMap<String, Vec<serde_json::Value>> = (0..size.dogus)
        .map(|i| {
            let entries = (0..size.keys_per_dogu)
                .map(|k| json!({"key": format!("section/key{k}"), "value": format!("value-{k}")}))
                .collect();
            (format!("dogu{i:04}"), entries)
        })
        .collect();
    let global: Vec<_> =
        (0..size.global_keys).map(|k| json!({"key": format!("global/key{k}"), "value": "g"})).collect();
    let spec: BlueprintSpec = serde_json::from_value(json!({
        "displayName": "bench",
        "blueprint": {"dogus": dogus, "config": {"dogus": config, "global": global}}
    }))
    .unwrap();
    Blueprint {
        metadata: ObjectMeta { name: Some("bench".into()), generation: Some(1), ..Default::default() },
        spec: BlueprintBody { spec: Some(spec.into()) },
        status: None,
        undecodable_spec: None,
    }
}

fn installed(size: Size, version: &str) -> Vec<Dogu> {
    (0..size.dogus)
        .map(|i| Dogu {
            metadata: ObjectMeta { name: Some(format!("dogu{i:04}")), ..Default::default() },
            spec: DoguSpec { name: format!("official/dogu{i:04}"), version: version.into(), ..Default::default() },
            status: Some(DoguStatus {
                installed_version: Some(version.into()),
                health: Some("available".into()),
                started_at: Some(Time(Timestamp::from_second(2_000_000_000).unwrap())),
                ..Default::default()
            }),
        })
        .collect()
}

fn observation(size: Size, wanted: &str, installed_dogus: Vec<Dogu>, configured: bool) -> Observation {
    let blueprint = blueprint(size, wanted);
    let descriptors = blueprint_machine::Reading::of(&blueprint, &[])
        .wanted_descriptors()
        .into_iter()
        .map(|(name, version)| DescriptorEntry {
            lookup: DescriptorLookup::Found {
                descriptor: Arc::new(DoguDescriptor {
                    name: name.clone(),
                    version: version.clone(),
                    ..Default::default()
                }),
            },
            name,
            version,
        })
        .collect();
    let store = |entries: BTreeMap<String, String>| {
        Arc::new(ConfigObservation::Present {
            entries,
            from_secrets: BTreeMap::new(),
            unrecorded: Default::default(),
            last_updated: Some(Time(Timestamp::from_second(1_900_000_000).unwrap())),
            resource_version: Some("1".into()),
        })
    };
    let dogu_configs = (0..size.dogus)
        .map(|i| {
            let entries = if configured {
                (0..size.keys_per_dogu).map(|k| (format!("section/key{k}"), format!("value-{k}"))).collect()
            } else {
                BTreeMap::new()
            };
            (format!("dogu{i:04}"), store(entries))
        })
        .collect();
    let global = if configured {
        (0..size.global_keys).map(|k| (format!("global/key{k}"), "g".to_string())).collect()
    } else {
        BTreeMap::new()
    };
    Observation {
        now: Time(Timestamp::from_second(2_000_000_100).unwrap()),
        operator: OperatorFacts::new("ecosystem", None),
        blueprint: Some(Arc::new(blueprint)),
        blueprint_count: 1,
        other_blueprints: Vec::new(),
        blueprint_masks: Vec::new(),
        referenced_config_maps: Default::default(),
        undecodable: Vec::new(),
        dogus: installed_dogus.into_iter().map(Arc::new).collect(),
        components: vec![],
        global_config: store(global),
        dogu_configs,
        sensitive_configs: BTreeMap::new(),
        referenced_secrets: BTreeMap::new(),
        descriptors,
        health_config: None,
        restores: Vec::new(),
        debug_mode: None,
        reconcile_request: None,
    }
}

/// The three situations of one size: fresh install, steady state (applied and completed), upgrade.
fn situations(size: Size) -> [(&'static str, Observation); 3] {
    let fresh = observation(size, "1.0.0-1", vec![], false);
    let mut steady = observation(size, "1.0.0-1", installed(size, "1.0.0-1"), true);
    let completed = blueprint_machine::reconcile(&steady);
    assert_eq!(completed.state, blueprint_machine::State::Completed);
    Arc::make_mut(steady.blueprint.as_mut().unwrap()).status = completed.status;
    let upgrade = observation(size, "1.1.0-1", installed(size, "1.0.0-1"), true);
    assert_eq!(blueprint_machine::reconcile(&fresh).actions.len(), size.dogus * 2 + usize::from(size.global_keys > 0));
    assert_eq!(blueprint_machine::reconcile(&upgrade).actions.len(), size.dogus);
    [("fresh-install", fresh), ("steady-state", steady), ("upgrade", upgrade)]
}

/// The reading a steady reconcile of the controller decides with: the Blueprint object and the masks
/// are those of its last reconcile, so it uses the reading it kept (src/reconcile/kept_reading.rs).
fn kept_reading(observation: &Observation) -> blueprint_machine::Reading<'_> {
    let blueprint = observation.blueprint.as_deref().expect("the steady state has a Blueprint");
    let reading = blueprint_machine::Reading::of(blueprint, &observation.blueprint_masks);
    let decision = blueprint_machine::reconcile_read(Some(&reading), observation);
    assert_eq!(decision, blueprint_machine::reconcile(observation), "a kept reading decides the same");
    reading
}

/// The Dogu CRs' readings a steady reconcile of the controller decides with: its objects are those of
/// its last reconcile (src/reconcile/kept_dogu_readings.rs).
fn kept_dogu_readings(observation: &Observation) -> blueprint_machine::DoguReadings {
    let readings = blueprint_machine::DoguReadings::of(&observation.dogus, Default::default());
    assert!(readings.is_of(&observation.dogus));
    let decision = blueprint_machine::reconcile_kept(None, &readings, observation);
    assert_eq!(decision, blueprint_machine::reconcile(observation), "kept readings decide the same");
    readings
}

/// A reconcile as the controller decides it: the Dogu CRs' readings brought up to date from the kept
/// ones (here: all the same objects), the decision made with them, and kept for the next.
fn decide_kept(
    reading: &blueprint_machine::Reading<'_>,
    dogus: &mut blueprint_machine::DoguReadings,
    observation: &Observation,
) -> blueprint_machine::Decision {
    let readings = blueprint_machine::DoguReadings::of(&observation.dogus, std::mem::take(dogus));
    let decision = blueprint_machine::reconcile_kept(Some(reading), &readings, observation);
    *dogus = readings;
    decision
}

fn budget(c: &mut Criterion) {
    let mut group = c.benchmark_group("reconcile/30-dogus-200-keys");
    for (name, observation) in situations(BUDGET) {
        group.bench_function(name, |b| b.iter(|| blueprint_machine::reconcile(std::hint::black_box(&observation))));
        if name == "steady-state" {
            let reading = kept_reading(&observation);
            group.bench_function("steady-state-reading-kept", |b| {
                b.iter(|| blueprint_machine::reconcile_read(Some(&reading), std::hint::black_box(&observation)))
            });
            // What the controller decides with: the Blueprint's reading and the Dogu CRs' kept.
            let mut kept = kept_dogu_readings(&observation);
            group.bench_function("steady-state-dogus-kept", |b| {
                b.iter(|| decide_kept(&reading, &mut kept, std::hint::black_box(&observation)))
            });
        }
    }
    group.finish();
}

fn series(c: &mut Criterion) {
    let mut group = c.benchmark_group("reconcile/dogus-5-keys");
    for dogus in SERIES {
        if dogus >= 1_000 {
            // Milliseconds per iteration: fewer samples keep the run short and are still stable.
            group.sample_size(10);
        }
        for (name, observation) in situations(Size { dogus, keys_per_dogu: 5, global_keys: 0 }) {
            group.throughput(Throughput::Elements(dogus as u64));
            group.bench_with_input(BenchmarkId::new(name, dogus), &observation, |b, observation| {
                b.iter(|| blueprint_machine::reconcile(std::hint::black_box(observation)))
            });
            if name == "steady-state" {
                let reading = kept_reading(&observation);
                group.bench_with_input(
                    BenchmarkId::new("steady-state-reading-kept", dogus),
                    &observation,
                    |b, observation| {
                        b.iter(|| blueprint_machine::reconcile_read(Some(&reading), std::hint::black_box(observation)))
                    },
                );
                let mut kept = kept_dogu_readings(&observation);
                group.bench_with_input(
                    BenchmarkId::new("steady-state-dogus-kept", dogus),
                    &observation,
                    |b, observation| b.iter(|| decide_kept(&reading, &mut kept, std::hint::black_box(observation))),
                );
            }
        }
    }
    group.finish();
}

criterion_group!(benches, budget, series);
criterion_main!(benches);
