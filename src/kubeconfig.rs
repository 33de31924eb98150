//! A client for the commands a person runs against a cluster (`plan` without a snapshot, `status`):
//! the kubeconfig's current context or a named one, as kubectl picks it (KUBECONFIG, ~/.kube/config,
//! in-cluster), and the context's namespace.

use kube::config::KubeConfigOptions;

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
