//! The conversion webhook's certificate from files (cert-manager's Secret as the kubelet mounts it):
//! a renewal (the kubelet swaps the files at once) is served from the next handshake on, files that
//! make no certificate leave the previous one in place; and `run` serves the webhook from files on
//! every replica, before it leads or has synced anything. The self-managed certificate is proven on
//! the real API server (tests/cluster/webhook.rs).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use blueprint_operator::webhook::certificates::{Material, ServingNames, SubjectName, files, issue};
use blueprint_operator::webhook::{router, tls};
use serde_json::{Value, json};

use crate::support::process::{Ports, start_until, unconnected_run};
use crate::support::tls::https;

fn loopback() -> ServingNames {
    ServingNames::of(&[SubjectName::parse("127.0.0.1").unwrap()])
}

fn material() -> Material {
    issue(&loopback(), jiff::Timestamp::now(), None).unwrap()
}

/// The certificate of `material` (DER), as a server presents it.
fn leaf(material: &Material) -> Vec<u8> {
    material.certified_key().unwrap().cert[0].to_vec()
}

/// Writes `certificate` and `key` as the kubelet writes a Secret volume: into a new folder
/// `..<generation>`, then the link `..data` swapped to it at once (a rename), `tls.crt` and `tls.key`
/// being links through `..data`.
fn publish(dir: &Path, generation: u32, certificate: &str, key: &str) {
    use std::os::unix::fs::symlink;
    let folder = format!("..2026_01_01_00_00_{generation:02}");
    std::fs::create_dir(dir.join(&folder)).unwrap();
    std::fs::write(dir.join(&folder).join("tls.crt"), certificate).unwrap();
    std::fs::write(dir.join(&folder).join("tls.key"), key).unwrap();
    symlink(&folder, dir.join("..data_tmp")).unwrap();
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
    for name in ["tls.crt", "tls.key"] {
        if std::fs::symlink_metadata(dir.join(name)).is_err() {
            symlink(format!("..data/{name}"), dir.join(name)).unwrap();
        }
    }
}

/// A `ConversionReview` asking for a minimal v3 Blueprint as v2.
fn review() -> String {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": {
        "uid": "0b3a1c6e", "desiredAPIVersion": "k8s.cloudogu.com/v2",
        "objects": [{"apiVersion": "k8s.cloudogu.com/v3", "kind": "Blueprint", "metadata": {"name": "blueprint-ces"},
                     "spec": {"blueprint": {"dogus": [{"name": "official/ldap", "version": "2.6.8-1"}]}}}]}})
    .to_string()
}

fn converted(body: &str) -> Value {
    let answer: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(answer["response"]["result"]["status"], "Success", "{answer}");
    answer["response"]["convertedObjects"][0].clone()
}

#[tokio::test]
async fn renewed_certificate_files_are_served_from_the_next_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (material(), material());
    let trusted = format!("{}{}", first.ca, second.ca);
    publish(dir.path(), 1, &first.certificate, &first.key);
    let current = files::serving(dir.path()).unwrap();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let server = tokio::spawn(tls::serve(listener, router(), current));
    let presented = || async {
        let answer = https(&address, &trusted, "127.0.0.1", "POST", "/convert", &review()).await.unwrap();
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(converted(&answer.body)["apiVersion"], "k8s.cloudogu.com/v2");
        answer.certificate
    };
    assert_eq!(presented().await, leaf(&first));

    // Renewed: the kubelet swaps the files; the next connection gets the new certificate.
    publish(dir.path(), 2, &second.certificate, &second.key);
    assert_eq!(presented().await, leaf(&second));
    assert_eq!(presented().await, leaf(&second), "read once, served on");

    // Files that make no certificate (a key of another certificate; a truncated certificate): the
    // previous one stays.
    publish(dir.path(), 3, &first.certificate, &second.key);
    assert_eq!(presented().await, leaf(&second));
    publish(dir.path(), 4, &first.certificate[..40], &first.key);
    assert_eq!(presented().await, leaf(&second));
    // And the next good files are served.
    publish(dir.path(), 5, &first.certificate, &first.key);
    assert_eq!(presented().await, leaf(&first));
    // A client that trusts another CA is refused at the handshake; the server serves on.
    let refused = https(&address, &material().ca, "127.0.0.1", "POST", "/convert", &review()).await;
    assert!(refused.is_err_and(|e| e.contains("handshake")));
    assert_eq!(presented().await, leaf(&first));
    server.abort();
}

#[test]
fn files_that_make_no_certificate_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let error = files::serving(dir.path()).unwrap_err().to_string();
    assert!(error.starts_with("the webhook's certificate file ") && error.contains("tls.crt: cannot read"), "{error}");
    let (one, other) = (material(), material());
    std::fs::write(dir.path().join("tls.crt"), &one.certificate).unwrap();
    std::fs::write(dir.path().join("tls.key"), &other.key).unwrap();
    let error = files::serving(dir.path()).unwrap_err().to_string();
    assert!(error.contains("tls.key is not the key of tls.crt"), "{error}");
    assert!(!error.contains("PRIVATE KEY"), "{error}");
}

/// `run` with an API server that cannot be reached (it never leads, nothing syncs) and the certificate
/// files of `dir/certs`.
fn run(dir: &Path, ports: Ports) -> Command {
    unconnected_run(dir, &dir.join("certs"), ports)
}

/// `GET /readyz`: the status and the body.
async fn readyz(port: u16) -> Option<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    stream.write_all(b"GET /readyz HTTP/1.0\r\nHost: operator\r\n\r\n").await.ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await.ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    Some((head.split(' ').nth(1)?.parse().ok()?, body.to_owned()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_serves_the_webhook_before_it_leads_and_is_ready_as_a_standby() {
    let dir = tempfile::tempdir().unwrap();
    let certificate = issue(&loopback(), jiff::Timestamp::now(), None).unwrap();
    std::fs::create_dir(dir.path().join("certs")).unwrap();
    publish(&dir.path().join("certs"), 1, &certificate.certificate, &certificate.key);
    let convert = |ports: Ports| {
        let ca = certificate.ca.clone();
        async move {
            let address = format!("127.0.0.1:{}", ports.webhook);
            https(&address, &ca, "127.0.0.1", "POST", "/convert", &review()).await.ok()
        }
    };
    let (operator, answer) = start_until(|ports| run(dir.path(), ports), Duration::from_secs(90), convert).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(converted(&answer.body)["apiVersion"], "k8s.cloudogu.com/v2");
    assert_eq!(answer.certificate, leaf(&certificate));
    // It waits for the Lease (the API server cannot be reached): a standby, ready with its webhook, so
    // that the webhook's Service sends to it.
    assert_eq!(readyz(operator.ports.health).await, Some((200, "ready".to_owned())));
}

#[test]
fn run_stops_when_the_certificate_files_make_no_certificate() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("certs")).unwrap();
    let output = run(dir.path(), Ports::pick()).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the webhook's certificate file ") && stderr.contains("tls.crt: cannot read the file"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
}
