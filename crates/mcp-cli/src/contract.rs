//! What a server offers that bindings are generated from (being built).
