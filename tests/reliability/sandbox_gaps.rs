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

/// The finding: `sandbox -f examples/upgrade/blueprint.yaml --cluster examples/upgrade/cluster.yaml`
/// did not complete in some runs (a component or a dogu left `installing`/unhealthy by the simulated
/// operators racing the seeder or their own lagging caches). A race shows only in real time and
/// only sometimes: the upgrade example runs five times, as the `sandbox` command runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upgrade_example_completes_every_time() {
    use blueprint_operator::sandbox::ecosystem::Behaviour;
    use blueprint_operator::sandbox::seed;
    use blueprint_operator::sandbox::session::{Sandbox, SandboxOptions};

    for run in 1..=5 {
        let behaviour = Behaviour {
            install: Duration::from_millis(150),
            upgrade: Duration::from_millis(100),
            restart: Duration::from_millis(50),
            ..Behaviour::default()
        };
        let options = SandboxOptions { behaviour, debounce: Duration::from_millis(20), ..SandboxOptions::default() };
        let mut sandbox = Sandbox::start(options, Some(([127, 0, 0, 1], 0).into())).await.unwrap();
        let cluster = seed::objects(include_str!("../../examples/upgrade/cluster.yaml")).unwrap();
        seed::cluster(&sandbox.cluster, &sandbox.namespace, &cluster).await.unwrap();
        seed::registry(&sandbox.cluster, &sandbox.registry, &sandbox.namespace, &seed::builtin_descriptors())
            .await
            .unwrap();
        sandbox.start_controller("0.1.0");
        sandbox.apply_blueprint(&e2e::blueprint(include_str!("../../examples/upgrade/blueprint.yaml"))).await.unwrap();
        let done = sandbox.wait_until(NAME, Duration::from_secs(30), completed).await;
        if done.is_none() {
            let dogus = sandbox.cluster.list("k8s.cloudogu.com/v2", "Dogu", NS).await;
            let statuses: Vec<String> =
                dogus.iter().map(|d| format!("{}: {} {}", d["metadata"]["name"], d["spec"], d["status"])).collect();
            panic!("run {run} did not complete: {}\n{statuses:#?}", e2e::conditions(&sandbox).await);
        }
        sandbox.shutdown().await;
    }
}

/// The finding: `sandbox --cluster snapshot.yaml`, with a snapshot kubectl took from a sandbox, failed
/// with `configmaps "dogu-spec-cas" already exists`: the snapshot holds the local dogu registry the
/// operator filled, and seeding the registry created those ConfigMaps again. Now it adds to them.
#[tokio::test(start_paused = true)]
async fn a_snapshot_of_a_sandbox_seeds_a_new_one() {
    use blueprint_operator::sandbox::seed;

    let mut sandbox = e2e::fresh_sandbox().await;
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&e2e::default_blueprint()).await.unwrap();
    assert!(sandbox.wait_until(NAME, Duration::from_secs(600), completed).await.is_some());
    // As `kubectl get blueprints,dogus,components,configmaps,secrets -o yaml` prints it: one List.
    let mut items = Vec::new();
    for (api_version, kind) in [
        ("k8s.cloudogu.com/v2", "Blueprint"),
        ("k8s.cloudogu.com/v2", "Dogu"),
        ("k8s.cloudogu.com/v1", "Component"),
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
    ] {
        items.extend(sandbox.cluster.list(api_version, kind, NS).await);
    }
    assert!(items.iter().any(|o| o["metadata"]["name"] == "dogu-spec-cas"), "the snapshot holds the local registry");
    let snapshot = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string();
    sandbox.shutdown().await;

    let options = blueprint_operator::sandbox::session::SandboxOptions { virtual_clock: true, ..Default::default() };
    let again = blueprint_operator::sandbox::session::Sandbox::start(options, None).await.unwrap();
    let objects = seed::objects(&snapshot).unwrap();
    seed::cluster(&again.cluster, &again.namespace, &objects).await.unwrap();
    seed::registry(&again.cluster, &again.registry, &again.namespace, &seed::builtin_descriptors())
        .await
        .expect("the registry is seeded into the snapshot's local registry");
    assert!(again.blueprint(NAME).await.is_none(), "a snapshot's Blueprints are left out: the sandbox applies its own");
    assert!(again.cluster.get("k8s.cloudogu.com/v2", "Dogu", NS, "redmine").await.is_some());
    let cas = again.cluster.get("v1", "ConfigMap", NS, "dogu-spec-cas").await.unwrap();
    assert!(cas["data"]["7.1.5-2"].is_string(), "the local registry kept what the snapshot holds: {cas}");
    again.shutdown().await;
}

/// A default sandbox served over HTTP on loopback, as `sandbox --serve` offers it, and its address.
async fn served_sandbox() -> (blueprint_operator::sandbox::session::Sandbox, std::net::SocketAddr) {
    use blueprint_operator::sandbox::session::{Sandbox, SandboxOptions, Transport};
    let sandbox = Sandbox::start(SandboxOptions::default(), Some(([127, 0, 0, 1], 0).into())).await.unwrap();
    let Transport::Http(address) = sandbox.transport() else { unreachable!("served over HTTP") };
    (sandbox, address)
}

/// The real kubectl (`make kube`) talking to the sandbox's emulator, as `sandbox --serve` offers it.
fn kubectl_command(address: std::net::SocketAddr, args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(blueprint_operator::sandbox::control_plane::bin_dir().join("kubectl"));
    command.arg(format!("--server=http://{address}")).args(args);
    command
}

/// What kubectl said (stdout, then stderr), and whether it succeeded.
fn kubectl_against(address: std::net::SocketAddr, args: &[&str]) -> (bool, String) {
    let output = kubectl_command(address, args).output().expect("kubectl runs (make kube)");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.success(), text)
}

/// The finding: no Namespace object was served, so every NotFound through kubectl read
/// `namespaces "ecosystem" not found`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_names_the_missing_object_not_the_namespace() {
    let (sandbox, address) = served_sandbox().await;
    let (found, text) =
        tokio::task::spawn_blocking(move || kubectl_against(address, &["-n", NS, "get", "dogu", "nope"]))
            .await
            .unwrap();
    assert!(!found);
    assert!(text.contains(r#"dogus.k8s.cloudogu.com "nope" not found"#), "{text}");
    let (found, text) =
        tokio::task::spawn_blocking(move || kubectl_against(address, &["get", "namespace", NS])).await.unwrap();
    assert!(found, "{text}");
    sandbox.shutdown().await;
}

/// The finding: `kubectl get dogus -w` printed only NAME and AGE after the first lines (the watch
/// ignored `as=Table`). A Dogu created while kubectl watches is printed with its printer columns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_watch_prints_the_printer_columns() {
    let (sandbox, address) = served_sandbox().await;
    let mut kubectl = kubectl_command(address, &["-n", NS, "get", "dogus", "--watch"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl runs (make kube)");
    // Once kubectl watches (its LIST came first), a Dogu is created.
    let listed = sandbox.emulator().clone();
    let watching = async {
        while !listed.requests().iter().any(|r| r.query.contains("watch=")) {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    assert!(tokio::time::timeout(Duration::from_secs(20), watching).await.is_ok(), "kubectl never watched");
    let dogu = serde_json::json!({"apiVersion": "k8s.cloudogu.com/v2", "kind": "Dogu", "metadata": {"name": "nexus", "namespace": NS},
        "spec": {"name": "official/nexus", "version": "3.2.1-1"}});
    // kubectl's lines, as it prints them.
    let (lines, received) = std::sync::mpsc::channel::<String>();
    let stdout = kubectl.stdout.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    sandbox.emulator().create(dogu).unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while let Ok(line) = received.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) {
            if line.starts_with("nexus") {
                return Some(line);
            }
        }
        None
    })
    .await
    .unwrap();
    let _ = kubectl.kill();
    let _ = kubectl.wait();
    let line = line.expect("kubectl printed the new Dogu");
    assert!(line.contains("3.2.1-1"), "the watched row has the printer columns: {line}");
    sandbox.shutdown().await;
}

/// The finding: `kubectl create secret generic` and `create configmap` failed with 400 (kubectl sends
/// built-in kinds as protobuf). Both create what they say, and kubectl reads them back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_creates_secrets_and_config_maps() {
    let (sandbox, address) = served_sandbox().await;
    let (created, text) = tokio::task::spawn_blocking(move || {
        let secret = kubectl_against(
            address,
            &["-n", NS, "create", "secret", "generic", "ldap-admin", "--from-literal=password=s3cret"],
        );
        let config_map = kubectl_against(
            address,
            &["-n", NS, "create", "configmap", "notes", "--from-literal=a=1", "--from-literal=b=2"],
        );
        let listed = kubectl_against(address, &["-n", NS, "get", "configmap", "notes"]);
        (secret.0 && config_map.0 && listed.0, format!("{}{}{}", secret.1, config_map.1, listed.1))
    })
    .await
    .unwrap();
    assert!(created, "{text}");
    assert!(text.contains("secret/ldap-admin created") && text.contains("configmap/notes created"), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("notes") && l.split_whitespace().nth(1) == Some("2")),
        "DATA column: {text}"
    );
    let secret = sandbox.cluster.get("v1", "Secret", NS, "ldap-admin").await.expect("the Secret exists");
    assert_eq!(secret["data"]["password"], "czNjcmV0");
    sandbox.shutdown().await;
}

/// What `kubectl explain blueprint.spec` must say on either server: the kind, the field's own
/// description and its fields.
pub fn assert_explains_the_blueprint_spec(explained: &str) {
    assert!(explained.contains("KIND:       Blueprint"), "{explained}");
    assert!(explained.contains("GROUP:      k8s.cloudogu.com"), "{explained}");
    assert!(explained.contains("The wanted state of the ecosystem (required;"), "{explained}");
    for field in ["allowDoguNamespaceSwitch", "blueprint\t<Object>", "blueprintMask", "stopped"] {
        assert!(explained.contains(field), "{field}: {explained}");
    }
}

/// The finding: `kubectl explain blueprint.spec` failed (no schemas in the sandbox's OpenAPI).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_explain_reads_the_crd_schema() {
    let (sandbox, address) = served_sandbox().await;
    let (explained, text) =
        tokio::task::spawn_blocking(move || kubectl_against(address, &["explain", "blueprint.spec"])).await.unwrap();
    assert!(explained, "{text}");
    assert_explains_the_blueprint_spec(&text);
    sandbox.shutdown().await;
}

/// The finding: one change of the global config restarted every simulated dogu twice: a restart that
/// ended in the second of the config write reported a start in that second, which D45 (rightly) takes
/// for a start before the write, so it restarted again. A dogu now reports a start after the second of
/// its config's last write, as a real one does.
#[tokio::test(start_paused = true)]
async fn one_global_config_change_restarts_every_dogu_once() {
    // `make run`'s delays: a restart of half a second ends in the second of the write half the time.
    let behaviour = blueprint_operator::sandbox::ecosystem::Behaviour {
        install: Duration::from_millis(1500),
        upgrade: Duration::from_millis(1000),
        restart: Duration::from_millis(500),
        ..Default::default()
    };
    let cluster = blueprint_operator::sandbox::seed::DEFAULT_CLUSTER;
    let mut sandbox = e2e::Scene::start(e2e::On::Emulator, None, behaviour, cluster).await.into_sandbox();
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&e2e::default_blueprint()).await.unwrap();
    assert!(sandbox.wait_until(NAME, Duration::from_secs(600), completed).await.is_some());
    let before = sandbox.emulator().requests().len();

    let changed = e2e::blueprint(
        &blueprint_operator::sandbox::seed::DEFAULT_BLUEPRINT.replace("value: ces-admins", "value: ces-operators"),
    );
    sandbox.apply_blueprint(&changed).await.unwrap();
    let second = |b: &blueprint_machine::api::Blueprint| b.metadata.generation == Some(2) && completed(b);
    assert!(
        sandbox.wait_until(NAME, Duration::from_secs(600), second).await.is_some(),
        "{}",
        e2e::conditions(&sandbox).await
    );
    // Give any second restart the time it would take.
    tokio::time::sleep(Duration::from_secs(10)).await;

    let requests = sandbox.emulator().requests();
    let restarts = |dogu: &str| {
        requests[before..]
            .iter()
            .filter(|r| r.method == "PATCH" && r.path.ends_with(&format!("/dogus/{dogu}/status")))
            .filter(|r| r.body.contains("\"restarting\""))
            .count()
    };
    for dogu in ["cas", "ldap", "nginx-ingress", "nginx-static", "postfix", "postgresql", "redmine"] {
        assert_eq!(restarts(dogu), 1, "{dogu} restarted {} times", restarts(dogu));
    }
    sandbox.shutdown().await;
}
