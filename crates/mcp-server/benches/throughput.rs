//! Load test of `tools/call`: requests per second and p50/p99 latency at 1, 16 and 64 concurrent
//! clients, over Streamable HTTP on loopback and over stdio (a child process), each next to a
//! baseline measured in the same run: a bare axum route returning a fixed JSON body (HTTP), and a
//! child that echoes lines (stdio). The ratio column is MCP / baseline throughput.
//!
//! Then, over the in-memory connection (`Connection::memory()`, what stdio serves through), a
//! tool that waits once before answering next to the same tool answering at once (baseline):
//! what a handler that waits for anything costs beyond one that does not.
//!
//! Then the cost of a task (the tasks extension) over HTTP: a `tools/call` that becomes a task
//! plus `tasks/get` until it is completed (polled back to back, without the `pollIntervalMs` a
//! real client waits), next to a plain `tools/call` of the same tool by a client that did not
//! declare the extension.
//!
//! ```text
//! cargo bench -p mcp-server --bench throughput            # 3 s per level
//! MCP_BENCH_SECS=10 cargo bench -p mcp-server --bench throughput
//! ```
//! Client and server share the machine, so the figures are for comparing, not for capacity.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use mcp_server::http::HttpConfig;
use std::sync::atomic::AtomicUsize;

use mcp_server::{Connection, Context, Error, Server, TaskSupport, ToolRoute};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::sync::{Mutex, oneshot};

const LEVELS: [usize; 3] = [1, 16, 64];

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

fn server() -> Server {
    Server::builder("bench", "1.0.0")
        .tool(ToolRoute::new(
            "add",
            |_: Context, Add { a, b }: Add| async move { Ok::<_, Error>(format!("{}", a + b)) },
        ))
        // Waits once, so that a call declaring the tasks extension becomes a task.
        .tool(
            ToolRoute::new("add_later", |_: Context, Add { a, b }: Add| async move {
                tokio::task::yield_now().await;
                Ok::<_, Error>(format!("{}", a + b))
            })
            .task_support(TaskSupport::Optional),
        )
        .build()
        .expect("valid server")
}

fn call(id: i64) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": { "name": "bench", "version": "1" }
            },
            "name": "add", "arguments": { "a": 2, "b": 3 }
        }
    })
}

/// A modern request to `method` with `params` (given `_meta` declaring `capabilities`).
fn modern(id: i64, method: &str, mut params: Value, capabilities: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// POSTs a modern request with its headers; returns the `result`.
async fn post_modern(client: &reqwest::Client, url: &str, name: &str, body: &Value) -> Value {
    let response = client
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", body["method"].as_str().expect("a method"))
        .header("Mcp-Name", name)
        .json(body)
        .send()
        .await
        .expect("request");
    assert!(response.status().is_success(), "status {}", response.status());
    let mut body: Value = response.json().await.expect("a JSON body");
    body["result"].take()
}

/// Tasks over HTTP: (clients, task round trips, plain calls of the same tool), and how many
/// `tasks/get` a round trip took on average.
async fn task_levels(secs: f64) -> (Vec<(usize, Stats, Stats)>, f64) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    tokio::spawn(mcp_server::http::serve(listener, server(), HttpConfig::default()));
    let client = reqwest::Client::new();
    let arguments = json!({ "name": "add_later", "arguments": { "a": 2, "b": 3 } });
    let tasks = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    let (round_trips, gets) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let task = {
        let (client, url, arguments, tasks) = (client.clone(), url.clone(), arguments.clone(), tasks.clone());
        let (round_trips, gets) = (Arc::clone(&round_trips), Arc::clone(&gets));
        move |id: i64| {
            let (client, url, arguments, tasks) = (client.clone(), url.clone(), arguments.clone(), tasks.clone());
            let (round_trips, gets) = (Arc::clone(&round_trips), Arc::clone(&gets));
            async move {
                let created =
                    post_modern(&client, &url, "add_later", &modern(id, "tools/call", arguments, tasks.clone())).await;
                assert_eq!(created["resultType"], "task", "{created}");
                let task_id = created["taskId"].as_str().expect("a task id").to_owned();
                loop {
                    let get = modern(id, "tasks/get", json!({ "taskId": task_id }), tasks.clone());
                    let state = post_modern(&client, &url, &task_id, &get).await;
                    gets.fetch_add(1, Ordering::Relaxed);
                    if state["status"] == "completed" {
                        assert_eq!(state["result"]["content"][0]["text"], "5");
                        break;
                    }
                }
                round_trips.fetch_add(1, Ordering::Relaxed);
            }
        }
    };
    let plain = move |id: i64| {
        let (client, url, arguments) = (client.clone(), url.clone(), arguments.clone());
        async move {
            let result = post_modern(&client, &url, "add_later", &modern(id, "tools/call", arguments, json!({}))).await;
            assert_eq!(result["content"][0]["text"], "5", "{result}");
        }
    };
    let mut rows = Vec::new();
    for clients in [1, 16] {
        let with_tasks = load(clients, secs, task.clone()).await;
        let without = load(clients, secs, plain.clone()).await;
        rows.push((clients, with_tasks, without));
    }
    let per_round_trip = gets.load(Ordering::Relaxed) as f64 / round_trips.load(Ordering::Relaxed).max(1) as f64;
    (rows, per_round_trip)
}

struct Stats {
    requests: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
}

impl Stats {
    fn rate(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&mut self, p: f64) -> Duration {
        self.latencies.sort_unstable();
        let index = ((self.latencies.len() as f64 * p).ceil() as usize).clamp(1, self.latencies.len()) - 1;
        self.latencies[index]
    }
}

/// Runs `clients` loops of `request` for `secs` (after a one-second warm-up).
async fn load<F, Fut>(clients: usize, secs: f64, request: F) -> Stats
where
    F: Fn(i64) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let ids = Arc::new(AtomicI64::new(1));
    let run = |duration: Duration| {
        let tasks: Vec<_> = (0..clients)
            .map(|_| {
                let request = request.clone();
                let ids = Arc::clone(&ids);
                tokio::spawn(async move {
                    let mut latencies = Vec::new();
                    let end = Instant::now() + duration;
                    while Instant::now() < end {
                        let start = Instant::now();
                        request(ids.fetch_add(1, Ordering::Relaxed)).await;
                        latencies.push(start.elapsed());
                    }
                    latencies
                })
            })
            .collect();
        async move {
            let start = Instant::now();
            let mut latencies = Vec::new();
            for task in tasks {
                latencies.extend(task.await.expect("load task"));
            }
            Stats { requests: latencies.len(), elapsed: start.elapsed(), latencies }
        }
    };
    run(Duration::from_secs(1)).await;
    run(Duration::from_secs_f64(secs)).await
}

async fn http_levels(secs: f64) -> Vec<(usize, Stats, Stats)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    tokio::spawn(mcp_server::http::serve(listener, server(), HttpConfig::default()));
    let baseline = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let baseline_url = format!("http://{}/mcp", baseline.local_addr().expect("address"));
    let fixed = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"5"}],"resultType":"complete"}}"#;
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(move |_: axum::body::Bytes| async move {
            ([(axum::http::header::CONTENT_TYPE, "application/json")], fixed)
        }),
    );
    tokio::spawn(async move { axum::serve(baseline, app).await });

    let client = reqwest::Client::new();
    let post = |client: reqwest::Client, url: String| {
        move |id: i64| {
            let request = client
                .post(url.clone())
                .header("Accept", "application/json, text/event-stream")
                .header("MCP-Protocol-Version", "2026-07-28")
                .header("Mcp-Method", "tools/call")
                .header("Mcp-Name", "add")
                .json(&call(id))
                .send();
            async move {
                let response = request.await.expect("request");
                assert!(response.status().is_success(), "status {}", response.status());
                response.bytes().await.expect("body");
            }
        }
    };
    let mut rows = Vec::new();
    for clients in LEVELS {
        let mcp = load(clients, secs, post(client.clone(), url.clone())).await;
        let base = load(clients, secs, post(client.clone(), baseline_url.clone())).await;
        rows.push((clients, mcp, base));
    }
    rows
}

/// A child process speaking newline-delimited JSON, with responses matched to requests by id.
struct Child {
    stdin: Mutex<tokio::process::ChildStdin>,
    waiting: Arc<std::sync::Mutex<HashMap<i64, oneshot::Sender<()>>>>,
    _process: tokio::process::Child,
}

impl Child {
    fn spawn(mode: &str) -> Arc<Child> {
        let mut process = tokio::process::Command::new(std::env::current_exe().expect("own path"))
            .arg(mode)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the bench itself as the stdio peer");
        let stdout = process.stdout.take().expect("piped");
        let waiting: Arc<std::sync::Mutex<HashMap<i64, oneshot::Sender<()>>>> = Default::default();
        let readers = Arc::clone(&waiting);
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let id = serde_json::from_str::<Value>(&line).ok().and_then(|v| v["id"].as_i64());
                if let Some(waiter) = id.and_then(|id| readers.lock().expect("lock").remove(&id)) {
                    let _ = waiter.send(());
                }
            }
        });
        Arc::new(Child { stdin: Mutex::new(process.stdin.take().expect("piped")), waiting, _process: process })
    }

    async fn request(&self, id: i64) {
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().expect("lock").insert(id, tx);
        let mut line = call(id).to_string();
        line.push('\n');
        {
            let mut stdin = self.stdin.lock().await;
            stdin.write_all(line.as_bytes()).await.expect("write");
            stdin.flush().await.expect("flush");
        }
        rx.await.expect("the child answers");
    }
}

async fn stdio_levels(secs: f64) -> Vec<(usize, Stats, Stats)> {
    let mcp = Child::spawn("--stdio-server");
    let echo = Child::spawn("--stdio-echo");
    let mut rows = Vec::new();
    for clients in LEVELS {
        let m = Arc::clone(&mcp);
        let stats = load(clients, secs, move |id| {
            let m = Arc::clone(&m);
            async move { m.request(id).await }
        })
        .await;
        let e = Arc::clone(&echo);
        let base = load(clients, secs, move |id| {
            let e = Arc::clone(&e);
            async move { e.request(id).await }
        })
        .await;
        rows.push((clients, stats, base));
    }
    rows
}

/// `clients` callers, each on a connection of its own, calling `tool` one call after another for
/// `secs` (after a one-second warm-up).
async fn memory_load(server: &Server, clients: usize, secs: f64, tool: &'static str) -> Stats {
    let free = Arc::new(std::sync::Mutex::new(Vec::new()));
    for _ in 0..clients {
        let (serving, client) = Connection::memory();
        let server = server.clone();
        tokio::spawn(async move { server.serve(serving).await });
        free.lock().expect("not poisoned").push(client);
    }
    load(clients, secs, move |id| {
        let free = Arc::clone(&free);
        async move {
            // As many connections as callers: one is always free.
            let mut client = free.lock().expect("not poisoned").pop().expect("a free connection");
            let call = modern(id, "tools/call", json!({ "name": tool, "arguments": { "a": 2, "b": 3 } }), json!({}));
            client.sender.send(call.to_string()).await.expect("the server reads");
            let answer = client.receiver.recv().await.expect("the server answers");
            assert!(answer.contains(r#""text":"5""#), "{answer}");
            free.lock().expect("not poisoned").push(client);
        }
    })
    .await
}

async fn memory_levels(secs: f64) -> Vec<(usize, Stats, Stats)> {
    let server = server();
    let mut rows = Vec::new();
    for clients in [1, 16] {
        let waiting = memory_load(&server, clients, secs, "add_later").await;
        let at_once = memory_load(&server, clients, secs, "add").await;
        rows.push((clients, waiting, at_once));
    }
    rows
}

fn print(title: &str, rows: Vec<(usize, Stats, Stats)>) {
    println!("\n{title}");
    println!("| clients | req/s | p50 | p99 | baseline req/s | baseline p50 | baseline p99 | ratio |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (clients, mut mcp, mut base) in rows {
        println!(
            "| {clients} | {:.0} | {:.0} µs | {:.0} µs | {:.0} | {:.0} µs | {:.0} µs | {:.2} |",
            mcp.rate(),
            mcp.percentile(0.50).as_secs_f64() * 1e6,
            mcp.percentile(0.99).as_secs_f64() * 1e6,
            base.rate(),
            base.percentile(0.50).as_secs_f64() * 1e6,
            base.percentile(0.99).as_secs_f64() * 1e6,
            mcp.rate() / base.rate(),
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    if args.iter().any(|a| a == "--stdio-server") {
        runtime.block_on(mcp_server::stdio::serve_stdio(server())).expect("stdio server");
        return;
    }
    if args.iter().any(|a| a == "--stdio-echo") {
        // Baseline: read a request line, answer with a fixed response carrying its id.
        runtime.block_on(async {
            let mut lines = BufReader::new(tokio::io::stdin()).lines();
            let mut stdout = tokio::io::stdout();
            while let Ok(Some(line)) = lines.next_line().await {
                let id = serde_json::from_str::<Value>(&line).map(|v| v["id"].clone()).unwrap_or_default();
                let reply = json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":"5"}]}});
                let _ = stdout.write_all(format!("{reply}\n").as_bytes()).await;
                let _ = stdout.flush().await;
            }
        });
        return;
    }
    // `cargo test --benches` runs this with `--test`-like flags; only `--bench` means measure.
    if !args.iter().any(|a| a == "--bench") {
        return;
    }
    let secs: f64 = std::env::var("MCP_BENCH_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let http = runtime.block_on(http_levels(secs));
    print("Streamable HTTP (loopback, JSON responses): tools/call", http);
    let stdio = runtime.block_on(stdio_levels(secs));
    print("stdio (child process): tools/call", stdio);
    let memory = runtime.block_on(memory_levels(secs));
    print(
        "in-memory connection: tools/call of a tool that waits once vs the same tool answering at once (baseline)",
        memory,
    );
    let (tasks, gets) = runtime.block_on(task_levels(secs));
    print(
        "Streamable HTTP: a task round trip (tools/call -> CreateTaskResult, tasks/get until completed; req/s = \
         round trips/s) vs a plain tools/call of the same tool (baseline)",
        tasks,
    );
    println!("tasks/get per round trip: {gets:.2}");
}
