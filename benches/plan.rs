//! `plan` end to end on the examples: read the blueprint, the cluster snapshot and the descriptors from
//! disk, reconcile, render the text and the JSON output, as `blueprint-operator plan` does.

use std::path::PathBuf;

use blueprint_operator::plan::{self, Format, PlanArgs};
use criterion::{Criterion, criterion_group, criterion_main};

// The allocator of the operator binary (src/main.rs), so that the numbers are the operator's.
blueprint_operator::global_allocator!();

fn args(example: &str, blueprint: &str, format: Format) -> PlanArgs {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    PlanArgs {
        blueprint: Some(root.join(example).join(blueprint)),
        cluster: vec![root.join(example).join("cluster.yaml")],
        context: None,
        descriptors: Some(root.join("descriptors")),
        now: Some(plan::now_in_seconds()),
        namespace: None,
        operator_version: None,
        own_versions: blueprint_operator::identity::default_own_versions(),
        component: blueprint_machine::naming::OWN_COMPONENT.to_owned(),
        allow_replacement: false,
        provided_dependencies: Default::default(),
        secret_access: Default::default(),
        format,
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("plan");
    for (name, example, blueprint, format) in [
        ("fresh-install/text", "fresh-install", "blueprint.yaml", Format::Text),
        ("upgrade/text", "upgrade", "blueprint.yaml", Format::Text),
        ("upgrade/json", "upgrade", "blueprint.yaml", Format::Json),
    ] {
        let args = args(example, blueprint, format);
        let output = plan::run(&args).expect("the example plans");
        assert_eq!(output.exit_code, 2, "{name}: the example has changes to apply");
        group.bench_function(name, |b| b.iter(|| plan::run(std::hint::black_box(&args)).unwrap()));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
