//! The server's spans and metrics by the OpenTelemetry semantic conventions for MCP, read back
//! through the OpenTelemetry SDK's in-memory exporters: names, kinds, attributes, parents (the
//! caller's `traceparent` in `_meta`), over the in-memory connection (a stdio session) and
//! Streamable HTTP, both eras; a task's span under the request that created it, and its polls
//! in that trace; the trace context in a server-to-client request. The metrics are in `telemetry_metrics.rs`.
#![cfg(all(feature = "otel", feature = "http"))]

mod common;

use std::time::Duration;

use common::*;
use mcp_server::http::HttpConfig;
use mcp_server::{Context, Error, NoArguments, Server, TaskSupport, ToolRoute};
use mcp_types::ext::TASKS;
use opentelemetry::trace::{SpanKind, TracerProvider as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt as _;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

fn traceparent() -> String {
    format!("00-{TRACE_ID}-{PARENT_ID}-01")
}

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

    /// The one finished span named `name`.
    fn named(&self, name: &str) -> SpanData {
        let spans = self.finished();
        let found: Vec<_> = spans.iter().filter(|s| s.name == name).cloned().collect();
        let names: Vec<_> = spans.iter().map(|s| s.name.to_string()).collect();
        assert_eq!(found.len(), 1, "one span named {name:?} among {names:?}");
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

fn server() -> Server {
    Server::builder("telemetry", "1")
        .tool(ToolRoute::new("echo", |_ctx: Context, args: Echo| async move { Ok::<_, Error>(args.text) }))
        .tool(ToolRoute::new("fail", |_ctx: Context, _: NoArguments| async { Err::<String, _>(Error::failed("no")) }))
        .tool(
            ToolRoute::new("later", |_ctx: Context, _: NoArguments| async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                Ok::<_, Error>("finished")
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(ToolRoute::new("ask", |ctx: Context, _: NoArguments| async move {
            let answer: Value = ctx.list_roots("roots").await.map(|r| json!(r.roots.len()))?;
            Ok::<_, Error>(answer.to_string())
        }))
        .build()
        .unwrap()
}

fn echo_call(id: i64, meta: Value) -> Value {
    request(id, "tools/call", json!({ "name": "echo", "arguments": { "text": "hi" }, "_meta": meta }))
}

fn with_trace(mut meta: Value) -> Value {
    meta["traceparent"] = json!(traceparent());
    meta
}

#[tokio::test]
async fn a_modern_tool_call_on_a_pipe_is_a_server_span_under_the_callers_context() {
    let spans = Spans::record();
    let mut client = MemoryClient::start(&server());
    let response = client.ask(echo_call(7, with_trace(meta()))).await;
    assert_eq!(text(&response), "hi");

    let span = spans.named("tools/call echo");
    assert_eq!(span.span_kind, SpanKind::Server);
    assert_eq!(span.span_context.trace_id().to_string(), TRACE_ID);
    assert_eq!(span.parent_span_id.to_string(), PARENT_ID);
    assert!(span.parent_span_is_remote);
    assert_attributes(
        &span,
        &[
            ("mcp.method.name", "tools/call"),
            ("mcp.protocol.version", MODERN),
            ("jsonrpc.request.id", "7"),
            ("gen_ai.tool.name", "echo"),
            ("gen_ai.operation.name", "execute_tool"),
            ("network.transport", "pipe"),
        ],
    );
    assert_eq!(attribute(&span, "error.type"), None);
}

#[tokio::test]
async fn list_requests_of_both_eras_are_the_callers_children() {
    let spans = Spans::record();
    let mut modern = MemoryClient::start(&server());
    let _ = modern.ask(request(1, "tools/list", json!({ "_meta": with_trace(meta()) }))).await;
    let mut legacy = MemoryClient::start(&server());
    let _ = legacy.ask(initialize(0, LEGACY, json!({}))).await;
    legacy.send(notification("notifications/initialized", json!({}))).await;
    let listed = legacy.ask(request(2, "tools/list", json!({ "_meta": { "traceparent": traceparent() } }))).await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");

    let lists: Vec<_> = spans.finished().into_iter().filter(|s| s.name == "tools/list").collect();
    assert_eq!(lists.len(), 2);
    for span in &lists {
        assert_eq!(span.span_context.trace_id().to_string(), TRACE_ID);
        assert_eq!(span.parent_span_id.to_string(), PARENT_ID);
    }
    let versions: Vec<_> = lists.iter().map(|s| attribute(s, "mcp.protocol.version").unwrap()).collect();
    assert!(versions.contains(&MODERN.to_owned()) && versions.contains(&LEGACY.to_owned()), "{versions:?}");
}

#[tokio::test]
async fn failures_carry_error_type_and_the_status_code() {
    let spans = Spans::record();
    let mut client = MemoryClient::start(&server());
    let failed = client.ask(request(1, "tools/call", json!({ "name": "fail", "_meta": meta() }))).await;
    assert_eq!(failed["result"]["isError"], true);
    let unknown = client.ask(request(2, "tools/call", json!({ "name": "nope", "_meta": meta() }))).await;
    assert_error(&unknown, 2, -32602);

    let span = spans.named("tools/call fail");
    assert_attributes(&span, &[("error.type", "tool_error")]);
    assert_eq!(span.status, opentelemetry::trace::Status::error("tool_error: the tool's result is an error (isError)"));
    // A name the server does not serve is recorded as `_OTHER`, and the span is named by the method.
    let span = spans.named("tools/call");
    assert_attributes(
        &span,
        &[("gen_ai.tool.name", "_OTHER"), ("error.type", "-32602"), ("rpc.response.status_code", "-32602")],
    );
    assert_eq!(span.status, opentelemetry::trace::Status::error("-32602: invalid params"));
}

/// One tool, `broken`, whose result a source gives as text with `isError: true`.
struct RawFailure;

impl mcp_server::dynamic::ToolSource for RawFailure {
    fn tools(&self, _caller: &mcp_server::Principal) -> std::sync::Arc<[mcp_types::Tool]> {
        [mcp_types::Tool::new(mcp_types::ObjectSchema::default(), "broken")].into()
    }

    fn call(&self, _ctx: Context, _params: mcp_types::CallToolRequestParams) -> mcp_server::dynamic::ToolFuture {
        unreachable!("the result is written out as text")
    }

    fn answer(&self, _ctx: Context, _params: mcp_types::CallToolRequestParams) -> mcp_server::dynamic::AnswerFuture {
        let text = r#"{"content":[{"type":"text","text":"no"}],"isError":true}"#.to_owned();
        let raw = mcp_types::RawResult::from_text(text).unwrap();
        Box::pin(std::future::ready(Ok(mcp_server::dynamic::ToolAnswer::Raw(raw))))
    }
}

#[tokio::test]
async fn a_tool_error_given_as_text_is_recorded_as_a_tool_error() {
    let spans = Spans::record();
    let server = Server::builder("telemetry", "1").tool_source(std::sync::Arc::new(RawFailure)).build().unwrap();
    let mut client = MemoryClient::start(&server);
    let failed = client.ask(request(1, "tools/call", json!({ "name": "broken", "_meta": meta() }))).await;
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    assert_attributes(&spans.named("tools/call broken"), &[("error.type", "tool_error")]);
}

#[tokio::test]
async fn unknown_prompts_and_resources_are_recorded_as_other() {
    let spans = Spans::record();
    let server = Server::builder("telemetry", "1")
        .prompt(mcp_server::PromptRoute::new("greet", |_ctx: Context, _: NoArguments| async {
            Ok::<_, Error>("hello".to_owned())
        }))
        .build()
        .unwrap();
    let mut client = MemoryClient::start(&server);
    let greeted = client.ask(request(1, "prompts/get", json!({ "name": "greet", "_meta": meta() }))).await;
    assert!(greeted.get("result").is_some(), "{greeted}");
    let _ = client.ask(request(2, "prompts/get", json!({ "name": "random-8d1f", "_meta": meta() }))).await;

    assert_attributes(&spans.named("prompts/get greet"), &[("gen_ai.prompt.name", "greet")]);
    assert_attributes(&spans.named("prompts/get"), &[("gen_ai.prompt.name", "_OTHER")]);
}

#[tokio::test]
async fn a_legacy_session_over_http_names_its_session_and_transport() {
    let spans = Spans::record();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = mcp_server::http::router(server(), HttpConfig::default());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let url = format!("http://{address}/mcp");
    let http = reqwest::Client::new();
    let post = |body: Value, session: Option<String>| {
        let mut request = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .json(&body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session).header("mcp-protocol-version", LEGACY);
        }
        request.send()
    };
    let opened = post(initialize(0, LEGACY, json!({})), None).await.unwrap();
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let _ = opened.text().await.unwrap();
    let _ = post(notification("notifications/initialized", json!({})), Some(session.clone())).await.unwrap();
    let meta = json!({ "traceparent": traceparent() });
    let answer = post(echo_call(1, meta), Some(session.clone())).await.unwrap().text().await.unwrap();
    assert!(answer.contains("\"hi\""), "{answer}");

    let span = spans.named("tools/call echo");
    assert_eq!(span.span_kind, SpanKind::Server);
    assert_eq!(span.span_context.trace_id().to_string(), TRACE_ID);
    assert_eq!(span.parent_span_id.to_string(), PARENT_ID);
    assert_attributes(
        &span,
        &[
            ("mcp.protocol.version", LEGACY),
            ("mcp.session.id", session.as_str()),
            ("network.transport", "tcp"),
            ("network.protocol.name", "http"),
        ],
    );
}

#[tokio::test]
async fn a_task_runs_in_a_span_under_the_call_that_created_it_and_its_polls_join_that_trace() {
    let spans = Spans::record();
    let mut client = MemoryClient::start(&server());
    let caps = json!({ "extensions": { TASKS: {} } });
    let created = client
        .ask(request(1, "tools/call", json!({ "name": "later", "_meta": with_trace(meta_with(caps.clone())) })))
        .await;
    let task_id = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
    let mut status = String::new();
    let mut polls = 0;
    for n in 2..200 {
        polls += 1;
        let got = client.ask(request(n, "tasks/get", json!({ "taskId": task_id, "_meta": meta_with(caps.clone()) })));
        let got = got.await;
        status = got["result"]["status"].as_str().unwrap_or_default().to_owned();
        if status == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(status, "completed");

    let call = spans.named("tools/call later");
    let task = spans.named("task");
    assert_eq!(task.parent_span_id, call.span_context.span_id());
    assert_eq!(task.span_context.trace_id().to_string(), TRACE_ID);
    assert_attributes(&task, &[("mcp.task.id", task_id.as_str())]);
    let statuses: Vec<String> = task
        .events
        .iter()
        .filter(|e| e.name == "task status")
        .filter_map(|e| e.attributes.iter().find(|kv| kv.key.as_str() == "status").map(|kv| kv.value.to_string()))
        .collect();
    assert_eq!(statuses, ["completed"], "the task's own span sees its result");
    let working: Vec<_> = call.events.iter().filter(|e| e.name == "task status").collect();
    assert_eq!(working.len(), 1, "the creating call records the task's first status: {:#?}", call.events);

    // The polls came without a trace context of their own; each still joins the creating
    // trace (a span under the call), linked to the poll's own request span.
    let finished = spans.finished();
    let poll_requests: Vec<_> =
        finished.iter().filter(|s| s.name == "tasks/get" && s.span_kind == SpanKind::Server).collect();
    let in_creating_trace: Vec<_> =
        finished.iter().filter(|s| s.name == "tasks/get" && s.span_kind == SpanKind::Internal).collect();
    assert_eq!(poll_requests.len(), polls);
    assert_eq!(in_creating_trace.len(), polls);
    for (joined, request) in in_creating_trace.iter().zip(&poll_requests) {
        assert_eq!(joined.span_context.trace_id().to_string(), TRACE_ID);
        assert_eq!(joined.parent_span_id, call.span_context.span_id());
        assert_attributes(joined, &[("mcp.task.id", task_id.as_str()), ("mcp.method.name", "tasks/get")]);
        assert_ne!(request.span_context.trace_id().to_string(), TRACE_ID, "the poll's own trace is another");
        let linked: Vec<_> = joined.links.iter().map(|link| link.span_context.span_id()).collect();
        assert!(
            poll_requests.iter().any(|r| linked.contains(&r.span_context.span_id())),
            "linked to a poll's request span: {joined:#?}"
        );
    }
}

#[tokio::test]
async fn a_server_to_client_request_carries_the_trace_back() {
    let spans = Spans::record();
    let mut client = MemoryClient::start(&server());
    let _ = client.ask(initialize(0, LEGACY, json!({ "roots": {} }))).await;
    client.send(notification("notifications/initialized", json!({}))).await;
    client.send(request(1, "tools/call", json!({ "name": "ask", "_meta": { "traceparent": traceparent() } }))).await;
    let roots_request = client.recv().await;
    assert_eq!(roots_request["method"], "roots/list");
    let carried = roots_request["params"]["_meta"]["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("{roots_request}"))
        .to_owned();
    let parts: Vec<&str> = carried.split('-').collect();
    assert_eq!(parts[1], TRACE_ID, "{carried}");
    client.send(json!({ "jsonrpc": "2.0", "id": roots_request["id"], "result": { "roots": [] } })).await;
    let answer = client.recv().await;
    assert_eq!(text(&answer), "0");

    let outgoing = spans.named("roots/list");
    assert_eq!(outgoing.span_kind, SpanKind::Client);
    assert_eq!(outgoing.span_context.span_id().to_string(), parts[2]);
    // The request's span, its handler's, then the request to the client.
    let call = spans.named("tools/call ask");
    let handler =
        spans.finished().into_iter().find(|s| s.name == "handler" && s.parent_span_id == call.span_context.span_id());
    let handler = handler.expect("the handler's span under the call");
    assert_eq!(outgoing.parent_span_id, handler.span_context.span_id());
}

/// A server over HTTP on a free port; its URL.
async fn serve_http(server: Server, config: HttpConfig) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = mcp_server::http::router(server, config);
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}/mcp")
}

/// POSTs `body` as a correct 2026-07-28 client would, but for the headers `changed`.
async fn post_modern(url: &str, body: &Value, changed: &[(&'static str, &str)]) -> reqwest::Response {
    use reqwest::header::{HeaderMap, HeaderValue};
    let mut headers = HeaderMap::new();
    headers.insert("accept", HeaderValue::from_static("application/json, text/event-stream"));
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert("mcp-protocol-version", HeaderValue::from_static(MODERN));
    headers.insert("mcp-method", HeaderValue::from_str(body["method"].as_str().unwrap()).unwrap());
    if let Some(name) = body["params"]["name"].as_str() {
        headers.insert("mcp-name", HeaderValue::from_str(name).unwrap());
    }
    for (name, value) in changed {
        headers.insert(*name, HeaderValue::from_str(value).unwrap());
    }
    reqwest::Client::new().post(url).headers(headers).body(body.to_string()).send().await.unwrap()
}

#[tokio::test]
async fn a_modern_request_over_http_has_no_session_and_keeps_the_callers_context() {
    let spans = Spans::record();
    let url = serve_http(server(), HttpConfig::default()).await;
    let answer = post_modern(&url, &echo_call(1, with_trace(meta())), &[]).await.text().await.unwrap();
    assert!(answer.contains("\"hi\""), "{answer}");

    let span = spans.named("tools/call echo");
    assert_eq!(span.span_kind, SpanKind::Server);
    assert_eq!(span.span_context.trace_id().to_string(), TRACE_ID);
    assert_eq!(span.parent_span_id.to_string(), PARENT_ID);
    assert_attributes(
        &span,
        &[("mcp.protocol.version", MODERN), ("network.transport", "tcp"), ("network.protocol.name", "http")],
    );
    // 2026-07-28 has no sessions.
    assert_eq!(attribute(&span, "mcp.session.id"), None, "{span:#?}");
}

#[tokio::test]
async fn a_request_refused_before_its_handler_has_a_request_span_with_what_the_caller_saw() {
    let spans = Spans::record();
    let url = serve_http(server(), HttpConfig::default()).await;
    // A JSON-RPC refusal before dispatch: `_meta` lacks the client capabilities.
    let bare_meta = json!({ "io.modelcontextprotocol/protocolVersion": MODERN });
    let refused = post_modern(&url, &request(1, "tools/list", json!({ "_meta": bare_meta })), &[]).await;
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.unwrap();
    assert_error(&body, 1, -32602);
    // An HTTP refusal before the message is read: an Accept the server cannot answer.
    let not_acceptable = post_modern(&url, &echo_call(2, meta()), &[("accept", "text/plain")]).await;
    assert_eq!(not_acceptable.status(), 406);

    let span = spans.named("tools/list");
    assert_eq!(span.span_kind, SpanKind::Server);
    assert_attributes(&span, &[("mcp.method.name", "tools/list"), ("error.type", "-32602")]);
    assert_eq!(span.status, opentelemetry::trace::Status::error("-32602: invalid params"));
    let span = spans.named("tools/call");
    assert_attributes(
        &span,
        &[("mcp.method.name", "tools/call"), ("error.type", "406"), ("http.response.status_code", "406")],
    );
    assert_eq!(span.status, opentelemetry::trace::Status::error("HTTP 406: Not Acceptable"));
}

#[tokio::test]
async fn an_unknown_method_is_recorded_as_other() {
    let spans = Spans::record();
    let url = serve_http(server(), HttpConfig::default()).await;
    let refused = post_modern(&url, &request(1, "tools/frobnicate-4711", json!({ "_meta": meta() })), &[]).await;
    assert_eq!(refused.status(), 404);

    let names: Vec<String> = spans.finished().iter().map(|span| span.name.to_string()).collect();
    assert!(!names.iter().any(|name| name.contains("frobnicate")), "{names:?}");
    assert_attributes(&spans.named("_OTHER"), &[("mcp.method.name", "_OTHER"), ("error.type", "-32601")]);
}
