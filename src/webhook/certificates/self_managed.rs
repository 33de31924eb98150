//! Self-managed mode (the default): the serving certificate and its CA are made here and kept in a
//! Secret of the operator's namespace (`WEBHOOK_SECRET`), which every replica uses, and the CA is
//! written into the CRD's `caBundle` ([`super::ca_bundle`]).
//!
//! - At the start a replica reads the Secret and the CRD's `caBundle` and does what
//!   [`decide_trusted`] says: keeps it (its CAs are all in the CRD already), creates it (two replicas
//!   may race: the loser's create meets `AlreadyExists` and it reads again), or replaces it (expiring,
//!   spoiled, or foreign: a CA the CRD does not trust; an update conditional on the `resourceVersion`
//!   read: a conflict reads again). A new CA goes into the CRD before the Secret that holds it, and
//!   only then is the certificate served.
//! - While running, nothing polls: a watch of that one Secret (a field selector on its name) shows
//!   every replica a renewal another made, and one timer sleeps until this certificate is due for
//!   renewal (30 days before it or its CA expires; plus up to [`JITTER`] so that replicas do not all
//!   renew at once). A Secret deleted, spoiled or replaced by hand is made again at once; a CA the CRD
//!   does not trust is never written into it (issue 27).
//! - A renewal makes a new CA and keeps the previous one in `ca.crt` beside it: the CRD trusts both
//!   before any replica serves the new certificate (each replica writes the CA into the CRD before it
//!   switches), so replicas still serving the old one are trusted meanwhile.
//!
//! API errors while running are logged and retried with a backoff (1 s to 5 min); the webhook keeps
//! serving the certificate it has.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ObjectMeta, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use rustls::sign::CertifiedKey;

use super::ca_bundle::{self, CaBundleTarget};
use super::trust::{Trusted, adoptable_trusted, decide_trusted};
use super::{Decision, Material, ServingNames, assess, issue};
use crate::webhook::tls::CurrentCertificate;

/// The renewal timer fires up to this much after the renewal is due (each replica at its own random
/// point), so that one replica renews and the others take its Secret from their watch.
pub const JITTER: Duration = Duration::from_secs(600);
/// How often the Secret is decided again after another replica's write got in between.
const ATTEMPTS: usize = 5;
/// The longest the renewal timer sleeps at once (tokio's timer holds about two years); it then
/// decides again, on what it holds, without a request.
const LONGEST_SLEEP: Duration = Duration::from_secs(365 * 24 * 3600);
const FIRST_RETRY: Duration = Duration::from_secs(1);
const LAST_RETRY: Duration = Duration::from_secs(300);

/// The time (tests turn it forward).
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// Why the certificate could not be kept; one line, naming the object, never with key material.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    #[error("cannot {verb} the Secret {namespace}/{name}: {source}")]
    Secret { verb: &'static str, namespace: String, name: String, source: kube::Error },
    #[error("the Secret {namespace}/{name} changed {ATTEMPTS} times while it was being written: giving up for now")]
    Contended { namespace: String, name: String },
    #[error("cannot make a certificate: {0}")]
    Issue(#[from] rcgen::Error),
    #[error("the certificate just made does not serve: {0}")]
    Unusable(String),
    #[error("cannot write the webhook's CA into the CRD {crd}: {source}")]
    CaBundle { crd: String, source: kube::Error },
}

/// The certificate a replica serves, as read from (or written to) the Secret.
#[derive(Clone)]
pub struct Held {
    /// The Secret's `resourceVersion` it came with.
    pub resource_version: String,
    /// `ca.crt`: what the CRD's `caBundle` holds.
    pub ca: String,
    pub key: Arc<CertifiedKey>,
    /// When it is to be renewed.
    pub renew_at: Timestamp,
}

/// The self-managed certificate of one replica.
pub struct SelfManaged {
    secrets: Api<Secret>,
    crds: Api<CustomResourceDefinition>,
    namespace: String,
    secret: String,
    names: ServingNames,
    target: CaBundleTarget,
    clock: Clock,
    jitter: Duration,
}

impl SelfManaged {
    /// The certificate for `names`, kept in the Secret `secret` of `namespace`, its CA written into
    /// `target`.
    pub fn new(client: Client, namespace: &str, secret: &str, names: ServingNames, target: CaBundleTarget) -> Self {
        SelfManaged {
            secrets: Api::namespaced(client.clone(), namespace),
            crds: Api::all(client),
            namespace: namespace.to_owned(),
            secret: secret.to_owned(),
            names,
            target,
            clock: Arc::new(Timestamp::now),
            jitter: JITTER,
        }
    }

    /// Another clock (the tests').
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Another bound of the renewal timer's random delay (the tests': none).
    pub fn with_jitter(mut self, jitter: Duration) -> Self {
        self.jitter = jitter;
        self
    }

    /// Once: the Secret read and kept, made or replaced as [`decide_trusted`] says; its CA written
    /// into the CRD. What to serve, and when to renew it. A CA made here goes into the CRD *before*
    /// the Secret holding it is written: the CRD is the anchor by which every replica tells the
    /// operator's material from anyone else's ([`super::trust`]).
    pub async fn ensure(&self) -> Result<Held, CertificateError> {
        for _ in 0..ATTEMPTS {
            let read = self.secrets.get_opt(&self.secret).await.map_err(|e| self.secret_error("read", e))?;
            let trusted = self.trusted().await?;
            let now = (self.clock)();
            let written = match decide_trusted(read.as_ref(), &self.names, now, &trusted) {
                Decision::Keep(assessment) => {
                    let material = read.as_ref().map(Material::from_secret).and_then(Result::ok);
                    let held = Held {
                        resource_version: resource_version(read.as_ref()),
                        ca: material.map(|m| m.ca).unwrap_or_default(),
                        key: assessment.key.clone(),
                        renew_at: assessment.renew_at(),
                    };
                    self.trust(&held.ca).await?;
                    return Ok(held);
                }
                Decision::Create => {
                    let material = issue(&self.names, now, trusted.current(now).as_deref())?;
                    self.trust(&material.ca).await?;
                    match self.secrets.create(&PostParams::default(), &self.new_secret(&material)).await {
                        Ok(created) => {
                            tracing::info!(secret = %self.secret, "created the webhook's certificate and CA");
                            (created, material)
                        }
                        // Another replica created it first: use that one.
                        Err(kube::Error::Api(status)) if status.is_already_exists() => continue,
                        Err(error) => return Err(self.secret_error("create", error)),
                    }
                }
                Decision::Replace { resource_version, reason, previous_ca } => {
                    let previous = previous_ca.or_else(|| trusted.current(now));
                    let material = issue(&self.names, now, previous.as_deref())?;
                    self.trust(&material.ca).await?;
                    let mut replaced = read.expect("only a Secret that was read is replaced");
                    replaced.data = Some(material.data());
                    replaced.string_data = None;
                    replaced.metadata.resource_version = Some(resource_version);
                    match self.secrets.replace(&self.secret, &PostParams::default(), &replaced).await {
                        Ok(written) => {
                            tracing::info!(secret = %self.secret, %reason, "renewed the webhook's certificate and CA");
                            (written, material)
                        }
                        // Another replica wrote it since it was read: decide again on what it wrote.
                        Err(kube::Error::Api(status)) if status.is_conflict() => continue,
                        Err(error) => return Err(self.secret_error("update", error)),
                    }
                }
            };
            let (secret, material) = written;
            let assessment = assess(&material, &self.names, now).map_err(CertificateError::Unusable)?;
            return Ok(Held {
                resource_version: resource_version(Some(&secret)),
                ca: material.ca,
                key: assessment.key.clone(),
                renew_at: assessment.renew_at(),
            });
        }
        Err(CertificateError::Contended { namespace: self.namespace.clone(), name: self.secret.clone() })
    }

    /// Keeps `current` serving the Secret's certificate: [`ensure`](Self::ensure) (retried until it
    /// succeeds), then the watch and the renewal timer. Runs until it is dropped.
    pub async fn run(self, current: Arc<CurrentCertificate>) {
        let mut held = self.ensure_until_done().await;
        current.set(held.key.clone());
        let config = watcher::Config::default().fields(&format!("metadata.name={}", self.secret));
        // One streaming list where the server serves them (the caches' way, with their fallback).
        let changes = crate::controller::InitialLists::default().watch(self.secrets.clone(), config);
        let mut changes = changes.default_backoff().boxed();
        // Whether the Secret was seen since the last relist began (a relist reports no deletion).
        let mut listed = true;
        loop {
            let due = self.until(held.renew_at);
            let next = tokio::select! {
                () = tokio::time::sleep(due) => {
                    if (self.clock)() < held.renew_at {
                        continue; // the longest sleep ended before the renewal
                    }
                    tracing::info!(secret = %self.secret, "the webhook's certificate is due for renewal");
                    Some(self.ensure_until_done().await)
                }
                event = changes.next() => match event {
                    Some(Ok(watcher::Event::Init)) => {
                        listed = false;
                        None
                    }
                    Some(Ok(watcher::Event::Apply(secret) | watcher::Event::InitApply(secret))) => {
                        listed = true;
                        self.changed(&held, &secret).await
                    }
                    Some(Ok(watcher::Event::Delete(_))) => {
                        tracing::warn!(secret = %self.secret, "the webhook's Secret was deleted: making a new one");
                        Some(self.ensure_until_done().await)
                    }
                    Some(Ok(watcher::Event::InitDone)) if !listed => {
                        tracing::warn!(secret = %self.secret, "the webhook's Secret is gone: making a new one");
                        Some(self.ensure_until_done().await)
                    }
                    Some(Ok(watcher::Event::InitDone)) => None,
                    Some(Err(error)) => {
                        tracing::warn!(%error, secret = %self.secret, "watching the webhook's Secret (retrying)");
                        None
                    }
                    None => return,
                },
            };
            if let Some(next) = next {
                current.set(next.key.clone());
                held = next;
            }
        }
    }

    /// A Secret the watch shows: another replica's renewal (served once its CA is in the CRD: it
    /// is, the other replica wrote it there first), or anything else, a hand edit or a foreign CA
    /// (replaced).
    async fn changed(&self, held: &Held, secret: &Secret) -> Option<Held> {
        let version = resource_version(Some(secret));
        if version == held.resource_version {
            return None;
        }
        let mut wait = FIRST_RETRY;
        let trusted = loop {
            match self.trusted().await {
                Ok(trusted) => break trusted,
                Err(error) => {
                    tracing::error!(%error, retry_in = ?wait, "cannot tell whether the changed webhook Secret is the operator's");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(LAST_RETRY);
                }
            }
        };
        match adoptable_trusted(secret, &self.names, (self.clock)(), &trusted) {
            Ok(assessment) => {
                if !assessment.missing.is_empty() {
                    let missing: Vec<String> = assessment.missing.iter().map(ToString::to_string).collect();
                    tracing::warn!(missing = %missing.join(", "), "another replica's webhook certificate lacks names this replica wants; serving it until its renewal");
                }
                let ca = Material::from_secret(secret).map(|m| m.ca).unwrap_or_default();
                let renew_at = assessment.renew_at();
                let next = Held { resource_version: version, ca, key: assessment.key, renew_at };
                let mut wait = FIRST_RETRY;
                while let Err(error) = self.trust(&next.ca).await {
                    tracing::error!(%error, retry_in = ?wait, "the renewed webhook certificate is not served until its CA is in the CRD");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(LAST_RETRY);
                }
                tracing::info!(secret = %self.secret, "serving the webhook certificate another replica renewed");
                Some(next)
            }
            Err(reason) => {
                tracing::warn!(secret = %self.secret, %reason, "the webhook's Secret was changed and is not taken: replacing it");
                Some(self.ensure_until_done().await)
            }
        }
    }

    /// [`ensure`](Self::ensure) until it succeeds, with a backoff; every failure logged.
    async fn ensure_until_done(&self) -> Held {
        let mut wait = FIRST_RETRY;
        loop {
            match self.ensure().await {
                Ok(held) => return held,
                Err(error) => {
                    tracing::error!(%error, retry_in = ?wait, "the webhook has no certificate to serve yet");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(LAST_RETRY);
                }
            }
        }
    }

    /// `ca` (a `ca.crt` this process made, or one the CRD trusts already) in the CRD.
    async fn trust(&self, ca: &str) -> Result<(), CertificateError> {
        ca_bundle::inject(&self.crds, &self.target, ca)
            .await
            .map(|_| ())
            .map_err(|source| CertificateError::CaBundle { crd: self.target.crd.clone(), source })
    }

    /// What the CRD trusts now.
    async fn trusted(&self) -> Result<Trusted, CertificateError> {
        super::trust::read(&self.crds, &self.target)
            .await
            .map_err(|source| CertificateError::CaBundle { crd: self.target.crd.clone(), source })
    }

    /// How long until `renew_at` (by this replica's clock), plus its random delay.
    fn until(&self, renew_at: Timestamp) -> Duration {
        let left = Duration::try_from(renew_at.duration_since((self.clock)())).unwrap_or(Duration::ZERO);
        if left.is_zero() {
            return Duration::ZERO;
        }
        let jitter = u64::try_from(self.jitter.as_millis()).unwrap_or(u64::MAX);
        let delay = if jitter == 0 { 0 } else { random() % jitter };
        (left + Duration::from_millis(delay)).min(LONGEST_SLEEP)
    }

    fn new_secret(&self, material: &Material) -> Secret {
        let labels = [
            ("app.kubernetes.io/name", "k8s-blueprint-operator"),
            ("app.kubernetes.io/component", "conversion-webhook"),
        ];
        Secret {
            metadata: ObjectMeta {
                name: Some(self.secret.clone()),
                namespace: Some(self.namespace.clone()),
                labels: Some(
                    labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect::<BTreeMap<_, _>>(),
                ),
                ..ObjectMeta::default()
            },
            type_: Some("kubernetes.io/tls".to_owned()),
            data: Some(material.data()),
            ..Secret::default()
        }
    }

    fn secret_error(&self, verb: &'static str, source: kube::Error) -> CertificateError {
        CertificateError::Secret { verb, namespace: self.namespace.clone(), name: self.secret.clone(), source }
    }
}

fn resource_version(secret: Option<&Secret>) -> String {
    secret.and_then(|s| s.metadata.resource_version.clone()).unwrap_or_default()
}

fn random() -> u64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the operating system provides randomness");
    u64::from_le_bytes(bytes)
}
