//! mcp-gateway: many MCP servers behind one MCP endpoint.
//!
//! Each upstream is a stdio program or a Streamable HTTP URL, in either protocol era (the
//! client negotiates), or a REST API described by an OpenAPI document; the gateway lists the
//! tools of all of them under one endpoint that serves both eras over HTTP and stdio
//! (`mcp-server`), each tool under its upstream's prefix or the name a rule gives it. Built only on the public APIs of `mcp-server` (a
//! [`ToolSource`](mcp_server::dynamic::ToolSource) and a
//! [`PromptSource`](mcp_server::dynamic::PromptSource), a
//! [`ResourceSource`](mcp_server::dynamic::ResourceSource) and a
//! [`SkillSource`](mcp_server::dynamic::SkillSource)) and `mcp-client`. A stdio upstream's
//! stderr goes to the log (target `mcp_client::stderr`), a line at a time.
//!
//! - Resources and templates keep their URIs (a read goes to the one upstream that owns the URI:
//!   that lists the resource, else whose skill or template's literal start holds it); tools and
//!   prompts are listed under the upstream's prefix (`<prefix>_<name>`) or the name a
//!   `rename` rule gives; a clash (two upstreams listing one name, or overlapping templates) is
//!   refused at start, naming both. After start, an entry belongs to the upstream that listed
//!   it first: another's entry under that name is left out (logged, counted), and an upstream's
//!   resource updates are passed on only for URIs it owns. The owner keeps the name while it
//!   lists it, and while it is down; once it is up and lists it no more, another upstream may
//!   take it (so what the gateway records stays bounded by what is listed).
//! - An upstream's lists are bounded (`max_entries` of each kind, `max_list_pages` per list,
//!   `max_list_bytes` of JSON for all its lists together: over them it is degraded, not the
//!   gateway), and a burst of its list changes is one re-list (`relist_delay_secs`). The index
//!   is rebuilt after a change on a blocking thread, not on the workers that serve calls.
//! - An upstream's failure reaches a caller as its kind and a request id; the whole error is
//!   logged under that id, credentials redacted.
//! - An upstream that is down (it failed to start, its process exited, its URL stopped
//!   answering a `ping`) is left out of the list and reconnected with backoff; a call to one of
//!   its tools fails with `-32603` naming it.
//! - When an upstream's lists change (its list-changed notifications, or a change seen
//!   on reconnecting), downstream clients are told the same way.
//!
//! - A stdio upstream starts with its `env` and `PATH` alone (`inherit_env = true`: the
//!   gateway's whole environment), so that the gateway's secrets and another upstream's stay out.
//! - `prefix_mode`: tools and prompts under their prefix `always` (the default), only where names
//!   clash (`conditional`), or `never`; URIs are never rewritten (MCP Apps' `ui://` links hold).
//! - The lists carry the shortest `ttlMs` of the upstreams' and are `private` when an upstream's
//!   are or when visibility depends on the caller; `audit` writes a JSON line per request.
//! - A stdio upstream may be a pool of processes (`pool`): each request goes to the one with the
//!   fewest requests in flight, and each process is restarted on its own.
//! - Each upstream may be given a concurrency limit (`max_concurrent_requests`; more requests wait
//!   up to `queue_timeout_secs`, then fail naming it) and a request timeout (`timeout_secs`).
//! - [`Gateway::reload`] (the binary: SIGHUP, or a change to its file) serves a new configuration
//!   without dropping sessions or calls in flight: unchanged upstreams keep their connections,
//!   new and changed ones connect first, and the whole catalogue is swapped at once.
//! - [`Gateway::router`] adds `GET /healthz` and `GET /readyz` (503 while an upstream is down) to
//!   the MCP endpoint.
//!
//! - The era bridge: what an upstream asks while serving a call, a prompt or a read (a legacy
//!   server's elicitation, sampling and roots requests, a modern server's input requests) goes
//!   to the caller the way its era asks (a server request on a legacy session; an
//!   `InputRequiredResult` on the modern wire, the upstream request held meanwhile, for at most
//!   the upstream's `timeout_secs`), and the answers go back. Progress and log messages are
//!   forwarded, and a call the caller gives up is cancelled upstream.
//! - `era = "auto"` (the default) speaks 2026-07-28 to an upstream that offers it, and moves an
//!   upstream to the legacy era when, in 2026-07-28, it refuses to send an elicitation, sampling
//!   or roots request while serving a call (as the Python SDK's servers do): once it has checked
//!   that the upstream speaks legacy, that call is sent again there, once, and the upstream's
//!   connections are replaced without a gap. `era = "modern"` fails such a call with `-32603`
//!   naming the upstream and what to set.
//!
//! - A call still running after `task_after_secs` becomes a task for a caller with the tasks
//!   extension; a modern upstream's own task is followed. Resource updates reach the callers
//!   subscribed to the URI.
//! - [`Gateway::http_config`] makes the endpoint an OAuth 2.1 resource server (`[authorization]`);
//!   each upstream's `scopes`, `principals` and `entry_scopes` decide what a caller sees and uses.
//! - A protected HTTP upstream gets the gateway's own token (`[upstream.oauth]`, client
//!   credentials), or with `identity = "exchange"` ([`config::Identity::Exchange`]) each
//!   caller's: a token exchanged (RFC 8693) for the caller's, on a connection of the caller's own
//!   (at most `max_identities` kept). The caller's token itself never reaches an upstream.
//! - `[[policy]]`: rules in CEL (who, which method, upstream and entry, its annotations and the
//!   arguments) checked before every call, prompt, read, subscription and completion and on every
//!   list and `search_tools` result; a refusal names the rule (or is 403 `insufficient_scope`
//!   where the rule's `scopes` would help), and so does the audit log. Compiled at start: one
//!   that does not compile stops the gateway, saying where.
//! - `catalogue = "search"` lists two tools instead of every upstream's: `search_tools` (BM25
//!   over the tools the caller may see) and `call_tool` (calls one by name, as a direct call
//!   would).
//! - `[redis]` lets several instances share sessions, tasks and states; with the `otel` feature
//!   each upstream request is timed (`mcp.gateway.upstream.duration`).
//! - `openapi = "…"` makes an upstream a REST API: each operation of its OpenAPI 3.0 or 3.1
//!   document is a tool (named after its `operationId`, its parameters and its JSON body,
//!   under `body`, as arguments, every `$ref` expanded; an object success response as its
//!   `outputSchema`), called at `base_url` with the upstream's `headers` and `[upstream.oauth]`
//!   token; an HTTP error or a response over `max_response_bytes` is a tool error.

#[cfg(feature = "mimalloc")]
mod allocator;
mod audit;
mod bridge;
mod catalogue;
pub mod config;
mod era;
mod failure;
mod gateway;
mod index;
mod live;
mod metrics;
mod openapi;
/// `[[policy]]`: the rules in CEL, compiled and checked (public for the benchmark).
#[doc(hidden)]
pub mod policy;
/// `catalogue = "search"`: the BM25 index of the tools (public for the benchmark).
#[doc(hidden)]
pub mod search;
mod upstream;

#[cfg(feature = "mimalloc")]
pub use allocator::Mimalloc;
pub use config::{CatalogueMode, Config, Identity, PolicyRule, UpstreamConfig};
pub use gateway::{Gateway, Reloaded, StartError};
pub use index::Clash;
