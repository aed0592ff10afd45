//! A `tracing` span per outgoing request and notification by the OpenTelemetry semantic
//! conventions for MCP (span names `{mcp.method.name} {target}`, kind client, the `mcp.*`,
//! `gen_ai.*`, `jsonrpc.*`, `network.*` and `server.*` attributes), and one per server-to-client
//! request the client answers (kind server); free when nothing listens: every field is recorded
//! after the span turned out enabled. With the `otel` feature: the span's trace context written
//! into each request's `params._meta` (`traceparent`, `tracestate`, `baggage`), the context of a
//! server's request read from its `_meta` as the parent of the span its handler runs in, and the
//! conventions' client metrics.

use std::sync::Arc;

use mcp_types::{JsonObject, RequestId};
use serde_json::Value;
use tracing::Span;
use tracing::field::Empty;

use crate::error::Error;

/// The `tracing` target of the client's spans.
pub(crate) const TARGET: &str = "mcp_client";

/// Where a connection's requests go, in the conventions' words.
#[derive(Debug, Clone, Default)]
pub(crate) struct Peer {
    /// `pipe` (stdio) or `tcp` (HTTP).
    network_transport: &'static str,
    http: bool,
    address: Option<String>,
    port: Option<u16>,
}

impl Peer {
    #[cfg(feature = "stdio")]
    pub(crate) fn stdio() -> Arc<Self> {
        Arc::new(Peer { network_transport: "pipe", ..Peer::default() })
    }

    #[cfg(feature = "http")]
    pub(crate) fn http(url: &reqwest::Url) -> Arc<Self> {
        Arc::new(Peer {
            network_transport: "tcp",
            http: true,
            address: url.host_str().map(str::to_owned),
            port: url.port_or_known_default(),
        })
    }
}

/// What a request span names besides its peer.
pub(crate) struct RequestLabels<'a> {
    pub method: &'static str,
    pub id: &'a RequestId,
    pub version: &'a str,
    /// The tool, prompt or resource the request is about ([`Target::of`] its params).
    pub target: Target<'a>,
}

/// The tool, prompt or resource a request is about.
pub(crate) enum Target<'a> {
    Tool(&'a str),
    Prompt(&'a str),
    Resource(&'a str),
    None,
}

impl<'a> Target<'a> {
    /// The target of a `method` request with `params` (without `_meta`), where the tool, prompt
    /// or resource is named.
    pub(crate) fn of(method: &str, params: &'a JsonObject) -> Target<'a> {
        let member = |name: &str| params.get(name).and_then(Value::as_str);
        match method {
            "tools/call" => member("name").map_or(Target::None, Target::Tool),
            "prompts/get" => member("name").map_or(Target::None, Target::Prompt),
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
                member("uri").map_or(Target::None, Target::Resource)
            }
            _ => Target::None,
        }
    }
}

/// How a request ended, as `error.type` and `rpc.response.status_code` say it.
enum Outcome {
    Ok,
    /// A `CallToolResult` with `isError: true`.
    ToolError,
    /// A JSON-RPC error, by its code.
    Rpc(String),
    /// Any other failure, by its kind.
    Failed(String),
}

impl Outcome {
    /// `Ok(tool_failed)`: whether the result is a `CallToolResult` with `isError: true`.
    fn of(result: Result<bool, &Error>) -> Self {
        match result {
            Ok(true) => Outcome::ToolError,
            Ok(false) => Outcome::Ok,
            Err(Error::Rpc { error, .. }) => Outcome::Rpc(error.code.to_string()),
            Err(error) => Outcome::Failed(error_type(error)),
        }
    }

    fn record(&self, span: &Span) {
        let error_type = match self {
            Outcome::Ok => return,
            Outcome::ToolError => "tool_error",
            Outcome::Rpc(code) => {
                span.record("rpc.response.status_code", code.as_str());
                code
            }
            Outcome::Failed(kind) => kind,
        };
        span.record("error.type", error_type);
        span.record("otel.status_code", "ERROR");
    }
}

/// Every JSON-RPC message as it crosses the wire, at `TRACE` level on the target
/// `mcp_client::wire` (`direction` = `send` or `receive`, the text as the message): for tools
/// that show the exchange (`mcp --raw`). Costs one level check when no subscriber wants it.
pub(crate) fn wire(direction: &'static str, text: &str) {
    tracing::trace!(target: "mcp_client::wire", direction, "{}", text.trim_end());
}

/// `error.type` for a failure that is not a JSON-RPC error: a short word for the kind, or the
/// HTTP status (as the HTTP conventions have it).
pub(crate) fn error_type(error: &Error) -> String {
    let kind = match error {
        Error::Rpc { error, .. } => return error.code.to_string(),
        Error::HttpStatus { status, .. } => return status.to_string(),
        Error::Transport { .. } => "transport",
        Error::Timeout { .. } => "timeout",
        Error::Protocol(_) => "protocol",
        Error::VersionMismatch { .. } => "version_mismatch",
        Error::NotSupported { .. } => "not_supported",
        Error::Handler(_) => "handler",
        Error::LimitExceeded { .. } => "limit_exceeded",
        Error::TaskCancelled { .. } => "task_cancelled",
        Error::InvalidArguments { .. } => "invalid_arguments",
        Error::Closed => "closed",
        Error::SkillVerification { .. } => "skill_verification",
        #[cfg(feature = "auth")]
        Error::Auth(_) => "authorization",
    };
    kind.to_owned()
}

/// One outgoing request: its span and (with `otel`) what its duration is recorded with. Dropped
/// unfinished (the caller gave up on the request), it is recorded with `error.type` `cancelled`.
pub(crate) struct Operation {
    span: Span,
    finished: bool,
    #[cfg(feature = "otel")]
    timer: otel::Timer,
}

impl Operation {
    /// `session` gives the legacy HTTP session id; asked only when the span is recorded.
    pub(crate) fn start(peer: &Peer, labels: &RequestLabels<'_>, session: impl FnOnce() -> Option<String>) -> Self {
        let target = &labels.target;
        let span = request_span(peer, labels, target, session);
        Operation {
            #[cfg(feature = "otel")]
            timer: otel::Timer::start(peer, labels, target),
            finished: false,
            span,
        }
    }

    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// Writes the span's trace context into `meta` (with `otel`; nothing without it).
    pub(crate) fn inject(&self, meta: &mut JsonObject) {
        #[cfg(feature = "otel")]
        otel::inject(&self.span, meta);
        #[cfg(not(feature = "otel"))]
        let _ = meta;
    }

    /// Ends the operation: `Ok(tool_failed)` (see [`Outcome::of`]), or its error.
    pub(crate) fn finish(mut self, result: Result<bool, &Error>) {
        self.finished = true;
        if self.span.is_disabled() && !cfg!(feature = "otel") {
            return;
        }
        self.end(&Outcome::of(result));
    }

    fn end(&mut self, outcome: &Outcome) {
        outcome.record(&self.span);
        #[cfg(feature = "otel")]
        self.timer.finish(outcome);
    }
}

impl Drop for Operation {
    fn drop(&mut self) {
        if !self.finished && (cfg!(feature = "otel") || !self.span.is_disabled()) {
            self.end(&Outcome::Failed("cancelled".to_owned()));
        }
    }
}

fn request_span(
    peer: &Peer,
    labels: &RequestLabels<'_>,
    target: &Target<'_>,
    session: impl FnOnce() -> Option<String>,
) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "mcp.request",
        otel.name = Empty,
        otel.kind = "client",
        otel.status_code = Empty,
        mcp.method.name = labels.method,
        mcp.protocol.version = labels.version,
        mcp.session.id = Empty,
        mcp.resource.uri = Empty,
        jsonrpc.request.id = Empty,
        gen_ai.operation.name = Empty,
        gen_ai.tool.name = Empty,
        gen_ai.prompt.name = Empty,
        network.transport = Empty,
        network.protocol.name = Empty,
        server.address = Empty,
        server.port = Empty,
        error.type = Empty,
        rpc.response.status_code = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    match target {
        Target::Tool(tool) => {
            span.record("otel.name", format!("{} {tool}", labels.method));
            span.record("gen_ai.tool.name", *tool);
            span.record("gen_ai.operation.name", "execute_tool");
        }
        Target::Prompt(prompt) => {
            span.record("otel.name", format!("{} {prompt}", labels.method));
            span.record("gen_ai.prompt.name", *prompt);
        }
        Target::Resource(uri) => {
            span.record("otel.name", labels.method);
            span.record("mcp.resource.uri", *uri);
        }
        Target::None => {
            span.record("otel.name", labels.method);
        }
    }
    span.record("jsonrpc.request.id", tracing::field::display(labels.id));
    if let Some(session) = session() {
        span.record("mcp.session.id", session);
    }
    record_peer(&span, peer);
    span
}

fn record_peer(span: &Span, peer: &Peer) {
    if !peer.network_transport.is_empty() {
        span.record("network.transport", peer.network_transport);
    }
    if peer.http {
        span.record("network.protocol.name", "http");
    }
    if let Some(address) = &peer.address {
        span.record("server.address", address.as_str());
    }
    if let Some(port) = peer.port {
        span.record("server.port", port);
    }
}

/// The span of an outgoing notification (`notifications/initialized`, `notifications/cancelled`).
pub(crate) fn notification_span(peer: &Peer, method: &str, version: &str) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "mcp.notification",
        otel.name = method,
        otel.kind = "client",
        otel.status_code = Empty,
        mcp.method.name = method,
        mcp.protocol.version = version,
        network.transport = Empty,
        network.protocol.name = Empty,
        server.address = Empty,
        server.port = Empty,
        error.type = Empty,
    );
    if !span.is_disabled() {
        record_peer(&span, peer);
    }
    span
}

/// Records that the notification of `span` could not be sent.
pub(crate) fn notification_failed(span: &Span, error: &Error) {
    if !span.is_disabled() {
        span.record("error.type", error_type(error));
        span.record("otel.status_code", "ERROR");
    }
}

/// Writes `span`'s trace context into a JSON-RPC message's `params._meta` (with `otel`).
pub(crate) fn inject_into_message(span: &Span, message: &mut Value) {
    #[cfg(feature = "otel")]
    {
        let Some(message) = message.as_object_mut() else { return };
        let params = message.entry("params").or_insert_with(|| Value::Object(JsonObject::new()));
        let Some(params) = params.as_object_mut() else { return };
        let mut meta = match params.remove("_meta") {
            Some(Value::Object(meta)) => meta,
            Some(other) => {
                // Not an object: not ours to touch.
                params.insert("_meta".into(), other);
                return;
            }
            None => JsonObject::new(),
        };
        otel::inject(span, &mut meta);
        if !meta.is_empty() {
            params.insert("_meta".into(), Value::Object(meta));
        }
        if params.is_empty() {
            message.remove("params");
        }
    }
    #[cfg(not(feature = "otel"))]
    let _ = (span, message);
}

/// The span a server-to-client request (elicitation, sampling, roots, ping) is answered in: kind
/// server, the child of the trace context in the request's `_meta` (with `otel`). `id` is the
/// JSON-RPC id of a legacy server request (a modern input request has none).
pub(crate) fn answer_span(method: &str, id: Option<&Value>, params: &Value) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "mcp.server_request",
        otel.name = method,
        otel.kind = "server",
        otel.status_code = Empty,
        mcp.method.name = method,
        jsonrpc.request.id = Empty,
        error.type = Empty,
        rpc.response.status_code = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    if let Some(id) = id {
        match id {
            Value::String(id) => span.record("jsonrpc.request.id", id.as_str()),
            other => span.record("jsonrpc.request.id", tracing::field::display(other)),
        };
    }
    #[cfg(feature = "otel")]
    if let Some(meta) = params.get("_meta").and_then(Value::as_object) {
        otel::adopt_parent(&span, meta);
    }
    #[cfg(not(feature = "otel"))]
    let _ = params;
    span
}

/// Records that answering a server request failed: `code` is the JSON-RPC error code sent back,
/// if one was.
pub(crate) fn answer_failed(span: &Span, error_type: &str, code: Option<&str>) {
    if span.is_disabled() {
        return;
    }
    span.record("error.type", error_type);
    if let Some(code) = code {
        span.record("rpc.response.status_code", code);
    }
    span.record("otel.status_code", "ERROR");
}

/// The life of a client, for `mcp.client.session.duration` (with `otel`; nothing without it).
#[derive(Default)]
pub(crate) struct SessionClock {
    #[cfg(feature = "otel")]
    inner: otel::SessionClock,
}

impl SessionClock {
    /// Notes how a request ended: a lost connection is what the session ends with unless a
    /// later request succeeds.
    pub(crate) fn observe<T>(&self, result: &Result<T, Error>) {
        #[cfg(feature = "otel")]
        self.inner.observe(result);
        #[cfg(not(feature = "otel"))]
        let _ = result;
    }

    /// Records the session's duration, once.
    pub(crate) fn end(&self, peer: &Peer, version: &str) {
        #[cfg(feature = "otel")]
        self.inner.end(peer, version);
        #[cfg(not(feature = "otel"))]
        let _ = (peer, version);
    }
}

#[cfg(feature = "otel")]
mod otel {
    //! The OpenTelemetry side: trace context through `_meta` and the MCP client metrics.

    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Mutex, OnceLock};
    use std::time::Instant;

    use opentelemetry::KeyValue;
    use opentelemetry::metrics::Histogram;
    use opentelemetry::propagation::{Extractor, Injector};
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;

    use super::*;

    /// The bucket boundaries the conventions give for MCP durations, in seconds.
    const DURATION_BUCKETS: [f64; 14] =
        [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

    struct Instruments {
        operation_duration: Histogram<f64>,
        session_duration: Histogram<f64>,
    }

    /// Created once, from the global meter provider at the first use: install the provider
    /// before the first request.
    fn instruments() -> &'static Instruments {
        static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();
        INSTRUMENTS.get_or_init(|| {
            let meter = opentelemetry::global::meter("mcp-client");
            Instruments {
                operation_duration: meter
                    .f64_histogram("mcp.client.operation.duration")
                    .with_unit("s")
                    .with_description("MCP request duration as observed on the client")
                    .with_boundaries(DURATION_BUCKETS.to_vec())
                    .build(),
                session_duration: meter
                    .f64_histogram("mcp.client.session.duration")
                    .with_unit("s")
                    .with_description("The duration of an MCP session as observed on the client")
                    .with_boundaries(DURATION_BUCKETS.to_vec())
                    .build(),
            }
        })
    }

    fn peer_attributes(peer: &Peer, attributes: &mut Vec<KeyValue>) {
        if !peer.network_transport.is_empty() {
            attributes.push(KeyValue::new("network.transport", peer.network_transport));
        }
        if peer.http {
            attributes.push(KeyValue::new("network.protocol.name", "http"));
        }
    }

    /// Times one request for `mcp.client.operation.duration`.
    pub(super) struct Timer {
        start: Instant,
        attributes: Vec<KeyValue>,
    }

    impl Timer {
        pub(super) fn start(peer: &Peer, labels: &RequestLabels<'_>, target: &Target<'_>) -> Self {
            let mut attributes = vec![
                KeyValue::new("mcp.method.name", labels.method),
                KeyValue::new("mcp.protocol.version", labels.version.to_owned()),
            ];
            match target {
                Target::Tool(tool) => {
                    attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_string()));
                    attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
                }
                Target::Prompt(prompt) => attributes.push(KeyValue::new("gen_ai.prompt.name", prompt.to_string())),
                Target::Resource(_) | Target::None => {}
            }
            peer_attributes(peer, &mut attributes);
            Timer { start: Instant::now(), attributes }
        }

        pub(super) fn finish(&mut self, outcome: &Outcome) {
            match outcome {
                Outcome::Ok => {}
                Outcome::ToolError => self.attributes.push(KeyValue::new("error.type", "tool_error")),
                Outcome::Rpc(code) => {
                    self.attributes.push(KeyValue::new("error.type", code.clone()));
                    self.attributes.push(KeyValue::new("rpc.response.status_code", code.clone()));
                }
                Outcome::Failed(kind) => self.attributes.push(KeyValue::new("error.type", kind.clone())),
            }
            let attributes = std::mem::take(&mut self.attributes);
            instruments().operation_duration.record(self.start.elapsed().as_secs_f64(), &attributes);
        }
    }

    /// Times a client's life for `mcp.client.session.duration`.
    pub(super) struct SessionClock {
        start: Instant,
        ended: AtomicBool,
        /// Why the connection was lost, if the last request found it so.
        lost: Mutex<Option<String>>,
    }

    impl Default for SessionClock {
        fn default() -> Self {
            SessionClock { start: Instant::now(), ended: AtomicBool::new(false), lost: Mutex::new(None) }
        }
    }

    impl SessionClock {
        pub(super) fn observe<T>(&self, result: &Result<T, Error>) {
            let lost = match result {
                Err(error @ (Error::Closed | Error::Transport { .. })) => Some(error_type(error)),
                // Any other answer means the connection works.
                _ => None,
            };
            *self.lost.lock().unwrap() = lost;
        }

        pub(super) fn end(&self, peer: &Peer, version: &str) {
            if self.ended.swap(true, Ordering::SeqCst) {
                return;
            }
            let mut attributes = vec![KeyValue::new("mcp.protocol.version", version.to_owned())];
            peer_attributes(peer, &mut attributes);
            if let Some(lost) = self.lost.lock().unwrap().take() {
                attributes.push(KeyValue::new("error.type", lost));
            }
            instruments().session_duration.record(self.start.elapsed().as_secs_f64(), &attributes);
        }
    }

    /// Writes the span's trace context into `meta`, never replacing what the caller put there
    /// (and no `tracestate` beside a caller's own `traceparent`: it would belong to another
    /// trace).
    pub(super) fn inject(span: &Span, meta: &mut JsonObject) {
        if span.is_disabled() {
            return;
        }
        let context = span.context();
        let callers_trace = meta.contains_key("traceparent");
        opentelemetry::global::get_text_map_propagator(|propagator| {
            propagator.inject_context(&context, &mut MetaInjector { meta, callers_trace })
        });
    }

    /// Makes the trace context in `meta` the span's parent.
    pub(super) fn adopt_parent(span: &Span, meta: &JsonObject) {
        if !meta.contains_key("traceparent") {
            return;
        }
        let parent =
            opentelemetry::global::get_text_map_propagator(|propagator| propagator.extract(&MetaExtractor(meta)));
        let _ = span.set_parent(parent);
    }

    struct MetaExtractor<'a>(&'a JsonObject);

    impl Extractor for MetaExtractor<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(Value::as_str)
        }

        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(String::as_str).collect()
        }
    }

    struct MetaInjector<'a> {
        meta: &'a mut JsonObject,
        callers_trace: bool,
    }

    impl Injector for MetaInjector<'_> {
        fn set(&mut self, key: &str, value: String) {
            if self.callers_trace && key == "tracestate" {
                return;
            }
            self.meta.entry(key.to_owned()).or_insert(Value::String(value));
        }
    }
}

/// Runs `work` with spans recorded; the finished spans (for the tests here and in `core`).
#[cfg(all(test, feature = "otel"))]
pub(crate) fn recorded(work: impl FnOnce()) -> Vec<opentelemetry_sdk::trace::SpanData> {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
    use tracing_subscriber::layer::SubscriberExt as _;

    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), work);
    let _ = provider.force_flush();
    exporter.get_finished_spans().unwrap()
}

#[cfg(all(test, feature = "otel"))]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_trace_context_never_replaces_what_the_caller_put_in_meta() {
        recorded(|| {
            let span = tracing::info_span!("request");
            let mut meta = JsonObject::new();
            otel::inject(&span, &mut meta);
            let ours = meta["traceparent"].as_str().unwrap().to_owned();
            assert!(ours.starts_with("00-") && ours.len() == 55, "{ours}");

            let mut callers = JsonObject::new();
            callers.insert("traceparent".into(), json!("00-11111111111111111111111111111111-2222222222222222-01"));
            otel::inject(&span, &mut callers);
            assert_eq!(callers["traceparent"], "00-11111111111111111111111111111111-2222222222222222-01");
            assert!(!callers.contains_key("tracestate"));
        });
    }
}
