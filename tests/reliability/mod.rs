//! Regression tests of the reliability and security review (tried as a hostile user and as a faulty
//! cluster would): one module per finding. Each test failed before its fix.

mod bounds;
mod config_depth;
mod debounce;
mod decoding;
mod files;
mod leader;
pub mod sandbox_gaps;
mod shutdown;
mod size_and_flood;
