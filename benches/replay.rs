//! Replay speed: every record of the corpus (`tests/replay/`) read from its JSON line, reconciled and
//! compared, as `blueprint-operator replay` does. Criterion reports records per second.

use std::path::{Path, PathBuf};

use blueprint_operator::journal::reader;
use blueprint_operator::journal::replay::{Verdict, verdict};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

// The allocator of the operator binary (src/main.rs), so that the numbers are the operator's.
blueprint_operator::global_allocator!();

fn corpus() -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/replay");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the corpus exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files.into_iter().map(|p| (p.clone(), std::fs::read_to_string(&p).unwrap())).collect()
}

fn replay(c: &mut Criterion) {
    let corpus = corpus();
    let records: usize = corpus.iter().map(|(p, t)| reader::parse(p, t).unwrap().entries.len()).sum();
    let mut group = c.benchmark_group("replay");
    group.throughput(Throughput::Elements(records as u64));
    group.bench_function(format!("corpus of {records} records"), |b| {
        b.iter(|| {
            for (path, text) in &corpus {
                for entry in reader::parse(path, text).unwrap().entries {
                    assert!(matches!(verdict(&entry.record), Verdict::Identical));
                }
            }
        })
    });
    // The same without reading: what reconcile + compare cost per record.
    let entries: Vec<_> = corpus.iter().flat_map(|(p, t)| reader::parse(p, t).unwrap().entries).collect();
    group.bench_function("decide and compare only", |b| {
        b.iter(|| {
            for entry in &entries {
                std::hint::black_box(verdict(&entry.record));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, replay);
criterion_main!(benches);
