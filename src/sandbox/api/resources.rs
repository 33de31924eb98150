//! The resources the emulator serves: the project's CRDs (from their generated manifests) and the
//! built-in kinds the operator and kubectl use.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion,
};
use serde_json::{Value, json};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceType {
    /// `""` for the core group.
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub namespaced: bool,
    /// Whether `status` is a subresource: writes to the object ignore it, writes to `/status` change
    /// only it, and `generation` counts spec changes.
    pub status_subresource: bool,
    /// Custom resources count `metadata.generation`; most built-in kinds without spec do not.
    pub generation: bool,
    /// The version objects of this kind are stored in (the CRD's storage version; a built-in kind's
    /// own). Objects of another served version are converted on the way in and out.
    pub storage_version: String,
}

impl ResourceType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// Resource key used in storage: `group/plural`. Core `v1` Events share the storage of
    /// `events.k8s.io/v1` Events, as on a real server (one object, two shapes).
    pub fn key(&self) -> String {
        if self.is_core_event() { "events.k8s.io/events".into() } else { format!("{}/{}", self.group, self.plural) }
    }

    /// Core `v1` Events: a read-only view of the stored `events.k8s.io/v1` Events (the operator
    /// writes those; `kubectl get events` and `describe` read these).
    pub fn is_core_event(&self) -> bool {
        self.group.is_empty() && self.plural == "events"
    }

    /// A stored object as this resource shows it: an `events.k8s.io/v1` Event in the core shape for
    /// the core view, an object of a CRD in this resource's version, anything else as stored.
    pub fn present(&self, stored: &Value) -> Value {
        if self.is_core_event() {
            core_event(stored)
        } else if self.version != self.storage_version {
            convert(stored, &self.group, &self.version)
        } else {
            stored.clone()
        }
    }

    /// An object written through this resource as it is stored (in the storage version).
    pub fn stored_form(&self, written: Value) -> Value {
        if self.version == self.storage_version {
            written
        } else {
            convert(&written, &self.group, &self.storage_version)
        }
    }

    /// The served versions of a CRD, the preferred (highest) version first as discovery lists them.
    pub fn from_crd(crd: &CustomResourceDefinition) -> Vec<ResourceType> {
        let names = &crd.spec.names;
        let storage_version = crd.spec.versions.iter().find(|v| v.storage).map(|v| v.name.clone()).unwrap_or_default();
        let mut served: Vec<&CustomResourceDefinitionVersion> = crd.spec.versions.iter().filter(|v| v.served).collect();
        // Kubernetes' version priority for the plain `vN` names the project's CRDs use: higher first.
        served.sort_by_key(|v| std::cmp::Reverse(v.name.trim_start_matches('v').parse::<u32>().unwrap_or(0)));
        served
            .into_iter()
            .map(|version| ResourceType {
                group: crd.spec.group.clone(),
                version: version.name.clone(),
                kind: names.kind.clone(),
                plural: names.plural.clone(),
                singular: names.singular.clone().unwrap_or_else(|| names.kind.to_lowercase()),
                short_names: names.short_names.clone().unwrap_or_default(),
                namespaced: crd.spec.scope == "Namespaced",
                status_subresource: version.subresources.as_ref().is_some_and(|s| s.status.is_some()),
                generation: true,
                storage_version: storage_version.clone(),
            })
            .collect()
    }

    fn builtin(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        ResourceType {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            singular: kind.to_lowercase(),
            short_names: vec![],
            namespaced,
            status_subresource: false,
            generation: false,
            storage_version: version.into(),
        }
    }
}

/// Every resource type the emulator serves.
pub fn all() -> Vec<ResourceType> {
    let mut types = vec![
        ResourceType {
            short_names: vec!["cm".into()],
            ..ResourceType::builtin("", "v1", "ConfigMap", "configmaps", true)
        },
        ResourceType::builtin("", "v1", "Secret", "secrets", true),
        ResourceType {
            short_names: vec!["ns".into()],
            ..ResourceType::builtin("", "v1", "Namespace", "namespaces", false)
        },
        ResourceType { short_names: vec!["ev".into()], ..ResourceType::builtin("", "v1", "Event", "events", true) },
        ResourceType {
            short_names: vec!["ev".into()],
            ..ResourceType::builtin("events.k8s.io", "v1", "Event", "events", true)
        },
        ResourceType::builtin("coordination.k8s.io", "v1", "Lease", "leases", true),
        ResourceType {
            short_names: vec!["crd".into(), "crds".into()],
            status_subresource: true,
            ..ResourceType::builtin(
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
                "customresourcedefinitions",
                false,
            )
        },
    ];
    for crd in [
        blueprint_machine::api::blueprint_crd(),
        blueprint_machine::api::blueprint_mask_crd(),
        blueprint_machine::api::dogu_crd(),
        blueprint_machine::api::component_crd(),
    ] {
        types.extend(ResourceType::from_crd(&crd));
    }
    types
}

/// The CRD objects the emulator lists (so that `kubectl get crds` shows them), made from the types
/// once per process (tables and OpenAPI documents read them on every request).
pub fn crds() -> &'static [CustomResourceDefinition] {
    static CRDS: std::sync::OnceLock<Vec<CustomResourceDefinition>> = std::sync::OnceLock::new();
    CRDS.get_or_init(|| {
        vec![
            blueprint_machine::api::blueprint_crd(),
            blueprint_machine::api::blueprint_mask_crd(),
            blueprint_machine::api::dogu_crd(),
            blueprint_machine::api::component_crd(),
        ]
    })
}

/// The CRD's definition of `resource`'s version (printer columns, schema); `None` for built-in kinds.
pub fn crd_version(resource: &ResourceType) -> Option<&'static CustomResourceDefinitionVersion> {
    crds()
        .iter()
        .find(|c| c.spec.group == resource.group && c.spec.names.plural == resource.plural)?
        .spec
        .versions
        .iter()
        .find(|v| v.name == resource.version)
}

/// `object` in `version` of `group`: a Blueprint through the one conversion of the project (as the
/// API server does through the operator's webhook); an object of another kind has the same schema in
/// every version here, so only its `apiVersion` changes. An object the conversion refuses is shown
/// as stored (it was converted on its way in, so this does not happen to what the emulator stores).
fn convert(object: &Value, group: &str, version: &str) -> Value {
    use blueprint_machine::conversion::{ApiVersion, convert};

    let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
    let target = ApiVersion::parse(&format!("{group}/{version}")).map(|(_, v)| v);
    match target {
        Some(to) if kind == "Blueprint" => convert(object, to).unwrap_or_else(|_| object.clone()),
        _ => {
            let mut converted = object.clone();
            converted["apiVersion"] = json!(format!("{group}/{version}"));
            converted
        }
    }
}

/// An `events.k8s.io/v1` Event in the core `v1` shape, field by field as the API server converts it.
fn core_event(event: &Value) -> Value {
    let mut core = serde_json::Map::new();
    core.insert("apiVersion".into(), json!("v1"));
    core.insert("kind".into(), json!("Event"));
    for (from, to) in [
        ("metadata", "metadata"),
        ("regarding", "involvedObject"),
        ("related", "related"),
        ("reason", "reason"),
        ("type", "type"),
        ("action", "action"),
        ("note", "message"),
        ("eventTime", "eventTime"),
        ("series", "series"),
        ("reportingController", "reportingComponent"),
        ("reportingInstance", "reportingInstance"),
        ("deprecatedSource", "source"),
        ("deprecatedFirstTimestamp", "firstTimestamp"),
        ("deprecatedLastTimestamp", "lastTimestamp"),
        ("deprecatedCount", "count"),
    ] {
        if let Some(value) = event.get(from).filter(|v| !v.is_null()) {
            core.insert(to.into(), value.clone());
        }
    }
    if let Some(series) = core.get_mut("series").and_then(Value::as_object_mut) {
        series.remove("state");
    }
    Value::Object(core)
}
