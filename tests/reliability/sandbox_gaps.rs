//! The sandbox as a user tries it: deleting a Dogu with kubectl, descriptors with unusual names.

use std::time::Duration;

use crate::sandbox::e2e::{self, NAME, completed};

const NS: &str = "ecosystem";

/// The finding: the simulated dogu operator took a deleted and re-created Dogu for the one it had
/// installed, so the sandbox never converged after `kubectl delete dogu`.
#[tokio::test(start_paused = true)]
async fn a_deleted_dogu_is_recreated_and_installed_again() {
    let mut sandbox = e2e::fresh_sandbox().await;
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&e2e::default_blueprint()).await.unwrap();
    assert!(sandbox.wait_until(NAME, Duration::from_secs(600), completed).await.is_some());
    let before = sandbox.emulator().get("k8s.cloudogu.com/v2", "Dogu", NS, "cas").unwrap();

    // Deleted and re-created at once, as fast as a user and the operator can (the simulated dogu
    // operator never sees it gone): the new object must still be installed.
    sandbox.emulator().delete("k8s.cloudogu.com/v2", "Dogu", NS, "cas").unwrap();
    let mut fresh = before.clone();
    fresh["metadata"] = serde_json::json!({"name": "cas", "namespace": NS});
    fresh.as_object_mut().unwrap().remove("status");
    sandbox.emulator().create(fresh).unwrap();
    let reinstalled = sandbox
        .wait_object(("k8s.cloudogu.com/v2", "Dogu", "cas"), Duration::from_secs(600), |cas| {
            cas["metadata"]["uid"] != before["metadata"]["uid"]
                && cas["status"]["installedVersion"] == "7.1.5-2"
                && cas["status"]["health"] == "available"
        })
        .await;
    assert!(reinstalled.is_some(), "the re-created cas was never installed");
    assert!(
        sandbox.wait_until(NAME, Duration::from_secs(600), completed).await.is_some(),
        "{}",
        e2e::conditions(&sandbox).await
    );
    sandbox.shutdown().await;
}

/// The finding: the sandbox registry matched the encoded path, so a name or version that needs
/// percent-encoding was never found.
#[tokio::test]
async fn the_sandbox_registry_serves_names_that_need_percent_encoding() {
    use blueprint_operator::descriptors::{RemoteRegistry, RemoteSettings, UrlSchema};
    use blueprint_operator::sandbox::dogu_registry::RegistryServer;

    let registry = RegistryServer::new(None);
    let version = "7.1.5-2 ß";
    let text = format!(r#"{{"Name": "official/cas", "Version": "{version}"}}"#);
    registry.add(&text).unwrap();
    let served = registry.serve(([127, 0, 0, 1], 0).into()).await.unwrap();
    for schema in [UrlSchema::Default, UrlSchema::Index] {
        let client = RemoteRegistry::new(&RemoteSettings {
            endpoint: served.endpoint(),
            schema,
            credentials: None,
            proxy: None,
            timeout: Duration::from_secs(10),
            extra_ca: None,
        })
        .unwrap();
        assert!(client.url("official/cas", version).path().contains("%20%C3%9F"), "the client encodes the version");
        let fetched = client.fetch("official/cas", version).await;
        assert!(fetched.is_ok(), "{schema:?}: {:?}", fetched.err());
    }
}

/// The finding: a descriptor file stored under another dogu's path shadowed that dogu's descriptor.
#[test]
fn a_descriptor_stored_under_another_dogus_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let place = dir.path().join("official/cas");
    std::fs::create_dir_all(&place).unwrap();
    std::fs::write(place.join("7.1.5-2.json"), r#"{"Name": "official/ldap", "Version": "2.6.8-3"}"#).unwrap();
    let error = blueprint_operator::sandbox::seed::read_descriptors(dir.path()).unwrap_err().to_string();
    assert!(
        error.contains("official/cas/7.1.5-2.json: the descriptor of official/ldap 2.6.8-3 must be stored as"),
        "{error}"
    );
    assert!(error.ends_with("official/ldap/2.6.8-3.json"), "{error}");
}
