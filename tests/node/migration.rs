//! docs/migration.md, run as it is written, for every era of Cloudogu's Go operator: a cluster as that
//! era leaves it (its CRD and its operator's chart as Helm releases, recorded in tests/fixtures/eras/;
//! the Blueprint it stored, with its status; the ecosystem it installed, examples/upgrade/cluster.yaml),
//! then the guide's way in and its way back, each step's `bash` block in a shell with the guide's
//! variables. After every step every Blueprint reads in every version the cluster serves; the way in
//! ends with the Blueprint Completed, nothing in the ecosystem changed and only v3 stored; the way back
//! ends with the era's own CRD (no webhook), only the era's version stored, and the Blueprint as the Go
//! operator reads it. (There is no image of the Go operator here: its chart runs 0 replicas, so "the
//! Go operator reads it" is its API version's read, not its reconcile.)

use std::path::{Path, PathBuf};
use std::time::Duration;

use blueprint_operator::sandbox::node::{Node, install as chart};
use serde_json::Value;

use super::{json, kubectl, turn};
use crate::support::doc_blocks::{self, DocBlocks};

/// One era: its Blueprint API and the namespace its ecosystem lives in.
struct Era {
    api: &'static str,
    namespace: &'static str,
}

#[test]
fn in_from_and_back_to_the_go_operator_2x_blueprints_v1() {
    migrate(Era { api: "v1", namespace: "era-v1" });
}

#[test]
fn in_from_and_back_to_the_go_operator_3_0_0_cr1_blueprints_v2() {
    migrate(Era { api: "v2", namespace: "era-v2" });
}

#[test]
fn in_from_and_back_to_the_go_operator_3x_blueprints_v3() {
    migrate(Era { api: "v3", namespace: "era-v3" });
}

const BLUEPRINT: &str = "blueprint-ces";
const CRD: &str = "blueprints.k8s.cloudogu.com";

fn migrate(era: Era) {
    let (node, _turn) = turn();
    let fixtures = crate::crd::repository(&format!("tests/fixtures/eras/{}", era.api));
    let work = tempfile::tempdir().unwrap();
    let crd_chart = crd_chart(&fixtures, work.path());
    let ns = era.namespace;

    // A cluster without this operator (another scenario's release and CRDs gone).
    super::releases_elsewhere_gone(node, "");
    for crd in [CRD, "blueprintmasks.k8s.cloudogu.com"] {
        let _ = node.kubectl(&["delete", "crd", crd, "--ignore-not-found", "--wait"]);
    }

    // The era: the ecosystem its operator installed, its CRD's and its operator's releases, its Blueprint.
    // The Go operators' health configs require k8s-service-discovery, which the example lacks.
    let longhorn = "    status: {status: installed, health: available, installedVersion: 1.7.1-1}\n";
    let discovery = "  - apiVersion: k8s.cloudogu.com/v1\n    kind: Component\n    \
                     metadata: {name: k8s-service-discovery, namespace: ecosystem}\n    \
                     spec: {namespace: k8s, name: k8s-service-discovery, version: 3.0.0}\n    \
                     status: {status: installed, health: available, installedVersion: 3.0.0}\n";
    let example = std::fs::read_to_string(crate::crd::repository("examples/upgrade/cluster.yaml")).unwrap();
    assert!(example.contains(longhorn), "the example installs longhorn");
    let cluster = example.replacen(longhorn, &format!("{longhorn}{discovery}"), 1);
    super::seeded_ecosystem(node, ns, super::behaviour(), &cluster);
    super::helm(node, ns, &["install", "k8s-blueprint-operator-crd", crd_chart.to_str().unwrap()]);
    kubectl(node, &["wait", "--for=condition=Established", &format!("crd/{CRD}"), "--timeout=60s"]);
    let go_chart = fixtures.join("go-operator-chart");
    super::helm(node, ns, &["install", chart::RELEASE, go_chart.to_str().unwrap()]);
    store_blueprint(node, &fixtures, ns);
    readable(node, ns, "the era's cluster");
    let ecosystem_before = ecosystem(node, ns);

    let guide = DocBlocks::read("docs/migration.md");
    let env = Env::new(node, ns, era.api, &crd_chart, &go_chart);
    // The guide's first question: which era is this?
    let (ok, which) = doc_blocks::run(&guide.block("Which era you run", "kubectl get crd"), &env.vars);
    assert!(ok && which.trim() == format!("{0} [\"{0}\"]", era.api), "the era as the guide tells it: {which}");
    let api_log = node.plane.dir.join("kube-apiserver.log");
    let log_length = || std::fs::read_to_string(&api_log).unwrap_or_default().len();
    // After every step of the way in: every Blueprint reads in every served version, and the API
    // server converted everything it was asked to (our CRD comes only once the webhook serves).
    for step in ["1. Plan", "2. Stop the Go operator", "3. Install this operator", "4. Store every Blueprint"] {
        let before = log_length();
        env.run(&guide.block(step, ""), step);
        readable(node, ns, step);
        let log = std::fs::read_to_string(&api_log).unwrap_or_default();
        let failures: Vec<&str> =
            log.get(before..).unwrap_or_default().lines().filter(|l| l.contains("conversion webhook")).collect();
        assert!(failures.is_empty(), "{step}: the API server failed to convert: {failures:#?}");
    }
    super::completed(node, ns, BLUEPRINT, Duration::from_secs(60));
    assert_eq!(ecosystem(node, ns), ecosystem_before, "the switch wrote nothing into the ecosystem");
    let crd = json(node, &["get", "crd", CRD]);
    assert_eq!(crd["status"]["storedVersions"], serde_json::json!(["v3"]), "{}", crd["status"]);
    assert_eq!(stored_version(&crd), "v3");

    // The way back: the era's own CRD, nothing stored in another version, the Blueprint in its API.
    let log_before = log_length();
    env.run(&guide.block("The way back", ""), "The way back");
    let crd = json(node, &["get", "crd", CRD]);
    let served: Vec<&str> =
        crd["spec"]["versions"].as_array().unwrap().iter().filter_map(|v| v["name"].as_str()).collect();
    assert_eq!(served, era_versions(era.api), "the era's CRD: {}", crd["spec"]["versions"]);
    assert!(crd["spec"]["conversion"]["webhook"].is_null(), "no webhook left: {}", crd["spec"]["conversion"]);
    assert_eq!(crd["status"]["storedVersions"], serde_json::json!([era.api]));
    let blueprint = json(node, &["get", &format!("blueprints.{}.k8s.cloudogu.com", era.api), BLUEPRINT, "-n", ns]);
    go_operator_reads(era.api, &blueprint);
    nothing_lost(&fixtures, &blueprint);
    let releases: Value = serde_json::from_str(&super::helm(node, ns, &["list", "-o", "json"])).unwrap();
    let mut deployed: Vec<(String, String)> = releases
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap().to_owned(), format!("{} {}", r["chart"], r["status"])))
        .collect();
    deployed.sort();
    let go_version = std::fs::read_to_string(go_chart.join("Chart.yaml")).unwrap();
    let go_version = go_version.lines().find_map(|l| l.strip_prefix("version: ")).unwrap().trim().to_owned();
    assert_eq!(
        deployed,
        [
            (chart::RELEASE.to_owned(), format!("\"k8s-blueprint-operator-{go_version}\" \"deployed\"")),
            (
                "k8s-blueprint-operator-crd".to_owned(),
                "\"k8s-blueprint-operator-crd-0.0.0-fixture\" \"deployed\"".to_owned()
            ),
        ],
        "the Go operator's releases back in place"
    );
    // Nothing on the way back needed a conversion the API server could not make.
    let log = std::fs::read_to_string(&api_log).unwrap_or_default();
    let failures: Vec<&str> =
        log.get(log_before..).unwrap_or_default().lines().filter(|l| l.contains("conversion webhook")).collect();
    assert!(failures.is_empty(), "conversion failures on the way back: {failures:#?}");

    // Left as the next scenario expects a cluster: neither operator, no Blueprint CRD.
    for release in [chart::RELEASE, "k8s-blueprint-operator-crd"] {
        super::helm(node, ns, &["uninstall", release, "--wait"]);
    }
    for crd in [CRD, "blueprintmasks.k8s.cloudogu.com"] {
        let _ = node.kubectl(&["delete", "crd", crd, "--ignore-not-found", "--wait"]);
    }
}

/// The versions the era's own CRD serves.
fn era_versions(api: &str) -> Vec<&str> {
    vec![api]
}

fn stored_version(crd: &Value) -> String {
    let versions = crd["spec"]["versions"].as_array().unwrap();
    versions.iter().find(|v| v["storage"] == true).unwrap()["name"].as_str().unwrap().to_owned()
}

/// What the Go operator of the era reads: its own version's fields, completed.
fn go_operator_reads(api: &str, blueprint: &Value) {
    match api {
        "v1" => {
            assert_eq!(blueprint["status"]["phase"], "completed", "{}", blueprint["status"]);
            let text = blueprint["spec"]["blueprint"].as_str().expect("v1's blueprint is JSON text");
            let inner: Value = serde_json::from_str(text).unwrap();
            assert_eq!(inner["blueprintApi"], "v2");
            assert_eq!(inner["dogus"].as_array().map(Vec::len), Some(7), "{inner}");
            assert!(text.contains("\"sa-ldap/password\":\"*****\""), "the censored key as the Go operator wrote it");
            assert!(blueprint["spec"]["blueprintMask"].as_str().is_some());
        }
        _ => {
            let conditions = blueprint["status"]["conditions"].as_array().expect("conditions");
            let completed = conditions.iter().find(|c| c["type"] == "Completed").expect("Completed");
            assert_eq!(completed["status"], "True", "{completed}");
            assert_eq!(blueprint["spec"]["blueprint"]["dogus"].as_array().map(Vec::len), Some(7));
        }
    }
}

/// The way back lost nothing of what the Go operator (and the administrator) had stored: the spec as
/// the fixture has it (v1's JSON texts compared as JSON), every label and annotation, every field of
/// the status.
fn nothing_lost(fixtures: &Path, blueprint: &Value) {
    let text = std::fs::read_to_string(fixtures.join("blueprint.yaml")).unwrap();
    let stored: Value = serde_saphyr::from_str(&text).unwrap();
    let as_json = |spec: &Value| -> Value {
        let mut spec = spec.clone();
        for field in ["blueprint", "blueprintMask"] {
            if let Some(text) = spec[field].as_str() {
                spec[field] = serde_json::from_str(text).unwrap();
            }
        }
        for dogu in spec["blueprint"]["dogus"].as_array_mut().into_iter().flatten() {
            without_go_nones(dogu);
        }
        spec
    };
    assert_eq!(as_json(&blueprint["spec"]), as_json(&stored["spec"]), "the spec, back as it was stored");
    for (field, added) in [("labels", ADMINS_LABEL), ("annotations", ADMINS_ANNOTATION)] {
        let mut wanted = stored["metadata"][field].as_object().cloned().unwrap_or_default();
        wanted.insert(added.0.to_owned(), Value::from(added.1));
        for (key, value) in wanted {
            assert_eq!(blueprint["metadata"][field][&key], value, "metadata.{field}.{key} kept");
        }
    }
    for (field, value) in stored["status"].as_object().unwrap() {
        let back = &blueprint["status"][field];
        assert!(
            !back.is_null() && std::mem::discriminant(back) == std::mem::discriminant(value),
            "status.{field}: {back}"
        );
    }
}

/// A dogu of v1's JSON text without what the Go operator 2.x writes for "none" and reads as none:
/// `minVolumeSize: "0"`, `reverseProxy: {}`, and the objects they leave empty (docs/api-versions.md, D57:
/// the conversion to v3 keeps none of them, so the way back writes none).
fn without_go_nones(dogu: &mut Value) {
    let Some(platform) = dogu.get_mut("platformConfig").and_then(Value::as_object_mut) else { return };
    if let Some(resource) = platform.get_mut("resource").and_then(Value::as_object_mut)
        && resource.get("minVolumeSize").and_then(Value::as_str) == Some("0")
    {
        resource.remove("minVolumeSize");
    }
    platform.retain(|_, value| value.as_object().is_none_or(|object| !object.is_empty()));
    if platform.is_empty() {
        dogu.as_object_mut().unwrap().remove("platformConfig");
    }
}

/// What an administrator had put on the Go operator's Blueprint (a GitOps tool's, a team's).
const ADMINS_LABEL: (&str, &str) = ("team.example.com/owner", "platform");
const ADMINS_ANNOTATION: (&str, &str) =
    ("argocd.argoproj.io/tracking-id", "ces:k8s.cloudogu.com/Blueprint:ecosystem/blueprint-ces");

/// Every Blueprint of `namespace` reads in every version the CRD serves (through the webhook where
/// it is stored in another).
fn readable(node: &Node, namespace: &str, step: &str) {
    let crd = json(node, &["get", "crd", CRD]);
    for version in crd["spec"]["versions"].as_array().unwrap() {
        let name = version["name"].as_str().unwrap();
        if version["served"] != true {
            continue;
        }
        let read = super::wait(Duration::from_secs(60), &format!("{step}: Blueprints read as {name}"), || {
            node.kubectl(&["get", &format!("blueprints.{name}.k8s.cloudogu.com"), "-n", namespace, "-o", "json"])
        });
        let list: Value = serde_json::from_str(&read).unwrap();
        let items = list["items"].as_array().unwrap();
        assert_eq!(items.len(), 1, "{step}: one Blueprint as {name}");
        assert_eq!(items[0]["apiVersion"], format!("k8s.cloudogu.com/{name}"));
    }
}

/// What the switch must not change: the Dogus' and Components' specs, the config ConfigMaps' data.
fn ecosystem(node: &Node, namespace: &str) -> Vec<(String, Value)> {
    let mut state = Vec::new();
    for kind in ["dogus", "components"] {
        for item in json(node, &["get", kind, "-n", namespace])["items"].as_array().unwrap() {
            state.push((format!("{kind}/{}", super::name(item)), item["spec"].clone()));
        }
    }
    for name in ["global-config", "redmine-config"] {
        let config = json(node, &["get", "configmap", name, "-n", namespace]);
        state.push((format!("configmap/{name}"), config["data"].clone()));
    }
    state
}

/// The era's Blueprint as its Go operator stored it: created, then its status written.
fn store_blueprint(node: &Node, fixtures: &Path, namespace: &str) {
    let text = std::fs::read_to_string(fixtures.join("blueprint.yaml")).unwrap();
    let mut object: Value = serde_saphyr::from_str(&text).unwrap();
    object["metadata"]["namespace"] = Value::from(namespace);
    object["metadata"]["labels"][ADMINS_LABEL.0] = Value::from(ADMINS_LABEL.1);
    object["metadata"]["annotations"][ADMINS_ANNOTATION.0] = Value::from(ADMINS_ANNOTATION.1);
    let status = object.as_object_mut().unwrap().remove("status").expect("the fixture has a status");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blueprint.json");
    std::fs::write(&file, object.to_string()).unwrap();
    kubectl(node, &["create", "-f", file.to_str().unwrap()]);
    let patch = serde_json::json!({"status": status}).to_string();
    kubectl(
        node,
        &["patch", "blueprint", BLUEPRINT, "-n", namespace, "--subresource=status", "--type=merge", "-p", &patch],
    );
}

/// The era's CRD as the Go operator's CRD chart installs it (a release of its own).
fn crd_chart(fixtures: &Path, work: &Path) -> PathBuf {
    let dir = work.join("k8s-blueprint-operator-crd");
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: k8s-blueprint-operator-crd\nversion: 0.0.0-fixture\n",
    )
    .unwrap();
    std::fs::copy(fixtures.join("crd.yaml"), dir.join("templates/crd.yaml")).unwrap();
    dir
}

/// The guide's variables and tools ([`super::shell_env`]) with the era's.
struct Env {
    vars: Vec<(String, String)>,
}

impl Env {
    fn new(node: &Node, namespace: &str, api: &str, crd_chart: &Path, go_chart: &Path) -> Env {
        let mut vars = super::shell_env(node);
        vars.extend([
            ("NS".to_owned(), namespace.to_owned()),
            ("CHART".to_owned(), chart::chart().display().to_string()),
            ("ERA_API".to_owned(), api.to_owned()),
            ("GO_CHART".to_owned(), go_chart.display().to_string()),
            ("GO_CRD_CHART".to_owned(), crd_chart.display().to_string()),
        ]);
        Env { vars }
    }

    /// Runs `script` as the guide's reader would.
    fn run(&self, script: &str, step: &str) {
        let (ok, text) = doc_blocks::run(script, &self.vars);
        eprintln!("docs/migration.md, {step}:\n{script}{text}");
        assert!(ok, "docs/migration.md, {step}:\n{text}");
    }
}
