//! The Helm chart (charts/blueprint-operator), with the real helm (`make helm`): it lints, and what it
//! renders is what the operator needs: the RBAC of deploy/rbac.yaml, settings the operator reads and
//! accepts, the committed Blueprint CRD, the health config in the operator's format, and the
//! monitoring files as they are. Installed into the real API server in tests/cluster/helm.rs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::crd::{repository, yaml_file};

/// The helm CLI built by `make helm` (beside kubectl; `KUBE_BIN` overrides the folder).
pub fn helm() -> PathBuf {
    helm_in(&blueprint_operator::sandbox::control_plane::bin_dir())
}

/// helm in `bin`; missing, the test fails with one line saying how to build it (as the control plane
/// does for `make kube`).
fn helm_in(bin: &Path) -> PathBuf {
    let helm = bin.join("helm");
    assert!(
        helm.exists(),
        "{} is missing: build it with `make helm` (needs Go; `make test` does it first)",
        helm.display()
    );
    helm
}

/// `helm template` of the chart with `--set` values; the rendered objects.
pub fn render(set: &[&str]) -> Vec<Value> {
    let mut command = Command::new(helm());
    command.args(["template", "bo"]).arg(repository("charts/blueprint-operator")).args(["--namespace", "ecosystem"]);
    for value in set {
        command.args(["--set", value]);
    }
    let output = command.output().unwrap();
    assert!(output.status.success(), "helm template: {}", String::from_utf8_lossy(&output.stderr));
    let documents: Vec<Value> = serde_saphyr::from_multiple(&String::from_utf8(output.stdout).unwrap()).unwrap();
    documents.into_iter().filter(|d| !d.is_null()).collect()
}

fn find<'o>(objects: &'o [Value], kind: &str, name: &str) -> &'o Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn kinds(objects: &[Value]) -> Vec<String> {
    let mut kinds: Vec<String> = objects.iter().map(|o| o["kind"].as_str().unwrap().to_owned()).collect();
    kinds.sort();
    kinds
}

/// The container's environment: literal values by name, and the names set from Secrets or fields.
fn environment(deployment: &Value) -> (BTreeMap<String, String>, Vec<String>) {
    let mut literal = BTreeMap::new();
    let mut referenced = Vec::new();
    for variable in deployment["spec"]["template"]["spec"]["containers"][0]["env"].as_array().unwrap() {
        let name = variable["name"].as_str().unwrap().to_owned();
        match variable["value"].as_str() {
            Some(value) => {
                literal.insert(name, value.to_owned());
            }
            None => referenced.push(name),
        }
    }
    (literal, referenced)
}

#[test]
fn the_chart_lints_strictly_with_every_switch() {
    for set in [
        "",
        "monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule.enabled=true,monitoring.dashboard.enabled=true,doguRegistry.certificate.secret=ca,manager.networkPolicies.enabled=false,podDisruptionBudget.enabled=false,webhook.certManager.enabled=true",
        "webhook.enabled=false",
    ] {
        let mut command = Command::new(helm());
        command.args(["lint", "--strict"]).arg(repository("charts/blueprint-operator"));
        if !set.is_empty() {
            command.args(["--set", set]);
        }
        let output = command.output().unwrap();
        assert!(output.status.success(), "helm lint --set {set}: {}", String::from_utf8_lossy(&output.stdout));
    }
}

#[test]
fn the_chart_renders_what_the_operator_needs() {
    let objects = render(&[]);
    assert_eq!(
        kinds(&objects),
        [
            "ClusterRole",
            "ClusterRoleBinding",
            "ConfigMap",
            "Deployment",
            "NetworkPolicy",
            "PodDisruptionBudget",
            "Role",
            "RoleBinding",
            "Service",
            "Service",
            "ServiceAccount"
        ]
    );

    // The RBAC of deploy/rbac.yaml, rule for rule (least privilege, proven by tests/cluster/rbac.rs and,
    // the webhook's, by tests/cluster/webhook.rs).
    let deploy: Vec<Value> =
        serde_saphyr::from_multiple(&std::fs::read_to_string(repository("deploy/rbac.yaml")).unwrap()).unwrap();
    for (kind, name) in [("Role", "k8s-blueprint-operator"), ("ClusterRole", "k8s-blueprint-operator-webhook")] {
        let deployed = deploy.iter().find(|d| d["kind"] == kind).unwrap();
        assert_eq!(deployed["metadata"]["name"], name);
        assert_eq!(find(&objects, kind, name)["rules"], deployed["rules"], "{kind} {name}");
    }
    let binding = find(&objects, "RoleBinding", "k8s-blueprint-operator");
    assert_eq!(binding["subjects"][0]["name"], "k8s-blueprint-operator");
    let binding = find(&objects, "ClusterRoleBinding", "k8s-blueprint-operator-webhook");
    assert_eq!(
        binding["subjects"][0],
        serde_json::json!({"kind": "ServiceAccount", "name": "k8s-blueprint-operator", "namespace": "ecosystem"})
    );
    assert_eq!(binding["roleRef"]["name"], "k8s-blueprint-operator-webhook");

    // Every variable the chart sets is one the operator reads, and the operator accepts the values.
    let deployment = find(&objects, "Deployment", "k8s-blueprint-operator-controller-manager");
    let (literal, referenced) = environment(deployment);
    let known: Vec<&str> = blueprint_operator::config::ENVIRONMENT.iter().map(|(name, ..)| *name).collect();
    for name in literal.keys().chain(&referenced) {
        assert!(known.contains(&name.as_str()), "the chart sets {name}, which the operator does not read");
    }
    let settings = blueprint_operator::config::Settings::from_lookup(|name| match name {
        "NAMESPACE" => Some("ecosystem".into()),
        other => literal.get(other).cloned(),
    })
    .expect("the operator accepts the chart's defaults");
    assert_eq!(settings.log_level, "info");
    assert!(settings.operator.provided_dependencies.is_empty());
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], format!("docker.io/cloudogu/blueprint-operator:{}", env!("CARGO_PKG_VERSION")));
    assert_eq!(deployment["spec"]["replicas"], 2);

    // The health config in the operator's format: the example cluster's, as the Go chart writes it.
    let health = find(&objects, "ConfigMap", "k8s-blueprint-operator-health-config");
    let example = yaml_file(&repository("examples/fresh-install/cluster.yaml"));
    let example_health = example["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["metadata"]["name"] == "k8s-blueprint-operator-health-config")
        .unwrap();
    for key in ["components", "wait"] {
        let parse = |v: &Value| serde_saphyr::from_str::<Value>(v[key].as_str().unwrap()).unwrap();
        assert_eq!(parse(&health["data"]), parse(&example_health["data"]), "{key}");
    }

    // The CRDs the chart installs are the committed ones (make crds writes both).
    for file in ["blueprint.yaml", "blueprintmask.yaml"] {
        let chart_crd = std::fs::read_to_string(repository(&format!("charts/blueprint-operator/crds/{file}"))).unwrap();
        assert_eq!(chart_crd, std::fs::read_to_string(repository(&format!("crds/{file}"))).unwrap(), "{file}");
    }
    let crds: Vec<_> = std::fs::read_dir(repository("charts/blueprint-operator/crds")).unwrap().collect();
    assert_eq!(
        crds.len(),
        2,
        "the Blueprint and BlueprintMask CRDs: the Dogu and Component CRDs come with their operators"
    );
    let chart = yaml_file(&repository("charts/blueprint-operator/Chart.yaml"));
    assert_eq!(chart["appVersion"], env!("CARGO_PKG_VERSION"));
}

#[test]
fn values_set_the_operators_settings() {
    let objects = render(&[
        "manager.env.logLevel=debug",
        "manager.reconciler.debounceWindow=3s",
        "manager.env.authRegistrationEnabled=true",
        // A comma in a --set value is escaped.
        "manager.env.operatorComponentVersions=>=0.1.0\\, <1.0.0",
        "manager.image.tag=0.2.0",
        "manager.env.operatorComponent=k8s/blueprint-operator",
        "manager.replicas=1",
        "doguRegistry.certificate.secret=registry-ca",
    ]);
    let deployment = find(&objects, "Deployment", "k8s-blueprint-operator-controller-manager");
    let (literal, _) = environment(deployment);
    let settings = blueprint_operator::config::Settings::from_lookup(|name| match name {
        "NAMESPACE" => Some("ecosystem".into()),
        other => literal.get(other).cloned(),
    })
    .expect("the operator accepts the values");
    assert_eq!(settings.log_level, "debug");
    assert_eq!(settings.debounce.window, std::time::Duration::from_secs(3));
    assert_eq!(
        settings.operator.provided_dependencies,
        [blueprint_machine::observation::ProvidedDependency::Cas].into_iter().collect()
    );
    assert_eq!(settings.operator.own_versions.to_string(), ">=0.1.0, <1.0.0");
    assert_eq!(settings.operator.component, "k8s/blueprint-operator");
    assert_eq!(literal["DOGU_REGISTRY_CA_FILE"], "/etc/dogu-registry-ca/dogu-registry-cert.pem");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["volumes"][0]["secret"]["secretName"], "registry-ca");
    assert_eq!(pod["containers"][0]["image"], "docker.io/cloudogu/blueprint-operator:0.2.0");
    assert_eq!(deployment["spec"]["replicas"], 1);

    // A value the operator would refuse is refused at its start, naming the variable: the chart does not
    // hide it.
    let objects = render(&["manager.env.disablePostfixDependencyCheck=maybe"]);
    let (literal, _) = environment(find(&objects, "Deployment", "k8s-blueprint-operator-controller-manager"));
    let error = blueprint_operator::config::Settings::from_lookup(|name| match name {
        "NAMESPACE" => Some("ecosystem".into()),
        other => literal.get(other).cloned(),
    })
    .unwrap_err();
    assert!(error.to_string().contains("DISABLE_POSTFIX_DEPENDENCY_CHECK"), "{error}");
}

#[test]
fn monitoring_renders_the_rules_and_the_dashboard_as_they_are() {
    let objects = render(&[
        "monitoring.serviceMonitor.enabled=true",
        "monitoring.prometheusRule.enabled=true",
        "monitoring.dashboard.enabled=true",
        "monitoring.prometheusRule.labels.release=prometheus",
    ]);
    let rules = find(&objects, "PrometheusRule", "k8s-blueprint-operator");
    assert_eq!(rules["metadata"]["labels"]["release"], "prometheus");
    let file = yaml_file(&repository("charts/blueprint-operator/files/prometheus-rules.yaml"));
    assert_eq!(rules["spec"], file, "the rules as docs/monitoring.md describes them");

    let dashboard = find(&objects, "ConfigMap", "k8s-blueprint-operator-dashboard");
    assert_eq!(dashboard["metadata"]["labels"]["grafana_dashboard"], "1");
    let rendered: Value = serde_json::from_str(dashboard["data"]["blueprint-operator.json"].as_str().unwrap()).unwrap();
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(repository("charts/blueprint-operator/files/grafana-dashboard.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(rendered, file);

    // The ServiceMonitor scrapes the metrics Service's port, and selects that Service.
    let monitor = find(&objects, "ServiceMonitor", "k8s-blueprint-operator");
    let service = find(&objects, "Service", "k8s-blueprint-operator-metrics");
    assert_eq!(monitor["spec"]["endpoints"][0]["port"], service["spec"]["ports"][0]["name"]);
    for (label, value) in monitor["spec"]["selector"]["matchLabels"].as_object().unwrap() {
        assert_eq!(&service["metadata"]["labels"][label], value, "the ServiceMonitor selects the Service by {label}");
    }
    let deployment = find(&objects, "Deployment", "k8s-blueprint-operator-controller-manager");
    let ports = deployment["spec"]["template"]["spec"]["containers"][0]["ports"].as_array().unwrap();
    assert!(ports.iter().any(|p| p["name"] == service["spec"]["ports"][0]["targetPort"]), "the Service targets a port");
}

/// deploy/ (kustomize) installs what the chart installs by default, for those who do not use Helm: the
/// same Role, disruption budget and metrics Service.
#[test]
fn the_kustomize_manifests_match_the_chart() {
    let kubectl = blueprint_operator::sandbox::control_plane::bin_dir().join("kubectl");
    assert!(kubectl.exists(), "{} is missing: run `make kube`", kubectl.display());
    let output = Command::new(kubectl).arg("kustomize").arg(repository("deploy")).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let deploy: Vec<Value> = serde_saphyr::from_multiple(&String::from_utf8(output.stdout).unwrap()).unwrap();
    let chart = render(&[]);
    for (kind, name) in [
        ("Role", "k8s-blueprint-operator"),
        ("ClusterRole", "k8s-blueprint-operator-webhook"),
        ("PodDisruptionBudget", "k8s-blueprint-operator"),
        ("Service", "k8s-blueprint-operator-metrics"),
        ("Service", "blueprint-operator-webhook"),
    ] {
        let (ours, charted) = (find(&deploy, kind, name), find(&chart, kind, name));
        let body = |o: &Value| match kind {
            "Role" | "ClusterRole" => o["rules"].clone(),
            "Service" => o["spec"]["ports"].clone(),
            _ => o["spec"]["maxUnavailable"].clone(),
        };
        assert!(!body(ours).is_null(), "{kind} {name}");
        assert_eq!(body(ours), body(charted), "{kind} {name}");
    }
    assert_eq!(
        kinds(&deploy),
        [
            "ClusterRole",
            "ClusterRoleBinding",
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "Deployment",
            "PodDisruptionBudget",
            "Role",
            "RoleBinding",
            "Service",
            "Service",
            "ServiceAccount"
        ]
    );
    // The same webhook settings: port, Service, Secret.
    let settings = |objects: &[Value]| {
        let (literal, _) = environment(find(objects, "Deployment", "k8s-blueprint-operator-controller-manager"));
        blueprint_operator::config::Settings::from_lookup(|name| match name {
            "NAMESPACE" => Some("ecosystem".into()),
            other => literal.get(other).cloned(),
        })
        .unwrap()
        .webhook
    };
    assert_eq!(settings(&deploy), settings(&chart));
}

/// The conversion webhook as the chart and deploy/ set it up: the Service reaches the port the operator
/// listens on, the Role's rule names the Secret the operator keeps, the NetworkPolicy lets the API
/// server in; with cert-manager, the Certificate's Secret is mounted where the operator reads it, for
/// the names the operator's own certificate would have; switched off, nothing of it is installed.
#[test]
fn the_webhook_is_wired_in_every_mode() {
    use blueprint_operator::webhook::CertificateSource;
    use blueprint_operator::webhook::certificates::ServingNames;

    let settings = |objects: &[Value]| {
        let (literal, _) = environment(find(objects, "Deployment", "k8s-blueprint-operator-controller-manager"));
        blueprint_operator::config::Settings::from_lookup(|name| match name {
            "NAMESPACE" => Some("ecosystem".into()),
            other => literal.get(other).cloned(),
        })
        .expect("the operator accepts the chart's settings")
        .webhook
    };
    let ports = |objects: &[Value]| {
        let deployment = find(objects, "Deployment", "k8s-blueprint-operator-controller-manager");
        deployment["spec"]["template"]["spec"]["containers"][0]["ports"].as_array().unwrap().clone()
    };

    // Self-managed (the default).
    let objects = render(&[]);
    let webhook = settings(&objects).expect("on by default");
    let service = find(&objects, "Service", "blueprint-operator-webhook");
    assert_eq!(service["spec"]["ports"][0]["port"], 443);
    let target = ports(&objects).into_iter().find(|p| p["name"] == service["spec"]["ports"][0]["targetPort"]).unwrap();
    assert_eq!(target["containerPort"], webhook.address.port());
    let CertificateSource::SelfManaged { secret, service: service_name, extra_names } = &webhook.certificate else {
        panic!("{webhook:?}")
    };
    assert_eq!(service_name, "blueprint-operator-webhook");
    assert!(extra_names.is_empty());
    let role = find(&objects, "Role", "k8s-blueprint-operator");
    let named = role["rules"].as_array().unwrap().iter().find(|r| r.get("resourceNames").is_some()).unwrap();
    assert_eq!(named["resourceNames"], serde_json::json!([secret]));
    let policy = find(&objects, "NetworkPolicy", "k8s-blueprint-operator");
    let allowed: Vec<&Value> = policy["spec"]["ingress"].as_array().unwrap().iter().collect();
    let webhook_rule = allowed.iter().find(|rule| rule["ports"][0]["port"] == "webhook").expect("the webhook's port");
    assert!(webhook_rule.get("from").is_none(), "from anywhere: {webhook_rule}");

    // cert-manager: its Secret mounted, no Secret of the operator's own.
    let objects = render(&["webhook.certManager.enabled=true"]);
    let webhook = settings(&objects).unwrap();
    let certificate = find(&objects, "Certificate", "blueprint-operator-webhook");
    let pod = &find(&objects, "Deployment", "k8s-blueprint-operator-controller-manager")["spec"]["template"]["spec"];
    let volume = pod["volumes"].as_array().unwrap().iter().find(|v| v["name"] == "webhook-certs").unwrap();
    assert_eq!(volume["secret"]["secretName"], certificate["spec"]["secretName"]);
    let mount = pod["containers"][0]["volumeMounts"].as_array().unwrap().iter().find(|m| m["name"] == "webhook-certs");
    assert_eq!(
        webhook.certificate,
        CertificateSource::Files {
            directory: mount.unwrap()["mountPath"].as_str().unwrap().into(),
            certificate: certificate["metadata"]["name"].as_str().map(str::to_owned),
            service: service["metadata"]["name"].as_str().unwrap().to_owned(),
        },
        "the operator names the chart's Certificate and Service in the CRD"
    );
    let names: Vec<String> =
        ServingNames::new("blueprint-operator-webhook", "ecosystem", &[]).all().map(ToString::to_string).collect();
    assert_eq!(certificate["spec"]["dnsNames"], serde_json::json!(names));
    assert_eq!(
        certificate["spec"]["issuerRef"]["name"],
        find(&objects, "Issuer", "blueprint-operator-webhook-selfsigned")["metadata"]["name"]
    );
    // The CRD read and patched (the annotation for the CA injector), as in the self-managed mode.
    let cluster_role = find(&objects, "ClusterRole", "k8s-blueprint-operator-webhook");
    assert_eq!(cluster_role["rules"][0]["resourceNames"], serde_json::json!(["blueprints.k8s.cloudogu.com"]));
    let role = find(&objects, "Role", "k8s-blueprint-operator");
    assert!(role["rules"].as_array().unwrap().iter().all(|r| r.get("resourceNames").is_none()), "no Secret of its own");
    // An issuer of the platform's instead of the chart's.
    let objects = render(&[
        "webhook.certManager.enabled=true",
        "webhook.certManager.issuerRef.name=platform-ca",
        "webhook.certManager.issuerRef.kind=ClusterIssuer",
    ]);
    let certificate = find(&objects, "Certificate", "blueprint-operator-webhook");
    assert_eq!(certificate["spec"]["issuerRef"], serde_json::json!({"name": "platform-ca", "kind": "ClusterIssuer"}));
    assert!(objects.iter().all(|o| o["kind"] != "Issuer"));

    // Off: no Service, no port, no rights for it.
    let objects = render(&["webhook.enabled=false"]);
    assert_eq!(settings(&objects), None);
    assert!(objects.iter().all(|o| o["metadata"]["name"] != "blueprint-operator-webhook"));
    assert!(objects.iter().all(|o| o["kind"] != "ClusterRole" && o["kind"] != "Certificate"));
    assert!(ports(&objects).iter().all(|p| p["name"] != "webhook"));
    let policy = find(&objects, "NetworkPolicy", "k8s-blueprint-operator");
    assert_eq!(policy["spec"]["ingress"].as_array().unwrap().len(), 1, "the metrics port only");

    // The webhook's port admitted from the control plane's addresses only, where they are named.
    let objects = render(&["manager.networkPolicies.webhookFrom[0].ipBlock.cidr=10.0.0.0/24"]);
    let policy = find(&objects, "NetworkPolicy", "k8s-blueprint-operator");
    let rules = policy["spec"]["ingress"].as_array().unwrap();
    let webhook = rules.iter().find(|r| r["ports"][0]["port"] == "webhook").unwrap();
    assert_eq!(webhook["from"], serde_json::json!([{"ipBlock": {"cidr": "10.0.0.0/24"}}]));
    let metrics = rules.iter().find(|r| r["ports"][0]["port"] == "metrics").unwrap();
    assert!(metrics.get("from").is_none(), "metrics from anywhere: {metrics}");
}

/// A missing helm fails the chart's tests with the command that builds it, not with a bare "No such
/// file" from the first spawn.
#[test]
fn a_missing_helm_says_make_helm() {
    let empty = tempfile::tempdir().unwrap();
    let panic = std::panic::catch_unwind(|| helm_in(empty.path())).unwrap_err();
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("`make helm`"), "{message}");
}

/// The CES component operator maps a Component's `mappedValues` (the platform's central log level,
/// `mainLogLevel`) onto chart values through `component-values-metadata.yaml`: every path it names is a
/// value of the chart, and every level it maps to reaches the operator as a level name (a word that is
/// not one would be read as a tracing target and silence the log).
#[test]
fn the_component_operators_value_mapping_reaches_the_operator() {
    let metadata = yaml_file(&repository("charts/blueprint-operator/component-values-metadata.yaml"));
    let values = yaml_file(&repository("charts/blueprint-operator/values.yaml"));
    let log_level = &metadata["metavalues"]["mainLogLevel"];
    let mut levels: Vec<&str> =
        log_level["keys"][0]["mapping"].as_object().unwrap().keys().map(String::as_str).collect();
    levels.sort();
    assert_eq!(levels, ["debug", "error", "info", "warn"], "the platform's levels");
    let mut checked = 0;
    for (_, meta) in metadata["metavalues"].as_object().unwrap() {
        for key in meta["keys"].as_array().unwrap() {
            let path = key["path"].as_str().unwrap();
            let default = path.split('.').fold(&values, |value, part| &value[part]);
            assert!(!default.is_null(), "{path} is not a value of the chart");
            for (_, mapped) in key["mapping"].as_object().unwrap() {
                let mapped = mapped.as_str().unwrap();
                let objects = render(&[&format!("{path}={mapped}")]);
                let (literal, _) =
                    environment(find(&objects, "Deployment", "k8s-blueprint-operator-controller-manager"));
                assert_eq!(path, "manager.env.logLevel", "a new mapped value needs its check here");
                assert_eq!(literal["LOG_LEVEL"], mapped);
                assert!(mapped.parse::<tracing::Level>().is_ok(), "{mapped} is not a level name");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 4);
}

/// docs/helm.md's table documents every value of the chart: a value added to values.yaml without a row
/// fails here. A row names a value in full (`manager.env.logLevel`) or, after a sibling, by its last
/// part (`manager.image.registry`, `.repository`). Maps a user fills (labels, resources) are one value.
#[test]
fn every_value_is_documented() {
    fn leaves(value: &Value, path: String, out: &mut Vec<String>) {
        match value.as_object() {
            Some(map) if !["labels", "resourceLimits", "resourceRequests"].iter().any(|k| path.ends_with(k)) => {
                for (key, child) in map {
                    let child_path = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                    leaves(child, child_path, out);
                }
            }
            _ => out.push(path),
        }
    }
    let mut paths = Vec::new();
    leaves(&yaml_file(&repository("charts/blueprint-operator/values.yaml")), String::new(), &mut paths);
    let docs = std::fs::read_to_string(repository("docs/helm.md")).unwrap();
    let rows: Vec<&str> = docs.lines().filter(|l| l.starts_with("| `")).collect();
    let undocumented: Vec<&String> = paths
        .iter()
        .filter(|path| {
            let (parent, last) = path.rsplit_once('.').unwrap_or(("", path));
            !rows.iter().any(|row| {
                row.contains(&format!("`{path}`"))
                    || (row.contains(&format!("`{parent}.")) && row.contains(&format!("`.{last}`")))
            })
        })
        .collect();
    assert!(paths.len() > 20, "{paths:?}");
    assert_eq!(undocumented, Vec::<&String>::new(), "values without a row in docs/helm.md");
}

/// The CES component operator mirrors images through `component-patch-tpl.yaml` (upstream's
/// convention): the image it names is the one the chart runs by default, and every value it patches is a
/// value of the chart. The chart's annotations name the components a platform installs first.
#[test]
fn the_component_operators_image_patch_and_dependencies_match_the_chart() {
    let patch = yaml_file(&repository("charts/blueprint-operator/component-patch-tpl.yaml"));
    let values = yaml_file(&repository("charts/blueprint-operator/values.yaml"));
    let chart = yaml_file(&repository("charts/blueprint-operator/Chart.yaml"));
    let image = &values["manager"]["image"];
    let default = format!(
        "{}/{}:{}",
        image["registry"].as_str().unwrap(),
        image["repository"].as_str().unwrap(),
        chart["appVersion"].as_str().unwrap()
    );
    assert_eq!(patch["values"]["images"]["blueprintOperator"], default.as_str());
    let patched = &patch["patches"]["values.yaml"]["manager"]["image"];
    let mut fields: Vec<&str> = patched.as_object().unwrap().keys().map(String::as_str).collect();
    fields.sort();
    assert_eq!(fields, ["registry", "repository", "tag"]);
    for field in fields {
        assert!(!image[field].is_null(), "manager.image.{field} is not a value of the chart");
        assert!(patched[field].as_str().unwrap().contains(".images.blueprintOperator"), "{field}");
    }
    let dependencies: Vec<&str> = chart["annotations"]
        .as_object()
        .unwrap()
        .keys()
        .filter_map(|k| k.strip_prefix("k8s.cloudogu.com/ces-dependency/"))
        .collect();
    assert!(dependencies.contains(&"k8s-dogu-operator-crd") && dependencies.contains(&"k8s-component-operator-crd"));
    assert!(!dependencies.contains(&"k8s-blueprint-operator-crd"), "the chart ships the Blueprint CRD itself");
}
