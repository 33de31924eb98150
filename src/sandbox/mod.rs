//! The sandbox: the whole operator, unchanged, against an in-process Kubernetes API emulator with
//! simulated dogu and component operators.

pub mod api;
pub mod cluster;
pub mod command;
pub mod control_plane;
pub mod dogu_registry;
pub mod ecosystem;
pub mod node;
pub mod recording;
pub mod seed;
pub mod session;
