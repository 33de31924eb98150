//! What a node needs of this machine, and what it takes: root and the packages and binaries it runs
//! (checked, with one line saying what is missing); a slot (a lock, a network namespace, addresses and
//! a cgroup of its own, so that a test run and `make cluster-up` can run side by side); the namespace's
//! network; and the reaper that removes it all when the process that started the node ends.

use std::fs::File;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How many nodes may run on one machine at once.
const SLOTS: u8 = 4;
/// Where the slots' locks are (tmpfs: gone with what they guard at a reboot).
const LOCKS: &str = "/run/blueprint-operator";

/// What the node runs from Debian's packages (`make node` installs them as root).
const PACKAGES: [(&str, &str); 7] = [
    ("/usr/bin/containerd", "containerd"),
    ("/usr/bin/containerd-shim-runc-v2", "containerd"),
    ("/usr/bin/ctr", "containerd"),
    ("/usr/sbin/runc", "runc"),
    ("/usr/lib/cni/bridge", "containernetworking-plugins"),
    ("/usr/sbin/iptables", "iptables"),
    ("/usr/sbin/conntrack", "conntrack"),
];

/// The Kubernetes binaries and images `make node` builds into the control plane's folder.
pub const BUILT: [&str; 4] = ["kubelet", "kube-proxy", "kube-scheduler", "kube-controller-manager"];

/// Root, the packages, `ip` and `nsenter`, and what `make node` builds; or one line saying what is
/// missing and how to get it.
pub fn check(bin: &Path, images: &[PathBuf]) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("the node needs root (network namespaces, cgroups, mounts): run as root".into());
    }
    let mut packages: Vec<&str> =
        PACKAGES.iter().filter(|(file, _)| !Path::new(file).exists()).map(|(_, package)| *package).collect();
    packages.dedup();
    if !packages.is_empty() {
        return Err(format!(
            "the node needs Debian's {} (missing): run `make node` as root, or `apt-get install {}`",
            packages.join(", "),
            packages.join(" ")
        ));
    }
    for (tool, package) in [("nsenter", "util-linux"), ("ip", "iproute2"), ("bash", "bash")] {
        if !on_path(tool) {
            return Err(format!("the node needs {tool} (Debian's {package})"));
        }
    }
    let mut missing: Vec<String> =
        BUILT.iter().map(|b| bin.join(b)).filter(|f| !f.is_file()).map(|f| f.display().to_string()).collect();
    missing.extend(images.iter().filter(|image| !image.is_file()).map(|image| image.display().to_string()));
    if !missing.is_empty() {
        return Err(format!("the node needs {} (missing): build them with `make node image`", missing.join(", ")));
    }
    Ok(())
}

/// One node's place on this machine, held while its lock is.
pub struct Slot {
    pub index: u8,
    lock: File,
}

impl Slot {
    /// The first slot no other process holds; the folder its previous node used is cleaned first.
    pub fn acquire(dir: &Path) -> Result<Slot, String> {
        std::fs::create_dir_all(LOCKS).map_err(|e| format!("{LOCKS}: {e}"))?;
        for index in 0..SLOTS {
            let path = Path::new(LOCKS).join(format!("node-{index}.lock"));
            let lock = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            // SAFETY: flock on a descriptor this function owns.
            if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                continue;
            }
            let slot = Slot { index, lock };
            // A node of this slot that ended without its reaper (a reboot clears /run; a SIGKILL of the
            // reaper does not): what it left goes before anything new is set up.
            let previous = std::fs::read_to_string(&path).unwrap_or_default();
            let previous = previous.trim();
            if !previous.is_empty() {
                slot.cleanup(Path::new(previous))?;
            }
            slot.cleanup(dir)?;
            std::fs::write(&path, dir.display().to_string()).map_err(|e| format!("{}: {e}", path.display()))?;
            return Ok(slot);
        }
        Err(format!("all {SLOTS} node slots are taken (see {LOCKS}): stop a node first (`make cluster-down`)"))
    }

    pub fn netns(&self) -> String {
        format!("bo-node{}", self.index)
    }

    /// `nsenter` into the slot's network namespace (and nothing else: the mounts stay the machine's, so
    /// the kubelet sees the cgroups and containerd's mounts are the ones the reaper finds).
    pub fn enter(&self) -> Vec<String> {
        vec!["nsenter".into(), format!("--net=/run/netns/{}", self.netns()), "--".into()]
    }

    /// This machine's end of the link to the node.
    pub fn host_address(&self) -> Ipv4Addr {
        Ipv4Addr::new(172, 31, 240 + self.index, 1)
    }

    /// The node's address: the API server's, the kubelet's, kube-proxy's.
    pub fn node_address(&self) -> Ipv4Addr {
        Ipv4Addr::new(172, 31, 240 + self.index, 2)
    }

    /// The cgroup the kubelet puts every Pod under (in each controller).
    pub fn cgroup_root(&self) -> String {
        format!("/{}", self.netns())
    }

    /// A network namespace with a link to this machine (a veth pair): the node's address on its side,
    /// a default route back, forwarding on.
    pub fn network(&self) -> Result<(), String> {
        let (netns, i) = (self.netns(), self.index);
        let (host, node) = (self.host_address(), self.node_address());
        let (outside, inside) = (format!("bo-h{i}"), format!("bo-n{i}"));
        run("ip", &["netns", "add", &netns])?;
        run("ip", &["link", "add", &outside, "type", "veth", "peer", "name", &inside])?;
        run("ip", &["link", "set", &inside, "netns", &netns])?;
        run("ip", &["addr", "add", &format!("{host}/30"), "dev", &outside])?;
        run("ip", &["link", "set", &outside, "up"])?;
        run("ip", &["-n", &netns, "addr", "add", &format!("{node}/30"), "dev", &inside])?;
        run("ip", &["-n", &netns, "link", "set", &inside, "up"])?;
        run("ip", &["-n", &netns, "link", "set", "lo", "up"])?;
        // Without a route a Service's cluster IP is unreachable before kube-proxy's DNAT could apply.
        run("ip", &["-n", &netns, "route", "add", "default", "via", &host.to_string()])?;
        let mut sysctl = self.enter();
        sysctl.extend(["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"].map(String::from));
        run(&sysctl[0], &sysctl[1..].iter().map(String::as_str).collect::<Vec<_>>()).map(drop)
    }

    /// The slot's cgroup in every controller (the kubelet wants its `cgroupRoot` to exist); a new cpuset
    /// gets its parent's CPUs and memory nodes, or no process could join it.
    pub fn cgroups(&self) -> Result<(), String> {
        let root = Path::new("/sys/fs/cgroup");
        let controllers = std::fs::read_dir(root).map_err(|e| format!("{}: {e}", root.display()))?;
        for controller in controllers.flatten().filter(|entry| entry.path().is_dir()) {
            let dir = controller.path().join(self.netns());
            if let Err(e) = std::fs::create_dir_all(&dir) {
                return Err(format!("cannot make the cgroup {}: {e}", dir.display()));
            }
            if controller.file_name() == "cpuset" {
                for file in ["cpuset.cpus", "cpuset.mems"] {
                    let parent = std::fs::read_to_string(controller.path().join(file)).unwrap_or_default();
                    std::fs::write(dir.join(file), parent.trim()).map_err(|e| format!("{}: {e}", dir.display()))?;
                }
            }
        }
        Ok(())
    }

    /// Removes at once what a node in `dir` left.
    fn cleanup(&self, dir: &Path) -> Result<(), String> {
        let script = write_script(dir)?;
        let status = Command::new("bash")
            .arg(&script)
            .args(["now", &self.index.to_string(), &dir.display().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|e| format!("bash: {e}"))?;
        status.success().then_some(()).ok_or_else(|| format!("{} failed: {status}", script.display()))
    }

    /// Starts the reaper of the node in `dir`: it waits for the end of this process (the end of its
    /// standard input) and then removes the node, holding the slot's lock until it is done. The write
    /// end of that pipe is kept for as long as the process lives.
    pub fn reaper(&self, dir: &Path) -> Result<(), String> {
        use std::os::unix::process::CommandExt;
        let script = write_script(dir)?;
        let log = File::options()
            .create(true)
            .append(true)
            .open(dir.join("logs/cleanup.log"))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        let lock = self.lock.as_raw_fd();
        let mut command = Command::new("bash");
        command
            .arg(&script)
            .args(["reap", &self.index.to_string(), &dir.display().to_string()])
            .stdin(Stdio::piped())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log);
        // SAFETY: setsid and dup2 are async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            command.pre_exec(move || {
                // Its own session: a Ctrl-C of the terminal reaches the node's processes, not it.
                libc::setsid();
                if libc::dup2(lock, 3) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command.spawn().map_err(|e| format!("bash {}: {e}", script.display()))?;
        let stdin = child.stdin.take().ok_or("the reaper has no standard input")?;
        // Never written to, never closed: the reaper reads its end of file when this process is gone.
        std::mem::forget(stdin);
        std::mem::forget(child);
        Ok(())
    }
}

fn write_script(dir: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir.join("logs")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let script = dir.join("logs/cleanup.sh");
    std::fs::write(&script, include_str!("cleanup.sh")).map_err(|e| format!("{}: {e}", script.display()))?;
    Ok(script)
}

/// Runs a command to its end; its output, or why it failed.
pub fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let output = Command::new(program).args(args).output().map_err(|e| format!("{program}: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!("{program} {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()))
    }
}

/// Whether `program` is in a folder of `PATH`.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// Waits until no node of `dir` holds its slot: its reaper releases the lock when it is done.
pub fn await_removed(dir: &Path, limit: Duration) -> Result<(), String> {
    let started = Instant::now();
    let Ok(entries) = std::fs::read_dir(LOCKS) else { return Ok(()) };
    for entry in entries.flatten() {
        if std::fs::read_to_string(entry.path()).unwrap_or_default().trim() != dir.display().to_string() {
            continue;
        }
        let lock = File::open(entry.path()).map_err(|e| format!("{}: {e}", entry.path().display()))?;
        // SAFETY: flock on a descriptor this function owns (released when it is closed).
        while unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            if started.elapsed() > limit {
                return Err(format!(
                    "the node of {} is not removed after {limit:?} (see its logs/cleanup.log)",
                    dir.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    Ok(())
}
