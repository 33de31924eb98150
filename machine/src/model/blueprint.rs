//! The Blueprint's spec parsed into domain types: every name, version and quantity checked once, here.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{ComponentName, ComponentVersion, DoguName, DoguVersion, Quantity};
use crate::api;
use crate::problem::Problem;

/// The boolean switches of a Blueprint spec (absent means false).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Flags {
    pub ignore_dogu_health: bool,
    pub ignore_component_health: bool,
    pub allow_dogu_namespace_switch: bool,
    pub stopped: bool,
}

/// Parsed names, versions and quantities are owned; free text (config keys and values, deploy config)
/// is borrowed from the Blueprint, which outlives one reconcile.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ParsedBlueprint<'a> {
    pub dogus: Vec<TargetDogu>,
    pub components: Vec<TargetComponent<'a>>,
    pub config: Config<'a>,
    pub mask: Vec<MaskDogu>,
    /// The `BlueprintMask` object the mask is in (`spec.blueprintMask.crRef.name`), for messages.
    pub mask_reference: Option<&'a str>,
    pub flags: Flags,
}

/// A dogu as the blueprint (or the effective blueprint) wants it.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetDogu {
    pub name: DoguName,
    pub version: Option<DoguVersion>,
    pub absent: bool,
    pub min_volume_size: Option<Quantity>,
    /// The storage class of the dogu's volume, set at install: `None` = the cluster's default class,
    /// `Some("")` = no class.
    pub storage_class: Option<String>,
    pub reverse_proxy: ReverseProxy,
    pub mounts: Vec<Mount>,
}

/// The nginx settings of a dogu (stored on the Dogu CR as ingress annotations).
#[derive(Clone, Debug, Default, Eq)]
pub struct ReverseProxy {
    pub max_body_size: Option<Quantity>,
    pub rewrite_target: String,
    pub additional_config: String,
}

/// Compared for every installed dogu in every reconcile, and nearly always empty (see `text`).
impl PartialEq for ReverseProxy {
    fn eq(&self, other: &Self) -> bool {
        self.max_body_size == other.max_body_size
            && crate::text::same(&self.rewrite_target, &other.rewrite_target)
            && crate::text::same(&self.additional_config, &other.additional_config)
    }
}

impl ReverseProxy {
    /// Empty means no setting at all; a body size of `0` (unlimited) is a setting.
    pub fn is_empty(&self) -> bool {
        self.max_body_size.is_none() && self.rewrite_target.is_empty() && self.additional_config.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mount {
    pub source_type: String,
    pub name: String,
    pub volume: String,
    /// `""` means none.
    pub subfolder: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TargetComponent<'a> {
    pub name: ComponentName,
    pub version: Option<ComponentVersion>,
    pub absent: bool,
    /// As written; static validation checks its keys and types.
    pub deploy_config: Option<&'a Value>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ConfigEntry<'a> {
    pub key: &'a str,
    pub absent: bool,
    pub value: Option<&'a str>,
    pub sensitive: bool,
    pub secret_ref: Option<&'a api::SecretReference>,
    pub config_ref: Option<&'a api::ConfigMapKeyReference>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Config<'a> {
    pub global: Vec<ConfigEntry<'a>>,
    /// Keyed by the dogu's simple name.
    pub dogus: BTreeMap<&'a str, Vec<ConfigEntry<'a>>>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MaskDogu {
    pub name: DoguName,
    pub version: Option<DoguVersion>,
    pub absent: bool,
}

/// Why a Blueprint cannot even be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ParseFailure {
    /// No `spec` or no `spec.blueprint`.
    MissingSpec,
    /// `spec.blueprintMask.crRef` names a `BlueprintMask` that does not exist.
    MaskNotFound(String),
    /// `spec.blueprintMask` has both a manifest and a reference (v3's rule refuses it on write; a
    /// v2 write or an older object may still have it).
    MaskBoth,
    /// Names, versions or quantities that do not parse.
    Malformed(Problem),
}

impl<'a> ParsedBlueprint<'a> {
    /// Parses `spec`; a mask reference is resolved among `masks` (the namespace's `BlueprintMask`s).
    pub(crate) fn parse(
        spec: Option<&'a api::BlueprintSpec>,
        masks: &[std::sync::Arc<api::BlueprintMaskObject>],
    ) -> Result<Self, ParseFailure> {
        let spec = spec.ok_or(ParseFailure::MissingSpec)?;
        let manifest = spec.blueprint.as_ref().ok_or(ParseFailure::MissingSpec)?;
        let flags = Flags {
            ignore_dogu_health: spec.ignore_dogu_health.unwrap_or(false),
            ignore_component_health: spec.ignore_component_health.unwrap_or(false),
            allow_dogu_namespace_switch: spec.allow_dogu_namespace_switch.unwrap_or(false),
            stopped: spec.stopped.unwrap_or(false),
        };

        let mut dogus = Vec::new();
        let mut dogu_problems = Vec::new();
        for dogu in manifest.dogus.iter().flatten() {
            match TargetDogu::parse(dogu) {
                Ok(d) => dogus.push(d),
                Err(p) => dogu_problems.push(p),
            }
        }
        let mut components = Vec::new();
        let mut component_problems = Vec::new();
        for component in manifest.components.iter().flatten() {
            match TargetComponent::parse(component) {
                Ok(c) => components.push(c),
                Err(p) => component_problems.push(p),
            }
        }
        let mut mask = Vec::new();
        let mut mask_problems = Vec::new();
        let inline_mask = spec.blueprint_mask.as_ref().and_then(|m| m.manifest.as_ref());
        let mask_reference = spec.blueprint_mask.as_ref().and_then(|m| m.cr_ref.as_ref()).map(|r| r.name.as_str());
        let mask_dogus = match (inline_mask, mask_reference) {
            (Some(_), Some(_)) => return Err(ParseFailure::MaskBoth),
            (Some(manifest), None) => manifest.dogus.as_deref(),
            (None, Some(name)) => {
                let object = masks
                    .iter()
                    .find(|m| m.metadata.name.as_deref() == Some(name))
                    .ok_or_else(|| ParseFailure::MaskNotFound(name.to_owned()))?;
                object.spec.dogus.as_deref()
            }
            (None, None) => None,
        };
        for dogu in mask_dogus.into_iter().flatten() {
            match MaskDogu::parse(dogu) {
                Ok(m) => mask.push(m),
                Err(p) => mask_problems.push(p),
            }
        }

        let blueprint_problems: Vec<Problem> = [
            Problem::wrap_all("cannot convert blueprint dogus", dogu_problems),
            Problem::wrap_all("cannot convert blueprint components", component_problems),
        ]
        .into_iter()
        .flatten()
        .collect();
        let problems: Vec<Problem> = [
            Problem::wrap_all("cannot deserialize blueprint", blueprint_problems),
            Problem::wrap_all(mask_subject(mask_reference), {
                Problem::wrap_all("cannot convert blueprint dogus", mask_problems).into_iter().collect()
            }),
        ]
        .into_iter()
        .flatten()
        .collect();
        if let Some(problem) = Problem::join(problems) {
            return Err(ParseFailure::Malformed(problem));
        }

        Ok(ParsedBlueprint {
            dogus,
            components,
            config: Config::from_api(manifest.config.as_ref()),
            mask,
            mask_reference,
            flags,
        })
    }
}

/// What a mask problem is about: the inline mask, or the `BlueprintMask` it is in.
fn mask_subject(reference: Option<&str>) -> String {
    match reference {
        None => "cannot deserialize blueprint mask".to_owned(),
        Some(name) => format!("cannot deserialize blueprint mask of BlueprintMask \"{name}\""),
    }
}

impl TargetDogu {
    fn parse(dogu: &api::BlueprintDogu) -> Result<Self, Problem> {
        let name = DoguName::parse(&dogu.name)?;
        let version =
            match dogu.version.as_deref() {
                None | Some("") => None,
                Some(text) => Some(DoguVersion::parse(text).map_err(|e| {
                    Problem::wrap(format!("could not parse version of target dogu \"{name}\""), vec![e])
                })?),
            };
        let platform = dogu.platform_config.as_ref();
        let min_volume_size = match platform.and_then(|p| p.resource.as_ref()).map(|r| r.min_volume_size.as_deref()) {
            None | Some(None) => None,
            // An empty size means "the default" and is kept as an explicit zero.
            Some(Some("" | "<nil>")) => Some(Quantity::ZERO),
            Some(Some(text)) => Some(Quantity::parse(text).map_err(|_| {
                Problem::new(format!("could not parse minimum volume size \"{text}\" for dogu \"{name}\""))
            })?),
        };
        let proxy = platform.and_then(|p| p.reverse_proxy.as_ref());
        let max_body_size = match proxy.and_then(|p| p.max_body_size.as_deref()) {
            None | Some("" | "<nil>") => None,
            Some(text) => Some(Quantity::parse(text).map_err(|_| {
                Problem::new(format!("could not parse maximum proxy body size \"{text}\" for dogu \"{name}\""))
            })?),
        };
        let reverse_proxy = ReverseProxy {
            max_body_size,
            rewrite_target: proxy.and_then(|p| p.rewrite_target.clone()).unwrap_or_default(),
            additional_config: proxy.and_then(|p| p.additional_config.clone()).unwrap_or_default(),
        };
        let mounts = platform
            .and_then(|p| p.additional_mounts.as_ref())
            .map(|mounts| mounts.iter().map(Mount::from_api).collect())
            .unwrap_or_default();
        let storage_class = platform.and_then(|p| p.resource.as_ref()).and_then(|r| r.storage_class_name.clone());
        Ok(TargetDogu {
            name,
            version,
            absent: dogu.absent.unwrap_or(false),
            min_volume_size,
            storage_class,
            reverse_proxy,
            mounts,
        })
    }

    /// Whether `written` is what [`to_api`](Self::to_api) writes, without building it (see
    /// `EffectiveBlueprint::written_as`). A platform config is rare: it is compared as built.
    pub(crate) fn written_as(&self, written: &api::BlueprintDogu) -> bool {
        let name = (self.name.namespace.as_str(), self.name.simple.as_str());
        written.name.split_once('/') == Some(name)
            && written.version.as_deref() == self.version.as_ref().map(DoguVersion::raw)
            && written.absent == Some(self.absent)
            && match &written.platform_config {
                None => !self.has_platform_config(),
                Some(_) => self.to_api() == *written,
            }
    }

    fn has_resource(&self) -> bool {
        self.min_volume_size.is_some() || self.storage_class.is_some()
    }

    fn has_platform_config(&self) -> bool {
        self.has_resource() || !self.reverse_proxy.is_empty() || !self.mounts.is_empty()
    }

    /// The dogu as written to `status.effectiveBlueprint`.
    pub fn to_api(&self) -> api::BlueprintDogu {
        let has_resource = self.has_resource();
        let has_platform_config = self.has_platform_config();
        api::BlueprintDogu {
            name: self.name.to_string(),
            version: self.version.as_ref().map(|v| v.raw().to_owned()),
            absent: Some(self.absent),
            platform_config: has_platform_config.then(|| {
                Box::new(api::PlatformConfig {
                    resource: has_resource.then(|| api::ResourceConfig {
                        min_volume_size: self.min_volume_size.map(|q| q.canonical()),
                        storage_class_name: self.storage_class.clone(),
                    }),
                    reverse_proxy: (!self.reverse_proxy.is_empty()).then(|| self.reverse_proxy.to_api()),
                    additional_mounts: (!self.mounts.is_empty())
                        .then(|| self.mounts.iter().map(Mount::to_api).collect()),
                })
            }),
        }
    }
}

impl ReverseProxy {
    pub fn to_api(&self) -> api::ReverseProxyConfig {
        let non_empty = |s: &String| (!s.is_empty()).then(|| s.clone());
        api::ReverseProxyConfig {
            max_body_size: self.max_body_size.map(|q| q.canonical()),
            rewrite_target: non_empty(&self.rewrite_target),
            additional_config: non_empty(&self.additional_config),
        }
    }
}

impl Mount {
    pub fn from_api(mount: &api::AdditionalMount) -> Self {
        Mount {
            source_type: mount.source_type.clone(),
            name: mount.name.clone(),
            volume: mount.volume.clone(),
            subfolder: mount.subfolder.clone().unwrap_or_default(),
        }
    }

    pub fn to_api(&self) -> api::AdditionalMount {
        api::AdditionalMount {
            source_type: self.source_type.clone(),
            name: self.name.clone(),
            volume: self.volume.clone(),
            subfolder: (!self.subfolder.is_empty()).then(|| self.subfolder.clone()),
        }
    }
}

impl<'a> TargetComponent<'a> {
    fn parse(component: &'a api::BlueprintComponent) -> Result<Self, Problem> {
        let name = ComponentName::parse(&component.name)?;
        let version = match component.version.as_deref() {
            None | Some("") => None,
            Some(text) => Some(ComponentVersion::parse(text).map_err(|e| {
                Problem::wrap(format!("could not parse version of target component \"{name}\""), vec![e])
            })?),
        };
        Ok(TargetComponent {
            name,
            version,
            absent: component.absent.unwrap_or(false),
            deploy_config: component.deploy_config.as_ref(),
        })
    }

    /// The deploy config as a map; `None` when it is absent, `null` or not an object (static validation
    /// reports the latter).
    pub fn deploy_config_map(&self) -> Option<&'a Map<String, Value>> {
        self.deploy_config.and_then(Value::as_object)
    }

    pub fn to_api(&self) -> api::BlueprintComponent {
        api::BlueprintComponent {
            name: self.name.to_string(),
            // Absent components are written without a version, as upstream does.
            version: if self.absent { None } else { self.version.as_ref().map(|v| v.to_string()) },
            absent: Some(self.absent),
            deploy_config: self.deploy_config_map().filter(|m| !m.is_empty()).map(|m| Value::Object(m.clone())),
        }
    }
}

impl MaskDogu {
    fn parse(dogu: &api::MaskDogu) -> Result<Self, Problem> {
        let name = DoguName::parse(&dogu.name)?;
        let version = match dogu.version.as_deref() {
            None | Some("") => None,
            Some(text) => Some(
                DoguVersion::parse(text)
                    .map_err(|e| Problem::wrap(format!("could not parse version of mask dogu \"{name}\""), vec![e]))?,
            ),
        };
        Ok(MaskDogu { name, version, absent: dogu.absent.unwrap_or(false) })
    }
}

impl<'a> ConfigEntry<'a> {
    fn from_api(entry: &'a api::ConfigEntry) -> Self {
        ConfigEntry {
            key: &entry.key,
            absent: entry.absent.unwrap_or(false),
            value: entry.value.as_deref(),
            sensitive: entry.sensitive.unwrap_or(false),
            secret_ref: entry.secret_ref.as_deref(),
            config_ref: entry.config_ref.as_deref(),
        }
    }

    /// Whether `written` is what [`to_api`](Self::to_api) writes, without building it.
    pub(crate) fn written_as(self, written: &api::ConfigEntry) -> bool {
        written.key == self.key
            && written.absent == self.absent.then_some(true)
            && written.value.as_deref() == if self.sensitive { None } else { self.value }
            && written.sensitive == self.sensitive.then_some(true)
            && written.secret_ref.as_deref() == self.secret_ref
            && written.config_ref.as_deref() == self.config_ref
    }

    /// The entry as written to `status.effectiveBlueprint`: never a sensitive value.
    pub(crate) fn to_api(self) -> api::ConfigEntry {
        api::ConfigEntry {
            key: self.key.to_owned(),
            absent: self.absent.then_some(true),
            value: if self.sensitive { None } else { self.value.map(str::to_owned) },
            sensitive: self.sensitive.then_some(true),
            secret_ref: self.secret_ref.cloned().map(Box::new),
            config_ref: self.config_ref.cloned().map(Box::new),
        }
    }
}

impl<'a> Config<'a> {
    fn from_api(config: Option<&'a api::BlueprintConfig>) -> Self {
        let Some(config) = config else {
            return Config::default();
        };
        Config {
            global: config.global.iter().flatten().map(ConfigEntry::from_api).collect(),
            dogus: config
                .dogus
                .iter()
                .flatten()
                .map(|(dogu, entries)| (dogu.as_str(), entries.iter().map(ConfigEntry::from_api).collect()))
                .collect(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.global.is_empty() && self.dogus.is_empty()
    }

    /// Whether `written` is what [`to_api`](Self::to_api) writes, without building it.
    pub(crate) fn written_as(&self, written: Option<&api::BlueprintConfig>) -> bool {
        let Some(written) = written else { return self.is_empty() };
        let entries_match = |entries: &Vec<ConfigEntry>, written: &Vec<api::ConfigEntry>| {
            written_list(entries.iter(), Some(written.iter()), |entry, w| entry.written_as(w))
        };
        let dogus_match = written_list(self.dogus.iter(), written.dogus.as_ref().map(|d| d.iter()), |ours, w| {
            *ours.0 == w.0.as_str() && entries_match(ours.1, w.1)
        });
        let global_match =
            written_list(self.global.iter(), written.global.as_ref().map(|g| g.iter()), |e, w| e.written_as(w));
        !self.is_empty() && dogus_match && global_match
    }

    pub(crate) fn to_api(&self) -> Option<api::BlueprintConfig> {
        if self.is_empty() {
            return None;
        }
        Some(api::BlueprintConfig {
            dogus: (!self.dogus.is_empty()).then(|| {
                self.dogus
                    .iter()
                    .map(|(dogu, entries)| {
                        ((*dogu).to_owned(), entries.iter().copied().map(ConfigEntry::to_api).collect())
                    })
                    .collect()
            }),
            global: (!self.global.is_empty()).then(|| self.global.iter().copied().map(ConfigEntry::to_api).collect()),
        })
    }
}

/// Whether a list written to the status (`None` where there was nothing to write) holds, item by item,
/// what `ours` writes: the shape of every list in `status.effectiveBlueprint`.
pub(crate) fn written_list<T, W>(
    ours: impl ExactSizeIterator<Item = T>,
    written: Option<impl ExactSizeIterator<Item = W>>,
    mut same: impl FnMut(T, W) -> bool,
) -> bool {
    match written {
        None => ours.len() == 0,
        Some(written) => ours.len() != 0 && ours.len() == written.len() && ours.zip(written).all(|(o, w)| same(o, w)),
    }
}
