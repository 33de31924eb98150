//! `blueprint-operator cluster up|down` (`make cluster-up`, `make cluster-down`): a one-node cluster on
//! this machine with the operator installed by its chart, as a user would run it, for trying it out.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::install::{self, RELEASE};
use super::{NODE_NAME, NodeOptions};
use crate::sandbox::ecosystem::Behaviour;

/// The namespace the operator is installed in, as on a CES platform.
pub const NAMESPACE: &str = "ecosystem";
/// How long a start in the background may take before `up` gives up waiting.
const UP_LIMIT: Duration = Duration::from_secs(15 * 60);

pub struct UpArgs {
    pub dir: PathBuf,
    pub image: PathBuf,
    pub background: bool,
}

/// Starts the cluster and keeps it until SIGTERM or Ctrl-C; in the background: starts itself as a
/// process of its own session and returns once the cluster is ready. The last line printed is the
/// kubeconfig to use.
pub fn up(args: UpArgs) -> Result<(), String> {
    std::fs::create_dir_all(&args.dir).map_err(|e| format!("{}: {e}", args.dir.display()))?;
    let dir = args.dir.canonicalize().map_err(|e| format!("{}: {e}", args.dir.display()))?;
    if let Some(pid) = running(&dir) {
        return Err(format!("a cluster runs already in {} (pid {pid}): `make cluster-down` first", dir.display()));
    }
    if args.background {
        return background(&dir, &args.image);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(foreground(&dir, &args.image))
}

async fn foreground(dir: &Path, image: &Path) -> Result<(), String> {
    let started = Instant::now();
    let _ = std::fs::remove_file(dir.join("ready"));
    let node = super::start(NodeOptions { dir: dir.to_owned(), images: vec![image.to_owned()] })?;
    std::fs::write(dir.join("cluster.pid"), std::process::id().to_string()).map_err(|e| e.to_string())?;
    println!(
        "cluster: node {NODE_NAME} Ready after {:.0}s, API server {}",
        started.elapsed().as_secs_f64(),
        node.plane.server
    );
    let behaviour = Behaviour {
        install: Duration::from_millis(1500),
        upgrade: Duration::from_millis(1000),
        restart: Duration::from_millis(500),
        ..Behaviour::default()
    };
    let sandbox = install::ecosystem(&node, NAMESPACE, behaviour).await?;
    println!(
        "cluster: namespace {NAMESPACE} seeded as a fresh ecosystem; simulated dogu and component operators; dogu registry on {}",
        sandbox.registry_endpoint()
    );
    let chart = install::chart();
    install::helm(&node, NAMESPACE, &["install", RELEASE, &chart.display().to_string(), "--wait", "--timeout", "5m"])?;
    println!(
        "cluster: the operator installed by helm ({}) and Ready after {:.0}s",
        chart.display(),
        started.elapsed().as_secs_f64()
    );
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, node.plane.kubeconfig_text("admin", &node.plane.token, NAMESPACE))
        .map_err(|e| e.to_string())?;
    println!("cluster: try `kubectl apply -f examples/fresh-install/blueprint.yaml`; stop with `make cluster-down`");
    println!("{}", kubeconfig.display());
    std::fs::write(dir.join("ready"), "").map_err(|e| e.to_string())?;
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(|e| e.to_string())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    let _ = std::fs::remove_file(dir.join("ready"));
    let _ = std::fs::remove_file(dir.join("cluster.pid"));
    Ok(())
}

/// Starts `up` again as a process of its own session, its output in `logs/cluster.log`, and waits until
/// the cluster is ready (its lines shown as they come) or the process ended.
fn background(dir: &Path, image: &Path) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| e.to_string())?;
    let log_path = logs.join("cluster.log");
    let log = std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let _ = std::fs::remove_file(dir.join("ready"));
    let program = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut command = std::process::Command::new(program);
    command
        .args(["cluster", "up", "--dir"])
        .arg(dir)
        .arg("--image")
        .arg(image)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log);
    // SAFETY: setsid is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = command.spawn().map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut shown = 0;
    loop {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let ready = dir.join("ready").exists();
        // The kubeconfig's line is the last, printed below once the cluster is ready.
        let complete = if ready { lines.len().saturating_sub(1) } else { lines.len() };
        for line in lines.iter().take(complete).skip(shown) {
            println!("{line}");
        }
        shown = shown.max(complete);
        if ready {
            println!("{}", dir.join("kubeconfig").display());
            return Ok(());
        }
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Err(format!("the cluster did not start ({status}); its log: {}", log_path.display()));
        }
        if started.elapsed() > UP_LIMIT {
            return Err(format!("the cluster is not ready after {UP_LIMIT:?}; its log: {}", log_path.display()));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Stops the cluster of `dir` and waits until its reaper removed what it started.
pub fn down(dir: &Path) -> Result<(), String> {
    let dir = match dir.canonicalize() {
        Ok(dir) => dir,
        Err(_) => {
            println!("cluster: none in {}", dir.display());
            return Ok(());
        }
    };
    let Some(pid) = running(&dir) else {
        println!("cluster: none runs in {}", dir.display());
        return Ok(());
    };
    // SAFETY: kill with a pid read from the cluster's pid file, which `running` found alive.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(60);
    while Path::new(&format!("/proc/{pid}")).exists() {
        if Instant::now() > deadline {
            // SAFETY: as above.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    super::host::await_removed(&dir, Duration::from_secs(120))?;
    let _ = std::fs::remove_file(dir.join("cluster.pid"));
    println!("cluster: stopped; everything it started is removed (its logs stay in {})", dir.join("logs").display());
    Ok(())
}

/// The pid of the process that keeps the cluster of `dir`, if it runs.
fn running(dir: &Path) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(dir.join("cluster.pid")).ok()?.trim().parse().ok()?;
    let command = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    String::from_utf8_lossy(&command).contains("cluster").then_some(pid)
}
