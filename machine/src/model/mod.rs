//! Domain types: names, versions, quantities, the parsed blueprint and the installed state.

pub mod blueprint;
pub mod component_version;
pub mod descriptor;
pub mod dogu_version;
pub mod installed;
pub mod names;
pub mod quantity;

pub use blueprint::*;
pub use component_version::ComponentVersion;
pub use descriptor::{Dependency, DoguDescriptor, Volume};
pub use dogu_version::{DoguVersion, VersionConstraint};
pub use installed::{Installed, InstalledComponent, InstalledDogu};
pub use names::{ComponentName, DoguName};
pub use quantity::{Quantity, QuantityFormat};
