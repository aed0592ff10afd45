//! The span of a request that came over HTTP, opened before its message is read (feature
//! `http`): a POST's MCP request adopts it; a GET (the legacy standalone stream) or a DELETE (the
//! end of a legacy session) carries no MCP method, so its span is named by the HTTP method.

use mcp_types::JsonObject;
use tracing::Span;

#[cfg(feature = "otel")]
use super::otel;
use super::{ARRIVED, Failure, OTHER, Transport, error_description, new_request_span};
use crate::message::Outgoing;

/// The MCP methods recorded by their names (both eras, the extensions this crate serves, and the
/// newer registry's `server/discover` and `subscriptions/listen`); any other is [`OTHER`].
/// (Over HTTP, where a request is labelled before it is decoded.)
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "subscriptions/listen",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/directory/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/cancel",
    "tasks/update",
    "tasks/list",
    "tasks/result",
    "skills/list",
    "skills/get",
    "health",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
];

/// `method` as a label: itself when it is an MCP method, else [`OTHER`].
fn method_label(method: &str) -> &'static str {
    KNOWN_METHODS.iter().find(|known| **known == method).copied().unwrap_or(OTHER)
}

/// The span of a request that came over HTTP, opened before its message is read: the
/// authorization check runs in it, the request it carries adopts it, and a refusal before the
/// server served anything is recorded in it (so that every request has a request span).
pub(crate) struct Arrival {
    span: Span,
    /// The method the `Mcp-Method` header names, as a label.
    method: Option<&'static str>,
    /// A GET or a DELETE: no MCP method, no MCP operation to measure; the span is named by it.
    http_method: Option<&'static str>,
    /// Adopted by the request, or its refusal recorded: nothing is left to record here.
    settled: bool,
    #[cfg(feature = "otel")]
    start: std::time::Instant,
}

impl Arrival {
    /// `mcp_method`: the `Mcp-Method` header; `trace`: the W3C trace context headers
    /// (`traceparent`, `tracestate`, `baggage`), read only when the span records: the span's
    /// parent until the message's `_meta` gives one.
    pub(crate) fn open(mcp_method: Option<&str>, trace: impl FnOnce() -> Option<JsonObject>) -> Self {
        Arrival::opened(mcp_method.map(method_label), None, trace)
    }

    /// A GET (the legacy standalone stream) or a DELETE (a legacy session's end): the span of
    /// the exchange up to the response's head, named by `http_method`.
    pub(crate) fn open_without_message(http_method: &'static str, trace: impl FnOnce() -> Option<JsonObject>) -> Self {
        let arrival = Arrival::opened(None, Some(http_method), trace);
        if !arrival.span.is_disabled() {
            arrival.span.record("http.request.method", http_method);
            arrival.rename(http_method);
        }
        arrival
    }

    fn opened(
        method: Option<&'static str>,
        http_method: Option<&'static str>,
        trace: impl FnOnce() -> Option<JsonObject>,
    ) -> Self {
        let span = new_request_span();
        if !span.is_disabled() {
            span.record("network.transport", Transport::Http.network());
            span.record("network.protocol.name", "http");
            #[cfg(feature = "otel")]
            if let Some(trace) = trace() {
                otel::adopt_parent(&span, &trace);
            }
        }
        #[cfg(not(feature = "otel"))]
        let _ = trace;
        Arrival {
            span,
            method,
            http_method,
            settled: false,
            #[cfg(feature = "otel")]
            start: std::time::Instant::now(),
        }
    }

    #[cfg(feature = "auth")]
    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// Runs `serve`, which decodes and dispatches one message (synchronously up to its handler's
    /// first step), with this span for its request to adopt.
    pub(crate) fn serve<R>(&mut self, serve: impl FnOnce() -> R) -> R {
        if self.span.is_disabled() {
            return serve();
        }
        ARRIVED.with(|arrived| *arrived.borrow_mut() = Some(self.span.clone()));
        let served = serve();
        let unadopted = ARRIVED.with(|arrived| arrived.borrow_mut().take());
        self.settled |= unadopted.is_none();
        served
    }

    /// Refused with an HTTP status before the server saw the message (`why`: the reason, for the
    /// span's description).
    pub(crate) fn refused_http(&mut self, status: u16, why: &str) {
        self.refused(Failure::http(status, why));
    }

    /// Refused with `response` (a JSON-RPC error) before a handler was reached.
    pub(crate) fn refused_with(&mut self, response: &Outgoing) {
        if let Some(failure) = Failure::of(Some(response), true) {
            self.refused(failure);
        }
    }

    /// Refused with the JSON-RPC error `code` before the server served the message.
    pub(crate) fn refused_rpc(&mut self, code: i64) {
        self.refused(Failure {
            error_type: code.to_string(),
            description: error_description(code),
            rpc_code: Some(code),
            http_status: None,
        });
    }

    /// Served without a request span of its own (a notification, a legacy `initialize`): the span
    /// is named by the message's method (`method`, read only when the span records).
    pub(crate) fn name_unserved(&mut self, method: impl FnOnce() -> Option<String>) {
        if self.settled || self.span.is_disabled() {
            return;
        }
        self.method = Some(method().as_deref().map_or(OTHER, method_label));
    }

    /// The response the transport wrote (`rpc_code`: the JSON-RPC error its body carries, when
    /// the transport refused the message itself): a refusal not recorded yet is recorded by
    /// that code, else by the HTTP status; a GET's or a DELETE's status is recorded either way.
    pub(crate) fn answered(&mut self, status: axum::http::StatusCode, rpc_code: Option<i64>) {
        match rpc_code {
            Some(code) if self.http_method.is_none() => self.refused_rpc(code),
            _ if status.is_client_error() || status.is_server_error() => {
                self.refused_http(status.as_u16(), status.canonical_reason().unwrap_or("refused"))
            }
            _ if self.http_method.is_some() && !self.settled => {
                self.span.record("http.response.status_code", status.as_u16());
                self.settled = true;
            }
            _ => {}
        }
    }

    fn name(&self, method: &'static str) {
        self.span.record("mcp.method.name", method);
        self.rename(method);
    }

    fn rename(&self, name: &'static str) {
        self.span.record("otel.name", name);
        // The span may have begun (the authorization check is its child): a name recorded then
        // is not read, so it is set on the OpenTelemetry span too.
        #[cfg(feature = "otel")]
        otel::rename(&self.span, name.to_owned());
    }

    fn refused(&mut self, failure: Failure) {
        if self.settled {
            return;
        }
        self.settled = true;
        if self.http_method.is_some() {
            // Not an MCP operation: no `mcp.method.name`, and no operation duration.
            failure.record(&self.span);
            return;
        }
        let method = self.method.unwrap_or(OTHER);
        if !self.span.is_disabled() {
            self.name(method);
            failure.record(&self.span);
        }
        #[cfg(feature = "otel")]
        otel::record_refusal(self.start, method, &failure.error_type);
    }
}

impl Drop for Arrival {
    fn drop(&mut self) {
        // A notification or a batch: named by the header, when it names a method.
        if !self.settled && self.http_method.is_none() && !self.span.is_disabled() {
            self.name(self.method.unwrap_or(OTHER));
        }
    }
}
