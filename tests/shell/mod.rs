//! The shell: exact API requests of one reconcile, error mapping, secrets kept out of requests and logs.

mod harness;
mod requests;
mod secrets;
