//! The integration tests: one binary, one module per area.

mod acceptance;
mod crd;
mod journal;
mod plan_cli;
mod properties;
mod registry;
mod reliability;
mod sandbox;
mod shell;
mod support;
