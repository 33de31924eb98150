//! The status write against the emulator: the shell does not decode the server's answer (megabytes
//! at a thousand dogus) but assumes what was stored (`status::written`); that is what was stored.

use blueprint_machine::api::{Blueprint, BlueprintStatus};
use blueprint_machine::naming;
use blueprint_operator::status;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use serde_json::json;

use super::emulator::emulator;
use crate::crd::{repository, yaml_file};

const NS: &str = "ecosystem";

#[tokio::test]
async fn the_assumed_blueprint_after_a_status_write_is_the_stored_one() {
    let emulator = emulator();
    let client = emulator.client(NS);
    let api = Api::<Blueprint>::namespaced(client.clone(), NS);
    let document = yaml_file(&repository("tests/fixtures/compat/full-status.yaml"));
    let name = document["metadata"]["name"].as_str().unwrap().to_owned();
    let mut object: Blueprint = serde_json::from_value(document.clone()).unwrap();
    object.status = None;
    api.create(&PostParams::default(), &object).await.unwrap();

    // The first status is sent whole; the second as a merge diff: a condition changed, an entry of
    // the state diff and the global config of the effective blueprint removed.
    let first: BlueprintStatus = serde_json::from_value(document["status"].clone()).unwrap();
    let mut second = document["status"].clone();
    second["conditions"][1]["status"] = json!("True");
    second["conditions"][1]["reason"] = json!("Healthy");
    second["stateDiff"]["doguDiffs"] = json!({});
    second["effectiveBlueprint"]["config"]["global"] = json!([]);
    let second: BlueprintStatus = serde_json::from_value(second).unwrap();
    assert_ne!(first, second);

    for wanted in [first, second].map(std::sync::Arc::new) {
        let before = api.get(&name).await.unwrap();
        let version = before.metadata.resource_version.clone().unwrap();
        let patch = status::status_patch(before.status.as_deref(), &wanted, &version).expect("the status changes");
        let resource_version = status::write(&client, NS, &name, &patch).await.unwrap();
        let now = Time(Timestamp::from_second(Timestamp::now().as_second()).unwrap());
        let assumed = status::written(&before, &wanted, resource_version, now);

        let stored = api.get(&name).await.unwrap();
        assert_ne!(stored.metadata.resource_version, before.metadata.resource_version, "written");
        assert_eq!(assumed.status, stored.status);
        assert_eq!(assumed.spec, stored.spec);
        // Both have the operator's status write; the assumed one at the time the answer arrived, no
        // earlier than the server's, and as the newest write (D58 holds progress from that time).
        let own =
            |meta: &ObjectMeta| meta.managed_fields.iter().flatten().find(|e| naming::own_status_write(e)).cloned();
        let (assumed_write, stored_write) = (own(&assumed.metadata).unwrap(), own(&stored.metadata).unwrap());
        assert!(assumed_write.time >= stored_write.time, "{assumed_write:?} {stored_write:?}");
        let newest = naming::newest_write(assumed.metadata.managed_fields.as_deref().unwrap());
        assert_eq!(newest, Some(&assumed_write));
        let without_managers = |meta: ObjectMeta| ObjectMeta { managed_fields: None, ..meta };
        assert_eq!(without_managers(assumed.metadata), without_managers(stored.metadata));
    }
}
