//! `blueprint-operator run`: the in-cluster operator.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::FutureExt;
use kube::client::ClientBuilder;
use tokio::signal::unix::{Signal, SignalKind, signal};

use blueprint_machine::naming::LEASE;

use crate::config::{Settings, SettingsError};
use crate::controller::{self, Options};
use crate::descriptors::RegistrySettingsError;
use crate::descriptors::RemoteRegistry;
use crate::files::FileError;
use crate::journal::{JournalSettings, JournalWriter};
use crate::leader::{self, Leadership, LeaseTiming, WriteGuard};
use crate::metrics::Metrics;
use crate::webhook::{self, WebhookError};
use crate::{http, telemetry};

/// A client whose every request is counted by verb in the metrics.
pub fn client(config: kube::Config, metrics: Arc<Metrics>) -> Result<kube::Client, kube::Error> {
    Ok(ClientBuilder::try_from(config)?.with_layer(&counting(metrics)).build())
}

/// A client like [`client`] that sends no write unless `guard` allows it (leader election).
pub fn guarded_client(
    config: kube::Config,
    metrics: Arc<Metrics>,
    guard: WriteGuard,
) -> Result<kube::Client, kube::Error> {
    Ok(ClientBuilder::try_from(config)?.with_layer(&counting(metrics)).with_layer(&leader::guard_layer(guard)).build())
}

/// A client layer counting every request in `metrics` (by verb).
pub fn counting(
    metrics: Arc<Metrics>,
) -> tower::util::MapRequestLayer<
    impl Fn(::http::Request<kube::client::Body>) -> ::http::Request<kube::client::Body> + Clone,
> {
    tower::util::MapRequestLayer::new(move |request: ::http::Request<kube::client::Body>| {
        metrics.count_request(&request);
        request
    })
}

/// How long giving the Lease up may take at shutdown.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

/// SIGTERM and SIGINT, handled by the operator from the moment [`Termination::install`] returns:
/// neither ends the process by its default action any more. `run` installs it as its first
/// instruction, so that a signal the kubelet sends early in the start (while the client connects,
/// the webhook starts, the caches list) is a shutdown like any other, not a kill (exit status 15).
pub struct Termination {
    term: Signal,
    interrupt: Signal,
}

impl Termination {
    /// Takes both signals over (within a tokio runtime). A signal that arrives from now on is kept
    /// until [`requested`](Self::requested) looks.
    pub fn install() -> Self {
        Termination {
            term: signal(SignalKind::terminate()).expect("SIGTERM can be handled"),
            interrupt: signal(SignalKind::interrupt()).expect("SIGINT can be handled"),
        }
    }

    /// Resolves on the first SIGTERM or SIGINT since [`install`](Self::install). A second signal ends
    /// the process at once (exit code 130), whatever it is doing.
    pub async fn requested(self) {
        let Termination { mut term, mut interrupt } = self;
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: finishing in-flight reconciles (a second signal stops at once)"),
            _ = interrupt.recv() => tracing::info!("interrupted: finishing in-flight reconciles (a second signal stops at once)"),
        }
        tokio::spawn(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = interrupt.recv() => {}
            }
            tracing::warn!("second signal: stopping now");
            std::process::exit(130);
        });
    }
}

/// Why `run` stopped: at the start (a setting, a file, the client, a port, the journal) or because
/// this replica lost the Lease. Each message is one line that names what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Registry(#[from] RegistrySettingsError),
    #[error("the kubeconfig {0}")]
    Kubeconfig(FileError),
    #[error("cannot configure the Kubernetes client: {0}")]
    ClientConfig(#[from] kube::config::InferConfigError),
    #[error("cannot create the Kubernetes client: {0}")]
    Client(#[source] kube::Error),
    #[error("cannot listen on {address}: {source}")]
    Listen { address: std::net::SocketAddr, source: std::io::Error },
    #[error(transparent)]
    Webhook(#[from] WebhookError),
    #[error("cannot open the journal {path}: {source}")]
    Journal { path: String, source: std::io::Error },
    #[error("lost the leader lease; stopping so that only the leader writes")]
    LostLease,
}

pub async fn run(journal: Option<JournalSettings>) -> Result<(), RunError> {
    // First of all: from here on SIGTERM and SIGINT are a shutdown, wherever the start is.
    let terminated = Termination::install().requested().shared();
    let settings = Settings::from_env()?;
    telemetry::init(&settings.log_level, settings.log_format);
    tracing::info!(version = %settings.operator.version, namespace = %settings.namespace, "starting");

    // The registry settings are checked before anything connects: a typo stops the start at once.
    let registry = match &settings.registry {
        Some(remote) => {
            let registry = RemoteRegistry::new(remote)?;
            tracing::info!(endpoint = registry.endpoint(), schema = %remote.schema, proxy = remote.proxy.is_some(), "remote dogu registry");
            Some(registry)
        }
        None => {
            tracing::warn!(
                "DOGU_REGISTRY_ENDPOINT is not set: descriptors come from the local dogu registry only, and blueprints with other dogus cannot be validated"
            );
            None
        }
    };
    let metrics = Metrics::shared();
    check_kubeconfig_size()?;
    let config = kube::Config::infer().await?;
    let client = client(config.clone(), metrics.clone()).map_err(RunError::Client)?;

    // The conversion webhook serves on every replica, from the start: the API server needs it for every
    // v2 read, whoever leads (and the operator's own reads and writes are v3: it needs none).
    let webhook = match &settings.webhook {
        Some(webhook) => Some(webhook::start(webhook, client.clone(), &settings.namespace).await?),
        None => {
            tracing::info!("WEBHOOK_ENABLED=false: the conversion webhook is not served (v2 clients get errors)");
            None
        }
    };
    // Ready: the webhook has a certificate to serve, and the caches are synced; a standby, which waits
    // for the Lease and has no caches, is ready with its webhook (the webhook Service sends to ready
    // replicas only, and a rollout waits for new replicas, which start as standbys, to be ready).
    // A leader that waits for this operator's CRDs (a Go operator's still in place) is ready likewise
    // (controller::started).
    let started = Arc::new(controller::Started::default());
    let standby = Arc::new(AtomicBool::new(settings.leader_election));
    let mut readiness = http::Readiness::default();
    if let Some(certificate) = webhook {
        readiness = readiness.with("webhook has no certificate yet", move || certificate.is_set());
    }
    let (probed, waiting) = (started.clone(), http::flag(&standby));
    let readiness =
        readiness.with("caches not synced", move || probed.synced() || probed.waiting_for_crds() || waiting());
    let router = http::router(readiness, metrics.clone());
    let mut addresses = vec![settings.health_address];
    if settings.metrics_address != settings.health_address {
        addresses.push(settings.metrics_address);
    }
    for address in addresses {
        let router = router.clone();
        let listener =
            tokio::net::TcpListener::bind(address).await.map_err(|source| RunError::Listen { address, source })?;
        tokio::spawn(http::serve(listener, router));
    }

    let journal = match journal {
        Some(settings) => {
            let shown = settings.path.display().to_string();
            let journal = JournalWriter::start(settings, metrics.clone())
                .map_err(|source| RunError::Journal { path: shown.clone(), source })?;
            tracing::info!(journal = %shown, "recording every reconcile");
            Some(Arc::new(journal))
        }
        None => None,
    };
    // Whatever ends the controller, the records queued by then reach the disk.
    let _flush = FlushOnDrop(journal.clone());
    let options = Options {
        namespace: settings.namespace.clone(),
        identity: settings.operator.clone(),
        debounce: settings.debounce,
        registry,
        descriptor_cache: settings.descriptor_cache,
        journal,
        clock: None,
    };
    if !settings.leader_election {
        // The only replica writes: it leads.
        metrics.leader.set(1);
        controller::run_controller(client, options, metrics, started, terminated).await;
        return Ok(());
    }

    // The Lease is kept with its own client; everything else writes only while this replica leads.
    let mut leadership = Leadership::start(
        client,
        &settings.namespace,
        LEASE,
        &settings.identity,
        &settings.operator.version,
        LeaseTiming::default(),
    );
    tracing::info!(identity = %settings.identity, "waiting to lead");
    let mut terminated = terminated;
    tokio::select! {
        () = leadership.acquired() => {}
        _ = &mut terminated => {
            leadership.release(RELEASE_TIMEOUT).await;
            return Ok(());
        }
    }
    metrics.leader.set(1);
    standby.store(false, Ordering::Relaxed);
    let guarded = guarded_client(config, metrics.clone(), leadership.guard()).map_err(RunError::Client)?;
    let lost = leadership.lost();
    let (stop_sender, stop_receiver) = tokio::sync::oneshot::channel::<bool>();
    let leading = metrics.clone();
    let stop = async move {
        let lost_leadership = tokio::select! {
            _ = terminated => false,
            _ = lost => true,
        };
        if lost_leadership {
            // The guard refuses every write from now on, whatever reconciles are still in flight.
            leading.leader.set(0);
        }
        let _ = stop_sender.send(lost_leadership);
    };
    controller::run_controller(guarded, options, metrics.clone(), started, stop).await;
    metrics.leader.set(0);
    // Given up at once, so that a standby takes over without waiting for the Lease to expire.
    leadership.release(RELEASE_TIMEOUT).await;
    match stop_receiver.await {
        Ok(true) => Err(RunError::LostLease),
        _ => Ok(()),
    }
}

/// The kubeconfig files the client will read (`KUBECONFIG`, else `~/.kube/config`) must be of a
/// kubeconfig's size: kube reads them whole.
fn check_kubeconfig_size() -> Result<(), RunError> {
    let paths: Vec<std::path::PathBuf> = match std::env::var_os("KUBECONFIG") {
        Some(list) => std::env::split_paths(&list).filter(|p| !p.as_os_str().is_empty()).collect(),
        None => {
            std::env::var_os("HOME").map(|home| std::path::Path::new(&home).join(".kube/config")).into_iter().collect()
        }
    };
    for path in paths.iter().filter(|p| p.exists()) {
        crate::files::read(path, crate::files::KUBECONFIG_LIMIT).map_err(RunError::Kubeconfig)?;
    }
    Ok(())
}

/// Writes out the journal's queue when `run` returns.
struct FlushOnDrop(Option<Arc<JournalWriter>>);

impl Drop for FlushOnDrop {
    fn drop(&mut self) {
        if let Some(journal) = &self.0 {
            journal.flush();
        }
    }
}
