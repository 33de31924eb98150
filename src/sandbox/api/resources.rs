//! The resources the emulator serves: the project's CRDs (from their generated manifests) and the
//! built-in kinds the operator and kubectl use.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

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
}

impl ResourceType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// Resource key used in storage: `group/plural`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.group, self.plural)
    }

    pub fn from_crd(crd: &CustomResourceDefinition) -> Vec<ResourceType> {
        let names = &crd.spec.names;
        crd.spec
            .versions
            .iter()
            .filter(|v| v.served)
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
        blueprint_machine::api::dogu_crd(),
        blueprint_machine::api::component_crd(),
    ] {
        types.extend(ResourceType::from_crd(&crd));
    }
    types
}

/// The CRD objects the emulator lists (so that `kubectl get crds` shows them).
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        blueprint_machine::api::blueprint_crd(),
        blueprint_machine::api::dogu_crd(),
        blueprint_machine::api::component_crd(),
    ]
}
