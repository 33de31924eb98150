//! The integration tests: one binary, one module per area.

mod acceptance;
mod support;
