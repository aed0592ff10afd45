//! What negotiation chooses between and what it establishes: the versions this client speaks,
//! the eras, and the server's details.

use mcp_types::{Implementation, ServerCapabilities};

use crate::transport::TransportKind;

/// The 2026-07-28 (stateless) versions this client speaks, preferred first.
pub const MODERN_VERSIONS: &[&str] = &["2026-07-28"];
/// The legacy (`initialize` handshake) versions this client speaks, preferred first.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The protocol era a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28 and later: stateless, per-request `_meta`.
    Modern,
    /// 2024-11-05 … 2025-11-25: the `initialize` handshake.
    Legacy,
}

/// Which era(s) the client may negotiate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EraPreference {
    /// Modern first, falling back to legacy as the spec's compatibility rules say.
    #[default]
    Auto,
    /// Modern only: never `initialize`.
    Modern,
    /// Legacy only: go straight to `initialize`.
    Legacy,
}

/// What negotiation established about the server.
#[derive(Debug, Clone)]
pub struct ServerDetails {
    /// The era negotiated.
    pub era: Era,
    /// The protocol version requests are sent with.
    pub protocol_version: String,
    /// The server's self-description, if it gave one.
    pub server_info: Option<Implementation>,
    /// What the server can do.
    pub capabilities: ServerCapabilities,
    /// The server's instructions for the model, if it gave any.
    pub instructions: Option<String>,
    /// Versions the server said it supports (`server/discover` or `-32022`); empty if unknown.
    pub supported_versions: Vec<String>,
    /// The transport the client talks over.
    pub transport: TransportKind,
}
