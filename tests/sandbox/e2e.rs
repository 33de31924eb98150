//! End to end: the real kube-runtime `Controller` against the emulator, with the simulated dogu and
//! component operators, on tokio's paused clock.

use std::time::Duration;

use blueprint_machine::api::Blueprint;
use blueprint_operator::sandbox::seed;
use blueprint_operator::sandbox::session::{Sandbox, SandboxOptions};

pub const NAME: &str = "blueprint-ces";

pub fn default_blueprint() -> Blueprint {
    serde_saphyr::from_str(seed::DEFAULT_BLUEPRINT).unwrap()
}

pub async fn fresh_sandbox() -> Sandbox {
    let sandbox = Sandbox::start(SandboxOptions { virtual_clock: true, ..Default::default() }, None).await.unwrap();
    seed::cluster(&sandbox.emulator, &sandbox.namespace, &seed::objects(seed::DEFAULT_CLUSTER).unwrap()).unwrap();
    seed::registry(&sandbox.emulator, &sandbox.namespace, &seed::builtin_descriptors()).unwrap();
    sandbox
}

pub fn completed(blueprint: &Blueprint) -> bool {
    blueprint.status.as_ref().is_some_and(|s| {
        s.observed_generation == blueprint.metadata.generation
            && s.conditions.iter().any(|c| c.type_ == "Completed" && c.status == "True")
    })
}

#[tokio::test(start_paused = true)]
async fn a_fresh_install_completes() {
    let mut sandbox = fresh_sandbox().await;
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&default_blueprint()).unwrap();
    let done = sandbox.wait_until(NAME, Duration::from_secs(600), completed).await;
    let events = sandbox.events();
    assert!(
        done.is_some(),
        "not completed: {:#?}\n{events:#?}",
        sandbox.blueprint(NAME).and_then(|b| b.status).map(|s| s.conditions)
    );
    let reasons: Vec<&str> = events.iter().map(|(r, _)| r.as_str()).collect();
    println!("{reasons:?}");
    println!("{:?}", sandbox.emulator.requests().len());
    sandbox.shutdown().await;
}
