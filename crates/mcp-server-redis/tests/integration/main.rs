//! One test binary for the Redis stores' tests: each module was its own binary, and every binary
//! links the whole crate graph (about 100 MB each in the dev profile). Tests that set process-wide
//! state (a global subscriber or meter provider, the environment) or measure the process (its
//! memory, its descriptors) stay in binaries of their own beside this directory.

#[path = "../support/mod.rs"]
mod support;

mod bus;
mod events;
mod replay;
mod sessions;
mod stores;
