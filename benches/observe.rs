//! The shell's share of a reconcile: building the machine's `Observation` from the cached objects, as
//! the controller does before every reconcile (`Snapshot::observe`). The machine's share is
//! `benches/reconcile.rs`; the two together are what one steady-state reconcile costs the operator.
//!
//! The config ConfigMaps are the ones the operator writes (`config_format::render`, the registry
//! labels, a managed-fields entry): 5 keys per dogu and 200 global keys, as in `make bench-sandbox`.
//! Two situations: `parsed`, every object parsed (the first reconcile, or all written since), and
//! `kept`, none written since the reconcile before (the steady state: their observations are kept).

use std::collections::{BTreeMap, BTreeSet};

use blueprint_machine::config_format::{self, DATA_KEY};
use blueprint_machine::decision::ConfigTarget;
use blueprint_machine::naming::GLOBAL_CONFIG;
use blueprint_machine::observation::OperatorFacts;
use blueprint_operator::observe::{Digester, KeptConfigs, Snapshot};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;

// The allocator of the operator binary (src/main.rs), so that the numbers are the operator's.
blueprint_operator::global_allocator!();

const KEYS_PER_DOGU: usize = 5;
const GLOBAL_KEYS: usize = 200;
const SIZES: [usize; 3] = [30, 1_000, 5_000];

fn config_map(name: String, target: ConfigTarget, entries: BTreeMap<String, String>) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name),
            resource_version: Some("7".into()),
            labels: Some(target.labels()),
            managed_fields: Some(vec![ManagedFieldsEntry {
                manager: Some(blueprint_machine::naming::FIELD_MANAGER.into()),
                operation: Some("Apply".into()),
                time: Some(Time(Timestamp::from_second(1_900_000_000).unwrap())),
                ..Default::default()
            }]),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(DATA_KEY.to_owned(), config_format::render(&entries))])),
        ..Default::default()
    }
}

/// The config ConfigMaps of `dogus` dogus and the global config, as the operator wrote them.
fn config_maps(dogus: usize) -> Vec<ConfigMap> {
    let keys = |count: usize, prefix: &str| -> BTreeMap<String, String> {
        (0..count).map(|k| (format!("{prefix}/key{k}"), format!("value-{k}"))).collect()
    };
    (0..dogus)
        .map(|i| {
            let dogu = format!("dogu{i:04}");
            config_map(format!("{dogu}-config"), ConfigTarget::Dogu(dogu), keys(KEYS_PER_DOGU, "section"))
        })
        .chain([config_map(GLOBAL_CONFIG.to_owned(), ConfigTarget::Global, keys(GLOBAL_KEYS, "global"))])
        .collect()
}

fn snapshot(config_maps: &[ConfigMap]) -> Snapshot<'_> {
    Snapshot {
        now: Time(Timestamp::from_second(2_000_000_100).unwrap()),
        operator: OperatorFacts::new("ecosystem", None),
        blueprint: None,
        blueprint_masks: Vec::new(),
        blueprint_count: 1,
        other_blueprints: Vec::new(),
        dogus: Vec::new(),
        components: Vec::new(),
        config_maps: config_maps.iter().collect(),
        secrets: Vec::new(),
        undecodable: Vec::new(),
        referenced_secrets: Some(BTreeMap::new()),
        referenced_config_maps: Some(BTreeMap::new()),
        keys_filled_from_secrets: Some(BTreeMap::from([(None, BTreeSet::new())])),
        descriptors: Vec::new(),
        restores: Vec::new(),
        debug_mode: None,
    }
}

fn bench(c: &mut Criterion) {
    let digester = Digester::random();
    let mut group = c.benchmark_group("observe/dogus-5-keys");
    for dogus in SIZES {
        let config_maps = config_maps(dogus);
        let snapshot = snapshot(&config_maps);
        let kept = KeptConfigs::default();
        let parsed = snapshot.observe(&digester, &kept);
        assert_eq!(parsed.dogu_configs.len(), dogus, "every dogu's config is observed");
        assert_eq!(snapshot.observe(&digester, &kept), parsed, "the kept observations are the parsed ones");
        if dogus >= 1_000 {
            group.sample_size(10);
        }
        group.throughput(Throughput::Elements(dogus as u64));
        group.bench_with_input(BenchmarkId::new("parsed", dogus), &snapshot, |b, snapshot| {
            b.iter(|| std::hint::black_box(snapshot).observe(&digester, &KeptConfigs::default()))
        });
        group.bench_with_input(BenchmarkId::new("kept", dogus), &snapshot, |b, snapshot| {
            b.iter(|| std::hint::black_box(snapshot).observe(&digester, &kept))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
