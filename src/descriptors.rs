//! Where dogu descriptors (`dogu.json`) come from. The controller asks a [`DescriptorSource`] for each
//! wanted dogu; the local store (the `dogu-spec-<dogu>` ConfigMaps shared with the dogu operator) is
//! read from the controller's cache, so looking up an installed dogu's descriptor makes no request.

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::reflector::{ObjectRef, Store};

use blueprint_machine::model::DoguDescriptor;
use blueprint_machine::observation::DescriptorLookup;

pub trait DescriptorSource: Send + Sync {
    /// The descriptor of `name` (`namespace/simple`) in `version`.
    fn lookup<'a>(&'a self, name: &'a str, version: &'a str) -> BoxFuture<'a, DescriptorLookup>;
}

/// The local dogu registry: ConfigMap `dogu-spec-<simple>`, one data key per version.
pub struct LocalDescriptors {
    config_maps: Store<ConfigMap>,
    namespace: String,
}

impl LocalDescriptors {
    pub fn new(config_maps: Store<ConfigMap>, namespace: impl Into<String>) -> Self {
        LocalDescriptors { config_maps, namespace: namespace.into() }
    }

    /// The descriptor if the local store has it for exactly this qualified name and version.
    pub fn get(&self, name: &str, version: &str) -> Option<DoguDescriptor> {
        let simple = name.rsplit('/').next().unwrap_or(name);
        let map = self.config_maps.get(&ObjectRef::new(&format!("dogu-spec-{simple}")).within(&self.namespace))?;
        let text = map.data.as_ref()?.get(version)?;
        let descriptor: DoguDescriptor = serde_json::from_str(text).ok()?;
        // The store is keyed by simple name: a descriptor of another namespace is not this dogu's.
        (descriptor.name == name).then_some(descriptor)
    }
}

impl DescriptorSource for LocalDescriptors {
    fn lookup<'a>(&'a self, name: &'a str, version: &'a str) -> BoxFuture<'a, DescriptorLookup> {
        Box::pin(async move {
            match self.get(name, version) {
                Some(descriptor) => DescriptorLookup::Found { descriptor },
                None => DescriptorLookup::Unavailable {
                    reason: format!(
                        "the local dogu registry has no descriptor of {name} {version} and this build has no remote registry client"
                    ),
                },
            }
        })
    }
}
