//! The command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use k8s_openapi::jiff::Timestamp;

use crate::crd;
use crate::plan::{self, Format, PlanArgs};

#[derive(Parser, Debug)]
#[command(
    name = "blueprint-operator",
    version,
    about = "Applies a Blueprint to a Cloudogu EcoSystem and keeps it applied"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// The in-cluster operator (configured by environment variables; kubeconfig or in-cluster config).
    #[command(after_long_help = crate::config::environment_help())]
    Run {
        #[command(flatten)]
        journal: JournalArgs,
    },
    /// What would one reconcile decide for this blueprint: on a snapshot (--cluster FILE), or on the
    /// kubeconfig's cluster, read-only?
    ///
    /// Exit code 0: nothing to do; 2: changes pending; 1: error or invalid blueprint.
    Plan {
        /// The Blueprint (YAML or JSON, API v1, v2 or v3); `-`: standard input. Default: the namespace's
        /// only Blueprint as the cluster (or the snapshot) holds it.
        #[arg(short = 'f', long = "file")]
        blueprint: Option<PathBuf>,
        /// A snapshot of the cluster: its objects as `kubectl get blueprints,dogus,components,configmaps,
        /// secrets -o yaml` prints them; repeatable (the objects of every file). Without it, the cluster
        /// of the kubeconfig is read (read-only).
        #[arg(long)]
        cluster: Vec<PathBuf>,
        /// The kubeconfig context of a live plan; default: the current context.
        #[arg(long, conflicts_with = "cluster")]
        context: Option<String>,
        /// Dogu descriptors as DIR/<namespace>/<name>/<version>.json. Without it, the dependency and
        /// mount checks cannot run and nothing would be applied.
        #[arg(long)]
        descriptors: Option<PathBuf>,
        /// The time of the reconcile (RFC 3339); default: now.
        #[arg(long)]
        now: Option<Timestamp>,
        /// The operator's namespace; default: the Blueprint file's, else the kubeconfig context's (as
        /// `status`, `kubectl`), else (a snapshot) `ecosystem`.
        #[arg(short = 'n', long)]
        namespace: Option<String>,
        /// The version of the operator that would run the reconcile (for self-upgrades).
        #[arg(long)]
        operator_version: Option<String>,
        /// Which versions of the operator's component are releases of this operator (as `run` reads
        /// it); a blueprint naming another version would replace the operator and is refused.
        #[arg(long, env = "OPERATOR_COMPONENT_VERSIONS", value_name = "REQUIREMENT",
              default_value_t = crate::identity::default_own_versions())]
        operator_component_versions: semver::VersionReq,
        /// The component the operator is installed as (as `run` reads it).
        #[arg(long, env = "OPERATOR_COMPONENT", value_name = "NAMESPACE/NAME", default_value = blueprint_machine::naming::OWN_COMPONENT)]
        operator_component: String,
        /// Plan as an operator started with ALLOW_OPERATOR_REPLACEMENT=true.
        #[arg(long, env = "ALLOW_OPERATOR_REPLACEMENT")]
        allow_operator_replacement: bool,
        /// Plan as an operator started with AUTH_REGISTRATION_ENABLED=true (cas is provided).
        #[arg(long, env = "AUTH_REGISTRATION_ENABLED")]
        auth_registration_enabled: bool,
        /// Plan as an operator started with DISABLE_POSTFIX_DEPENDENCY_CHECK=true (postfix is provided).
        #[arg(long, env = "DISABLE_POSTFIX_DEPENDENCY_CHECK")]
        disable_postfix_dependency_check: bool,
        /// Which Secrets a blueprint may read (as `run` reads it): all-but-protected or labelled-only.
        #[arg(long, env = "SECRET_REFERENCES", value_name = "MODE", default_value = "all-but-protected",
              value_parser = |text: &str| blueprint_machine::secret_access::SecretReferences::parse(text)
                  .ok_or_else(|| format!("{text:?} is neither all-but-protected nor labelled-only")))]
        secret_references: blueprint_machine::secret_access::SecretReferences,
        /// The operator's webhook certificate Secret (as `run` reads it): never read by a blueprint.
        #[arg(long, env = "WEBHOOK_SECRET", value_name = "NAME", default_value = crate::config::DEFAULT_WEBHOOK_SECRET)]
        webhook_secret: String,
        /// Output format.
        #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
        output: Format,
    },
    /// A Blueprint on the cluster of the kubeconfig: where it stands, what each dogu and component is
    /// busy with, its conditions and recent events; with --watch, what changes until it is done.
    ///
    /// Exit code 0: completed; 2: not completed yet (watching: not within --timeout); 1: blocked,
    /// stopped, or an error.
    Status {
        /// The Blueprint; default: the namespace's only one.
        name: Option<String>,
        /// Default: the kubeconfig context's namespace.
        #[arg(short = 'n', long)]
        namespace: Option<String>,
        /// The kubeconfig context; default: the current one.
        #[arg(long)]
        context: Option<String>,
        /// Follow the progress (through watches) until the Blueprint is completed, blocked or stopped.
        #[arg(short = 'w', long)]
        watch: bool,
        /// With --watch: wait for the Blueprint's next generation (an apply after this command started,
        /// or its creation) and follow that one, instead of ending at once on a completed one.
        #[arg(long, requires = "watch")]
        next: bool,
        /// How long --watch waits (500ms, 30s, 10m).
        #[arg(long, default_value = "30m", value_parser = crate::config::parse_duration, requires = "watch")]
        timeout: std::time::Duration,
        /// Output format (without --watch).
        #[arg(short = 'o', long = "output", value_enum, default_value = "text", conflicts_with = "watch")]
        output: crate::status_command::Format,
    },
    /// Suspend a Blueprint (spec.stopped: true): the operator shows what it would do, applies nothing.
    ///
    /// Waits until the operator took it up. Exit code 0: taken up; 2: not within --timeout; 1: an error.
    Suspend {
        #[command(flatten)]
        target: crate::blueprint_commands::TargetArgs,
    },
    /// Resume a suspended Blueprint (removes spec.stopped): the operator applies it again.
    ///
    /// Waits until the operator took it up. Exit code 0: taken up; 2: not within --timeout; 1: an error.
    Resume {
        #[command(flatten)]
        target: crate::blueprint_commands::TargetArgs,
    },
    /// Reconcile a Blueprint now, past any backoff (the annotation
    /// blueprint-operator.k8s.cloudogu.com/reconcile-requested-at).
    ///
    /// Waits until the operator handled the request. Exit code 0: handled; 2: not within --timeout; 1:
    /// an error.
    Reconcile {
        #[command(flatten)]
        target: crate::blueprint_commands::TargetArgs,
    },
    /// This binary's version and that of the operator running in the cluster (its leader's Lease, else
    /// the image of its Deployment).
    Version {
        #[command(flatten)]
        args: crate::version_command::VersionArgs,
    },
    /// The whole operator against an embedded API server with simulated dogu and component operators:
    /// applies a blueprint and shows its progress until it is completed.
    ///
    /// Exit code 0: completed; 1: blocked (invalid, not executable) or timed out.
    Sandbox {
        /// The Blueprint to apply; default: examples/fresh-install/blueprint.yaml (built in).
        #[arg(short = 'f', long = "file")]
        blueprint: Option<PathBuf>,
        /// Objects to seed the cluster with; default: a fresh ecosystem (built in).
        #[arg(long)]
        cluster: Option<PathBuf>,
        /// Dogu descriptors (DIR/<namespace>/<name>/<version>.json); default: the examples' (built in).
        #[arg(long)]
        descriptors: Option<PathBuf>,
        /// Keep serving the API on this address after the blueprint completed (for kubectl).
        #[arg(long, conflicts_with = "kube_apiserver")]
        serve: Option<std::net::SocketAddr>,
        /// Run on a real kube-apiserver with etcd instead of the embedded emulator: started on loopback
        /// from `make kube`'s binaries (target/kube/bin, or KUBE_BIN), with the CRDs installed; it keeps
        /// running after the blueprint completed (for kubectl, with the printed KUBECONFIG) until Ctrl-C.
        #[arg(long)]
        kube_apiserver: bool,
        /// Give up after this long (500ms, 30s, 2m).
        #[arg(long, default_value = "60s", value_parser = crate::config::parse_duration)]
        timeout: std::time::Duration,
        #[command(flatten)]
        journal: JournalArgs,
    },
    /// Offline: re-run recorded reconciles (a journal of `run` or `sandbox`) with this operator and
    /// report every decision it now makes differently.
    ///
    /// Exit code 0: every decision identical; 1: a divergence; 2: a file cannot be read.
    Replay {
        /// Journal files, replayed in the order given (rotated files: oldest first).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print record N (counted from 1 over all files) in `plan`'s format, with what was executed.
        #[arg(long, value_name = "N")]
        explain: Option<usize>,
    },
    /// Offline: convert Blueprints between API versions (v1, v2 and v3), losslessly: what an older
    /// version cannot hold of a v3 Blueprint is kept in an annotation and comes back on the way to v3.
    ///
    /// Documents of other kinds pass through unchanged. Exit code 0: converted; 1: an error (stderr).
    Convert {
        /// The file (YAML or JSON, one or more documents); `-`: standard input.
        #[arg(short = 'f', long = "file")]
        file: PathBuf,
        /// The version to convert to.
        #[arg(long, value_enum, default_value = "v3")]
        to: crate::convert::Target,
        /// Output format.
        #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
        output: crate::convert::Output,
    },
    /// Store every Blueprint of the cluster in one API version and tell the CRD so (status.storedVersions):
    /// the last step of a migration in (--to v3), the first of a way back to a Go operator (--to v1, v2).
    ///
    /// Needs our CRD and the operator's conversion webhook serving (docs/migration.md). Exit code 0:
    /// done; 1: an error.
    StorageVersion {
        #[command(flatten)]
        args: crate::storage_version::StorageVersionArgs,
    },
    /// A one-node Kubernetes cluster on this machine with the operator as a Pod, installed by its chart
    ///
    /// kube-apiserver, the kubelet, containerd (`make kube helm node image`; needs root), simulated dogu
    /// and component operators. `make cluster-up` and `make cluster-down` run it (docs/node.md).
    Cluster {
        #[command(subcommand)]
        action: ClusterAction,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    ///
    /// For example: `blueprint-operator completions bash > /etc/bash_completion.d/blueprint-operator`.
    Completions { shell: clap_complete::Shell },
    /// Print the manual page (roff): `blueprint-operator man | man -l -`.
    Man,
    /// Print a CRD manifest.
    ///
    /// With `--webhook-namespace`, the Blueprint CRD's conversion webhook names the operator running
    /// there and trusts the CA of its Secret (read from the cluster): applied once the operator serves,
    /// the CRD is never without a webhook the API server can reach (docs/migration.md, step 3).
    Crd {
        #[arg(value_enum, default_value = "blueprint")]
        which: crd::Which,
        #[command(flatten)]
        webhook: crd::LiveWebhook,
    },
}

#[derive(Subcommand, Debug)]
pub enum ClusterAction {
    /// Start the cluster and keep it until Ctrl-C or SIGTERM; the last line printed is the kubeconfig
    /// to use.
    Up {
        /// The cluster's folder (its state and logs).
        #[arg(long, default_value = "target/cluster")]
        dir: PathBuf,
        /// The operator's image (`make image`).
        #[arg(long, default_value = "target/image/blueprint-operator.tar")]
        image: PathBuf,
        /// Start in the background and return once the cluster is ready.
        #[arg(long)]
        background: bool,
    },
    /// Stop the cluster and remove everything it started (its logs stay).
    Down {
        /// The cluster's folder.
        #[arg(long, default_value = "target/cluster")]
        dir: PathBuf,
    },
}

/// Recording reconciles (`run`, `sandbox`).
#[derive(clap::Args, Debug)]
pub struct JournalArgs {
    /// Append one JSON line per reconcile (observation, decision, execution) to this file.
    #[arg(long = "journal", env = "JOURNAL_PATH", value_name = "PATH")]
    pub path: Option<String>,
    /// Rotate the journal before it grows past this size (a Kubernetes quantity: 64Mi, 500k, 1G).
    #[arg(long = "journal-max-bytes", env = "JOURNAL_MAX_BYTES", default_value = "64Mi", value_parser = parse_bytes)]
    pub max_bytes: u64,
    /// Rotated journal files kept (PATH.1 is the newest).
    #[arg(long = "journal-keep", env = "JOURNAL_KEEP", default_value_t = 3)]
    pub keep: usize,
}

impl JournalArgs {
    pub fn settings(&self) -> Option<crate::journal::JournalSettings> {
        // An empty JOURNAL_PATH (a template's default) means no journal.
        self.path.as_ref().filter(|p| !p.trim().is_empty()).map(|path| crate::journal::JournalSettings {
            path: PathBuf::from(path),
            max_bytes: self.max_bytes,
            keep: self.keep,
        })
    }
}

/// The manual page: the command, then each subcommand's page (options, exit codes, and `run`'s
/// environment) in one roff document.
pub fn manual() -> std::io::Result<Vec<u8>> {
    let command = Cli::command();
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone()).render(&mut page)?;
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("blueprint-operator-{}", sub.get_name());
        let sub = sub.clone().name(name.clone()).bin_name(format!("blueprint-operator {}", sub.get_name()));
        clap_mangen::Man::new(sub).title(name.to_uppercase()).render(&mut page)?;
    }
    Ok(page)
}

/// A command against the kubeconfig's cluster, on a runtime of its own: its exit code, or 1 with the
/// error on stderr.
fn on_a_cluster(
    command: impl std::future::Future<Output = Result<u8, crate::status_command::StatusError>>,
) -> ExitCode {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime starts");
    match runtime.block_on(command) {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(1)
        }
    }
}

/// `text` on standard output; a reader gone (`| head`) is not an error worth a panic, as `print!` makes it.
fn out(text: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
}

/// A positive number of bytes, written as a Kubernetes quantity.
fn parse_bytes(text: &str) -> Result<u64, String> {
    match blueprint_machine::quantity_bytes(text)? {
        0 => Err(format!("{text:?} is not a whole positive number of bytes")),
        bytes => Ok(bytes),
    }
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run { journal } => {
            // One thread: the controller reconciles one Blueprint at a time and otherwise waits on
            // watches, so a second worker buys no throughput; but each thread keeps its own allocator
            // pages, and the fresh install's decision, the watch events decoded meanwhile and the
            // status write spread over two threads' pages held 3.5 MiB more at the 1,000-dogu peak.
            let runtime =
                tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime starts");
            match runtime.block_on(crate::run::run(journal.settings())) {
                Ok(()) => ExitCode::SUCCESS,
                Err(message) => {
                    eprintln!("error: {message}");
                    ExitCode::from(1)
                }
            }
        }
        Command::Sandbox { blueprint, cluster, descriptors, serve, kube_apiserver, timeout, journal } => {
            let runtime =
                tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime starts");
            let args = crate::sandbox::command::SandboxArgs {
                blueprint,
                cluster,
                descriptors,
                serve,
                kube_apiserver,
                timeout,
                journal: journal.settings(),
            };
            match runtime.block_on(crate::sandbox::command::run(args)) {
                Ok(code) => ExitCode::from(code as u8),
                Err(message) => {
                    eprintln!("error: {message}");
                    ExitCode::from(1)
                }
            }
        }
        Command::Replay { files, explain } => {
            match crate::journal::replay::run(&crate::journal::replay::ReplayArgs { files, explain }) {
                Ok(output) => {
                    for warning in &output.warnings {
                        eprintln!("warning: {warning}");
                    }
                    out(&output.stdout);
                    ExitCode::from(output.exit_code)
                }
                Err(error) => {
                    eprintln!("error: {error}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Convert { file, to, output } => {
            match crate::convert::run(&crate::convert::ConvertArgs { file, to, output }) {
                Ok(converted) => {
                    out(&converted);
                    ExitCode::SUCCESS
                }
                Err(error) => {
                    eprintln!("error: {error}");
                    ExitCode::from(1)
                }
            }
        }
        Command::Status { name, namespace, context, watch, next, timeout, output } => {
            let args = crate::status_command::StatusArgs { name, namespace, context, watch, next, timeout, output };
            on_a_cluster(crate::status_command::run(args, &mut std::io::stdout()))
        }
        Command::Suspend { target } => on_a_cluster(crate::blueprint_commands::run(
            crate::blueprint_commands::Hand::Suspend,
            target,
            &mut std::io::stdout(),
        )),
        Command::Resume { target } => on_a_cluster(crate::blueprint_commands::run(
            crate::blueprint_commands::Hand::Resume,
            target,
            &mut std::io::stdout(),
        )),
        Command::Reconcile { target } => on_a_cluster(crate::blueprint_commands::run(
            crate::blueprint_commands::Hand::Reconcile,
            target,
            &mut std::io::stdout(),
        )),
        Command::Version { args } => on_a_cluster(crate::version_command::run(args, &mut std::io::stdout())),
        Command::Cluster { action } => {
            use crate::sandbox::node::command;
            let result = match action {
                ClusterAction::Up { dir, image, background } => command::up(command::UpArgs { dir, image, background }),
                ClusterAction::Down { dir } => command::down(&dir),
            };
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(message) => {
                    eprintln!("error: {message}");
                    ExitCode::from(1)
                }
            }
        }
        Command::Completions { shell } => {
            let _ = std::io::Write::write_all(&mut std::io::stdout(), &crate::completions::script(shell));
            ExitCode::SUCCESS
        }
        Command::Man => match manual() {
            Ok(page) => {
                let _ = std::io::Write::write_all(&mut std::io::stdout(), &page);
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("error: {error}");
                ExitCode::from(1)
            }
        },
        Command::StorageVersion { args } => {
            let runtime =
                tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime starts");
            match runtime.block_on(crate::storage_version::run(args, &mut std::io::stdout())) {
                Ok(code) => ExitCode::from(code),
                Err(error) => {
                    eprintln!("error: {error}");
                    ExitCode::from(1)
                }
            }
        }
        Command::Crd { which, webhook } => match webhook.namespace {
            None => {
                out(&crd::yaml(which));
                ExitCode::SUCCESS
            }
            Some(_) => {
                let runtime =
                    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime starts");
                match runtime.block_on(crd::with_live_webhook(which, &webhook)) {
                    Ok(text) => {
                        out(&text);
                        ExitCode::SUCCESS
                    }
                    Err(error) => {
                        eprintln!("error: {error}");
                        ExitCode::from(1)
                    }
                }
            }
        },
        Command::Plan {
            blueprint,
            cluster,
            context,
            descriptors,
            now,
            namespace,
            operator_version,
            operator_component_versions,
            operator_component,
            allow_operator_replacement,
            auth_registration_enabled,
            disable_postfix_dependency_check,
            secret_references,
            webhook_secret,
            output,
        } => {
            use blueprint_machine::observation::ProvidedDependency;
            let provided_dependencies = [
                auth_registration_enabled.then_some(ProvidedDependency::Cas),
                disable_postfix_dependency_check.then_some(ProvidedDependency::Postfix),
            ]
            .into_iter()
            .flatten()
            .collect();
            let args = PlanArgs {
                blueprint,
                cluster,
                context,
                descriptors,
                now: now.map(|t| Timestamp::from_second(t.as_second()).unwrap_or(t)),
                namespace,
                operator_version,
                own_versions: operator_component_versions,
                component: operator_component,
                allow_replacement: allow_operator_replacement,
                provided_dependencies,
                secret_access: blueprint_machine::secret_access::SecretAccess {
                    own: [webhook_secret].into(),
                    mode: secret_references,
                },
                format: output,
            };
            let result = if !args.cluster.is_empty() {
                plan::run(&args).map_err(|e| e.to_string())
            } else {
                let runtime =
                    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime starts");
                runtime.block_on(plan::live::run(&args)).map_err(|e| e.to_string())
            };
            match result {
                Ok(result) => {
                    for note in &result.notes {
                        eprintln!("note: {note}");
                    }
                    for warning in &result.warnings {
                        eprintln!("warning: {warning}");
                    }
                    out(&result.stdout);
                    if let Some(error) = &result.error {
                        eprintln!("error: {error}");
                    }
                    ExitCode::from(result.exit_code as u8)
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(1)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn journal_sizes_are_kubernetes_quantities() {
        assert_eq!(parse_bytes("64Mi"), Ok(64 << 20));
        assert_eq!(parse_bytes("500k"), Ok(500_000));
        assert_eq!(parse_bytes("1024"), Ok(1024));
        assert!(parse_bytes("0").unwrap_err().contains("not a whole positive number of bytes"));
        assert!(parse_bytes("1.5").is_err());
        assert!(parse_bytes("-1Mi").is_err());
        assert!(parse_bytes("lots").unwrap_err().contains("quantities must match"));
    }

    #[test]
    fn run_takes_the_journal_settings() {
        let cli = Cli::try_parse_from([
            "blueprint-operator",
            "run",
            "--journal",
            "/data/j.jsonl",
            "--journal-max-bytes",
            "1Mi",
        ])
        .unwrap();
        let Command::Run { journal } = cli.command else { panic!("not run") };
        let settings = journal.settings().unwrap();
        assert_eq!(settings.path, PathBuf::from("/data/j.jsonl"));
        assert_eq!((settings.max_bytes, settings.keep), (1 << 20, 3));
        let cli = Cli::try_parse_from(["blueprint-operator", "run"]).unwrap();
        let Command::Run { journal } = cli.command else { panic!("not run") };
        assert_eq!(journal.settings(), None, "no journal unless asked for");
    }
}
