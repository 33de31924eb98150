//! Monitoring as Prometheus users consume it: the alert rules
//! (`charts/blueprint-operator/files/prometheus-rules.yaml`) and the Grafana dashboard
//! (`charts/blueprint-operator/files/grafana-dashboard.json`) are well formed, their PromQL parses, and
//! they use only metrics and labels the operator exports. What it exports is read from the operator
//! itself: the real binary's `/metrics` after it applied a Blueprint (a family appears only once it has
//! a sample, and a label only on samples). And the metrics the alerts stand on, the Blueprint's state
//! and the leader, change when their facts change.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use blueprint_operator::sandbox::ecosystem::Behaviour;
use blueprint_operator::sandbox::seed;
use blueprint_operator::sandbox::session::{REGISTRY_CREDENTIALS, Sandbox, SandboxOptions, Transport};
use promql_parser::label::MatchOp;
use promql_parser::parser::{self, Expr, LabelModifier, VectorSelector};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::sandbox::e2e::{NAME, Scene, completed, default_blueprint};
use crate::support::process::free_port;

const RULES: &str = include_str!("../charts/blueprint-operator/files/prometheus-rules.yaml");
const DASHBOARD: &str = include_str!("../charts/blueprint-operator/files/grafana-dashboard.json");
const DOCS: &str = include_str!("../docs/monitoring.md");

/// Labels Prometheus attaches to every series it scrapes (`job`, `instance`), and those Kubernetes
/// service discovery and the Prometheus Operator's ServiceMonitor add (`namespace`, `pod`): not
/// exported by the operator, yet on every series a query sees.
const TARGET_LABELS: [&str; 4] = ["job", "instance", "namespace", "pod"];

/// Grafana's own variables, which a panel's query may use without defining them.
const GRAFANA_VARIABLES: [&str; 3] = ["__rate_interval", "__interval", "__range"];

// ---------------------------------------------------------------------------------------------------
// What the operator exports.

/// What an exposition text says is exported: every series name, and the label names seen on its
/// samples (`None`: the family is registered, but no sample shows its labels yet).
#[derive(Debug, Default)]
struct Exported {
    series: BTreeMap<String, Option<BTreeSet<String>>>,
}

impl Exported {
    /// Series names come from the `# TYPE` lines: a counter `x` is the series `x_total`, a histogram
    /// `x_bucket`, `x_sum` and `x_count`, a gauge `x`.
    fn parse(text: &str) -> Exported {
        let mut exported = Exported::default();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("# TYPE <name> <type>");
                let names = match kind {
                    "counter" => vec![format!("{name}_total")],
                    "histogram" => ["_bucket", "_sum", "_count"].iter().map(|s| format!("{name}{s}")).collect(),
                    "gauge" | "unknown" => vec![name.to_owned()],
                    other => panic!("a metric type this test does not know: {other} ({line})"),
                };
                for name in names {
                    exported.series.entry(name).or_insert(None);
                }
            } else if !line.starts_with('#') && !line.is_empty() {
                let (name, labels) = sample(line);
                let known = exported.series.get_mut(&name).unwrap_or_else(|| panic!("a sample of no family: {line}"));
                known.get_or_insert_with(BTreeSet::new).extend(labels);
            }
        }
        exported
    }
}

/// The series name and the label names of a sample line (`name{a="x",b="y"} 1`).
fn sample(line: &str) -> (String, Vec<String>) {
    let Some((name, rest)) = line.split_once('{') else {
        return (line.split(' ').next().unwrap_or_default().to_owned(), Vec::new());
    };
    let mut labels = Vec::new();
    let mut chars = rest.chars();
    loop {
        let label: String = chars.by_ref().take_while(|c| *c != '=').collect();
        assert_eq!(chars.next(), Some('"'), "a quoted label value in {line}");
        let mut escaped = false;
        for c in chars.by_ref() {
            match (escaped, c) {
                (false, '\\') => escaped = true,
                (false, '"') => break,
                _ => escaped = false,
            }
        }
        labels.push(label.trim_start_matches(',').to_owned());
        let rest = chars.as_str();
        if rest.starts_with('}') {
            break;
        }
    }
    (name.to_owned(), labels)
}

// ---------------------------------------------------------------------------------------------------
// What a query uses.

/// Every vector selector of an expression (a range selector's too).
fn selectors<'e>(expr: &'e Expr, found: &mut Vec<&'e VectorSelector>) {
    match expr {
        Expr::Aggregate(a) => {
            selectors(&a.expr, found);
            if let Some(param) = &a.param {
                selectors(param, found);
            }
        }
        Expr::Unary(u) => selectors(&u.expr, found),
        Expr::Binary(b) => {
            selectors(&b.lhs, found);
            selectors(&b.rhs, found);
        }
        Expr::Paren(p) => selectors(&p.expr, found),
        Expr::Subquery(s) => selectors(&s.expr, found),
        Expr::VectorSelector(v) => found.push(v),
        Expr::MatrixSelector(m) => found.push(&m.vs),
        Expr::Call(c) => c.args.args.iter().for_each(|arg| selectors(arg, found)),
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => {}
    }
}

/// The labels a series of `name` carries when Prometheus has scraped it, or why that is not known.
fn series_labels(exported: &Exported, name: &str) -> Result<BTreeSet<String>, String> {
    match exported.series.get(name) {
        None => Err(format!("{name} is not exported by the operator")),
        Some(None) => Err(format!("no sample of {name} was scraped, so its labels are unknown")),
        Some(Some(labels)) => Ok(labels.iter().cloned().chain(TARGET_LABELS.map(str::to_owned)).collect()),
    }
}

/// The labels the result of `expr` carries, checking on the way that every label it groups by exists
/// on what it aggregates; problems are added to `problems`.
fn result_labels(expr: &Expr, exported: &Exported, problems: &mut Vec<String>) -> BTreeSet<String> {
    match expr {
        Expr::VectorSelector(v) | Expr::MatrixSelector(promql_parser::parser::MatrixSelector { vs: v, .. }) => {
            let name = v.name.clone().unwrap_or_default();
            series_labels(exported, &name).unwrap_or_else(|problem| {
                problems.push(problem);
                BTreeSet::new()
            })
        }
        Expr::Aggregate(a) => {
            let input = result_labels(&a.expr, exported, problems);
            let op = a.op.to_string();
            match &a.modifier {
                Some(LabelModifier::Include(labels)) => {
                    for label in &labels.labels {
                        if !input.contains(label) {
                            problems.push(format!("{op} by ({label}) of a series without {label}: {expr}"));
                        }
                    }
                    labels.labels.iter().cloned().collect()
                }
                Some(LabelModifier::Exclude(labels)) => {
                    for label in &labels.labels {
                        if !input.contains(label) {
                            problems.push(format!("{op} without ({label}) of a series without {label}: {expr}"));
                        }
                    }
                    input.into_iter().filter(|l| !labels.labels.contains(l)).collect()
                }
                None if op == "topk" || op == "bottomk" => input,
                None => BTreeSet::new(),
            }
        }
        Expr::Binary(b) => {
            let lhs = result_labels(&b.lhs, exported, problems);
            let rhs = result_labels(&b.rhs, exported, problems);
            // A comparison with a number keeps the vector's labels; anything between two vectors
            // (and, unless, arithmetic: one-to-one) keeps the left side's.
            if matches!(*b.lhs, Expr::NumberLiteral(_)) { rhs } else { lhs }
        }
        Expr::Paren(p) => result_labels(&p.expr, exported, problems),
        Expr::Unary(u) => result_labels(&u.expr, exported, problems),
        Expr::Subquery(s) => result_labels(&s.expr, exported, problems),
        Expr::Call(c) => {
            let args: Vec<BTreeSet<String>> =
                c.args.args.iter().map(|arg| result_labels(arg, exported, problems)).collect();
            match c.func.name {
                // absent() has the labels of its selector's equality matchers, nothing else.
                "absent" | "absent_over_time" => {
                    let mut found = Vec::new();
                    selectors(expr, &mut found);
                    found
                        .iter()
                        .flat_map(|v| v.matchers.matchers.iter())
                        .filter(|m| matches!(m.op, MatchOp::Equal))
                        .map(|m| m.name.clone())
                        .collect()
                }
                "histogram_quantile" => {
                    args.last().cloned().unwrap_or_default().into_iter().filter(|l| l != "le").collect()
                }
                "time" | "vector" | "scalar" => BTreeSet::new(),
                _ => args.into_iter().flatten().collect(),
            }
        }
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => BTreeSet::new(),
    }
}

/// What is wrong with a query: it does not parse, or it names a metric the operator does not export,
/// or (with `labels`) it matches or groups by a label that series does not carry. Returns the labels
/// of its result, and the problems.
fn check_query(query: &str, exported: &Exported, labels: bool) -> (BTreeSet<String>, Vec<String>) {
    let expr = match parser::parse(query) {
        Ok(expr) => expr,
        Err(error) => return (BTreeSet::new(), vec![format!("does not parse: {error}: {query}")]),
    };
    let mut problems = Vec::new();
    let mut found = Vec::new();
    selectors(&expr, &mut found);
    for selector in found {
        let Some(name) = &selector.name else {
            problems.push(format!("a selector without a metric name: {selector}"));
            continue;
        };
        if !exported.series.contains_key(name) {
            problems.push(format!("{name} is not exported by the operator"));
            continue;
        }
        if labels {
            match series_labels(exported, name) {
                Ok(carried) => {
                    for matcher in &selector.matchers.matchers {
                        if !carried.contains(&matcher.name) {
                            problems.push(format!("{name} has no label {}: {selector}", matcher.name));
                        }
                    }
                }
                Err(problem) => problems.push(problem),
            }
        }
    }
    if !labels || !problems.is_empty() {
        return (BTreeSet::new(), problems);
    }
    let result = result_labels(&expr, exported, &mut problems);
    (result, problems)
}

// ---------------------------------------------------------------------------------------------------
// The rules and the dashboard.

struct Alert {
    name: String,
    expr: String,
    rule: Value,
}

fn alerts() -> Vec<Alert> {
    let rules: Value = serde_saphyr::from_str(RULES).expect("the rules are YAML");
    let groups = rules["groups"].as_array().expect("a list of groups");
    assert!(!groups.is_empty(), "no rule groups");
    groups
        .iter()
        .flat_map(|group| group["rules"].as_array().expect("each group has rules").iter())
        .map(|rule| Alert {
            name: rule["alert"].as_str().expect("every rule is an alert, with a name").to_owned(),
            expr: rule["expr"].as_str().expect("every alert has an expr").to_owned(),
            rule: rule.clone(),
        })
        .collect()
}

/// The labels `{{ $labels.x }}` that the alert's annotations use.
fn annotation_labels(alert: &Alert) -> BTreeSet<String> {
    let annotations = alert.rule["annotations"].as_object().expect("annotations");
    let mut used = BTreeSet::new();
    for text in annotations.values().filter_map(Value::as_str) {
        for (index, _) in text.match_indices("$labels.") {
            let rest = &text[index + "$labels.".len()..];
            let label: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            used.insert(label);
        }
    }
    used
}

/// Every problem of the alerts against `exported`: their queries (with `labels`: also the labels of
/// their queries and those their annotations name).
fn alert_problems(alerts: &[Alert], exported: &Exported, labels: bool) -> Vec<String> {
    let mut problems = Vec::new();
    for alert in alerts {
        let (result, mut found) = check_query(&alert.expr, exported, labels);
        if labels && found.is_empty() {
            for label in annotation_labels(alert) {
                if !result.contains(&label) {
                    found.push(format!("its annotations use $labels.{label}, which its result does not carry"));
                }
            }
        }
        problems.extend(found.into_iter().map(|p| format!("alert {}: {p}", alert.name)));
    }
    problems
}

fn dashboard() -> Value {
    serde_json::from_str(DASHBOARD).expect("the dashboard is JSON")
}

/// The dashboard's panels (rows included), and those nested in collapsed rows.
fn panels(dashboard: &Value) -> Vec<&Value> {
    let top = dashboard["panels"].as_array().expect("panels");
    top.iter().chain(top.iter().filter_map(|p| p["panels"].as_array()).flatten()).collect()
}

/// The variables the dashboard defines.
fn variables(dashboard: &Value) -> BTreeMap<String, &Value> {
    dashboard["templating"]["list"]
        .as_array()
        .expect("templating variables")
        .iter()
        .map(|v| (v["name"].as_str().expect("a variable's name").to_owned(), v))
        .collect()
}

/// The `$name` and `${name}` variables a text uses.
fn used_variables(text: &str) -> BTreeSet<String> {
    text.match_indices('$')
        .map(|(index, _)| {
            let rest = text[index + 1..].trim_start_matches('{');
            rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
        })
        .collect()
}

/// A panel query with Grafana's variables replaced by what Grafana sends Prometheus (an interval for
/// `$__rate_interval`, a regular expression for a multi-value variable).
fn as_sent(expr: &str) -> String {
    expr.replace("$__rate_interval", "1m")
        .replace("$__interval", "15s")
        .replace("$__range", "6h")
        .replace("$namespace", "ecosystem|other")
}

/// Every query of the dashboard: the panels' and the variables' (`label_values(metric, label)`, a
/// Grafana function, as the selector `metric{label!=""}` it stands for).
fn dashboard_queries(dashboard: &Value) -> Vec<(String, String)> {
    let mut queries = Vec::new();
    for panel in panels(dashboard).into_iter().filter(|p| p["type"] != "row") {
        let title = panel["title"].as_str().unwrap_or_default();
        for target in panel["targets"].as_array().into_iter().flatten() {
            queries.push((title.to_owned(), as_sent(target["expr"].as_str().unwrap_or_default())));
        }
    }
    for (name, variable) in variables(dashboard) {
        if let Some(query) = variable["query"]["query"].as_str() {
            let inner = query.strip_prefix("label_values(").and_then(|q| q.strip_suffix(')'));
            let (metric, label) = inner.and_then(|q| q.split_once(',')).expect("label_values(metric, label)");
            queries.push((format!("variable {name}"), format!("{}{{{}!=\"\"}}", metric.trim(), label.trim())));
        }
    }
    queries
}

fn dashboard_problems(exported: &Exported, labels: bool) -> Vec<String> {
    dashboard_queries(&dashboard())
        .iter()
        .flat_map(|(title, query)| {
            check_query(query, exported, labels).1.into_iter().map(move |p| format!("panel {title:?}: {p}"))
        })
        .collect()
}

/// The anchors GitHub makes of a Markdown file's headings.
fn anchors(markdown: &str) -> BTreeSet<String> {
    markdown
        .lines()
        .filter(|line| line.starts_with('#'))
        .map(|line| {
            line.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
                .map(|c| if c == ' ' { '-' } else { c })
                .collect()
        })
        .collect()
}

#[test]
fn every_alert_is_a_complete_rule_with_a_runbook() {
    let alerts = alerts();
    let names: BTreeSet<&str> = alerts.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names.len(), alerts.len(), "alert names are unique");
    let runbooks = anchors(DOCS);
    for alert in &alerts {
        let rule = &alert.rule;
        let pending = rule["for"].as_str().unwrap_or_else(|| panic!("{}: no `for`", alert.name));
        let pending = promql_parser::util::parse_duration(pending).unwrap_or_else(|e| panic!("{}: {e}", alert.name));
        assert!(pending >= Duration::from_secs(60), "{}: `for` of {pending:?} would alert on a blip", alert.name);
        let severity = rule["labels"]["severity"].as_str().unwrap_or_default();
        assert!(["critical", "warning", "info"].contains(&severity), "{}: severity {severity:?}", alert.name);
        for annotation in ["summary", "description"] {
            let text = rule["annotations"][annotation].as_str().unwrap_or_default();
            assert!(text.len() > 20, "{}: no {annotation} worth reading: {text:?}", alert.name);
        }
        let runbook = rule["annotations"]["runbook_url"].as_str().unwrap_or_default();
        let anchor = runbook.strip_prefix("docs/monitoring.md#").unwrap_or_else(|| panic!("{}: {runbook}", alert.name));
        assert!(runbooks.contains(anchor), "{}: docs/monitoring.md has no heading #{anchor}", alert.name);
    }
}

#[test]
fn the_dashboard_is_a_grafana_dashboard_on_a_prometheus_datasource_variable() {
    let dashboard = dashboard();
    let version = dashboard["schemaVersion"].as_u64().expect("schemaVersion");
    assert!((36..=41).contains(&version), "schemaVersion {version}");
    let variables = variables(&dashboard);
    let datasource = variables.get("datasource").expect("a `datasource` variable");
    assert_eq!(datasource["type"], "datasource");
    assert_eq!(datasource["query"], "prometheus");
    let all = panels(&dashboard);
    let ids: BTreeSet<u64> = all.iter().map(|p| p["id"].as_u64().expect("a panel id")).collect();
    assert_eq!(ids.len(), all.len(), "panel ids are unique");
    let shown: Vec<&Value> = all.into_iter().filter(|p| p["type"] != "row").collect();
    assert!(shown.len() >= 10, "{} panels", shown.len());
    for panel in shown {
        let title = panel["title"].as_str().expect("a panel title");
        assert_eq!(panel["datasource"]["uid"], "${datasource}", "{title}: not on the datasource variable");
        for key in ["x", "y", "w", "h"] {
            assert!(panel["gridPos"][key].is_u64(), "{title}: gridPos.{key}");
        }
        let targets =
            panel["targets"].as_array().filter(|t| !t.is_empty()).unwrap_or_else(|| panic!("{title}: no targets"));
        let refs: BTreeSet<&str> = targets.iter().map(|t| t["refId"].as_str().expect("a refId")).collect();
        assert_eq!(refs.len(), targets.len(), "{title}: refIds are unique");
        for target in targets {
            assert_eq!(target["datasource"]["uid"], "${datasource}", "{title}: a target not on the variable");
            let expr = target["expr"].as_str().filter(|e| !e.is_empty()).unwrap_or_else(|| panic!("{title}: no expr"));
            for used in used_variables(expr) {
                assert!(
                    variables.contains_key(&used) || GRAFANA_VARIABLES.contains(&used.as_str()),
                    "{title}: ${used} is not defined"
                );
            }
        }
    }
}

/// The checks find what they are there to find (else every test above could pass on anything).
#[test]
fn the_checks_refuse_unknown_metrics_labels_and_queries() {
    let exported = Exported::parse(
        "# TYPE blueprint_operator_leader gauge\nblueprint_operator_leader 1\n\
         # TYPE blueprint_operator_blueprint_state gauge\n\
         blueprint_operator_blueprint_state{namespace=\"ecosystem\",blueprint=\"b\",state=\"Completed\"} 1\n\
         # TYPE blueprint_operator_reconciles counter\n# EOF\n",
    );
    let alert = |name: &str, expr: &str, description: &str| Alert {
        name: name.to_owned(),
        expr: expr.to_owned(),
        rule: serde_json::json!({"annotations": {"description": description}}),
    };
    let problems = alert_problems(
        &[
            alert("Fine", "max by (blueprint) (blueprint_operator_blueprint_state) == 1", "{{ $labels.blueprint }}"),
            alert("Unknown", "blueprint_operator_no_such_metric > 0", ""),
            alert("Typo", "max by (blueprnt) (blueprint_operator_blueprint_state)", ""),
            alert("Matcher", "blueprint_operator_leader{state=\"x\"}", ""),
            alert("Annotation", "max by (blueprint) (blueprint_operator_blueprint_state)", "{{ $labels.state }}"),
            alert("Unscraped", "rate(blueprint_operator_reconciles_total[5m])", ""),
            alert("Broken", "sum(rate(x[5m])", ""),
        ],
        &exported,
        true,
    );
    let failed: BTreeSet<&str> = problems.iter().map(|p| p.split(':').next().unwrap_or_default()).collect();
    let expected = ["Unknown", "Typo", "Matcher", "Annotation", "Unscraped", "Broken"].map(|n| format!("alert {n}"));
    assert_eq!(failed, expected.iter().map(String::as_str).collect(), "{problems:#?}");
    // Names only (no labels checked): an unknown metric is still found.
    assert_eq!(
        alert_problems(&[alert("Unknown", "blueprint_operator_no_such_metric", "")], &exported, false),
        vec!["alert Unknown: blueprint_operator_no_such_metric is not exported by the operator"]
    );
}

// ---------------------------------------------------------------------------------------------------
// The real operator.

/// A `run` process, killed when dropped (also when the test fails).
struct Replica {
    child: Child,
    metrics: std::net::SocketAddr,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A default sandbox served over HTTP on loopback (quick simulated operators), seeded, its
/// simulated operators running, and a kubeconfig for it.
async fn served_sandbox(dir: &std::path::Path) -> (Sandbox, std::path::PathBuf) {
    let behaviour = Behaviour {
        install: Duration::from_millis(300),
        upgrade: Duration::from_millis(200),
        restart: Duration::from_millis(100),
        ..Behaviour::default()
    };
    let options = SandboxOptions { behaviour, ..SandboxOptions::default() };
    let mut sandbox = Sandbox::start(options, Some(([127, 0, 0, 1], 0).into())).await.unwrap();
    seed::cluster(&sandbox.cluster, &sandbox.namespace, &seed::objects(seed::DEFAULT_CLUSTER).unwrap()).await.unwrap();
    seed::registry(&sandbox.cluster, &sandbox.registry, &sandbox.namespace, &seed::builtin_descriptors())
        .await
        .unwrap();
    sandbox.start_ecosystem();
    let Transport::Http(address) = sandbox.transport() else { unreachable!("served over HTTP") };
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: s, cluster: {{server: 'http://{address}'}}}}]\n\
             users: [{{name: u, user: {{}}}}]\ncontexts: [{{name: s, context: {{cluster: s, user: u}}}}]\n\
             current-context: s\n"
        ),
    )
    .unwrap();
    (sandbox, kubeconfig)
}

/// `blueprint-operator run` as `identity` against the sandbox, with leader election.
fn replica(sandbox: &Sandbox, kubeconfig: &std::path::Path, identity: &str) -> Replica {
    let metrics = std::net::SocketAddr::from(([127, 0, 0, 1], free_port()));
    let child = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .arg("run")
        .env("KUBECONFIG", kubeconfig)
        .env("NAMESPACE", &sandbox.namespace)
        .env("POD_NAME", identity)
        .env("LEADER_ELECT", "true")
        // The emulator keeps no CRDs and serves no certificates' Secrets: no conversion webhook.
        .env("WEBHOOK_ENABLED", "false")
        .env("DEBOUNCE_WINDOW", "50ms")
        .env("LOG_LEVEL", "warn")
        .env("METRICS_BIND_ADDRESS", metrics.to_string())
        .env("HEALTH_PROBE_BIND_ADDRESS", format!("127.0.0.1:{}", free_port()))
        .env("DOGU_REGISTRY_ENDPOINT", sandbox.registry_endpoint())
        .env("DOGU_REGISTRY_USERNAME", REGISTRY_CREDENTIALS.0)
        .env("DOGU_REGISTRY_PASSWORD", REGISTRY_CREDENTIALS.1)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the operator starts");
    Replica { child, metrics }
}

/// `GET /metrics` of a replica, as Prometheus scrapes it; `None` while it does not answer.
async fn scrape(replica: &Replica) -> Option<String> {
    let mut stream = tokio::net::TcpStream::connect(replica.metrics).await.ok()?;
    stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: operator\r\n\r\n").await.ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await.ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.0 200").then(|| body.to_owned())
}

/// Scrapes until `done` holds for the exposition text (at most `limit`); the last text either way.
async fn scrape_until(replica: &Replica, limit: Duration, done: impl Fn(&str) -> bool) -> (bool, String) {
    let deadline = tokio::time::Instant::now() + limit;
    let mut last = String::new();
    while tokio::time::Instant::now() < deadline {
        if let Some(text) = scrape(replica).await {
            if done(&text) {
                return (true, text);
            }
            last = text;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    (false, last)
}

/// The value of the series `line` (name and labels, as exposed), if it is exposed.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// The full check: the real operator applied the fresh-install Blueprint; the metrics and labels on its
/// `/metrics` are all that the alerts and the dashboard may use.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_alerts_and_the_dashboard_use_only_what_the_running_operator_exports() {
    let dir = tempfile::tempdir().unwrap();
    let (sandbox, kubeconfig) = served_sandbox(dir.path()).await;
    sandbox.apply_blueprint(&default_blueprint()).await.unwrap();
    let operator = replica(&sandbox, &kubeconfig, "operator-0");
    let completed = format!(
        "blueprint_operator_blueprint_state{{namespace=\"{}\",blueprint=\"{NAME}\",state=\"Completed\"}}",
        sandbox.namespace
    );
    let (done, text) =
        scrape_until(&operator, Duration::from_secs(120), |text| value(text, &completed) == Some(1.0)).await;
    assert!(done, "the operator never reported the Blueprint Completed:\n{text}");
    assert_eq!(value(&text, "blueprint_operator_leader"), Some(1.0), "the only replica leads");

    let exported = Exported::parse(&text);
    let problems: Vec<String> =
        alert_problems(&alerts(), &exported, true).into_iter().chain(dashboard_problems(&exported, true)).collect();
    assert_eq!(problems, Vec::<String>::new(), "scraped:\n{text}");
    drop(operator);
    sandbox.shutdown().await;
}

/// The leader gauge follows the Lease: 1 on the holder, 0 on a standby, 1 on the standby once the
/// leader has shut down and released the Lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_gauge_follows_the_lease() {
    let dir = tempfile::tempdir().unwrap();
    let (sandbox, kubeconfig) = served_sandbox(dir.path()).await;
    let leads = |text: &str| value(text, "blueprint_operator_leader") == Some(1.0);
    let first = replica(&sandbox, &kubeconfig, "operator-a");
    let (done, text) = scrape_until(&first, Duration::from_secs(30), leads).await;
    assert!(done, "the first replica never led:\n{text}");

    let second = replica(&sandbox, &kubeconfig, "operator-b");
    let (answered, _) = scrape_until(&second, Duration::from_secs(30), |_| true).await;
    assert!(answered, "the second replica serves /metrics");
    // Several of its attempts (every 2 s) find the Lease held.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let text = scrape(&second).await.expect("the second replica answers");
    assert_eq!(value(&text, "blueprint_operator_leader"), Some(0.0), "a standby does not lead:\n{text}");
    let text = scrape(&first).await.expect("the first replica answers");
    assert_eq!(value(&text, "blueprint_operator_leader"), Some(1.0), "the leader still leads");

    let stopped = Command::new("kill").args(["-TERM", &first.child.id().to_string()]).status().unwrap();
    assert!(stopped.success());
    let (done, text) = scrape_until(&second, Duration::from_secs(20), leads).await;
    assert!(done, "the standby never took over:\n{text}");
    drop((first, second));
    sandbox.shutdown().await;
}

/// The `blueprint_state` series of the Blueprint in an exposition text: (state, value).
fn states(sandbox: &Sandbox) -> Vec<(String, String)> {
    sandbox
        .metrics
        .encode()
        .lines()
        .filter(|l| l.starts_with("blueprint_operator_blueprint_state{"))
        .filter(|l| l.contains(&format!("blueprint=\"{NAME}\"")))
        .map(|l| {
            let state = l.split("state=\"").nth(1).and_then(|s| s.split('"').next()).unwrap_or_default();
            (state.to_owned(), l.rsplit(' ').next().unwrap_or_default().to_owned())
        })
        .collect()
}

/// Waits (virtual time) until the Blueprint's state series is `wanted`.
async fn until_states(scene: &Scene, wanted: &[(&str, &str)]) -> Vec<(String, String)> {
    let wanted: Vec<(String, String)> = wanted.iter().map(|(s, v)| ((*s).to_owned(), (*v).to_owned())).collect();
    for _ in 0..600 {
        if states(scene) == wanted {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    states(scene)
}

/// The Blueprint's state series follows the machine's decisions: Completed once applied, Stopped when
/// `spec.stopped` is set, and gone with the Blueprint.
#[tokio::test(start_paused = true)]
async fn the_blueprint_state_gauge_follows_the_blueprint() {
    let mut scene = Scene::fresh(crate::sandbox::e2e::On::Emulator, None).await;
    assert_eq!(states(&scene), Vec::<(String, String)>::new(), "no Blueprint, no series");
    scene.start_and_apply(&default_blueprint()).await;
    assert!(scene.wait_blueprint(completed).await.is_some(), "the fresh install completes");
    assert_eq!(until_states(&scene, &[("Completed", "1")]).await, [("Completed".to_owned(), "1".to_owned())]);

    let mut stopped = default_blueprint();
    std::sync::Arc::make_mut(stopped.spec.spec.as_mut().unwrap()).stopped = Some(true);
    scene.apply_blueprint(&stopped).await.unwrap();
    assert_eq!(
        until_states(&scene, &[("Stopped", "1")]).await,
        [("Stopped".to_owned(), "1".to_owned())],
        "one series, of the new state"
    );

    scene.delete("k8s.cloudogu.com/v2", "Blueprint", NAME).await;
    assert_eq!(until_states(&scene, &[]).await, Vec::<(String, String)>::new(), "gone with the Blueprint");
    scene.shutdown().await;
}
