//! blueprint-operator: applies a declarative Blueprint to a Cloudogu-EcoSystem-style platform and
//! keeps it applied. The decisions live in the pure `blueprint-machine` crate; this crate observes,
//! executes and wires.

pub mod allocator;
pub mod blueprint_commands;
pub mod caches;
pub mod cli;
pub mod completions;
pub mod config;
pub mod controller;
pub mod convert;
pub mod crd;
pub mod descriptors;
pub mod executor;
pub mod files;
pub mod http;
pub mod identity;
pub mod journal;
pub mod kubeconfig;
pub mod leader;
pub mod metrics;
pub mod observe;
pub mod other_operators;
pub mod plan;
pub mod progress;
pub mod publish;
pub mod reconcile;
pub mod run;
pub mod sandbox;
pub mod serve;
pub mod status;
pub mod status_command;
pub mod storage_version;
pub mod telemetry;
pub mod version_command;
pub mod webhook;
