//! Typed Rust bindings generated from a server's contract (being built).
