//! One test binary for the client's tests: each module was its own binary, and every binary links
//! the whole crate graph (about 100 MB each in the dev profile). Tests that set process-wide state
//! (a global subscriber or meter provider, the environment) or measure the process (its memory, its
//! descriptors) stay in binaries of their own beside this directory, as does a test that reads
//! files outside the package (the package excludes it).

#[cfg(feature = "auth")]
#[path = "../support/oauth_mock.rs"]
mod oauth_mock;

mod apps;
mod auth;
mod dual_era;
mod http_negotiation;
mod https;
mod kept_connection;
mod layers;
mod relay;
mod stdio_negotiation;
mod tasks;
mod typed;
