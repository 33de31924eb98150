//! What the operator's tests share: log capture, and the machine's fixtures
//! (`blueprint_machine::fixtures`, the same builders the machine's own tests use).

pub mod doc_blocks;
pub mod logs;
pub mod process;
pub mod tls;

pub use blueprint_machine::fixtures::*;
