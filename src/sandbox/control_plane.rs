//! A real control plane, like controller-runtime's envtest: etcd and kube-apiserver of the release
//! `make kube` builds (target/kube/bin, or `KUBE_BIN`), on loopback, on free ports, in a folder of their
//! own under target/kube/run, with certificates made here (rcgen), an admin token in `system:masters`,
//! RBAC authorization, and the project's CRDs installed. For the real-API-server tests, and for
//! `sandbox --kube-apiserver`.
//!
//! The processes get `PR_SET_PDEATHSIG`: when the thread that started them ends, the kernel kills them.
//! [`shared`] starts them from a thread that lives as long as the process, so they end with it,
//! however it ends (a failed test, a panic, an abort): no stray process. No fixed sleep: every wait
//! polls a condition, with a bound.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};

use crate::crd::Which;

/// How long the control plane may take to become ready (seconds on this machine; more when busy).
const START_LIMIT: Duration = Duration::from_secs(120);

pub struct ControlPlane {
    /// `https://127.0.0.1:<port>`.
    pub server: String,
    /// The CA that signed the API server's certificate (PEM).
    pub ca_pem: String,
    /// The admin's bearer token (`system:masters`).
    pub token: String,
    /// A kubeconfig for the admin (kubectl, `run`).
    pub kubeconfig: PathBuf,
    /// etcd's client URL, `http://127.0.0.1:<port>` (its JSON gateway compacts, for the 410 tests).
    pub etcd: String,
    /// The folder of the built binaries.
    pub bin: PathBuf,
    /// The folder of this control plane (logs, data).
    pub dir: PathBuf,
}

/// Where `make kube` puts the binaries (`KUBE_BIN` overrides).
pub fn bin_dir() -> PathBuf {
    std::env::var_os("KUBE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/kube/bin"))
}

/// The control plane of this test process, started at the first call.
pub fn shared() -> &'static ControlPlane {
    match start_shared() {
        Ok(plane) => plane,
        Err(problem) => panic!("the real control plane did not start: {problem}"),
    }
}

/// The control plane of this process, started at the first call; or why it could not start.
pub fn start_shared() -> Result<&'static ControlPlane, String> {
    static PLANE: OnceLock<Result<ControlPlane, String>> = OnceLock::new();
    let plane = PLANE.get_or_init(|| {
        let (sender, receiver) = std::sync::mpsc::channel();
        // The spawning thread never ends: the children's parent-death signal fires when the process does.
        std::thread::Builder::new()
            .name("control-plane".into())
            .spawn(move || {
                let _ = sender.send(start());
                loop {
                    std::thread::park();
                }
            })
            .expect("a thread starts");
        receiver.recv().unwrap_or_else(|_| Err("the control plane thread ended".into()))
    });
    plane.as_ref().map_err(Clone::clone)
}

fn start() -> Result<ControlPlane, String> {
    let bin = bin_dir();
    for binary in ["etcd", "kube-apiserver", "kubectl"] {
        if !bin.join(binary).is_file() {
            return Err(format!(
                "{} is missing: build the control plane with `make kube` (needs Go; `make test` does it first)",
                bin.join(binary).display()
            ));
        }
    }
    // Beside the binaries: target/kube/run.
    let run = bin.parent().map(|kube| kube.join("run")).unwrap_or_else(|| std::env::temp_dir().join("kube-run"));
    remove_stale(&run);
    let dir = run.join(std::process::id().to_string());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("etcd")).map_err(|e| e.to_string())?;
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir.join("etcd"), std::fs::Permissions::from_mode(0o700));
    }
    let pki = Pki::new(&dir)?;

    let (client_port, peer_port, api_port) = (free_port()?, free_port()?, free_port()?);
    let log = |name: &str| std::fs::File::create(dir.join(name)).map_err(|e| e.to_string());
    let etcd = spawn(
        Command::new(bin.join("etcd"))
            .arg("--name=test")
            .arg(format!("--data-dir={}", dir.join("etcd").display()))
            .arg(format!("--listen-client-urls=http://127.0.0.1:{client_port}"))
            .arg(format!("--advertise-client-urls=http://127.0.0.1:{client_port}"))
            .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"))
            .arg(format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}"))
            .arg(format!("--initial-cluster=test=http://127.0.0.1:{peer_port}"))
            .arg("--unsafe-no-fsync=true")
            .arg("--log-level=warn")
            .stdout(Stdio::null())
            .stderr(log("etcd.log")?),
    )?;
    let api = spawn(
        Command::new(bin.join("kube-apiserver"))
            .arg(format!("--etcd-servers=http://127.0.0.1:{client_port}"))
            .arg("--bind-address=127.0.0.1")
            .arg("--advertise-address=127.0.0.1")
            .arg(format!("--secure-port={api_port}"))
            .arg(format!("--tls-cert-file={}", pki.server_cert.display()))
            .arg(format!("--tls-private-key-file={}", pki.server_key.display()))
            .arg(format!("--cert-dir={}", dir.join("certs").display()))
            .arg(format!("--client-ca-file={}", pki.ca_cert.display()))
            .arg(format!("--token-auth-file={}", pki.tokens.display()))
            .arg("--authorization-mode=RBAC")
            .arg("--service-account-issuer=https://kubernetes.default.svc")
            .arg(format!("--service-account-key-file={}", pki.sa_public.display()))
            .arg(format!("--service-account-signing-key-file={}", pki.sa_key.display()))
            .arg("--service-cluster-ip-range=10.0.0.0/24")
            .arg("--disable-admission-plugins=ServiceAccount")
            .arg("--endpoint-reconciler-type=none")
            // Compaction every minute (the default is 5): the watch tests can see a 410.
            .arg("--etcd-compaction-interval=1m")
            // Every request, who sent it and what was answered (the RBAC tests read it).
            .arg(format!("--audit-policy-file={}", audit_policy(&dir)?.display()))
            .arg(format!("--audit-log-path={}", dir.join("audit.log").display()))
            .arg("--audit-log-format=json")
            .arg("--audit-log-mode=blocking")
            .arg("--v=1")
            .stdout(Stdio::null())
            .stderr(log("kube-apiserver.log")?),
    )?;
    let server = format!("https://127.0.0.1:{api_port}");
    let plane = ControlPlane {
        server: server.clone(),
        etcd: format!("http://127.0.0.1:{client_port}"),
        ca_pem: pki.ca_pem.clone(),
        token: pki.token.clone(),
        kubeconfig: dir.join("kubeconfig"),
        bin,
        dir: dir.clone(),
    };
    std::fs::write(&plane.kubeconfig, plane.kubeconfig_text("admin", &plane.token, "default"))
        .map_err(|e| e.to_string())?;
    wait_ready(&plane, &[etcd, api])?;
    // The Blueprint CRD converts v2 through the webhook: served here, for as long as the process
    // lives, with the API server's own certificate (127.0.0.1, signed by the CA the API server trusts).
    let webhook = serve_webhook(&dir, &pki)?;
    for which in [Which::Blueprint, Which::BlueprintMask, Which::Dogu, Which::Component] {
        let file = dir.join(format!("{}-crd.yaml", crate::crd::name(which)));
        let manifest = match which {
            Which::Blueprint => {
                let crd = crate::crd::blueprint_with_webhook_url(&format!("{webhook}/convert"), &pki.ca_pem);
                serde_saphyr::to_string(&crd).map_err(|e| e.to_string())?
            }
            _ => crate::crd::yaml(which),
        };
        std::fs::write(&file, manifest).map_err(|e| e.to_string())?;
        plane.kubectl(&["apply", "--server-side", "-f", &file.display().to_string()])?;
    }
    // The backup operator's Restore and the debug-mode operator's DebugMode kinds, as a CES platform
    // with those operators has them.
    let others = dir.join("other-operators-crds.yaml");
    std::fs::write(&others, include_str!("other-operators-crds.yaml")).map_err(|e| e.to_string())?;
    plane.kubectl(&["apply", "--server-side", "-f", &others.display().to_string()])?;
    plane.kubectl(&["wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"])?;
    // Established is not listable yet: until a kind's watch cache is initialized, a LIST is answered
    // 429 "storage is (re)initializing". kubectl retries that itself; once it lists every kind, the
    // tests' clients (which do not retry) are not refused.
    plane.kubectl(&["get", "blueprints,blueprintmasks,dogus,components,restores,debugmodes", "-A", "-o", "name"])?;
    Ok(plane)
}

/// Serves the conversion webhook (`crate::webhook`) over TLS on a free loopback port from a thread of
/// its own that lives as long as the process (as the control plane's processes do); its URL.
fn serve_webhook(dir: &Path, pki: &Pki) -> Result<String, String> {
    let certificates = dir.join("webhook");
    std::fs::create_dir_all(&certificates).map_err(|e| e.to_string())?;
    std::fs::copy(&pki.server_cert, certificates.join("tls.crt")).map_err(|e| e.to_string())?;
    std::fs::copy(&pki.server_key, certificates.join("tls.key")).map_err(|e| e.to_string())?;
    let certificate = crate::webhook::certificates::files::serving(&certificates).map_err(|e| e.to_string())?;
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| e.to_string())?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let url = format!("https://{}", listener.local_addr().map_err(|e| e.to_string())?);
    std::thread::Builder::new()
        .name("conversion-webhook".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("a listener");
                crate::webhook::tls::serve(listener, crate::webhook::router(), certificate).await;
            });
        })
        .map_err(|e| e.to_string())?;
    Ok(url)
}

impl ControlPlane {
    /// A kubeconfig for `user` (a bearer token) in `namespace`.
    pub fn kubeconfig_text(&self, user: &str, token: &str, namespace: &str) -> String {
        use base64::Engine;
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\n\
             users:\n- name: {user}\n  user:\n    token: {token}\ncontexts:\n- name: test\n  context:\n    cluster: test\n    user: {user}\n    namespace: {namespace}\n\
             current-context: test\n",
            self.server
        )
    }

    /// Runs the real kubectl as the admin; its output, or why it failed.
    pub fn kubectl(&self, args: &[&str]) -> Result<String, String> {
        let output = Command::new(self.bin.join("kubectl"))
            .env("KUBECONFIG", &self.kubeconfig)
            .args(args)
            .output()
            .map_err(|e| format!("kubectl: {e}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        if output.status.success() {
            Ok(stdout)
        } else {
            Err(format!("kubectl {}: {}{}", args.join(" "), stdout, String::from_utf8_lossy(&output.stderr)))
        }
    }

    /// A client configuration for `user` (a bearer token) in `namespace`, through a kubeconfig as a
    /// user's would be.
    pub async fn config_for(&self, user: &str, token: &str, namespace: &str) -> kube::Config {
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&self.kubeconfig_text(user, token, namespace))
            .expect("the kubeconfig parses");
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .expect("the kubeconfig makes a client config")
    }

    /// The admin's client configuration.
    pub async fn admin_config(&self, namespace: &str) -> kube::Config {
        self.config_for("admin", &self.token, namespace).await
    }

    /// A kube client as the admin.
    pub async fn client(&self, namespace: &str) -> kube::Client {
        kube::Client::try_from(self.admin_config(namespace).await).expect("a client")
    }

    /// Every request the API server answered so far for `username` (for example
    /// `system:serviceaccount:<namespace>:<name>`), from its audit log.
    pub fn audited(&self, username: &str) -> Vec<Audited> {
        let text = std::fs::read_to_string(self.dir.join("audit.log")).unwrap_or_default();
        text.lines()
            .filter_map(|line| serde_json::from_str::<Audited>(line).ok())
            .filter(|entry| entry.user.username == username)
            .collect()
    }

    /// Compacts etcd's history up to its current revision (what the API server does every
    /// `--etcd-compaction-interval`), through etcd's JSON gateway; the revision compacted to.
    pub async fn compact(&self) -> Result<u64, String> {
        let http = reqwest::Client::new();
        let post = |path: &'static str, body: String| etcd_post(&http, format!("{}{path}", self.etcd), body);
        // Any read answers with the store's current revision in its header ("AA==" is the key "\0").
        let range = post("/v3/kv/range", r#"{"key":"AA=="}"#.into()).await?;
        let revision: u64 = range["header"]["revision"]
            .as_str()
            .and_then(|r| r.parse().ok())
            .ok_or_else(|| format!("etcd /v3/kv/range: no revision in {range}"))?;
        post("/v3/kv/compaction", format!(r#"{{"revision":"{revision}","physical":true}}"#)).await?;
        Ok(revision)
    }

    /// A new namespace of its own for one test, `prefix-<n>`.
    pub fn namespace(&self, prefix: &str) -> String {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let name = format!("{prefix}-{}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        self.kubectl(&["create", "namespace", &name]).unwrap_or_else(|e| panic!("{e}"));
        name
    }
}

/// A POST to etcd's JSON gateway; the answer.
async fn etcd_post(http: &reqwest::Client, url: String, body: String) -> Result<serde_json::Value, String> {
    let response = http.post(&url).body(body).send().await.map_err(|e| format!("{url}: {e}"))?;
    let status = response.status();
    let text = response.text().await.map_err(|e| format!("{url}: {e}"))?;
    if !status.is_success() {
        return Err(format!("{url}: {status}: {text}"));
    }
    serde_json::from_str(&text).map_err(|e| format!("{url}: {e}: {text}"))
}

/// An audit policy recording every request's metadata once, when it was answered.
fn audit_policy(dir: &Path) -> Result<PathBuf, String> {
    let file = dir.join("audit-policy.yaml");
    let policy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived, ResponseStarted]\n\
                  rules:\n- level: Metadata\n";
    std::fs::write(&file, policy).map_err(|e| e.to_string())?;
    Ok(file)
}

/// One request as the API server's audit log recorded it.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Audited {
    pub verb: String,
    pub user: AuditUser,
    #[serde(default)]
    pub object_ref: Option<AuditObject>,
    #[serde(default)]
    pub response_status: Option<AuditStatus>,
    /// The audit log spells it `requestURI`.
    #[serde(default, rename = "requestURI")]
    pub request_uri: String,
}

#[derive(Clone, Debug, serde::Deserialize)]
pub struct AuditUser {
    #[serde(default)]
    pub username: String,
}

#[derive(Clone, Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditObject {
    #[serde(default)]
    pub resource: String,
    #[serde(default)]
    pub subresource: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub api_group: String,
}

#[derive(Clone, Debug, serde::Deserialize)]
pub struct AuditStatus {
    #[serde(default)]
    pub code: u16,
}

impl Audited {
    /// `resource` or `resource/subresource`.
    pub fn resource(&self) -> String {
        match &self.object_ref {
            Some(o) if o.subresource.is_empty() => o.resource.clone(),
            Some(o) => format!("{}/{}", o.resource, o.subresource),
            None => String::new(),
        }
    }

    pub fn code(&self) -> u16 {
        self.response_status.as_ref().map(|s| s.code).unwrap_or_default()
    }
}

/// The certificates, keys and tokens of one control plane, as files in its folder.
struct Pki {
    ca_pem: String,
    ca_cert: PathBuf,
    server_cert: PathBuf,
    server_key: PathBuf,
    sa_key: PathBuf,
    sa_public: PathBuf,
    tokens: PathBuf,
    token: String,
}

impl Pki {
    fn new(dir: &Path) -> Result<Self, String> {
        let err = |e: rcgen::Error| e.to_string();
        let ca_key = KeyPair::generate().map_err(err)?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, "blueprint-operator test control plane");
        let ca = ca_params.self_signed(&ca_key).map_err(err)?;
        let issuer = Issuer::new(ca_params, ca_key);

        let server_key = KeyPair::generate().map_err(err)?;
        let mut server_params = CertificateParams::new(vec!["localhost".to_owned()]).map_err(err)?;
        server_params.subject_alt_names.push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        server_params.distinguished_name.push(DnType::CommonName, "kube-apiserver");
        let server = server_params.signed_by(&server_key, &issuer).map_err(err)?;
        let sa_key = KeyPair::generate().map_err(err)?;

        let token = format!("admin-{:032x}", rand_u128());
        let write = |name: &str, text: &str| -> Result<PathBuf, String> {
            let path = dir.join(name);
            let mut file = std::fs::File::create(&path).map_err(|e| e.to_string())?;
            file.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
            Ok(path)
        };
        Ok(Pki {
            ca_pem: ca.pem(),
            ca_cert: write("ca.crt", &ca.pem())?,
            server_cert: write("apiserver.crt", &server.pem())?,
            server_key: write("apiserver.key", &server_key.serialize_pem())?,
            sa_key: write("sa.key", &sa_key.serialize_pem())?,
            sa_public: write("sa.pub", &sa_key.public_key_pem())?,
            tokens: write("tokens.csv", &format!("{token},admin,admin-uid,\"system:masters\"\n"))?,
            token,
        })
    }
}

fn rand_u128() -> u128 {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("random bytes");
    u128::from_le_bytes(bytes)
}

/// A port nothing listens on now (the OS picks it; released before the server binds it).
fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

/// Starts a child that the kernel kills when this process ends.
fn spawn(command: &mut Command) -> Result<Child, String> {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.spawn().map_err(|e| format!("{:?}: {e}", command.get_program()))
}

/// Waits (bounded) until `/readyz` says ok and the default namespace exists.
fn wait_ready(plane: &ControlPlane, children: &[Child]) -> Result<(), String> {
    let started = Instant::now();
    loop {
        let ready = plane.kubectl(&["get", "--raw", "/readyz"]).map(|body| body.trim() == "ok").unwrap_or(false)
            && plane.kubectl(&["get", "namespace", "default"]).is_ok();
        if ready {
            return Ok(());
        }
        if started.elapsed() > START_LIMIT {
            let logs = ["etcd.log", "kube-apiserver.log"]
                .iter()
                .map(|f| std::fs::read_to_string(plane.dir.join(f)).unwrap_or_default())
                .map(|t| t.lines().rev().take(20).collect::<Vec<_>>().join("\n"))
                .collect::<Vec<_>>()
                .join("\n---\n");
            return Err(format!("not ready after {START_LIMIT:?} ({} children started): {logs}", children.len()));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Folders of control planes whose process is gone (a run that was killed).
fn remove_stale(run: &Path) {
    let Ok(entries) = std::fs::read_dir(run) else { return };
    for entry in entries.flatten() {
        let pid = entry.file_name().to_string_lossy().parse::<u32>().ok();
        if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
