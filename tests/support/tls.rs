//! A router served over TLS on 127.0.0.1 with a certificate of a private CA, as a remote dogu
//! registry or a conversion webhook would be served: the webhook's own server and certificates
//! (`blueprint_operator::webhook::{tls, certificates}`).

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use blueprint_operator::webhook::certificates::{ServingNames, SubjectName, issue};
use blueprint_operator::webhook::tls::{CurrentCertificate, serve};

/// The server: the CA's certificate (PEM), `https://127.0.0.1:<port>`, and the serving task.
pub struct TlsServer {
    pub ca_pem: String,
    pub endpoint: String,
    pub task: tokio::task::JoinHandle<()>,
}

pub async fn serve_tls(router: axum::Router) -> TlsServer {
    let names = ServingNames::of(&[SubjectName::Ip(IpAddr::V4(Ipv4Addr::LOCALHOST))]);
    let material = issue(&names, jiff::Timestamp::now(), None).unwrap();
    let key = Arc::new(material.certified_key().unwrap());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let endpoint = format!("https://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(serve(listener, router, CurrentCertificate::new(key)));
    TlsServer { ca_pem: material.ca, endpoint, task }
}

/// What an HTTPS request got: its status, its body, and the certificate the server presented (DER).
pub struct Answer {
    pub status: u16,
    pub body: String,
    pub certificate: Vec<u8>,
}

/// One request on a new connection to `address` (`host:port`), trusting only the CAs of `ca_pem` and
/// checking the certificate for `name` (a DNS name or an IP address), as the API server calls a
/// webhook; why not, when the connection or the handshake fails.
pub async fn https(
    address: &str,
    ca_pem: &str,
    name: &str,
    method: &str,
    path: &str,
    body: &str,
) -> Result<Answer, String> {
    use rustls_pki_types::pem::PemObject;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let mut roots = rustls::RootCertStore::empty();
    for certificate in rustls_pki_types::CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(certificate.map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(address).await.map_err(|e| format!("{address}: {e}"))?;
    let server_name = rustls_pki_types::ServerName::try_from(name.to_owned()).map_err(|e| e.to_string())?;
    let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(server_name, tcp)
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    let certificate =
        tls.get_ref().1.peer_certificates().and_then(|c| c.first()).map(|c| c.to_vec()).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {name}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    tls.write_all(request.as_bytes()).await.map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    // The server may close without a TLS close_notify: what arrived is the answer.
    let _ = tls.read_to_end(&mut response).await;
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").ok_or(format!("no HTTP answer: {response:?}"))?;
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).ok_or(format!("no status: {head}"))?;
    Ok(Answer { status, body: body.to_owned(), certificate })
}
