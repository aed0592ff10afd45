//! A thin Model Context Protocol client that negotiates either protocol era.
//!
//! It talks to modern 2026-07-28 servers (stateless, per-request `_meta`) and to legacy servers
//! (`initialize` handshake, 2024-11-05 … 2025-11-25) over stdio (feature `stdio`), Streamable
//! HTTP and, as a last resort, the deprecated HTTP+SSE transport (feature `http`), choosing the
//! era itself:
//!
//! - **stdio**: a `server/discover` probe; a `DiscoverResult` or a recognized modern error
//!   (`-32022`, `-32021`) means modern; any other error or no answer within the probe timeout
//!   means legacy (a late reply is ignored; a server that exited is restarted) → `initialize`.
//! - **HTTP**: the body decides, not the status: a 400 carrying a recognized modern JSON-RPC
//!   error is a modern server (retry with a version from `data.supported`); an empty or
//!   unrecognized 4xx body means legacy → `initialize`, and if that POST is refused with
//!   400/404/405, the HTTP+SSE transport; a 404 carrying `-32601` is a modern server that does
//!   not know the method, never a reason to fall back.
//!
//! Everything after that is era-independent: typed calls for tools, resources, prompts and
//! completion, paginating streams, subscriptions, progress, cancellation by dropping a call's
//! future, caching by `ttlMs`, and the application's [`Handlers`] answering elicitation,
//! sampling and roots both as 2026 `InputRequiredResult`s and as legacy server requests.
//! With [`ClientBuilder::tasks`] the client takes part in the tasks extension
//! (`io.modelcontextprotocol/tasks`): [`Client::call_tool`] follows a task to its result, and
//! [`Client::call_tool_as_task`] / [`Client::task`] give a [`TaskHandle`] to manage it.
//!
//! The application's [`Handlers`] decide what the client can answer and so which capabilities
//! it declares:
//!
//! ```
//! use mcp_client::{ElicitationModes, ElicitationResponse, Handlers};
//!
//! let handlers = Handlers::new()
//!     .elicitation(ElicitationModes::FORM, |_request| async move {
//!         // Show `request` to the user; fields left out get the schema's defaults.
//!         Ok(ElicitationResponse::accept(serde_json::Map::new()))
//!     })
//!     .roots(|| async { Ok(vec![]) });
//! let declared = serde_json::to_value(handlers.capabilities()).unwrap();
//! assert_eq!(declared, serde_json::json!({"elicitation": {"form": {}}, "roots": {}}));
//! ```
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcp_client::Error> {
//! use mcp_client::{Client, StdioCommand};
//!
//! let client = Client::builder("my-app", "1.0.0")
//!     .connect_stdio(StdioCommand::new("my-mcp-server"))
//!     .await?;
//! println!("{:?} {}", client.era(), client.protocol_version());
//! for tool in client.all_tools().await? {
//!     println!("{}", tool.name);
//! }
//! #[derive(serde::Serialize)]
//! struct Weather<'a> { city: &'a str }
//!
//! let result = client.call_tool("get_weather", &Weather { city: "Paris" }).await?;
//! println!("{:?}", result.content);
//! client.close().await;
//! # Ok(()) }
//! ```
//!
//! # Cargo features
//!
//! `stdio` (child processes, tokio `process`), `http` (reqwest) and `rustls`
//! (HTTPS with rustls and the platform's certificate verifier) are on by default; `auth` adds
//! OAuth 2.1 authorization for the HTTP transports ([`auth`]); `otel` adds OpenTelemetry trace
//! context in `_meta` and the MCP client metrics. For custom roots, proxies or client
//! certificates, pass a configured `reqwest::Client` to [`ClientBuilder::http_client`]; for
//! headers, retries, timeouts or metrics around each HTTP request, a tower layer to
//! `ClientBuilder::http_layer` (see `layer`).
//!
//! # Observing the client
//!
//! Each request and notification the client sends is a `tracing` span (target `mcp_client`)
//! by the OpenTelemetry semantic conventions for MCP: named `{mcp.method.name} {target}`
//! (`tools/call get_weather`, `prompts/get summary`, else the method), kind client, with
//! `mcp.method.name`, `gen_ai.tool.name`, `gen_ai.prompt.name`, `mcp.resource.uri`,
//! `gen_ai.operation.name`, `jsonrpc.request.id`, `mcp.protocol.version`, `mcp.session.id`,
//! `network.transport`, `network.protocol.name`, `server.address`, `server.port`, and on failure
//! `error.type` and `rpc.response.status_code`. Answering a server's request (elicitation,
//! sampling, roots) runs in a span of kind server. Nothing is formatted unless a subscriber
//! listens. With the `otel` feature and a `tracing-opentelemetry` layer, each request's
//! `params._meta` carries the span's `traceparent`, `tracestate` and `baggage` (from the global
//! text map propagator; keys the caller set are kept), a server request's `_meta` context
//! becomes the parent of the span it is answered in, and the global meter provider gets
//! `mcp.client.operation.duration` and `mcp.client.session.duration` (install it before the
//! first request: the instruments are created once).
//!
//! Every JSON-RPC message sent or received is also a `TRACE` event on the target
//! `mcp_client::wire`, with the field `direction` (`send` or `receive`) and the message's text
//! as the event's message: a subscriber filtered to that target shows the whole exchange.
//!

// `auth` links to the section above when the feature is off, so that a default-features doc
// build has no broken link.
#![cfg_attr(feature = "auth", doc = "[`auth`]: crate::auth")]
#![cfg_attr(not(feature = "auth"), doc = "[`auth`]: #cargo-features")]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

#[cfg(not(any(feature = "stdio", feature = "http")))]
compile_error!("mcp-client needs a transport: enable the `stdio` or the `http` feature (or both)");

#[cfg(feature = "auth")]
pub mod auth;
#[cfg(feature = "http")]
mod body;
mod client;
mod core;
mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod handlers;
mod json_text;
#[cfg(feature = "http")]
pub mod layer;
#[cfg(any(feature = "http", feature = "fuzzing"))]
mod sse;
mod telemetry;
mod transport;

pub use client::Client;
pub use client::apps::UiResourceContents;
pub use client::era::{Era, EraPreference, LEGACY_VERSIONS, MODERN_VERSIONS, ServerDetails};
pub use client::options::{CallOptions, ClientBuilder};
pub use client::relay::Relayed;
pub use client::skills::LoadedSkill;
pub use client::subscription::Subscription;
pub use client::tasks::{TaskHandle, ToolCall};
pub use core::Progress;
pub use error::{Error, HandlerError};
pub use handlers::{ElicitationModes, ElicitationResponse, Handlers, InputAsk};
pub use transport::TransportKind;
#[cfg(feature = "stdio")]
pub use transport::stdio::{StderrMode, StdioCommand};

/// The protocol types this crate speaks in (the `mcp-types` crate).
pub use mcp_types as types;
