//! Era negotiation, headers, multi round-trip requests, caching and hostile responses over HTTP,
//! against small scripted servers on 127.0.0.1.
#![cfg(feature = "http")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use futures::StreamExt as _;
use mcp_client::types::{JsonObject, ServerNotification, SubscriptionFilter};
use mcp_client::{Client, ElicitationModes, ElicitationResponse, Era, Error, Handlers, TransportKind};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// One request the scripted server saw.
#[derive(Debug, Clone)]
struct Seen {
    method: Method,
    path: String,
    headers: HeaderMap,
    body: Value,
}

impl Seen {
    fn rpc(&self) -> &str {
        self.body["method"].as_str().unwrap_or("")
    }
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

enum Reply {
    Json(StatusCode, String),
    Sse(String),
    Stream(mpsc::UnboundedReceiver<String>),
    Empty(StatusCode),
    /// JSON with an `Mcp-Session-Id`.
    WithSession(String),
}

fn json_reply(body: Value) -> Reply {
    Reply::Json(StatusCode::OK, body.to_string())
}

fn result(request: &Seen, result: Value) -> Reply {
    json_reply(json!({"jsonrpc": "2.0", "id": request.body["id"], "result": result}))
}

fn rpc_error(status: StatusCode, request: &Seen, code: i64, data: Value) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": request.body["id"], "error": {"code": code, "message": "refused", "data": data}});
    Reply::Json(status, body.to_string())
}

type Script = dyn Fn(&Seen, &[Seen]) -> Reply + Send + Sync;

#[derive(Clone)]
struct Server {
    seen: Arc<Mutex<Vec<Seen>>>,
    script: Arc<Script>,
}

async fn handle(State(server): State<Server>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let seen =
        Seen { method, path: uri.to_string(), headers, body: serde_json::from_slice(&body).unwrap_or(Value::Null) };
    let history = server.seen.lock().unwrap().clone();
    server.seen.lock().unwrap().push(seen.clone());
    let reply = (server.script)(&seen, &history);
    let builder = Response::builder();
    match reply {
        Reply::Json(status, text) => {
            builder.status(status).header("content-type", "application/json").body(Body::from(text)).unwrap()
        }
        Reply::Sse(text) => builder.header("content-type", "text/event-stream").body(Body::from(text)).unwrap(),
        Reply::Stream(rx) => {
            let stream = futures::stream::unfold(rx, |mut rx| async move {
                rx.recv().await.map(|chunk| (Ok::<_, std::io::Error>(Bytes::from(chunk)), rx))
            });
            builder.header("content-type", "text/event-stream").body(Body::from_stream(stream)).unwrap()
        }
        Reply::Empty(status) => builder.status(status).body(Body::empty()).unwrap(),
        Reply::WithSession(text) => builder
            .header("content-type", "application/json")
            .header("mcp-session-id", "session-1")
            .body(Body::from(text))
            .unwrap(),
    }
}

/// Starts a scripted server; returns its URL and what it saw.
async fn serve(script: impl Fn(&Seen, &[Seen]) -> Reply + Send + Sync + 'static) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let server = Server { seen: seen.clone(), script: Arc::new(script) };
    let app = axum::Router::new().fallback(handle).with_state(server);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

fn discover_result() -> Value {
    json!({"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
           "ttlMs": 0, "cacheScope": "public",
           "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "2.0"}}})
}

fn tools_result(tools: Value, ttl: u64) -> Value {
    json!({"resultType": "complete", "tools": tools, "ttlMs": ttl, "cacheScope": "private"})
}

/// A modern server; `tools` answers everything but `server/discover`.
fn modern(tools: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> impl Fn(&Seen, &[Seen]) -> Reply + Send + Sync {
    move |request, _| match request.rpc() {
        "server/discover" => result(request, discover_result()),
        _ => tools(request),
    }
}

/// A legacy Streamable HTTP server; `before` answers what arrives before `initialize`.
fn legacy(before: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> impl Fn(&Seen, &[Seen]) -> Reply + Send + Sync {
    move |request, history| {
        if request.method == Method::GET {
            return Reply::Empty(StatusCode::METHOD_NOT_ALLOWED);
        }
        let initialized = history.iter().any(|s| s.rpc() == "initialize");
        match request.rpc() {
            "initialize" => {
                let body = json!({"jsonrpc": "2.0", "id": request.body["id"], "result": {
                    "protocolVersion": request.body["params"]["protocolVersion"],
                    "capabilities": {"tools": {}}, "serverInfo": {"name": "old", "version": "1"}}});
                Reply::WithSession(body.to_string())
            }
            "notifications/initialized" => Reply::Empty(StatusCode::ACCEPTED),
            "tools/list" if initialized => {
                result(request, json!({"tools": [{"name": "old-tool", "inputSchema": {"type": "object"}}]}))
            }
            _ => before(request),
        }
    }
}

fn methods(seen: &Arc<Mutex<Vec<Seen>>>) -> Vec<String> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|s| if s.method == Method::GET { "GET".into() } else { s.rpc().to_owned() })
        .collect()
}

fn builder() -> mcp_client::ClientBuilder {
    Client::builder("http-test", "1.0").request_timeout(Duration::from_secs(10))
}

#[tokio::test]
async fn a_400_with_a_modern_body_is_retried_with_a_supported_version_not_a_fallback() {
    let (url, seen) = serve(|request, history| {
        if history.is_empty() {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                request,
                -32022,
                json!({"supported": ["2026-07-28"], "requested": "x"}),
            );
        }
        modern(|r| result(r, tools_result(json!([]), 0)))(request, history)
    })
    .await;
    let client = builder().connect_http(&url).await.unwrap();
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(client.server_info().unwrap().name, "scripted");
    assert_eq!(methods(&seen), vec!["server/discover", "server/discover"]);
    client.all_tools().await.unwrap();
    for request in seen.lock().unwrap().iter() {
        let version = &request.body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"];
        assert_eq!(request.header("mcp-protocol-version"), version.as_str(), "header equals _meta");
        assert_eq!(request.header("mcp-method"), Some(request.rpc()));
        let accept = request.header("accept").unwrap();
        assert!(accept.contains("application/json") && accept.contains("text/event-stream"));
    }
}

#[tokio::test]
async fn a_modern_server_offering_only_a_legacy_version_gets_initialize_with_it() {
    let (url, seen) = serve(legacy(|request| {
        rpc_error(
            StatusCode::BAD_REQUEST,
            request,
            -32022,
            json!({"supported": ["2025-06-18"], "requested": "2026-07-28"}),
        )
    }))
    .await;
    let client = builder().connect_http(&url).await.unwrap();
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.protocol_version(), "2025-06-18");
    let init = seen.lock().unwrap().iter().find(|s| s.rpc() == "initialize").cloned().unwrap();
    assert_eq!(init.body["params"]["protocolVersion"], "2025-06-18");
}

#[tokio::test]
async fn a_400_with_an_empty_body_falls_back_to_initialize() {
    let (url, seen) = serve(legacy(|_| Reply::Empty(StatusCode::BAD_REQUEST))).await;
    let client = builder().connect_http(&url).await.unwrap();
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.protocol_version(), "2025-11-25");
    assert_eq!(client.all_tools().await.unwrap()[0].name, "old-tool");
    assert_eq!(methods(&seen), vec!["server/discover", "initialize", "notifications/initialized", "GET", "tools/list"]);
    let seen = seen.lock().unwrap();
    let init = seen.iter().find(|s| s.rpc() == "initialize").unwrap();
    assert!(init.header("mcp-method").is_none(), "legacy requests carry no modern headers");
    assert!(init.body["params"].get("_meta").is_none());
    let list = seen.iter().find(|s| s.rpc() == "tools/list").unwrap();
    assert_eq!(list.header("mcp-protocol-version"), Some("2025-11-25"));
    assert_eq!(list.header("mcp-session-id"), Some("session-1"));
    assert!(init.header("mcp-session-id").is_none());
}

#[tokio::test]
async fn a_400_with_an_unrecognized_body_falls_back_to_initialize() {
    let (url, _) = serve(legacy(|request| rpc_error(StatusCode::BAD_REQUEST, request, -32000, json!(null)))).await;
    let client = builder().connect_http(&url).await.unwrap();
    assert_eq!(client.era(), Era::Legacy);
}

#[tokio::test]
async fn a_404_carrying_method_not_found_is_a_modern_server_and_never_a_fallback() {
    let (url, seen) = serve(|request, _| match request.rpc() {
        "tools/list" => result(request, tools_result(json!([]), 0)),
        _ => rpc_error(StatusCode::NOT_FOUND, request, -32601, json!(null)),
    })
    .await;
    let client = builder().connect_http(&url).await.unwrap();
    assert_eq!(client.era(), Era::Modern);
    client.all_tools().await.unwrap();
    assert_eq!(methods(&seen), vec!["server/discover", "tools/list"]);
    // The same answer to an unknown method later is an error, still no fallback.
    let err = client.health().await.unwrap_err();
    assert!(matches!(err, Error::NotSupported { ref method, .. } if method == "health"), "{err}");
    assert!(!methods(&seen).contains(&"initialize".to_owned()));
}

#[tokio::test]
async fn a_200_with_a_legacy_error_is_a_legacy_stateless_server() {
    let (url, _) = serve(legacy(|request| rpc_error(StatusCode::OK, request, -32601, json!(null)))).await;
    let client = builder().connect_http(&url).await.unwrap();
    assert_eq!(client.era(), Era::Legacy);
}

#[tokio::test]
async fn refused_posts_fall_back_to_the_2024_http_sse_transport() {
    let stream: Arc<Mutex<Option<mpsc::UnboundedSender<String>>>> = Arc::default();
    let sink = stream.clone();
    let (url, seen) = serve(move |request, _| {
        if request.method == Method::GET {
            let (tx, rx) = mpsc::unbounded_channel();
            tx.send("event: endpoint\ndata: /messages?session=7\n\n".into()).unwrap();
            *sink.lock().unwrap() = Some(tx);
            return Reply::Stream(rx);
        }
        if !request.path.starts_with("/messages") {
            return Reply::Json(StatusCode::NOT_FOUND, "no such endpoint".into());
        }
        let answer = match request.rpc() {
            "initialize" => Some(json!({"protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                                        "serverInfo": {"name": "ancient", "version": "0.1"}})),
            "tools/list" => Some(json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]})),
            _ => None,
        };
        if let Some(answer) = answer {
            let message = json!({"jsonrpc": "2.0", "id": request.body["id"], "result": answer});
            let tx = sink.lock().unwrap().clone().unwrap();
            tx.send(format!("event: message\ndata: {message}\n\n")).unwrap();
        }
        Reply::Empty(StatusCode::ACCEPTED)
    })
    .await;
    let client = builder().connect_http(&url).await.unwrap();
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.server().transport, TransportKind::HttpSse);
    assert_eq!(client.protocol_version(), "2024-11-05");
    assert_eq!(client.all_tools().await.unwrap()[0].name, "t");
    assert_eq!(
        methods(&seen),
        vec!["server/discover", "initialize", "GET", "initialize", "notifications/initialized", "tools/list"]
    );
    drop(stream);
}

fn weather_tools() -> Value {
    json!([
        {"name": "weather", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "days": {"type": "integer", "x-mcp-header": "Days"},
            "note": {"type": "string"}}}},
        {"name": "bad", "inputSchema": {"type": "object", "properties": {
            "a": {"type": "object", "x-mcp-header": "A"}}}},
        {"name": "schema-keeper", "inputSchema": {"type": "object", "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {"x": {"$ref": "https://example.com/never-fetched.json"}}, "unevaluatedProperties": false,
            "properties": {"b": {"$ref": "#/$defs/x"}}}}
    ])
}

#[tokio::test]
async fn modern_calls_carry_name_and_param_headers_and_invalid_tools_are_refused() {
    let (url, seen) = serve(modern(|request| match request.rpc() {
        "tools/list" => result(request, tools_result(weather_tools(), 0)),
        _ => result(request, json!({"resultType": "complete", "content": []})),
    }))
    .await;
    let client = builder().connect_http(&url).await.unwrap();
    let tools = client.all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["weather", "schema-keeper"]);
    // Schemas are kept as received, byte for byte (no $ref resolution, no keyword loss).
    let keeper = tools.iter().find(|t| t.name == "schema-keeper").unwrap();
    assert_eq!(keeper.input_schema.as_json(), weather_tools()[2]["inputSchema"].to_string());

    let args = json!({"region": "Zürich", "days": 3, "note": "plain"});
    client.call_tool("weather", args.as_object().cloned()).await.unwrap();
    let err = client.call_tool("bad", ()).await.unwrap_err();
    assert!(err.to_string().contains("invalid"), "{err}");

    let seen = seen.lock().unwrap();
    let calls: Vec<&Seen> = seen.iter().filter(|s| s.rpc() == "tools/call").collect();
    assert_eq!(calls.len(), 1, "the invalid tool was never called");
    let call = calls[0];
    assert_eq!(call.header("mcp-method"), Some("tools/call"));
    assert_eq!(call.header("mcp-name"), Some("weather"));
    assert_eq!(call.header("mcp-param-region"), Some("=?base64?WsO8cmljaA==?="));
    assert_eq!(call.header("mcp-param-days"), Some("3"));
    assert!(call.headers.keys().all(|k| k.as_str() != "mcp-param-note"), "unannotated arguments are not mirrored");
}

#[tokio::test]
async fn input_required_is_answered_and_retried_with_the_same_state_and_a_new_id() {
    let (url, seen) = serve(modern(|request| {
        let params = &request.body["params"];
        if params.get("inputResponses").is_some() {
            let text = json!({"responses": params["inputResponses"], "state": params["requestState"]}).to_string();
            return result(request, json!({"resultType": "complete", "content": [{"type": "text", "text": text}]}));
        }
        result(request, json!({"resultType": "input_required", "requestState": "s=1;\u{e9}\"x\"",
            "inputRequests": {"ask": {"method": "elicitation/create", "params": {"message": "units?",
                "requestedSchema": {"type": "object", "properties": {
                    "units": {"type": "string", "default": "metric"}, "score": {"type": "number", "default": 95.5}}}}}}}))
    }))
    .await;
    let handlers = Handlers::new()
        .elicitation(ElicitationModes::FORM, |_| async { Ok(ElicitationResponse::accept(JsonObject::new())) });
    let client = builder().handlers(handlers).connect_http(&url).await.unwrap();
    let result = client.call_tool("mrtr", ()).await.unwrap();
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap().to_owned();
    let echoed: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(echoed["state"], "s=1;\u{e9}\"x\"");
    assert_eq!(
        echoed["responses"],
        json!({"ask": {"action": "accept", "content": {"units": "metric", "score": 95.5}}})
    );
    let seen = seen.lock().unwrap();
    let calls: Vec<&Seen> = seen.iter().filter(|s| s.rpc() == "tools/call").collect();
    assert_eq!(calls.len(), 2);
    assert_ne!(calls[0].body["id"], calls[1].body["id"]);
    assert!(calls[0].body["params"].get("requestState").is_none());
    assert_eq!(
        calls[1].body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {"form": {}}})
    );
}

#[tokio::test]
async fn sse_responses_deliver_progress_then_the_result() {
    let (url, seen) = serve(modern(|request| {
        let token = request.body["params"]["_meta"]["progressToken"].clone();
        let id = request.body["id"].clone();
        let progress = |p: f64| {
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": p, "total": 2}})
        };
        let done = json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete", "content": []}});
        Reply::Sse(format!(": keep-alive\n\ndata: {}\n\ndata: {}\n\ndata: {}\n\n", progress(1.0), progress(2.0), done))
    }))
    .await;
    let client = builder().connect_http(&url).await.unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let options = mcp_client::CallOptions::new().on_progress(move |p| sink.lock().unwrap().push((p.progress, p.total)));
    client.call_tool_with("slow", (), options).await.unwrap();
    assert_eq!(*got.lock().unwrap(), vec![(1.0, Some(2.0)), (2.0, Some(2.0))]);
    let seen = seen.lock().unwrap();
    assert!(seen.last().unwrap().body["params"]["_meta"]["progressToken"].is_string());
}

#[tokio::test]
async fn list_results_are_cached_for_their_ttl() {
    let (url, seen) = serve(modern(|request| result(request, tools_result(json!([]), 60_000)))).await;
    let client = builder().connect_http(&url).await.unwrap();
    client.all_tools().await.unwrap();
    client.all_tools().await.unwrap();
    assert_eq!(methods(&seen).iter().filter(|m| *m == "tools/list").count(), 1);
    client.clear_cache();
    client.all_tools().await.unwrap();
    assert_eq!(methods(&seen).iter().filter(|m| *m == "tools/list").count(), 2);
}

#[tokio::test]
async fn pages_are_followed_until_no_cursor() {
    let (url, _) = serve(modern(|request| {
        let cursor = request.body["params"]["cursor"].as_str().map(str::to_owned);
        let (name, next) = match cursor.as_deref() {
            None => ("a", json!("p2")),
            Some("p2") => ("b", json!("")),
            _ => ("c", Value::Null),
        };
        let mut page = tools_result(json!([{"name": name, "inputSchema": {"type": "object"}}]), 0);
        if !next.is_null() {
            page["nextCursor"] = next;
        }
        result(request, page)
    }))
    .await;
    let client = builder().connect_http(&url).await.unwrap();
    let names: Vec<String> = client.all_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    assert_eq!(names, vec!["a", "b", "c"]);
}

#[tokio::test]
async fn subscriptions_stream_typed_notifications() {
    let (url, seen) = serve(modern(|request| {
        let id = request.body["id"].clone();
        let meta = json!({"io.modelcontextprotocol/subscriptionId": id});
        let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
            "params": {"notifications": {"toolsListChanged": true}, "_meta": meta}});
        let changed =
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": meta}});
        Reply::Sse(format!("data: {ack}\n\ndata: {changed}\n\n"))
    }))
    .await;
    let client = builder().connect_http(&url).await.unwrap();
    let filter = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
    let mut subscription = client.listen(filter).await.unwrap();
    let first = subscription.next().await.unwrap().unwrap();
    assert!(matches!(first, ServerNotification::SubscriptionsAcknowledged(_)), "{first:?}");
    let second = subscription.next().await.unwrap().unwrap();
    assert!(matches!(second, ServerNotification::ToolListChanged(_)), "{second:?}");
    // The server closed the stream without a result: an unexpected disconnect.
    assert!(subscription.next().await.unwrap().is_err());
    assert!(subscription.next().await.is_none());
    assert_eq!(methods(&seen), vec!["server/discover", "subscriptions/listen"]);
}

#[tokio::test]
async fn hostile_responses_are_typed_errors_not_panics() {
    let (url, _) = serve(modern(|request| {
        let id = request.body["id"].clone();
        match request.body["params"]["name"].as_str().unwrap_or("") {
            "garbage" => Reply::Json(StatusCode::OK, "{not json".into()),
            "array" => Reply::Json(StatusCode::OK, json!({"jsonrpc": "2.0", "id": id, "result": [1]}).to_string()),
            "weird-type" => result(request, json!({"resultType": "teleport", "content": []})),
            "wrong-id" => result(&Seen { body: json!({"id": 999_999}), ..request.clone() }, json!({"content": []})),
            "bad-content" => result(request, json!({"content": [{"type": "hologram"}]})),
            "sse-junk" => Reply::Sse("data: {\"jsonrpc\":\n\nevent: other\ndata: x\n\n".into()),
            "server-error" => Reply::Json(StatusCode::INTERNAL_SERVER_ERROR, "boom".into()),
            _ => rpc_error(StatusCode::OK, request, -32602, json!({"why": "no"})),
        }
    }))
    .await;
    let client = builder().connect_http(&url).await.unwrap();
    for (name, check) in [
        ("garbage", "protocol"),
        ("array", "protocol"),
        ("weird-type", "protocol"),
        ("wrong-id", "protocol"),
        ("bad-content", "protocol"),
        ("sse-junk", "transport"),
        ("server-error", "HTTP status 500"),
        ("rpc", "code -32602"),
    ] {
        let err = client.call_tool(name, ()).await.unwrap_err();
        assert!(err.to_string().contains(check), "{name}: {err}");
    }
}

#[tokio::test]
async fn a_header_mismatch_relists_the_tools_and_retries_with_the_new_annotations() {
    let (url, seen) = serve(modern(|request| {
        let lists_before = request.body["id"].as_i64().unwrap_or(0);
        match request.rpc() {
            "tools/list" => {
                // The annotation changed between the two listings.
                let name = if lists_before < 4 { "Region" } else { "Zone" };
                let tool = json!([{"name": "weather", "inputSchema": {"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": name}}}}]);
                result(request, tools_result(tool, 0))
            }
            _ if request.header("mcp-param-zone").is_none() => {
                rpc_error(StatusCode::BAD_REQUEST, request, -32020, json!(null))
            }
            _ => result(request, json!({"resultType": "complete", "content": []})),
        }
    }))
    .await;
    let client = builder().connect_http(&url).await.unwrap();
    client.all_tools().await.unwrap();
    client.call_tool("weather", json!({"region": "eu"}).as_object().cloned()).await.unwrap();
    assert_eq!(methods(&seen), vec!["server/discover", "tools/list", "tools/call", "tools/list", "tools/call"]);
    let last = seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last.header("mcp-param-zone"), Some("eu"));
}

#[tokio::test]
async fn no_common_version_is_a_version_mismatch_listing_the_offer() {
    let (url, seen) = serve(|request, _| {
        rpc_error(
            StatusCode::BAD_REQUEST,
            request,
            -32022,
            json!({"supported": ["2099-01-01"], "requested": "2026-07-28"}),
        )
    })
    .await;
    let err = builder().connect_http(&url).await.unwrap_err();
    match &err {
        Error::VersionMismatch { requested, offered } => {
            assert_eq!(requested, "2026-07-28");
            assert_eq!(offered, &vec!["2099-01-01".to_owned()]);
        }
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("2099-01-01"));
    assert_eq!(methods(&seen), vec!["server/discover"], "no fallback to initialize");
}

#[tokio::test]
async fn log_level_and_client_info_ride_in_meta() {
    let (url, seen) = serve(modern(|request| result(request, tools_result(json!([]), 0)))).await;
    let client = builder().log_level(mcp_client::types::LoggingLevel::Warning).connect_http(&url).await.unwrap();
    client.all_tools().await.unwrap();
    let list = seen.lock().unwrap().iter().find(|s| s.rpc() == "tools/list").cloned().unwrap();
    let meta = &list.body["params"]["_meta"];
    assert_eq!(meta["io.modelcontextprotocol/logLevel"], "warning");
    assert_eq!(meta["io.modelcontextprotocol/clientInfo"], json!({"name": "http-test", "version": "1.0"}));
    assert_eq!(meta["io.modelcontextprotocol/clientCapabilities"], json!({}));
}

#[tokio::test]
async fn a_forgotten_legacy_session_is_replaced_by_a_new_initialize() {
    let (url, seen) = serve(|request, history| {
        if request.method == Method::GET {
            return Reply::Empty(StatusCode::METHOD_NOT_ALLOWED);
        }
        let inits = history.iter().filter(|s| s.rpc() == "initialize").count();
        match request.rpc() {
            "server/discover" => Reply::Empty(StatusCode::BAD_REQUEST),
            "initialize" => {
                let body = json!({"jsonrpc": "2.0", "id": request.body["id"], "result": {"protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}}, "serverInfo": {"name": "forgetful", "version": "1"}}});
                Reply::WithSession(body.to_string())
            }
            "notifications/initialized" => Reply::Empty(StatusCode::ACCEPTED),
            // The first session expires before the first list.
            "tools/list" if inits < 2 => Reply::Empty(StatusCode::NOT_FOUND),
            _ => result(request, json!({"tools": []})),
        }
    })
    .await;
    let client = builder().connect_http(&url).await.unwrap();
    assert!(client.all_tools().await.unwrap().is_empty());
    assert_eq!(
        methods(&seen),
        vec![
            "server/discover",
            "initialize",
            "notifications/initialized",
            "GET",
            "tools/list",
            "initialize",
            "notifications/initialized",
            "GET",
            "tools/list"
        ]
    );
    let seen = seen.lock().unwrap();
    let second_init = seen.iter().filter(|s| s.rpc() == "initialize").nth(1).unwrap();
    assert!(second_init.header("mcp-session-id").is_none(), "re-initialize without the old id");
}

#[tokio::test]
async fn sampling_and_roots_input_requests_use_their_handlers() {
    let (url, seen) = serve(modern(|request| {
        let params = &request.body["params"];
        if let Some(responses) = params.get("inputResponses") {
            let text = responses.to_string();
            return result(request, json!({"resultType": "complete", "content": [{"type": "text", "text": text}]}));
        }
        result(
            request,
            json!({"resultType": "input_required", "inputRequests": {
            "llm": {"method": "sampling/createMessage", "params": {"maxTokens": 10,
                "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}},
            "where": {"method": "roots/list", "params": {}}}}),
        )
    }))
    .await;
    let handlers = Handlers::new()
        .sampling(Default::default(), |params| async move {
            assert_eq!(params.max_tokens, 10);
            Ok(mcp_client::types::CreateMessageResult::new(
                mcp_client::types::CreateMessageResultContent::TextContent(mcp_client::types::TextContent::new(
                    "hello",
                )),
                "test-model",
                mcp_client::types::Role::Assistant,
            ))
        })
        .roots(|| async { Ok(vec![mcp_client::types::Root { uri: "file:///src".into(), ..Default::default() }]) });
    let client = builder().handlers(handlers).connect_http(&url).await.unwrap();
    let result = client.call_tool("needs-input", ()).await.unwrap();
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap().to_owned();
    let responses: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(responses["llm"]["model"], "test-model");
    assert_eq!(responses["llm"]["content"]["text"], "hello");
    assert_eq!(responses["where"], json!({"roots": [{"uri": "file:///src"}]}));
    let first = seen.lock().unwrap().iter().find(|s| s.rpc() == "tools/call").cloned().unwrap();
    assert_eq!(
        first.body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"roots": {}, "sampling": {}})
    );
}

#[tokio::test]
async fn an_input_request_without_a_handler_is_a_handler_error() {
    let (url, _) = serve(modern(|request| {
        result(request, json!({"resultType": "input_required", "requestState": "s",
            "inputRequests": {"q": {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {"type": "object", "properties": {}}}}}}))
    }))
    .await;
    let client = builder().connect_http(&url).await.unwrap();
    let err = client.call_tool("asks", ()).await.unwrap_err();
    assert!(matches!(err, Error::Handler(_)), "{err}");
}
