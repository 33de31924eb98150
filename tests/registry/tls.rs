//! A registry behind TLS with a private CA: trusted with `DOGU_REGISTRY_CA_FILE`, refused without.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use blueprint_operator::descriptors::{RemoteError, RemoteRegistry, UrlSchema};
use blueprint_operator::sandbox::dogu_registry::RegistryServer;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use super::{CAS_V2, settings};

/// A CA (its PEM), and a registry served over TLS on 127.0.0.1 with a certificate the CA signed.
async fn tls_registry() -> (String, String, tokio::task::JoinHandle<()>) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "blueprint-operator test CA");
    let ca_certificate = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);

    let server_key = KeyPair::generate().unwrap();
    let mut server_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    server_params.subject_alt_names = vec![SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST))];
    let server_certificate = server_params.signed_by(&server_key, &issuer).unwrap();

    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![server_certificate.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der())),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));

    let registry = RegistryServer::new(Some(("instance".into(), "s3cret".into())));
    registry.add(CAS_V2).unwrap();
    let router = registry.router();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let endpoint = format!("https://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let (acceptor, router) = (acceptor.clone(), router.clone());
            tokio::spawn(async move {
                // A refused handshake (the untrusting client) just ends the connection.
                if let Ok(tls) = acceptor.accept(tcp).await {
                    let service = TowerToHyperService::new(router);
                    let _ =
                        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tls), service).await;
                }
            });
        }
    });
    (ca_certificate.pem(), endpoint, server)
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
