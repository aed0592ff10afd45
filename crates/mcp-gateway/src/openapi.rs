//! OpenAPI upstreams (`openapi = "…"`): a REST API described by an OpenAPI 3.0 or 3.1 document
//! (JSON or YAML; FastAPI writes 3.1), each of its operations a tool.
//!
//! - **Name**: the `operationId`, each character outside `A-Z a-z 0-9 _ - .` replaced by `_`, at
//!   most 128 kept; an operation without one is named after its method and path, each run of
//!   other characters one `_` (`GET /pets/{petId}` → `get_pets_petId`). A name already taken (two
//!   that sanitize alike) gets `_2`, `_3`… The gateway lists it under the upstream's prefix, as
//!   any tool.
//! - **Description**: the `summary` and `description` (`title`: the summary); `GET`/`HEAD` are
//!   `readOnlyHint`, `DELETE` `destructiveHint` and `idempotentHint`, `PUT` `idempotentHint`.
//! - **Arguments** (`inputSchema`, an object with `additionalProperties: false`): one per path,
//!   query, header and cookie parameter, under its own name; the JSON request body under one
//!   argument, `body`, whatever its schema (an object, an array, a string), so that its
//!   properties never clash with a parameter's and its own `required` and `oneOf` hold as
//!   written. A parameter whose name is taken (by `body`, or a path parameter of the same name)
//!   is `<location>_<name>` (`query_id`), its description saying so. Path parameters are always
//!   required; `Accept`, `Content-Type` and `Authorization` header parameters are ignored, as the
//!   specification says. An operation whose required body has no JSON media type is left out
//!   (logged).
//! - **Schemas**: every `$ref` into the document (`#/components/…`, any JSON pointer) expanded in
//!   place; one that comes back to a schema it is inside of is not expanded again (`{}` with a
//!   `$comment`), and past 20,000 schema objects per tool references are left unexpanded
//!   likewise. A reference to another file is a problem of the document. 3.0's `nullable`,
//!   boolean `exclusiveMinimum`/`exclusiveMaximum` and `example` become 2020-12's.
//! - **Result**: `outputSchema` is the JSON schema of the first success response (the lowest
//!   `2xx`, then `2XX`) when it is an object's, as MCP requires (else none). The answer's JSON is
//!   the text content, and the `structuredContent` when there is an `outputSchema`; another
//!   answer is its text. A status other than 2xx is a tool error (`isError`) with the status and
//!   the first kilobyte of the body (the upstream's credentials redacted); a body over
//!   `max_response_bytes` (default 1 MiB) is a tool error naming the limit; a call that cannot
//!   reach the API, or takes longer than `timeout_secs`, fails naming the upstream and the kind
//!   of failure, as an MCP upstream's does.
//! - **Requests**: to `base_url` (default: the document's first `servers` URL, resolved against
//!   the document's), path parameters percent-encoded (a value cannot add a segment), query
//!   parameters as their `style` and `explode` say (`form` by default, `deepObject`, delimited),
//!   the body as JSON. Redirects are followed only within the API's origin. The upstream's
//!   credentials (its `headers`, its `[upstream.oauth]` token) are attached in one place,
//!   `Upstream::send` (`upstream/rest.rs`), and go with the document's request only when it is
//!   at `base_url`'s origin.
//!
//! The document is read as `serde_json::Value` with a small resolver of local references (this
//! module's `schema`), not with a typed OpenAPI crate: a tool's schemas are JSON anyway, so typed
//! models (`openapiv3` reads 3.0 only, `oas3` 3.1 only) would be converted straight back, and a
//! value walk reads 3.0 and 3.1 alike and says where a problem is (a JSON pointer).

mod document;
mod request;
mod schema;

use std::collections::HashMap;
use std::path::PathBuf;

use mcp_types::{CallToolResult, Tool};
use serde_json::{Map, Value};

use crate::config::UpstreamConfig;
use document::Operation;

pub(crate) use request::{read, tool_error};

/// The most bytes an OpenAPI document may take (64 MiB).
pub(crate) const MAX_DOCUMENT_BYTES: usize = 64 << 20;

/// Where an upstream's OpenAPI document is.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    Url(reqwest::Url),
    File(PathBuf),
}

impl Source {
    /// An `http(s)://` URL, a `file://` URL or a file's path.
    pub(crate) fn of(openapi: &str) -> Result<Source, String> {
        let lower = openapi.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            let url = reqwest::Url::parse(openapi).map_err(|e| format!("`openapi` {openapi:?} is not a URL: {e}"))?;
            return Ok(Source::Url(url));
        }
        if lower.starts_with("file://") {
            let url = reqwest::Url::parse(openapi).map_err(|e| format!("`openapi` {openapi:?} is not a URL: {e}"))?;
            let path = url.to_file_path().map_err(|()| format!("`openapi` {openapi:?} is not a file's URL"))?;
            return Ok(Source::File(path));
        }
        Ok(Source::File(PathBuf::from(openapi)))
    }
}

/// A REST API as its document describes it: its operations (by tool name), where its calls go,
/// and the client they go with.
pub(crate) struct Api {
    operations: HashMap<String, Operation>,
    tools: Vec<Tool>,
    base: reqwest::Url,
    http: reqwest::Client,
    max_response_bytes: usize,
    /// The operations left out, and why.
    pub(crate) left_out: Vec<String>,
}

impl Api {
    /// The API `text` (the document, read from `source`) describes, for the upstream `config`;
    /// `Err` says what is wrong with it, and where (a JSON pointer) when it can.
    pub(crate) fn new(
        text: &str,
        source: &Source,
        config: &UpstreamConfig,
        http: reqwest::Client,
    ) -> Result<Api, String> {
        let root = document::parse(text)?;
        let found = document::operations(&root).map_err(|problem| problem.to_string())?;
        let base = base_url(config, source, found.server.as_deref())?;
        let tools = found.operations.iter().map(|operation| operation.tool.clone()).collect();
        let operations =
            found.operations.into_iter().map(|operation| (operation.tool.name.clone(), operation)).collect();
        Ok(Api {
            operations,
            tools,
            base,
            http,
            max_response_bytes: config.max_response_bytes(),
            left_out: found.left_out.iter().map(ToString::to_string).collect(),
        })
    }

    /// Its operations' tools, in the document's order (paths, then methods).
    pub(crate) fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// Where its calls go.
    pub(crate) fn base(&self) -> &reqwest::Url {
        &self.base
    }

    /// The HTTP client its calls go with.
    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// The request of a call of `tool` with `arguments` (without credentials); `Err` says what
    /// is wrong with them (the tool's error).
    pub(crate) fn request(&self, tool: &str, arguments: Map<String, Value>) -> Result<reqwest::Request, String> {
        let operation = self.operations.get(tool).ok_or_else(|| format!("no operation `{tool}`"))?;
        request::build(operation, &self.base, &self.http, arguments)
    }

    /// The result of a call of `tool` that got `response`; `redact` takes the upstream's
    /// credentials out of what an error quotes.
    pub(crate) async fn answer(
        &self,
        tool: &str,
        response: reqwest::Response,
        redact: impl Fn(&str) -> String,
    ) -> Result<CallToolResult, reqwest::Error> {
        match self.operations.get(tool) {
            Some(operation) => request::answer(operation, response, self.max_response_bytes, redact).await,
            None => Ok(tool_error(format!("no operation `{tool}`"))),
        }
    }
}

/// Where an API's calls go: `base_url`, else the document's first server (relative to the
/// document's URL), else (no server named: `/`, as the specification says) the document's
/// origin.
fn base_url(config: &UpstreamConfig, source: &Source, server: Option<&str>) -> Result<reqwest::Url, String> {
    let url = match (&config.base_url, server, source) {
        (Some(base), ..) => reqwest::Url::parse(base).map_err(|e| format!("`base_url` {base:?} is not a URL: {e}"))?,
        (None, Some(server), source) => match (reqwest::Url::parse(server), source) {
            (Ok(url), _) => url,
            (Err(_), Source::Url(document)) => {
                document.join(server).map_err(|e| format!("`#/servers/0/url`: {server:?} is not a URL: {e}"))?
            }
            (Err(_), Source::File(_)) => {
                return Err(format!(
                    "`#/servers/0/url`: {server:?} is relative to where the document is, a file: set `base_url`"
                ));
            }
        },
        (None, None, Source::Url(document)) => document.join("/").map_err(|e| e.to_string())?,
        (None, None, Source::File(_)) => return Err("the document names no server: set `base_url`".to_owned()),
    };
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(format!("the API's URL {url} is not http or https (it is {other})")),
    }
}
