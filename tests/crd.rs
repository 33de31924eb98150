//! The generated CRDs: committed files in sync, upstream's identity and printer columns, and a schema
//! that accepts (and does not prune) every document upstream's CRD accepts.

use std::path::Path;

use blueprint_machine::api::{Blueprint, blueprint_crd};
use blueprint_operator::crd::{self, Which};
use serde_json::{Value, json};

pub fn repository(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

#[test]
fn committed_crds_match_the_generated_ones() {
    for which in [Which::Blueprint, Which::BlueprintMask, Which::Dogu, Which::Component] {
        let file = repository(&format!("crds/{}.yaml", crd::name(which)));
        let committed = std::fs::read_to_string(&file).unwrap();
        assert!(
            committed == crd::yaml(which),
            "{} differs from `blueprint-operator crd {}`: run `make crds` and commit the result",
            file.display(),
            crd::name(which)
        );
    }
}

#[test]
fn the_blueprint_crd_has_upstreams_identity() {
    let crd = blueprint_crd();
    assert_eq!(crd.metadata.name.as_deref(), Some("blueprints.k8s.cloudogu.com"));
    assert_eq!(crd.spec.group, "k8s.cloudogu.com");
    assert_eq!(crd.spec.scope, "Namespaced");
    assert_eq!(crd.spec.names.kind, "Blueprint");
    assert_eq!(crd.spec.names.list_kind.as_deref(), Some("BlueprintList"));
    assert_eq!(crd.spec.names.plural, "blueprints");
    assert_eq!(crd.spec.names.singular.as_deref(), Some("blueprint"));
    assert_eq!(crd.spec.names.short_names.as_deref(), Some(&["bp".to_string()][..]));
    let labels = crd.metadata.labels.unwrap();
    assert_eq!(labels["app"], "ces");
    assert_eq!(labels["app.kubernetes.io/name"], "k8s-blueprint-lib");
    let [v1, v2, v3] = crd.spec.versions.as_slice() else { panic!("three versions") };
    assert_eq!((v1.name.as_str(), v1.served, v1.storage, v1.deprecated), ("v1", true, false, Some(true)));
    let v1_columns: Vec<(&str, &str)> =
        v1.additional_printer_columns.iter().flatten().map(|c| (c.name.as_str(), c.json_path.as_str())).collect();
    assert_eq!(
        v1_columns,
        [("Status", ".status.phase"), ("DryRun", ".spec.dryRun"), ("Age", ".metadata.creationTimestamp")],
        "upstream's v1 columns"
    );
    // A status subresource in every version: `status: {}`, not `status: null` (which is none at all).
    for version in [v1, v2, v3] {
        assert_eq!(serde_json::to_value(&version.subresources).unwrap(), json!({"status": {}}), "{}", version.name);
    }
    assert_eq!((v2.name.as_str(), v2.served, v2.storage), ("v2", true, false));
    assert_eq!((v3.name.as_str(), v3.served, v3.storage), ("v3", true, true), "v3 is stored (docs/api-versions.md)");
    let conversion = crd.spec.conversion.as_ref().unwrap();
    assert_eq!(conversion.strategy, "Webhook");
    let webhook = conversion.webhook.as_ref().unwrap();
    assert_eq!(webhook.conversion_review_versions, ["v1"]);
    let service = webhook.client_config.as_ref().unwrap().service.as_ref().unwrap();
    assert_eq!(
        (service.name.as_str(), service.namespace.as_str(), service.path.as_deref(), service.port),
        ("blueprint-operator-webhook", "ecosystem", Some("/convert"), Some(443))
    );
    assert_eq!(v2.additional_printer_columns, v3.additional_printer_columns);
    let schema_of = |version: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionVersion| {
        serde_json::to_value(version.schema.as_ref().unwrap().open_api_v3_schema.as_ref().unwrap()).unwrap()
    };
    assert_eq!(schema_of(v2)["properties"]["status"], schema_of(v3)["properties"]["status"], "one status");
    let version = v2;
    assert!(version.subresources.as_ref().unwrap().status.is_some());
    assert!(v3.subresources.as_ref().unwrap().status.is_some());
    let columns: Vec<(&str, &str, &str)> = version
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|c| (c.name.as_str(), c.type_.as_str(), c.json_path.as_str()))
        .collect();
    assert_eq!(
        columns,
        [
            ("Display Name", "string", ".spec.displayName"),
            ("Stopped", "boolean", ".spec.stopped"),
            ("Valid", "string", ".status.conditions[?(@.type == 'Valid')].status"),
            ("Executable", "string", ".status.conditions[?(@.type == 'Executable')].status"),
            ("Ecosystem Healthy", "string", ".status.conditions[?(@.type == 'EcosystemHealthy')].status"),
            ("Completed", "string", ".status.conditions[?(@.type == 'Completed')].status"),
            ("Last Apply Successful", "string", ".status.conditions[?(@.type == 'LastApplySucceeded')].status"),
            ("Age", "date", ".metadata.creationTimestamp"),
        ]
    );
    let schema = serde_json::to_value(version.schema.as_ref().unwrap().open_api_v3_schema.as_ref().unwrap()).unwrap();
    assert_eq!(schema.get("required"), None, "spec is optional at the root, as upstream's");
    assert_eq!(schema.pointer("/properties/spec/required"), Some(&serde_json::json!(["blueprint", "displayName"])));
    assert_eq!(schema.pointer("/properties/status/properties/observedGeneration/type"), Some(&Value::from("integer")));
    assert_eq!(
        schema.pointer("/properties/status/properties/conditions/items/properties/reason/pattern"),
        Some(&Value::from("^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"))
    );
}

/// The Blueprint CRD's OpenAPI schema of `version` (`v2` or `v3`) as JSON Schema: `nullable` becomes a
/// `null` type (CEL rules are not JSON Schema: the real-API-server tests check them).
fn blueprint_json_schema(version: &str) -> Value {
    fn convert(node: Value) -> Value {
        match node {
            Value::Object(map) => {
                let mut map: serde_json::Map<String, Value> = map.into_iter().map(|(k, v)| (k, convert(v))).collect();
                if map.remove("nullable") == Some(Value::Bool(true))
                    && let Some(Value::String(t)) = map.get("type").cloned()
                {
                    map.insert("type".into(), serde_json::json!([t, "null"]));
                }
                Value::Object(map)
            }
            Value::Array(items) => Value::Array(items.into_iter().map(convert).collect()),
            other => other,
        }
    }
    let crd = blueprint_crd();
    let version = crd.spec.versions.iter().find(|v| v.name == version).unwrap();
    let schema = version.schema.as_ref().unwrap().open_api_v3_schema.as_ref().unwrap();
    convert(serde_json::to_value(schema).unwrap())
}

/// Paths in `value` that the API server would prune because the schema does not know them.
fn pruned_fields(schema: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = schema.get("properties") {
                for (key, child) in map {
                    match properties.get(key) {
                        Some(child_schema) => pruned_fields(child_schema, child, &format!("{path}.{key}"), out),
                        None => out.push(format!("{path}.{key}")),
                    }
                }
            } else if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                for (key, child) in map {
                    pruned_fields(additional, child, &format!("{path}.{key}"), out);
                }
            } else if !map.is_empty() {
                out.push(format!("{path} (an object the schema has no fields for)"));
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    pruned_fields(item_schema, item, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

pub fn yaml_file(path: &Path) -> Value {
    serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Checks that our CRD accepts `document` (of its version) without pruning anything, and that our
/// types read it (converted to v3, as the API server stores it) and write it back unchanged.
fn assert_accepted(file: &Path, document: &Value) {
    use blueprint_machine::conversion::{ApiVersion, convert};

    let api_version = document["apiVersion"].as_str().unwrap_or_default();
    let (_, version) =
        ApiVersion::parse(api_version).unwrap_or_else(|| panic!("{}: no Blueprint apiVersion", file.display()));
    let schema = blueprint_json_schema(version.as_str());
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> =
        validator.iter_errors(document).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{}: rejected by our CRD schema: {errors:#?}", file.display());

    let mut pruned = Vec::new();
    let mut body = document.clone();
    for implicit in ["apiVersion", "kind", "metadata"] {
        body.as_object_mut().unwrap().remove(implicit);
    }
    pruned_fields(&schema, &body, "", &mut pruned);
    assert!(pruned.is_empty(), "{}: fields our schema would prune: {pruned:?}", file.display());

    let stored = convert(document, ApiVersion::V3).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let typed: Blueprint = serde_json::from_value(stored).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut written = convert(&serde_json::to_value(&typed).unwrap(), version).unwrap();
    let mut original = document.clone();
    for value in [&mut written, &mut original] {
        value.as_object_mut().unwrap().remove("metadata");
    }
    assert_eq!(written, original, "{}: our types lose or change data", file.display());
}

#[test]
fn documents_upstreams_crd_accepts_are_accepted_by_ours() {
    let dir = repository("tests/fixtures/compat");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() >= 6, "the compatibility documents are missing");
    for file in files {
        let document = yaml_file(&file);
        assert_accepted(&file, &document);
        // The machine reads every one of them without panicking.
        let blueprint: Blueprint = serde_json::from_value(document).unwrap();
        let observation = blueprint_machine::observation::Observation {
            now: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
            operator: blueprint_machine::observation::OperatorFacts::new("ecosystem", None),
            blueprint: Some(std::sync::Arc::new(blueprint)),
            blueprint_count: 1,
            other_blueprints: Vec::new(),
            blueprint_masks: Vec::new(),
            referenced_config_maps: Default::default(),
            undecodable: Vec::new(),
            dogus: vec![],
            components: vec![],
            global_config: Default::default(),
            dogu_configs: Default::default(),
            sensitive_configs: Default::default(),
            referenced_secrets: Default::default(),
            descriptors: vec![],
            health_config: None,
            restores: Vec::new(),
            debug_mode: None,
            reconcile_request: None,
        };
        let decision = blueprint_machine::reconcile(&observation);
        assert!(decision.status.is_some(), "{}", file.display());
    }
}

#[test]
fn every_example_blueprint_is_accepted() {
    let mut checked = 0;
    for dir in std::fs::read_dir(repository("examples")).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&dir).unwrap() {
            let file = file.unwrap().path();
            if file.extension().is_some_and(|e| e == "yaml") && file.file_name().unwrap() != "cluster.yaml" {
                assert_accepted(&file, &yaml_file(&file));
                checked += 1;
            }
        }
    }
    assert!(checked >= 4, "only {checked} example blueprints found");
}

#[test]
fn unknown_fields_are_what_the_schema_check_catches() {
    // The pruning check itself must be able to fail.
    let schema = blueprint_json_schema("v2");
    let mut pruned = Vec::new();
    pruned_fields(
        &schema,
        &serde_json::json!({"spec": {"displayName": "x", "blueprint": {}, "dryRun": true}}),
        "",
        &mut pruned,
    );
    assert_eq!(pruned, [".spec.dryRun"]);
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(!validator.is_valid(&serde_json::json!({"spec": {"blueprint": {}}})), "displayName is required");
    assert!(
        !validator
            .is_valid(&serde_json::json!({"spec": {"displayName": "x", "blueprint": {"dogus": [{"version": "1"}]}}}))
    );
}

/// `Blueprint` is written by hand (see its doc) beside the derive's `BlueprintCrd`: on every
/// compatibility document both decode to the same object and encode to the same JSON; the field sets
/// are what `Blueprint` leaves out.
#[test]
fn the_reconciled_type_reads_and_writes_what_the_crd_type_does() {
    use blueprint_machine::api::BlueprintCrd;

    let dir = repository("tests/fixtures/compat");
    let mut documents: Vec<Value> = std::fs::read_dir(&dir).unwrap().map(|e| yaml_file(&e.unwrap().path())).collect();
    let mut with_field_sets = documents[0].clone();
    with_field_sets["metadata"]["managedFields"] = serde_json::json!([{
        "manager": "blueprint-operator", "operation": "Update", "subresource": "status",
        "apiVersion": "k8s.cloudogu.com/v2", "time": "2026-01-02T03:04:05Z",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:stateDiff": {".": {}}}}
    }]);
    documents.push(with_field_sets);
    assert!(documents.len() >= 7);
    for document in documents {
        let ours: Blueprint = serde_json::from_value(document.clone()).unwrap();
        let mut derived: BlueprintCrd = serde_json::from_value(document.clone()).unwrap();
        for entry in derived.metadata.managed_fields.iter_mut().flatten() {
            assert!(entry.fields_v1.take().is_some(), "the derive keeps the field sets");
        }
        assert_eq!(ours.metadata, derived.metadata);
        assert_eq!(ours.spec, derived.spec);
        assert_eq!(ours.status.as_deref(), derived.status.as_ref());
        assert_eq!(serde_json::to_value(&ours).unwrap(), serde_json::to_value(&derived).unwrap());
    }
    // A document without metadata is refused by both.
    let bare = serde_json::json!({"spec": {"displayName": "x"}});
    assert!(serde_json::from_value::<Blueprint>(bare.clone()).is_err());
    assert!(serde_json::from_value::<BlueprintCrd>(bare).is_err());
}

/// upstream's BlueprintMask document: accepted by our CRD's schema without pruning, read and written
/// back unchanged by our type (the real API server does the same in tests/cluster/crds.rs).
#[test]
fn upstreams_blueprint_mask_is_accepted_by_ours() {
    use blueprint_machine::api::{BlueprintMaskObject, blueprint_mask_crd};

    let file = repository("tests/fixtures/compat-mask/blueprintmask.yaml");
    let document = yaml_file(&file);
    let crd = blueprint_mask_crd();
    assert_eq!(crd.metadata.name.as_deref(), Some("blueprintmasks.k8s.cloudogu.com"));
    assert_eq!(crd.spec.names.short_names.as_deref(), Some(&["bpm".to_string()][..]));
    let [version] = crd.spec.versions.as_slice() else { panic!("one version") };
    assert_eq!((version.name.as_str(), version.served, version.storage), ("v3", true, true));
    let schema = serde_json::to_value(version.schema.as_ref().unwrap().open_api_v3_schema.as_ref().unwrap()).unwrap();
    let mut body = document.clone();
    for implicit in ["apiVersion", "kind", "metadata"] {
        body.as_object_mut().unwrap().remove(implicit);
    }
    let mut pruned = Vec::new();
    pruned_fields(&schema, &body, "", &mut pruned);
    assert!(pruned.is_empty(), "fields our schema would prune: {pruned:?}");
    let typed: BlueprintMaskObject = serde_json::from_value(document.clone()).unwrap();
    assert_eq!(serde_json::to_value(&typed).unwrap()["spec"], document["spec"]);
}
