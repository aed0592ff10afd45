//! One test binary for the gateway's tests: each module was its own binary, and every binary links
//! the whole crate graph (about 100 MB each in the dev profile). Tests that set process-wide state
//! (a global subscriber or meter provider, the environment) or measure the process (its memory, its
//! descriptors) stay in binaries of their own beside this directory.

#[path = "../common/mod.rs"]
mod common;
#[path = "../../../mcp-server-redis/tests/support/mod.rs"]
mod support;

mod audit;
mod bridge;
mod caching;
mod era;
mod exact;
mod gateway;
mod openapi;
mod policy;
mod prefix;
mod reload;
mod scale;
mod search;
mod skills;
