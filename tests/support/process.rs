//! Processes the tests start: the operator's binary, killed when the test ends (also when it fails),
//! and free loopback ports for them.

use std::future::Future;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process (a `run` replica), killed and reaped when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The ports a `run` replica listens on, each free when it was picked.
#[derive(Debug, Clone, Copy)]
pub struct Ports {
    pub webhook: u16,
    pub metrics: u16,
    pub health: u16,
}

impl Ports {
    /// Three ports, each free now.
    pub fn pick() -> Ports {
        Ports { webhook: free_port(), metrics: free_port(), health: free_port() }
    }
}

/// A `run` replica that answered: the process, its ports, and its standard error kept in a file.
pub struct Replica {
    pub process: Killed,
    pub ports: Ports,
    stderr: tempfile::NamedTempFile,
}

impl Replica {
    /// What it wrote to standard error so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.stderr.path()).unwrap_or_default()
    }
}

/// Starts `command(ports)` (its standard output discarded, its standard error kept) and waits, at most
/// `limit`, until `answer(ports)` gives something. A port is free when picked, but another test can
/// listen on it before the replica binds it; a replica that stops because an address is in use is
/// started again on new ports (twice at most). Any other stop fails the test at once, with what the
/// replica wrote, and so does a replica that has not answered within `limit`.
///
/// The limit is generous on purpose: a clean-clone CI run with builds beside it once took more than
/// 30 s to start the debug binary.
pub async fn start_until<T, F>(
    command: impl Fn(Ports) -> Command,
    limit: Duration,
    answer: impl Fn(Ports) -> F,
) -> (Replica, T)
where
    F: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    let mut restarts = 0;
    'start: loop {
        let ports = Ports::pick();
        let stderr = tempfile::NamedTempFile::new().unwrap();
        let process = command(ports)
            .stdout(Stdio::null())
            .stderr(stderr.reopen().unwrap())
            .spawn()
            .expect("the operator's binary starts");
        let mut replica = Replica { process: Killed(process), ports, stderr };
        loop {
            if let Some(value) = answer(ports).await {
                return (replica, value);
            }
            if let Some(status) = replica.process.0.try_wait().unwrap() {
                let stderr = replica.stderr();
                if stderr.contains("Address already in use") && restarts < 2 {
                    restarts += 1;
                    continue 'start;
                }
                panic!("the replica stopped ({status}) before it answered:\n{stderr}");
            }
            assert!(Instant::now() < deadline, "the replica did not answer within {limit:?}:\n{}", replica.stderr());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// `run` as a replica that never leads: its kubeconfig (written into `dir`) names an API server that
/// cannot be reached, so nothing syncs and the Lease is never taken; its webhook serves the
/// certificate files in `certs`; it listens on `ports`.
pub fn unconnected_run(dir: &Path, certs: &Path, ports: Ports) -> Command {
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n\
         users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n",
    )
    .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"));
    command
        .arg("run")
        .env("KUBECONFIG", &kubeconfig)
        .env("NAMESPACE", "ecosystem")
        .env("LEADER_ELECT", "true")
        .env("LOG_LEVEL", "warn")
        .env("WEBHOOK_CERT_DIR", certs)
        .env("WEBHOOK_BIND_ADDRESS", format!("127.0.0.1:{}", ports.webhook))
        .env("METRICS_BIND_ADDRESS", format!("127.0.0.1:{}", ports.metrics))
        .env("HEALTH_PROBE_BIND_ADDRESS", format!("127.0.0.1:{}", ports.health))
        .stdout(Stdio::null());
    command
}
