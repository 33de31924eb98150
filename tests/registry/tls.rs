//! A registry behind TLS with a private CA: trusted with `DOGU_REGISTRY_CA_FILE`, refused without.

use blueprint_operator::descriptors::{RemoteError, RemoteRegistry, UrlSchema};
use blueprint_operator::sandbox::dogu_registry::RegistryServer;

use super::{CAS_V2, settings};
use crate::support::tls::serve_tls;

/// A CA (its PEM), and a registry served over TLS on 127.0.0.1 with a certificate the CA signed.
async fn tls_registry() -> (String, String, tokio::task::JoinHandle<()>) {
    let registry = RegistryServer::new(Some(("instance".into(), "s3cret".into())));
    registry.add(CAS_V2).unwrap();
    let server = serve_tls(registry.router()).await;
    (server.ca_pem, server.endpoint, server.task)
}

#[tokio::test]
async fn an_extra_ca_is_trusted_besides_the_platform_roots() {
    let (ca, endpoint, server) = tls_registry().await;
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), ca).unwrap();
    let mut trusting = settings(&endpoint, UrlSchema::Default);
    trusting.extra_ca = Some(file.path().to_owned());
    let fetched = RemoteRegistry::new(&trusting).unwrap().fetch("official/cas", "7.1.5-2").await.unwrap();
    assert_eq!(fetched.descriptor.name, "official/cas");
    server.abort();
}

#[tokio::test]
async fn without_the_ca_the_certificate_is_refused() {
    let (_, endpoint, server) = tls_registry().await;
    let error = RemoteRegistry::new(&settings(&endpoint, UrlSchema::Default))
        .unwrap()
        .fetch("official/cas", "7.1.5-2")
        .await
        .unwrap_err();
    assert!(matches!(error, RemoteError::Transport { .. }), "{error:?}");
    assert!(error.to_string().to_lowercase().contains("certificate"), "the message says why: {error}");
    server.abort();
}

#[tokio::test]
async fn a_ca_file_without_certificates_stops_the_start() {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), "not a certificate\n").unwrap();
    let mut bad = settings("https://dogu.example.com", UrlSchema::Default);
    bad.extra_ca = Some(file.path().to_owned());
    let error = RemoteRegistry::new(&bad).unwrap_err().to_string();
    assert!(error.contains("holds no certificate"), "{error}");
}
