//! Drives the `ours` and `rmcp` servers (sibling binaries) with the same `tools/call add` load and
//! prints one markdown table per measurement with ours/rmcp ratios from the same run.
//!
//! Each cell starts a fresh server child: Streamable HTTP (2026-07-28 stateless requests, or
//! 2025-11-25 sessions opened with `initialize`) and stdio (the same two eras) at 1, 16 and 64
//! concurrent clients (HTTP) or requests in flight (stdio, one pipe). Every answer is checked
//! (its id and the sum); anything else counts as an error. Server CPU comes from
//! `/proc/<pid>/stat` (utime + stime) over the measured seconds, peak RSS from `VmHWM`.
//!
//! ```text
//! driver [--seconds 5] [--warmup 1] [--clients 1,16,64] [--sessions 10000] [--session-clients 16]
//!        [--cells http-modern,http-legacy,stdio-modern,stdio-legacy,sessions]
//! ```

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
/// An answer slower than this counts as an error (and the load goes on).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sdk {
    Ours,
    Rmcp,
}

impl Sdk {
    fn binary(self) -> PathBuf {
        let dir = std::env::current_exe().expect("own path").parent().expect("a directory").to_owned();
        dir.join(match self {
            Sdk::Ours => "ours",
            Sdk::Rmcp => "rmcp",
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Era {
    Modern,
    Legacy,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Transport {
    Http,
    Stdio,
}

struct Args {
    seconds: f64,
    warmup: f64,
    clients: Vec<usize>,
    sessions: usize,
    session_clients: usize,
    cells: Vec<String>,
}

fn args() -> Args {
    let mut args = Args {
        seconds: 5.0,
        warmup: 1.0,
        clients: vec![1, 16, 64],
        sessions: 10_000,
        session_clients: 16,
        cells: ["http-modern", "http-legacy", "stdio-modern", "stdio-legacy", "sessions"].map(String::from).to_vec(),
    };
    let given: Vec<String> = std::env::args().skip(1).collect();
    let mut given = given.iter();
    while let Some(flag) = given.next() {
        let value = given.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        let list = || value.split(',').map(str::trim).filter(|s| !s.is_empty());
        match flag.as_str() {
            "--seconds" => args.seconds = value.parse().expect("--seconds: a number"),
            "--warmup" => args.warmup = value.parse().expect("--warmup: a number"),
            "--clients" => args.clients = list().map(|c| c.parse().expect("--clients: numbers")).collect(),
            "--sessions" => args.sessions = value.parse().expect("--sessions: a number"),
            "--session-clients" => args.session_clients = value.parse().expect("--session-clients: a number"),
            "--cells" => args.cells = list().map(String::from).collect(),
            _ => panic!("unknown flag {flag}; see the top of benches/peer/src/bin/driver.rs"),
        }
    }
    args
}

// ------------------------------------------------------------------ the server process

struct Server {
    child: Child,
    pid: u32,
}

impl Server {
    fn command(sdk: Sdk, transport: Transport, max_sessions: Option<usize>) -> Command {
        let mut command = Command::new(sdk.binary());
        command.arg(match transport {
            Transport::Http => "http",
            Transport::Stdio => "stdio",
        });
        if let (Sdk::Ours, Some(max)) = (sdk, max_sessions) {
            command.args(["--max-sessions", &max.to_string()]);
        }
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).kill_on_drop(true);
        command
    }

    /// Starts an HTTP server and reads the URL it prints.
    async fn http(sdk: Sdk, max_sessions: Option<usize>) -> (Server, String) {
        let mut child = Self::command(sdk, Transport::Http, max_sessions).spawn().expect("start the server");
        let stdout = child.stdout.take().expect("piped");
        let mut url = String::new();
        BufReader::new(stdout).read_line(&mut url).await.expect("the server prints its URL");
        let pid = child.id().expect("running");
        (Server { child, pid }, url.trim().to_owned())
    }

    /// Seconds of CPU (user + system) the server has used so far.
    fn cpu_seconds(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).expect("/proc/<pid>/stat");
        // The fields after the command name (which may hold spaces) start with the state (field 3).
        let fields: Vec<&str> = stat[stat.rfind(')').expect("a command name") + 2..].split(' ').collect();
        let ticks: u64 = fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
        // SAFETY: sysconf has no preconditions.
        let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        ticks as f64 / per_second
    }

    /// A `Vm*` line of `/proc/<pid>/status`, in bytes.
    fn memory(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).expect("/proc/<pid>/status");
        let line = status.lines().find(|l| l.starts_with(field)).expect("a Vm line");
        line[field.len()..].trim().trim_end_matches("kB").trim().parse::<u64>().expect("kB") * 1024
    }

    async fn stop(mut self) {
        drop(self.child.stdin.take());
        if tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
    }
}

// ------------------------------------------------------------------ requests and answers

fn call_body(era: Era, id: i64) -> String {
    let (a, b) = (id, id % 1000);
    let meta = match era {
        Era::Modern => format!(
            r#""_meta":{{"io.modelcontextprotocol/protocolVersion":"{MODERN}","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"peer-bench","version":"1"}}}},"#
        ),
        Era::Legacy => String::new(),
    };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{{meta}"name":"add","arguments":{{"a":{a},"b":{b}}}}}}}"#
    )
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"peer-bench","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// Whether `answer` is the right response to `call_body(_, id)`.
fn check(id: i64, answer: &Value) -> Result<(), String> {
    let sum = (id + id % 1000).to_string();
    if answer["id"].as_i64() != Some(id) {
        return Err(format!("wrong id (wanted {id}): {answer}"));
    }
    if answer["result"]["content"][0]["text"].as_str() != Some(&sum) {
        return Err(format!("wrong answer (wanted {sum}): {answer}"));
    }
    Ok(())
}

/// The JSON-RPC response in an HTTP body: plain JSON, or the first SSE event that has an id.
fn response_in(body: &[u8], sse: bool) -> Result<Value, String> {
    if !sse {
        return serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"));
    }
    let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("id").is_some())
        .ok_or_else(|| format!("no response in the event stream: {text:?}"))
}

struct Http {
    client: reqwest::Client,
    url: String,
}

impl Http {
    fn new(url: String) -> Http {
        let client = reqwest::Client::builder().pool_max_idle_per_host(usize::MAX).build().expect("an HTTP client");
        Http { client, url }
    }

    async fn post(
        &self,
        body: String,
        headers: &[(&str, &str)],
    ) -> Result<(reqwest::StatusCode, Option<String>, Value), String> {
        let mut request = self
            .client
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = tokio::time::timeout(REQUEST_TIMEOUT, request.body(body).send())
            .await
            .map_err(|_| "timed out".to_owned())?
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let session = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let bytes = response.bytes().await.map_err(|e| e.to_string())?;
        if bytes.is_empty() {
            return Ok((status, session, Value::Null));
        }
        Ok((status, session, response_in(&bytes, sse)?))
    }

    /// One `tools/call add`, checked.
    async fn call(&self, era: Era, session: Option<&str>, id: i64) -> Result<(), String> {
        let (status, _, answer) = match era {
            Era::Modern => {
                let headers = [("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"), ("Mcp-Name", "add")];
                self.post(call_body(era, id), &headers).await?
            }
            Era::Legacy => {
                let session = session.expect("a legacy call has a session");
                let headers = [("MCP-Protocol-Version", LEGACY), ("Mcp-Session-Id", session)];
                self.post(call_body(era, id), &headers).await?
            }
        };
        if !status.is_success() {
            return Err(format!("HTTP {status}: {answer}"));
        }
        check(id, &answer)
    }

    /// Opens a legacy session: `initialize`, then `notifications/initialized`.
    async fn open_session(&self) -> Result<String, String> {
        let (status, session, answer) = self.post(INITIALIZE.to_owned(), &[]).await?;
        let Some(session) = session.filter(|_| status.is_success()) else {
            return Err(format!("initialize: HTTP {status} without a session: {answer}"));
        };
        if answer["result"]["protocolVersion"].as_str() != Some(LEGACY) {
            return Err(format!("initialize: {answer}"));
        }
        let headers = [("MCP-Protocol-Version", LEGACY), ("Mcp-Session-Id", session.as_str())];
        let (status, _, _) = self.post(INITIALIZED.to_owned(), &headers).await?;
        if !status.is_success() {
            return Err(format!("notifications/initialized: HTTP {status}"));
        }
        Ok(session)
    }
}

/// One stdio server with requests matched to answers by id; writes are batched by one task.
struct Pipe {
    lines: mpsc::Sender<String>,
    waiting: Arc<Mutex<HashMap<i64, oneshot::Sender<Value>>>>,
}

impl Pipe {
    fn start(sdk: Sdk) -> (Server, Arc<Pipe>) {
        let mut child = Server::command(sdk, Transport::Stdio, None).spawn().expect("start the server");
        let pid = child.id().expect("running");
        let mut stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let waiting: Arc<Mutex<HashMap<i64, oneshot::Sender<Value>>>> = Default::default();
        let readers = Arc::clone(&waiting);
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
                let Some(id) = message.get("id").and_then(Value::as_i64) else { continue };
                if let Some(waiter) = readers.lock().expect("lock").remove(&id) {
                    let _ = waiter.send(message);
                }
            }
        });
        let (lines, mut outbox) = mpsc::channel::<String>(1024);
        tokio::spawn(async move {
            let mut batch = Vec::new();
            while let Some(line) = outbox.recv().await {
                batch.clear();
                batch.extend_from_slice(line.as_bytes());
                batch.push(b'\n');
                while let Ok(line) = outbox.try_recv() {
                    batch.extend_from_slice(line.as_bytes());
                    batch.push(b'\n');
                }
                if stdin.write_all(&batch).await.is_err() || stdin.flush().await.is_err() {
                    return;
                }
            }
        });
        // The server's stdin closes when `lines` (the writer task's inbox) is dropped.
        (Server { child, pid }, Arc::new(Pipe { lines, waiting }))
    }

    async fn ask(&self, id: i64, line: String) -> Result<Value, String> {
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().expect("lock").insert(id, tx);
        self.lines.send(line).await.map_err(|_| "the server's stdin is closed".to_owned())?;
        match tokio::time::timeout(REQUEST_TIMEOUT, rx).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err("the server closed stdout".to_owned()),
            Err(_) => {
                self.waiting.lock().expect("lock").remove(&id);
                Err("timed out".to_owned())
            }
        }
    }

    async fn call(&self, era: Era, id: i64) -> Result<(), String> {
        let answer = self.ask(id, call_body(era, id)).await?;
        check(id, &answer)
    }

    async fn initialize(&self) -> Result<(), String> {
        let answer = self.ask(0, INITIALIZE.to_owned()).await?;
        if answer["result"]["protocolVersion"].as_str() != Some(LEGACY) {
            return Err(format!("initialize: {answer}"));
        }
        self.lines.send(INITIALIZED.to_owned()).await.map_err(|_| "stdin closed".to_owned())
    }
}

// ------------------------------------------------------------------ load

#[derive(Default)]
struct Load {
    ok: usize,
    errors: usize,
    first_error: Option<String>,
    latencies_us: Vec<u32>,
    elapsed: Duration,
}

impl Load {
    fn rate(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&self, p: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return f64::NAN;
        }
        let index = ((self.latencies_us.len() as f64 * p).ceil() as usize).clamp(1, self.latencies_us.len()) - 1;
        self.latencies_us[index] as f64
    }
}

/// Runs `clients` loops of `request(client, id)` for `duration`.
async fn load<F, Fut>(clients: usize, duration: Duration, ids: &Arc<AtomicI64>, request: F) -> Load
where
    F: Fn(usize, i64) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    let start = Instant::now();
    let end = start + duration;
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            let (request, ids) = (request.clone(), Arc::clone(ids));
            tokio::spawn(async move {
                let mut load = Load::default();
                while Instant::now() < end {
                    let sent = Instant::now();
                    match request(client, ids.fetch_add(1, Ordering::Relaxed)).await {
                        Ok(()) => {
                            load.ok += 1;
                            load.latencies_us.push(sent.elapsed().as_micros().min(u32::MAX as u128) as u32);
                        }
                        Err(error) => {
                            load.errors += 1;
                            load.first_error.get_or_insert(error);
                        }
                    }
                }
                load
            })
        })
        .collect();
    let mut total = Load::default();
    for task in tasks {
        let part = task.await.expect("a load task");
        total.ok += part.ok;
        total.errors += part.errors;
        total.first_error = total.first_error.or(part.first_error);
        total.latencies_us.extend(part.latencies_us);
    }
    total.elapsed = start.elapsed();
    total.latencies_us.sort_unstable();
    total
}

struct Cell {
    load: Load,
    cpu_us_per_request: f64,
    peak_rss: u64,
}

/// Warm-up, then the measured seconds with the server's CPU read on either side.
async fn measure<F, Fut>(server: &Server, clients: usize, args: &Args, request: F) -> Cell
where
    F: Fn(usize, i64) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    let ids = Arc::new(AtomicI64::new(1));
    load(clients, Duration::from_secs_f64(args.warmup), &ids, request.clone()).await;
    let cpu = server.cpu_seconds();
    let load = load(clients, Duration::from_secs_f64(args.seconds), &ids, request).await;
    let cpu = server.cpu_seconds() - cpu;
    Cell { cpu_us_per_request: cpu * 1e6 / load.ok.max(1) as f64, peak_rss: server.memory("VmHWM:"), load }
}

async fn http_cell(sdk: Sdk, era: Era, clients: usize, args: &Args) -> Cell {
    let (server, url) = Server::http(sdk, None).await;
    let http = Arc::new(Http::new(url));
    let mut sessions = Vec::new();
    if era == Era::Legacy {
        for _ in 0..clients {
            sessions.push(http.open_session().await.unwrap_or_else(|e| panic!("{sdk:?}: {e}")));
        }
    }
    let sessions = Arc::new(sessions);
    let cell = measure(&server, clients, args, move |client, id| {
        let (http, sessions) = (Arc::clone(&http), Arc::clone(&sessions));
        async move { http.call(era, sessions.get(client).map(String::as_str), id).await }
    })
    .await;
    server.stop().await;
    cell
}

async fn stdio_cell(sdk: Sdk, era: Era, clients: usize, args: &Args) -> Cell {
    let (server, pipe) = Pipe::start(sdk);
    if era == Era::Legacy {
        pipe.initialize().await.unwrap_or_else(|e| panic!("{sdk:?}: {e}"));
    }
    let requests = Arc::clone(&pipe);
    let cell = measure(&server, clients, args, move |_, id| {
        let pipe = Arc::clone(&requests);
        async move { pipe.call(era, id).await }
    })
    .await;
    drop(pipe);
    server.stop().await;
    cell
}

struct Sessions {
    opened: usize,
    errors: usize,
    first_error: Option<String>,
    elapsed: Duration,
    first_tenth_rate: f64,
    last_tenth_rate: f64,
    rss_delta: i64,
    peak_rss: u64,
    alive: usize,
    sampled: usize,
}

/// Opens `args.sessions` legacy sessions from `args.session_clients` clients and holds them.
async fn sessions_cell(sdk: Sdk, args: &Args) -> Sessions {
    // One more than the sessions opened: the warm-up session must not be evicted.
    let (server, url) = Server::http(sdk, Some(args.sessions + 1)).await;
    let http = Arc::new(Http::new(url));
    // A first session warms up the server's code paths before the baseline RSS is read.
    let warm = http.open_session().await.unwrap_or_else(|e| panic!("{sdk:?}: {e}"));
    let rss = server.memory("VmRSS:");
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = (0..args.session_clients)
        .map(|_| {
            let (http, next, total) = (Arc::clone(&http), Arc::clone(&next), args.sessions);
            tokio::spawn(async move {
                let (mut opened, mut errors) = (Vec::new(), Vec::new());
                while next.fetch_add(1, Ordering::Relaxed) < total {
                    match http.open_session().await {
                        Ok(session) => opened.push((Instant::now(), session)),
                        Err(error) => errors.push(error),
                    }
                }
                (opened, errors)
            })
        })
        .collect();
    let (mut opened, mut errors) = (Vec::new(), Vec::new());
    for task in tasks {
        let (o, e) = task.await.expect("a session task");
        opened.extend(o);
        errors.extend(e);
    }
    let elapsed = start.elapsed();
    let rss_delta = server.memory("VmRSS:") as i64 - rss as i64;
    opened.sort_by_key(|(at, _)| *at);
    let tenth = (opened.len() / 10).max(1);
    let rate = |from: Instant, to: Instant| tenth as f64 / to.duration_since(from).as_secs_f64().max(1e-9);
    let (first_tenth_rate, last_tenth_rate) = if opened.len() >= 10 {
        (rate(start, opened[tenth - 1].0), rate(opened[opened.len() - tenth - 1].0, opened[opened.len() - 1].0))
    } else {
        (f64::NAN, f64::NAN)
    };
    // Every session is still usable: the earliest ones too (nothing was evicted).
    let step = (opened.len() / 100).max(1);
    let sample: Vec<&str> = opened.iter().step_by(step).map(|(_, s)| s.as_str()).chain([warm.as_str()]).collect();
    let mut alive = 0;
    for (i, session) in sample.iter().enumerate() {
        if http.call(Era::Legacy, Some(session), 1_000_000 + i as i64).await.is_ok() {
            alive += 1;
        }
    }
    let result = Sessions {
        opened: opened.len(),
        errors: errors.len(),
        first_error: errors.into_iter().next(),
        elapsed,
        first_tenth_rate,
        last_tenth_rate,
        rss_delta,
        peak_rss: server.memory("VmHWM:"),
        alive,
        sampled: sample.len(),
    };
    server.stop().await;
    result
}

// ------------------------------------------------------------------ report

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn ratio(ours: f64, rmcp: f64) -> String {
    if rmcp > 0.0 && ours.is_finite() && rmcp.is_finite() { format!("{:.2}×", ours / rmcp) } else { "–".into() }
}

#[tokio::main]
async fn main() {
    let args = args();
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!(
        "peer benchmark: `add` on mcp-server (ours) and rmcp 3.11.0, {} s per cell after {} s warm-up, {cpus} CPUs; \
         client and server share the machine.\n",
        args.seconds, args.warmup
    );
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for (name, transport, era) in [
        ("http-modern", Transport::Http, Era::Modern),
        ("http-legacy", Transport::Http, Era::Legacy),
        ("stdio-modern", Transport::Stdio, Era::Modern),
        ("stdio-legacy", Transport::Stdio, Era::Legacy),
    ] {
        if !args.cells.iter().any(|c| c == name) {
            continue;
        }
        for &clients in &args.clients {
            let mut cells = Vec::new();
            // The two SDKs run back to back, so that they see the same machine.
            for sdk in [Sdk::Ours, Sdk::Rmcp] {
                let cell = match transport {
                    Transport::Http => http_cell(sdk, era, clients, &args).await,
                    Transport::Stdio => stdio_cell(sdk, era, clients, &args).await,
                };
                if let Some(error) = &cell.load.first_error {
                    notes.push(format!("{name} ×{clients} {sdk:?}: {} errors, first: {error}", cell.load.errors));
                }
                eprintln!("{name} x{clients} {sdk:?}: {:.0} req/s, {} errors", cell.load.rate(), cell.load.errors);
                cells.push(cell);
            }
            rows.push((name, clients, cells));
        }
    }
    if !rows.is_empty() {
        println!(
            "| cell | clients | ours req/s | rmcp req/s | ours/rmcp | ours p50 µs | rmcp p50 µs | ours p99 µs | rmcp p99 µs | p99 ours/rmcp \
             | ours CPU µs/req | rmcp CPU µs/req | CPU ours/rmcp | ours peak RSS | rmcp peak RSS | errors ours/rmcp |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (name, clients, cells) in &rows {
            let (o, r) = (&cells[0], &cells[1]);
            println!(
                "| {name} | {clients} | {:.0} | {:.0} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {:.1} | {:.1} | {} | {} | {} | {}/{} |",
                o.load.rate(),
                r.load.rate(),
                ratio(o.load.rate(), r.load.rate()),
                o.load.percentile(0.50),
                r.load.percentile(0.50),
                o.load.percentile(0.99),
                r.load.percentile(0.99),
                ratio(o.load.percentile(0.99), r.load.percentile(0.99)),
                o.cpu_us_per_request,
                r.cpu_us_per_request,
                ratio(o.cpu_us_per_request, r.cpu_us_per_request),
                mib(o.peak_rss),
                mib(r.peak_rss),
                o.load.errors,
                r.load.errors,
            );
        }
    }
    if args.cells.iter().any(|c| c == "sessions") {
        let mut results = Vec::new();
        for sdk in [Sdk::Ours, Sdk::Rmcp] {
            let result = sessions_cell(sdk, &args).await;
            if let Some(error) = &result.first_error {
                notes.push(format!("sessions {sdk:?}: {} errors, first: {error}", result.errors));
            }
            eprintln!("sessions {sdk:?}: {} opened in {:.2?}", result.opened, result.elapsed);
            results.push((sdk, result));
        }
        println!(
            "\nLegacy sessions (2025-11-25 `initialize` + `notifications/initialized`), {} opened by {} clients and held open:\n",
            args.sessions, args.session_clients
        );
        println!(
            "| server | opened | sessions/s | first 10 % /s | last 10 % /s | RSS growth | bytes/session | peak RSS | still usable (sample) | errors |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (sdk, s) in &results {
            println!(
                "| {sdk:?} | {} | {:.0} | {:.0} | {:.0} | {} | {:.0} | {} | {}/{} | {} |",
                s.opened,
                s.opened as f64 / s.elapsed.as_secs_f64(),
                s.first_tenth_rate,
                s.last_tenth_rate,
                mib(s.rss_delta.max(0) as u64),
                s.rss_delta as f64 / s.opened.max(1) as f64,
                mib(s.peak_rss),
                s.alive,
                s.sampled,
                s.errors,
            );
        }
        let (o, r) = (&results[0].1, &results[1].1);
        println!(
            "| ours/rmcp | | {} | {} | {} | | {} | {} | | |",
            ratio(o.opened as f64 / o.elapsed.as_secs_f64(), r.opened as f64 / r.elapsed.as_secs_f64()),
            ratio(o.first_tenth_rate, r.first_tenth_rate),
            ratio(o.last_tenth_rate, r.last_tenth_rate),
            ratio(o.rss_delta as f64 / o.opened.max(1) as f64, r.rss_delta as f64 / r.opened.max(1) as f64),
            ratio(o.peak_rss as f64, r.peak_rss as f64),
        );
    }
    if !notes.is_empty() {
        println!("\nErrors:");
        for note in notes {
            println!("- {note}");
        }
    }
}
