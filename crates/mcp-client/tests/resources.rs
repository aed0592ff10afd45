//! Bounded under attack (issue 16), client side: hostile servers on loopback (in-process axum
//! servers, and `tests/support/hostile_stdio_server.py` over stdio) drive each limit of the
//! client past its bound, while the process's memory (`VmRSS`) and descriptors
//! (`/proc/self/fd`) are held to a stated bound and the client stays usable. The tests measure
//! the whole process, so they run one at a time; each names the case of the issue (C1 … C5).
#![cfg(all(target_os = "linux", feature = "stdio", feature = "http"))]

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use mcp_client::{Client, EraPreference, Error, StderrMode, StdioCommand};
use serde_json::{Value, json};

const MIB: u64 = 1024;
/// An upper bound for "this should happen"; never reached when the code under test works.
const PATIENCE: Duration = Duration::from_secs(20);

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status is readable");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("a VmRSS line");
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("VmRSS in kB")
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd is readable").count()
}

async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < PATIENCE {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}

fn hostile_stdio(mode: &str, count: u64) -> StdioCommand {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/hostile_stdio_server.py");
    StdioCommand::new("python3")
        .arg(script)
        .arg(mode)
        .arg(count.to_string())
        .stderr(StderrMode::Capture)
        .shutdown_grace(Duration::from_millis(200))
}

fn builder() -> mcp_client::ClientBuilder {
    // Generous for Python starting on a busy machine.
    Client::builder("resource-test", "1.0").probe_timeout(Duration::from_secs(10))
}

/// Serves `app` on 127.0.0.1; the MCP endpoint URL.
async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}/mcp")
}

fn json_response(body: Value) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

fn discover(id: &Value) -> Response {
    json_response(json!({"jsonrpc": "2.0", "id": id, "result": {
        "resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
        "ttlMs": 0, "cacheScope": "public"}}))
}

fn sse(events: impl futures::Stream<Item = String> + Send + 'static) -> Response {
    let body = Body::from_stream(events.map(|data| Ok::<_, Infallible>(format!("data: {data}\n\n"))));
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

// ------------------------------------------------------------------ C1: captured stderr

/// The C1 attack: a stdio server writing 200 MB to stderr without a newline, read with
/// `StderrMode::Capture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c1_captured_stderr_without_newlines_stays_bounded() {
    let _serial = SERIAL.lock().await;
    let before = rss_kib();
    let client = builder().connect_stdio(hostile_stdio("stderr-flood", 200_000_000)).await.unwrap();
    let done = eventually(|| client.stderr_lines().iter().any(|line| line == "flood done")).await;
    let after = rss_kib();
    println!(
        "C1: 200 MB of stderr without a newline: RSS {} -> {} MiB (+{} KiB)",
        before / MIB,
        after / MIB,
        after.saturating_sub(before)
    );
    assert!(done, "the flood was not read to its end");
    let lines = client.stderr_lines();
    let kept: usize = lines.iter().map(String::len).sum();
    assert!(kept <= 256 * 1024, "{kept} bytes of stderr kept");
    assert!(
        lines.iter().any(|line| line.contains("stderr_line_bytes")),
        "the truncation is not named: {:?}",
        lines.iter().map(|l| l.len()).collect::<Vec<_>>()
    );
    assert!(after.saturating_sub(before) < 32 * MIB, "RSS grew from {before} to {after} KiB");
    // The server is still usable.
    let mut args = serde_json::Map::new();
    args.insert("text".into(), json!("still here"));
    let result = client.call_tool("echo", Some(args)).await.unwrap();
    assert_eq!(serde_json::to_value(&result.content).unwrap()[0]["text"], "still here");
    client.close().await;
}

// ------------------------------------------------------------------ C2: endless pages

/// A 2026-07-28 server whose `tools/list` hands out a new cursor on every page (stopping after
/// 3,000 pages so that an unbounded client ends too), each page 100 tools and about 60 KB.
async fn endless_pages() -> (String, Arc<AtomicUsize>) {
    async fn handle(State(pages): State<Arc<AtomicUsize>>, body: Bytes) -> Response {
        let request: Value = serde_json::from_slice(&body).unwrap_or_default();
        let id = &request["id"];
        match request["method"].as_str().unwrap_or("") {
            "server/discover" => discover(id),
            "tools/list" => {
                let page = pages.fetch_add(1, Ordering::SeqCst);
                let tools: Vec<Value> = (0..100)
                    .map(|i| {
                        json!({"name": format!("t{page}_{i}"), "description": "d".repeat(500),
                        "inputSchema": {"type": "object"}})
                    })
                    .collect();
                let mut result =
                    json!({"resultType": "complete", "ttlMs": 600_000, "cacheScope": "public", "tools": tools});
                if page < 3_000 {
                    result["nextCursor"] = json!(format!("page-{}", page + 1));
                }
                json_response(json!({"jsonrpc": "2.0", "id": id, "result": result}))
            }
            "tools/call" => json_response(json!({"jsonrpc": "2.0", "id": id, "result": {
                "resultType": "complete", "content": [{"type": "text", "text": "called"}]}})),
            _ if id.is_null() => StatusCode::ACCEPTED.into_response(),
            _ => json_response(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}})),
        }
    }
    let pages = Arc::new(AtomicUsize::new(0));
    let app = axum::Router::new().route("/mcp", axum::routing::post(handle)).with_state(pages.clone());
    (serve(app).await, pages)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c2_call_tool_follows_a_bounded_number_of_pages_and_caches_a_bounded_number_of_bytes() {
    let _serial = SERIAL.lock().await;
    let (url, pages) = endless_pages().await;
    let client = Client::builder("resource-test", "1.0")
        .max_list_pages(200)
        .max_cache_bytes(2 * 1024 * 1024)
        .connect_http(&url)
        .await
        .unwrap();
    let before = rss_kib();
    let result = tokio::time::timeout(PATIENCE, client.call_tool("absent", ())).await.expect("call_tool ends");
    let after = rss_kib();
    let listed = pages.load(Ordering::SeqCst);
    println!(
        "C2: endless tools/list pages: {listed} pages fetched, RSS {} -> {} MiB (+{} KiB)",
        before / MIB,
        after / MIB,
        after.saturating_sub(before)
    );
    assert_eq!(serde_json::to_value(&result.unwrap().content).unwrap()[0]["text"], "called");
    assert!(listed <= 200, "{listed} pages fetched for a limit of 200");
    assert!(after.saturating_sub(before) < 12 * MIB, "RSS grew from {before} to {after} KiB");

    match client.all_tools().await {
        Err(Error::LimitExceeded { limit, .. }) => assert_eq!(limit, "ClientBuilder::max_list_pages"),
        other => panic!("an endless listing must end at the page limit: {:?}", other.map(|t| t.len())),
    }
}

// ------------------------------------------------------------------ C3: legacy HTTP ping flood

/// A legacy Streamable HTTP server whose standalone stream floods `ping` requests and which
/// never answers the client's reply POSTs.
async fn ping_flooder(pings: usize) -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    #[derive(Clone)]
    struct Counters {
        pings: usize,
        replies: Arc<AtomicUsize>,
        hanging: Arc<AtomicUsize>,
    }
    struct Hanging(Arc<AtomicUsize>);
    impl Drop for Hanging {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
    async fn handle(State(counters): State<Counters>, method: Method, body: Bytes) -> Response {
        if method == Method::GET {
            let pings = futures::stream::iter(0..counters.pings)
                .map(|n| json!({"jsonrpc": "2.0", "id": n, "method": "ping"}).to_string())
                .chain(futures::stream::pending());
            return sse(pings);
        }
        if method == Method::DELETE {
            return StatusCode::OK.into_response();
        }
        let request: Value = serde_json::from_slice(&body).unwrap_or_default();
        match (request["method"].as_str(), request.get("id")) {
            (Some("initialize"), Some(id)) => {
                let mut response = json_response(json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "flooder", "version": "1"}}}));
                response.headers_mut().insert("mcp-session-id", "flood-session".parse().unwrap());
                response
            }
            (Some(_), None) => StatusCode::ACCEPTED.into_response(),
            (None, Some(_)) => {
                // The client's answer to a ping: never answered.
                counters.replies.fetch_add(1, Ordering::SeqCst);
                counters.hanging.fetch_add(1, Ordering::SeqCst);
                let _hanging = Hanging(counters.hanging.clone());
                std::future::pending::<Response>().await
            }
            _ => json_response(
                json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no"}}),
            ),
        }
    }
    let counters = Counters { pings, replies: Arc::default(), hanging: Arc::default() };
    let (replies, hanging) = (counters.replies.clone(), counters.hanging.clone());
    let app = axum::Router::new().route("/mcp", axum::routing::any(handle)).with_state(counters);
    (serve(app).await, replies, hanging)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c3_a_legacy_ping_flood_keeps_reply_posts_bounded_and_ends_with_close() {
    let _serial = SERIAL.lock().await;
    const PINGS: usize = 3_000;
    let (url, replies, hanging) = ping_flooder(PINGS).await;
    let (fds_before, rss_before) = (open_fds(), rss_kib());
    let client = Client::builder("resource-test", "1.0").era(EraPreference::Legacy).connect_http(&url).await.unwrap();
    // Let the flood run.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (fds_during, rss_during) = (open_fds(), rss_kib());
    let posted = replies.load(Ordering::SeqCst);
    println!(
        "C3: {PINGS} pings, {posted} reply POSTs: fds {fds_before} -> {fds_during}, RSS {} -> {} MiB (+{} KiB)",
        rss_before / MIB,
        rss_during / MIB,
        rss_during.saturating_sub(rss_before)
    );
    assert!(posted <= 16, "{posted} answers in flight at once, more than max_server_requests");
    // Each hanging reply holds two sockets here (the client's and the test server's).
    assert!(fds_during <= fds_before + 2 * 16 + 8, "descriptors grew from {fds_before} to {fds_during}");
    assert!(rss_during.saturating_sub(rss_before) < 32 * MIB, "RSS grew from {rss_before} to {rss_during} KiB");

    client.close().await;
    drop(client);
    assert!(eventually(|| hanging.load(Ordering::SeqCst) == 0).await, "reply POSTs outlive close()");
    assert!(eventually(|| open_fds() <= fds_before + 4).await, "descriptors outlive close(): {}", open_fds());
}

// ------------------------------------------------------------------ C4: stdio outbox

/// The C4 attack: a stdio server that floods pings and never reads the answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c4_answers_to_a_server_that_never_reads_stdin_stay_bounded() {
    let _serial = SERIAL.lock().await;
    let before = rss_kib();
    let client =
        builder().era(EraPreference::Modern).connect_stdio(hostile_stdio("ping-flood", 300_000)).await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = rss_kib();
    println!(
        "C4: 300000 pings, stdin never read: RSS {} -> {} MiB (+{} KiB)",
        before / MIB,
        after / MIB,
        after.saturating_sub(before)
    );
    assert!(after.saturating_sub(before) < 24 * MIB, "RSS grew from {before} to {after} KiB");
    // A notification finds no room and says which limit.
    tokio::time::timeout(PATIENCE, client.close()).await.expect("close ends");
}

// ------------------------------------------------------------------ C5: one deadline per call

/// A 2026-07-28 server that answers every request except `server/discover` with an event
/// stream of notifications and never the response.
async fn chatty_never_answers() -> String {
    async fn handle(body: Bytes) -> Response {
        let request: Value = serde_json::from_slice(&body).unwrap_or_default();
        if request["method"] == "server/discover" {
            return discover(&request["id"]);
        }
        if request.get("id").is_none() {
            return StatusCode::ACCEPTED.into_response();
        }
        let ticks = futures::stream::unfold(0u64, |n| async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": format!("tick {n}")}});
            Some((note.to_string(), n + 1))
        });
        sse(ticks)
    }
    serve(axum::Router::new().route("/mcp", axum::routing::post(handle))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c5_a_streaming_server_that_never_answers_gets_one_deadline_per_call() {
    let _serial = SERIAL.lock().await;
    let url = chatty_never_answers().await;
    let timeout = Duration::from_secs(2);
    let client = Client::builder("resource-test", "1.0").request_timeout(timeout).connect_http(&url).await.unwrap();
    let start = Instant::now();
    let outcome = client.call_tool("anything", ()).await;
    let took = start.elapsed();
    println!("C5: call_tool with a {timeout:?} timeout ended after {took:?}");
    assert!(matches!(outcome, Err(Error::Timeout { .. })), "{outcome:?}");
    assert!(took < timeout + Duration::from_millis(1500), "one call took {took:?} with a {timeout:?} timeout");
}

// ------------------------------------------------------------------ C6: tool names outside the cache budget

/// A 2026-07-28 server listing 48 pages of one tool each, named with 1 MiB (the last with 5 KiB,
/// so that it can be called); with `annotated`, each has an `x-mcp-header` (`Region`), and a
/// call answers with the header it came with.
async fn long_tool_names(annotated: bool) -> String {
    async fn handle(State(annotated): State<bool>, headers: axum::http::HeaderMap, body: Bytes) -> Response {
        let request: Value = serde_json::from_slice(&body).unwrap_or_default();
        let id = &request["id"];
        match request["method"].as_str().unwrap_or("") {
            "server/discover" => discover(id),
            "tools/list" => {
                let page: usize = request["params"]["cursor"].as_str().and_then(|c| c.parse().ok()).unwrap_or(0);
                let mut schema = json!({"type": "object"});
                if annotated {
                    schema["properties"] = json!({"region": {"type": "string", "x-mcp-header": "Region"}});
                }
                let length = if page == 47 { 5 * 1024 } else { 1024 * 1024 };
                let tool = json!({"name": format!("t{page}_{}", "x".repeat(length)), "inputSchema": schema});
                let mut result = json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "public", "tools": [tool]});
                if page < 47 {
                    result["nextCursor"] = json!((page + 1).to_string());
                }
                json_response(json!({"jsonrpc": "2.0", "id": id, "result": result}))
            }
            "tools/call" => {
                let region = headers.get("mcp-param-region").and_then(|v| v.to_str().ok()).unwrap_or("none");
                json_response(json!({"jsonrpc": "2.0", "id": id, "result": {
                    "resultType": "complete", "content": [{"type": "text", "text": format!("region {region}")}]}}))
            }
            _ if id.is_null() => StatusCode::ACCEPTED.into_response(),
            _ => json_response(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}})),
        }
    }
    let app = axum::Router::new().route("/mcp", axum::routing::post(handle)).with_state(annotated);
    serve(app).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c6_tool_names_are_kept_only_within_the_cache_budget() {
    let _serial = SERIAL.lock().await;
    // Tools without annotations: nothing of their names is kept.
    let url = long_tool_names(false).await;
    let client = Client::builder("resource-test", "1.0").connect_http(&url).await.unwrap();
    let before = rss_kib();
    let listed = client.list_tools().fold(0, |n, tool| async move { n + usize::from(tool.is_ok()) }).await;
    let after = rss_kib();
    println!(
        "C6: 48 tools named with 1 MiB each, listed: RSS {} -> {} MiB (+{} KiB)",
        before / MIB,
        after / MIB,
        after.saturating_sub(before)
    );
    assert_eq!(listed, 48);
    assert!(after.saturating_sub(before) < 24 * MIB, "RSS grew from {before} to {after} KiB");
    client.close().await;

    // Annotated tools past a 4 KiB budget: a tool whose annotations were not kept is found
    // again when called, and its call still carries its header.
    let url = long_tool_names(true).await;
    let client = Client::builder("resource-test", "1.0").max_cache_bytes(4 * 1024).connect_http(&url).await.unwrap();
    assert_eq!(client.all_tools().await.unwrap().len(), 48);
    let last = format!("t47_{}", "x".repeat(5 * 1024));
    let mut args = serde_json::Map::new();
    args.insert("region".into(), json!("eu"));
    // It lists the 48 MiB again first: a guard against a hang, generous for a loaded debug build.
    let result = tokio::time::timeout(PATIENCE * 6, client.call_tool(&last, Some(args))).await.expect("the call ends");
    assert_eq!(serde_json::to_value(&result.unwrap().content).unwrap()[0]["text"], "region eu");
    client.close().await;
}
