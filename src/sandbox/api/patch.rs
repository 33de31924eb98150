//! PATCH: merge, JSON patch and strategic merge (as merge) through the update rules of `writes`,
//! and server-side apply with field managers, conflicts and `force` (which also creates).

use serde_json::{Value, json};

use super::error::{ApiError, not_found};
use super::managed::{ManagedFields, Writer};
use super::{Emulator, Target};

impl Emulator {
    /// PATCH, by the media type: server-side apply, merge, strategic merge (as merge) or JSON patch.
    pub(super) fn do_patch(
        &self,
        target: &Target<'_>,
        content_type: &str,
        body: &[u8],
        manager: &str,
        force: bool,
    ) -> Result<(u16, Value), ApiError> {
        let media = content_type.split(';').next().unwrap_or_default().trim();
        match media {
            "application/apply-patch+yaml" => {
                if manager == "unknown" {
                    return Err(ApiError::new(
                        422,
                        "Invalid",
                        "fieldManager: Required value: is required for apply patch",
                    ));
                }
                let text =
                    std::str::from_utf8(body).map_err(|_| ApiError::new(400, "BadRequest", "the body is not UTF-8"))?;
                let config: Value = serde_saphyr::from_str(text)
                    .map_err(|e| ApiError::new(400, "BadRequest", format!("invalid apply configuration: {e}")))?;
                self.apply(target, config, manager, force)
            }
            "application/merge-patch+json"
            | "application/strategic-merge-patch+json"
            | "application/json-patch+json" => {
                let patch: Value = serde_json::from_slice(body)
                    .map_err(|e| ApiError::new(400, "BadRequest", format!("invalid patch: {e}")))?;
                let json_patch = media == "application/json-patch+json";
                let patch_ops: Option<json_patch::Patch> = if json_patch {
                    Some(
                        serde_json::from_value(patch.clone())
                            .map_err(|e| ApiError::new(400, "BadRequest", format!("invalid JSON patch: {e}")))?,
                    )
                } else {
                    None
                };
                self.update_with(target, manager, move |current| {
                    let mut next = current.clone();
                    match &patch_ops {
                        Some(ops) => json_patch::patch(&mut next, ops).map_err(|e| {
                            ApiError::new(422, "Invalid", format!("the JSON patch cannot be applied: {e}"))
                        })?,
                        None => json_patch::merge(&mut next, &patch),
                    }
                    Ok(next)
                })
                .map(|v| (200, v))
            }
            other => {
                Err(ApiError::new(415, "UnsupportedMediaType", format!("the media type {other:?} is not supported")))
            }
        }
    }

    /// Server-side apply: creates the object if it is missing (not through `/status`), else applies
    /// `config` as `manager`; a `resourceVersion` in `config` is a precondition.
    fn apply(&self, target: &Target<'_>, config: Value, manager: &str, force: bool) -> Result<(u16, Value), ApiError> {
        let name = target.name.clone().unwrap_or_default();
        let key = (target.resource.key(), target.namespace.clone(), name.clone());
        let exists = self.inner.store.lock().expect("not poisoned").objects.contains_key(&key);
        let now = self.now();
        let api_version = target.resource.api_version();
        if !exists {
            if target.subresource.is_some() {
                return Err(not_found(target.resource, &name));
            }
            let mut managed = ManagedFields::default();
            let mut object = managed
                .apply(
                    Writer { manager, api_version: &api_version, time: &now, subresource: None },
                    &Value::Null,
                    &config,
                    force,
                )
                .map_err(|c| ApiError::new(409, "Conflict", c.message()))?;
            object["metadata"]["name"] = json!(name);
            return self.insert(target.resource, &target.namespace, object, manager, Some(managed)).map(|v| (201, v));
        }
        let subresource = target.subresource.clone();
        let result = self.update_raw(target, manager, move |current, managed| {
            let mut sent = config.clone();
            if let Some(version) = sent.pointer("/metadata/resourceVersion").cloned() {
                if Some(&version) != current.pointer("/metadata/resourceVersion") {
                    return Err(ApiError::new(
                        409,
                        "Conflict",
                        "the object has been modified; please apply your changes to the latest version and try again",
                    ));
                }
                sent["metadata"].as_object_mut().map(|m| m.remove("resourceVersion"));
            }
            managed
                .apply(
                    Writer { manager, api_version: &api_version, time: &now, subresource: subresource.as_deref() },
                    current,
                    &sent,
                    force,
                )
                .map_err(|c| ApiError::new(409, "Conflict", c.message()))
        })?;
        Ok((200, result))
    }
}
