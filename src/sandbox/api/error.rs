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
}

impl ApiError {
    pub(super) fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError { code, reason, message: message.into() }
    }

    pub(super) fn body(&self) -> Value {
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": self.message, "reason": self.reason, "code": self.code})
    }
}

pub(super) fn not_found(resource: &ResourceType, name: &str) -> ApiError {
    let group = if resource.group.is_empty() { String::new() } else { format!(".{}", resource.group) };
    ApiError::new(404, "NotFound", format!("{}{group} \"{name}\" not found", resource.plural))
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
