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

use blueprint_machine::descriptor::DoguDescriptor;
use blueprint_machine::observation::DescriptorLookup;

pub use local::LocalStore;
pub use remote::{RegistrySettingsError, RemoteError, RemoteRegistry, RemoteSettings, UrlSchema};

use crate::metrics::Metrics;

/// Where the controller gets descriptors from.
pub trait DescriptorSource: Send + Sync {
    /// The descriptor of `name` (`namespace/simple`) in `version`.
    fn lookup<'a>(&'a self, name: &'a str, version: &'a str) -> BoxFuture<'a, DescriptorLookup>;

    /// A reconcile is about to look up `count` descriptors: a cache should keep at least that many.
    fn expect_lookups(&self, _count: usize) {}
}

/// The sizes and lifetimes of the in-process cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSettings {
    /// Descriptors kept. "Not found" answers are kept apart, [`NOT_FOUND_FACTOR`] times as many (each
    /// is a name, a version and a time): a blueprint full of unknown dogus must not push them out
    /// before they are asked for again, nor push out the descriptors.
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

/// How long a local dogu registry write may take before it is given up (it is only a cache fill).
const LOCAL_ADD_TIMEOUT: Duration = Duration::from_secs(10);

/// How many more "not found" answers than descriptors are kept.
pub const NOT_FOUND_FACTOR: usize = 16;

/// The remote dogu registry is asked at most [`REQUEST_BURST`] times at once and [`REQUESTS_PER_SECOND`]
/// times a second after that (a token bucket), however many dogus a blueprint names: a blueprint of
/// 5,000 dogus the registry does not know once sent 420 requests a second for as long as it existed.
/// A lookup beyond the budget is answered "unavailable" at once (validity unknown, decided again with
/// backoff); nothing waits inside a reconcile. The burst covers a fresh install of a thousand dogus.
pub const REQUEST_BURST: u32 = 1024;
pub const REQUESTS_PER_SECOND: u32 = 32;

/// At most this many requests to the remote dogu registry, and writes to the local one, at a time. A
/// blueprint of a thousand dogus otherwise opens a thousand connections at once (each with its own
/// buffers: hundreds of MiB), and a registry may rate-limit such bursts.
const REMOTE_CONCURRENCY: usize = 8;
const LOCAL_WRITE_CONCURRENCY: usize = 4;

/// The three layers behind one [`DescriptorSource`].
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

struct Inner {
    found: Mutex<LruCache<Key, Arc<DoguDescriptor>>>,
    /// Until when a "not found" answer holds.
    not_found: Mutex<LruCache<Key, Instant>>,
    local: LocalStore,
    remote: Option<RemoteRegistry>,
    /// Remote requests under way. Lock order: `in_flight` before `found` and `not_found`.
    in_flight: Mutex<HashMap<Key, Flight>>,
    /// Local dogu registry writes under way (see [`Registry::settled`]).
    adding: tokio::sync::watch::Sender<usize>,
    not_found_ttl: Duration,
    metrics: Arc<Metrics>,
    remote_permits: tokio::sync::Semaphore,
    local_permits: tokio::sync::Semaphore,
    /// The remote registry's request budget.
    budget: Mutex<TokenBucket>,
}

/// A token bucket on tokio's clock (so that tests on a paused clock see it refill).
struct TokenBucket {
    tokens: f64,
    updated: Instant,
}

impl TokenBucket {
    fn full() -> Self {
        TokenBucket { tokens: f64::from(REQUEST_BURST), updated: Instant::now() }
    }

    /// Takes a token if there is one.
    fn take(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.updated).as_secs_f64() * f64::from(REQUESTS_PER_SECOND);
        self.tokens = (self.tokens + refill).min(f64::from(REQUEST_BURST));
        self.updated = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

impl Registry {
    pub fn new(local: LocalStore, remote: Option<RemoteRegistry>, cache: CacheSettings, metrics: Arc<Metrics>) -> Self {
        Registry {
            inner: Arc::new(Inner {
                found: Mutex::new(grown_on_demand(cache.capacity)),
                not_found: Mutex::new(grown_on_demand(
                    cache.capacity.saturating_mul(NonZeroUsize::new(NOT_FOUND_FACTOR).expect("not zero")),
                )),
                local,
                remote,
                in_flight: Mutex::new(HashMap::new()),
                adding: tokio::sync::watch::Sender::new(0),
                not_found_ttl: cache.not_found_ttl,
                metrics,
                remote_permits: tokio::sync::Semaphore::new(REMOTE_CONCURRENCY),
                local_permits: tokio::sync::Semaphore::new(LOCAL_WRITE_CONCURRENCY),
                budget: Mutex::new(TokenBucket::full()),
            }),
        }
    }

    /// Resolves when no local dogu registry write is under way (tests, shutdown).
    pub async fn settled(&self) {
        let mut adding = self.inner.adding.subscribe();
        let _ = adding.wait_for(|count| *count == 0).await;
    }
}

/// An LRU cache of at most `capacity` entries that allocates for the entries it holds. `LruCache::new`
/// reserves its whole capacity up front: for the not-found cache's 8,192 entries, 280 KB of hash table
/// for names that are almost never missing.
fn grown_on_demand<K: std::hash::Hash + Eq, V>(capacity: NonZeroUsize) -> LruCache<K, V> {
    let mut cache = LruCache::new(NonZeroUsize::MIN);
    cache.resize(capacity);
    cache
}

impl DescriptorSource for Registry {
    /// Grows the in-process cache to hold one blueprint's descriptors. Every reconcile looks them all up
    /// in the same order, and an LRU cache smaller than that misses every time: a 1,000-dogu blueprint
    /// against the default 512 parsed each `dogu.json` from the local registry again, every reconcile.
    /// The observation holds them all anyway, and the cache shares them with it (`Arc`), so this costs
    /// no more memory than a reconcile already takes; it does not shrink again.
    fn expect_lookups(&self, count: usize) {
        let mut found = self.inner.found.lock().expect("not poisoned");
        if let Some(count) = NonZeroUsize::new(count).filter(|count| *count > found.cap()) {
            found.resize(count);
        }
    }

    fn lookup<'a>(&'a self, name: &'a str, version: &'a str) -> BoxFuture<'a, DescriptorLookup> {
        let key = (name.to_owned(), version.to_owned());
        let inner = self.inner.clone();
        async move {
            if let Some(answer) = inner.remembered(&key) {
                inner.metrics.count_descriptor_lookup("memory", answer.1);
                return answer.0;
            }
            inner.metrics.count_descriptor_lookup("memory", "miss");
            if let Some(descriptor) = inner.local.get(name, version) {
                inner.metrics.count_descriptor_lookup("local", "hit");
                let descriptor = Arc::new(descriptor);
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
    /// The in-process answer, if there is one: a descriptor, or a "not found" that has not expired;
    /// with the metric's result label.
    fn remembered(&self, key: &Key) -> Option<(DescriptorLookup, &'static str)> {
        if let Some(descriptor) = self.found.lock().expect("not poisoned").get(key) {
            return Some((DescriptorLookup::Found { descriptor: descriptor.clone() }, "hit"));
        }
        let mut not_found = self.not_found.lock().expect("not poisoned");
        match not_found.get(key) {
            Some(until) if Instant::now() < *until => Some((DescriptorLookup::NotFound, "notFoundHit")),
            Some(_) => {
                not_found.pop(key);
                None
            }
            None => None,
        }
    }

    /// Joins the request in flight for `key`, or starts one. The request runs as its own task, so a
    /// lookup that is dropped (a cancelled reconcile) neither stops it nor leaves it half done. The
    /// task records its answer under the table's lock and only then leaves the table, and a new flight
    /// is only started after checking the cache under that lock: a lookup finds the flight or its
    /// answer, and a key that is answered from the cache is never asked twice.
    fn fly(inner: &Arc<Inner>, key: Key) -> Flight {
        let mut in_flight = inner.in_flight.lock().expect("not poisoned");
        if let Some(flight) = in_flight.get(&key) {
            return flight.clone();
        }
        if let Some((answer, _)) = inner.remembered(&key) {
            return futures::future::ready(answer).boxed().shared();
        }
        if !inner.budget.lock().expect("not poisoned").take() {
            inner.metrics.registry_requests_deferred.inc();
            let reason = format!(
                "the dogu registry request budget is used up ({REQUEST_BURST} at once, then {REQUESTS_PER_SECOND} a second): {} {} is looked up later",
                key.0, key.1
            );
            return futures::future::ready(DescriptorLookup::Unavailable { reason }).boxed().shared();
        }
        let task = tokio::spawn({
            let inner = inner.clone();
            let key = key.clone();
            async move {
                // Leaves the table even if the fetch panics.
                let _leave = Leave { inner: inner.clone(), key: key.clone() };
                inner.fetch(&key).await
            }
        });
        let flight = task
            .map(|joined| {
                joined.unwrap_or_else(|error| DescriptorLookup::Unavailable {
                    reason: format!("the descriptor lookup failed: {error}"),
                })
            })
            .boxed()
            .shared();
        in_flight.insert(key, flight.clone());
        flight
    }

    async fn fetch(self: &Arc<Self>, key: &Key) -> DescriptorLookup {
        let remote = self.remote.as_ref().expect("only flown with a remote registry");
        let (name, version) = (&key.0, &key.1);
        let result = {
            let _permit = self.remote_permits.acquire().await.expect("never closed");
            let started = Instant::now();
            let result = remote.fetch(name, version).await;
            let outcome = match &result {
                Ok(_) => "found",
                Err(error) => error.outcome(),
            };
            let took = started.elapsed();
            self.metrics.observe_registry_request(outcome, took);
            tracing::debug!(dogu = %name, %version, outcome, ?took, "remote dogu registry");
            result
        };
        // Recorded under the flight table's lock (see `fly`); the flight leaves the table afterwards.
        let in_flight = self.in_flight.lock().expect("not poisoned");
        let answer = match result {
            Ok(fetched) => {
                let descriptor = Arc::new(fetched.descriptor);
                self.found.lock().expect("not poisoned").put(key.clone(), descriptor.clone());
                self.add_locally(descriptor.clone(), fetched.text);
                DescriptorLookup::Found { descriptor }
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
        };
        drop(in_flight);
        answer
    }

    /// Adds a fetched descriptor to the local dogu registry in the background: only a cache fill, which
    /// no reconcile waits for; a failure costs a remote request later.
    fn add_locally(self: &Arc<Self>, descriptor: Arc<DoguDescriptor>, text: String) {
        self.adding.send_modify(|count| *count += 1);
        let inner = self.clone();
        tokio::spawn(async move {
            let (name, version) = (&descriptor.name, &descriptor.version);
            let _permit = inner.local_permits.acquire().await.expect("never closed");
            match tokio::time::timeout(LOCAL_ADD_TIMEOUT, inner.local.add(&descriptor, &text)).await {
                Ok(Ok(added)) => tracing::debug!(dogu = %name, %version, %added, "local dogu registry"),
                Ok(Err(error)) => {
                    tracing::info!(dogu = %name, %version, %error, "cannot add the descriptor to the local dogu registry")
                }
                Err(_) => {
                    tracing::info!(dogu = %name, %version, "adding the descriptor to the local dogu registry timed out")
                }
            }
            inner.adding.send_modify(|count| *count -= 1);
        });
    }
}

/// Removes a flight from the table when its task ends, however it ends.
struct Leave {
    inner: Arc<Inner>,
    key: Key,
}

impl Drop for Leave {
    fn drop(&mut self) {
        if let Ok(mut in_flight) = self.inner.in_flight.lock() {
            in_flight.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Allocated on demand, the cache is still bounded: it holds its capacity and evicts the least
    /// recently used beyond it.
    #[test]
    fn a_cache_grown_on_demand_holds_its_capacity_and_no_more() {
        let mut cache = grown_on_demand::<u32, u32>(NonZeroUsize::new(3).expect("not zero"));
        assert_eq!(cache.cap().get(), 3);
        for i in 0..5 {
            cache.put(i, i);
        }
        assert_eq!(cache.iter().map(|(key, _)| *key).collect::<Vec<_>>(), [4, 3, 2]);
    }
}
