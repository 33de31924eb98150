//! `blueprint-operator storage-version --to v1|v2|v3`: every Blueprint of the cluster stored in one API
//! version, and the CRD told that no other version is stored any more (docs/migration.md).
//!
//! The way back to a Go operator needs it: upstream's CRD of each era serves one version, and the API
//! server refuses it while the CRD's `status.storedVersions` names another (`storedVersions[1]: Invalid
//! value: "v3": missing from spec.versions`), and could not read an object stored in another version
//! once our webhook is gone. The way in ends with it too (`--to v3`): afterwards no stored Blueprint
//! needs the webhook to be read in v3, so a restart of the operator has no window in which its own
//! watch fails.
//!
//! What it does, as kube-storage-version-migrator does it for built-in resources:
//! 1. makes `--to` the CRD's storage version (one update, conditional on the `resourceVersion` read);
//! 2. waits until the API server stores in it: its discovery's `storageVersionHash` for blueprints is
//!    that of `--to` (the API server computes it from the storage version; it changes with the handler
//!    that writes);
//! 3. writes every Blueprint of every namespace back as it is (GET and PUT in `--to`; a PUT of the same
//!    object re-encodes it in the storage version, and changes nothing else: `metadata.generation`
//!    stays, so no operator reconciles for it);
//! 4. sets `status.storedVersions` to `[--to]`.
//!
//! The webhook must be serving throughout (our operator running): the API server converts every
//! Blueprint stored in another version through it.

use std::io::Write;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use blueprint_machine::conversion::ApiVersion;

const CRD: &str = "blueprints.k8s.cloudogu.com";
const GROUP: &str = "k8s.cloudogu.com";
const FIELD_MANAGER: &str = "blueprint-operator-cli";

/// `storage-version`'s arguments.
#[derive(clap::Args, Debug)]
pub struct StorageVersionArgs {
    /// The version every Blueprint is to be stored in: v1 (back to the Go operator 2.x), v2 (back to
    /// 3.0.0-CR1), v3 (ours, and the Go operator 3.x's).
    #[arg(long, value_enum)]
    pub to: crate::convert::Target,
    /// The kubeconfig context; default: the current one.
    #[arg(long)]
    pub context: Option<String>,
    /// How long to wait for the API server to store in the new version.
    #[arg(long, default_value = "60s", value_parser = crate::config::parse_duration)]
    pub timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum StorageVersionError {
    #[error("no cluster to talk to: {0}")]
    Kubeconfig(String),
    #[error("cannot read the CRD {CRD}: {0}")]
    ReadCrd(kube::Error),
    #[error("the CRD {CRD} does not serve {GROUP}/{0}: this needs our CRD (served: {1}); install the chart first")]
    NotServed(&'static str, String),
    #[error("cannot make {GROUP}/{version} the storage version of the CRD {CRD}: {source}")]
    WriteCrd { version: &'static str, source: kube::Error },
    #[error("the API server does not store Blueprints as {GROUP}/{0} after {1:?} (its discovery's storageVersionHash)")]
    NotSwitched(&'static str, Duration),
    #[error(
        "cannot read the Blueprints as {GROUP}/{version} (is the operator's conversion webhook serving?): {source}"
    )]
    List { version: &'static str, source: kube::Error },
    #[error("cannot write Blueprint {namespace}/{name} back as {GROUP}/{version}: {source}")]
    Write { namespace: String, name: String, version: &'static str, source: kube::Error },
    #[error("cannot set status.storedVersions of the CRD {CRD}: {0}")]
    StoredVersions(kube::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The API server's `storageVersionHash` of a resource stored as `group/version/kind`: the first 8
/// bytes of the SHA-256 of that text, in base64 (k8s.io/apiserver's discovery).
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

pub async fn run(args: StorageVersionArgs, out: &mut impl Write) -> Result<u8, StorageVersionError> {
    let to = match args.to {
        crate::convert::Target::V1 => ApiVersion::V1,
        crate::convert::Target::V2 => ApiVersion::V2,
        crate::convert::Target::V3 => ApiVersion::V3,
    };
    let version = to.as_str();
    let (client, _) =
        crate::kubeconfig::client(args.context.as_deref()).await.map_err(StorageVersionError::Kubeconfig)?;
    let crds = Api::<CustomResourceDefinition>::all(client.clone());

    // 1. The storage version.
    let mut crd = crds.get(CRD).await.map_err(StorageVersionError::ReadCrd)?;
    if !crd.spec.versions.iter().any(|v| v.name == version && v.served) {
        let served: Vec<&str> = crd.spec.versions.iter().filter(|v| v.served).map(|v| v.name.as_str()).collect();
        return Err(StorageVersionError::NotServed(version, served.join(", ")));
    }
    if crd.spec.versions.iter().any(|v| v.name == version && !v.storage) {
        for served in &mut crd.spec.versions {
            served.storage = served.name == version;
        }
        crd.metadata.managed_fields = None;
        let params = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        crds.replace(CRD, &params, &crd).await.map_err(|source| StorageVersionError::WriteCrd { version, source })?;
        writeln!(out, "CRD {CRD}: storage version {version}")?;
    }

    // 2. The API server stores in it.
    let wanted = storage_version_hash(GROUP, version, "Blueprint");
    let deadline = tokio::time::Instant::now() + args.timeout;
    loop {
        let resources = client.list_api_group_resources(&format!("{GROUP}/{version}")).await;
        let current = resources.ok().and_then(|list| {
            list.resources.into_iter().find(|r| r.name == "blueprints").and_then(|r| r.storage_version_hash)
        });
        if current.as_deref() == Some(wanted.as_str()) {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(StorageVersionError::NotSwitched(version, args.timeout));
        }
        // Discovery has no watch: asked again shortly (this takes a few hundred milliseconds).
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // 3. Every Blueprint written back.
    let gvk = GroupVersionKind::gvk(GROUP, version, "Blueprint");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "blueprints");
    let all = Api::<DynamicObject>::all_with(client.clone(), &resource);
    let listed =
        all.list(&ListParams::default()).await.map_err(|source| StorageVersionError::List { version, source })?;
    let (mut rewritten, mut unchanged) = (0usize, 0usize);
    for item in listed.items {
        let namespace = item.metadata.namespace.clone().unwrap_or_default();
        let name = item.metadata.name.clone().unwrap_or_default();
        let api = Api::<DynamicObject>::namespaced_with(client.clone(), &namespace, &resource);
        let write_error =
            |source| StorageVersionError::Write { namespace: namespace.clone(), name: name.clone(), version, source };
        let mut object = item;
        // A writer between the read and the write (the operator's status): read again and retry.
        let mut attempts = 0;
        let written = loop {
            let before = object.metadata.resource_version.clone();
            let params = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
            match api.replace(&name, &params, &object).await {
                Ok(written) => break written.metadata.resource_version != before,
                Err(kube::Error::Api(status)) if status.code == 409 && attempts < 5 => {
                    attempts += 1;
                    object = api.get(&name).await.map_err(write_error)?;
                }
                Err(kube::Error::Api(status)) if status.code == 404 => break false,
                Err(other) => return Err(write_error(other)),
            }
        };
        if written { rewritten += 1 } else { unchanged += 1 }
    }
    writeln!(out, "Blueprints stored as {GROUP}/{version}: {rewritten} written back, {unchanged} already stored so")?;

    // 4. No other version stored.
    let status = json!({"status": {"storedVersions": [version]}});
    crds.patch_status(CRD, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .map_err(StorageVersionError::StoredVersions)?;
    writeln!(out, "CRD {CRD}: status.storedVersions [{version}]")?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The API server's own value for the built-in Deployment (`kubectl get --raw /apis/apps/v1`).
    #[test]
    fn the_hash_is_the_api_servers() {
        assert_eq!(storage_version_hash("apps", "v1", "Deployment"), "8aSe+NMegvE=");
    }
}
