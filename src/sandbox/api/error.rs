//! The emulator's errors: a Kubernetes `Status` (code, reason, message), as the API server answers
//! a request that failed. One type for every path (HTTP, watch ERROR events, direct access), so
//! that the sandbox sees exactly what a client of a real cluster would.

use serde_json::{Value, json};

use super::resources::ResourceType;

/// A Kubernetes `Status` error.
#[derive(Clone, Debug)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    /// What the error is about (`name`, `group`, `kind` as the plural), as the real server details
    /// a NotFound or an AlreadyExists.
    pub details: Option<Value>,
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError { code, reason, message: message.into(), details: None }
    }

    pub(super) fn body(&self) -> Value {
        let mut body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": self.message, "reason": self.reason, "code": self.code});
        if let Some(details) = &self.details {
            body["details"] = details.clone();
        }
        body
    }

    /// The same error, about `name` of `resource`.
    fn about(mut self, resource: &ResourceType, name: &str) -> Self {
        let mut details = json!({"name": name, "kind": resource.plural});
        if !resource.group.is_empty() {
            details["group"] = json!(resource.group);
        }
        self.details = Some(details);
        self
    }
}

pub(super) fn not_found(resource: &ResourceType, name: &str) -> ApiError {
    ApiError::new(404, "NotFound", format!("{} \"{name}\" not found", qualified(resource))).about(resource, name)
}

pub(super) fn already_exists(resource: &ResourceType, name: &str) -> ApiError {
    ApiError::new(409, "AlreadyExists", format!("{} \"{name}\" already exists", qualified(resource)))
        .about(resource, name)
}

/// `dogus.k8s.cloudogu.com`, `configmaps`: the resource as the real server names it in messages.
fn qualified(resource: &ResourceType) -> String {
    if resource.group.is_empty() { resource.plural.clone() } else { format!("{}.{}", resource.plural, resource.group) }
}

pub(super) fn reason_for(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        409 => "Conflict",
        410 => "Expired",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "InternalError",
    }
}
