//! One test binary for the server's tests: each module was its own binary, and every binary links
//! the whole crate graph (about 100 MB each in the dev profile). Tests that set process-wide state
//! (a global subscriber or meter provider, the environment) or measure the process (its memory, its
//! descriptors) stay in binaries of their own beside this directory, as does a test that reads
//! files outside the package (the package excludes it).

#[path = "../common/mod.rs"]
mod common;

mod apps;
mod http;
mod memory;
mod middleware;
mod raw_answers;
mod reply;
mod skills;
mod sources;
mod stdio;
mod tasks;
mod visibility;
