//! blueprint-operator: applies a declarative Blueprint to a Cloudogu-EcoSystem-style platform and
//! keeps it applied. The decisions live in the pure `blueprint-machine` crate; this crate observes,
//! executes and wires.

pub mod cli;
pub mod crd;
pub mod observe;
pub mod plan;
