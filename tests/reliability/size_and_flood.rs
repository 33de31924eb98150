//! Registry traffic is bounded however many dogus are unknown (docs/differences.md D42): a blueprint of
//! 5,000 dogus the registry does not know once caused 420 requests a second for as long as it existed.
//! (The status size bound is the machine's: machine/tests/reliability/status_size.rs.)

use std::time::Duration;

use blueprint_operator::descriptors::{REQUEST_BURST, REQUESTS_PER_SECOND};

use crate::sandbox::e2e;
use crate::support::*;

fn many_dogus(count: usize) -> String {
    let dogus: Vec<String> =
        (0..count).map(|i| format!("{{name: official/unknown-dogu-{i:05}, version: 1.0.{i}-1}}")).collect();
    format!("{{displayName: many, blueprint: {{dogus: [{}]}}}}", dogus.join(", "))
}

/// The finding, end to end: 2,000 dogus the registry does not know, for 65 s.
#[tokio::test(start_paused = true)]
async fn unknown_dogus_cost_a_bounded_number_of_registry_requests() {
    let mut sandbox = e2e::fresh_sandbox().await;
    sandbox.start_controller("0.1.0");
    let many = blueprint(&many_dogus(2000));
    let name = many.metadata.name.clone().unwrap();
    sandbox.apply_blueprint(&many).await.unwrap();
    let started = tokio::time::Instant::now();
    tokio::time::sleep(Duration::from_secs(35)).await;
    let at_35 = sandbox.registry.requests().len();
    tokio::time::sleep(Duration::from_secs(30)).await;
    let total = sandbox.registry.requests().len();
    let elapsed = started.elapsed().as_secs();
    let bound = REQUEST_BURST as usize + REQUESTS_PER_SECOND as usize * elapsed as usize;
    assert!(total <= bound, "{total} registry requests in {elapsed} s (bound {bound})");
    let steady = total - at_35;
    assert!(
        steady <= REQUESTS_PER_SECOND as usize * 31,
        "{steady} requests in the last 30 s, over {REQUESTS_PER_SECOND} a second"
    );
    let stored = sandbox.blueprint(&name).await.unwrap();
    assert!(!e2e::condition_is(&stored, "Valid", "True"), "{}", e2e::conditions(&sandbox).await);
    assert_eq!(
        stored.status.as_ref().unwrap().observed_generation,
        stored.metadata.generation,
        "the status was written"
    );
    sandbox.shutdown().await;
}
