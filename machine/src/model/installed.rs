//! What is installed, read from the Dogu and Component CRs. Objects are keyed by `metadata.name`, the
//! identity every write uses. An object that cannot be read is kept as a problem for that name, so
//! that it blocks only what concerns it.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Map, Value};

use super::by_name::ByName;
use super::dogu_readings::DoguReadings;
use super::{ComponentName, ComponentVersion, DoguName, DoguVersion, Mount, Quantity, ReverseProxy};
use crate::api;
use crate::observation::UndecodableObject;
use crate::problem::Problem;

pub(crate) const ANNOTATION_BODY_SIZE: &str = "nginx.ingress.kubernetes.io/proxy-body-size";
pub(crate) const ANNOTATION_REWRITE_TARGET: &str = "nginx.ingress.kubernetes.io/rewrite-target";
pub(crate) const ANNOTATION_CONFIGURATION_SNIPPET: &str = "nginx.ingress.kubernetes.io/configuration-snippet";

/// The dogu operator's default data volume size, which applies when a Dogu CR names none.
pub(crate) const DEFAULT_VOLUME_SIZE: &str = "2Gi";
/// [`DEFAULT_VOLUME_SIZE`] parsed once, not for every Dogu CR in every reconcile.
static DEFAULT_VOLUME: std::sync::LazyLock<Quantity> =
    std::sync::LazyLock::new(|| Quantity::parse(DEFAULT_VOLUME_SIZE).expect("the default size parses"));

/// What a Dogu CR's spec and status say, parsed and checked: a function of the object alone, so the
/// controller keeps it while the object is the same (see [`DoguReadings`]). Owns what it parsed; what
/// a reconcile reads as it is (health, start time, storage class) it borrows from the object instead,
/// see [`InstalledDogu`].
#[derive(Clone, Debug, PartialEq)]
pub struct DoguReading {
    pub name: DoguName,
    pub version: DoguVersion,
    pub installed_version: Option<DoguVersion>,
    pub min_volume_size: Quantity,
    pub reverse_proxy: ReverseProxy,
    pub mounts: Vec<Mount>,
    pub paused: bool,
}

/// A readable Dogu CR as one reconcile sees it: its reading, and what it borrows from the object.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InstalledDogu<'o> {
    reading: &'o DoguReading,
    pub health: &'o str,
    pub started_at: Option<&'o Time>,
    /// `spec.resources.storageClassName` as the CR has it (`None` = the cluster's default class).
    pub storage_class: Option<&'o str>,
}

impl std::ops::Deref for InstalledDogu<'_> {
    type Target = DoguReading;

    fn deref(&self) -> &DoguReading {
        self.reading
    }
}

impl<'o> InstalledDogu<'o> {
    fn of(reading: &'o DoguReading, dogu: &'o api::Dogu) -> Self {
        InstalledDogu {
            reading,
            health: health_of(dogu),
            started_at: dogu.status.as_ref().and_then(|s| s.started_at.as_ref()),
            storage_class: dogu.spec.resources.as_ref().and_then(|r| r.storage_class_name.as_deref()),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct InstalledComponent<'o> {
    pub name: ComponentName,
    pub version: ComponentVersion,
    pub installed_version: Option<ComponentVersion>,
    pub health: &'o str,
    /// Reconstructed from the CR: `deployNamespace` and `overwriteConfig` (the parsed values YAML).
    pub deploy_config: Map<String, Value>,
}

/// Everything read from the cluster's Dogu and Component CRs. Borrows from the observed objects, which
/// outlive one reconcile.
#[derive(Clone, Debug, Default)]
pub(crate) struct Installed<'o> {
    pub dogus: ByName<'o, InstalledDogu<'o>>,
    pub components: BTreeMap<&'o str, InstalledComponent<'o>>,
    /// Objects that exist but could not be read, by `metadata.name`.
    pub unreadable_dogus: BTreeMap<&'o str, Problem>,
    pub unreadable_components: BTreeMap<&'o str, Problem>,
    /// Health of every Dogu CR by name, readable or not (health does not need the spec).
    pub dogu_health: ByName<'o, &'o str>,
    pub component_health: BTreeMap<&'o str, &'o str>,
}

impl<'o> Installed<'o> {
    /// What the observed objects say; the Dogu CRs as `dogus` read them (readings of `objects`, see
    /// [`DoguReadings::is_of`]).
    pub(crate) fn read(
        objects: &'o [Arc<api::Dogu>],
        dogus: &'o DoguReadings,
        components: &'o [Arc<api::Component>],
        undecodable: &'o [UndecodableObject],
    ) -> Self {
        let mut installed = Installed::default();
        for object in undecodable {
            let problem = Problem::new(format!(
                "cannot read {} CR \"{}\": {}",
                object.kind.to_lowercase(),
                object.name,
                object.problem
            ));
            match object.kind.as_str() {
                "Dogu" => installed.unreadable_dogus.insert(&object.name, problem),
                "Component" => installed.unreadable_components.insert(&object.name, problem),
                _ => None,
            };
        }
        // The readings are in name order, so the lists are sorted already (see `ByName`).
        let mut readable = Vec::with_capacity(dogus.len());
        let mut health = Vec::with_capacity(dogus.len());
        for (dogu, reading) in dogus.of_objects(objects) {
            let name = dogu.metadata.name.as_deref().unwrap_or_default();
            health.push((name, health_of(dogu)));
            match reading {
                Ok(reading) => readable.push((name, InstalledDogu::of(reading, dogu))),
                Err(problem) => {
                    installed.unreadable_dogus.insert(name, problem.clone());
                }
            }
        }
        // Of two objects of one name (never from one cache), the later wins.
        installed.dogus = ByName::collect(readable);
        installed.dogu_health = ByName::collect(health);
        for component in components {
            let Some(name) = component.metadata.name.as_deref() else { continue };
            let health = component.status.as_ref().and_then(|s| s.health.as_deref()).unwrap_or_default();
            installed.component_health.insert(name, health);
            match InstalledComponent::read(name, component) {
                Ok(c) => {
                    installed.components.insert(name, c);
                }
                Err(p) => {
                    installed.unreadable_components.insert(name, p);
                }
            }
        }
        installed
    }
}

impl DoguReading {
    /// Reads the Dogu CR named `object_name`.
    pub(crate) fn read(object_name: &str, dogu: &api::Dogu) -> Result<Self, Problem> {
        let unreadable = |cause: Problem| Problem::wrap(format!("cannot read dogu CR \"{object_name}\""), vec![cause]);
        let spec = &dogu.spec;
        let name = DoguName::parse(&spec.name).map_err(unreadable)?;
        if name.simple != object_name {
            return Err(unreadable(Problem::new(format!(
                "spec.name \"{}\" does not match the object name",
                spec.name
            ))));
        }
        let version = DoguVersion::parse(&spec.version).map_err(unreadable)?;
        let status = dogu.status.as_ref();
        let installed_version = match status.and_then(|s| s.installed_version.as_deref()) {
            None | Some("") => None,
            Some(text) => Some(DoguVersion::parse(text).map_err(unreadable)?),
        };
        let resources = spec.resources.as_ref();
        let size_text = [
            resources.and_then(|r| r.min_data_volume_size.as_ref()),
            resources.and_then(|r| r.data_volume_size.as_ref()),
        ]
        .into_iter()
        .flatten()
        .map(|q| q.0.as_str())
        .filter(|text| !text.is_empty())
        .find(|text| Quantity::parse(text).map(|q| !q.is_zero()).unwrap_or(true));
        let min_volume_size = match size_text {
            Some(text) => Quantity::parse(text).map_err(unreadable)?,
            None => *DEFAULT_VOLUME,
        };
        let annotation = |key: &str| spec.additional_ingress_annotations.as_ref().and_then(|a| a.get(key));
        let max_body_size = match annotation(ANNOTATION_BODY_SIZE) {
            None => None,
            Some(text) => Some(Quantity::parse(text).map_err(unreadable)?),
        };
        let reverse_proxy = ReverseProxy {
            max_body_size,
            rewrite_target: annotation(ANNOTATION_REWRITE_TARGET).cloned().unwrap_or_default(),
            additional_config: annotation(ANNOTATION_CONFIGURATION_SNIPPET).cloned().unwrap_or_default(),
        };
        let mounts = spec
            .additional_mounts
            .iter()
            .flatten()
            .map(|m| Mount {
                source_type: m.source_type.clone(),
                name: m.name.clone(),
                volume: m.volume.clone(),
                subfolder: m.subfolder.clone().unwrap_or_default(),
            })
            .collect();
        Ok(DoguReading {
            name,
            version,
            installed_version,
            min_volume_size,
            reverse_proxy,
            mounts,
            paused: spec.pause_reconciliation.unwrap_or(false),
        })
    }
}

/// A Dogu CR's `status.health` (empty without one): read from any object, readable or not.
fn health_of(dogu: &api::Dogu) -> &str {
    dogu.status.as_ref().and_then(|s| s.health.as_deref()).unwrap_or_default()
}

impl<'o> InstalledComponent<'o> {
    fn read(object_name: &str, component: &'o api::Component) -> Result<Self, Problem> {
        let unreadable =
            |cause: Problem| Problem::wrap(format!("cannot read component CR \"{object_name}\""), vec![cause]);
        let spec = &component.spec;
        let name = ComponentName::parse(&format!("{}/{}", spec.namespace, object_name)).map_err(unreadable)?;
        let version = ComponentVersion::parse(&spec.version).map_err(unreadable)?;
        let status = component.status.as_ref();
        // An unreadable installed version means "not known yet", as upstream treats it.
        let installed_version =
            status.and_then(|s| s.installed_version.as_deref()).and_then(|v| ComponentVersion::parse(v).ok());
        let mut deploy_config = Map::new();
        if let Some(namespace) = spec.deploy_namespace.as_ref().filter(|n| !n.is_empty()) {
            deploy_config.insert("deployNamespace".into(), Value::String(namespace.clone()));
        }
        if let Some(text) = spec.values_yaml_overwrite.as_ref().filter(|t| !t.trim().is_empty()) {
            let values: Value = serde_saphyr::from_str(text)
                .map_err(|e| unreadable(Problem::new(format!("failed to unmarshal values yaml overwrite: {e}"))))?;
            if !values.is_null() {
                deploy_config.insert("overwriteConfig".into(), values);
            }
        }
        Ok(InstalledComponent {
            name,
            version,
            installed_version,
            health: status.and_then(|s| s.health.as_deref()).unwrap_or_default(),
            deploy_config,
        })
    }
}
