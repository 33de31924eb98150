//! Dogu descriptors (`dogu.json`) for dynamic validation, in three layers, cheapest first:
//!
//! 1. an in-process cache (`lru`): descriptors are immutable per (qualified name, version), so a hit is
//!    kept until evicted; a "not found" answer is kept for a short time; "unavailable" never is;
//! 2. the local dogu registry (`dogu-spec-<dogu>` ConfigMaps, read from the controller's cache);
//! 3. the remote dogu registry over HTTP, one request per key however many lookups wait for it
//!    (single flight); a hit is added to the local registry.
//!
//! A steady-state reconcile is answered by layer 1 and makes no request at all.

pub mod local;
pub mod remote;
pub mod tls;

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use lru::LruCache;
use tokio::time::Instant;

use blueprint_machine::model::DoguDescriptor;
use blueprint_machine::observation::DescriptorLookup;

pub use local::LocalStore;
pub use remote::{RemoteError, RemoteRegistry, RemoteSettings, UrlSchema};

use crate::metrics::Metrics;

/// Where the controller gets descriptors from.
pub trait DescriptorSource: Send + Sync {
    /// The descriptor of `name` (`namespace/simple`) in `version`.
    fn lookup<'a>(&'a self, name: &'a str, version: &'a str) -> BoxFuture<'a, DescriptorLookup>;
}

/// The sizes and lifetimes of the in-process cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSettings {
    /// Descriptors kept (and, separately, as many "not found" answers).
    pub capacity: NonZeroUsize,
    /// How long a "not found" answer is believed.
    pub not_found_ttl: Duration,
}

impl Default for CacheSettings {
    fn default() -> Self {
        CacheSettings { capacity: NonZeroUsize::new(512).expect("not zero"), not_found_ttl: Duration::from_secs(30) }
    }
}

type Key = (String, String);
type Flight = Shared<BoxFuture<'static, DescriptorLookup>>;

/// The three layers behind one [`DescriptorSource`].
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

struct Inner {
    found: Mutex<LruCache<Key, DoguDescriptor>>,
    /// Until when a "not found" answer holds.
    not_found: Mutex<LruCache<Key, Instant>>,
    local: LocalStore,
    remote: Option<RemoteRegistry>,
    in_flight: Mutex<HashMap<Key, Flight>>,
    not_found_ttl: Duration,
    metrics: Arc<Metrics>,
}

impl Registry {
    pub fn new(local: LocalStore, remote: Option<RemoteRegistry>, cache: CacheSettings, metrics: Arc<Metrics>) -> Self {
        Registry {
            inner: Arc::new(Inner {
                found: Mutex::new(LruCache::new(cache.capacity)),
                not_found: Mutex::new(LruCache::new(cache.capacity)),
                local,
                remote,
                in_flight: Mutex::new(HashMap::new()),
                not_found_ttl: cache.not_found_ttl,
                metrics,
            }),
        }
    }
}

impl DescriptorSource for Registry {
    fn lookup<'a>(&'a self, name: &'a str, version: &'a str) -> BoxFuture<'a, DescriptorLookup> {
        let key = (name.to_owned(), version.to_owned());
        let inner = self.inner.clone();
        async move {
            if let Some(answer) = inner.remembered(&key) {
                return answer;
            }
            if let Some(descriptor) = inner.local.get(name, version) {
                inner.metrics.count_descriptor_lookup("local", "hit");
                inner.found.lock().expect("not poisoned").put(key, descriptor.clone());
                return DescriptorLookup::Found { descriptor };
            }
            inner.metrics.count_descriptor_lookup("local", "miss");
            if inner.remote.is_none() {
                return DescriptorLookup::Unavailable {
                    reason: format!(
                        "the local dogu registry has no descriptor of {name} {version} and no remote dogu registry is configured (DOGU_REGISTRY_ENDPOINT)"
                    ),
                };
            }
            Inner::fly(&inner, key).await
        }
        .boxed()
    }
}

impl Inner {
    /// The in-process answer, if there is one: a descriptor, or a "not found" that has not expired.
    fn remembered(&self, key: &Key) -> Option<DescriptorLookup> {
        if let Some(descriptor) = self.found.lock().expect("not poisoned").get(key) {
            self.metrics.count_descriptor_lookup("memory", "hit");
            return Some(DescriptorLookup::Found { descriptor: descriptor.clone() });
        }
        let mut not_found = self.not_found.lock().expect("not poisoned");
        match not_found.get(key) {
            Some(until) if Instant::now() < *until => {
                self.metrics.count_descriptor_lookup("memory", "notFoundHit");
                return Some(DescriptorLookup::NotFound);
            }
            Some(_) => {
                not_found.pop(key);
            }
            None => {}
        }
        self.metrics.count_descriptor_lookup("memory", "miss");
        None
    }

    /// Joins the request in flight for `key`, or starts it. The flight records its answer in the
    /// cache before it leaves the table, so a later lookup finds one or the other.
    fn fly(inner: &Arc<Inner>, key: Key) -> Flight {
        let mut in_flight = inner.in_flight.lock().expect("not poisoned");
        in_flight
            .entry(key.clone())
            .or_insert_with(|| {
                let inner = inner.clone();
                async move {
                    let answer = inner.fetch(&key).await;
                    inner.in_flight.lock().expect("not poisoned").remove(&key);
                    answer
                }
                .boxed()
                .shared()
            })
            .clone()
    }

    async fn fetch(&self, key: &Key) -> DescriptorLookup {
        let remote = self.remote.as_ref().expect("only flown with a remote registry");
        let (name, version) = (&key.0, &key.1);
        let started = Instant::now();
        let result = remote.fetch(name, version).await;
        let outcome = match &result {
            Ok(_) => "found",
            Err(error) => error.outcome(),
        };
        self.metrics.observe_registry_request(outcome, started.elapsed());
        match result {
            Ok(fetched) => {
                self.found.lock().expect("not poisoned").put(key.clone(), fetched.descriptor.clone());
                // Only a cache fill: a failure costs a remote request later, not this reconcile.
                match self.local.add(&fetched.descriptor, &fetched.text).await {
                    Ok(added) => tracing::debug!(dogu = %name, %version, ?added, "local dogu registry"),
                    Err(error) => {
                        tracing::info!(dogu = %name, %version, %error, "cannot add the descriptor to the local dogu registry")
                    }
                }
                DescriptorLookup::Found { descriptor: fetched.descriptor }
            }
            Err(RemoteError::NotFound { .. }) => {
                let until = Instant::now() + self.not_found_ttl;
                self.not_found.lock().expect("not poisoned").put(key.clone(), until);
                DescriptorLookup::NotFound
            }
            Err(error) => {
                tracing::warn!(dogu = %name, %version, %error, "dogu registry unavailable");
                DescriptorLookup::Unavailable { reason: error.to_string() }
            }
        }
    }
}
