//! What the commands a person runs against a cluster (`plan` without a snapshot, `status`) share: a
//! client for the kubeconfig's current context or a named one, as kubectl picks it (KUBECONFIG,
//! ~/.kube/config, in-cluster), with the context's namespace; and one LIST decoded as the controller's
//! caches decode.

use std::sync::Arc;

use kube::api::{Api, ListParams};
use kube::config::KubeConfigOptions;
use serde::de::DeserializeOwned;

use crate::observe::decoded::{Decoded, Lenient, Undecodable};

/// A client and the context's default namespace; the error says why there is none, in one line.
pub async fn client(context: Option<&str>) -> Result<(kube::Client, String), String> {
    let config = match context {
        Some(context) => {
            let options = KubeConfigOptions { context: Some(context.to_owned()), ..Default::default() };
            kube::Config::from_kubeconfig(&options).await.map_err(|e| e.to_string())?
        }
        None => kube::Config::infer().await.map_err(|e| e.to_string())?,
    };
    let namespace = config.default_namespace.clone();
    let client = kube::Client::try_from(config).map_err(|e| e.to_string())?;
    Ok((client, namespace))
}

/// One LIST in `namespace`, decoded object by object as the controller's caches do: the objects, and
/// those that do not fit their type.
pub async fn list<K>(
    client: &kube::Client,
    namespace: &str,
    params: &ListParams,
) -> Result<(Vec<K>, Vec<Arc<Undecodable>>), kube::Error>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + DeserializeOwned
        + Lenient
        + Clone
        + std::fmt::Debug,
{
    let listed = Api::<Decoded<K>>::namespaced(client.clone(), namespace).list(params).await?;
    let mut objects = Vec::with_capacity(listed.items.len());
    let mut undecodable = Vec::new();
    for item in listed.items {
        match item {
            Decoded::Object(object) => objects.push(Arc::unwrap_or_clone(object)),
            Decoded::Undecodable(problem) => undecodable.push(problem),
        }
    }
    Ok((objects, undecodable))
}
