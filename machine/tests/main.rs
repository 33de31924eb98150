//! The machine's own tests: the acceptance cases (docs/acceptance.md), the properties of transitions
//! on a model cluster, and the machine's part of the reliability findings. One test binary.

mod acceptance;
mod conversion;
mod conversion_v1;
mod properties;
mod reliability;
