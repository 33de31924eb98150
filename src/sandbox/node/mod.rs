//! A one-node Kubernetes cluster on this machine, for the tests of what a Pod does and for `make
//! cluster-up`: the control plane of [`super::control_plane`] (etcd, kube-apiserver), and
//! kube-controller-manager, kube-scheduler, the kubelet and kube-proxy of the same pinned release
//! (`make node`), on containerd, runc and the CNI plugins of Debian's packages, with a pause image
//! built here (no registry is reached: Pods run images imported into containerd).
//!
//! Everything runs in a network namespace of its own (`nsenter --net`, the mounts stay the
//! machine's), linked to this machine by a veth pair: this process reaches the API server at the
//! node's address, the Pods reach it through the `kubernetes` Service, and the API server reaches a
//! webhook through its Service, by kube-proxy's iptables rules inside that namespace, which never
//! touch the machine's own. The state lives in one folder. The processes end with the thread that
//! started them (`PR_SET_PDEATHSIG`); a reaper removes the rest (containerd's shims and the Pods'
//! processes, cgroups, mounts, the namespace) when the process that started the node ends, however
//! it ends. Every wait polls a condition, with a bound.

pub mod command;
mod configs;
mod host;
pub mod install;

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

pub use configs::{NODE_NAME, PAUSE_IMAGE, POD_RANGE};

use super::control_plane::{self, ControlPlane, Launch, Ports};

/// How long the node may take to be ready (its parts start in seconds; more on a loaded machine).
const START_LIMIT: Duration = Duration::from_secs(240);
/// The API server's port inside the node's network namespace (its own: no other process binds it).
const API_PORT: u16 = 6443;

/// A part of the node that a test can stop and start again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    Containerd,
    Kubelet,
    KubeProxy,
    Scheduler,
    ControllerManager,
}

impl Part {
    fn name(self) -> &'static str {
        match self {
            Part::Containerd => "containerd",
            Part::Kubelet => "kubelet",
            Part::KubeProxy => "kube-proxy",
            Part::Scheduler => "kube-scheduler",
            Part::ControllerManager => "kube-controller-manager",
        }
    }
}

/// Where the node keeps its state, and the images it imports besides the pause image.
pub struct NodeOptions {
    pub dir: PathBuf,
    pub images: Vec<PathBuf>,
}

pub struct Node {
    /// The API server, as this process reaches it (`https://<node address>:6443`), its admin
    /// kubeconfig and kubectl.
    pub plane: ControlPlane,
    /// The node's address (the kubelet's, the API server's).
    pub address: Ipv4Addr,
    /// This machine's end of the link to the node: the node's Pods reach servers of this process here.
    pub host: Ipv4Addr,
    /// The node's folder; its parts' logs are in `logs/`.
    pub dir: PathBuf,
    /// containerd's socket (for `ctr`).
    pub socket: PathBuf,
    requests: Mutex<mpsc::Sender<Request>>,
}

enum Request {
    Stop(Part, mpsc::Sender<Result<(), String>>),
    Start(Part, mpsc::Sender<Result<(), String>>),
}

/// The pause image `make node` builds.
pub fn pause_image() -> PathBuf {
    control_plane::bin_dir().join("../images/pause.tar")
}

/// The operator's image `make image` builds (`BLUEPRINT_OPERATOR_IMAGE` overrides).
pub fn operator_image() -> PathBuf {
    std::env::var_os("BLUEPRINT_OPERATOR_IMAGE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/image/blueprint-operator.tar"))
}

/// The name the operator's image is imported as: the chart's default image, so the chart installs
/// it as it is (`IfNotPresent` finds it; nothing is pulled).
pub fn operator_image_name() -> String {
    format!("docker.io/cloudogu/blueprint-operator:{}", env!("CARGO_PKG_VERSION"))
}

/// The node of this test process, started at the first call with the operator's image; or why it
/// could not start (one line first).
pub fn start_shared() -> Result<&'static Node, String> {
    static NODE: OnceLock<Result<Node, String>> = OnceLock::new();
    NODE.get_or_init(|| {
        let run = control_plane::bin_dir().join("../run");
        start(NodeOptions { dir: run.join(format!("node-{}", std::process::id())), images: vec![operator_image()] })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// The node of this test process; a test that needs it fails with the reason it could not start.
pub fn shared() -> &'static Node {
    match start_shared() {
        Ok(node) => node,
        Err(problem) => panic!("the node did not start: {problem}"),
    }
}

/// Starts a node as `options` say, from a thread that lives as long as the process (its processes end
/// with it); returns once the node is Ready, kube-proxy serves and the controllers run.
pub fn start(options: NodeOptions) -> Result<Node, String> {
    let (sender, receiver) = mpsc::channel();
    std::thread::Builder::new()
        .name("node".into())
        .spawn(move || {
            let (requests, incoming) = mpsc::channel();
            match Supervisor::start(&options) {
                Ok((mut supervisor, node)) => {
                    let _ = sender.send(Ok(Node { requests: Mutex::new(requests), ..node }));
                    supervisor.serve(incoming);
                }
                Err(problem) => {
                    let _ = sender.send(Err(problem));
                }
            }
            // The children's parent-death signal fires when this thread ends: never.
            loop {
                std::thread::park();
            }
        })
        .map_err(|e| e.to_string())?;
    receiver.recv().unwrap_or_else(|_| Err("the node's thread ended".into()))
}

impl Node {
    /// This machine's end of the link to the node.
    pub fn host_address(&self) -> Ipv4Addr {
        self.host
    }

    /// Runs kubectl as the admin.
    pub fn kubectl(&self, args: &[&str]) -> Result<String, String> {
        self.plane.kubectl(args)
    }

    /// Runs containerd's `ctr` in the Kubernetes namespace of the node's containerd.
    pub fn ctr(&self, args: &[&str]) -> Result<String, String> {
        let address = self.socket.display().to_string();
        let mut all = vec!["--address", &address, "--namespace", "k8s.io"];
        all.extend_from_slice(args);
        host::run("ctr", &all)
    }

    /// Stops a part (SIGTERM, then SIGKILL after 30 s); the containers it ran keep running.
    pub fn stop(&self, part: Part) -> Result<(), String> {
        self.ask(|reply| Request::Stop(part, reply))
    }

    /// Starts a part that was stopped, as it was started first.
    pub fn start(&self, part: Part) -> Result<(), String> {
        self.ask(|reply| Request::Start(part, reply))
    }

    fn ask(&self, request: impl FnOnce(mpsc::Sender<Result<(), String>>) -> Request) -> Result<(), String> {
        let (reply, answer) = mpsc::channel();
        self.requests.lock().expect("not poisoned").send(request(reply)).map_err(|_| "the node's thread ended")?;
        answer.recv().map_err(|_| "the node's thread ended".to_owned())?
    }

    /// The last `lines` lines of a part's log.
    pub fn log(&self, part: Part, lines: usize) -> String {
        tail(&self.dir.join("logs").join(format!("{}.log", part.name())), lines)
    }
}

/// How a part is started (again).
struct Recipe {
    program: PathBuf,
    args: Vec<String>,
}

/// The node's thread: it started the processes and starts and stops them on request.
struct Supervisor {
    enter: Vec<String>,
    logs: PathBuf,
    socket: PathBuf,
    recipes: HashMap<Part, Recipe>,
    running: HashMap<Part, Child>,
}

impl Supervisor {
    fn start(options: &NodeOptions) -> Result<(Supervisor, Node), String> {
        let bin = control_plane::bin_dir();
        control_plane::check_binaries(&bin, &["etcd", "kube-apiserver", "kubectl"], "make kube")?;
        let mut images = vec![pause_image()];
        images.extend(options.images.iter().cloned());
        host::check(&bin, &images)?;
        let dir = absolute(&options.dir)?;
        let slot = host::Slot::acquire(&dir)?;
        let logs = dir.join("logs");
        std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
        // The reaper first: whatever starts after it is removed with the process, a failed start too.
        slot.reaper(&dir)?;
        slot.network()?;
        slot.cgroups()?;
        let address = slot.node_address();

        let (plane, pki) = control_plane::launch(&Launch {
            dir: dir.join("plane"),
            wrap: slot.enter(),
            address,
            ports: Ports { etcd_client: 2379, etcd_peer: 2380, api: API_PORT },
            names: [
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            ]
            .map(String::from)
            .to_vec(),
            extra_addresses: vec![Ipv4Addr::new(10, 0, 0, 1)],
            pods: true,
            api_args: Vec::new(),
        })?;
        let write = |path: &Path, text: &str| {
            std::fs::create_dir_all(path.parent().expect("a file in a folder")).map_err(|e| e.to_string())?;
            std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
        };
        // The node's parts reach the API server on the namespace's loopback.
        let kubeconfig = dir.join("node.kubeconfig");
        let inside = plane
            .kubeconfig_text("admin", &plane.token, "default")
            .replace(&plane.server, &format!("https://127.0.0.1:{API_PORT}"));
        write(&kubeconfig, &inside)?;

        let containerd = dir.join("containerd");
        let socket = containerd.join("containerd.sock");
        write(&containerd.join("config.toml"), &configs::containerd(&containerd))?;
        write(&containerd.join("cni/10-bo-pods.conflist"), &configs::cni_network(&containerd.join("ipam")))?;
        let kubelet = dir.join("kubelet");
        write(&kubelet.join("config.yaml"), &configs::kubelet(&kubelet, &socket, address, &slot.cgroup_root()))?;
        write(&dir.join("kube-proxy.yaml"), &configs::kube_proxy(&kubeconfig, address))?;

        let path = |p: &Path| p.display().to_string();
        let kubeconfig_flag = format!("--kubeconfig={}", path(&kubeconfig));
        let mut recipes = HashMap::new();
        recipes.insert(
            Part::Containerd,
            Recipe {
                program: "containerd".into(),
                args: vec![format!("--config={}", path(&containerd.join("config.toml")))],
            },
        );
        recipes.insert(
            Part::ControllerManager,
            Recipe {
                program: bin.join("kube-controller-manager"),
                args: vec![
                    kubeconfig_flag.clone(),
                    format!("--authentication-kubeconfig={}", path(&kubeconfig)),
                    format!("--authorization-kubeconfig={}", path(&kubeconfig)),
                    "--leader-elect=false".into(),
                    "--bind-address=127.0.0.1".into(),
                    "--secure-port=10257".into(),
                    // The `kube-root-ca.crt` ConfigMap of every namespace: the CA in a Pod's token volume.
                    format!("--root-ca-file={}", path(&pki.ca_cert)),
                    format!("--service-account-private-key-file={}", path(&pki.sa_key)),
                    format!("--cert-dir={}", path(&dir.join("controller-manager"))),
                    "--v=1".into(),
                ],
            },
        );
        recipes.insert(
            Part::Scheduler,
            Recipe {
                program: bin.join("kube-scheduler"),
                args: vec![
                    kubeconfig_flag.clone(),
                    format!("--authentication-kubeconfig={}", path(&kubeconfig)),
                    format!("--authorization-kubeconfig={}", path(&kubeconfig)),
                    "--leader-elect=false".into(),
                    "--bind-address=127.0.0.1".into(),
                    "--secure-port=10259".into(),
                    format!("--cert-dir={}", path(&dir.join("scheduler"))),
                    "--v=1".into(),
                ],
            },
        );
        recipes.insert(
            Part::Kubelet,
            Recipe {
                program: bin.join("kubelet"),
                args: vec![
                    format!("--config={}", path(&kubelet.join("config.yaml"))),
                    kubeconfig_flag.clone(),
                    format!("--root-dir={}", path(&kubelet.join("root"))),
                    format!("--cert-dir={}", path(&kubelet.join("pki"))),
                    format!("--node-ip={address}"),
                    format!("--hostname-override={NODE_NAME}"),
                    "--v=1".into(),
                ],
            },
        );
        recipes.insert(
            Part::KubeProxy,
            Recipe {
                program: bin.join("kube-proxy"),
                args: vec![format!("--config={}", path(&dir.join("kube-proxy.yaml"))), "--v=1".into()],
            },
        );
        let mut supervisor =
            Supervisor { enter: slot.enter(), logs, socket: socket.clone(), recipes, running: HashMap::new() };
        supervisor.launch(Part::Containerd)?;
        let node = Node {
            plane,
            address,
            host: slot.host_address(),
            dir: dir.clone(),
            socket,
            requests: Mutex::new(mpsc::channel().0),
        };
        for image in &images {
            node.ctr(&["images", "import", &image.display().to_string()])
                .map_err(|e| format!("cannot import {}: {e}", image.display()))?;
        }
        for part in [Part::ControllerManager, Part::Scheduler, Part::Kubelet, Part::KubeProxy] {
            supervisor.launch(part)?;
        }
        wait_ready(&node, &mut supervisor)?;
        platform_crds(&node)?;
        // The slot stays held by the reaper, which inherited the lock, until the node is removed.
        std::mem::forget(slot);
        Ok((supervisor, node))
    }

    fn serve(&mut self, requests: mpsc::Receiver<Request>) {
        for request in requests {
            match request {
                Request::Stop(part, reply) => {
                    let _ = reply.send(self.halt(part));
                }
                Request::Start(part, reply) => {
                    let _ = reply.send(self.launch(part));
                }
            }
        }
    }

    /// Starts a part in the node's network namespace, its output appended to its log; containerd is
    /// waited for until it answers.
    fn launch(&mut self, part: Part) -> Result<(), String> {
        if self.running.contains_key(&part) {
            return Err(format!("{} runs already", part.name()));
        }
        let recipe = &self.recipes[&part];
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(self.logs.join(format!("{}.log", part.name())))
            .map_err(|e| e.to_string())?;
        let mut command = Command::new(&self.enter[0]);
        command
            .args(&self.enter[1..])
            .arg(&recipe.program)
            .args(&recipe.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log);
        let child = control_plane::spawn(&mut command)?;
        self.running.insert(part, child);
        if part == Part::Containerd {
            let socket = self.socket.display().to_string();
            wait_for(Duration::from_secs(60), "containerd answers", || {
                host::run("ctr", &["--address", &socket, "version"]).map(drop)
            })
            .map_err(|e| format!("{e}\n{}", tail(&self.logs.join("containerd.log"), 20)))?;
        }
        Ok(())
    }

    fn halt(&mut self, part: Part) -> Result<(), String> {
        let mut child = self.running.remove(&part).ok_or_else(|| format!("{} is not running", part.name()))?;
        // SAFETY: kill with a pid this thread started and has not waited for.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if child.try_wait().map_err(|e| e.to_string())?.is_some() {
                return Ok(());
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A part that ended by itself, with the end of its log.
    fn ended(&mut self) -> Option<String> {
        for (part, child) in &mut self.running {
            if let Ok(Some(status)) = child.try_wait() {
                let log = tail(&self.logs.join(format!("{}.log", part.name())), 15);
                return Some(format!("{} ended ({status}):\n{log}", part.name()));
            }
        }
        None
    }
}

/// Waits until the node is Ready, kube-proxy serves, and the controllers made the `default`
/// ServiceAccount and the `kube-root-ca.crt` ConfigMap (which every Pod's token volume needs).
fn wait_ready(node: &Node, supervisor: &mut Supervisor) -> Result<(), String> {
    let started = Instant::now();
    let proxy = format!("{}:10256", node.address);
    loop {
        if let Some(ended) = supervisor.ended() {
            return Err(ended);
        }
        let Err(last) = readiness(node, &proxy) else {
            return Ok(());
        };
        if started.elapsed() > START_LIMIT {
            let logs = [Part::Kubelet, Part::Containerd, Part::KubeProxy, Part::ControllerManager]
                .map(|part| format!("--- {}:\n{}", part.name(), node.log(part, 10)))
                .join("\n");
            return Err(format!("not ready after {START_LIMIT:?}: {last}\n{logs}"));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Whether the node is ready ([`wait_ready`]); else what it waits for.
fn readiness(node: &Node, proxy: &str) -> Result<(), String> {
    let jsonpath = "-o=jsonpath={.status.conditions[?(@.type==\"Ready\")].status}";
    let ready = node.kubectl(&["get", "node", NODE_NAME, jsonpath]).map_err(|e| format!("the node: {e}"))?;
    if ready != "True" {
        return Err(format!("the node is not Ready: {ready:?}"));
    }
    http_ok(proxy, "/healthz").map_err(|e| format!("kube-proxy: {e}"))?;
    node.kubectl(&["get", "serviceaccount", "default"]).map_err(|e| format!("the default ServiceAccount: {e}"))?;
    node.kubectl(&["get", "configmap", "kube-root-ca.crt"]).map_err(|e| format!("the CA's ConfigMap: {e}"))?;
    Ok(())
}

/// The CRDs a CES platform has before the operator is installed: the dogu and component operators'
/// Dogu and Component (the fields this operator reads), the backup and debug-mode operators' kinds.
/// The Blueprint CRDs are the chart's.
fn platform_crds(node: &Node) -> Result<(), String> {
    use crate::crd::Which;
    for which in [Which::Dogu, Which::Component] {
        let file = node.dir.join(format!("{}-crd.yaml", crate::crd::name(which)));
        std::fs::write(&file, crate::crd::yaml(which)).map_err(|e| e.to_string())?;
        node.kubectl(&["apply", "--server-side", "-f", &file.display().to_string()])?;
    }
    node.plane.install_other_operators_crds()?;
    node.kubectl(&["wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"])?;
    // Listable once each kind's watch cache is initialized (kubectl retries the 429 until then).
    node.kubectl(&["get", "dogus,components,restores,debugmodes", "-A", "-o", "name"]).map(drop)
}

/// Polls `check` until it succeeds or `limit` passes.
fn wait_for(limit: Duration, what: &str, check: impl Fn() -> Result<(), String>) -> Result<(), String> {
    let started = Instant::now();
    loop {
        match check() {
            Ok(()) => return Ok(()),
            Err(e) if started.elapsed() > limit => return Err(format!("{what}: not within {limit:?}: {e}")),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// A plain HTTP GET answered 200.
fn http_ok(address: &str, path: &str) -> Result<(), String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect_timeout(
        &address.parse().map_err(|e| format!("{address}: {e}"))?,
        Duration::from_secs(2),
    )
    .map_err(|e| format!("{address}: {e}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).map_err(|e| e.to_string())?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").map_err(|e| e.to_string())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).map_err(|e| e.to_string())?;
    let status = answer.lines().next().unwrap_or_default();
    status.contains(" 200 ").then_some(()).ok_or_else(|| format!("{address}{path}: {status}"))
}

fn tail(file: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn absolute(dir: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    dir.canonicalize().map_err(|e| format!("{}: {e}", dir.display()))
}
