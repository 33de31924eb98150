//! The machine's part of the reliability review (docs/differences.md D39-D44); the shell's part is in
//! the operator's tests (tests/reliability/).

mod config_depth;
mod honest_status;
mod status_size;
