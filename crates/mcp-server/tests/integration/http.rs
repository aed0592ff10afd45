//! Streamable HTTP on loopback: `mcp_server::http::serve` on 127.0.0.1 (port 0) driven with
//! reqwest. Status codes, JSON-RPC error bodies with the request id, header validation,
//! DNS-rebinding protection, the body limit, legacy sessions and SSE responses.
#![cfg(feature = "http")]

use crate::common;

use std::time::Duration;

use common::*;
use futures::{Stream, StreamExt as _};
use mcp_server::http::HttpConfig;
use mcp_server::{Server, encode_header_value};
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HOST, HeaderMap, HeaderName, HeaderValue, ORIGIN};
use serde_json::{Value, json};

const SESSION: &str = "mcp-session-id";

struct Http {
    url: String,
    client: reqwest::Client,
}

async fn start_with(server: &Server, config: HttpConfig) -> Http {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let address = listener.local_addr().unwrap();
    tokio::spawn(mcp_server::http::serve(listener, server.clone(), config));
    Http { url: format!("http://{address}/mcp"), client: reqwest::Client::new() }
}

async fn start(server: &Server) -> Http {
    start_with(server, HttpConfig::default()).await
}

fn header(name: &str, value: &str) -> (HeaderName, HeaderValue) {
    (HeaderName::from_bytes(name.as_bytes()).unwrap(), HeaderValue::from_str(value).unwrap())
}

/// The headers every POST carries.
fn base_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers
}

/// The headers a correct 2026-07-28 client sends with `body`: the version from `_meta`,
/// `Mcp-Method`, and `Mcp-Name` for the methods that need it.
fn modern_headers(body: &Value) -> HeaderMap {
    let mut headers = base_headers();
    let version = body["params"]["_meta"][PROTOCOL_VERSION].as_str().unwrap_or(MODERN);
    headers.insert("mcp-protocol-version", HeaderValue::from_str(version).unwrap());
    let method = body["method"].as_str().unwrap();
    headers.insert("mcp-method", HeaderValue::from_str(method).unwrap());
    let name = match method {
        "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
        "resources/read" => body["params"]["uri"].as_str(),
        _ => None,
    };
    if let Some(name) = name {
        headers.insert("mcp-name", HeaderValue::from_str(&encode_header_value(name)).unwrap());
    }
    headers
}

/// The headers of a legacy client on session `session` (after `initialize`).
fn legacy_headers(session: &str) -> HeaderMap {
    let mut headers = base_headers();
    headers.insert("mcp-protocol-version", HeaderValue::from_static(LEGACY));
    headers.insert(SESSION, HeaderValue::from_str(session).unwrap());
    headers
}

impl Http {
    async fn post(&self, headers: HeaderMap, body: impl Into<reqwest::Body>) -> reqwest::Response {
        self.client.post(&self.url).headers(headers).body(body).send().await.expect("the server answers")
    }

    async fn post_json(&self, headers: HeaderMap, body: &Value) -> reqwest::Response {
        self.post(headers, body.to_string()).await
    }

    /// POSTs a modern request with correct headers.
    async fn modern(&self, body: &Value) -> reqwest::Response {
        self.post_json(modern_headers(body), body).await
    }

    /// Opens a legacy session; returns its id.
    async fn initialize(&self, capabilities: Value) -> String {
        let response = self.post_json(base_headers(), &initialize(0, LEGACY, capabilities)).await;
        assert_eq!(response.status(), StatusCode::OK);
        let session = response.headers().get(SESSION).expect("a session id").to_str().unwrap().to_owned();
        let body = json_body(response).await;
        assert_eq!(body["result"]["protocolVersion"], LEGACY, "{body}");
        let initialized = notification("notifications/initialized", json!({}));
        let response = self.post_json(legacy_headers(&session), &initialized).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED);
        session
    }
}

fn content_type(response: &reqwest::Response) -> String {
    response.headers().get(CONTENT_TYPE).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
}

/// The JSON body of an `application/json` response.
async fn json_body(response: reqwest::Response) -> Value {
    assert_eq!(content_type(&response), "application/json");
    let text = response.text().await.unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Status and JSON body of an `application/json` response.
async fn answer(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    (status, json_body(response).await)
}

/// The `data:` events of a `text/event-stream` response, read as they arrive.
struct Events {
    bytes: std::pin::Pin<Box<dyn Stream<Item = reqwest::Result<Vec<u8>>> + Send>>,
    buffer: String,
}

impl Events {
    fn new(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), StatusCode::OK);
        assert!(content_type(&response).starts_with("text/event-stream"), "{:?}", response.headers());
        Events {
            bytes: Box::pin(response.bytes_stream().map(|chunk| chunk.map(|b| b.to_vec()))),
            buffer: String::new(),
        }
    }

    /// The next event's data as JSON (events without data skipped); `None` at the end.
    async fn next(&mut self) -> Option<Value> {
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: Vec<&str> =
                    event.lines().filter_map(|line| line.strip_prefix("data:")).map(str::trim_start).collect();
                let data = data.join("\n");
                // Comments, keep-alives and priming events (an id with empty data) carry no message.
                if !data.trim().is_empty() {
                    return Some(serde_json::from_str(&data).unwrap_or_else(|e| panic!("not JSON ({e}): {data}")));
                }
            }
            let chunk = tokio::time::timeout(PATIENCE, self.bytes.next()).await.expect("an event")?;
            self.buffer.push_str(std::str::from_utf8(&chunk.expect("the stream is readable")).unwrap());
        }
    }

    async fn expect(&mut self) -> Value {
        self.next().await.expect("an event")
    }
}

// ------------------------------------------------------------------ modern: status codes

#[tokio::test]
async fn modern_rejections_are_400_with_the_error_and_the_id() {
    let http = start(&server()).await;

    // Missing `_meta`, and `_meta` missing a member: -32602.
    let body = request("no-meta", "tools/list", json!({}));
    let (status, response) = answer(http.modern(&body).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&response, "no-meta", -32602);
    let body = request(2, "tools/list", json!({ "_meta": { PROTOCOL_VERSION: MODERN } }));
    let (status, response) = answer(http.modern(&body).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&response, 2, -32602);
    assert!(message(&response).contains(CLIENT_CAPABILITIES));

    // Unsupported version: -32022 with what is supported and what was asked.
    let body =
        request(3, "server/discover", json!({ "_meta": { PROTOCOL_VERSION: "2030-01-01", CLIENT_CAPABILITIES: {} } }));
    let (status, response) = answer(http.modern(&body).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&response, 3, -32022);
    assert_eq!(response["error"]["data"]["requested"], "2030-01-01");
    assert_eq!(response["error"]["data"]["supported"][0], MODERN);

    // A capability the request did not declare: -32021.
    let body = modern(4, "tools/call", json!({ "name": "needs_sampling" }));
    let (status, response) = answer(http.modern(&body).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&response, 4, -32021);
    assert_eq!(response["error"]["data"]["requiredCapabilities"], json!({ "sampling": {} }));
    let body = modern(5, "tools/call", json!({ "name": "ask_name" }));
    let (status, response) = answer(http.modern(&body).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&response, 5, -32021);

    // Errors found while serving a well-formed request are 200 with the error.
    let body = modern(6, "tools/call", json!({ "name": "missing" }));
    let (status, response) = answer(http.modern(&body).await).await;
    assert_eq!(status, StatusCode::OK);
    assert_error(&response, 6, -32602);
    let body = modern(7, "resources/read", json!({ "uri": "test://missing" }));
    let (status, response) = answer(http.modern(&body).await).await;
    assert_eq!(status, StatusCode::OK);
    assert_error(&response, 7, -32602);
    assert_eq!(response["error"]["data"]["uri"], "test://missing");
    let body = modern(8, "tools/list", json!({ "cursor": "garbage!" }));
    let (status, response) = answer(http.modern(&body).await).await;
    assert_eq!(status, StatusCode::OK);
    assert_error(&response, 8, -32602);
}

#[tokio::test]
async fn unknown_and_removed_methods_are_404() {
    let http = start(&server()).await;
    let methods = ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "no/such"];
    for (id, method) in methods.into_iter().enumerate() {
        let body = modern(
            id,
            method,
            json!({ "protocolVersion": LEGACY, "capabilities": {}, "level": "info", "uri": "test://static" }),
        );
        let (status, response) = answer(http.modern(&body).await).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method}");
        assert_error(&response, id, -32601);
    }
    // An `initialize` body without `_meta` under the modern header: `_meta` is checked first.
    let body = initialize("init", LEGACY, json!({}));
    let (status, response) = answer(http.modern(&body).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&response, "init", -32602);
}

#[tokio::test]
async fn modern_results_are_json_and_stateless() {
    let http = start(&server()).await;
    let body = modern(1, "server/discover", json!({}));
    let response = http.modern(&body).await;
    assert!(response.headers().get(SESSION).is_none(), "modern requests get no session");
    let (status, response) = answer(response).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(response["id"], 1);
    assert_eq!(response["result"]["resultType"], "complete");
    assert_eq!(response["result"]["ttlMs"], 60_000);

    let body = modern("e", "tools/call", json!({ "name": "echo", "arguments": { "text": "over http" } }));
    let (status, response) = answer(http.modern(&body).await).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(response["id"], "e");
    assert_eq!(text(&response), "echo: over http");

    // A session id on a modern request is ignored.
    let mut headers = modern_headers(&body);
    headers.insert(SESSION, HeaderValue::from_static("no-such-session"));
    let (status, response) = answer(http.post_json(headers, &body).await).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(text(&response), "echo: over http");

    let body = modern("h", "health", json!({}));
    let (_, response) = answer(http.modern(&body).await).await;
    assert_eq!(response["result"]["protocolVersion"], MODERN);
    assert_eq!(response["result"]["resultType"], "complete");

    // InputRequiredResult over HTTP: two stateless POSTs.
    let m = meta_with(json!({ "elicitation": {} }));
    let body = request(10, "tools/call", json!({ "name": "ask_name", "_meta": m }));
    let (_, response) = answer(http.modern(&body).await).await;
    assert_eq!(response["result"]["resultType"], "input_required");
    let params = json!({
        "name": "ask_name",
        "inputResponses": { "name": { "action": "accept", "content": { "name": "Kay" } } },
        "requestState": response["result"]["requestState"],
        "_meta": m,
    });
    let body = request(11, "tools/call", params);
    let (_, response) = answer(http.modern(&body).await).await;
    assert_eq!(text(&response), "Hello, Kay!");
}

#[tokio::test]
async fn malformed_bodies_and_notifications() {
    let http = start(&server()).await;
    let response = http.post(modern_headers(&modern(1, "server/discover", json!({}))), "{ nope").await;
    let (status, response) = answer(response).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(code(&response), -32700);
    assert!(response.get("id").is_none_or(Value::is_null), "{response}");

    let batch = json!([modern(1, "server/discover", json!({}))]);
    let (status, response) =
        answer(http.post_json(modern_headers(&modern(1, "server/discover", json!({}))), &batch).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(code(&response), -32600);

    let body = json!({ "jsonrpc": "1.0", "id": 9, "method": "server/discover", "params": { "_meta": meta() } });
    let (status, response) = answer(http.post_json(modern_headers(&body), &body).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&response, 9, -32600);

    let cancel = notification("notifications/cancelled", json!({ "requestId": 1, "_meta": meta() }));
    let response = http.post_json(modern_headers(&cancel), &cancel).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    assert!(response.text().await.unwrap().is_empty());

    let mut headers = modern_headers(&modern(1, "server/discover", json!({})));
    headers.insert(ACCEPT, HeaderValue::from_static("text/html"));
    let response = http.post_json(headers, &modern(1, "server/discover", json!({}))).await;
    assert_eq!(response.status(), StatusCode::NOT_ACCEPTABLE);
}

// ------------------------------------------------------------------ modern: header validation

async fn expect_header_mismatch(http: &Http, headers: HeaderMap, body: &Value, why: &str) {
    let (status, response) = answer(http.post_json(headers, body).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{why}: {response}");
    assert_error(&response, body["id"].clone(), -32020);
    assert!(!message(&response).is_empty());
}

async fn expect_ok(http: &Http, headers: HeaderMap, body: &Value, why: &str) -> Value {
    let (status, response) = answer(http.post_json(headers, body).await).await;
    assert_eq!(status, StatusCode::OK, "{why}: {response}");
    assert!(response.get("result").is_some(), "{why}: {response}");
    response
}

#[tokio::test]
async fn protocol_version_and_method_headers_must_match_the_body() {
    let http = start(&server()).await;
    let body = modern("v", "tools/list", json!({}));

    let mut headers = modern_headers(&body);
    headers.remove("mcp-protocol-version");
    expect_header_mismatch(&http, headers, &body, "MCP-Protocol-Version missing").await;

    let mut headers = modern_headers(&body);
    headers.insert("mcp-protocol-version", HeaderValue::from_static(LEGACY));
    expect_header_mismatch(&http, headers, &body, "legacy header, modern _meta").await;

    let legacy_meta =
        request("v", "tools/list", json!({ "_meta": { PROTOCOL_VERSION: LEGACY, CLIENT_CAPABILITIES: {} } }));
    let mut headers = modern_headers(&legacy_meta);
    headers.insert("mcp-protocol-version", HeaderValue::from_static(MODERN));
    expect_header_mismatch(&http, headers, &legacy_meta, "modern header, legacy _meta").await;

    let mut headers = modern_headers(&body);
    headers.remove("mcp-method");
    expect_header_mismatch(&http, headers, &body, "Mcp-Method missing").await;

    let mut headers = modern_headers(&body);
    headers.insert("mcp-method", HeaderValue::from_static("prompts/list"));
    expect_header_mismatch(&http, headers, &body, "Mcp-Method differs").await;

    let mut headers = modern_headers(&body);
    headers.insert("Mcp-Method", HeaderValue::from_static("Tools/List"));
    expect_header_mismatch(&http, headers, &body, "header values are case-sensitive").await;

    // Header names are case-insensitive.
    let mut headers = base_headers();
    headers.insert("MCP-PROTOCOL-VERSION", HeaderValue::from_static(MODERN));
    headers.insert("MCP-METHOD", HeaderValue::from_static("tools/list"));
    expect_ok(&http, headers, &body, "upper-case names").await;
}

#[tokio::test]
async fn the_name_header_must_mirror_the_target() {
    let http = start(&server()).await;
    let call = modern("n", "tools/call", json!({ "name": "echo", "arguments": { "text": "t" } }));
    let read = modern("r", "resources/read", json!({ "uri": "test://items/9" }));
    let prompt = modern("p", "prompts/get", json!({ "name": "plain" }));
    for body in [&call, &read, &prompt] {
        let mut headers = modern_headers(body);
        headers.remove("mcp-name");
        expect_header_mismatch(&http, headers, body, "Mcp-Name missing").await;
        let mut headers = modern_headers(body);
        headers.insert("mcp-name", HeaderValue::from_static("something-else"));
        expect_header_mismatch(&http, headers, body, "Mcp-Name differs").await;
        expect_ok(&http, modern_headers(body), body, "Mcp-Name matches").await;
    }

    // The base64 form of the right value is accepted; a broken one is refused.
    let mut headers = modern_headers(&call);
    headers.insert("mcp-name", HeaderValue::from_static("=?base64?ZWNobw==?="));
    let response = expect_ok(&http, headers, &call, "base64 Mcp-Name").await;
    assert_eq!(text(&response), "echo: t");
    let mut headers = modern_headers(&call);
    headers.insert("mcp-name", HeaderValue::from_static("=?base64?!!!?="));
    expect_header_mismatch(&http, headers, &call, "invalid base64").await;

    // A URI that is not header-safe travels base64-encoded.
    let uri = "test://items/caf\u{e9}";
    let body = modern("u", "resources/read", json!({ "uri": uri }));
    let headers = modern_headers(&body);
    assert!(headers["mcp-name"].to_str().unwrap().starts_with("=?base64?"));
    let response = expect_ok(&http, headers, &body, "encoded URI").await;
    assert_eq!(response["result"]["contents"][0]["text"], "item caf\u{e9}");
}

#[tokio::test]
async fn annotated_arguments_must_be_mirrored_in_param_headers() {
    let http = start(&server()).await;
    let body =
        modern("x", "tools/call", json!({ "name": "regional", "arguments": { "region": "eu-west", "count": 7 } }));
    let with = |pairs: &[(&str, &str)]| {
        let mut headers = modern_headers(&body);
        for (name, value) in pairs {
            let (name, value) = header(name, value);
            headers.insert(name, value);
        }
        headers
    };

    let response =
        expect_ok(&http, with(&[("Mcp-Param-Region", "eu-west"), ("Mcp-Param-Count", "7")]), &body, "exact").await;
    assert!(text(&response).contains("eu-west"));
    expect_ok(
        &http,
        with(&[("mcp-param-region", "=?base64?ZXUtd2VzdA==?="), ("MCP-PARAM-COUNT", "7.0")]),
        &body,
        "encoded",
    )
    .await;

    expect_header_mismatch(&http, with(&[("Mcp-Param-Count", "7")]), &body, "Region missing").await;
    expect_header_mismatch(&http, with(&[("Mcp-Param-Region", "eu-west")]), &body, "Count missing").await;
    expect_header_mismatch(&http, with(&[("Mcp-Param-Region", "us-east"), ("Mcp-Param-Count", "7")]), &body, "wrong")
        .await;
    expect_header_mismatch(
        &http,
        with(&[("Mcp-Param-Region", "eu-west"), ("Mcp-Param-Count", "8")]),
        &body,
        "wrong int",
    )
    .await;
    expect_header_mismatch(
        &http,
        with(&[("Mcp-Param-Region", "=?base64?dXMtZWFzdA==?="), ("Mcp-Param-Count", "7")]),
        &body,
        "encoded wrong value",
    )
    .await;
    let mut headers = with(&[("Mcp-Param-Count", "7")]);
    headers.insert("mcp-param-region", HeaderValue::from_bytes(b"eu-w\xe9st").unwrap());
    expect_header_mismatch(&http, headers, &body, "raw non-ASCII value").await;

    // An absent argument needs no header.
    let body = modern("y", "tools/call", json!({ "name": "regional", "arguments": { "region": "ap" } }));
    let mut headers = modern_headers(&body);
    headers.insert("mcp-param-region", HeaderValue::from_static("ap"));
    expect_ok(&http, headers, &body, "count absent").await;
}

/// A tool source's tools are checked as routes are, whether their schema spells the annotation
/// plainly or with an escape (`x-mcp-\u0068eader`): the server reads the schema's text either way.
#[tokio::test]
async fn a_tool_sources_annotated_arguments_must_be_mirrored_whatever_the_schemas_spelling() {
    use mcp_server::dynamic::{ToolFuture, ToolSource};
    use mcp_types::{CallToolRequestParams, ObjectSchema, Tool};
    struct Regional;
    impl ToolSource for Regional {
        fn tools(&self, _caller: &mcp_server::Principal) -> std::sync::Arc<[Tool]> {
            let schema = |key: &str| {
                let text =
                    format!(r#"{{"type":"object","properties":{{"region":{{"type":"string","{key}":"Region"}}}}}}"#);
                ObjectSchema::from_json(&text).unwrap()
            };
            [Tool::new(schema("x-mcp-header"), "plain"), Tool::new(schema(r"x-mcp-\u0068eader"), "escaped")].into()
        }
        fn call(&self, _ctx: mcp_server::Context, params: CallToolRequestParams) -> ToolFuture {
            Box::pin(std::future::ready(Ok(mcp_server::text_result(params.name))))
        }
    }
    let server =
        Server::builder("regional-source", "1.0.0").tool_source(std::sync::Arc::new(Regional)).build().unwrap();
    let http = start(&server).await;
    for tool in ["plain", "escaped"] {
        let body = modern("x", "tools/call", json!({ "name": tool, "arguments": { "region": "eu-west" } }));
        let with = |region: &str| {
            let mut headers = modern_headers(&body);
            let (name, value) = header("Mcp-Param-Region", region);
            headers.insert(name, value);
            headers
        };
        assert_eq!(text(&expect_ok(&http, with("eu-west"), &body, tool).await), tool);
        expect_header_mismatch(&http, with("us-east"), &body, tool).await;
        expect_header_mismatch(&http, modern_headers(&body), &body, tool).await;
    }
}

// ------------------------------------------------------------------ transport guards

#[tokio::test]
async fn dns_rebinding_protection_checks_host_and_origin() {
    let http = start(&server()).await;
    let body = modern(1, "server/discover", json!({}));

    let mut headers = modern_headers(&body);
    headers.insert(HOST, HeaderValue::from_static("evil.example.com"));
    let response = http.post_json(headers, &body).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);

    let mut headers = modern_headers(&body);
    headers.insert(ORIGIN, HeaderValue::from_static("https://evil.example.com"));
    let response = http.post_json(headers, &body).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);

    let mut headers = modern_headers(&body);
    headers.insert(HOST, HeaderValue::from_static("localhost:1234"));
    headers.insert(ORIGIN, HeaderValue::from_static("http://localhost:3000"));
    let (status, _) = answer(http.post_json(headers, &body).await).await;
    assert_eq!(status, StatusCode::OK);

    // GET and DELETE are guarded too.
    let response = http.client.get(&http.url).header(HOST, "evil.example.com").send().await.unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
}

/// The status line's code of a request written byte for byte (a client library would not send
/// a header twice).
async fn raw_status(url: &str, request: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let address = url.trim_start_matches("http://").split('/').next().unwrap();
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response).await;
    let response = String::from_utf8_lossy(&response).into_owned();
    let code = response.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or_else(|| panic!("{response}"));
    (code, response)
}

#[tokio::test]
async fn host_origin_and_session_id_given_twice_are_refused() {
    let http = start(&server()).await;
    let body = modern(1, "server/discover", json!({})).to_string();
    let post = |extra: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\n{extra}Accept: application/json, text/event-stream\r\n\
             Content-Type: application/json\r\nMcp-Protocol-Version: {MODERN}\r\nMcp-Method: server/discover\r\n\
             Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let (ok, response) = raw_status(&http.url, &post("")).await;
    assert_eq!(ok, 200, "{response}");
    for (extra, name) in [
        ("Host: evil.example.com\r\n", "Host"),
        ("Origin: http://localhost\r\nOrigin: https://evil.example.com\r\n", "Origin"),
        ("Mcp-Session-Id: a\r\nMcp-Session-Id: b\r\n", "Mcp-Session-Id"),
    ] {
        let (status, response) = raw_status(&http.url, &post(extra)).await;
        assert_eq!(status, 400, "{name}: {response}");
        assert!(response.contains(&format!("The {name} header appears more than once")), "{response}");
    }
    // GET and DELETE too.
    let get =
        "GET /mcp HTTP/1.1\r\nHost: localhost\r\nMcp-Session-Id: a\r\nMcp-Session-Id: b\r\nConnection: close\r\n\r\n";
    assert_eq!(raw_status(&http.url, get).await.0, 400);
}

/// The auth layer of [`request_state_is_bound_to_the_principal_of_the_request`]: the `x-user`
/// header names the request's [`mcp_server::Principal`].
async fn user_header_auth(
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if let Some(user) = request.headers().get("x-user").and_then(|user| user.to_str().ok()) {
        let principal = mcp_server::Principal::new(user);
        request.extensions_mut().insert(principal);
    }
    next.run(request).await
}

#[tokio::test]
async fn request_state_is_bound_to_the_principal_of_the_request() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let http = Http { url: format!("http://{}/mcp", listener.local_addr().unwrap()), client: reqwest::Client::new() };
    let config = HttpConfig::default();
    let limits = mcp_server::http::ConnectionLimits::from(&config);
    let app = mcp_server::http::router(server(), config).layer(axum::middleware::from_fn(user_header_auth));
    tokio::spawn(mcp_server::http::serve_router(listener, app, limits, std::future::pending()));
    let call = |id: u64, extra: Value| {
        let mut params = json!({ "name": "ask_name", "_meta": meta_with(json!({ "elicitation": {} })) });
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        request(id, "tools/call", params)
    };
    let as_user = |body: &Value, user: &str| {
        let mut headers = modern_headers(body);
        headers.insert("x-user", HeaderValue::from_str(user).unwrap());
        headers
    };
    let first = call(1, json!({}));
    let (_, response) = answer(http.post_json(as_user(&first, "alice"), &first).await).await;
    let state = response["result"]["requestState"].as_str().expect("a requestState").to_owned();
    let answers = json!({
        "inputResponses": { "name": { "action": "accept", "content": { "name": "Ada" } } },
        "requestState": state,
    });

    let retry = call(2, answers.clone());
    let (_, response) = answer(http.post_json(as_user(&retry, "mallory"), &retry).await).await;
    assert_error(&response, 2, -32602);
    assert!(message(&response).contains("another principal"), "{response}");
    let (_, response) = answer(http.post_json(modern_headers(&retry), &retry).await).await;
    assert_error(&response, 2, -32602);

    let (_, response) = answer(http.post_json(as_user(&retry, "alice"), &retry).await).await;
    assert_eq!(text(&response), "Hello, Ada!", "{response}");
}

#[tokio::test]
async fn bodies_over_the_limit_are_413() {
    let mut config = HttpConfig::default();
    config.max_body_bytes = 1024;
    let http = start_with(&server(), config).await;
    let body = modern(1, "tools/call", json!({ "name": "echo", "arguments": { "text": "x".repeat(4096) } }));
    let response = http.post_json(modern_headers(&body), &body).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);

    let body = modern(2, "tools/call", json!({ "name": "echo", "arguments": { "text": "x".repeat(100) } }));
    let (status, _) = answer(http.modern(&body).await).await;
    assert_eq!(status, StatusCode::OK);

    // Exactly the limit is accepted (JSON may end in spaces); one byte more is refused.
    let body = modern(3, "tools/call", json!({ "name": "echo", "arguments": { "text": "at the limit" } }));
    let mut text = body.to_string();
    text.push_str(&" ".repeat(1024 - text.len()));
    let response = http.post(modern_headers(&body), text.clone()).await;
    assert_eq!(response.status(), StatusCode::OK);
    text.push(' ');
    let response = http.post(modern_headers(&body), text).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
}

/// Routes served beside the endpoint keep their layers, which do not reach the endpoint.
#[tokio::test]
async fn routes_beside_the_endpoint_keep_their_layers_to_themselves() {
    use axum::http::HeaderValue as AxumValue;
    let routes = axum::Router::new().route("/status", axum::routing::get(|| async { "up" })).layer(
        axum::middleware::map_response(|mut response: axum::response::Response| async move {
            response.headers_mut().insert("x-layered", AxumValue::from_static("yes"));
            response
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let base = format!("http://{}", listener.local_addr().unwrap());
    let serving =
        mcp_server::http::serve_with_routes(listener, server(), HttpConfig::default(), routes, std::future::pending());
    tokio::spawn(serving);
    let http = Http { url: format!("{base}/mcp"), client: reqwest::Client::new() };

    let status = http.client.get(format!("{base}/status")).send().await.unwrap();
    assert_eq!(status.status(), StatusCode::OK);
    assert_eq!(status.headers().get("x-layered").map(|v| v.as_bytes()), Some(&b"yes"[..]));
    assert_eq!(status.text().await.unwrap(), "up");

    let body = modern(1, "tools/call", json!({ "name": "echo", "arguments": { "text": "hi" } }));
    let response = http.modern(&body).await;
    assert!(response.headers().get("x-layered").is_none());
    let (status, answer) = answer(response).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["result"]["content"][0]["text"], "echo: hi", "{answer}");

    let missing = http.client.get(format!("{base}/elsewhere")).send().await.unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

/// A body sent in chunks is read whole, and its limit counts every chunk.
#[tokio::test]
async fn a_chunked_body_is_read_whole_and_held_to_the_limit() {
    let mut config = HttpConfig::default();
    config.max_body_bytes = 1024;
    let http = start_with(&server(), config).await;
    let post = |text: &str| {
        let body = modern(7, "tools/call", json!({ "name": "echo", "arguments": { "text": text } })).to_string();
        let (head, tail) = body.split_at(body.len() / 3);
        let (middle, tail) = tail.split_at(tail.len() / 2);
        chunked_post(&[head, middle, tail], "0\r\n\r\n")
    };
    let (status, response) = raw_status(&http.url, &post("in three pieces")).await;
    assert_eq!(status, 200, "{response}");
    assert!(response.contains(r#""text":"echo: in three pieces""#), "{response}");

    let (status, response) = raw_status(&http.url, &post(&"x".repeat(1100))).await;
    assert_eq!(status, 413, "{response}");
}

/// A `tools/call` POST whose body is sent in `chunks` pieces of chunked encoding, then `tail`.
fn chunked_post(chunks: &[&str], tail: &str) -> String {
    let chunks: String = chunks.iter().map(|chunk| format!("{:x}\r\n{chunk}\r\n", chunk.len())).collect();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nMCP-Protocol-Version: {MODERN}\r\nMcp-Method: tools/call\r\n\
         Mcp-Name: echo\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{chunks}{tail}"
    )
}

/// A body that breaks off malformed is a bad request, named as such: not one over the limit.
#[tokio::test]
async fn a_malformed_chunked_body_is_400_not_413() {
    let http = start(&server()).await;
    let body = modern(7, "tools/call", json!({ "name": "echo", "arguments": { "text": "x" } })).to_string();
    let (head, _) = body.split_at(body.len() / 2);
    let (status, response) = raw_status(&http.url, &chunked_post(&[head], "zz\r\n\r\n")).await;
    assert_eq!(status, 400, "{response}");
    assert!(response.contains("The request body could not be read"), "{response}");
}

/// A body limit layered onto the router (as tower-http's `RequestBodyLimitLayer` wraps a body in
/// `http_body_util::Limited`) refuses a chunked body past it with 413, as the server's own does.
#[tokio::test]
async fn a_body_limit_layered_onto_the_router_is_413() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let config = HttpConfig::default();
    let limits = mcp_server::http::ConnectionLimits::from(&config);
    let limited = |request: axum::extract::Request| async move {
        request.map(|body| axum::body::Body::new(http_body_util::Limited::new(body, 64)))
    };
    let app = mcp_server::http::router(server(), config).layer(axum::middleware::map_request(limited));
    tokio::spawn(mcp_server::http::serve_router(listener, app, limits, std::future::pending()));
    let body = modern(7, "tools/call", json!({ "name": "echo", "arguments": { "text": "x" } })).to_string();
    let (head, tail) = body.split_at(40);
    let (status, response) = raw_status(&url, &chunked_post(&[head, tail], "0\r\n\r\n")).await;
    assert_eq!(status, 413, "{response}");
}

#[tokio::test]
async fn get_and_delete_need_a_session() {
    let http = start(&server()).await;
    let response = http.client.get(&http.url).header(ACCEPT, "text/event-stream").send().await.unwrap();
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    let response = http.client.delete(&http.url).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    let response = http.client.put(&http.url).body("{}").send().await.unwrap();
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    let response = http.client.get(&http.url).header(SESSION, "unknown").send().await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let response = http.client.delete(&http.url).header(SESSION, "unknown").send().await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

// ------------------------------------------------------------------ legacy sessions

#[tokio::test]
async fn legacy_sessions_start_with_initialize_and_end_with_delete() {
    let http = start(&server()).await;
    let session = http.initialize(json!({})).await;
    assert!(session.len() >= 16 && session.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{session}");

    let body = request(1, "tools/list", json!({}));
    let (status, response) = answer(http.post_json(legacy_headers(&session), &body).await).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(response["result"]["tools"].as_array().unwrap().len(), TOOL_NAMES.len());
    assert!(response["result"].get("resultType").is_none() && response["result"].get("ttlMs").is_none());

    let ping = json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" });
    let (_, response) = answer(http.post_json(legacy_headers(&session), &ping).await).await;
    assert_eq!(response, json!({ "jsonrpc": "2.0", "id": 2, "result": {} }));

    // Without a version header the session still answers (2025-03-26 clients send none).
    let mut headers = legacy_headers(&session);
    headers.remove("mcp-protocol-version");
    let body = request(3, "tools/call", json!({ "name": "echo", "arguments": { "text": "s" } }));
    let (_, response) = answer(http.post_json(headers, &body).await).await;
    assert_eq!(text(&response), "echo: s");

    // Re-initializing a session is refused.
    let mut headers = legacy_headers(&session);
    headers.remove("mcp-protocol-version");
    let (_, response) = answer(http.post_json(headers, &initialize(4, LEGACY, json!({}))).await).await;
    assert_error(&response, 4, -32600);

    // An unknown session is 404.
    let (status, response) =
        answer(http.post_json(legacy_headers("deadbeef"), &request(5, "tools/list", json!({}))).await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(&response, 5, -32600);

    // A legacy request without a session is refused (initialize first) with a 400.
    let mut headers = legacy_headers("x");
    headers.remove(SESSION);
    let (status, response) = answer(http.post_json(headers, &request(6, "tools/list", json!({}))).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&response, 6, -32600);

    let response = http.client.delete(&http.url).header(SESSION, &session).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let (status, _) =
        answer(http.post_json(legacy_headers(&session), &request(7, "tools/list", json!({}))).await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let response = http.client.delete(&http.url).header(SESSION, &session).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn initialize_negotiates_over_http() {
    let http = start(&server()).await;
    for (requested, expected) in [("2024-11-05", "2024-11-05"), ("2025-06-18", "2025-06-18"), ("1999-01-01", LEGACY)] {
        let response = http.post_json(base_headers(), &initialize(1, requested, json!({}))).await;
        assert!(response.headers().contains_key(SESSION));
        let (status, response) = answer(response).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(response["result"]["protocolVersion"], expected);
    }
    // A bad initialize opens no session.
    let response = http.post_json(base_headers(), &request(2, "initialize", json!({}))).await;
    assert!(!response.headers().contains_key(SESSION));
    let (_, response) = answer(response).await;
    assert_error(&response, 2, -32602);
}

#[tokio::test]
async fn the_session_bound_evicts_the_least_recently_used() {
    let mut config = HttpConfig::default();
    config.max_sessions = 2;
    let http = start_with(&server(), config).await;
    let a = http.initialize(json!({})).await;
    let b = http.initialize(json!({})).await;
    // Touch `a`, so that `b` is the least recently used.
    let (status, _) = answer(http.post_json(legacy_headers(&a), &request(1, "tools/list", json!({}))).await).await;
    assert_eq!(status, StatusCode::OK);
    let c = http.initialize(json!({})).await;
    let status_of = |session: String| {
        let http = &http;
        async move { http.post_json(legacy_headers(&session), &request(2, "tools/list", json!({}))).await.status() }
    };
    assert_eq!(status_of(b).await, StatusCode::NOT_FOUND);
    assert_eq!(status_of(a).await, StatusCode::OK);
    assert_eq!(status_of(c).await, StatusCode::OK);
}

/// One client (here 127.0.0.1) filling its share cannot push out another client's sessions
/// (127.0.0.2): its next `initialize` is refused with 429 naming the limit, until one of its
/// own sessions ends.
#[tokio::test]
async fn one_client_cannot_evict_the_sessions_of_others() {
    clients_hold_their_own_shares(false).await;
}

/// The same through `serve_router`, where the remote address reaches the endpoint as the
/// `ConnectInfo` extension rather than as a value.
#[tokio::test]
async fn one_client_cannot_evict_the_sessions_of_others_through_a_router() {
    clients_hold_their_own_shares(true).await;
}

async fn clients_hold_their_own_shares(routed: bool) {
    let mut config = HttpConfig::default();
    config.max_sessions = 8;
    config.max_sessions_per_client = 4;
    let greedy = match routed {
        false => start_with(&server(), config).await,
        true => {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
            let url = format!("http://{}/mcp", listener.local_addr().unwrap());
            let limits = mcp_server::http::ConnectionLimits::from(&config);
            let app = mcp_server::http::router(server(), config);
            tokio::spawn(mcp_server::http::serve_router(listener, app, limits, std::future::pending()));
            Http { url, client: reqwest::Client::new() }
        }
    };
    let other = Http {
        url: greedy.url.clone(),
        client: reqwest::Client::builder().local_address(std::net::IpAddr::from([127, 0, 0, 2])).build().unwrap(),
    };
    let others: Vec<String> = futures::future::join_all((0..4).map(|_| other.initialize(json!({})))).await;
    let mut mine = Vec::new();
    for _ in 0..4 {
        mine.push(greedy.initialize(json!({})).await);
    }
    for attempt in 0..3 {
        let response = greedy.post_json(base_headers(), &initialize(attempt, LEGACY, json!({}))).await;
        assert!(!response.headers().contains_key(SESSION));
        let (status, body) = answer(response).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
        assert_eq!(body["id"], attempt, "{body}");
        assert_eq!(body["error"]["code"], -32000, "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("4 sessions") && message.contains("max_sessions_per_client"), "{message}");
    }
    let status_of = |http: &Http, session: String| {
        let body = request(1, "tools/list", json!({}));
        let response = http.client.post(&http.url).headers(legacy_headers(&session)).body(body.to_string()).send();
        async move { response.await.unwrap().status() }
    };
    for session in others.iter().chain(&mine) {
        assert_eq!(status_of(&other, session.clone()).await, StatusCode::OK, "every session still held");
    }
    // Ending one of its sessions gives the client room again.
    let ended = greedy.client.delete(&greedy.url).header(SESSION, &mine[0]).send().await.unwrap();
    assert_eq!(ended.status(), StatusCode::OK);
    greedy.initialize(json!({})).await;
}

#[tokio::test]
async fn idle_sessions_expire() {
    let mut config = HttpConfig::default();
    config.session_idle = Duration::ZERO;
    let http = start_with(&server(), config).await;
    let response = http.post_json(base_headers(), &initialize(1, LEGACY, json!({}))).await;
    let session = response.headers()[SESSION].to_str().unwrap().to_owned();
    let (status, _) =
        answer(http.post_json(legacy_headers(&session), &request(2, "tools/list", json!({}))).await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_session_stream_carries_session_notifications() {
    let server = server();
    let http = start(&server).await;
    let session = http.initialize(json!({})).await;
    let body = request(1, "resources/subscribe", json!({ "uri": "test://watched" }));
    let (_, response) = answer(http.post_json(legacy_headers(&session), &body).await).await;
    assert_eq!(response["result"], json!({}));

    let response =
        http.client.get(&http.url).header(ACCEPT, "text/event-stream").header(SESSION, &session).send().await.unwrap();
    let mut events = Events::new(response);
    // The GET has reached the server once its response started: it listens from now on.
    server.notify_resource_updated("test://static");
    server.notify_resource_updated("test://watched");
    let update = events.expect().await;
    assert_eq!(
        update,
        json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": { "uri": "test://watched" } })
    );
    server.notify_prompts_list_changed();
    assert_eq!(events.expect().await["method"], "notifications/prompts/list_changed");
}

// ------------------------------------------------------------------ response forms

#[tokio::test]
async fn notifications_make_a_request_answer_as_an_event_stream() {
    let http = start(&server()).await;
    let mut m = meta();
    m["progressToken"] = json!("sse-progress");
    m[LOG_LEVEL] = json!("info");
    let body = request("prog", "tools/call", json!({ "name": "progress_logger", "_meta": m }));
    let response = http.modern(&body).await;
    assert_eq!(response.headers().get("x-accel-buffering").map(|v| v.to_str().unwrap()), Some("no"));
    let mut events = Events::new(response);
    let mut methods = Vec::new();
    let response = loop {
        let event = events.expect().await;
        match event.get("method").and_then(Value::as_str) {
            Some(method) => methods.push(method.to_owned()),
            None => break event,
        }
    };
    assert_eq!(
        methods,
        [
            "notifications/progress",
            "notifications/progress",
            "notifications/progress",
            "notifications/message",
            "notifications/message"
        ]
    );
    assert_eq!(response["id"], "prog");
    assert_eq!(text(&response), "progress done");
    assert!(events.next().await.is_none(), "the response ends the stream");

    // The same tool without progress token or log level: one JSON response.
    let body = modern("plain", "tools/call", json!({ "name": "progress_logger" }));
    let (status, response) = answer(http.modern(&body).await).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(text(&response), "progress done");
}

#[tokio::test]
async fn listen_streams_acknowledgement_and_changes() {
    let server = server();
    let http = start(&server).await;
    let body = modern("sub", "subscriptions/listen", json!({ "notifications": { "promptsListChanged": true } }));
    let mut events = Events::new(http.modern(&body).await);
    let ack = events.expect().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], "sub");
    server.notify_tools_list_changed();
    server.notify_prompts_list_changed();
    let change = events.expect().await;
    assert_eq!(change["method"], "notifications/prompts/list_changed");
    assert_eq!(change["params"]["_meta"][SUBSCRIPTION_ID], "sub");
}

#[tokio::test]
async fn a_legacy_elicitation_travels_on_the_request_stream() {
    let http = start(&server()).await;
    let session = http.initialize(json!({ "elicitation": {} })).await;
    let body = request("ask", "tools/call", json!({ "name": "ask_name" }));
    let mut events = Events::new(http.post_json(legacy_headers(&session), &body).await);
    let question = events.expect().await;
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert!(question["id"].is_i64() || question["id"].is_string(), "{question}");
    assert_eq!(question["params"]["message"], "What is your name?");

    // The client answers with a POST of its own: accepted, no body.
    let answer_body = json!({ "jsonrpc": "2.0", "id": question["id"], "result": { "action": "accept", "content": { "name": "Ida" } } });
    let response = http.post_json(legacy_headers(&session), &answer_body).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    assert!(response.text().await.unwrap().is_empty());

    let result = events.expect().await;
    assert_eq!(result["id"], "ask");
    assert_eq!(text(&result), "Hello, Ida!");
    assert!(result["result"].get("resultType").is_none());
    assert!(events.next().await.is_none(), "the response ends the stream");
}

#[tokio::test]
async fn legacy_logging_over_http() {
    let http = start(&server()).await;
    let session = http.initialize(json!({})).await;
    let (_, response) = answer(
        http.post_json(legacy_headers(&session), &request(1, "logging/setLevel", json!({ "level": "warning" }))).await,
    )
    .await;
    assert_eq!(response["result"], json!({}));
    let body = request(2, "tools/call", json!({ "name": "progress_logger" }));
    let mut events = Events::new(http.post_json(legacy_headers(&session), &body).await);
    let log = events.expect().await;
    assert_eq!(log["method"], "notifications/message");
    assert_eq!(log["params"]["level"], "warning");
    let result = events.expect().await;
    assert_eq!(result["id"], 2);
    assert_eq!(text(&result), "progress done");
}

// ------------------------------------------------------------------ cancellation

#[tokio::test]
async fn a_legacy_cancellation_ends_the_pending_post() {
    let (server, mut probe) = server_with_slow_tool();
    let http = start(&server).await;
    let session = http.initialize(json!({})).await;
    let pending = {
        let (client, url, headers) = (http.client.clone(), http.url.clone(), legacy_headers(&session));
        let body = request("slow", "tools/call", json!({ "name": "slow" })).to_string();
        tokio::spawn(async move { client.post(url).headers(headers).body(body).send().await })
    };
    tokio::time::timeout(PATIENCE, probe.started.recv()).await.expect("the slow tool starts");
    let cancel = notification("notifications/cancelled", json!({ "requestId": "slow" }));
    let response = http.post_json(legacy_headers(&session), &cancel).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    tokio::time::timeout(PATIENCE, probe.dropped.recv()).await.expect("the handler is dropped");
    let response = tokio::time::timeout(PATIENCE, pending).await.expect("the POST ends").unwrap().unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert!(response.text().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_modern_client_cancels_by_closing_the_connection() {
    let (server, mut probe) = server_with_slow_tool();
    let http = start(&server).await;
    let body = modern("slow", "tools/call", json!({ "name": "slow" }));
    let pending = {
        let (client, url, headers) = (http.client.clone(), http.url.clone(), modern_headers(&body));
        let body = body.to_string();
        tokio::spawn(async move { client.post(url).headers(headers).body(body).send().await })
    };
    tokio::time::timeout(PATIENCE, probe.started.recv()).await.expect("the slow tool starts");
    pending.abort();
    tokio::time::timeout(PATIENCE, probe.dropped.recv()).await.expect("the handler is dropped");
}

#[tokio::test]
async fn a_legacy_stream_closed_mid_call_resumes_with_last_event_id() {
    let server = builder()
        .tool(mcp_server::ToolRoute::new(
            "polling",
            |ctx: mcp_server::Context, _: mcp_server::NoArguments| async move {
                ctx.close_stream().await;
                Ok::<_, mcp_server::Error>("finished after the break")
            },
        ))
        .build()
        .unwrap();
    let mut config = HttpConfig::default();
    config.sse_retry = Duration::from_millis(250);
    let http = start_with(&server, config).await;
    let session = http.initialize(json!({})).await;

    // The POST stream carries only the priming event (an id, the retry delay, empty data) and ends.
    let body = request(1, "tools/call", json!({ "name": "polling" }));
    let response = http.post_json(legacy_headers(&session), &body).await;
    assert_eq!(content_type(&response), "text/event-stream");
    assert_eq!(response.text().await.unwrap(), "id: 1:0\nretry: 250\ndata: \n\n");

    // Resuming after the priming event delivers the response, with the next event id.
    let mut headers = legacy_headers(&session);
    headers.insert("last-event-id", HeaderValue::from_static("1:0"));
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    let resumed = http.client.get(&http.url).headers(headers.clone()).send().await.unwrap();
    assert_eq!(resumed.status(), StatusCode::OK);
    let text = resumed.text().await.unwrap();
    let data = text.lines().find_map(|line| line.strip_prefix("data: ")).expect("an event");
    let message: Value = serde_json::from_str(data).unwrap();
    assert_eq!(message["id"], 1);
    assert_eq!(message["result"]["content"][0]["text"], "finished after the break");
    assert!(text.starts_with("id: 1:2\n"), "{text}");

    // Resuming after the last event yields nothing more; the stream simply ends.
    headers.insert("last-event-id", HeaderValue::from_static("1:2"));
    let rest = http.client.get(&http.url).headers(headers).send().await.unwrap();
    assert_eq!(rest.text().await.unwrap(), "");
}

// ------------------------------------------------------------------ batches (2025-03-26 only)

/// The headers of a 2025-03-26 client on `session` (that revision had no MCP-Protocol-Version).
fn batching_headers(session: &str) -> HeaderMap {
    let mut headers = base_headers();
    headers.insert(SESSION, HeaderValue::from_str(session).unwrap());
    headers
}

impl Http {
    /// Opens a session that negotiated the batching revision; returns its id.
    async fn initialize_batching(&self) -> String {
        let response = self.post_json(base_headers(), &initialize(0, BATCH_VERSION, json!({}))).await;
        let session = response.headers().get(SESSION).expect("a session id").to_str().unwrap().to_owned();
        let body = json_body(response).await;
        assert_eq!(body["result"]["protocolVersion"], BATCH_VERSION, "{body}");
        let initialized = notification("notifications/initialized", json!({}));
        assert_eq!(self.post_json(batching_headers(&session), &initialized).await.status(), StatusCode::ACCEPTED);
        session
    }
}

#[tokio::test]
async fn a_2025_03_26_batch_post_is_answered_with_a_json_array() {
    let http = start(&server()).await;
    let session = http.initialize_batching().await;
    let (status, batch) =
        answer(http.post_json(batching_headers(&session), &two_requests_and_a_notification()).await).await;
    assert_eq!(status, StatusCode::OK);
    let responses = by_id(&batch);
    assert_eq!(responses.len(), 2, "{batch}");
    assert_eq!(responses[0], json!({ "jsonrpc": "2.0", "id": 1, "result": {} }));
    assert_eq!(text(&responses[1]), "echo: batched");

    // No requests in it: 202 and no body.
    let batch = json!([notification("notifications/roots/list_changed", json!({}))]);
    let response = http.post_json(batching_headers(&session), &batch).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    assert!(response.text().await.unwrap().is_empty());

    let (status, batch) = answer(http.post_json(batching_headers(&session), &one_bad_element()).await).await;
    assert_eq!(status, StatusCode::OK);
    let responses = by_id(&batch);
    assert_eq!(responses[0]["result"], json!({}), "{batch}");
    assert_error(&responses[1], "bad", -32600);

    let (status, response) = answer(http.post_json(batching_headers(&session), &json!([])).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(code(&response), -32600, "{response}");
    assert!(response.get("id").is_none(), "{response}");
}

#[tokio::test]
async fn a_batch_whose_handler_streams_is_answered_with_sse() {
    let http = start(&server()).await;
    let session = http.initialize_batching().await;
    let call = request(1, "tools/call", json!({ "name": "progress_logger", "_meta": { "progressToken": "t" } }));
    let batch = json!([call, request(2, "ping", json!({}))]);
    let mut events = Events::new(http.post_json(batching_headers(&session), &batch).await);
    let mut progress = 0;
    let batch = loop {
        let event = events.expect().await;
        if event.is_array() {
            break event;
        }
        progress += usize::from(event["method"] == "notifications/progress");
    };
    assert_eq!(progress, 3);
    let responses = by_id(&batch);
    assert_eq!(text(&responses[0]), "progress done");
    assert_eq!(responses[1]["id"], 2);
    assert!(events.next().await.is_none(), "the responses end the stream");
}

#[tokio::test]
async fn batch_posts_are_refused_outside_2025_03_26_naming_why() {
    let http = start(&server()).await;
    let session = http.initialize(json!({})).await;
    let (status, response) =
        answer(http.post_json(legacy_headers(&session), &two_requests_and_a_notification()).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(code(&response), -32600, "{response}");
    assert!(message(&response).contains("this session uses 2025-11-25"), "{response}");

    let discover = modern(1, "server/discover", json!({}));
    let (status, response) = answer(http.post_json(modern_headers(&discover), &json!([discover])).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(message(&response).contains("2026-07-28 has none"), "{response}");

    // initialize inside a batch opens no session.
    let batch = json!([initialize(0, BATCH_VERSION, json!({})), request(1, "ping", json!({}))]);
    let response = http.post_json(base_headers(), &batch).await;
    assert!(response.headers().get(SESSION).is_none());
    let (status, response) = answer(response).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(message(&response).contains("initialize request must not be part of a JSON-RPC batch"), "{response}");
}

#[tokio::test]
async fn one_client_cannot_hold_every_long_lived_stream() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let http = Http { url: format!("http://{}/mcp", listener.local_addr().unwrap()), client: reqwest::Client::new() };
    let mut config = HttpConfig::default();
    config.max_streams_per_client = 2;
    let app = mcp_server::http::router(server(), config).layer(axum::middleware::from_fn(user_header_auth));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let as_user = |mut headers: HeaderMap, user: &str| {
        headers.insert("x-user", HeaderValue::from_str(user).unwrap());
        headers
    };
    let listen_body = modern("sub", "subscriptions/listen", json!({ "notifications": { "toolsListChanged": true } }));
    let listen = |user: &str| http.post_json(as_user(modern_headers(&listen_body), user), &listen_body);
    // Alice's two streams: a legacy session's GET stream and a listen.
    let opened = http.post_json(as_user(base_headers(), "alice"), &initialize(0, LEGACY, json!({}))).await;
    let session = opened.headers()[SESSION].to_str().unwrap().to_owned();
    let _ = opened.bytes().await;
    let initialized = notification("notifications/initialized", json!({}));
    assert_eq!(http.post_json(as_user(legacy_headers(&session), "alice"), &initialized).await.status(), 202);
    let mut get_headers = as_user(legacy_headers(&session), "alice");
    get_headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    let session_stream = http.client.get(&http.url).headers(get_headers).send().await.unwrap();
    assert_eq!(session_stream.status(), StatusCode::OK);
    let mut listening = Events::new(listen("alice").await);
    assert_eq!(listening.expect().await["method"], "notifications/subscriptions/acknowledged");

    let refused = listen("alice").await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let refused = json_body(refused).await;
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("HttpConfig::max_streams_per_client"), "{refused}");
    // Another client is served.
    let mut bobs = Events::new(listen("bob").await);
    assert_eq!(bobs.expect().await["method"], "notifications/subscriptions/acknowledged");
    // A stream that ends gives its place back: DELETE ends the session's GET stream.
    let delete = http.client.delete(&http.url).headers(as_user(legacy_headers(&session), "alice")).send().await;
    assert_eq!(delete.unwrap().status(), StatusCode::OK);
    assert_eq!(session_stream.text().await.unwrap(), "", "the session's stream ended");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let again = listen("alice").await;
        if again.status() == StatusCode::OK {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the ended stream's place never came back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn idle_long_lived_streams_end_after_their_deadline() {
    let server = server();
    let mut config = HttpConfig::default();
    config.stream_idle = Duration::from_millis(300);
    let http = start_with(&server, config).await;
    let body = modern("sub", "subscriptions/listen", json!({ "notifications": { "toolsListChanged": true } }));
    let mut listening = Events::new(http.modern(&body).await);
    assert_eq!(listening.expect().await["method"], "notifications/subscriptions/acknowledged");
    server.notify_tools_list_changed();
    assert_eq!(listening.expect().await["method"], "notifications/tools/list_changed");
    assert!(listening.next().await.is_none(), "the idle stream ended");

    let session = http.initialize(json!({})).await;
    let mut headers = legacy_headers(&session);
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    let stream = http.client.get(&http.url).headers(headers).send().await.unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    assert_eq!(stream.text().await.unwrap(), "", "the idle session stream ended with nothing sent");
}
