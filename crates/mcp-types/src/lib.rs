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
mod generated;
#[cfg(feature = "http-headers")]
pub mod http_headers;
mod number;
#[doc(hidden)]
pub mod private;
mod raw_result;
mod schema;
mod shorthand;
mod version;

pub use common::{ErrorObject, ProgressToken, RequestId, ResultType, TtlMs};
pub use number::Integer;
pub use raw_result::RawResult;
// The revision modules; nothing when no revision feature is on.
#[allow(unused_imports)]
pub use generated::*;
pub use schema::{JsonSchema, ObjectSchema, SchemaError};
pub use version::ProtocolVersion;

#[cfg(feature = "v2026_07_28")]
pub use generated::v2026_07_28::*;

/// A JSON object with arbitrary members (`_meta` values, tool arguments, capability settings).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// Decodes free-form JSON on its own (a `JSONValue`, `JSONObject` or `JSONArray`, a `_meta`
/// object, tool arguments) as the generated types decode their free-form members: every number
/// kept by its value or refused, never silently changed. `serde_json::from_str::<Value>` would
/// turn the integer `18446744073709551616` into the float `1.8446744073709552e19`; this refuses
/// it, and keeps `1e+21`, `-0.0` and every other number a `Value` holds exactly.
///
/// `T` is `serde_json::Value`, [`JsonObject`], or a `Vec` or `BTreeMap` of them.
///
/// ```
/// let value: serde_json::Value = mcp_types::free_form_from_str(r#"{"big":1e+21,"zero":-0.0}"#).unwrap();
/// assert_eq!(value.to_string(), r#"{"big":1e+21,"zero":-0.0}"#);
/// let refused = mcp_types::free_form_from_str::<serde_json::Value>("[18446744073709551616]").unwrap_err();
/// assert!(refused.to_string().contains("18446744073709551616"));
/// ```
pub fn free_form_from_str<T: private::FreeFormType>(text: &str) -> serde_json::Result<T> {
    private::free_form_from_text(text)
}

/// A request method, in the style of `lsp-types`: the method name, its params and its result.
///
/// Implemented by every request type of every revision, so that a caller can decode a response by
/// the method it sent: `serde_json::from_value::<<CallToolRequest as Request>::Result>(result)`.
pub trait Request {
    /// The method name, as sent on the wire (`"tools/call"`).
    const METHOD: &'static str;
    /// The type of the request's `params`.
    type Params: serde::Serialize + serde::de::DeserializeOwned;
    /// The type of the response's `result`.
    type Result: serde::Serialize + serde::de::DeserializeOwned;
}

/// A notification method: its name and its params.
pub trait Notification {
    /// The method name, as sent on the wire (`"notifications/progress"`).
    const METHOD: &'static str;
    /// The type of the notification's `params`.
    type Params: serde::Serialize + serde::de::DeserializeOwned;
}
