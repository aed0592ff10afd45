//! Load test of `tools/call`: requests per second and p50/p99 latency at 1, 16 and 64 concurrent
//! clients, over Streamable HTTP on loopback and over stdio (a child process), each next to a
//! baseline measured in the same run: a bare axum route returning a fixed JSON body (HTTP), and a
//! child that echoes lines (stdio). The ratio column is MCP / baseline throughput.
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
use mcp_server::{Context, Error, Server, ToolRoute};
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

fn print(transport: &str, rows: Vec<(usize, Stats, Stats)>) {
    println!("\n{transport}: tools/call");
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
    print("Streamable HTTP (loopback, JSON responses)", http);
    let stdio = runtime.block_on(stdio_levels(secs));
    print("stdio (child process)", stdio);
}
