//! The command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
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
    Run,
    /// Offline: what would one reconcile decide for this blueprint on this cluster?
    ///
    /// Exit code 0: nothing to do; 2: changes pending; 1: error or invalid blueprint.
    Plan {
        /// The Blueprint (YAML or JSON).
        #[arg(short = 'f', long = "file")]
        blueprint: PathBuf,
        /// Cluster objects as `kubectl get dogus,components,configmaps,secrets -o yaml` prints them.
        #[arg(long)]
        cluster: PathBuf,
        /// Dogu descriptors as DIR/<namespace>/<name>/<version>.json. Without it, the dependency and
        /// mount checks cannot run and nothing would be applied.
        #[arg(long)]
        descriptors: Option<PathBuf>,
        /// The time of the reconcile (RFC 3339); default: now.
        #[arg(long)]
        now: Option<Timestamp>,
        /// The operator's namespace; default: the Blueprint's, else `ecosystem`.
        #[arg(long)]
        namespace: Option<String>,
        /// The version of the operator that would run the reconcile (for self-upgrades).
        #[arg(long)]
        operator_version: Option<String>,
        /// Output format.
        #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
        output: Format,
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
        #[arg(long)]
        serve: Option<std::net::SocketAddr>,
        /// Give up after this long (500ms, 30s, 2m).
        #[arg(long, default_value = "60s", value_parser = crate::config::parse_duration)]
        timeout: std::time::Duration,
    },
    /// Print a CRD manifest.
    Crd {
        #[arg(value_enum, default_value = "blueprint")]
        which: crd::Which,
    },
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run => {
            let runtime =
                tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime starts");
            match runtime.block_on(crate::run::run()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(message) => {
                    eprintln!("error: {message}");
                    ExitCode::from(1)
                }
            }
        }
        Command::Sandbox { blueprint, cluster, descriptors, serve, timeout } => {
            let runtime =
                tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime starts");
            let args = crate::sandbox::command::SandboxArgs { blueprint, cluster, descriptors, serve, timeout };
            match runtime.block_on(crate::sandbox::command::run(args)) {
                Ok(code) => ExitCode::from(code as u8),
                Err(message) => {
                    eprintln!("error: {message}");
                    ExitCode::from(1)
                }
            }
        }
        Command::Crd { which } => {
            print!("{}", crd::yaml(which));
            ExitCode::SUCCESS
        }
        Command::Plan { blueprint, cluster, descriptors, now, namespace, operator_version, output } => {
            let args = PlanArgs {
                blueprint,
                cluster,
                descriptors,
                now: now.map(|t| Timestamp::from_second(t.as_second()).unwrap_or(t)),
                namespace,
                operator_version,
                format: output,
            };
            match plan::run(&args) {
                Ok(result) => {
                    for warning in &result.warnings {
                        eprintln!("warning: {warning}");
                    }
                    print!("{}", result.stdout);
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
