//! `blueprint-operator sandbox`: the whole operator on the embedded API server, with progress and a
//! summary.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use blueprint_machine::api::Blueprint;

use super::ecosystem::Behaviour;
use super::seed;
use super::session::{Sandbox, SandboxOptions};
use crate::journal::JournalSettings;
use crate::plan::input;
use crate::progress::{self, Changes, Phase};

pub struct SandboxArgs {
    pub blueprint: Option<PathBuf>,
    pub cluster: Option<PathBuf>,
    pub descriptors: Option<PathBuf>,
    pub serve: Option<SocketAddr>,
    /// On a real kube-apiserver (`make kube`) instead of the emulator.
    pub kube_apiserver: bool,
    pub timeout: Duration,
    pub journal: Option<JournalSettings>,
}

/// Where the sandbox's cluster is served.
enum Server {
    Emulator(SocketAddr),
    KubeApiserver { url: String, kubeconfig: PathBuf, kubectl: PathBuf },
}

/// How the run ended.
enum End {
    Completed,
    Blocked(String),
    TimedOut(String),
}

/// Why the sandbox could not run a blueprint.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(transparent)]
    Input(#[from] input::InputError),
    #[error(transparent)]
    File(#[from] crate::files::FileError),
    #[error(transparent)]
    Seed(#[from] seed::SeedError),
    #[error("the blueprint has no metadata.name")]
    Unnamed,
    #[error("cannot start the sandbox: {0}")]
    Start(std::io::Error),
    #[error("cannot start the real control plane: {0}")]
    ControlPlane(String),
    #[error("cannot apply the blueprint: {0}")]
    Apply(String),
}

pub async fn run(args: SandboxArgs) -> Result<i32, SandboxError> {
    let blueprint: Blueprint = match &args.blueprint {
        Some(path) => input::read_blueprint(path)?,
        None => input::blueprint_from_text(std::path::Path::new("the built-in blueprint"), seed::DEFAULT_BLUEPRINT)?,
    };
    let cluster = match &args.cluster {
        Some(path) => {
            let text = crate::files::read_text(path, crate::files::CLUSTER_FILE_LIMIT)?;
            seed::objects(&text)
                .map_err(|e| seed::SeedError::InFile { path: path.display().to_string(), source: Box::new(e) })?
        }
        None => seed::objects(seed::DEFAULT_CLUSTER)?,
    };
    let descriptors = match &args.descriptors {
        Some(dir) => seed::read_descriptors(dir)?,
        None => seed::builtin_descriptors(),
    };
    let name = blueprint.metadata.name.clone().ok_or(SandboxError::Unnamed)?;
    let behaviour = Behaviour {
        install: Duration::from_millis(1500),
        upgrade: Duration::from_millis(1000),
        restart: Duration::from_millis(500),
        ..Behaviour::default()
    };
    let journal_path = args.journal.as_ref().map(|j| j.path.clone());
    let options = SandboxOptions {
        behaviour,
        debounce: Duration::from_millis(200),
        journal: args.journal,
        ..SandboxOptions::default()
    };
    let version = options.operator_version.clone();
    let serve = args.serve.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
    let (mut sandbox, server) = if args.kube_apiserver {
        let plane = super::control_plane::start_shared().map_err(SandboxError::ControlPlane)?;
        plane.kubectl(&["create", "namespace", &options.namespace]).map_err(SandboxError::ControlPlane)?;
        let admin = plane.admin_config(&options.namespace).await;
        let options = SandboxOptions {
            backend: super::session::Backend::KubeApiserver { admin: Box::new(admin), operator: None },
            ..options
        };
        let sandbox = Sandbox::start(options, None).await.map_err(SandboxError::Start)?;
        let kubectl = plane.bin.join("kubectl");
        (sandbox, Server::KubeApiserver { url: plane.server.clone(), kubeconfig: plane.kubeconfig.clone(), kubectl })
    } else {
        let sandbox = Sandbox::start(options, Some(serve)).await.map_err(SandboxError::Start)?;
        let address = match sandbox.transport() {
            super::session::Transport::Http(address) => address,
            super::session::Transport::InProcess => serve,
        };
        (sandbox, Server::Emulator(address))
    };
    seed::cluster(&sandbox.cluster, &sandbox.namespace, &cluster).await?;
    seed::registry(&sandbox.cluster, &sandbox.registry, &sandbox.namespace, &descriptors)
        .await
        .map_err(|e| seed::SeedError::Refused(e.message))?;
    match &server {
        Server::Emulator(address) => {
            println!("sandbox: API server on http://{address}, namespace {:?}", sandbox.namespace)
        }
        Server::KubeApiserver { url, kubeconfig, .. } => println!(
            "sandbox: kube-apiserver with etcd on {url} (KUBECONFIG={}), namespace {:?}",
            kubeconfig.display(),
            sandbox.namespace
        ),
    }
    println!(
        "sandbox: {} objects seeded; dogu registry with {} descriptors on {}",
        cluster.len(),
        descriptors.len(),
        sandbox.registry_endpoint()
    );
    sandbox.start_controller(&version);
    println!(
        "sandbox: operator {version} started (the controller of `run`, over HTTP{})",
        match server {
            Server::Emulator(_) => "",
            Server::KubeApiserver { .. } => "S",
        }
    );

    let started = Instant::now();
    sandbox.apply_blueprint(&blueprint).await.map_err(|e| SandboxError::Apply(e.message))?;
    let generation = sandbox.blueprint(&name).await.and_then(|b| b.metadata.generation).unwrap_or(1);
    println!("[{:6.1}s] applied Blueprint {name:?} (generation {generation})", 0.0);

    let mut changes = Changes::default();
    let end = follow(&mut sandbox, &name, args.timeout, started, &mut changes).await;
    let elapsed = started.elapsed();
    sandbox.flush_journal();
    // A time to converge only for a Blueprint that converged.
    let converged = matches!(end, End::Completed).then_some(elapsed);
    summary(&sandbox, converged, journal_path.as_deref());
    let code = match end {
        End::Completed => {
            println!("result: Completed=True after {:.1}s", elapsed.as_secs_f64());
            0
        }
        End::Blocked(reason) => {
            println!("result: the blueprint cannot be applied: {reason}");
            1
        }
        End::TimedOut(state) => {
            println!("result: not completed within {:?}; last state: {state}", args.timeout);
            1
        }
    };
    let kubectl = match &server {
        _ if args.serve.is_none() && !args.kube_apiserver => None,
        Server::Emulator(address) => Some(format!("kubectl --server http://{address}")),
        Server::KubeApiserver { kubeconfig, kubectl, .. } => {
            Some(format!("KUBECONFIG={} {}", kubeconfig.display(), kubectl.display()))
        }
    };
    if let Some(kubectl) = kubectl {
        println!("\nThe sandbox keeps running. Try:");
        println!("  {kubectl} -n {} get bp,dogus,components", sandbox.namespace);
        println!("  {kubectl} -n {} describe bp {name}", sandbox.namespace);
        println!(
            "  {kubectl} -n {} apply -f examples/invalid/downgrade.yaml   # change the blueprint",
            sandbox.namespace
        );
        println!("Stop with Ctrl-C.");
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => break,
                _ = tokio::time::sleep(Duration::from_millis(200)) => {
                    sandbox.follow_rollouts().await;
                    let blueprint = sandbox.blueprint(&name).await;
                    report(&sandbox, &name, blueprint.as_ref(), &mut changes, started).await;
                }
            }
        }
    }
    sandbox.shutdown().await;
    Ok(code)
}

/// Prints condition changes, work of dogus and components, and events until the Blueprint completes,
/// is blocked or stopped, or time runs out.
async fn follow(sandbox: &mut Sandbox, name: &str, timeout: Duration, started: Instant, changes: &mut Changes) -> End {
    let tty = std::io::stdout().is_terminal();
    let spinner = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
    let mut tick = 0usize;
    let mut last_note = Instant::now();
    let mut blocked_since: Option<Instant> = None;
    loop {
        sandbox.follow_rollouts().await;
        // One read per round for both the lines and the phase: read twice, a status written in
        // between ended the run as completed without its `Completed=True` line.
        let blueprint = sandbox.blueprint(name).await;
        let changed = report(sandbox, name, blueprint.as_ref(), changes, started).await;
        let phase = blueprint.as_ref().map(progress::phase);
        let clear = || {
            if tty {
                print!("\r\x1b[K");
            }
        };
        // Blocked or stopped: nothing will change without a new spec (a moment's grace for the status
        // of a generation applied just now).
        let stuck = match &phase {
            Some(Phase::Completed) => {
                clear();
                return End::Completed;
            }
            Some(Phase::Blocked(reason)) => Some(reason.clone()),
            Some(Phase::Stopped) => Some(progress::sentence(&Phase::Stopped)),
            _ => None,
        };
        match (&stuck, blocked_since) {
            (Some(reason), Some(since)) if since.elapsed() > Duration::from_secs(3) => {
                clear();
                return End::Blocked(reason.clone());
            }
            (Some(_), None) => blocked_since = Some(Instant::now()),
            (None, _) => blocked_since = None,
            _ => {}
        }
        let state = phase.as_ref().map(progress::sentence).unwrap_or_else(|| "waiting for the blueprint".into());
        if started.elapsed() > timeout {
            clear();
            return End::TimedOut(state);
        }
        if tty {
            tick += 1;
            print!("\r\x1b[K  {} {state}", spinner[tick % spinner.len()]);
            let _ = std::io::stdout().flush();
        } else if changed {
            last_note = Instant::now();
        } else if last_note.elapsed() > Duration::from_secs(5) {
            println!("[{:6.1}s] … {state}", started.elapsed().as_secs_f64());
            last_note = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Prints what changed since the last call, `blueprint` as read this round; returns whether anything did.
async fn report(
    sandbox: &Sandbox,
    name: &str,
    blueprint: Option<&Blueprint>,
    changes: &mut Changes,
    started: Instant,
) -> bool {
    let at = started.elapsed().as_secs_f64();
    let clear = if std::io::stdout().is_terminal() { "\r\x1b[K" } else { "" };
    let (dogus, components) = sandbox.workload().await;
    let events = sandbox.event_lines(name).await;
    let lines = changes.lines(blueprint, &progress::busy(&dogus, &components), &events);
    for line in &lines {
        println!("{clear}[{at:6.1}s] {line}");
    }
    !lines.is_empty()
}

/// Reconciles, API requests by verb, writes, events and the time to converge.
fn summary(sandbox: &Sandbox, converged: Option<Duration>, journal: Option<&std::path::Path>) {
    let text = sandbox.metrics.encode();
    let value = |prefix: &str| crate::metrics::sum(&text, prefix) as u64;
    let verbs = crate::metrics::requests_by_verb(&text);
    let writes: f64 =
        ["create", "update", "patch", "delete"].iter().map(|v| verbs.get(*v).copied().unwrap_or(0.0)).sum();
    println!("\nsummary (the operator's own requests):");
    println!("  reconciles:         {}", value("blueprint_operator_reconciles_total"));
    println!("  API requests:       {}", verbs.iter().map(|(v, n)| format!("{v} {n}")).collect::<Vec<_>>().join(", "));
    println!(
        "  writes:             {writes} (status writes: {}, events: {})",
        value("blueprint_operator_status_writes_total"),
        value("blueprint_operator_events_total")
    );
    println!("  actions:            {}", value("blueprint_operator_actions_total"));
    println!(
        "  dogu registry:      {} requests, {} descriptors from memory, {} from the local registry",
        value("blueprint_operator_registry_requests_total"),
        value("blueprint_operator_descriptor_lookups_total{layer=\"memory\",result=\"hit\"}"),
        value("blueprint_operator_descriptor_lookups_total{layer=\"local\",result=\"hit\"}")
    );
    if let Some(journal) = journal {
        println!(
            "  journal:            {} records in {}",
            value("blueprint_operator_journal_records_total"),
            journal.display()
        );
    }
    println!("  operator versions:  {}", sandbox.rollouts.join(" → "));
    if let Some(elapsed) = converged {
        println!("  time to converge:   {:.1}s", elapsed.as_secs_f64());
    }
}
