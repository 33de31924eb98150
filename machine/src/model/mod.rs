//! Domain types: names, versions, quantities, the parsed blueprint and the installed state.

pub(crate) mod blueprint;
pub(crate) mod by_name;
pub(crate) mod component_version;
pub(crate) mod dogu_readings;
pub(crate) mod dogu_version;
pub(crate) mod installed;
pub(crate) mod names;
pub(crate) mod pairs;
pub(crate) mod quantity;

pub(crate) use crate::descriptor::DoguDescriptor;
pub(crate) use blueprint::*;
pub(crate) use component_version::ComponentVersion;
pub use dogu_readings::DoguReadings;
pub(crate) use dogu_version::{DoguVersion, VersionConstraint};
pub(crate) use installed::{Installed, InstalledComponent, InstalledDogu};
pub(crate) use names::{ComponentName, DoguName};
pub(crate) use pairs::DoguPairs;
pub(crate) use quantity::{Quantity, QuantityFormat};
