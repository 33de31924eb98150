//! A router served over TLS on 127.0.0.1 with a certificate of a private CA made here (rcgen), as a
//! remote dogu registry or a conversion webhook would be served.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

/// The server: the CA's certificate (PEM), `https://127.0.0.1:<port>`, and the serving task.
pub struct TlsServer {
    pub ca_pem: String,
    pub endpoint: String,
    pub task: tokio::task::JoinHandle<()>,
}

pub async fn serve_tls(router: axum::Router) -> TlsServer {
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

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let endpoint = format!("https://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let (acceptor, router) = (acceptor.clone(), router.clone());
            tokio::spawn(async move {
                // A refused handshake (an untrusting client) just ends the connection.
                if let Ok(tls) = acceptor.accept(tcp).await {
                    let service = TowerToHyperService::new(router);
                    let _ =
                        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tls), service).await;
                }
            });
        }
    });
    TlsServer { ca_pem: ca_certificate.pem(), endpoint, task }
}
