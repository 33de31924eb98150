//! The integration tests: one binary, one module per area.

mod chart;
mod cli_docs;
mod cluster;
mod convert_cli;
mod crd;
mod docs;
mod image;
mod journal;
mod monitoring;
mod node;
mod plan_cli;
mod registry;
mod reliability;
mod sandbox;
mod sandbox_cli;
mod shell;
mod support;
mod webhook;
