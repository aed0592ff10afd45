//! A `tracing` span per request by the OpenTelemetry semantic conventions for MCP (span names
//! `{mcp.method.name} {target}`, kind server, the `mcp.*`, `gen_ai.*`, `jsonrpc.*` and
//! `network.*` attributes), free when nothing listens; with the `otel` feature, the caller's
//! trace context read from `_meta` (`traceparent`, `tracestate`, `baggage`) as the span's parent,
//! and the conventions' metrics.

use std::cell::RefCell;

use mcp_types::{JsonObject, RequestId};
use tracing::Span;
use tracing::field::Empty;

use crate::message::{Disposition, Outcome, Outgoing, OutgoingKind};

#[cfg(feature = "http")]
mod arrival;
#[cfg(feature = "http")]
pub(crate) use arrival::Arrival;

/// The `tracing` target of the server's spans and events.
pub(crate) const TARGET: &str = "mcp_server";

/// What an unknown method or entry name is recorded as: one series and one attribute value for
/// whatever names a client sends, as the conventions record an unknown HTTP method.
pub(crate) const OTHER: &str = "_OTHER";

/// What a span needs to know of a request.
pub(crate) struct RequestLabels<'a> {
    pub method: &'static str,
    pub id: &'a RequestId,
    pub version: &'a str,
    /// The tool or prompt name, or the resource URI, when the server serves it to the caller;
    /// [`OTHER`] when it does not (a client may send any name).
    pub target: Option<&'a str>,
    /// `params._meta`'s members the protocol does not define (the trace context among them,
    /// read with `otel`).
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    pub meta: Option<&'a JsonObject>,
    /// How the request came (none: in process).
    pub transport: Option<Transport>,
    /// The legacy HTTP session's id (a 2026-07-28 request has no session).
    pub session_id: Option<&'a str>,
}

thread_local! {
    /// The request span the HTTP transport opened before it read the message (so that the
    /// authorization check is its child), for the request it carries to adopt.
    static ARRIVED: RefCell<Option<Span>> = const { RefCell::new(None) };
}

/// One request being served: its span and (with `otel`) what its duration is recorded with.
pub(crate) struct Operation {
    span: Span,
    /// Served over HTTP, where a scope refusal is an HTTP 403.
    http: bool,
    #[cfg(feature = "otel")]
    metrics: otel::Timer,
}

/// How a request failed, as its caller saw it.
struct Failure {
    /// `error.type`: a JSON-RPC code, an HTTP status code, or `tool_error`.
    error_type: String,
    /// The span's status description, naming the error.
    description: String,
    /// The JSON-RPC error code, when the caller received one.
    rpc_code: Option<i64>,
    /// The HTTP status code, when that is what refused the request.
    http_status: Option<u16>,
}

impl Failure {
    fn of(response: Option<&Outgoing>, http: bool) -> Option<Failure> {
        let response = response?;
        match response.outcome {
            Outcome::Ok => None,
            Outcome::ToolError => Some(Failure {
                error_type: "tool_error".to_owned(),
                description: "tool_error: the tool's result is an error (isError)".to_owned(),
                rpc_code: None,
                http_status: None,
            }),
            // Over HTTP a scope refusal is answered 403 with a challenge: that is what the caller saw.
            Outcome::Error(_) if http && response.kind == OutgoingKind::Response(Disposition::Forbidden) => {
                Some(Failure::http(403, "insufficient_scope"))
            }
            Outcome::Error(code) => Some(Failure {
                error_type: code.to_string(),
                description: error_description(code),
                rpc_code: Some(code),
                http_status: None,
            }),
        }
    }

    fn http(status: u16, why: &str) -> Failure {
        Failure {
            error_type: status.to_string(),
            description: format!("HTTP {status}: {why}"),
            rpc_code: None,
            http_status: Some(status),
        }
    }

    fn record(&self, span: &Span) {
        if span.is_disabled() {
            return;
        }
        span.record("error.type", self.error_type.as_str());
        span.record("otel.status_description", self.description.as_str());
        if let Some(code) = self.rpc_code {
            span.record("rpc.response.status_code", code);
        }
        if let Some(status) = self.http_status {
            span.record("http.response.status_code", status);
        }
    }
}

impl Operation {
    pub(crate) fn start(labels: &RequestLabels<'_>) -> Self {
        let span = request_span(labels);
        Operation {
            http: labels.transport == Some(Transport::Http),
            #[cfg(feature = "otel")]
            metrics: otel::Timer::start(labels, &span),
            span,
        }
    }

    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// The request was answered with `response` (`None`: no response, such as a subscription's
    /// acknowledgement or a handler that panicked).
    pub(crate) fn finish(self, response: Option<&Outgoing>) {
        let failure = Failure::of(response, self.http);
        if let Some(failure) = &failure {
            failure.record(&self.span);
        }
        #[cfg(feature = "otel")]
        {
            let rpc_code = failure.as_ref().and_then(|failure| failure.rpc_code);
            self.metrics.finish(failure.as_ref().map(|failure| failure.error_type.as_str()), rpc_code);
        }
    }
}

/// A JSON-RPC error code's meaning, for a span's status description.
pub(crate) fn error_description(code: i64) -> String {
    use mcp_types::error_codes as codes;
    let name = match code {
        codes::PARSE_ERROR => "parse error",
        codes::INVALID_REQUEST => "invalid request",
        codes::METHOD_NOT_FOUND => "method not found",
        codes::INVALID_PARAMS => "invalid params",
        codes::INTERNAL_ERROR => "internal error",
        codes::HEADER_MISMATCH => "header mismatch",
        codes::MISSING_REQUIRED_CLIENT_CAPABILITY => "missing required client capability",
        codes::UNSUPPORTED_PROTOCOL_VERSION => "unsupported protocol version",
        codes::RESOURCE_NOT_FOUND_LEGACY => "resource not found",
        codes::URL_ELICITATION_REQUIRED_LEGACY => "URL elicitation required",
        -32099..=-32000 => "server error",
        _ => "error",
    };
    format!("{code}: {name}")
}

/// An `mcp.request` span, its method not yet known (the HTTP transport opens one before it reads
/// the message).
fn new_request_span() -> Span {
    tracing::info_span!(
        target: TARGET,
        "mcp.request",
        otel.name = Empty,
        otel.kind = "server",
        otel.status_description = Empty,
        mcp.method.name = Empty,
        mcp.protocol.version = Empty,
        mcp.session.id = Empty,
        mcp.resource.uri = Empty,
        jsonrpc.request.id = Empty,
        gen_ai.operation.name = Empty,
        gen_ai.tool.name = Empty,
        gen_ai.prompt.name = Empty,
        network.transport = Empty,
        network.protocol.name = Empty,
        error.type = Empty,
        rpc.response.status_code = Empty,
        http.request.method = Empty,
        http.response.status_code = Empty,
    )
}

fn request_span(labels: &RequestLabels<'_>) -> Span {
    let arrived = ARRIVED.with(|arrived| arrived.borrow_mut().take());
    #[cfg(feature = "otel")]
    let adopted = arrived.is_some();
    let span = arrived.unwrap_or_else(new_request_span);
    if span.is_disabled() {
        return span;
    }
    span.record("mcp.method.name", labels.method);
    span.record("mcp.protocol.version", labels.version);
    match (labels.method, labels.target) {
        ("tools/call", Some(tool)) => {
            span.record("gen_ai.tool.name", tool);
            span.record("gen_ai.operation.name", "execute_tool");
        }
        ("prompts/get", Some(prompt)) => {
            span.record("gen_ai.prompt.name", prompt);
        }
        (method, Some(uri)) if method.starts_with("resources/") => {
            span.record("mcp.resource.uri", uri);
        }
        _ => {}
    }
    let name = match labels
        .target
        .filter(|target| *target != OTHER && matches!(labels.method, "tools/call" | "prompts/get"))
    {
        Some(name) => format!("{} {name}", labels.method),
        None => labels.method.to_owned(),
    };
    span.record("otel.name", name.as_str());
    span.record("jsonrpc.request.id", tracing::field::display(labels.id));
    if let Some(transport) = labels.transport {
        span.record("network.transport", transport.network());
        if transport == Transport::Http {
            span.record("network.protocol.name", "http");
        }
    }
    if let Some(id) = labels.session_id {
        span.record("mcp.session.id", id);
    }
    #[cfg(feature = "otel")]
    if let Some(meta) = labels.meta {
        otel::adopt_parent(&span, meta);
    }
    #[cfg(feature = "otel")]
    if adopted {
        otel::rename(&span, name);
    }
    span
}

/// An open MCP session (a stdio connection, a legacy session) for the session metrics: counted
/// as active while it lives, its duration recorded when it is dropped (with `otel`).
pub(crate) struct SessionTimer {
    #[cfg(feature = "otel")]
    start: std::time::Instant,
    #[cfg(feature = "otel")]
    attributes: Vec<opentelemetry::KeyValue>,
}

impl SessionTimer {
    pub(crate) fn start(transport: Option<Transport>, version: Option<&str>) -> Self {
        #[cfg(feature = "otel")]
        {
            let mut attributes = Vec::new();
            if let Some(transport) = transport {
                attributes.push(opentelemetry::KeyValue::new("network.transport", transport.network()));
            }
            if let Some(version) = version {
                attributes.push(opentelemetry::KeyValue::new("mcp.protocol.version", version.to_owned()));
            }
            otel::instruments().active_sessions.add(1, &attributes);
            SessionTimer { start: std::time::Instant::now(), attributes }
        }
        #[cfg(not(feature = "otel"))]
        {
            let _ = (transport, version);
            SessionTimer {}
        }
    }
}

#[cfg(feature = "otel")]
impl Drop for SessionTimer {
    fn drop(&mut self) {
        let instruments = otel::instruments();
        instruments.active_sessions.add(-1, &self.attributes);
        instruments.session_duration.record(self.start.elapsed().as_secs_f64(), &self.attributes);
    }
}

/// How a session reaches the server, for `network.transport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    /// Standard input and output (or an in-memory connection).
    Pipe,
    /// Streamable HTTP.
    Http,
}

impl Transport {
    pub(crate) fn network(self) -> &'static str {
        match self {
            Transport::Pipe => "pipe",
            Transport::Http => "tcp",
        }
    }
}

/// Counts a request refused before it was served (with `otel`; nothing without it).
pub(crate) fn refused(reason: &str) {
    #[cfg(feature = "otel")]
    otel::refused(reason);
    #[cfg(not(feature = "otel"))]
    let _ = reason;
}

/// Counts a request refused with `error` before it was served, by its code.
pub(crate) fn refused_with(error: &mcp_types::ErrorObject) {
    #[cfg(feature = "otel")]
    otel::refused(&error.code.to_string());
    #[cfg(not(feature = "otel"))]
    let _ = error;
}

/// The span a task's handler runs in, from its creation to its result: in the trace of the
/// request that created it, but not held open by it (that request ends at once).
pub(crate) fn task_span(task_id: &str) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        parent: None,
        "mcp.task",
        otel.name = "task",
        otel.kind = "internal",
        mcp.task.id = task_id,
    );
    let creator = Span::current();
    span.follows_from(&creator);
    #[cfg(feature = "otel")]
    {
        use tracing_opentelemetry::OpenTelemetrySpanExt as _;
        let _ = span.set_parent(creator.context());
    }
    span
}

/// The current span's trace context as a W3C `traceparent` (with `otel`, while traced).
pub(crate) fn current_trace() -> Option<String> {
    #[cfg(feature = "otel")]
    {
        let mut params = serde_json::Value::Null;
        otel::inject(&Span::current(), &mut params);
        params.pointer("/_meta/traceparent").and_then(serde_json::Value::as_str).map(str::to_owned)
    }
    #[cfg(not(feature = "otel"))]
    None
}

/// For a request about a task (`tasks/get`, `tasks/update`, `tasks/cancel`): a span in the trace
/// that created the task (`trace`, its `traceparent`), linked to this request's own span, so that
/// the creating trace shows every poll whatever context the poll came with.
pub(crate) fn task_request_span(method: &'static str, task_id: &str, trace: Option<&str>) -> Span {
    let Some(trace) = trace else { return Span::none() };
    let span = tracing::info_span!(
        target: TARGET,
        parent: None,
        "mcp.task.request",
        otel.name = method,
        otel.kind = "internal",
        mcp.method.name = method,
        mcp.task.id = task_id,
    );
    span.follows_from(Span::current());
    #[cfg(feature = "otel")]
    otel::adopt_parent(&span, &JsonObject::from_iter([("traceparent".to_owned(), trace.into())]));
    #[cfg(not(feature = "otel"))]
    let _ = trace;
    span
}

/// A task entered `status`: an event in the current span and (with `otel`) a count.
pub(crate) fn task_status(status: &mcp_types::ext::tasks::TaskStatus) {
    let status = status.as_str();
    tracing::info!(target: TARGET, status, "task status");
    #[cfg(feature = "otel")]
    otel::instruments().task_statuses.add(1, &[opentelemetry::KeyValue::new("mcp.task.status", status.to_owned())]);
}

/// A span for a request the server sends to the client (elicitation, sampling, roots), whose
/// trace context goes into that request's `_meta`.
pub(crate) fn outgoing_request_span(method: &str) -> Span {
    tracing::info_span!(target: TARGET, "mcp.request", otel.name = method, otel.kind = "client", mcp.method.name = method)
}

/// Writes `span`'s trace context into `params._meta` (with `otel`; nothing without it).
pub(crate) fn inject(span: &Span, params: &mut serde_json::Value) {
    #[cfg(feature = "otel")]
    otel::inject(span, params);
    #[cfg(not(feature = "otel"))]
    let _ = (span, params);
}

#[cfg(feature = "otel")]
pub(crate) mod otel {
    //! The OpenTelemetry side: trace context through `_meta` and the MCP metrics.

    use std::sync::OnceLock;
    use std::time::Instant;

    use opentelemetry::KeyValue;
    use opentelemetry::metrics::{Counter, Histogram, UpDownCounter};
    use opentelemetry::propagation::{Extractor, Injector};
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;

    use super::*;

    /// The bucket boundaries the conventions give for MCP durations, in seconds.
    const DURATION_BUCKETS: [f64; 14] =
        [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

    pub(crate) struct Instruments {
        pub operation_duration: Histogram<f64>,
        pub session_duration: Histogram<f64>,
        pub active_sessions: UpDownCounter<i64>,
        pub refused: Counter<u64>,
        pub task_statuses: Counter<u64>,
    }

    pub(crate) fn instruments() -> &'static Instruments {
        static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();
        INSTRUMENTS.get_or_init(|| {
            let meter = opentelemetry::global::meter("mcp-server");
            Instruments {
                operation_duration: meter
                    .f64_histogram("mcp.server.operation.duration")
                    .with_unit("s")
                    .with_description("MCP request duration as observed on the server")
                    .with_boundaries(DURATION_BUCKETS.to_vec())
                    .build(),
                session_duration: meter
                    .f64_histogram("mcp.server.session.duration")
                    .with_unit("s")
                    .with_description("The duration of an MCP session as observed on the server")
                    .with_boundaries(DURATION_BUCKETS.to_vec())
                    .build(),
                active_sessions: meter
                    .i64_up_down_counter("mcp.server.session.active")
                    .with_unit("{session}")
                    .with_description("MCP sessions open on the server (stdio connections, legacy sessions)")
                    .build(),
                refused: meter
                    .u64_counter("mcp.server.request.refused")
                    .with_unit("{request}")
                    .with_description("Requests refused before they were served, by reason")
                    .build(),
                task_statuses: meter
                    .u64_counter("mcp.server.task.status")
                    .with_unit("{task}")
                    .with_description("Task status changes, by the status entered")
                    .build(),
            }
        })
    }

    /// Times one request for `mcp.server.operation.duration`.
    pub(crate) struct Timer {
        start: Instant,
        attributes: Vec<KeyValue>,
    }

    impl Timer {
        pub(crate) fn start(labels: &RequestLabels<'_>, _span: &Span) -> Self {
            let mut attributes = vec![
                KeyValue::new("mcp.method.name", labels.method),
                KeyValue::new("mcp.protocol.version", labels.version.to_owned()),
            ];
            match (labels.method, labels.target) {
                ("tools/call", Some(tool)) => {
                    attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_owned()));
                    attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
                }
                ("prompts/get", Some(prompt)) => {
                    attributes.push(KeyValue::new("gen_ai.prompt.name", prompt.to_owned()))
                }
                _ => {}
            }
            if let Some(transport) = labels.transport {
                attributes.push(KeyValue::new("network.transport", transport.network()));
                if transport == Transport::Http {
                    attributes.push(KeyValue::new("network.protocol.name", "http"));
                }
            }
            Timer { start: Instant::now(), attributes }
        }

        pub(crate) fn finish(mut self, error_type: Option<&str>, rpc_code: Option<i64>) {
            if let Some(error_type) = error_type {
                self.attributes.push(KeyValue::new("error.type", error_type.to_owned()));
            }
            if let Some(code) = rpc_code {
                self.attributes.push(KeyValue::new("rpc.response.status_code", code.to_string()));
            }
            instruments().operation_duration.record(self.start.elapsed().as_secs_f64(), &self.attributes);
        }
    }

    /// The duration of a request refused before the server served it, by the method its header
    /// named and the `error.type` the caller saw.
    pub(crate) fn record_refusal(start: Instant, method: &'static str, error_type: &str) {
        let attributes = [
            KeyValue::new("mcp.method.name", method),
            KeyValue::new("error.type", error_type.to_owned()),
            KeyValue::new("network.transport", Transport::Http.network()),
            KeyValue::new("network.protocol.name", "http"),
        ];
        instruments().operation_duration.record(start.elapsed().as_secs_f64(), &attributes);
    }

    /// Counts a request refused before it was served (`reason`: a JSON-RPC code, or a word).
    pub(crate) fn refused(reason: &str) {
        instruments().refused.add(1, &[KeyValue::new("reason", reason.to_owned())]);
    }

    /// Makes the trace context in `meta` the span's parent.
    pub(crate) fn adopt_parent(span: &Span, meta: &JsonObject) {
        if !meta.contains_key("traceparent") {
            return;
        }
        let parent =
            opentelemetry::global::get_text_map_propagator(|propagator| propagator.extract(&MetaCarrier(meta)));
        // A span the HTTP transport opened has begun already (the authorization check is its
        // child): the caller's context is then a link, not the parent.
        if span.set_parent(parent.clone()).is_err() {
            use opentelemetry::trace::TraceContextExt as _;
            let caller = parent.span().span_context().clone();
            if caller.is_valid() {
                span.add_link(caller);
            }
        }
    }

    /// Names the OpenTelemetry span of `span`, which may have begun already.
    pub(crate) fn rename(span: &Span, name: String) {
        use opentelemetry::trace::TraceContextExt as _;
        span.context().span().update_name(name);
    }

    /// Writes the span's trace context into `params._meta`, keeping what is already there.
    pub(crate) fn inject(span: &Span, params: &mut serde_json::Value) {
        if params.is_null() {
            *params = serde_json::Value::Object(Default::default());
        }
        let Some(params) = params.as_object_mut() else { return };
        let meta = params.entry("_meta").or_insert_with(|| serde_json::Value::Object(Default::default()));
        let Some(meta) = meta.as_object_mut() else { return };
        let context = span.context();
        opentelemetry::global::get_text_map_propagator(|propagator| {
            propagator.inject_context(&context, &mut MetaInjector(meta))
        });
        if meta.is_empty() {
            params.remove("_meta");
        }
    }

    struct MetaCarrier<'a>(&'a JsonObject);

    impl Extractor for MetaCarrier<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(serde_json::Value::as_str)
        }

        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(String::as_str).collect()
        }
    }

    struct MetaInjector<'a>(&'a mut JsonObject);

    impl Injector for MetaInjector<'_> {
        fn set(&mut self, key: &str, value: String) {
            self.0.entry(key.to_owned()).or_insert(serde_json::Value::String(value));
        }
    }
}
