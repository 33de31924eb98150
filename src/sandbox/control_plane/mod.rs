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

mod audit;
mod pki;

use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub use audit::{AuditObject, AuditStatus, AuditUser, Audited};
pub(crate) use pki::Pki;

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
    started_once(&PLANE, || start(None, &[]))
}

/// A second control plane of this process whose API server does not serve streaming lists (its
/// `WatchList` feature gate off, as on Kubernetes 1.27 to 1.31 by default and on 1.33): a watch with
/// `sendInitialEvents=true` is refused there with 422, and the operator must list and watch instead.
/// Started at the first call.
pub fn without_streaming_lists() -> &'static ControlPlane {
    static PLANE: OnceLock<Result<ControlPlane, String>> = OnceLock::new();
    match started_once(&PLANE, || start(Some("without-streaming-lists"), &["--feature-gates=WatchList=false"])) {
        Ok(plane) => plane,
        Err(problem) => panic!("the control plane without streaming lists did not start: {problem}"),
    }
}

/// The control plane in `slot`, started by `start` at the first call from a thread that never ends:
/// the children's parent-death signal fires when the process does.
fn started_once(
    slot: &'static OnceLock<Result<ControlPlane, String>>,
    start: fn() -> Result<ControlPlane, String>,
) -> Result<&'static ControlPlane, String> {
    let plane = slot.get_or_init(|| {
        let (sender, receiver) = std::sync::mpsc::channel();
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

/// Starts a control plane in a folder of this process (`<pid>` or `<pid>-<variant>`), its API server
/// with `api_args` besides the usual ones.
fn start(variant: Option<&str>, api_args: &[&str]) -> Result<ControlPlane, String> {
    let bin = bin_dir();
    check_binaries(&bin, &["etcd", "kube-apiserver", "kubectl"], "make kube")?;
    // Beside the binaries: target/kube/run.
    let run = bin.parent().map(|kube| kube.join("run")).unwrap_or_else(|| std::env::temp_dir().join("kube-run"));
    remove_stale(&run);
    let folder = match variant {
        None => std::process::id().to_string(),
        Some(variant) => format!("{}-{variant}", std::process::id()),
    };
    let dir = run.join(folder);
    let (client_port, peer_port, api_port) = (free_port()?, free_port()?, free_port()?);
    let settings = Launch {
        dir,
        wrap: Vec::new(),
        address: Ipv4Addr::LOCALHOST,
        ports: Ports { etcd_client: client_port, etcd_peer: peer_port, api: api_port },
        names: Vec::new(),
        extra_addresses: Vec::new(),
        pods: false,
        api_args: api_args.iter().map(|arg| (*arg).to_owned()).collect(),
    };
    let (plane, pki) = launch(&settings)?;
    // The Blueprint CRD converts v2 through the webhook: served here, for as long as the process
    // lives, with the API server's own certificate (127.0.0.1, signed by the CA the API server trusts).
    let webhook = serve_webhook(&plane.dir, &pki)?;
    for which in [Which::Blueprint, Which::BlueprintMask, Which::Dogu, Which::Component] {
        let file = plane.dir.join(format!("{}-crd.yaml", crate::crd::name(which)));
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
    plane.install_other_operators_crds()?;
    plane.kubectl(&["wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"])?;
    // Established is not listable yet: until a kind's watch cache is initialized, a LIST is answered
    // 429 "storage is (re)initializing". kubectl retries that itself; once it lists every kind, the
    // tests' clients (which do not retry) are not refused.
    plane.kubectl(&["get", "blueprints,blueprintmasks,dogus,components,restores,debugmodes", "-A", "-o", "name"])?;
    Ok(plane)
}

/// Fails saying how to build them when any of `binaries` is not in `bin`.
pub(crate) fn check_binaries(bin: &Path, binaries: &[&str], make: &str) -> Result<(), String> {
    for binary in binaries {
        if !bin.join(binary).is_file() {
            return Err(format!(
                "{} is missing: build it with `{make}` (needs Go; `make test` does it first)",
                bin.join(binary).display()
            ));
        }
    }
    Ok(())
}

/// Where and how [`launch`] starts etcd and kube-apiserver.
pub(crate) struct Launch {
    /// The control plane's folder (made afresh).
    pub dir: PathBuf,
    /// A command the processes are started through (for example `nsenter --net=...`); empty: none.
    pub wrap: Vec<String>,
    /// The API server's address: it binds it (or all addresses, when not loopback), advertises it and
    /// clients reach it there.
    pub address: Ipv4Addr,
    pub ports: Ports,
    /// More names and addresses of the API server's certificate (the `kubernetes` Service's).
    pub names: Vec<String>,
    pub extra_addresses: Vec<Ipv4Addr>,
    /// For a cluster that runs Pods: ServiceAccount admission (the token volume of every Pod) and the
    /// `kubernetes` Service's endpoints kept by the API server.
    pub pods: bool,
    /// More kube-apiserver flags (feature gates).
    pub api_args: Vec<String>,
}

#[derive(Clone, Copy)]
pub(crate) struct Ports {
    pub etcd_client: u16,
    pub etcd_peer: u16,
    pub api: u16,
}

/// Starts etcd and kube-apiserver as [`Launch`] says and waits until the API server is ready; the
/// control plane and its certificates. The processes end with the thread that called this.
pub(crate) fn launch(settings: &Launch) -> Result<(ControlPlane, Pki), String> {
    let bin = bin_dir();
    let dir = settings.dir.clone();
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("etcd")).map_err(|e| format!("{}: {e}", dir.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir.join("etcd"), std::fs::Permissions::from_mode(0o700));
    }
    let names = settings.names.iter().map(String::as_str).collect::<Vec<_>>();
    let mut addresses = settings.extra_addresses.clone();
    if !settings.address.is_loopback() {
        addresses.push(settings.address);
    }
    let pki = Pki::new(&dir, &addresses, &names)?;
    let Ports { etcd_client: client_port, etcd_peer: peer_port, api: api_port } = settings.ports;
    let log = |name: &str| std::fs::File::create(dir.join(name)).map_err(|e| e.to_string());
    let command = |binary: &str| wrapped(&settings.wrap, &bin.join(binary));
    let etcd = spawn(
        command("etcd")
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
    let mut api = command("kube-apiserver");
    api.arg(format!("--etcd-servers=http://127.0.0.1:{client_port}"))
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
        .arg(format!("--service-cluster-ip-range={SERVICE_RANGE}"))
        // Compaction every minute (the default is 5): the watch tests can see a 410.
        .arg("--etcd-compaction-interval=1m")
        // Every request, who sent it and what was answered (the RBAC tests read it).
        .arg(format!("--audit-policy-file={}", audit::policy(&dir)?.display()))
        .arg(format!("--audit-log-path={}", dir.join("audit.log").display()))
        .arg("--audit-log-format=json")
        .arg("--audit-log-mode=blocking")
        .arg("--v=1")
        .args(&settings.api_args);
    if settings.pods {
        // Reachable from the node's Pods (through the `kubernetes` Service, whose endpoint is this
        // address) and from this process.
        api.arg("--bind-address=0.0.0.0").arg(format!("--advertise-address={}", settings.address));
    } else {
        // No ServiceAccount controller makes the `default` ServiceAccount the admission would ask for,
        // and no Pod would reach the `kubernetes` Service's endpoints.
        api.arg(format!("--bind-address={}", settings.address))
            .arg(format!("--advertise-address={}", settings.address))
            .arg("--disable-admission-plugins=ServiceAccount")
            .arg("--endpoint-reconciler-type=none");
    }
    let api = spawn(api.stdout(Stdio::null()).stderr(log("kube-apiserver.log")?))?;
    let server = format!("https://{}:{api_port}", settings.address);
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
    Ok((plane, pki))
}

/// The cluster IPs of Services; the first is the `kubernetes` Service's.
pub(crate) const SERVICE_RANGE: &str = "10.0.0.0/24";

/// A command for `binary`, started through `wrap` when it is not empty.
fn wrapped(wrap: &[String], binary: &Path) -> Command {
    match wrap.split_first() {
        None => Command::new(binary),
        Some((first, rest)) => {
            let mut command = Command::new(first);
            command.args(rest).arg(binary);
            command
        }
    }
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
        audit::read(&self.dir, |entry| entry.user.username == username)
    }

    /// The backup operator's Restore and the debug-mode operator's DebugMode kinds, as a CES platform
    /// with those operators has them.
    pub(crate) fn install_other_operators_crds(&self) -> Result<(), String> {
        let others = self.dir.join("other-operators-crds.yaml");
        std::fs::write(&others, include_str!("../other-operators-crds.yaml")).map_err(|e| e.to_string())?;
        self.kubectl(&["apply", "--server-side", "-f", &others.display().to_string()]).map(drop)
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

/// A port nothing listens on now (the OS picks it; released before the server binds it).
pub(crate) fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

/// Starts a child that the kernel kills when this process ends.
pub(crate) fn spawn(command: &mut Command) -> Result<Child, String> {
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

/// Folders of control planes (`<pid>`) and nodes (`node-<pid>`) whose process is gone (a run that was
/// killed). A folder something is still mounted under is left alone: a node's reaper unmounts first.
fn remove_stale(run: &Path) {
    let Ok(entries) = std::fs::read_dir(run) else { return };
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // `<pid>`, `<pid>-<variant>` or `node-<pid>`.
        let pid = name.strip_prefix("node-").unwrap_or(&name).split('-').next().and_then(|pid| pid.parse::<u32>().ok());
        let prefix = format!("{}/", entry.path().display());
        let mounted = mounts.lines().any(|line| line.split(' ').nth(4).is_some_and(|point| point.starts_with(&prefix)));
        if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) && !mounted {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
