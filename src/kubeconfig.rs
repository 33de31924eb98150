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
    Ok((client_for(config)?, namespace))
}

/// kube's client for `config`, which retries what the API server asks to be retried later (429, also
/// "storage is (re)initializing" right after an API server starts while a watch cache fills, 503, 504:
/// up to 15 times, honouring `Retry-After`), as kubectl does (the tests below pin it).
fn client_for(config: kube::Config) -> Result<kube::Client, String> {
    kube::Client::try_from(config).map_err(|e| e.to_string())
}

/// A kind of the operator's namespace that a person's command reads, decoded as the controller's
/// caches decode it.
pub trait NamespacedKind:
    kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
    + DeserializeOwned
    + Lenient
    + Clone
    + std::fmt::Debug
{
}

impl<K> NamespacedKind for K where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + DeserializeOwned
        + Lenient
        + Clone
        + std::fmt::Debug
{
}

/// One LIST in `namespace`, decoded object by object as the controller's caches do: the objects, and
/// those that do not fit their type.
pub async fn list<K: NamespacedKind>(
    client: &kube::Client,
    namespace: &str,
    params: &ListParams,
) -> Result<(Vec<K>, Vec<Arc<Undecodable>>), kube::Error> {
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::http::StatusCode;
    use axum::routing::get;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    use super::*;

    /// An API server that answers the first `busy` LISTs as a fresh one does, then lists one ConfigMap.
    async fn api_server(busy: usize) -> (String, Arc<AtomicUsize>) {
        let asked = Arc::new(AtomicUsize::new(0));
        let counter = asked.clone();
        let list = get(move || {
            let counter = counter.clone();
            async move {
                if counter.fetch_add(1, Ordering::SeqCst) < busy {
                    let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 429,
                                        "reason": "TooManyRequests", "message": "storage is (re)initializing"});
                    return (StatusCode::TOO_MANY_REQUESTS, [("Retry-After", "1")], status.to_string());
                }
                let list = json!({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "5"},
                                  "items": [{"metadata": {"name": "global-config", "namespace": "ecosystem"}}]});
                (StatusCode::OK, [("Retry-After", "0")], list.to_string())
            }
        });
        let router = axum::Router::new().route("/api/v1/namespaces/ecosystem/configmaps", list);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await });
        (format!("http://{address}"), asked)
    }

    fn config(url: &str) -> kube::Config {
        kube::Config::new(url.parse().unwrap())
    }

    #[tokio::test(start_paused = true)]
    async fn a_list_answered_too_many_requests_is_retried_until_it_is_answered() {
        let (url, asked) = api_server(2).await;
        let client = client_for(config(&url)).unwrap();
        let (listed, _) = list::<ConfigMap>(&client, "ecosystem", &ListParams::default()).await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(asked.load(Ordering::SeqCst), 3, "two 429s, then the list");
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_that_stays_busy_is_an_error_after_fifteen_retries() {
        let (url, asked) = api_server(usize::MAX).await;
        let client = client_for(config(&url)).unwrap();
        let error = list::<ConfigMap>(&client, "ecosystem", &ListParams::default()).await.unwrap_err();
        assert!(error.to_string().contains("storage is (re)initializing"), "{error}");
        assert_eq!(asked.load(Ordering::SeqCst), 16, "the request and fifteen retries");
    }
}
