//! A thin Model Context Protocol server that answers both protocol eras from the same handlers:
//! the stateless 2026-07-28 protocol (per-request `_meta`, `server/discover`, `resultType`,
//! `InputRequiredResult`) and the legacy `initialize` handshake (2024-11-05 … 2025-11-25).
//!
//! The core ([`Server::handle`]) turns one incoming message into a [`Reply`] stream and knows
//! nothing of transports; [`Connection`] drives it over any message channel (an in-memory pair
//! for tests, [`stdio`] for a child process), and [`http`] serves Streamable HTTP with axum.
//!
//! ```
//! use mcp_server::{Context, Error, Server, ToolRoute};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add { a: i64, b: i64 }
//!
//! let server = Server::builder("calculator", "1.0.0")
//!     .tool(ToolRoute::new("add", |_ctx: Context, args: Add| async move {
//!         Ok::<_, Error>(format!("{}", args.a + args.b))
//!     }).description("Adds two integers"))
//!     .build()
//!     .unwrap();
//! assert!(server.capabilities().tools.is_some());
//! ```
//!
//! A handler that needs the user's input calls [`Context::elicit`] (or `create_message`,
//! `list_roots`, `input`). On the modern wire the `?` ends the round with an
//! `InputRequiredResult` whose sealed `requestState` carries the answers so far, and the handler
//! runs again when the client retries with the answers; on a legacy session the same call sends
//! an `elicitation/create` request to the client and waits for its answer. Handlers should
//! therefore do nothing irreversible before their last question.
//!
//! A tool registered with [`ToolRoute::task_support`] can run as a task of the tasks extension
//! (`io.modelcontextprotocol/tasks`): see [`tasks`] for when a call becomes one, the
//! [`TaskStore`] that holds every task's state, and [`Principal`], the party a task belongs to.
//!
//! # Cargo features
//!
//! `stdio` and `http` (the transports) are on by default. `validation` checks each tool's
//! arguments against its whole `inputSchema` with the `jsonschema` crate before the handler runs;
//! without it a typed tool gets exactly its argument type or a tool error from serde saying why
//! not, and a raw tool gets any JSON object. `auth` makes the HTTP transport an OAuth 2.1
//! resource server (the `auth` module).

#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod app_state;
pub mod apps;
#[cfg(feature = "auth")]
pub mod auth;
mod batch;
pub mod bus;
mod connection;
mod context;
pub mod dynamic;
mod elicitation;
mod era;
mod error;
pub mod events;
mod headers;
#[cfg(feature = "http")]
pub mod http;
mod message;
pub mod middleware;
#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
pub mod otel;
mod principal;
mod routes;
mod server;
mod session;
#[cfg(feature = "http")]
mod session_table;
mod shares;
pub mod skills;
mod state;
#[cfg(feature = "stdio")]
pub mod stdio;
mod store;
pub mod tasks;
mod telemetry;
mod validation;
mod wide;

pub use bus::{Change, ChangeBus, InMemoryChangeBus};
pub use connection::Connection;
pub use context::Context;
pub use elicitation::Elicited;
pub use era::Era;
pub use error::Error;
pub use events::{EventStore, InMemoryEventStore};
pub use headers::Mirrors;
/// The protocol types this crate speaks in (the `mcp-types` crate), for building results and
/// reading requests without a dependency of your own.
pub use mcp_types as types;
pub use mcp_types::http_headers::{decode_value as decode_header_value, encode_value as encode_header_value};
pub use message::{Disposition, Outgoing, OutgoingKind, Reply};
pub use principal::{Principal, VerifiedToken};
pub use routes::{
    IntoPromptResult, IntoResourceContents, IntoToolResult, NoArguments, PromptRoute, ResourceRoute,
    ResourceTemplateRoute, Structured, TaskSupport, ToolRoute, error_result, text_result,
};
/// The schemars this crate derives tool, prompt and elicitation schemas with: a type given to
/// [`ToolRoute::new`] must implement this crate's `schemars::JsonSchema`.
pub use schemars;
pub use server::{BuildError, CacheHints, LEGACY_VERSIONS, MODERN_VERSIONS, Options, Server, ServerBuilder};
pub use session::{InMemorySessionStore, Session, SessionRecord, SessionStore};
pub use skills::{SkillError, SkillRoute};
pub use state::{InMemoryUsedStates, StateKey, StateKeyring, StateUse, UseVerdict, UsedStateStore};
pub use tasks::{InMemoryTaskStore, TaskStore};
