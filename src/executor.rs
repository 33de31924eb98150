//! Performs a decision's actions, each idempotently:
//!
//! - creates tolerate `AlreadyExists` when the existing object is the one wanted;
//! - deletes tolerate `NotFound`;
//! - Dogu and Component changes are JSON merge patches of only the fields the blueprint owns (explicit
//!   `null` removes a setting). Merge patches rather than server-side apply: the dogu operator writes
//!   the same objects (`pauseReconciliation`, status), and a merge patch of a few fields neither claims
//!   ownership of fields we do not send nor needs forced conflicts;
//! - config writes are conditional on the `resourceVersion` the decision was based on (a merge patch
//!   carrying `metadata.resourceVersion`): if the object changed meanwhile, the write fails with 409 and
//!   the reconcile decides again on fresh state, so nothing written by someone else is lost.
//!
//! Secret values are read from the referenced Secret at the moment of writing and never logged or
//! put into an error message.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use blueprint_machine::api::{Component, Dogu};
use blueprint_machine::config_format::{self, DATA_KEY};
use blueprint_machine::decision::{Action, ConfigTarget, ConfigValue, FailureKind, Operation};
use blueprint_machine::keys_from_secrets;
use blueprint_machine::naming::FIELD_MANAGER;
use blueprint_machine::observation::ObjectBase;
use blueprint_machine::secret_access::SecretAccess;

use crate::observe::decoded::Decoded;

/// Why an action could not be performed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
}

impl Failure {
    fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Failure { kind, message: message.into() }
    }
}

/// The cached objects a config write is based on.
#[derive(Clone)]
pub struct ConfigStores {
    pub config_maps: Store<Decoded<ConfigMap>>,
    pub sensitive_configs: Store<Decoded<Secret>>,
}

pub struct Executor {
    client: Client,
    namespace: String,
    stores: ConfigStores,
    /// Which Secrets a blueprint may read: checked again on the Secret read at the write (D53).
    secret_access: SecretAccess,
}

impl Executor {
    pub fn new(
        client: Client,
        namespace: impl Into<String>,
        stores: ConfigStores,
        secret_access: SecretAccess,
    ) -> Self {
        Executor { client, namespace: namespace.into(), stores, secret_access }
    }

    fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    pub async fn perform(&self, action: &Action) -> Result<(), Failure> {
        let post = PostParams { field_manager: Some(FIELD_MANAGER.to_owned()), ..Default::default() };
        let patch = PatchParams { field_manager: Some(FIELD_MANAGER.to_owned()), ..Default::default() };
        match &action.operation {
            Operation::CreateDogu { object } => {
                create_or_accept(&self.api::<Dogu>(), &post, object.as_ref(), Dogu::installs_the_same).await
            }
            Operation::PatchDogu { name, patch: body } => {
                self.api::<Dogu>().patch(name, &patch, &Patch::Merge(body)).await.map(drop).map_err(|e| failure(&e))
            }
            Operation::DeleteDogu { name } => {
                tolerate_not_found(self.api::<Dogu>().delete(name, &DeleteParams::default()).await)
            }
            Operation::CreateComponent { object } => {
                create_or_accept(&self.api::<Component>(), &post, object.as_ref(), Component::installs_the_same).await
            }
            Operation::PatchComponent { name, patch: body } => self
                .api::<Component>()
                .patch(name, &patch, &Patch::Merge(body))
                .await
                .map(drop)
                .map_err(|e| failure(&e)),
            Operation::DeleteComponent { name } => {
                tolerate_not_found(self.api::<Component>().delete(name, &DeleteParams::default()).await)
            }
            Operation::WriteConfig { target, base, set, remove } => self.write_config(target, base, set, remove).await,
        }
    }

    async fn write_config(
        &self,
        target: &ConfigTarget,
        base: &ObjectBase,
        set: &[blueprint_machine::decision::ConfigSet],
        remove: &[String],
    ) -> Result<(), Failure> {
        let sensitive = matches!(target, ConfigTarget::Sensitive(_));
        let Current { mut entries, mut from_secrets, resource_version } = self.current(target, base)?;
        let mut values = Vec::with_capacity(set.len());
        for entry in set {
            let (value, from_secret) = match &entry.value {
                ConfigValue::Value(value) => (value.clone(), false),
                ConfigValue::SecretRef(reference) => (self.secret_value(&reference.name, &reference.key).await?, true),
            };
            values.push(keys_from_secrets::Set { key: entry.key.as_str(), value, from_secret });
        }
        // A failure may quote what was sent: withhold it where a value came from a Secret.
        let had_keys_from_secrets = !from_secrets.is_empty();
        let withhold = sensitive || had_keys_from_secrets || values.iter().any(|v| v.from_secret);
        keys_from_secrets::apply(&mut entries, &mut from_secrets, values, remove.iter().map(String::as_str))
            .map_err(|e| Failure::new(FailureKind::Rejected, e.to_string()))?;
        let text = config_format::render(&entries);
        // The annotation is touched where it names keys before or after the write (`null` removes it).
        let annotation = keys_from_secrets::render(&from_secrets);
        let annotation = (annotation.is_some() || had_keys_from_secrets).then_some(annotation);
        self.send(target, text, annotation, resource_version).await.map_err(|e| {
            let mut failure = failure(&e);
            if withhold {
                // The API server's message may quote what was sent; keep only what kind of failure it was.
                failure.message = format!("writing {} failed ({:?})", target.object(), failure.kind);
            }
            failure
        })
    }

    /// The content a config write is based on, from the cache the decision observed it in; a conflict
    /// if the object changed since.
    fn current(&self, target: &ConfigTarget, base: &ObjectBase) -> Result<Current, Failure> {
        let ObjectBase::Version(version) = base else {
            return Ok(Current { entries: BTreeMap::new(), from_secrets: BTreeSet::new(), resource_version: None });
        };
        let name = target.object_name();
        let sensitive = matches!(target, ConfigTarget::Sensitive(_));
        let (text, annotation, cached_version) = if sensitive {
            let secret = self
                .stores
                .sensitive_configs
                .get(&ObjectRef::new(&name).within(&self.namespace))
                .and_then(|d| d.object().cloned());
            let text = secret.as_ref().and_then(|s| s.data.as_ref()?.get(DATA_KEY).cloned());
            let text = text.map(|b| String::from_utf8_lossy(&b.0).into_owned());
            (text, None, secret.and_then(|s| s.metadata.resource_version.clone()))
        } else {
            let map = self
                .stores
                .config_maps
                .get(&ObjectRef::new(&name).within(&self.namespace))
                .and_then(|d| d.object().cloned());
            let text = map.as_ref().and_then(|m| m.data.as_ref()?.get(DATA_KEY).cloned());
            let annotation =
                map.as_ref().and_then(|m| m.metadata.annotations.as_ref()?.get(keys_from_secrets::ANNOTATION).cloned());
            (text, annotation, map.and_then(|m| m.metadata.resource_version.clone()))
        };
        if cached_version.as_deref() != Some(version.as_str()) {
            return Err(Failure::new(
                FailureKind::Conflict,
                format!("{} changed since it was observed", target.object()),
            ));
        }
        let from_secrets = match annotation {
            Some(text) => keys_from_secrets::parse(&text).map_err(|e| Failure::new(FailureKind::Rejected, e))?,
            None => BTreeSet::new(),
        };
        let entries = config_format::parse(text.as_deref().unwrap_or("")).map_err(|e| {
            let message = if sensitive || !from_secrets.is_empty() {
                "config.yaml is not in the registry format".to_owned()
            } else {
                e.to_string()
            };
            Failure::new(FailureKind::Rejected, message)
        })?;
        Ok(Current { entries, from_secrets, resource_version: Some(version.clone()) })
    }

    /// Creates the config object with `text` (no `resource_version`), or patches it conditional on
    /// `resource_version`. `annotation` (ConfigMaps): `None` leaves the keys-from-Secrets annotation as
    /// it is, `Some(None)` removes it.
    async fn send(
        &self,
        target: &ConfigTarget,
        text: String,
        annotation: Option<Option<String>>,
        resource_version: Option<String>,
    ) -> Result<(), kube::Error> {
        let name = target.object_name();
        let labels = Some(target.labels());
        let patch = PatchParams { field_manager: Some(FIELD_MANAGER.to_owned()), ..Default::default() };
        let post = PostParams { field_manager: Some(FIELD_MANAGER.to_owned()), ..Default::default() };
        if matches!(target, ConfigTarget::Sensitive(_)) {
            let api = self.api::<Secret>();
            let data = ByteString(text.into_bytes());
            return match resource_version {
                None => {
                    let metadata = ObjectMeta { name: Some(name), labels, ..Default::default() };
                    let data = Some([(DATA_KEY.to_owned(), data)].into());
                    let secret = Secret { metadata, data, type_: Some("Opaque".into()), ..Default::default() };
                    api.create(&post, &secret).await.map(drop)
                }
                Some(version) => {
                    let body = json!({"metadata": {"resourceVersion": version}, "data": {DATA_KEY: data}});
                    api.patch(&name, &patch, &Patch::Merge(&body)).await.map(drop)
                }
            };
        }
        let api = self.api::<ConfigMap>();
        match resource_version {
            None => {
                let annotations =
                    annotation.flatten().map(|keys| [(keys_from_secrets::ANNOTATION.to_owned(), keys)].into());
                let metadata = ObjectMeta { name: Some(name), labels, annotations, ..Default::default() };
                let map =
                    ConfigMap { metadata, data: Some([(DATA_KEY.to_owned(), text)].into()), ..Default::default() };
                api.create(&post, &map).await.map(drop)
            }
            Some(version) => {
                let mut body = json!({"metadata": {"resourceVersion": version}, "data": {DATA_KEY: text}});
                if let Some(annotation) = annotation {
                    body["metadata"]["annotations"] = json!({keys_from_secrets::ANNOTATION: annotation});
                }
                api.patch(&name, &patch, &Patch::Merge(&body)).await.map(drop)
            }
        }
    }

    /// The value of a referenced Secret key, read now.
    async fn secret_value(&self, name: &str, key: &str) -> Result<String, Failure> {
        // Decoded on its own: a Secret that does not fit is never logged whole by the client.
        let secret = self.api::<Decoded<Secret>>().get_opt(name).await.map_err(|e| failure(&e))?;
        let secret = secret.ok_or_else(|| {
            Failure::new(FailureKind::NotFound, format!("referenced secret \"{name}\" does not exist"))
        })?;
        let Decoded::Object(secret) = secret else {
            return Err(Failure::new(
                FailureKind::Rejected,
                format!("referenced secret \"{name}\" cannot be read: it does not fit the Secret type"),
            ));
        };
        // The decision saw a Secret it may read; this read may find another under that name since.
        let traits = crate::observe::secret_traits(&secret);
        if let Some(why) = blueprint_machine::secret_access::refusal(name, &traits, &self.secret_access) {
            return Err(Failure::new(FailureKind::Rejected, format!("secret \"{name}\" cannot be referenced: {why}")));
        }
        let value = secret.data.as_ref().and_then(|d| d.get(key)).ok_or_else(|| {
            Failure::new(FailureKind::NotFound, format!("referenced key \"{key}\" in secret \"{name}\" does not exist"))
        })?;
        String::from_utf8(value.0.clone()).map_err(|_| {
            Failure::new(
                FailureKind::Rejected,
                format!("referenced key \"{key}\" in secret \"{name}\" is not UTF-8 text"),
            )
        })
    }
}

/// What a config write is based on: the object's entries, the keys its annotation says came from
/// Secrets, and the `resourceVersion` the write is conditional on (`None`: the object is created).
struct Current {
    entries: BTreeMap<String, String>,
    from_secrets: BTreeSet<String>,
    resource_version: Option<String>,
}

/// Creates `object`; an object of that name that exists already counts as created when it installs
/// the same (the machine's judgement: a create repeated after a crash, or a concurrent operator).
async fn create_or_accept<K>(
    api: &Api<K>,
    post: &PostParams,
    object: &K,
    installs_the_same: fn(&K, &K) -> bool,
) -> Result<(), Failure>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    match api.create(post, object).await {
        Err(e) if is_already_exists(&e) => {
            let name = object.meta().name.as_deref().unwrap_or_default();
            let existing = api.get(name).await.map_err(|e| failure(&e))?;
            if installs_the_same(&existing, object) {
                Ok(())
            } else {
                let plural = K::plural(&()).into_owned();
                Err(Failure::new(FailureKind::Conflict, format!("{plural}/{name} already exists and differs")))
            }
        }
        other => other.map(drop).map_err(|e| failure(&e)),
    }
}

fn tolerate_not_found(result: Result<impl Sized, kube::Error>) -> Result<(), Failure> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(e) => Err(failure(&e)),
    }
}

fn is_already_exists(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409 && status.reason == "AlreadyExists")
}

/// How an API error is reported to the machine.
pub fn failure(error: &kube::Error) -> Failure {
    match error {
        kube::Error::Api(status) => {
            let kind = match status.code {
                409 => FailureKind::Conflict,
                404 => FailureKind::NotFound,
                429 => FailureKind::Transient,
                400..=499 => FailureKind::Rejected,
                _ => FailureKind::Transient,
            };
            Failure::new(kind, format!("{} ({}): {}", status.reason, status.code, status.message))
        }
        other => Failure::new(FailureKind::Transient, other.to_string()),
    }
}
