//! The API server's audit log, as the tests read it.

use std::path::Path;

/// One request as the API server's audit log recorded it.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Audited {
    pub verb: String,
    pub user: AuditUser,
    #[serde(default)]
    pub object_ref: Option<AuditObject>,
    #[serde(default)]
    pub response_status: Option<AuditStatus>,
    /// The audit log spells it `requestURI`.
    #[serde(default, rename = "requestURI")]
    pub request_uri: String,
    /// When the API server received the request (RFC 3339 with microseconds).
    #[serde(default)]
    pub request_received_timestamp: String,
}

#[derive(Clone, Debug, serde::Deserialize)]
pub struct AuditUser {
    #[serde(default)]
    pub username: String,
    /// For a Pod's ServiceAccount token, `authentication.kubernetes.io/pod-name` names the Pod.
    #[serde(default)]
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

#[derive(Clone, Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditObject {
    #[serde(default)]
    pub resource: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub subresource: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub api_group: String,
}

#[derive(Clone, Debug, serde::Deserialize)]
pub struct AuditStatus {
    #[serde(default)]
    pub code: u16,
}

impl Audited {
    /// `resource` or `resource/subresource`.
    pub fn resource(&self) -> String {
        match &self.object_ref {
            Some(o) if o.subresource.is_empty() => o.resource.clone(),
            Some(o) => format!("{}/{}", o.resource, o.subresource),
            None => String::new(),
        }
    }

    pub fn code(&self) -> u16 {
        self.response_status.as_ref().map(|s| s.code).unwrap_or_default()
    }

    /// The Pod whose ServiceAccount token made the request, if one did.
    pub fn pod(&self) -> Option<&str> {
        self.user.extra.get("authentication.kubernetes.io/pod-name").and_then(|names| names.first()).map(String::as_str)
    }

    /// Whether the request changed something.
    pub fn is_write(&self) -> bool {
        matches!(self.verb.as_str(), "create" | "update" | "patch" | "delete" | "deletecollection")
    }
}

/// Every request of the audit log in `dir` (`audit.log`) that `keep` selects.
pub fn read(dir: &Path, keep: impl Fn(&Audited) -> bool) -> Vec<Audited> {
    let text = std::fs::read_to_string(dir.join("audit.log")).unwrap_or_default();
    text.lines().filter_map(|line| serde_json::from_str::<Audited>(line).ok()).filter(|entry| keep(entry)).collect()
}

/// An audit policy recording every request's metadata once, when it was answered.
pub(crate) fn policy(dir: &Path) -> Result<std::path::PathBuf, String> {
    let file = dir.join("audit-policy.yaml");
    let policy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived, ResponseStarted]\n\
                  rules:\n- level: Metadata\n";
    std::fs::write(&file, policy).map_err(|e| e.to_string())?;
    Ok(file)
}
