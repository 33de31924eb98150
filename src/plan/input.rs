//! Reading `plan`'s inputs: the Blueprint, the cluster objects (as `kubectl get -o yaml` prints them)
//! and the dogu descriptors directory. Every failure names the file and, where the parser knows it,
//! the position.

use std::fmt;
use std::path::{Component as PathComponent, Path, PathBuf};

use blueprint_machine::conversion::{ApiVersion, convert};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use serde::de::DeserializeOwned;
use serde_json::Value;

use blueprint_machine::api::{Blueprint, BlueprintMaskObject, BlueprintSpec, BlueprintStatus, Component, Dogu};
use blueprint_machine::descriptor::DoguDescriptor;
use blueprint_machine::observation::{DescriptorEntry, DescriptorLookup};

#[derive(Debug)]
pub struct InputError {
    pub file: PathBuf,
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.message)
    }
}

impl std::error::Error for InputError {}

fn error(file: &Path, message: impl Into<String>) -> InputError {
    InputError { file: file.to_owned(), message: message.into() }
}

fn read(file: &Path, limit: u64) -> Result<String, InputError> {
    crate::files::read_text(file, limit).map_err(|e| InputError { file: file.to_owned(), message: without_path(&e) })
}

/// The error's message without the path (an `InputError` names the file itself).
fn without_path(error: &crate::files::FileError) -> String {
    let text = error.to_string();
    text.split_once(": ").map(|(_, rest)| rest.to_owned()).unwrap_or(text)
}

/// The objects of a cluster snapshot, by kind.
#[derive(Debug, Default)]
pub struct ClusterObjects {
    pub blueprints: Vec<Blueprint>,
    pub blueprint_masks: Vec<BlueprintMaskObject>,
    pub dogus: Vec<Dogu>,
    pub components: Vec<Component>,
    pub config_maps: Vec<ConfigMap>,
    pub secrets: Vec<Secret>,
    /// The backup operator's Restores, untyped.
    pub restores: Vec<kube::api::DynamicObject>,
    /// The debug-mode operator's `DebugMode` objects, untyped.
    pub debug_modes: Vec<kube::api::DynamicObject>,
    /// `Kind/name` of objects that were not used, for a warning.
    pub ignored: Vec<String>,
    /// Objects that do not fit their type (a live cluster's; a snapshot's are an error), by kind: the
    /// reconcile sees them as the controller does.
    pub undecodable: Vec<(&'static str, std::sync::Arc<crate::observe::decoded::Undecodable>)>,
}

impl ClusterObjects {
    /// Adds the objects of another snapshot.
    pub fn extend(&mut self, other: ClusterObjects) {
        let ClusterObjects {
            blueprints,
            blueprint_masks,
            dogus,
            components,
            config_maps,
            secrets,
            restores,
            debug_modes,
            ignored,
            undecodable,
        } = other;
        self.blueprints.extend(blueprints);
        self.blueprint_masks.extend(blueprint_masks);
        self.dogus.extend(dogus);
        self.components.extend(components);
        self.config_maps.extend(config_maps);
        self.secrets.extend(secrets);
        self.restores.extend(restores);
        self.debug_modes.extend(debug_modes);
        self.ignored.extend(ignored);
        self.undecodable.extend(undecodable);
    }

    /// The `BlueprintMask`s of `namespace` (a mask reference names one of these).
    pub fn masks_in(&self, namespace: &str) -> Vec<std::sync::Arc<BlueprintMaskObject>> {
        self.blueprint_masks
            .iter()
            .filter(|m| m.metadata.namespace.as_deref().is_none_or(|ns| ns == namespace))
            .cloned()
            .map(std::sync::Arc::new)
            .collect()
    }
}

/// Reads exactly one Blueprint from a YAML or JSON file, or from standard input when `file` is `-`.
pub fn read_blueprint(file: &Path) -> Result<Blueprint, InputError> {
    let text = crate::files::read_text_or_stdin(file, crate::files::BLUEPRINT_FILE_LIMIT)
        .map_err(|e| InputError { file: file.to_owned(), message: without_path(&e) })?;
    blueprint_from_text(file, &text)
}

/// A Blueprint from its YAML (or JSON) text; `file` names it in errors.
pub fn blueprint_from_text(file: &Path, text: &str) -> Result<Blueprint, InputError> {
    let text = text.to_owned();
    let documents: Vec<Value> =
        serde_saphyr::from_multiple(&text).map_err(|e| error(file, format!("not valid YAML: {e}")))?;
    let documents: Vec<Value> = documents.into_iter().filter(|d| !d.is_null()).collect();
    let [document] = documents.as_slice() else {
        return Err(error(file, format!("expected exactly one Blueprint document, found {}", documents.len())));
    };
    let kind = document.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind != "Blueprint" {
        return Err(error(file, format!("expected kind Blueprint, found {kind:?}")));
    }
    let api_version = document.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let version = ApiVersion::parse(api_version).map_or(ApiVersion::V2, |(_, version)| version);
    // A field the schema does not have is an error, not a field dropped (held to the CRD's schema, as
    // `kubectl apply` is).
    let unknown = super::strict::unknown_fields(&text, schemas::blueprint(version));
    match unknown.as_slice() {
        [] => {}
        [one] => return Err(error(file, one.to_string())),
        several => {
            let listed: Vec<String> = several.iter().map(ToString::to_string).collect();
            return Err(error(file, format!("{} unknown fields: {}", several.len(), listed.join("; "))));
        }
    }
    // A value of the wrong type is reported with its line and column: the text is decoded as it was
    // written (the conversion below works on a JSON value, which has no positions; the types read
    // v2's mask too). The root type flattens its body, which buffers it and loses positions, so spec
    // and status are decoded on their own.
    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Body {
        #[serde(default)]
        spec: Option<BlueprintSpec>,
        #[serde(default)]
        status: Option<BlueprintStatus>,
    }
    // v1's spec holds JSON text, which its conversion reads (and reports on).
    if version != ApiVersion::V1 {
        serde_saphyr::from_str::<Body>(&text).map_err(|e| error(file, format!("not a valid Blueprint: {e}")))?;
    }
    // The operator reads v3 (docs/api-versions.md): a v2 Blueprint is converted as the API server would.
    let current = convert(document, ApiVersion::V3).map_err(|e| error(file, e.to_string()))?;
    serde_json::from_value::<Blueprint>(current).map_err(|e| error(file, format!("not a valid Blueprint: {e}")))
}

/// The Blueprint CRD's schemas, made once.
mod schemas {
    use std::sync::OnceLock;

    use serde_json::Value;

    use blueprint_machine::conversion::ApiVersion;

    /// The openAPIV3Schema of the Blueprint CRD's `version`.
    pub fn blueprint(version: ApiVersion) -> &'static Value {
        static SCHEMAS: OnceLock<[Value; 3]> = OnceLock::new();
        let schemas = SCHEMAS.get_or_init(|| {
            let crd = serde_json::to_value(blueprint_machine::api::blueprint_crd()).expect("CRDs serialize");
            let schema = |name: &str| {
                let versions = crd["spec"]["versions"].as_array().expect("a CRD has versions");
                let version = versions.iter().find(|v| v["name"] == name).expect("v1, v2 and v3 are served");
                version["schema"]["openAPIV3Schema"].clone()
            };
            [schema("v1"), schema("v2"), schema("v3")]
        });
        match version {
            ApiVersion::V1 => &schemas[0],
            ApiVersion::V2 => &schemas[1],
            ApiVersion::V3 => &schemas[2],
        }
    }
}

/// Reads Kubernetes objects: a `List`, or one or more YAML documents. The YAML budget grows with the
/// file (a real cluster of thousands of objects has millions of nodes), while the limits that stop
/// alias bombs and deep nesting stay at the parser's defaults; the file's text is dropped once it is
/// parsed, and every object is moved, not copied, into its type.
pub fn read_cluster(file: &Path) -> Result<ClusterObjects, InputError> {
    let text = read(file, crate::files::CLUSTER_FILE_LIMIT)?;
    let size = text.len();
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_nodes: size.max(250_000),
            max_events: (2 * size).max(1_000_000),
            max_total_scalar_bytes: size.max(64 << 20),
        },
    };
    let documents: Vec<Value> = serde_saphyr::from_multiple_with_options(&text, options)
        .map_err(|e| error(file, format!("not valid YAML: {e}")))?;
    drop(text);
    let mut items = Vec::new();
    for mut document in documents.into_iter().filter(|d| !d.is_null()) {
        let kind = document.get("kind").and_then(Value::as_str).unwrap_or("").to_owned();
        if kind == "List" || kind.ends_with("List") {
            match document.get_mut("items").map(Value::take) {
                Some(Value::Array(list)) => items.extend(list),
                Some(Value::Null) | None => {}
                Some(_) => return Err(error(file, format!("{kind}.items must be a list"))),
            }
        } else {
            items.push(document);
        }
    }
    let mut objects = ClusterObjects::default();
    for (index, item) in items.into_iter().enumerate() {
        let kind = item.get("kind").and_then(Value::as_str).unwrap_or("").to_owned();
        let name = item.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_owned();
        let label = format!("object {} ({kind} {name:?})", index + 1);
        match kind.as_str() {
            "Blueprint" => {
                // Stored as v3 by a real API server; a v2 Blueprint (an older snapshot) is converted.
                let item = convert(&item, ApiVersion::V3).map_err(|e| error(file, format!("{label}: {e}")))?;
                objects.blueprints.push(typed(file, &label, item)?)
            }
            "BlueprintMask" => objects.blueprint_masks.push(typed(file, &label, item)?),
            "Dogu" => objects.dogus.push(typed(file, &label, item)?),
            "Component" => objects.components.push(typed(file, &label, item)?),
            "ConfigMap" => objects.config_maps.push(typed(file, &label, item)?),
            "Secret" => objects.secrets.push(typed(file, &label, item)?),
            "Restore" => objects.restores.push(typed(file, &label, item)?),
            "DebugMode" => objects.debug_modes.push(typed(file, &label, item)?),
            "" => return Err(error(file, format!("{label} has no kind"))),
            _ => objects.ignored.push(format!("{kind}/{name}")),
        }
    }
    Ok(objects)
}

fn typed<T: DeserializeOwned>(file: &Path, label: &str, item: Value) -> Result<T, InputError> {
    serde_json::from_value(item).map_err(|e| error(file, format!("{label} is not valid: {e}")))
}

/// Looks up each wanted dogu's descriptor in the local dogu registry's ConfigMaps (`dogu-spec-<dogu>`,
/// as the controller does), then as `DIR/<namespace>/<name>/<version>.json`.
pub fn read_descriptors(
    config_maps: &[&ConfigMap],
    dir: Option<&Path>,
    wanted: &[(String, String)],
) -> Result<Vec<DescriptorEntry>, InputError> {
    let mut entries = Vec::with_capacity(wanted.len());
    for (name, version) in wanted {
        let local = config_maps.iter().find_map(|c| crate::descriptors::local::descriptor_in(c, name, version));
        let lookup = match (local, dir) {
            (Some(descriptor), _) => DescriptorLookup::Found { descriptor: descriptor.into() },
            (None, None) => DescriptorLookup::Unavailable {
                reason: "no dogu descriptors were given (plan --descriptors DIR) and the local dogu registry has none"
                    .into(),
            },
            (None, Some(dir)) => match descriptor_path(dir, name, version) {
                None => {
                    DescriptorLookup::Unavailable { reason: format!("{name} {version} cannot name a descriptor file") }
                }
                Some(path) if !path.exists() => DescriptorLookup::NotFound,
                Some(path) => {
                    let text = read(&path, crate::files::DESCRIPTOR_FILE_LIMIT)?;
                    let descriptor: DoguDescriptor =
                        serde_json::from_str(&text).map_err(|e| error(&path, format!("not a valid dogu.json: {e}")))?;
                    DescriptorLookup::Found { descriptor: descriptor.into() }
                }
            },
        };
        entries.push(DescriptorEntry { name: name.clone(), version: version.clone(), lookup });
    }
    Ok(entries)
}

/// `DIR/<namespace>/<name>/<version>.json`, or `None` if the parts would leave `DIR`.
fn descriptor_path(dir: &Path, name: &str, version: &str) -> Option<PathBuf> {
    let relative = PathBuf::from(format!("{name}/{version}.json"));
    let plain = relative.components().all(|c| matches!(c, PathComponent::Normal(_)));
    (plain && relative.components().count() == 3).then(|| dir.join(relative))
}
