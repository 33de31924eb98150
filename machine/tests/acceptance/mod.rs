//! The acceptance cases of `upstream-behaviour.md` §18, each as a test of the machine. Where our
//! design (design.md §5) deliberately differs, the test says "amended" and why.

mod diff;
mod dynamic_validation;
mod effective;
mod health;
mod pipeline;
mod static_validation;
