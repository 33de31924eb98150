//! `blueprint-operator version`: this binary's version and that of the operator running in the cluster.
//!
//! The operator's is read where it is real and cheap: the leader election Lease
//! (`k8s-blueprint-operator-leader`), whose holder writes its version into an annotation with every
//! renewal (every 2 s), so it names the replica that acts and what it runs, even mid-rollout. Without
//! a Lease (`LEADER_ELECT=false`, or no operator yet), the image of the chart's Deployment
//! (`k8s-blueprint-operator-controller-manager`): what is deployed, not necessarily running.
//!
//! Exit code 0: both known (or `--client`); 1: the operator's version could not be found (with why).

use std::io::Write;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use serde::Serialize;

use crate::leader::VERSION_ANNOTATION;
use crate::status_command::StatusError;

/// The chart's Deployment (upstream's name, which administrators' scripts use).
pub const DEPLOYMENT: &str = "k8s-blueprint-operator-controller-manager";

#[derive(clap::Args, Debug)]
pub struct VersionArgs {
    /// Only this binary's version (no cluster is read).
    #[arg(long)]
    pub client: bool,
    /// The operator's namespace; default: the kubeconfig context's.
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// The kubeconfig context; default: the current one.
    #[arg(long)]
    pub context: Option<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: crate::status_command::Format,
}

#[derive(Serialize, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
struct Versions {
    client: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    operator: Option<OperatorVersion>,
}

/// The operator in the cluster, and where its version was read.
#[derive(Serialize, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
struct OperatorVersion {
    version: String,
    /// `lease`: the leader's own word; `deployment`: the Deployment's image tag.
    source: &'static str,
    /// The replica that leads (the Lease's holder); `None`: none leads now.
    #[serde(skip_serializing_if = "Option::is_none")]
    leader: Option<String>,
    /// Seconds since the leader last renewed the Lease.
    #[serde(skip_serializing_if = "Option::is_none")]
    renewed_seconds_ago: Option<i64>,
    namespace: String,
}

pub async fn run(args: VersionArgs, out: &mut impl Write) -> Result<u8, StatusError> {
    let client_version = env!("CARGO_PKG_VERSION").to_owned();
    let mut versions = Versions { client: client_version, operator: None };
    let mut missing = None;
    if !args.client {
        let (client, default_namespace) =
            crate::kubeconfig::client(args.context.as_deref()).await.map_err(StatusError::Kubeconfig)?;
        let namespace = args.namespace.unwrap_or(default_namespace);
        let read = |what| {
            let namespace = namespace.clone();
            move |source| StatusError::Read { what, namespace, source }
        };
        let lease = Api::<Lease>::namespaced(client.clone(), &namespace)
            .get_opt(blueprint_machine::naming::LEASE)
            .await
            .map_err(read("Lease"))?;
        versions.operator = match lease.as_ref().and_then(|l| from_lease(l, &namespace, Timestamp::now())) {
            Some(found) => Some(found),
            None => {
                let deployment = Api::<Deployment>::namespaced(client, &namespace)
                    .get_opt(DEPLOYMENT)
                    .await
                    .map_err(read("Deployment"))?;
                deployment.as_ref().and_then(|d| from_deployment(d, &namespace))
            }
        };
        if versions.operator.is_none() {
            missing = Some(format!(
                "no operator found in namespace {namespace:?}: no Lease {} with a version, no Deployment {DEPLOYMENT} \
                 (another namespace: -n)",
                blueprint_machine::naming::LEASE
            ));
        }
    }
    let text = match args.output {
        crate::status_command::Format::Text => text(&versions),
        crate::status_command::Format::Json => serde_json::to_string_pretty(&versions).expect("serializes") + "\n",
        crate::status_command::Format::Yaml => serde_saphyr::to_string(&versions).expect("serializes"),
    };
    let _ = out.write_all(text.as_bytes());
    match missing {
        Some(why) => {
            let _ = writeln!(out, "operator: {why}");
            Ok(1)
        }
        None => Ok(0),
    }
}

fn text(versions: &Versions) -> String {
    let mut text = format!("client:   {}\n", versions.client);
    if let Some(operator) = &versions.operator {
        let whence = match (operator.source, &operator.leader) {
            ("lease", Some(leader)) => {
                let renewed = operator.renewed_seconds_ago.map(|s| format!(", renewed {s}s ago")).unwrap_or_default();
                format!("the leader {leader}{renewed}")
            }
            ("lease", None) => "the last leader; none leads now".to_owned(),
            _ => format!("the image of Deployment {DEPLOYMENT}; no Lease says what runs"),
        };
        text.push_str(&format!("operator: {} ({whence}, namespace {:?})\n", operator.version, operator.namespace));
    }
    text
}

/// The version the Lease's holder wrote, if it wrote one.
fn from_lease(lease: &Lease, namespace: &str, now: Timestamp) -> Option<OperatorVersion> {
    let version = lease.metadata.annotations.as_ref()?.get(VERSION_ANNOTATION)?.clone();
    let spec = lease.spec.as_ref();
    let leader = spec.and_then(|s| s.holder_identity.clone()).filter(|h| !h.is_empty());
    let renewed_seconds_ago = spec
        .and_then(|s| s.renew_time.as_ref())
        .filter(|_| leader.is_some())
        .map(|renewed| (now.as_second() - renewed.0.as_second()).max(0));
    Some(OperatorVersion { version, source: "lease", leader, renewed_seconds_ago, namespace: namespace.to_owned() })
}

/// The tag of the Deployment's `manager` container's image (a digest alone names no version).
fn from_deployment(deployment: &Deployment, namespace: &str) -> Option<OperatorVersion> {
    let containers = &deployment.spec.template.spec.as_ref()?.containers;
    let image = containers.iter().find(|c| c.name == "manager").or(containers.first())?.image.as_deref()?;
    let reference = image.split('@').next().unwrap_or(image);
    let last = reference.rsplit('/').next().unwrap_or(reference);
    let (_, tag) = last.split_once(':')?;
    Some(OperatorVersion {
        version: tag.to_owned(),
        source: "deployment",
        leader: None,
        renewed_seconds_ago: None,
        namespace: namespace.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(annotation: Option<&str>, holder: Option<&str>) -> Lease {
        serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "k8s-blueprint-operator-leader",
                "annotations": annotation.map(|v| serde_json::json!({VERSION_ANNOTATION: v})),
            },
            "spec": {"holderIdentity": holder, "renewTime": "2026-12-04T10:00:00.000000Z"},
        }))
        .unwrap()
    }

    #[test]
    fn the_leader_says_what_it_runs() {
        let now: Timestamp = "2026-12-04T10:00:03Z".parse().unwrap();
        let found = from_lease(&lease(Some("0.1.0"), Some("pod-a")), "ecosystem", now).unwrap();
        assert_eq!((found.version.as_str(), found.leader.as_deref()), ("0.1.0", Some("pod-a")));
        assert_eq!(found.renewed_seconds_ago, Some(3));
        let text = text(&Versions { client: "0.1.0".into(), operator: Some(found) });
        assert_eq!(
            text,
            "client:   0.1.0\noperator: 0.1.0 (the leader pod-a, renewed 3s ago, namespace \"ecosystem\")\n"
        );
        let released = from_lease(&lease(Some("0.1.0"), None), "ecosystem", now).unwrap();
        assert_eq!(released.leader, None);
        assert_eq!(from_lease(&lease(None, Some("pod-a")), "ecosystem", now), None, "a Lease of another operator");
    }

    #[test]
    fn the_deployment_tells_the_deployed_tag() {
        let deployment = |image: &str| -> Deployment {
            serde_json::from_value(serde_json::json!({
                "spec": {"selector": {}, "template": {"spec": {"containers": [{"name": "manager", "image": image}]}}}
            }))
            .unwrap()
        };
        let version = |image| from_deployment(&deployment(image), "ecosystem").map(|v| v.version);
        assert_eq!(version("docker.io/cloudogu/blueprint-operator:0.1.0"), Some("0.1.0".into()));
        assert_eq!(version("registry:5000/cloudogu/blueprint-operator:0.2.0@sha256:abc"), Some("0.2.0".into()));
        assert_eq!(version("registry:5000/cloudogu/blueprint-operator"), None, "no tag, no version");
    }
}
