//! The library behind the `mcp` command: how a server is named and reached ([`target`]), and
//! typed Rust bindings generated from a server's own tool, prompt and template schemas
//! ([`bindings`], also callable from a `build.rs`).

pub mod bindings;
pub mod contract;
pub mod target;
