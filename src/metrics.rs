//! Prometheus metrics of the operator (`/metrics`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    /// The state the reconcile ended in (`Completed`, `ApplyingDogus`, ...), or `ApplyFailed`,
    /// `StatusConflict`, `StatusFailed`.
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ActionLabels {
    /// `createDogu`, `patchDogu`, `writeConfig`, ...
    pub kind: String,
    /// `ok`, `conflict`, `notFound`, `rejected`, `transient`
    pub result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VerbLabels {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`
    pub verb: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LookupLabels {
    /// `memory` (the in-process cache) or `local` (the dogu-spec ConfigMaps)
    pub layer: String,
    /// `hit`, `notFoundHit` (a remembered "not found"), `miss`
    pub result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RegistryLabels {
    /// `found`, `notFound`, `credentials`, `status`, `timeout`, `transport`, `malformed`
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BlueprintStateLabels {
    /// The Blueprint's namespace (the operator's).
    pub namespace: String,
    /// The Blueprint's name.
    pub blueprint: String,
    /// The machine's state (`Completed`, `Stopped`, `Invalid`, `ApplyingDogus`, ...): a closed set.
    pub state: String,
}

/// Every metric of the operator, registered once.
pub struct Metrics {
    pub registry: Registry,
    pub reconciles: Family<OutcomeLabels, Counter>,
    pub reconcile_duration: Histogram,
    pub actions: Family<ActionLabels, Counter>,
    pub api_requests: Family<VerbLabels, Counter>,
    pub objects_in_backoff: Gauge<i64, AtomicI64>,
    pub status_writes: Counter,
    pub events: Counter,
    pub descriptor_lookups: Family<LookupLabels, Counter>,
    pub registry_requests: Family<RegistryLabels, Counter>,
    pub registry_request_duration: Histogram,
    /// Lookups that would have asked the remote registry beyond its request budget.
    pub registry_requests_deferred: Counter,
    pub journal_records: Counter,
    pub journal_errors: Counter,
    /// One series per Blueprint, valued 1, whose `state` label is the state of the last decision whose
    /// status is the stored one. Set through [`Metrics::set_blueprint_state`] only.
    blueprint_state: Family<BlueprintStateLabels, Gauge<i64, AtomicI64>>,
    /// The state each Blueprint's series carries now, by (namespace, name): the series to remove when
    /// the state changes or the Blueprint is gone. Its lock also orders the updates of the family.
    blueprint_states: Mutex<HashMap<(String, String), String>>,
    /// 1 while this replica leads (holds the Lease and may write; always, without leader election).
    pub leader: Gauge<i64, AtomicI64>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("blueprint_operator");
        let reconciles = Family::<OutcomeLabels, Counter>::default();
        registry.register("reconciles", "Reconciles by the state they ended in", reconciles.clone());
        let reconcile_duration = Histogram::new([0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0]);
        registry.register("reconcile_duration_seconds", "Duration of one reconcile", reconcile_duration.clone());
        let actions = Family::<ActionLabels, Counter>::default();
        registry.register("actions", "Actions performed, by kind and result", actions.clone());
        let api_requests = Family::<VerbLabels, Counter>::default();
        registry.register("api_requests", "Requests to the Kubernetes API, by verb", api_requests.clone());
        let objects_in_backoff = Gauge::<i64, AtomicI64>::default();
        registry.register(
            "objects_in_backoff",
            "Blueprints waiting in exponential backoff",
            objects_in_backoff.clone(),
        );
        let status_writes = Counter::default();
        registry.register("status_writes", "Blueprint status writes", status_writes.clone());
        let events = Counter::default();
        registry.register("events", "Kubernetes events published", events.clone());
        let descriptor_lookups = Family::<LookupLabels, Counter>::default();
        registry.register(
            "descriptor_lookups",
            "Dogu descriptor lookups by cache layer and result",
            descriptor_lookups.clone(),
        );
        let registry_requests = Family::<RegistryLabels, Counter>::default();
        registry.register(
            "registry_requests",
            "Requests to the remote dogu registry, by outcome",
            registry_requests.clone(),
        );
        let registry_request_duration = Histogram::new([0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0]);
        registry.register(
            "registry_request_duration_seconds",
            "Duration of one request to the remote dogu registry",
            registry_request_duration.clone(),
        );
        let registry_requests_deferred = Counter::default();
        registry.register(
            "registry_requests_deferred",
            "Remote dogu registry lookups not sent because the request budget was used up",
            registry_requests_deferred.clone(),
        );
        let journal_records = Counter::default();
        registry.register("journal_records", "Reconciles recorded in the journal", journal_records.clone());
        let journal_errors = Counter::default();
        registry.register("journal_errors", "Reconciles the journal could not record", journal_errors.clone());
        let blueprint_state = Family::<BlueprintStateLabels, Gauge<i64, AtomicI64>>::default();
        registry.register(
            "blueprint_state",
            "The state of each Blueprint as last decided (one series per Blueprint, valued 1)",
            blueprint_state.clone(),
        );
        let leader = Gauge::<i64, AtomicI64>::default();
        registry.register("leader", "1 while this replica leads and may write, else 0", leader.clone());
        Metrics {
            registry,
            reconciles,
            reconcile_duration,
            actions,
            api_requests,
            objects_in_backoff,
            status_writes,
            events,
            descriptor_lookups,
            registry_requests,
            registry_request_duration,
            registry_requests_deferred,
            journal_records,
            journal_errors,
            blueprint_state,
            blueprint_states: Mutex::default(),
            leader,
        }
    }
}

impl Metrics {
    pub fn shared() -> Arc<Self> {
        Arc::new(Metrics::default())
    }

    /// The text exposition format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry).expect("writing to a String succeeds");
        text
    }

    pub fn count_descriptor_lookup(&self, layer: &str, result: &str) {
        self.descriptor_lookups
            .get_or_create(&LookupLabels { layer: layer.to_owned(), result: result.to_owned() })
            .inc();
    }

    pub fn observe_registry_request(&self, outcome: &str, duration: std::time::Duration) {
        self.registry_requests.get_or_create(&RegistryLabels { outcome: outcome.to_owned() }).inc();
        self.registry_request_duration.observe(duration.as_secs_f64());
    }

    /// The Blueprint `namespace/name` is in `state` (as the machine decided): its one series now carries
    /// that state; the series of its previous state is removed, so that a query of the Blueprint's
    /// state finds exactly one series.
    pub fn set_blueprint_state(&self, namespace: &str, name: &str, state: &str) {
        let mut states = self.blueprint_states.lock().expect("not poisoned");
        let key = (namespace.to_owned(), name.to_owned());
        if let Some(previous) = states.insert(key, state.to_owned())
            && previous != state
        {
            self.blueprint_state.remove(&state_labels(namespace, name, &previous));
        }
        self.blueprint_state.get_or_create(&state_labels(namespace, name, state)).set(1);
    }

    /// The Blueprint `namespace/name` is gone: its series leaves the metrics.
    pub fn forget_blueprint(&self, namespace: &str, name: &str) {
        let mut states = self.blueprint_states.lock().expect("not poisoned");
        if let Some(state) = states.remove(&(namespace.to_owned(), name.to_owned())) {
            self.blueprint_state.remove(&state_labels(namespace, name, &state));
        }
    }

    /// Only the Blueprints of `namespace` for which `exists` holds keep their series (after a relist,
    /// which reports no deletions).
    pub fn retain_blueprints(&self, namespace: &str, exists: impl Fn(&str) -> bool) {
        let mut states = self.blueprint_states.lock().expect("not poisoned");
        states.retain(|(ns, name), state| {
            let keep = ns != namespace || exists(name);
            if !keep {
                self.blueprint_state.remove(&state_labels(ns, name, state));
            }
            keep
        });
    }

    /// Counts a request to the API server by its Kubernetes verb.
    pub fn count_request<B>(&self, request: &http::Request<B>) {
        self.api_requests.get_or_create(&VerbLabels { verb: verb(request).to_owned() }).inc();
    }
}

fn state_labels(namespace: &str, name: &str, state: &str) -> BlueprintStateLabels {
    BlueprintStateLabels { namespace: namespace.to_owned(), blueprint: name.to_owned(), state: state.to_owned() }
}

/// Sums of an exposition text (what `/metrics` serves): every series whose line starts with `prefix`.
pub fn sum(text: &str, prefix: &str) -> f64 {
    text.lines()
        .filter(|line| line.starts_with(prefix))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The API requests counted in an exposition text, by verb.
pub fn requests_by_verb(text: &str) -> BTreeMap<String, f64> {
    let mut verbs = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("blueprint_operator_api_requests_total{")) {
        let verb = line.split("verb=\"").nth(1).and_then(|rest| rest.split('"').next());
        if let (Some(verb), Some(count)) = (verb, line.rsplit(' ').next().and_then(|c| c.parse::<f64>().ok())) {
            *verbs.entry(verb.to_owned()).or_insert(0.0) += count;
        }
    }
    verbs
}

/// The Kubernetes verb of a request (`GET` is `get`, `list` or `watch`).
pub fn verb<B>(request: &http::Request<B>) -> &'static str {
    match *request.method() {
        http::Method::GET => {
            let query = request.uri().query().unwrap_or("");
            if query.split('&').any(|p| p == "watch=true" || p == "watch=1") {
                "watch"
            } else if is_collection(request.uri().path()) {
                "list"
            } else {
                "get"
            }
        }
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        _ => "other",
    }
}

/// `/api/v1/namespaces/ns/configmaps` is a collection, `/api/v1/namespaces/ns/configmaps/x` is not.
fn is_collection(path: &str) -> bool {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    // api/v1/<resource> | api/v1/namespaces/<ns>/<resource> | apis/<g>/<v>/... likewise
    let rest: &[&str] = match parts.first() {
        Some(&"api") => parts.get(2..).unwrap_or_default(),
        Some(&"apis") => parts.get(3..).unwrap_or_default(),
        _ => return false,
    };
    matches!(rest, [_] | ["namespaces", _, _])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, uri: &str) -> http::Request<()> {
        http::Request::builder().method(method).uri(uri).body(()).unwrap()
    }

    #[test]
    fn verbs_follow_kubernetes() {
        assert_eq!(verb(&request("GET", "/api/v1/namespaces/ns/configmaps?labelSelector=app%3Dces")), "list");
        assert_eq!(verb(&request("GET", "/api/v1/namespaces/ns/configmaps?watch=true&resourceVersion=1")), "watch");
        assert_eq!(verb(&request("GET", "/api/v1/namespaces/ns/secrets/s")), "get");
        assert_eq!(verb(&request("GET", "/apis/k8s.cloudogu.com/v2/namespaces/ns/dogus")), "list");
        assert_eq!(verb(&request("GET", "/apis/k8s.cloudogu.com/v2/namespaces/ns/dogus/ldap")), "get");
        assert_eq!(verb(&request("PATCH", "/apis/k8s.cloudogu.com/v2/namespaces/ns/blueprints/b/status")), "patch");
        assert_eq!(verb(&request("POST", "/apis/events.k8s.io/v1/namespaces/ns/events")), "create");
    }

    #[test]
    fn the_registry_encodes() {
        let metrics = Metrics::default();
        metrics.count_request(&request("DELETE", "/api/v1/namespaces/ns/configmaps/x"));
        let text = metrics.encode();
        assert!(text.contains("blueprint_operator_api_requests_total{verb=\"delete\"} 1"), "{text}");
        assert!(text.contains("blueprint_operator_reconcile_duration_seconds"), "{text}");
    }

    /// The `blueprint_state` samples of an exposition text.
    fn state_lines(metrics: &Metrics) -> Vec<String> {
        let text = metrics.encode();
        text.lines().filter(|l| l.starts_with("blueprint_operator_blueprint_state{")).map(str::to_owned).collect()
    }

    #[test]
    fn a_blueprint_has_one_state_series_which_follows_its_state_and_leaves_with_it() {
        let metrics = Metrics::default();
        assert_eq!(state_lines(&metrics), Vec::<String>::new(), "no Blueprint, no series");
        metrics.set_blueprint_state("ecosystem", "b", "ApplyingDogus");
        metrics.set_blueprint_state("ecosystem", "other", "Stopped");
        metrics.set_blueprint_state("ecosystem", "b", "Completed");
        let mut lines = state_lines(&metrics);
        lines.sort();
        assert_eq!(
            lines,
            vec![
                r#"blueprint_operator_blueprint_state{namespace="ecosystem",blueprint="b",state="Completed"} 1"#,
                r#"blueprint_operator_blueprint_state{namespace="ecosystem",blueprint="other",state="Stopped"} 1"#,
            ],
            "the series of the previous state is gone"
        );
        metrics.forget_blueprint("ecosystem", "b");
        assert_eq!(
            state_lines(&metrics),
            vec![r#"blueprint_operator_blueprint_state{namespace="ecosystem",blueprint="other",state="Stopped"} 1"#]
        );
        metrics.set_blueprint_state("ecosystem", "b", "Invalid");
        metrics.set_blueprint_state("elsewhere", "other", "Completed");
        // A relist of `ecosystem` holds only `b`: `other` there goes, the other namespace's stays.
        metrics.retain_blueprints("ecosystem", |name| name == "b");
        let mut lines = state_lines(&metrics);
        lines.sort();
        assert_eq!(
            lines,
            vec![
                r#"blueprint_operator_blueprint_state{namespace="ecosystem",blueprint="b",state="Invalid"} 1"#,
                r#"blueprint_operator_blueprint_state{namespace="elsewhere",blueprint="other",state="Completed"} 1"#,
            ]
        );
    }

    #[test]
    fn exposition_texts_are_summed_by_prefix_and_by_verb() {
        let text = "# HELP x\nblueprint_operator_api_requests_total{verb=\"create\"} 3\n\
                    blueprint_operator_api_requests_total{verb=\"patch\"} 2\n\
                    blueprint_operator_status_writes_total 2\n";
        assert_eq!(sum(text, "blueprint_operator_api_requests_total"), 5.0);
        assert_eq!(sum(text, "blueprint_operator_status_writes_total"), 2.0);
        let verbs = requests_by_verb(text);
        assert_eq!(verbs.into_iter().collect::<Vec<_>>(), vec![("create".into(), 3.0), ("patch".into(), 2.0)]);
    }
}
