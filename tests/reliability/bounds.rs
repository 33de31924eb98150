//! Issue 27, findings 1 and 2: what a client of the webhook or of the operations endpoints can make
//! the operator hold. Measured on the operator's binary (`run` with certificate files and an API
//! server that cannot be reached: it serves, waiting for the Lease), from its own memory accounting
//! (`VmHWM`, the peak resident size, in /proc) and its open descriptors; the waits are bounded.
//!
//! - one review of any content takes a bounded amount of memory: before, a 1,999,913-byte review whose
//!   Blueprint held `spec.x: [0, 0, …]` took the peak from 16.9 MB to 84.8 MB (killed under 64 MiB);
//! - 40 connections each holding most of a large body, and clients that trickle a body, are held to
//!   the budget and cut off in time: before, 200 trickling connections stayed open past 65 s, and 40
//!   holding 1.9 MB each took the peak to 93 MB;
//! - idle connections to the metrics port take no more than their limit of descriptors: before,
//!   1,100 of them exhausted the descriptors (`ulimit -n 1024`) and the probes stopped answering.

use std::sync::Arc;
use std::time::{Duration, Instant};

use blueprint_operator::webhook::certificates::{Material, ServingNames, SubjectName, issue};
use blueprint_operator::webhook::{MAX_REVIEW_BYTES, REVIEW_TIMEOUT};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::process::{Killed, Ports, start_until, unconnected_run};
use crate::support::tls::https;

/// What the webhook may add to the operator's peak memory, whatever it is sent (the conversions in
/// their turn, the connections waiting, TLS and hyper buffers).
/// (Measured at its introduction: +10.2 MiB; before issue 27, one review took +67 MB.)
const WEBHOOK_BUDGET_KIB: u64 = 16 * 1024;

fn loopback() -> ServingNames {
    ServingNames::of(&[SubjectName::parse("127.0.0.1").unwrap()])
}

/// The operator: `run`, webhook from certificate files, an API server that refuses connections.
struct Operator {
    process: Killed,
    webhook: String,
    metrics: u16,
    health: u16,
    certificate: Material,
    _dir: tempfile::TempDir,
}

impl Operator {
    /// Starts the operator (with at most `descriptors` open files, if given) and waits (at most 90 s)
    /// until its webhook converts a small review.
    async fn serving(descriptors: Option<u64>) -> Operator {
        let dir = tempfile::tempdir().unwrap();
        let certificate = issue(&loopback(), jiff::Timestamp::now(), None).unwrap();
        let certs = dir.path().join("certs");
        std::fs::create_dir(&certs).unwrap();
        std::fs::write(certs.join("tls.crt"), &certificate.certificate).unwrap();
        std::fs::write(certs.join("tls.key"), &certificate.key).unwrap();
        let command = |ports: Ports| {
            let mut command = unconnected_run(dir.path(), &certs, ports);
            command.env("LOG_LEVEL", "error");
            if let Some(limit) = descriptors {
                use std::os::unix::process::CommandExt;
                // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
                unsafe {
                    command.pre_exec(move || {
                        let limit = libc::rlimit { rlim_cur: limit, rlim_max: limit };
                        if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                            Ok(())
                        } else {
                            Err(std::io::Error::last_os_error())
                        }
                    });
                }
            }
            command
        };
        let converts = |ports: Ports| {
            let ca = certificate.ca.clone();
            async move {
                let address = format!("127.0.0.1:{}", ports.webhook);
                let review = review_of(&blueprint_with("[]"));
                https(&address, &ca, "127.0.0.1", "POST", "/convert", &review).await.ok().filter(|a| a.status == 200)
            }
        };
        let (replica, _) = start_until(command, Duration::from_secs(90), converts).await;
        let ports = replica.ports;
        Operator {
            process: replica.process,
            webhook: format!("127.0.0.1:{}", ports.webhook),
            metrics: ports.metrics,
            health: ports.health,
            certificate,
            _dir: dir,
        }
    }

    /// `VmHWM` or `VmRSS` of the process, in KiB.
    fn memory(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.process.0.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with(field)).unwrap_or_else(|| panic!("no {field}"));
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    fn descriptors(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.process.0.id())).unwrap().count()
    }

    async fn review(&self, body: &str) -> Result<u16, String> {
        https(&self.webhook, &self.certificate.ca, "127.0.0.1", "POST", "/convert", body).await.map(|a| a.status)
    }

    /// A TLS connection to the webhook.
    async fn connect(&self) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
        use rustls_pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        for certificate in rustls_pki_types::CertificateDer::pem_slice_iter(self.certificate.ca.as_bytes()) {
            roots.add(certificate.unwrap()).unwrap();
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let tcp = tokio::net::TcpStream::connect(&self.webhook).await.unwrap();
        let name = rustls_pki_types::ServerName::try_from("127.0.0.1").unwrap();
        tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp).await.unwrap()
    }
}

/// A v3 Blueprint whose spec holds `x` (JSON text) beside a small manifest.
fn blueprint_with(x: &str) -> String {
    format!(
        r#"{{"apiVersion":"k8s.cloudogu.com/v3","kind":"Blueprint","metadata":{{"name":"b"}},"spec":{{"blueprint":{{"dogus":[{{"name":"official/ldap","version":"2.6.8-1"}}]}},"x":{x}}}}}"#
    )
}

fn review_of(object: &str) -> String {
    format!(
        r#"{{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{{"uid":"u","desiredAPIVersion":"k8s.cloudogu.com/v2","objects":[{object}]}}}}"#
    )
}

/// A review of `bytes` bytes (within a few) whose Blueprint's `spec.x` is a list of `item`s.
fn review_of_size(bytes: usize, item: &str) -> String {
    let frame = review_of(&blueprint_with("[]")).len();
    let count = (bytes - frame) / (item.len() + 1);
    let list = format!("[{}{item}]", format!("{item},").repeat(count.saturating_sub(1)));
    review_of(&blueprint_with(&list))
}

/// A review of about `bytes` bytes of a Blueprint of many dogus with storage classes and many config
/// entries with `configRef`s, to `to` (from v3 to v2 they move into the annotation; from v2 to v3 the
/// annotation is read back).
fn kept_fields_review(bytes: usize, to: &str) -> String {
    let of = |count: usize| {
        let dogus: Vec<String> = (0..count)
            .map(|i| format!(r#"{{"name":"d{i}","platformConfig":{{"resource":{{"storageClassName":"s"}}}}}}"#))
            .collect();
        let entries: Vec<String> =
            (0..count).map(|i| format!(r#"{{"key":"k{i}","configRef":{{"name":"c","key":"k"}}}}"#)).collect();
        let v3 = format!(
            r#"{{"apiVersion":"k8s.cloudogu.com/v3","kind":"Blueprint","metadata":{{"name":"b"}},"spec":{{"blueprint":{{"dogus":[{}],"config":{{"global":[{}]}}}}}}}}"#,
            dogus.join(","),
            entries.join(",")
        );
        let object = match to {
            "v2" => v3,
            _ => {
                let v2 =
                    blueprint_machine::conversion::convert_text(&v3, blueprint_machine::conversion::ApiVersion::V2);
                String::from_utf8(v2.unwrap()).unwrap()
            }
        };
        review_of(&object).replace("k8s.cloudogu.com/v2\",\"objects", &format!("k8s.cloudogu.com/{to}\",\"objects"))
    };
    let guess = of(1000).len();
    let review = of(1000 * bytes / guess * 94 / 100);
    assert!(review.len() <= bytes, "{} bytes", review.len());
    review
}

/// Finding 1: the reviews that made one request cost 68 MB, and more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_of_any_content_stays_within_the_webhooks_memory_budget() {
    let operator = Operator::serving(None).await;
    let before = operator.memory("VmHWM:");

    // The finding's review: 1,999,913 bytes, a million zeros. Larger than any Blueprint the API
    // server can store, so it is refused before it is read.
    let finding = review_of_size(1_999_913, "0");
    assert_eq!(operator.review(&finding).await, Ok(413));
    // The largest reviews the webhook reads, of the items that cost most as decoded values: converted,
    // each in its turn.
    for item in ["0", "{}", r#"{"a":0}"#, "[]", r#""""#] {
        let review = review_of_size(MAX_REVIEW_BYTES - 1024, item);
        assert_eq!(operator.review(&review).await, Ok(200), "{item}");
    }
    // And of what the conversion itself looks into: dogus of distinct names with storage classes,
    // config entries with references (kept in the annotation on the way to v2), and back.
    for review in [kept_fields_review(MAX_REVIEW_BYTES - 1024, "v2"), kept_fields_review(MAX_REVIEW_BYTES - 1024, "v3")]
    {
        assert_eq!(operator.review(&review).await, Ok(200));
    }
    // 40 connections at once, each with most of such a review sent: two are read in their turn, the
    // others wait with what the kernel and hyper's small buffer hold of them.
    let body: Arc<str> = review_of_size(MAX_REVIEW_BYTES - 1024, "0").into();
    let mut held = Vec::new();
    for _ in 0..40 {
        let mut tls = operator.connect().await;
        let head = format!(
            "POST /convert HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        tls.write_all(head.as_bytes()).await.unwrap();
        let body = body.clone();
        // Written in the background: a waiting connection's writes block once the kernel's buffers fill.
        held.push(tokio::spawn(async move {
            let _ = tls.write_all(&body.as_bytes()[..body.len() - 4096]).await;
            tokio::time::sleep(Duration::from_secs(3600)).await;
            drop(tls);
        }));
    }
    // Time for every connection to be served in its turn and cut off (each turn at most 10 s).
    let settled = Instant::now() + REVIEW_TIMEOUT * 20 + Duration::from_secs(30);
    while operator.review(&review_of(&blueprint_with("[]"))).await != Ok(200) {
        assert!(Instant::now() < settled, "the webhook never answered again");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let after = operator.memory("VmHWM:");
    for connection in held {
        connection.abort();
    }
    println!("webhook: peak {before} KiB before, {after} KiB after (+{} KiB)", after.saturating_sub(before));
    assert!(
        after.saturating_sub(before) <= WEBHOOK_BUDGET_KIB,
        "the webhook took the peak from {before} KiB to {after} KiB (budget {WEBHOOK_BUDGET_KIB} KiB)"
    );
}

/// Finding 2: a client that sends its request slowly holds nothing for long, and idle connections to
/// the metrics port take no more descriptors than their limit: the probes go on answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_clients_are_cut_off_and_cannot_take_every_descriptor() {
    let operator = Operator::serving(Some(256)).await;

    // Bodies trickled one byte a second: the request is cut off after REVIEW_TIMEOUT (408, closed).
    let mut trickling = Vec::new();
    for _ in 0..20 {
        let mut tls = operator.connect().await;
        tls.write_all(b"POST /convert HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n{").await.unwrap();
        trickling.push(tokio::spawn(async move {
            let started = Instant::now();
            let mut answer = Vec::new();
            loop {
                let mut buffer = [0u8; 1024];
                match tokio::time::timeout(Duration::from_secs(1), tls.read(&mut buffer)).await {
                    Ok(Ok(0) | Err(_)) => return (started.elapsed(), String::from_utf8_lossy(&answer).into_owned()),
                    Ok(Ok(read)) => answer.extend_from_slice(&buffer[..read]),
                    Err(_) => {
                        if tls.write_all(b" ").await.is_err() {
                            return (started.elapsed(), String::from_utf8_lossy(&answer).into_owned());
                        }
                    }
                }
                assert!(started.elapsed() < Duration::from_secs(60), "a trickling client was never cut off");
            }
        }));
    }
    for connection in trickling {
        let (took, answer) = connection.await.unwrap();
        assert!(took < REVIEW_TIMEOUT + Duration::from_secs(5), "cut off after {took:?}");
        assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 408"), "{answer}");
    }

    // 300 idle connections to the metrics port, with 256 descriptors allowed: the server takes its 32.
    let mut idle = Vec::new();
    for _ in 0..300 {
        if let Ok(stream) = tokio::net::TcpStream::connect(("127.0.0.1", operator.metrics)).await {
            idle.push(stream);
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let open = operator.descriptors();
    assert!(open < 128, "{open} descriptors open with {} idle connections", idle.len());
    // The probes answer meanwhile.
    let mut probe = tokio::net::TcpStream::connect(("127.0.0.1", operator.health)).await.unwrap();
    probe.write_all(b"GET /healthz HTTP/1.0\r\nHost: operator\r\n\r\n").await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(10), probe.read_to_string(&mut answer)).await.unwrap().unwrap();
    assert!(answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200"), "{answer}");
    // And the idle ones are let go after the header timeout (a slot each for those waiting).
    let mut first = idle.swap_remove(0);
    let mut buffer = [0u8; 16];
    let closed = tokio::time::timeout(Duration::from_secs(30), first.read(&mut buffer)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "an idle connection was kept: {closed:?}");
}
