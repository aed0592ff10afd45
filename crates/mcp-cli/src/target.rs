//! Which server to talk to (being built).
