//! What the operator's tests share: log capture, and the machine's fixtures
//! (`blueprint_machine::fixtures`, the same builders the machine's own tests use).

pub mod logs;

pub use blueprint_machine::fixtures::*;
