//! One test binary for the workspace's cross-crate tests: each module was its own binary, and every
//! binary links the whole crate graph (about 100 MB each in the dev profile). Tests that set
//! process-wide state (a global subscriber or meter provider, the environment) or measure the
//! process (its memory, its descriptors) stay in binaries of their own beside this directory.

#[path = "../../../crates/mcp-server-redis/tests/support/mod.rs"]
mod redis_support;

mod authorization;
mod cli_login;
mod decoding;
mod examples;
mod fixtures;
mod gateway_authorization;
mod gateway_identity;
mod generated_instances;
mod mutations;
mod oidc_provider;
mod quick_start;
mod telemetry_prometheus;
