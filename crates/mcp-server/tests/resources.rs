//! Bounded under attack (issue 16): every limit of the server driven past on loopback, with the
//! process's memory (`VmRSS` of `/proc/self/status`) and descriptors (`/proc/self/fd`) held to a
//! stated bound, and honest clients still served. The tests measure the whole process, so they
//! run one at a time; each names the case of the issue it covers (S1 … S8).
#![cfg(all(target_os = "linux", feature = "http"))]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::*;
use futures::StreamExt as _;
use mcp_server::http::HttpConfig;
#[cfg(feature = "stdio")]
use mcp_server::stdio::StdioConfig;
use mcp_server::{
    Context, Error, NoArguments, Options, Server, TaskSupport, ToolRoute, encode_header_value, text_result,
};
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
#[cfg(feature = "stdio")]
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

const SESSION: &str = "mcp-session-id";
const MIB: u64 = 1024;

/// One test at a time: they read process-wide figures.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Counts the handlers of an [`attack_server`] that are running (started, not yet dropped).
#[derive(Clone, Default)]
struct Running(Arc<AtomicUsize>);

impl Running {
    fn start(&self) -> Live {
        self.0.fetch_add(1, Ordering::SeqCst);
        Live(self.0.clone())
    }

    fn now(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

struct Live(Arc<AtomicUsize>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The process's resident memory, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status is readable");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("a VmRSS line");
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("VmRSS in kB")
}

/// The process's open descriptors.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd is readable").count()
}

/// Waits (up to [`PATIENCE`]) until `done` holds; false if it never did.
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

/// The fixture server plus the tools these tests attack with:
/// - `wait_for_client`: asks the client (elicitation) and waits for the answer;
/// - `flood {count}`: reports `count` progress notifications, then answers;
/// - `never`: never finishes;
/// - `held_task`: becomes a task (for a client declaring the extension) that never finishes.
///
/// Each counts itself in the returned [`Running`] while it runs.
fn attack_server(options: Options) -> (Server, Running) {
    let running = Running::default();
    let (waiting, flooding, stuck) = (running.clone(), running.clone(), running.clone());
    let server = builder()
        .options(options)
        .tool(ToolRoute::new("wait_for_client", move |ctx: Context, _: NoArguments| {
            let live = waiting.start();
            async move {
                let _live = live;
                let params = serde_json::from_value(json!({
                    "mode": "form", "message": "Name?",
                    "requestedSchema": { "type": "object", "properties": { "name": { "type": "string" } } },
                }))
                .expect("valid elicitation params");
                let answer = ctx.elicit_with("name", params).await?;
                Ok(text_result(format!("answered: {:?}", answer.action)))
            }
        }))
        .tool(ToolRoute::new("flood", move |ctx: Context, args: Flood| {
            let live = flooding.start();
            async move {
                let _live = live;
                for step in 0..args.count {
                    ctx.progress(step as f64, None, None).await;
                }
                Ok::<_, Error>("flooded")
            }
        }))
        .tool(
            ToolRoute::new("held_task", |ctx: Context, _: NoArguments| async move {
                ctx.run_as_task().await;
                std::future::pending::<()>().await;
                Ok::<_, Error>("never")
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(ToolRoute::new("never", move |_: Context, _: NoArguments| {
            let live = stuck.start();
            async move {
                let _live = live;
                std::future::pending::<()>().await;
                Ok::<_, Error>("never")
            }
        }))
        .build()
        .expect("a well-formed server");
    (server, running)
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Flood {
    count: u64,
}

// ------------------------------------------------------------------ HTTP helpers

struct Http {
    url: String,
    address: std::net::SocketAddr,
    client: reqwest::Client,
}

async fn start_http(server: &Server, config: HttpConfig) -> Http {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let address = listener.local_addr().unwrap();
    tokio::spawn(mcp_server::http::serve(listener, server.clone(), config));
    Http { url: format!("http://{address}/mcp"), address, client: reqwest::Client::new() }
}

fn base_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers
}

fn legacy_headers(session: &str) -> HeaderMap {
    let mut headers = base_headers();
    headers.insert("mcp-protocol-version", HeaderValue::from_static(LEGACY));
    headers.insert(SESSION, HeaderValue::from_str(session).unwrap());
    headers
}

/// The headers of a correct 2026-07-28 `tools/call` of `name`.
fn modern_call_headers(name: &str) -> HeaderMap {
    let mut headers = base_headers();
    headers.insert("mcp-protocol-version", HeaderValue::from_static(MODERN));
    headers.insert("mcp-method", HeaderValue::from_static("tools/call"));
    headers.insert("mcp-name", HeaderValue::from_str(&encode_header_value(name)).unwrap());
    headers
}

impl Http {
    async fn post(&self, headers: HeaderMap, body: &Value) -> reqwest::Response {
        self.client.post(&self.url).headers(headers).body(body.to_string()).send().await.expect("the server answers")
    }

    /// Opens a legacy session declaring `capabilities`; returns its id.
    async fn initialize(&self, capabilities: Value) -> String {
        let response = self.post(base_headers(), &initialize(0, LEGACY, capabilities)).await;
        assert_eq!(response.status(), StatusCode::OK);
        let session = response.headers().get(SESSION).expect("a session id").to_str().unwrap().to_owned();
        let _ = response.bytes().await;
        let initialized = notification("notifications/initialized", json!({}));
        let response = self.post(legacy_headers(&session), &initialized).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED);
        session
    }

    async fn delete(&self, session: &str) -> StatusCode {
        self.client.delete(&self.url).header(SESSION, session).send().await.unwrap().status()
    }

    /// Calls `echo` statelessly with `text`; the echoed text.
    async fn echo(&self, id: u64, text: &str) -> Result<String, String> {
        let body = modern(id, "tools/call", json!({ "name": "echo", "arguments": { "text": text } }));
        let response = self
            .client
            .post(&self.url)
            .headers(modern_call_headers("echo"))
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| error_chain(&e))?;
        let status = response.status();
        let body: Value = response.json().await.map_err(|e| e.to_string())?;
        if status != StatusCode::OK || body["id"] != id {
            return Err(format!("{status}: {body}"));
        }
        body["result"]["content"][0]["text"].as_str().map(str::to_owned).ok_or_else(|| body.to_string())
    }
}

/// An error with its causes, so a lost call says why (a reset, a closed connection, a timeout).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// The `data:` events of an SSE response.
struct Events {
    bytes: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<Vec<u8>>> + Send>>,
    buffer: String,
}

impl Events {
    fn new(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), StatusCode::OK);
        Events {
            bytes: Box::pin(response.bytes_stream().map(|chunk| chunk.map(|b| b.to_vec()))),
            buffer: String::new(),
        }
    }

    /// The next event's data as JSON (events without data skipped); `None` at the end.
    async fn next(&mut self) -> Option<Value> {
        // One deadline for the event: keep-alive comments must not extend it.
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: Vec<&str> =
                    event.lines().filter_map(|line| line.strip_prefix("data:")).map(str::trim_start).collect();
                let data = data.join("\n");
                if !data.trim().is_empty() {
                    return Some(serde_json::from_str(&data).unwrap_or_else(|e| panic!("not JSON ({e}): {data}")));
                }
            }
            let chunk = tokio::time::timeout_at(deadline, self.bytes.next()).await.expect("an event in time")?;
            self.buffer.push_str(std::str::from_utf8(&chunk.ok()?).unwrap());
        }
    }
}

/// Starts `wait_for_client` on `session` and returns its stream once the elicitation arrived.
async fn call_and_wait_for_question(http: &Http, session: &str, id: u64) -> Events {
    let body = request(id, "tools/call", json!({ "name": "wait_for_client" }));
    let mut events = Events::new(http.post(legacy_headers(session), &body).await);
    let question = events.next().await.expect("the elicitation request");
    assert_eq!(question["method"], "elicitation/create", "{question}");
    events
}

// ------------------------------------------------------------------ S1: waiting handlers

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s1_deleting_a_session_cancels_the_handler_waiting_on_its_client() {
    let _serial = SERIAL.lock().await;
    let (server, running) = attack_server(Options::default());
    let http = start_http(&server, HttpConfig::default()).await;
    let session = http.initialize(json!({ "elicitation": {} })).await;
    let mut events = call_and_wait_for_question(&http, &session, 1).await;
    assert_eq!(running.now(), 1);

    assert_eq!(http.delete(&session).await, StatusCode::OK);
    assert!(eventually(|| running.now() == 0).await, "the waiting handler was not cancelled");
    assert!(events.next().await.is_none(), "the request's stream ends with its session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s1_an_evicted_session_cancels_the_handler_waiting_on_its_client() {
    let _serial = SERIAL.lock().await;
    let mut config = HttpConfig::default();
    config.max_sessions = 2;
    let (server, running) = attack_server(Options::default());
    let http = start_http(&server, config).await;
    let session = http.initialize(json!({ "elicitation": {} })).await;
    let _events = call_and_wait_for_question(&http, &session, 1).await;
    assert_eq!(running.now(), 1);

    // Two newer sessions push the first one out.
    http.initialize(json!({})).await;
    http.initialize(json!({})).await;
    assert!(eventually(|| running.now() == 0).await, "the evicted session's handler still waits");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s1_an_expired_session_cancels_the_handler_waiting_on_a_client_that_hung_up() {
    let _serial = SERIAL.lock().await;
    let mut config = HttpConfig::default();
    config.session_idle = Duration::from_millis(300);
    let (server, running) = attack_server(Options::default());
    let http = start_http(&server, config).await;
    let session = http.initialize(json!({ "elicitation": {} })).await;
    let events = call_and_wait_for_question(&http, &session, 1).await;
    drop(events);
    // No further request arrives: the session expires on its own.
    assert!(eventually(|| running.now() == 0).await, "the expired session's handler still waits");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s1_a_client_that_never_answers_runs_into_the_client_request_timeout() {
    let _serial = SERIAL.lock().await;
    let mut options = Options::default();
    options.client_request_timeout = Duration::from_millis(300);
    let http = start_http(&attack_server(options).0, HttpConfig::default()).await;
    let session = http.initialize(json!({ "elicitation": {} })).await;
    let mut events = call_and_wait_for_question(&http, &session, 7).await;
    let response = events.next().await.expect("the response after the deadline");
    assert_eq!(response["id"], 7, "{response}");
    assert_eq!(response["result"]["isError"], true, "{response}");
    let text = text(&response);
    assert!(text.contains("client_request_timeout") && text.contains("elicitation/create"), "{text}");
}

/// The S1 attack, 2,000 rounds: open a session, start a call that asks the client,
/// take the question and hang up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s1_two_thousand_abandoned_elicitations_stay_flat() {
    let _serial = SERIAL.lock().await;
    const ROUNDS: usize = 2_000;
    const SESSIONS: usize = 64;
    let mut config = HttpConfig::default();
    config.max_sessions = SESSIONS;
    let (server, running) = attack_server(Options::default());
    let http = Arc::new(start_http(&server, config).await);
    // Warm up (allocator arenas, connection pools) before the baseline.
    for round in 0..16 {
        let session = http.initialize(json!({ "elicitation": {} })).await;
        drop(call_and_wait_for_question(&http, &session, round).await);
    }
    let before = rss_kib();
    let next = Arc::new(AtomicUsize::new(0));
    // A worker starved long enough for 64 other sessions to open finds its own evicted before
    // its call (404) or as it starts: that round leaves nothing waiting, which is what is
    // measured.
    let evicted_early = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (http, next, evicted_early) = (http.clone(), next.clone(), evicted_early.clone());
            tokio::spawn(async move {
                while next.fetch_add(1, Ordering::SeqCst) < ROUNDS {
                    let session = http.initialize(json!({ "elicitation": {} })).await;
                    let body = request(1, "tools/call", json!({ "name": "wait_for_client" }));
                    let response = http.post(legacy_headers(&session), &body).await;
                    if response.status() == StatusCode::NOT_FOUND {
                        evicted_early.fetch_add(1, Ordering::SeqCst);
                        continue;
                    }
                    // The stream also ends without the question when the session is evicted
                    // while the call starts.
                    match Events::new(response).next().await {
                        Some(question) => assert_eq!(question["method"], "elicitation/create", "{question}"),
                        None => _ = evicted_early.fetch_add(1, Ordering::SeqCst),
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.unwrap();
    }
    let waiting = running.now();
    let after = rss_kib();
    println!(
        "S1: {ROUNDS} abandoned elicitations: RSS {} -> {} MiB (+{} KiB), {waiting} handlers still waiting, \
         {} sessions evicted before their call",
        before / MIB,
        after / MIB,
        after.saturating_sub(before),
        evicted_early.load(Ordering::SeqCst)
    );
    assert!(waiting <= SESSIONS, "{waiting} handlers wait, more than the {SESSIONS} sessions kept");
    assert!(after.saturating_sub(before) < 16 * MIB, "RSS grew from {before} to {after} KiB");
    // Honest clients are still served.
    assert_eq!(http.echo(1, "still here").await.unwrap(), "echo: still here");
}

// ------------------------------------------------------------------ S2: stdio and a waiting handler

#[cfg(feature = "stdio")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s2_stdio_ends_when_stdin_closes_while_a_handler_waits_on_the_client() {
    let _serial = SERIAL.lock().await;
    let (server, running) = attack_server(Options::default());
    let (client, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    let serving = tokio::spawn(mcp_server::stdio::serve_lines(server, BufReader::new(server_read), server_write));
    let (client_read, mut stdin) = tokio::io::split(client);
    let mut stdout = BufReader::new(client_read).lines();
    let line = |message: Value| format!("{message}\n").into_bytes();
    stdin.write_all(&line(initialize(0, LEGACY, json!({ "elicitation": {} })))).await.unwrap();
    let _initialized = stdout.next_line().await.unwrap().unwrap();
    stdin.write_all(&line(request(1, "tools/call", json!({ "name": "wait_for_client" })))).await.unwrap();
    let question: Value = serde_json::from_str(&stdout.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(question["method"], "elicitation/create", "{question}");

    stdin.shutdown().await.unwrap();
    drop(stdin);
    let ended = tokio::time::timeout(PATIENCE, serving).await;
    assert!(ended.is_ok(), "serve_lines still runs after stdin closed");
    // The waiting call ended with an answer naming why.
    let response: Value =
        serde_json::from_str(&stdout.next_line().await.unwrap().expect("the call's response")).unwrap();
    assert_eq!(response["id"], 1, "{response}");
    assert!(response.to_string().contains("closed"), "{response}");
    assert_eq!(running.now(), 0);
}

// ------------------------------------------------------------------ S3: read deadlines, connection cap

fn short_deadlines(max_connections: usize) -> HttpConfig {
    let mut config = HttpConfig::default();
    config.header_read_timeout = Duration::from_millis(200);
    config.body_read_timeout = Duration::from_millis(300);
    config.max_connections = max_connections;
    config
}

/// Reads until the server closes `stream`; what it sent, or `None` if it kept the connection
/// open for [`PATIENCE`].
async fn until_closed(stream: &mut TcpStream) -> Option<String> {
    let mut received = Vec::new();
    let read = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut received)).await;
    read.ok().map(|_| String::from_utf8_lossy(&received).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_dribbled_headers_are_cut_off_by_the_header_read_timeout() {
    let _serial = SERIAL.lock().await;
    let http = start_http(&server(), short_deadlines(64)).await;
    let mut stream = TcpStream::connect(http.address).await.unwrap();
    stream.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.unwrap();
    assert!(until_closed(&mut stream).await.is_some(), "a connection that never finishes its headers stays open");
}

/// The head of a POST that declares a body of `length` bytes.
fn post_head(length: u64) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {length}\r\n\r\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_a_body_that_stops_arriving_is_cut_off_by_the_body_read_timeout() {
    let _serial = SERIAL.lock().await;
    let http = start_http(&server(), short_deadlines(64)).await;
    let mut stream = TcpStream::connect(http.address).await.unwrap();
    // A length within `max_body_bytes` (4 MiB), of which 100 bytes arrive.
    stream.write_all(post_head(1_000_000).as_bytes()).await.unwrap();
    stream.write_all(&[b' '; 100]).await.unwrap();
    let answer = until_closed(&mut stream).await.expect("a connection whose body stalls stays open");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("body_read_timeout"), "{answer}");
}

/// A body whose declared length is over `max_body_bytes` is refused before any of it is read:
/// its sender does not hold the connection for the body read timeout.
#[tokio::test]
async fn s3_a_body_declared_over_the_limit_is_refused_before_it_is_read() {
    let _serial = SERIAL.lock().await;
    let http = start_http(&server(), short_deadlines(64)).await;
    let mut stream = TcpStream::connect(http.address).await.unwrap();
    stream.write_all(post_head(2_000_000_000).as_bytes()).await.unwrap();
    // No byte of the body is sent: waiting for it would end in the body read timeout's 408.
    let answer = until_closed(&mut stream).await.expect("the refused connection is closed");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("exceeds 4194304 bytes"), "{answer}");
}

/// The S3 attack: more slow connections than the server has descriptors for. The cap
/// keeps the server's sockets bounded, the deadlines recycle them, and an honest client gets in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_the_connection_cap_keeps_descriptors_bounded_and_honest_clients_served() {
    let _serial = SERIAL.lock().await;
    const CAP: usize = 64;
    let attackers = 1_000;
    let http = start_http(&server(), short_deadlines(CAP)).await;
    assert_eq!(http.echo(0, "warm").await.unwrap(), "echo: warm");
    let (fds_before, rss_before) = (open_fds(), rss_kib());
    let mut slow = Vec::new();
    for _ in 0..attackers {
        let mut stream = TcpStream::connect(http.address).await.unwrap();
        let _ = stream.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2000000000\r\n").await;
        slow.push(stream);
    }
    // The attackers are all connected (most in the listen backlog); let the server take its fill.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let server_sockets = open_fds().saturating_sub(fds_before + attackers);
    let rss_during = rss_kib();
    println!(
        "S3: {attackers} slow connections: server sockets {server_sockets} (cap {CAP}), RSS {} -> {} MiB (+{} KiB)",
        rss_before / MIB,
        rss_during / MIB,
        rss_during.saturating_sub(rss_before)
    );
    // reqwest's pooled connection of the warm-up call may count too.
    assert!(server_sockets <= CAP + 4, "{server_sockets} server sockets for a cap of {CAP}");
    let honest = Http { url: http.url.clone(), address: http.address, client: reqwest::Client::new() };
    let served = tokio::time::timeout(PATIENCE, honest.echo(1, "honest")).await;
    assert_eq!(served.expect("an honest client is served in time").unwrap(), "echo: honest");
    drop(slow);
}

/// Connects from `source`, another loopback address than the tests' own 127.0.0.1, so that the
/// server sees another client.
async fn connect_from(source: [u8; 4], to: std::net::SocketAddr) -> std::io::Result<TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(std::net::SocketAddr::from((source, 0)))?;
    socket.connect(to).await
}

/// The slowloris case: one address opening connections and sending nothing holds at
/// most its share of them (`max_connections_per_client`); a further one is answered 429 and
/// closed at once, and a client at another address is served without waiting for any deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s10_one_address_holds_only_its_share_of_connections() {
    let _serial = SERIAL.lock().await;
    const CAP: usize = 64;
    const SHARE: usize = 16;
    let attackers = 200;
    let mut config = HttpConfig::default();
    config.max_connections = CAP;
    config.max_connections_per_client = SHARE;
    // Far beyond the test's patience: the honest client must not need a slow one to time out.
    config.header_read_timeout = Duration::from_secs(120);
    let http = start_http(&server(), config).await;
    let fds_before = open_fds();
    let mut slow = Vec::new();
    for _ in 0..attackers {
        let mut stream = connect_from([127, 0, 0, 2], http.address).await.unwrap();
        let _ = stream.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await;
        slow.push(stream);
    }
    // A connection beyond the share is answered and closed, not left waiting.
    let mut refused = connect_from([127, 0, 0, 2], http.address).await.unwrap();
    let answer = until_closed(&mut refused).await.expect("a refused connection is closed at once");
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 429"), "{answer}");
    assert!(answer.is_empty() || answer.contains("max_connections_per_client"), "{answer}");
    let server_sockets = open_fds().saturating_sub(fds_before + attackers + 1);
    println!("S10: {attackers} slow connections from one address: server sockets {server_sockets} (share {SHARE})");
    assert!(server_sockets <= SHARE, "{server_sockets} server sockets for a share of {SHARE}");
    let honest = Http { url: http.url.clone(), address: http.address, client: reqwest::Client::new() };
    let served = tokio::time::timeout(PATIENCE, honest.echo(1, "honest")).await;
    assert_eq!(served.expect("an honest client is served in time").unwrap(), "echo: honest");
    drop(slow);
}

// ------------------------------------------------------------------ S11: bounded decode

/// The process's peak resident memory since [`reset_peak`], in KiB.
fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status is readable");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("a VmHWM line");
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("VmHWM in kB")
}

/// Starts measuring the peak resident memory afresh (Linux: `5` to `clear_refs`).
fn reset_peak() {
    std::fs::write("/proc/self/clear_refs", "5").expect("/proc/self/clear_refs is writable");
}

/// `{"a":[]}` repeated: 8 bytes of text each, about 650 bytes each as a `serde_json::Value`.
fn tiny_objects(count: usize) -> Value {
    Value::Array(vec![json!({ "a": [] }); count])
}

/// The decode case: a 3.5 MB body of 400,000 tiny objects in an extra member made the
/// server peak at 80× (unauthenticated `server/discover`) to 310× (a tool with a validated
/// schema) its size. It is now refused before any value is built: the peak stays a small
/// multiple of the body, nothing is retained, and a message within the limit is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s11_a_body_of_many_tiny_objects_is_refused_before_it_is_decoded() {
    let _serial = SERIAL.lock().await;
    let http = start_http(&server(), HttpConfig::default()).await;
    assert_eq!(http.echo(0, "warm").await.unwrap(), "echo: warm");
    let wide = tiny_objects(400_000);
    let modern_headers = |method: &'static str, name: Option<&'static str>| {
        let mut headers = base_headers();
        headers.insert("mcp-protocol-version", HeaderValue::from_static(MODERN));
        headers.insert("mcp-method", HeaderValue::from_static(method));
        if let Some(name) = name {
            headers.insert("mcp-name", HeaderValue::from_static(name));
        }
        headers
    };
    let cases = [
        (
            "server/discover",
            modern(1, "server/discover", json!({ "extra": wide })),
            modern_headers("server/discover", None),
        ),
        (
            "an unknown tool",
            modern(2, "tools/call", json!({ "name": "nope", "arguments": {}, "extra": wide })),
            modern_headers("tools/call", Some("nope")),
        ),
        (
            "a tool with a validated schema",
            modern(3, "tools/call", json!({ "name": "echo", "arguments": { "text": "x", "extra": wide } })),
            modern_headers("tools/call", Some("echo")),
        ),
        ("legacy initialize", initialize(4, LEGACY, json!({ "experimental": { "extra": wide } })), base_headers()),
    ];
    for (id, (case, body, headers)) in (1..).zip(cases) {
        let body = body.to_string();
        let size_kib = body.len() as u64 / 1024;
        let before = rss_kib();
        reset_peak();
        let response = http.client.post(&http.url).headers(headers).body(body).send().await.unwrap();
        let status = response.status();
        let answer: Value = response.json().await.unwrap();
        let (peak, after) = (peak_kib(), rss_kib());
        println!(
            "S11: {case}: {size_kib} KiB body: peak +{} KiB, retained +{} KiB",
            peak.saturating_sub(before),
            after.saturating_sub(before)
        );
        assert_eq!(status, StatusCode::BAD_REQUEST, "{case}: {answer}");
        assert_eq!(answer["error"]["code"], -32600, "{case}: {answer}");
        assert!(message(&answer).contains("Options::max_json_containers"), "{case}: {answer}");
        assert_eq!(answer["id"], id, "{case}: the refusal answers the request");
        // The body's text is held a few times over (the test's, the client's, the server's),
        // never as 400,000 decoded objects (about 260 MiB).
        assert!(peak.saturating_sub(before) < 8 * size_kib, "{case}: peak grew from {before} to {peak} KiB");
        assert!(after.saturating_sub(before) < 16 * MIB, "{case}: RSS grew from {before} to {after} KiB");
    }
    // Within the limit, a wide message is served.
    let body = modern(5, "server/discover", json!({ "extra": tiny_objects(8_000) }));
    let response = http.post(modern_headers("server/discover", None), &body).await;
    assert_eq!(response.status(), StatusCode::OK);
    let answer: Value = response.json().await.unwrap();
    assert!(answer["result"]["supportedVersions"].is_array(), "{answer}");
    assert_eq!(http.echo(6, "honest").await.unwrap(), "echo: honest");
}

// ------------------------------------------------------------------ S4: replay logs

/// The S4 attack: one request emitting a flood of progress events on a legacy session.
/// The session keeps a bounded tail for resumption; a client reading live loses nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s4_a_flood_of_progress_events_keeps_the_replay_log_bounded() {
    let _serial = SERIAL.lock().await;
    const EVENTS: u64 = 200_000;
    let (server, running) = attack_server(Options::default());
    let http = start_http(&server, HttpConfig::default()).await;
    let session = http.initialize(json!({})).await;
    let call = |id: u64, count: u64| {
        request(
            id,
            "tools/call",
            json!({ "name": "flood", "arguments": { "count": count }, "_meta": { "progressToken": id } }),
        )
    };
    // Warm up, then the attack: take the first event and hang up; the handler runs to its end.
    drop(Events::new(http.post(legacy_headers(&session), &call(1, 1000)).await));
    let before = rss_kib();
    let mut events = Events::new(http.post(legacy_headers(&session), &call(2, EVENTS)).await);
    assert_eq!(events.next().await.expect("a first event")["method"], "notifications/progress");
    drop(events);
    assert!(eventually(|| running.now() == 0).await, "the flood did not finish");
    let after = rss_kib();
    println!(
        "S4: {EVENTS} progress events on a legacy session: RSS {} -> {} MiB (+{} KiB)",
        before / MIB,
        after / MIB,
        after.saturating_sub(before)
    );
    assert!(after.saturating_sub(before) < 8 * MIB, "RSS grew from {before} to {after} KiB");

    // A client that reads live receives every event, in order, and the response.
    let mut events = Events::new(http.post(legacy_headers(&session), &call(3, 20_000)).await);
    for step in 0..20_000 {
        let event = events.next().await.expect("every progress event");
        assert_eq!(event["params"]["progress"], step as f64, "{event}");
    }
    assert_eq!(text(&events.next().await.expect("the response")), "flooded");
}

// ------------------------------------------------------------------ S9: replay memory

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Big {
    bytes: usize,
}

/// `big {bytes}`: one progress notification (so that the answer travels as an event stream, kept
/// for resumption), then an answer of `bytes` bytes.
fn big_answers() -> Server {
    builder()
        .tool(ToolRoute::new("big", |ctx: Context, args: Big| async move {
            ctx.progress(0.0, None, None).await;
            Ok::<_, Error>("x".repeat(args.bytes))
        }))
        .build()
        .expect("a well-formed server")
}

/// Calls `big` on a fresh legacy session, reading its stream live to the end: the answer
/// arrives whole. The session id.
async fn big_answer(http: &Http, bytes: usize) -> String {
    let session = http.initialize(json!({})).await;
    let call = request(
        1,
        "tools/call",
        json!({ "name": "big", "arguments": { "bytes": bytes }, "_meta": { "progressToken": 1 } }),
    );
    let mut events = Events::new(http.post(legacy_headers(&session), &call).await);
    assert_eq!(events.next().await.expect("the progress")["method"], "notifications/progress");
    let answer = events.next().await.expect("the answer");
    assert_eq!(text(&answer).len(), bytes, "read live, the answer is whole");
    session
}

/// Whether resuming the session's first stream after its progress event replays the answer.
async fn answer_replayed(http: &Http, session: &str) -> bool {
    let mut headers = legacy_headers(session);
    headers.insert("last-event-id", HeaderValue::from_static("1:1"));
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    let resumed = http.client.get(&http.url).headers(headers).send().await.unwrap();
    assert_eq!(resumed.status(), StatusCode::OK);
    resumed.text().await.unwrap().contains("\"result\"")
}

/// The replay case: answers larger than a session's replay budget are not kept, and all
/// sessions together keep at most `max_replay_bytes_total`; a client reading live loses nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s9_replay_memory_is_bounded_per_session_and_in_all() {
    let _serial = SERIAL.lock().await;
    let server = big_answers();
    let http = start_http(&server, HttpConfig::default()).await;
    let small = big_answer(&http, 100 * 1024).await;
    assert!(answer_replayed(&http, &small).await, "an answer within the budget is kept");
    let large = big_answer(&http, 2 * 1024 * 1024).await;
    assert!(!answer_replayed(&http, &large).await, "a 2 MiB answer is not kept for a 1 MiB budget");

    let mut config = HttpConfig::default();
    config.max_replay_bytes_total = 1024 * 1024;
    let http = start_http(&server, config).await;
    let mut sessions = Vec::new();
    for _ in 0..6 {
        sessions.push(big_answer(&http, 300 * 1024).await);
    }
    let mut kept = 0;
    for session in &sessions {
        kept += usize::from(answer_replayed(&http, session).await);
    }
    println!("S9: 6 sessions of a 300 KiB answer each, 1 MiB in all: {kept} answers kept for resumption");
    assert_eq!(kept, 3, "1 MiB holds three 300 KiB answers");
}

// ------------------------------------------------------------------ S5: DELETE

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s5_delete_ends_the_sessions_get_streams_and_cancels_its_requests() {
    let _serial = SERIAL.lock().await;
    let (server, running) = attack_server(Options::default());
    let http = start_http(&server, HttpConfig::default()).await;
    let session = http.initialize(json!({})).await;
    let get =
        http.client.get(&http.url).header(SESSION, &session).header(ACCEPT, "text/event-stream").send().await.unwrap();
    let mut stream = Events::new(get);
    let pending = {
        let (client, url, headers) = (http.client.clone(), http.url.clone(), legacy_headers(&session));
        let body = request(1, "tools/call", json!({ "name": "never" })).to_string();
        tokio::spawn(async move { client.post(url).headers(headers).body(body).send().await })
    };
    assert!(eventually(|| running.now() == 1).await, "the call started");

    assert_eq!(http.delete(&session).await, StatusCode::OK);
    assert!(eventually(|| running.now() == 0).await, "the session's request still runs");
    assert!(stream.next().await.is_none(), "the session's GET stream still runs");
    pending.abort();
}

// ------------------------------------------------------------------ S6: duplicate mirrored headers

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s6_a_mirrored_header_sent_twice_is_refused_with_32020() {
    let _serial = SERIAL.lock().await;
    let http = start_http(&server(), HttpConfig::default()).await;
    let body = modern(1, "tools/call", json!({ "name": "regional", "arguments": { "region": "eu" } }));
    let mut headers = modern_call_headers("regional");
    headers.insert("mcp-param-region", HeaderValue::from_static("eu"));
    let response = http.post(headers.clone(), &body).await;
    assert_eq!(response.status(), StatusCode::OK, "the correct request is served");

    for (name, second) in [
        ("mcp-name", "echo"),
        ("mcp-method", "tools/list"),
        ("mcp-param-region", "us"),
        ("mcp-protocol-version", LEGACY),
        // A repeated identical value is refused too: no reader may see two.
        ("mcp-name", "regional"),
    ] {
        let mut twice = headers.clone();
        twice.append(HeaderName::from_static(name), HeaderValue::from_static(second));
        let response = http.post(twice, &body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{name}");
        let answer: Value = response.json().await.unwrap();
        assert_error(&answer, 1, -32020);
        assert!(message(&answer).to_ascii_lowercase().contains(name), "{name}: {answer}");
    }
}

// ------------------------------------------------------------------ S7, S8: stdio

/// The S7 attack: a stdio client that pipelines requests and never reads the answers.
/// The server stops reading; once the client reads, every request gets exactly one answer.
#[cfg(feature = "stdio")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s7_stdio_stops_reading_while_nobody_reads_its_output() {
    let _serial = SERIAL.lock().await;
    const REQUESTS: usize = 100_000;
    let (client, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    tokio::spawn(mcp_server::stdio::serve_lines(server(), BufReader::new(server_read), server_write));
    let (client_read, mut stdin) = tokio::io::split(client);
    let mut stdout = BufReader::new(client_read).lines();
    stdin.write_all(format!("{}\n", initialize(0, LEGACY, json!({}))).as_bytes()).await.unwrap();
    let _initialized = stdout.next_line().await.unwrap().unwrap();

    let before = rss_kib();
    let written = Arc::new(AtomicUsize::new(0));
    let writer = {
        let written = written.clone();
        tokio::spawn(async move {
            for id in 1..=REQUESTS {
                let line = format!("{}\n", request(id, "ping", json!({})));
                stdin.write_all(line.as_bytes()).await.unwrap();
                written.fetch_add(1, Ordering::SeqCst);
            }
            stdin
        })
    };
    // Wait until the writer stalls (the server stopped reading) or is done.
    let mut last = usize::MAX;
    while written.load(Ordering::SeqCst) != last && !writer.is_finished() {
        last = written.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let after = rss_kib();
    let accepted = written.load(Ordering::SeqCst);
    println!(
        "S7: {accepted} of {REQUESTS} requests read while nobody read the output: RSS {} -> {} MiB (+{} KiB)",
        before / MIB,
        after / MIB,
        after.saturating_sub(before)
    );
    assert!(accepted < REQUESTS, "the server read all {REQUESTS} requests while nobody read its answers");
    assert!(after.saturating_sub(before) < 16 * MIB, "RSS grew from {before} to {after} KiB");

    // Now read: every request is answered exactly once (a result, or a refusal naming the limit).
    let mut answered = vec![0u8; REQUESTS + 1];
    for _ in 0..REQUESTS {
        let line = tokio::time::timeout(PATIENCE, stdout.next_line()).await.expect("an answer").unwrap().unwrap();
        let response: Value = serde_json::from_str(&line).unwrap();
        let id = response["id"].as_u64().unwrap_or_else(|| panic!("an id: {response}")) as usize;
        answered[id] += 1;
        if response.get("error").is_some() {
            assert!(message(&response).contains("max_in_flight"), "{response}");
        }
    }
    assert!(answered[1..].iter().all(|&n| n == 1), "an answer lost or duplicated");
    let _stdin = writer.await.unwrap();
}

#[cfg(feature = "stdio")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s8_stdio_refuses_invalid_utf8_with_32700_like_http() {
    let _serial = SERIAL.lock().await;
    let (client, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    tokio::spawn(mcp_server::stdio::serve_lines_with(
        server(),
        BufReader::new(server_read),
        server_write,
        StdioConfig::default(),
    ));
    let (client_read, mut stdin) = tokio::io::split(client);
    let mut stdout = BufReader::new(client_read).lines();
    stdin.write_all(format!("{}\n", initialize(0, LEGACY, json!({}))).as_bytes()).await.unwrap();
    let _initialized = stdout.next_line().await.unwrap().unwrap();
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pi\xffng\"}\n").await.unwrap();
    let response: Value = serde_json::from_str(&stdout.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(response["error"]["code"], -32700, "{response}");
    stdin.write_all(format!("{}\n", request(2, "ping", json!({}))).as_bytes()).await.unwrap();
    let response: Value = serde_json::from_str(&stdout.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(response, json!({ "jsonrpc": "2.0", "id": 2, "result": {} }));

    // HTTP answers the same bytes the same way.
    let http = start_http(&server(), HttpConfig::default()).await;
    let response = http
        .client
        .post(&http.url)
        .headers(base_headers())
        .body(&b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pi\xffng\"}"[..])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(response.json::<Value>().await.unwrap()["error"]["code"], -32700);
}

// ------------------------------------------------------------------ batches

/// The batch attack: 80,000 pings in one 2025-03-26 batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_longer_than_max_batch_len_is_refused_naming_the_limit() {
    let _serial = SERIAL.lock().await;
    let mut client = MemoryClient::batching(&server()).await;
    let batch: Vec<Value> = (0..80_000).map(|id| request(id, "ping", json!({}))).collect();
    let text = Value::Array(batch).to_string();
    let before = rss_kib();
    client.send_raw(&text).await;
    let response = client.recv().await;
    let after = rss_kib();
    println!("batch: 80000 pings: RSS {} -> {} MiB (+{} KiB)", before / MIB, after / MIB, after.saturating_sub(before));
    let summary: String = response.to_string().chars().take(300).collect();
    assert_eq!(response["error"]["code"], -32600, "{summary}");
    assert!(message(&response).contains("max_batch_len"), "{summary}");
    assert!(after.saturating_sub(before) < 16 * MIB, "RSS grew from {before} to {after} KiB");

    // A batch within the limit is served.
    let batch: Vec<Value> = (0..100).map(|id| request(id, "ping", json!({}))).collect();
    let response = client.recv_after(Value::Array(batch)).await;
    assert_eq!(response.as_array().map(Vec::len), Some(100), "{response}");
}

// ------------------------------------------------------------------ honest clients beside hostile ones

/// A client whose connections come from `source` (a loopback address of its own).
fn client_from(source: [u8; 4]) -> reqwest::Client {
    reqwest::Client::builder().local_address(std::net::IpAddr::from(source)).build().unwrap()
}

/// A stateless `held_task` call declaring the tasks extension.
fn task_call(id: u64) -> Value {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": { "extensions": { mcp_types::ext::TASKS: {} } },
    });
    modern(id, "tools/call", json!({ "name": "held_task", "arguments": {}, "_meta": meta }))
}

/// 64 honest clients, each making sequential stateless calls and then starting a task, while
/// hostile clients hammer the same server, each from an address of its own: slow headers and
/// stalled bodies reconnecting (more than their connection share), stream hogs (more
/// `subscriptions/listen` than their stream share), task flooders (more than their task quota),
/// senders of 3.5 MB bodies of tiny objects, garbage and duplicate headers, sessions abandoned
/// mid-question. No honest call is lost, none answered twice or with another call's answer,
/// and the process's memory peak stays far below what one decoded wide body would take.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_honest_clients_lose_nothing_beside_slow_and_hostile_ones() {
    let _serial = SERIAL.lock().await;
    const HONEST: usize = 64;
    const CALLS: usize = 40;
    const SLOW: usize = 200;
    let mut config = HttpConfig::default();
    config.max_connections = 512;
    // The honest clients all come from 127.0.0.1 with up to two connections each.
    config.max_connections_per_client = 160;
    config.max_streams_per_client = 16;
    config.max_sessions = 32;
    // Short enough that the slow clients cycle during the test. The header timeout also closes
    // idle keep-alive connections (hyper starts it when a connection waits for its next
    // request), so the honest clients drop pooled connections long before that (below): a
    // request written onto a connection the server is closing at that instant is lost in
    // transit, on any HTTP/1.1 server.
    config.header_read_timeout = Duration::from_secs(2);
    config.body_read_timeout = Duration::from_secs(2);
    let http = Arc::new(start_http(&attack_server(Options::default()).0, config).await);
    // 400,000 tiny objects in a tool's arguments, the body the wide senders send.
    let wide = axum::body::Bytes::from(
        modern(
            0,
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "x", "extra": tiny_objects(400_000) } }),
        )
        .to_string(),
    );
    let before = rss_kib();
    reset_peak();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let attacks = Arc::new(AtomicUsize::new(0));
    let mut hostile = Vec::new();
    // Slow headers and stalled bodies from 127.0.0.2, reconnecting when cut off or refused.
    for kind in 0..SLOW {
        let (address, stop, attacks) = (http.address, stop.clone(), attacks.clone());
        hostile.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                attacks.fetch_add(1, Ordering::SeqCst);
                let Ok(mut stream) = connect_from([127, 0, 0, 2], address).await else { continue };
                let head: &[u8] = if kind % 2 == 0 {
                    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                } else {
                    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n{\"jsonrpc\""
                };
                let _ = stream.write_all(head).await;
                let mut sink = Vec::new();
                let _ = tokio::time::timeout(Duration::from_secs(3), stream.read_to_end(&mut sink)).await;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }));
    }
    // Stream hogs from 127.0.0.4: as many `subscriptions/listen` as they can get, held open.
    for _ in 0..4 {
        let (url, stop, attacks) = (http.url.clone(), stop.clone(), attacks.clone());
        hostile.push(tokio::spawn(async move {
            let client = client_from([127, 0, 0, 4]);
            let listen =
                modern("hog", "subscriptions/listen", json!({ "notifications": { "toolsListChanged": true } }));
            let mut headers = base_headers();
            headers.insert("mcp-protocol-version", HeaderValue::from_static(MODERN));
            headers.insert("mcp-method", HeaderValue::from_static("subscriptions/listen"));
            let mut held = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                attacks.fetch_add(1, Ordering::SeqCst);
                let opened = client.post(&url).headers(headers.clone()).body(listen.to_string()).send().await;
                match opened {
                    Ok(response) if response.status() == StatusCode::OK => held.push(response),
                    _ => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        }));
    }
    // Task flooders from 127.0.0.3: tasks that never end, past their quota.
    for flooder in 0..2u64 {
        let (url, stop, attacks) = (http.url.clone(), stop.clone(), attacks.clone());
        hostile.push(tokio::spawn(async move {
            let client = client_from([127, 0, 0, 3]);
            let mut round = 0u64;
            while !stop.load(Ordering::SeqCst) {
                attacks.fetch_add(1, Ordering::SeqCst);
                round += 1;
                let body = task_call(flooder * 1_000_000 + round).to_string();
                let _ = client.post(&url).headers(modern_call_headers("held_task")).body(body).send().await;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }));
    }
    // Wide bodies from 127.0.0.5 (made before the peak is measured).
    for _ in 0..2 {
        let (url, stop, attacks, wide) = (http.url.clone(), stop.clone(), attacks.clone(), wide.clone());
        hostile.push(tokio::spawn(async move {
            let client = client_from([127, 0, 0, 5]);
            while !stop.load(Ordering::SeqCst) {
                attacks.fetch_add(1, Ordering::SeqCst);
                let _ = client.post(&url).headers(modern_call_headers("echo")).body(wide.clone()).send().await;
            }
        }));
    }
    // Garbage bodies, duplicate headers, sessions opened and abandoned mid-question.
    for kind in 0..6 {
        let (url, stop, attacks) = (http.url.clone(), stop.clone(), attacks.clone());
        hostile.push(tokio::spawn(async move {
            let client = client_from([127, 0, 0, 6]);
            let mut round = 0u64;
            while !stop.load(Ordering::SeqCst) {
                attacks.fetch_add(1, Ordering::SeqCst);
                round += 1;
                match kind % 3 {
                    0 => {
                        let _ = client.post(&url).headers(base_headers()).body("{\"jsonrpc\":").send().await;
                    }
                    1 => {
                        let mut headers = modern_call_headers("echo");
                        headers.append("mcp-name", HeaderValue::from_static("fail"));
                        let body = modern(round, "tools/call", json!({ "name": "echo", "arguments": { "text": "x" } }));
                        let _ = client.post(&url).headers(headers).body(body.to_string()).send().await;
                    }
                    _ => {
                        // Opens a session, asks, and hangs up; errors (a closed session) are fine.
                        let opened = client
                            .post(&url)
                            .headers(base_headers())
                            .body(initialize(0, LEGACY, json!({ "elicitation": {} })).to_string())
                            .send()
                            .await;
                        if let Some(session) = opened.ok().and_then(|r| r.headers().get(SESSION).cloned()) {
                            let mut headers = base_headers();
                            headers.insert("mcp-protocol-version", HeaderValue::from_static(LEGACY));
                            headers.insert(SESSION, session);
                            let body = request(round, "tools/call", json!({ "name": "wait_for_client" }));
                            let _ = client.post(&url).headers(headers).body(body.to_string()).send().await;
                        }
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    let honest: Vec<_> = (0..HONEST)
        .map(|client| {
            let url = http.url.clone();
            tokio::spawn(async move {
                let pooled = reqwest::Client::builder().pool_idle_timeout(Duration::from_millis(250)).build().unwrap();
                let http = Http { url, address: "127.0.0.1:1".parse().unwrap(), client: pooled };
                let (mut lost, mut wrong) = (Vec::new(), 0);
                for call in 0..CALLS {
                    let id = (client * 1000 + call) as u64;
                    let text = format!("client {client} call {call}");
                    match tokio::time::timeout(PATIENCE, http.echo(id, &text)).await {
                        Ok(Ok(echoed)) if echoed == format!("echo: {text}") => {}
                        Ok(Ok(_)) => wrong += 1,
                        Ok(Err(error)) => lost.push(error),
                        Err(_) => lost.push("no answer in time".to_owned()),
                    }
                }
                // One task each: the flooders' quota is theirs, not this client's.
                let id = (client * 1000 + CALLS) as u64;
                let started = http
                    .client
                    .post(&http.url)
                    .headers(modern_call_headers("held_task"))
                    .body(task_call(id).to_string());
                match tokio::time::timeout(PATIENCE, started.send()).await {
                    Ok(Ok(response)) => match response.json::<Value>().await {
                        Ok(body) if body["result"]["resultType"] == "task" && body["id"] == id => {}
                        Ok(body) => lost.push(format!("task refused: {body}")),
                        Err(error) => lost.push(error_chain(&error)),
                    },
                    Ok(Err(error)) => lost.push(error_chain(&error)),
                    Err(_) => lost.push("no task in time".to_owned()),
                }
                (lost, wrong)
            })
        })
        .collect();
    let (mut lost, mut wrong) = (Vec::new(), 0);
    for client in honest {
        let (l, w) = client.await.unwrap();
        lost.extend(l);
        wrong += w;
    }
    stop.store(true, Ordering::SeqCst);
    for task in hostile {
        task.abort();
    }
    let attacks = attacks.load(Ordering::SeqCst);
    let peak = peak_kib();
    println!(
        "honest clients: {} calls and {HONEST} tasks, {} lost, {wrong} answered wrongly, beside {attacks} hostile \
         connections and requests; RSS {} MiB, peak +{} MiB",
        HONEST * CALLS,
        lost.len(),
        before / MIB,
        peak.saturating_sub(before) / MIB
    );
    assert!(attacks > 1000, "the hostile clients barely ran ({attacks})");
    assert!(lost.is_empty() && wrong == 0, "honest calls lost ({lost:?}) or mismatched ({wrong})");
    // Two decoded wide bodies alone would take over 500 MiB.
    assert!(peak.saturating_sub(before) < 200 * MIB, "the peak grew from {before} to {peak} KiB");
}
