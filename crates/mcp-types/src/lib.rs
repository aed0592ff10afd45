//! Model Context Protocol types for every schema revision, generated from the official JSON schemas.
//!
//! Each revision is a module behind a cargo feature (`v2024_11_05`, `v2025_03_26`, `v2025_06_18`,
//! `v2025_11_25`, `v2026_07_28`, `draft`); any combination compiles together. The latest released
//! revision (`v2026_07_28`) is the default feature and is re-exported at the crate root.
//!
//! The modules are produced by `cargo xtask codegen` (see `xtask/`); this file and the few modules
//! next to it are the hand-written parts every revision shares: [`RequestId`], [`ProgressToken`],
//! [`ErrorObject`] and the [`error_codes`], [`ResultType`], [`TtlMs`], [`ProtocolVersion`], the raw JSON Schema
//! holders [`ObjectSchema`] and [`JsonSchema`], and the lsp-types style [`Request`] and
//! [`Notification`] traits.
//!
//! ```
//! # #[cfg(feature = "v2026_07_28")] {
//! use mcp_types::{ClientRequest, Request as _, CallToolRequest};
//!
//! let bytes = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{
//!     "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
//!              "io.modelcontextprotocol/clientCapabilities":{}},
//!     "name":"get_weather","arguments":{"city":"Paris"}}}"#;
//! let ClientRequest::CallTool(call) = serde_json::from_slice(bytes).unwrap() else { panic!() };
//! assert_eq!(call.params.name, "get_weather");
//! assert_eq!(CallToolRequest::METHOD, "tools/call");
//! # }
//! ```
//!
//! # Building values
//!
//! Every optional member has a `with_*` setter. A type whose required members all have different
//! types has a positional `new` (a swap does not compile); a type with two required members of the
//! same type (`Resource`'s `uri` and `name`) has no `new` and is built with a struct literal that
//! names them. Union variants convert with `From`, and text content has shorthands:
//!
//! ```
//! # #[cfg(feature = "v2026_07_28")] {
//! use mcp_types::{CallToolResult, ContentBlock, PromptMessage, Resource, TextResourceContents, Tool};
//!
//! let resource = Resource { uri: "notes://a".into(), name: "a".into(), ..Default::default() }
//!     .with_mime_type("text/markdown");
//! let tool = Tool::new(mcp_types::ObjectSchema::default(), "add_note").with_description("Adds a note");
//! let message = PromptMessage::user("Summarize the notes");
//! let embedded = ContentBlock::resource(TextResourceContents {
//!     uri: "notes://a".into(),
//!     text: "# A".into(),
//!     ..Default::default()
//! });
//! let result = CallToolResult::text("Added");
//! # let _ = (resource, tool, message, embedded, result);
//! # }
//! ```
//!
//! ```compile_fail,E0599
//! // No positional constructor whose two strings could be swapped silently.
//! let resource = mcp_types::v2026_07_28::Resource::new("a", "notes://a");
//! ```
//!
//! # Cargo features
//!
//! Dependencies: serde and serde_json. The optional `schemars` feature adds
//! `ObjectSchema::for_type::<T>()` and `JsonSchema::for_type::<T>()`: a tool's `inputSchema` /
//! `outputSchema` as JSON Schema 2020-12 derived from a Rust type. The optional `http-headers`
//! feature (adds base64) enables [`http_headers`]: the Streamable HTTP header rules of 2026-07-28
//! (the `Mcp-Name`/`Mcp-Param-*` value encoding and the `x-mcp-header` annotation).
//!
//! [`ext`] holds the official extensions' identifiers and, each behind its own feature, their
//! messages (`ext-tasks`: [`ext::tasks`], the tasks extension, generated from its schema;
//! `ext-apps`: MCP Apps, generated likewise; `ext-skills`: [`ext::skills`], the skills extension,
//! written by hand: it publishes no schema).
//!

// Items behind a feature that is off link to the section above instead of breaking the
// default-features doc build.
#![cfg_attr(feature = "http-headers", doc = "[`http_headers`]: crate::http_headers")]
#![cfg_attr(not(feature = "http-headers"), doc = "[`http_headers`]: #cargo-features")]
#![cfg_attr(feature = "ext-tasks", doc = "[`ext::tasks`]: crate::ext::tasks")]
#![cfg_attr(not(feature = "ext-tasks"), doc = "[`ext::tasks`]: #cargo-features")]
#![cfg_attr(feature = "ext-skills", doc = "[`ext::skills`]: crate::ext::skills")]
#![cfg_attr(not(feature = "ext-skills"), doc = "[`ext::skills`]: #cargo-features")]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod common;
pub mod error_codes;
pub mod ext;
mod free_form;
mod generated;
#[cfg(feature = "http-headers")]
pub mod http_headers;
mod json_scan;
mod literal;
mod method;
mod number;
mod one_pass;
#[doc(hidden)]
pub mod private;
mod raw_result;
mod schema;
mod shorthand;
mod version;

pub use common::{ErrorObject, ProgressToken, RequestId, ResultType, TtlMs};
pub use free_form::{JsonObject, free_form_from_str};
pub use method::{Notification, Request};
pub use number::Integer;
pub use one_pass::OnePassResponse;
pub use raw_result::RawResult;
// The revision modules; nothing when no revision feature is on.
#[allow(unused_imports)]
pub use generated::*;
pub use schema::{JsonSchema, ObjectSchema, SchemaError};
pub use version::ProtocolVersion;

#[cfg(feature = "v2026_07_28")]
pub use generated::v2026_07_28::*;
