//! The acceptance cases of docs/acceptance.md, each as a test of the machine. Where we deliberately
//! differ from upstream, the test says "amended" and names the entry of docs/differences.md.

mod diff;
mod dynamic_validation;
mod effective;
mod health;
mod pipeline;
mod secret_access;
mod static_validation;
mod v3;
