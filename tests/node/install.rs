//! `helm install` as a user runs it, without `--skip-crds`: the README's install block as it is written,
//! on a cluster without the CRDs; docs/helm.md's install, upgrade and uninstall as written; and again
//! over the CRDs an earlier install left (with the CA the operator wrote into the Blueprint CRD). Every
//! replica runs the image as a Pod, becomes Ready through its probes, reaches the API server with its
//! in-cluster configuration (the Pod's projected ServiceAccount token, `KUBERNETES_SERVICE_HOST`); one
//! holds the Lease; the API server converts Blueprints for v2 clients through the webhook's Service;
//! the fresh-install example converges.

use std::time::{Duration, Instant};

use blueprint_operator::sandbox::node::install as chart;
use serde_json::Value;

use super::{ECOSYSTEM, behaviour, completed, ecosystem, helm, json, kubectl, leader, ready_pods, turn};
use crate::support::doc_blocks::{self, DocBlocks};

#[test]
fn the_chart_installs_on_a_fresh_cluster_and_over_an_earlier_install() {
    let (node, _turn) = turn();
    ecosystem(node, ECOSYSTEM, behaviour(), Vec::new());
    let chart_dir = chart::chart();
    let chart_dir = chart_dir.to_str().unwrap();
    // A cluster without the CRDs (another scenario may have installed them: gone, with its release).
    super::releases_elsewhere_gone(node, "");
    for crd in ["blueprints.k8s.cloudogu.com", "blueprintmasks.k8s.cloudogu.com"] {
        let _ = node.kubectl(&["delete", "crd", crd, "--ignore-not-found", "--wait"]);
    }

    // The README's install: the chart, a Blueprint (the fresh-install example), `status --watch` until
    // it is completed.
    let started = Instant::now();
    let readme = DocBlocks::read("README.md").block("Install", "helm install");
    let (ok, output) = doc_blocks::run(&readme, &super::shell_env(node));
    assert!(ok, "README.md's install block:\n{readme}{output}");
    eprintln!(
        "measured: README's install block (helm install --wait, apply, status --watch) {:.1}s",
        started.elapsed().as_secs_f64()
    );
    assert!(output.contains("Completed=True"), "status --watch ends completed:\n{output}");
    let pods = ready_pods(node, ECOSYSTEM, 2);
    for crd in ["blueprints.k8s.cloudogu.com", "blueprintmasks.k8s.cloudogu.com"] {
        kubectl(node, &["wait", "--for=condition=Established", &format!("crd/{crd}"), "--timeout=60s"]);
    }
    for pod in &pods {
        let pod = json(node, &["get", "pod", pod, "-n", ECOSYSTEM]);
        let container = &pod["status"]["containerStatuses"][0];
        assert_eq!(container["restartCount"], 0, "{container}");
        assert_eq!(container["image"], Value::from(blueprint_operator::sandbox::node::operator_image_name()));
        // The probes of the chart's ports decided Ready: the readiness probe is what the kubelet runs.
        assert!(pod["spec"]["containers"][0]["readinessProbe"]["httpGet"]["path"] == "/readyz", "{pod}");
    }

    // Each replica reached the API server as its Pod: a bound ServiceAccount token names the Pod, and
    // only the kubelet's projected token volume gives a Pod one.
    let account = format!("system:serviceaccount:{ECOSYSTEM}:{}", chart::SERVICE_ACCOUNT);
    for pod in &pods {
        let requests = node.plane.audited(&account);
        assert!(
            requests.iter().any(|r| r.pod() == Some(pod.as_str())),
            "no request of {pod} with its own token ({} requests of {account})",
            requests.len()
        );
    }
    // One of them holds the Lease (the last install's leader released it when its Pod stopped).
    super::wait(Duration::from_secs(60), "a Lease holder of this install", || {
        let holder = leader(node, ECOSYSTEM);
        holder.clone().filter(|h| pods.contains(h)).ok_or(format!("{holder:?}, not one of {pods:?}"))
    });

    // A v2 client: the API server stores v3 and asks the webhook, through its Service and kube-proxy.
    let v2 = super::wait(Duration::from_secs(60), "a v2 read through the webhook", || {
        node.kubectl(&["get", "blueprints.v2.k8s.cloudogu.com", "blueprint-ces", "-n", ECOSYSTEM, "-o", "json"])
    });
    let v2: Value = serde_json::from_str(&v2).unwrap();
    assert_eq!(v2["apiVersion"], "k8s.cloudogu.com/v2");
    assert!(v2["spec"]["blueprint"]["dogus"].as_array().is_some_and(|d| d.len() == 7), "{v2}");
    let crd = json(node, &["get", "crd", "blueprints.k8s.cloudogu.com"]);
    let client = &crd["spec"]["conversion"]["webhook"]["clientConfig"];
    assert_eq!(client["service"]["name"], "blueprint-operator-webhook", "{client}");
    assert!(client["caBundle"].as_str().is_some_and(|ca| !ca.is_empty()), "the operator wrote its CA: {client}");

    // docs/helm.md's install, upgrade and uninstall, as written, after an uninstall: the CRDs and the
    // Blueprint stay throughout.
    helm(node, ECOSYSTEM, &["uninstall", chart::RELEASE, "--wait"]);
    let lifecycle = DocBlocks::read("docs/helm.md").block("Install, upgrade, uninstall", "helm install");
    let (ok, output) = doc_blocks::run(&lifecycle, &super::shell_env(node));
    assert!(ok, "docs/helm.md's install, upgrade and uninstall:\n{lifecycle}{output}");
    kubectl(node, &["get", "blueprint", "blueprint-ces", "-n", ECOSYSTEM]);

    // Installed again over them (the CA the operator wrote is not the chart's), the release works as
    // before.
    helm(node, ECOSYSTEM, &["install", chart::RELEASE, chart_dir]);
    ready_pods(node, ECOSYSTEM, 2);
    super::converting(node, ECOSYSTEM);
    completed(node, ECOSYSTEM, "blueprint-ces", Duration::from_secs(60));
    super::wait(Duration::from_secs(60), "a v2 read after the second install", || {
        node.kubectl(&["get", "blueprints.v2.k8s.cloudogu.com", "blueprint-ces", "-n", ECOSYSTEM, "-o", "name"])
    });
}
