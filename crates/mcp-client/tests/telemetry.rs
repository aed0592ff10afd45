//! The client's spans by the OpenTelemetry semantic conventions for MCP, read back through the
//! SDK's in-memory exporter: names, kinds, attributes and parents over Streamable HTTP (a real
//! `mcp-server`, and a recording server for what goes on the wire) and stdio (a scripted
//! Python server); the `traceparent` the client writes into `_meta`. The metrics are in
//! `telemetry_metrics.rs`.
#![cfg(all(feature = "otel", feature = "http", feature = "stdio"))]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcp_client::types::{JsonObject, ObjectSchema, Tool};
use mcp_client::{Client, StdioCommand};
use mcp_server::{Context, Server, ToolRoute};
use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Value, json};
use tracing::Instrument as _;
use tracing_subscriber::layer::SubscriberExt as _;

/// Spans of this test only: a tracer of its own, installed as the thread's default subscriber
/// (the tests run on current-thread runtimes, so every task of the test sees it).
struct Spans {
    exporter: InMemorySpanExporter,
    provider: SdkTracerProvider,
    _guard: tracing::subscriber::DefaultGuard,
}

impl Spans {
    fn record() -> Self {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
        let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
        Spans { exporter, provider, _guard: guard }
    }

    fn finished(&self) -> Vec<SpanData> {
        let _ = self.provider.force_flush();
        self.exporter.get_finished_spans().unwrap()
    }

    /// The one finished span of `kind` named `name` (the server's spans have the same names).
    fn named(&self, name: &str, kind: SpanKind) -> SpanData {
        let spans = self.finished();
        let found: Vec<_> = spans.iter().filter(|s| s.name == name && s.span_kind == kind).cloned().collect();
        let names: Vec<_> = spans.iter().map(|s| format!("{} ({:?})", s.name, s.span_kind)).collect();
        assert_eq!(found.len(), 1, "one {kind:?} span named {name:?} among {names:?}");
        found.into_iter().next().unwrap()
    }
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string())
}

fn assert_attributes(span: &SpanData, expected: &[(&str, &str)]) {
    for (key, value) in expected {
        assert_eq!(attribute(span, key).as_deref(), Some(*value), "{key} of {span:#?}");
    }
}

/// The `traceparent` a span's context is written as.
fn traceparent_of(span: &SpanData) -> String {
    format!("00-{}-{}-01", span.span_context.trace_id(), span.span_context.span_id())
}

fn raw_tool(name: &str) -> Tool {
    Tool::new(ObjectSchema::default(), name)
}

/// A real `mcp-server`: `echo` answers, `fail` is a tool error.
async fn mcp_server() -> (String, u16) {
    let server = Server::builder("telemetry", "1")
        .tool(ToolRoute::raw(raw_tool("echo"), |_: Context, _: JsonObject| async move {
            Ok::<_, mcp_server::Error>("hi".to_owned())
        }))
        .tool(ToolRoute::raw(raw_tool("fail"), |_: Context, _: JsonObject| async move {
            Err::<String, _>(mcp_server::Error::failed("no"))
        }))
        .tool(ToolRoute::raw(raw_tool("ask"), |ctx: Context, _: JsonObject| async move {
            let roots = ctx.list_roots("roots").await?;
            Ok::<_, mcp_server::Error>(roots.roots.len().to_string())
        }))
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(mcp_server::http::serve(listener, server, Default::default()));
    (format!("http://127.0.0.1:{port}/mcp"), port)
}

#[tokio::test]
async fn http_requests_are_client_spans_with_the_conventions_attributes() {
    let spans = Spans::record();
    let (url, port) = mcp_server().await;
    let app = tracing::info_span!("app");
    async {
        let client = Client::builder("telemetry", "1").connect_http(&url).await.unwrap();
        client.call_tool("echo", json!({})).await.unwrap();
        assert_eq!(client.call_tool("fail", json!({})).await.unwrap().is_error, Some(true));
        let unknown = client.call_tool("nope", json!({})).await.unwrap_err();
        assert_eq!(unknown.code(), Some(-32602), "{unknown}");
        client.close().await;
    }
    .instrument(app.clone())
    .await;
    drop(app);

    let app = spans.named("app", SpanKind::Internal);
    let discover = spans.named("server/discover", SpanKind::Client);
    let echo = spans.named("tools/call echo", SpanKind::Client);
    for span in [&discover, &echo] {
        assert_eq!(span.span_context.trace_id(), app.span_context.trace_id());
        assert_eq!(span.parent_span_id, app.span_context.span_id(), "{} under the caller's span", span.name);
        assert_eq!(span.status, Status::Unset);
    }
    let port = port.to_string();
    assert_attributes(
        &echo,
        &[
            ("mcp.method.name", "tools/call"),
            ("gen_ai.tool.name", "echo"),
            ("gen_ai.operation.name", "execute_tool"),
            ("mcp.protocol.version", "2026-07-28"),
            ("network.transport", "tcp"),
            ("network.protocol.name", "http"),
            ("server.address", "127.0.0.1"),
            ("server.port", &port),
        ],
    );
    assert!(attribute(&echo, "jsonrpc.request.id").is_some());
    assert_eq!(attribute(&echo, "error.type"), None);
    assert_attributes(&discover, &[("mcp.method.name", "server/discover")]);
    assert_eq!(attribute(&discover, "gen_ai.tool.name"), None);

    // The server (mcp-server, feature otel) read the client's traceparent from `_meta`.
    let served = spans.named("tools/call echo", SpanKind::Server);
    assert_eq!(served.span_context.trace_id(), echo.span_context.trace_id());
    assert_eq!(served.parent_span_id, echo.span_context.span_id(), "the server's span is the client span's child");

    let fail = spans.named("tools/call fail", SpanKind::Client);
    assert_attributes(&fail, &[("error.type", "tool_error")]);
    assert!(matches!(fail.status, Status::Error { .. }), "{:?}", fail.status);
    assert_eq!(attribute(&fail, "rpc.response.status_code"), None);

    let nope = spans.named("tools/call nope", SpanKind::Client);
    assert_attributes(&nope, &[("error.type", "-32602"), ("rpc.response.status_code", "-32602")]);
    assert!(matches!(nope.status, Status::Error { .. }), "{:?}", nope.status);
}

/// Every JSON-RPC request a recording server received.
type Bodies = Arc<Mutex<Vec<Value>>>;

/// A modern server that answers discovery, listings and calls, recording every body.
async fn recording_server() -> (String, Bodies) {
    async fn answer(State(bodies): State<Bodies>, body: String) -> Response {
        let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        bodies.lock().unwrap().push(body.clone());
        let result = match body["method"].as_str().unwrap_or("") {
            "server/discover" => json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "prompts": {}}}),
            "tools/list" => {
                json!({"resultType": "complete", "tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
            }
            "tools/call" => json!({"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}),
            "prompts/get" => json!({"resultType": "complete", "messages": []}),
            _ => return StatusCode::ACCEPTED.into_response(),
        };
        let reply = json!({"jsonrpc": "2.0", "id": body["id"], "result": result});
        ([(header::CONTENT_TYPE, "application/json")], reply.to_string()).into_response()
    }
    let bodies = Bodies::default();
    let app = axum::Router::new().route("/mcp", axum::routing::post(answer)).with_state(bodies.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, bodies)
}

fn request_of<'a>(bodies: &'a [Value], method: &str) -> &'a Value {
    bodies.iter().find(|b| b["method"] == method).unwrap_or_else(|| panic!("no {method} among {bodies:?}"))
}

#[tokio::test]
async fn each_request_carries_its_spans_traceparent_in_meta() {
    let spans = Spans::record();
    let (url, bodies) = recording_server().await;
    async {
        let client = Client::builder("telemetry", "1").connect_http(&url).await.unwrap();
        client.call_tool("echo", json!({})).await.unwrap();
        client.get_prompt("hello", json!({})).await.unwrap();
        client.close().await;
    }
    .instrument(tracing::info_span!("app"))
    .await;

    let bodies = bodies.lock().unwrap().clone();
    for (method, span) in [("tools/call", "tools/call echo"), ("prompts/get", "prompts/get hello")] {
        let span = spans.named(span, SpanKind::Client);
        let meta = &request_of(&bodies, method)["params"]["_meta"];
        assert_eq!(meta["traceparent"], traceparent_of(&span), "{method}: {meta}");
        // The protocol's own members are still there.
        assert_eq!(meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
    }
    let prompt = spans.named("prompts/get hello", SpanKind::Client);
    assert_attributes(&prompt, &[("gen_ai.prompt.name", "hello")]);
    assert_eq!(attribute(&prompt, "gen_ai.operation.name"), None);
}

#[tokio::test]
async fn without_a_listener_nothing_is_added_to_meta() {
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let (url, bodies) = recording_server().await;
    let client = Client::builder("telemetry", "1").connect_http(&url).await.unwrap();
    client.call_tool("echo", json!({})).await.unwrap();
    client.close().await;
    let bodies = bodies.lock().unwrap().clone();
    let meta = &request_of(&bodies, "tools/call")["params"]["_meta"];
    assert!(meta.get("traceparent").is_none(), "{meta}");
}

fn python_server(mode: &str, log: &std::path::Path) -> StdioCommand {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/stdio_server.py");
    StdioCommand::new("python3").arg(script).arg(mode).arg(log)
}

#[tokio::test]
async fn stdio_requests_are_pipe_spans_and_carry_the_trace() {
    let spans = Spans::record();
    let log = std::env::temp_dir().join(format!("mcp-client-telemetry-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let client = Client::builder("telemetry", "1")
        .probe_timeout(Duration::from_secs(10))
        .connect_stdio(python_server("modern", &log))
        .await
        .unwrap();
    client.all_tools().await.unwrap();
    client.close().await;

    let list = spans.named("tools/list", SpanKind::Client);
    assert_attributes(&list, &[("network.transport", "pipe"), ("mcp.method.name", "tools/list")]);
    assert_eq!(attribute(&list, "network.protocol.name"), None);
    assert_eq!(attribute(&list, "server.address"), None);
    let sent: Vec<Value> =
        std::fs::read_to_string(&log).unwrap().lines().filter_map(|line| serde_json::from_str(line).ok()).collect();
    let _ = std::fs::remove_file(&log);
    let listed = request_of(&sent, "tools/list");
    assert_eq!(listed["params"]["_meta"]["traceparent"], traceparent_of(&list), "{listed}");
}

#[tokio::test]
async fn a_legacy_servers_request_is_answered_in_a_server_span() {
    let spans = Spans::record();
    let log = std::env::temp_dir().join(format!("mcp-client-telemetry-asks-{}.log", std::process::id()));
    let handlers = mcp_client::Handlers::new()
        .elicitation(mcp_client::ElicitationModes::FORM, |_| async { Ok(mcp_client::ElicitationResponse::decline()) })
        .roots(|| async { Ok(vec![]) });
    let client = Client::builder("telemetry", "1")
        .handlers(handlers)
        .probe_timeout(Duration::from_secs(10))
        .connect_stdio(python_server("legacy-asks", &log))
        .await
        .unwrap();
    client.call_tool("ask", json!({})).await.unwrap();
    client.close().await;
    let _ = std::fs::remove_file(&log);

    let initialized = spans.named("notifications/initialized", SpanKind::Client);
    assert_attributes(&initialized, &[("network.transport", "pipe")]);
    let roots = spans.named("roots/list", SpanKind::Server);
    assert_attributes(&roots, &[("mcp.method.name", "roots/list")]);
    assert!(attribute(&roots, "jsonrpc.request.id").is_some());
}

#[tokio::test]
async fn a_legacy_http_session_names_its_id_and_answers_the_servers_request_in_its_trace() {
    let spans = Spans::record();
    let (url, _) = mcp_server().await;
    let client = Client::builder("telemetry", "1")
        .era(mcp_client::EraPreference::Legacy)
        .handlers(mcp_client::Handlers::new().roots(|| async { Ok(vec![]) }))
        .connect_http(&url)
        .await
        .unwrap();
    let result = client.call_tool("ask", json!({})).await.unwrap();
    assert_eq!(serde_json::to_value(&result.content).unwrap()[0]["text"], "0");
    client.close().await;

    let call = spans.named("tools/call ask", SpanKind::Client);
    assert_attributes(&call, &[("mcp.protocol.version", "2025-11-25"), ("network.transport", "tcp")]);
    assert!(attribute(&call, "mcp.session.id").is_some_and(|id| !id.is_empty()), "{call:#?}");
    // The server asked within its handling of the call (its outgoing request is a client span);
    // the client answered in a server span, that request's child.
    let asked = spans.named("roots/list", SpanKind::Client);
    let answered = spans.named("roots/list", SpanKind::Server);
    assert_eq!(answered.span_context.trace_id(), call.span_context.trace_id());
    assert_eq!(answered.parent_span_id, asked.span_context.span_id());
}
