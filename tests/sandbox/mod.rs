//! The sandbox: the API emulator's rules, and end-to-end runs of the real controller against it.

pub mod e2e;
pub mod emulator;
pub mod status_write;
