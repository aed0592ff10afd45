//! Drives the `ours` and `rmcp` servers (sibling binaries) with the same `tools/call add` load and
//! prints one markdown table per measurement with ours/rmcp ratios from the same run.
//!
//! Each cell starts a fresh server child: Streamable HTTP (2026-07-28 stateless requests, or
//! 2025-11-25 sessions opened with `initialize`) and stdio (the same two eras) at 1, 16 and 64
//! concurrent clients (HTTP) or requests in flight (stdio, one pipe). Every answer is checked
//! (its id and the sum); anything else counts as an error. Server CPU comes from
//! `/proc/<pid>/stat` (utime + stime) over the measured seconds, peak RSS from `VmHWM`; the
//! client's own CPU per request is reported beside it.
//!
//! With `--rounds N` every cell runs N times, the SDKs back to back in each round; the table shows
//! each SDK's median round and the ratio of every round. `--floor true` adds `floor`
//! (`src/bin/floor.rs`), a server with no SDK and no runtime: what this machine allows at all; and
//! the runtime floor (`floor --runtime`), the same answers on tokio and hyper alone.
//!
//! `http-modern-auth` and `http-legacy-auth` are ours only: the same calls on `ours http` open and
//! on `ours http --auth` (a JWT-protected endpoint, every request with `Authorization: Bearer`),
//! back to back in each round; their own table gives the protected − open server CPU per request.
//!
//! ```text
//! driver [--seconds 5] [--warmup 1] [--clients 1,16,64] [--sessions 10000] [--session-clients 16]
//!        [--cells http-modern,http-legacy,stdio-modern,stdio-legacy,sessions,http-modern-auth,http-legacy-auth]
//!        [--rounds 1] [--floor false] [--http-client raw|blocking|reqwest] [--realistic-clients 50]
//!        [--gateway-eras modern,legacy] [--peer-gateway mcp-proxy|none] [--results DIR]
//! ```
//!
//! `gateway` (run only when named) calls `ours` directly and through mcp-gateway, the proxy
//! floor and (unless `--peer-gateway none`) mcp-proxy 0.6.0, in each era of `--gateway-eras`;
//! mcp-proxy is installed on first use by `cargo install --locked` into `<target>/peers`.
//!
//! `--results DIR` also writes the run into `DIR/RESULTS.md` (a new section first: machine, load,
//! commit, every table printed) with two SVG charts drawn here (requests per second and p99 per
//! cell) in `DIR/charts/`; `run.sh` passes its own directory.
//!
//! `realistic` (run only when named) is shaped like the public cross-language MCP server
//! benchmarks: `--realistic-clients` legacy HTTP sessions, the server pinned to one CPU, calls
//! spread evenly over three tools (`record` on a real Redis the driver starts, `fibonacci`, a
//! 100 KiB `blob`; `src/workload.rs`), every answer checked.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use peer_bench::{report, workload};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, Command};

/// Everything the driver prints on stdout, kept for `--results`.
static PRINTED: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());
/// The bars of the charts `--results` draws.
static CHART_ROWS: std::sync::Mutex<Vec<report::ChartRow>> = std::sync::Mutex::new(Vec::new());

/// `println!`, kept for `--results`.
macro_rules! out {
    () => { out!("") };
    ($($arg:tt)*) => {{
        let line = format!($($arg)*);
        println!("{line}");
        let mut printed = PRINTED.lock().expect("not poisoned");
        printed.push_str(&line);
        printed.push('\n');
    }};
}

/// `print!`, kept for `--results`.
macro_rules! out_part {
    ($($arg:tt)*) => {{
        let part = format!($($arg)*);
        print!("{part}");
        PRINTED.lock().expect("not poisoned").push_str(&part);
    }};
}

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
/// An answer slower than this counts as an error (and the load goes on).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sdk {
    Ours,
    Rmcp,
    /// `src/bin/floor.rs`: no SDK at all, the yardstick of `--floor`.
    Floor,
    /// `floor --runtime`: the same answers on tokio and hyper alone, the stack both SDKs use.
    RuntimeFloor,
}

impl Sdk {
    fn label(self) -> &'static str {
        match self {
            Sdk::Ours => "ours",
            Sdk::Rmcp => "rmcp",
            Sdk::Floor => "floor",
            Sdk::RuntimeFloor => "runtime floor",
        }
    }

    fn binary(self) -> PathBuf {
        let dir = std::env::current_exe().expect("own path").parent().expect("a directory").to_owned();
        dir.join(match self {
            Sdk::Ours => "ours",
            Sdk::Rmcp => "rmcp",
            Sdk::Floor | Sdk::RuntimeFloor => "floor",
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
    http_client: HttpClient,
    floor: bool,
    rounds: usize,
    /// Clients of the `realistic` cell.
    realistic_clients: usize,
    /// The tools the `realistic` cell calls, in turn (default: all three).
    realistic_tools: Vec<String>,
    /// Where `RESULTS.md` and `charts/` are written (`--results DIR`), if anywhere.
    results: Option<PathBuf>,
    /// The eras the `gateway` cell runs in (`--gateway-eras`, default both).
    gateway_eras: Vec<Era>,
    /// Whether the `gateway` cell also runs mcp-proxy 0.6.0 (`--peer-gateway mcp-proxy`, the
    /// default; `none` leaves it out).
    peer_gateway: bool,
}

/// How the HTTP cells send their calls: `raw` (default) writes and reads HTTP/1.1 by hand on one
/// keep-alive connection per client, a task each on the driver's runtime; `blocking` does the same
/// on a thread per client; `reqwest` goes through reqwest, as figures before 2026-11-25 did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum HttpClient {
    Raw,
    Blocking,
    Reqwest,
}

fn args() -> Args {
    let mut args = Args {
        seconds: 5.0,
        warmup: 1.0,
        clients: vec![1, 16, 64],
        sessions: 10_000,
        session_clients: 16,
        cells: ["http-modern", "http-legacy", "stdio-modern", "stdio-legacy", "sessions"].map(String::from).to_vec(),
        http_client: HttpClient::Raw,
        floor: false,
        rounds: 1,
        realistic_clients: 50,
        realistic_tools: ["record", "fibonacci", "blob"].map(String::from).to_vec(),
        results: None,
        gateway_eras: vec![Era::Modern, Era::Legacy],
        peer_gateway: true,
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
            "--rounds" => args.rounds = value.parse::<usize>().expect("--rounds: a number").max(1),
            "--floor" => args.floor = value.parse().expect("--floor: true or false"),
            "--results" => args.results = Some(PathBuf::from(value)),
            "--realistic-tools" => args.realistic_tools = list().map(String::from).collect(),
            "--realistic-clients" => args.realistic_clients = value.parse().expect("--realistic-clients: a number"),
            "--gateway-eras" => {
                args.gateway_eras = list()
                    .map(|era| match era {
                        "modern" => Era::Modern,
                        "legacy" => Era::Legacy,
                        _ => panic!("--gateway-eras: modern, legacy or both"),
                    })
                    .collect()
            }
            "--peer-gateway" => {
                args.peer_gateway = match value.as_str() {
                    "mcp-proxy" => true,
                    "none" => false,
                    _ => panic!("--peer-gateway: mcp-proxy or none"),
                }
            }
            "--http-client" => {
                args.http_client = match value.as_str() {
                    "raw" => HttpClient::Raw,
                    "blocking" => HttpClient::Blocking,
                    "reqwest" => HttpClient::Reqwest,
                    _ => panic!("--http-client: raw, blocking or reqwest"),
                }
            }
            _ => panic!("unknown flag {flag}; see the top of benches/peer/src/bin/driver.rs"),
        }
    }
    args
}

// ------------------------------------------------------------------ the server process

struct Server {
    child: Child,
    pid: u32,
    /// Processes serving with it (a gateway's upstream), counted in its CPU and memory.
    helpers: Vec<u32>,
}

impl Server {
    fn command(sdk: Sdk, transport: Transport, max_sessions: Option<usize>, auth: bool) -> Command {
        let mut command = Command::new(sdk.binary());
        command.arg(match transport {
            Transport::Http => "http",
            Transport::Stdio => "stdio",
        });
        if sdk == Sdk::RuntimeFloor {
            command.arg("--runtime");
        }
        if let (Sdk::Ours, Some(max)) = (sdk, max_sessions) {
            command.args(["--max-sessions", &max.to_string()]);
        }
        if auth {
            assert_eq!(sdk, Sdk::Ours, "only ours serves a protected endpoint");
            command.arg("--auth");
        }
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).kill_on_drop(true);
        command
    }

    /// Starts an HTTP server and reads the URL it prints; with `auth` (`ours http --auth`), also
    /// the access token it prints next, as an `Authorization` value.
    async fn http(sdk: Sdk, max_sessions: Option<usize>, auth: bool) -> (Server, String, Option<String>) {
        let mut child = Self::command(sdk, Transport::Http, max_sessions, auth).spawn().expect("start the server");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut url = String::new();
        stdout.read_line(&mut url).await.expect("the server prints its URL");
        let authorization = if auth {
            let mut token = String::new();
            stdout.read_line(&mut token).await.expect("the server prints its token");
            assert!(!token.trim().is_empty(), "ours --auth printed no token");
            Some(format!("Bearer {}", token.trim()))
        } else {
            None
        };
        let pid = child.id().expect("running");
        (Server { child, pid, helpers: Vec::new() }, url.trim().to_owned(), authorization)
    }

    fn pids(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::once(self.pid).chain(self.helpers.iter().copied())
    }

    /// Seconds of CPU (user + system) the server (and its helpers) has used so far.
    fn cpu_seconds(&self) -> f64 {
        self.pids().map(cpu_seconds).sum()
    }

    /// Seconds the server's threads have run so far, to the nanosecond (see [`run_seconds`]).
    fn run_seconds(&self) -> f64 {
        self.pids().map(run_seconds).sum()
    }

    /// A `Vm*` line of `/proc/<pid>/status`, in bytes (summed over the helpers).
    fn memory(&self, field: &str) -> u64 {
        let one = |pid: u32| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/<pid>/status");
            let line = status.lines().find(|l| l.starts_with(field)).expect("a Vm line");
            line[field.len()..].trim().trim_end_matches("kB").trim().parse::<u64>().expect("kB") * 1024
        };
        self.pids().map(one).sum()
    }

    async fn stop(mut self) {
        drop(self.child.stdin.take());
        if tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
    }
}

/// Seconds of CPU (user + system) process `pid` has used so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid)).expect("/proc/<pid>/stat");
    // The fields after the command name (which may hold spaces) start with the state (field 3).
    let fields: Vec<&str> = stat[stat.rfind(')').expect("a command name") + 2..].split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks as f64 / per_second
}

/// Seconds process `pid`'s live threads have spent on a CPU: the sum of the first field of
/// `/proc/<pid>/task/*/schedstat` (the scheduler's own clock, in ns). utime + stime are charged a
/// whole tick (4 ms at 250 Hz) to whichever task a tick finds running, which at one request in
/// flight, with the CPUs idle between requests, is too coarse to tell a few µs per request
/// apart; this is exact. A thread that ends between two readings takes its time with it (the
/// HTTP servers keep theirs).
fn run_seconds(pid: u32) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return f64::NAN };
    let nanoseconds: u64 = tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split(' ').next()?.parse::<u64>().ok())
        .sum();
    nanoseconds as f64 / 1e9
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
    /// `Bearer <token>`, sent with every request to a protected server.
    authorization: Option<String>,
}

impl Http {
    fn new(url: String, authorization: Option<String>) -> Http {
        let client = reqwest::Client::builder().pool_max_idle_per_host(usize::MAX).build().expect("an HTTP client");
        Http { client, url, authorization }
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
        if let Some(authorization) = &self.authorization {
            request = request.header("Authorization", authorization);
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

/// One keep-alive HTTP/1.1 connection written and read by hand, as wrk does. On a machine the
/// client shares with the server, the client's own cost per request is part of every figure and
/// dilutes the ratio between the servers; a bare connection keeps that cost small and the same
/// for both. It reads `Content-Length` and chunked bodies and reconnects after `Connection: close`.
/// [`RawConnection::post`] runs on the driver's tokio runtime; [`RawConnection::post_blocking`]
/// on a thread of its own (`--http-client blocking`), which costs the client the least: a blocked
/// `read` woken by the kernel, no scheduler between the socket and the loop.
struct RawConnection {
    address: std::net::SocketAddr,
    path: String,
    stream: Option<tokio::net::TcpStream>,
    blocking: Option<std::net::TcpStream>,
    request: Vec<u8>,
    buffer: Vec<u8>,
}

struct RawResponse {
    status: u16,
    session: Option<String>,
    sse: bool,
    body: Vec<u8>,
}

impl RawConnection {
    fn new(url: &str) -> RawConnection {
        let rest = url.strip_prefix("http://").expect("an http:// URL");
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let address = authority.parse().expect("a loopback IP:port");
        RawConnection {
            address,
            path: path.to_owned(),
            stream: None,
            blocking: None,
            request: Vec::new(),
            buffer: Vec::new(),
        }
    }

    /// Writes the request into `self.request`.
    fn prepare(&mut self, body: &str, headers: &[(&str, &str)]) {
        use std::io::Write as _;
        let request = &mut self.request;
        request.clear();
        write!(
            request,
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.path,
            self.address,
            body.len()
        )
        .expect("a Vec");
        for (name, value) in headers {
            write!(request, "{name}: {value}\r\n").expect("a Vec");
        }
        request.extend_from_slice(b"\r\n");
        request.extend_from_slice(body.as_bytes());
    }

    /// The response at the start of the buffer, if it is whole; drops the connection after
    /// `Connection: close` or a response it cannot read.
    fn take_response(&mut self) -> Result<Option<RawResponse>, String> {
        match parse_response(&self.buffer) {
            Ok(Some((response, used, close))) => {
                self.buffer.drain(..used);
                if close {
                    self.disconnect();
                }
                Ok(Some(response))
            }
            Ok(None) => Ok(None),
            Err(error) => {
                self.disconnect();
                Err(error)
            }
        }
    }

    fn disconnect(&mut self) {
        (self.stream, self.blocking) = (None, None);
    }

    async fn post(&mut self, body: &str, headers: &[(&str, &str)]) -> Result<RawResponse, String> {
        use tokio::io::AsyncReadExt as _;
        self.prepare(body, headers);
        if self.stream.is_none() {
            let stream = tokio::net::TcpStream::connect(self.address).await.map_err(|e| format!("connect: {e}"))?;
            stream.set_nodelay(true).map_err(|e| e.to_string())?;
            self.stream = Some(stream);
            self.buffer.clear();
        }
        let stream = self.stream.as_mut().expect("connected above");
        if let Err(error) = stream.write_all(&self.request).await {
            self.disconnect();
            return Err(format!("write: {error}"));
        }
        loop {
            if let Some(response) = self.take_response()? {
                return Ok(response);
            }
            let stream = self.stream.as_mut().expect("still connected");
            self.buffer.reserve(4096);
            match stream.read_buf(&mut self.buffer).await {
                Ok(0) => {
                    self.disconnect();
                    return Err("the server closed the connection before answering".to_owned());
                }
                Ok(_) => {}
                Err(error) => {
                    self.disconnect();
                    return Err(format!("read: {error}"));
                }
            }
        }
    }

    fn post_blocking(&mut self, body: &str, headers: &[(&str, &str)]) -> Result<RawResponse, String> {
        use std::io::{Read as _, Write as _};
        self.prepare(body, headers);
        if self.blocking.is_none() {
            let stream = std::net::TcpStream::connect(self.address).map_err(|e| format!("connect: {e}"))?;
            stream.set_nodelay(true).map_err(|e| e.to_string())?;
            stream.set_read_timeout(Some(REQUEST_TIMEOUT)).map_err(|e| e.to_string())?;
            self.blocking = Some(stream);
            self.buffer.clear();
        }
        let stream = self.blocking.as_mut().expect("connected above");
        if let Err(error) = stream.write_all(&self.request) {
            self.disconnect();
            return Err(format!("write: {error}"));
        }
        let mut chunk = [0; 4096];
        loop {
            if let Some(response) = self.take_response()? {
                return Ok(response);
            }
            let stream = self.blocking.as_mut().expect("still connected");
            match stream.read(&mut chunk) {
                Ok(0) => {
                    self.disconnect();
                    return Err("the server closed the connection before answering".to_owned());
                }
                Ok(read) => self.buffer.extend_from_slice(&chunk[..read]),
                Err(error) => {
                    self.disconnect();
                    return Err(format!("read: {error}"));
                }
            }
        }
    }
}

/// A whole response at the start of `bytes`, the bytes it took and whether the server closes the
/// connection after it; `None` while it is incomplete.
fn parse_response(bytes: &[u8]) -> Result<Option<(RawResponse, usize, bool)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut head = httparse::Response::new(&mut headers);
    let head_length = match head.parse(bytes).map_err(|e| format!("bad response head: {e}"))? {
        httparse::Status::Complete(length) => length,
        httparse::Status::Partial => return Ok(None),
    };
    let (mut length, mut chunked, mut close, mut session, mut sse) = (None, false, false, None, false);
    for header in head.headers.iter() {
        let value = std::str::from_utf8(header.value).map_err(|e| e.to_string())?;
        match header.name.to_ascii_lowercase().as_str() {
            "content-length" => length = Some(value.trim().parse::<usize>().map_err(|e| e.to_string())?),
            "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
            "connection" => close = value.eq_ignore_ascii_case("close"),
            "mcp-session-id" => session = Some(value.to_owned()),
            "content-type" => sse = value.starts_with("text/event-stream"),
            _ => {}
        }
    }
    let status = head.code.expect("a complete head has a status");
    let rest = &bytes[head_length..];
    let (body, used) = if chunked {
        match dechunk(rest)? {
            Some((body, used)) => (body, used),
            None => return Ok(None),
        }
    } else {
        let length = length.unwrap_or(0);
        if rest.len() < length {
            return Ok(None);
        }
        (rest[..length].to_vec(), length)
    };
    Ok(Some((RawResponse { status, session, sse, body }, head_length + used, close)))
}

/// A chunked body at the start of `bytes` and the bytes it took (trailers are not expected).
fn dechunk(mut bytes: &[u8]) -> Result<Option<(Vec<u8>, usize)>, String> {
    let total = bytes.len();
    let mut body = Vec::new();
    loop {
        let Some(end) = bytes.windows(2).position(|w| w == b"\r\n") else { return Ok(None) };
        let size = std::str::from_utf8(&bytes[..end]).map_err(|e| e.to_string())?;
        let size = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|e| format!("bad chunk size {size:?}: {e}"))?;
        let data = &bytes[end + 2..];
        if data.len() < size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&data[..size]);
        bytes = &data[size + 2..];
        if size == 0 {
            return Ok(Some((body, total - bytes.len())));
        }
    }
}

/// One stdio server driven in a closed loop by a single task: `in_flight` requests are written,
/// and each answer read (and checked) is replaced by a new request, written together with the
/// others whose answers were already buffered. No channel or task stands between the pipe and
/// the bookkeeping, so the client's cost per request stays small and the same for both servers.
struct Pipe {
    stdin: tokio::process::ChildStdin,
    stdout: BufReader<tokio::process::ChildStdout>,
}

impl Pipe {
    fn start(sdk: Sdk) -> (Server, Pipe) {
        let mut child = Server::command(sdk, Transport::Stdio, None, false).spawn().expect("start the server");
        let pid = child.id().expect("running");
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        (Server { child, pid, helpers: Vec::new() }, Pipe { stdin, stdout })
    }

    /// The next message with an id, skipping notifications.
    async fn answer(&mut self, line: &mut String) -> Result<Value, String> {
        loop {
            line.clear();
            let read = tokio::time::timeout(REQUEST_TIMEOUT, self.stdout.read_line(line))
                .await
                .map_err(|_| format!("no answer within {REQUEST_TIMEOUT:?}"))?
                .map_err(|e| e.to_string())?;
            if read == 0 {
                return Err("the server closed stdout".to_owned());
            }
            let Ok(message) = serde_json::from_str::<Value>(line) else { continue };
            if message.get("id").is_some() {
                return Ok(message);
            }
        }
    }

    async fn initialize(&mut self) -> Result<(), String> {
        let mut line = String::new();
        self.stdin.write_all(format!("{INITIALIZE}\n").as_bytes()).await.map_err(|e| e.to_string())?;
        let answer = self.answer(&mut line).await?;
        if answer["result"]["protocolVersion"].as_str() != Some(LEGACY) {
            return Err(format!("initialize: {answer}"));
        }
        self.stdin.write_all(format!("{INITIALIZED}\n").as_bytes()).await.map_err(|e| e.to_string())
    }

    /// Keeps `in_flight` calls outstanding for `duration`, then waits for the last answers.
    async fn load(&mut self, era: Era, in_flight: usize, duration: Duration, ids: &AtomicI64) -> Load {
        let mut load = Load::default();
        let start = Instant::now();
        let end = start + duration;
        let mut sent: HashMap<i64, Instant> = HashMap::with_capacity(in_flight);
        let (mut batch, mut line) = (Vec::new(), String::new());
        let send = |batch: &mut Vec<u8>, sent: &mut HashMap<i64, Instant>| {
            let id = ids.fetch_add(1, Ordering::Relaxed);
            batch.extend_from_slice(call_body(era, id).as_bytes());
            batch.push(b'\n');
            sent.insert(id, Instant::now());
        };
        for _ in 0..in_flight {
            send(&mut batch, &mut sent);
        }
        while !sent.is_empty() {
            // Write what is ready once no whole answer is left in the buffer.
            if !batch.is_empty() && !self.stdout.buffer().contains(&b'\n') {
                if let Err(error) = self.stdin.write_all(&batch).await {
                    load.errors += sent.len();
                    load.first_error.get_or_insert(format!("write: {error}"));
                    break;
                }
                batch.clear();
            }
            let answer = match self.answer(&mut line).await {
                Ok(answer) => answer,
                Err(error) => {
                    load.errors += sent.len();
                    load.first_error.get_or_insert(error);
                    break;
                }
            };
            let Some((id, at)) = answer["id"].as_i64().and_then(|id| sent.remove_entry(&id)) else {
                load.errors += 1;
                load.first_error.get_or_insert(format!("an answer to no request in flight: {answer}"));
                continue;
            };
            match check(id, &answer) {
                Ok(()) => {
                    load.ok += 1;
                    load.latencies_us.push(at.elapsed().as_micros().min(u32::MAX as u128) as u32);
                }
                Err(error) => {
                    load.errors += 1;
                    load.first_error.get_or_insert(error);
                }
            }
            if Instant::now() < end {
                send(&mut batch, &mut sent);
            }
        }
        load.elapsed = start.elapsed();
        load.latencies_us.sort_unstable();
        load
    }
}

// ------------------------------------------------------------------ the realistic cell

/// A `redis-server` on a free loopback port, for the realistic cell; stopped when dropped.
struct Redis {
    _child: Child,
    url: String,
}

impl Redis {
    async fn start() -> Redis {
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("bound").port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server on the PATH (the realistic cell needs it)");
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return Redis { _child: child, url: format!("redis://127.0.0.1:{port}") };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("redis-server did not listen on {port}");
    }
}

/// The tool of the realistic cell's call `id`: `tools` in turn.
fn realistic_tool(tools: &[String], id: i64) -> &str {
    &tools[id as usize % tools.len()]
}

/// The body of the realistic cell's call `id` from `client`.
fn realistic_body(tools: &[String], prefix: &str, client: usize, id: i64) -> String {
    let tool = realistic_tool(tools, id);
    let arguments = match tool {
        "record" => format!(r#"{{"key":"{prefix}-{client}","value":{id}}}"#),
        "fibonacci" => format!(r#"{{"n":{}}}"#, workload::FIBONACCI_N),
        "blob" => format!(r#"{{"kib":{},"seed":{id}}}"#, workload::BLOB_KIB),
        other => panic!("--realistic-tools: no tool {other} (record, fibonacci, blob)"),
    };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
    )
}

/// Whether `answer` is the right response to [`realistic_body`]'s call `id`.
fn realistic_check(tools: &[String], id: i64, answer: &Value) -> Result<(), String> {
    if answer["id"].as_i64() != Some(id) {
        return Err(format!("wrong id (wanted {id}): {answer}"));
    }
    let Some(text) = answer["result"]["content"][0]["text"].as_str() else {
        return Err(format!("no text in the answer to {id}: {answer}"));
    };
    let right = match realistic_tool(tools, id) {
        "record" => serde_json::from_str::<workload::Record>(text)
            .is_ok_and(|record| record.count >= 1 && record.history.last() == Some(&id)),
        "fibonacci" => text == workload::FIBONACCI_ANSWER.to_string(),
        _ => text.len() == workload::BLOB_KIB as usize * 1024 && text.starts_with(&format!("{id}:")),
    };
    if right { Ok(()) } else { Err(format!("wrong answer to {id}: {:.200}", text)) }
}

/// One realistic call on a raw connection, checked.
async fn realistic_call(
    connection: &mut RawConnection,
    tools: &[String],
    prefix: &str,
    client: usize,
    session: &str,
    id: i64,
) -> Result<(), String> {
    let body = realistic_body(tools, prefix, client, id);
    let response = connection.post(&body, &call_headers(Era::Legacy, Some(session), None)).await?;
    let answer = response_in(&response.body, response.sse)?;
    if !(200..300).contains(&response.status) {
        return Err(format!("HTTP {}: {answer}", response.status));
    }
    realistic_check(tools, id, &answer)
}

/// What the realistic cell's callers share: a connection and a legacy session per client, and
/// each tool's latencies.
struct RealisticCalls {
    connections: Vec<tokio::sync::Mutex<RawConnection>>,
    sessions: Vec<String>,
    prefix: String,
    tools: Vec<String>,
    by_tool: std::sync::Mutex<Vec<Vec<u32>>>,
}

impl RealisticCalls {
    /// Call `id` from `client`, its latency kept under its tool when it succeeds.
    async fn call(&self, client: usize, id: i64) -> Result<(), String> {
        let mut connection = self.connections[client].lock().await;
        let sent = Instant::now();
        let outcome =
            realistic_call(&mut connection, &self.tools, &self.prefix, client, &self.sessions[client], id).await;
        if outcome.is_ok() {
            let micros = sent.elapsed().as_micros().min(u32::MAX as u128) as u32;
            self.by_tool.lock().expect("not poisoned")[id as usize % self.tools.len()].push(micros);
        }
        outcome
    }
}

/// The realistic cell on `sdk`: its HTTP server pinned to CPU 0, `--realistic-clients` legacy
/// sessions, the three tools in turn.
async fn realistic_cell(sdk: Sdk, redis: &Redis, round: usize, args: &Args) -> (Cell, Vec<Vec<u32>>) {
    let mut command = Server::command(sdk, Transport::Http, None, false);
    command.arg("--realistic").env(workload::REDIS_URL, &redis.url);
    // SAFETY: sched_setaffinity is async-signal-safe and touches only the child being started.
    unsafe {
        command.pre_exec(|| {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            match libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let mut child = command.spawn().expect("start the server");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut url = String::new();
    stdout.read_line(&mut url).await.expect("the server prints its URL");
    let url = url.trim().to_owned();
    let server = Server { pid: child.id().expect("running"), child, helpers: Vec::new() };
    let http = Http::new(url.clone(), None);
    let clients = args.realistic_clients;
    let mut sessions = Vec::new();
    for _ in 0..clients {
        sessions.push(http.open_session().await.unwrap_or_else(|e| panic!("{sdk:?}: {e}")));
    }
    let calls = Arc::new(RealisticCalls {
        connections: (0..clients).map(|_| tokio::sync::Mutex::new(RawConnection::new(&url))).collect(),
        sessions,
        prefix: format!("{sdk:?}-{round}-{}", std::process::id()),
        tools: args.realistic_tools.clone(),
        by_tool: std::sync::Mutex::new(vec![Vec::new(); args.realistic_tools.len()]),
    });
    let ids = Arc::new(AtomicI64::new(1));
    let cell = measure(&server, args, async |duration| {
        // Each tool's latencies of the measured run: the warm-up's are cleared when it ends.
        calls.by_tool.lock().expect("not poisoned").iter_mut().for_each(Vec::clear);
        let calls = Arc::clone(&calls);
        load(clients, duration, &ids, move |client, id| {
            let calls = Arc::clone(&calls);
            async move { calls.call(client, id).await }
        })
        .await
    })
    .await;
    server.stop().await;
    let mut by_tool = std::mem::take(&mut *calls.by_tool.lock().expect("not poisoned"));
    by_tool.iter_mut().for_each(|latencies| latencies.sort_unstable());
    (cell, by_tool)
}

/// Runs the realistic cell `--rounds` times on ours and rmcp, back to back, and prints its table.
async fn realistic_cells(args: &Args, notes: &mut Vec<String>) {
    let redis = Redis::start().await;
    let mut runs: [Vec<(Cell, Vec<Vec<u32>>)>; 2] = [Vec::new(), Vec::new()];
    for round in 0..args.rounds {
        for (sdk, runs) in [Sdk::Ours, Sdk::Rmcp].into_iter().zip(&mut runs) {
            let (cell, by_tool) = realistic_cell(sdk, &redis, round, args).await;
            if let Some(error) = &cell.load.first_error {
                notes.push(format!("realistic {sdk:?}: {} errors, first: {error}", cell.load.errors));
            }
            eprintln!(
                "realistic x{} {sdk:?}: {:.0} req/s, {} errors",
                args.realistic_clients,
                cell.load.rate(),
                cell.load.errors
            );
            runs.push((cell, by_tool));
        }
    }
    let per_round = |figure: fn(&Cell) -> f64| -> String {
        let ratios = runs[0].iter().zip(&runs[1]).map(|(o, r)| ratio(figure(&o.0), figure(&r.0)));
        ratios.collect::<Vec<_>>().join(" ")
    };
    let (rates, p99s) = (per_round(|c| c.load.rate()), per_round(|c| c.load.percentile(0.99)));
    let [(o, o_by_tool), (r, r_by_tool)] = runs.map(|runs| median_round(runs, |(cell, _)| cell.load.rate()));
    let label = format!("realistic ×{}", args.realistic_clients);
    let bars = [("ours", &o), ("rmcp", &r)].map(|(name, c)| (name, c.load.rate(), c.load.percentile(0.99)));
    CHART_ROWS.lock().expect("not poisoned").push(report::ChartRow { label, bars: bars.to_vec() });
    out!(
        "\nRealistic cell: {} legacy HTTP sessions, the server pinned to one CPU, calling {} in turn \
         (`record`: Redis GET + JSON + SET; `fibonacci({})`; `blob`: {} KiB):\n",
        args.realistic_clients,
        args.realistic_tools.join(", "),
        workload::FIBONACCI_N,
        workload::BLOB_KIB
    );
    out!("| server | req/s | p50 µs | p99 µs | CPU µs/req | peak RSS | errors |\n|---|---:|---:|---:|---:|---:|---:|");
    for (name, c) in [("ours", &o), ("rmcp", &r)] {
        out!(
            "| {name} | {:.0} | {:.0} | {:.0} | {:.1} | {} | {} |",
            c.load.rate(),
            c.load.percentile(0.50),
            c.load.percentile(0.99),
            c.cpu_us_per_request,
            mib(c.peak_rss),
            c.load.errors
        );
    }
    out!(
        "| ours/rmcp | {} | {} | {} | {} | {} | each round: req/s {rates}; p99 {p99s} |",
        ratio(o.load.rate(), r.load.rate()),
        ratio(o.load.percentile(0.50), r.load.percentile(0.50)),
        ratio(o.load.percentile(0.99), r.load.percentile(0.99)),
        ratio(o.cpu_us_per_request, r.cpu_us_per_request),
        ratio(o.peak_rss as f64, r.peak_rss as f64),
    );
    if args.realistic_tools.len() > 1 {
        out!("\nEach tool's latency in the same rounds:\n");
        out!("| tool | calls ours/rmcp | ours p50 µs | rmcp p50 µs | ours p99 µs | rmcp p99 µs | p99 ours/rmcp |");
        out!("|---|---:|---:|---:|---:|---:|---:|");
        for (tool, (o, r)) in args.realistic_tools.iter().zip(o_by_tool.iter().zip(&r_by_tool)) {
            let (o50, r50, o99, r99) =
                (percentile(o, 0.50), percentile(r, 0.50), percentile(o, 0.99), percentile(r, 0.99));
            out!(
                "| {tool} | {}/{} | {o50:.0} | {r50:.0} | {o99:.0} | {r99:.0} | {} |",
                o.len(),
                r.len(),
                ratio(o99, r99)
            );
        }
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
        percentile(&self.latencies_us, p)
    }
}

/// The `p` quantile of `sorted` (nearest rank), NaN when empty.
fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index] as f64
}

impl Load {
    /// Counts the outcome of a request sent at `sent`.
    fn record(&mut self, sent: Instant, outcome: Result<(), String>) {
        match outcome {
            Ok(()) => {
                self.ok += 1;
                self.latencies_us.push(sent.elapsed().as_micros().min(u32::MAX as u128) as u32);
            }
            Err(error) => {
                self.errors += 1;
                self.first_error.get_or_insert(error);
            }
        }
    }

    fn add(&mut self, part: Load) {
        self.ok += part.ok;
        self.errors += part.errors;
        self.first_error = self.first_error.take().or(part.first_error);
        self.latencies_us.extend(part.latencies_us);
    }
}

/// Runs `clients` loops of `request(client, id)` for `duration`, each on a thread of its own.
/// A request that gets no answer fails after [`REQUEST_TIMEOUT`] (the socket's read timeout).
fn load_blocking(
    clients: usize,
    duration: Duration,
    ids: &AtomicI64,
    request: impl Fn(usize, i64) -> Result<(), String> + Sync,
) -> Load {
    let start = Instant::now();
    let end = start + duration;
    let mut total = Load::default();
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..clients)
            .map(|client| {
                let request = &request;
                scope.spawn(move || {
                    let mut load = Load::default();
                    while Instant::now() < end {
                        let sent = Instant::now();
                        load.record(sent, request(client, ids.fetch_add(1, Ordering::Relaxed)));
                    }
                    load
                })
            })
            .collect();
        for thread in threads {
            total.add(thread.join().expect("a load thread"));
        }
    });
    total.elapsed = start.elapsed();
    total.latencies_us.sort_unstable();
    total
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
                    load.record(sent, request(client, ids.fetch_add(1, Ordering::Relaxed)).await);
                }
                load
            })
        })
        .collect();
    let mut total = Load::default();
    for task in tasks {
        // The raw HTTP client has no timer per request (it would cost the client a timer
        // registration each time); a client still waiting this long after the end is an error.
        let abort = task.abort_handle();
        let Ok(part) = tokio::time::timeout(duration + REQUEST_TIMEOUT, task).await else {
            abort.abort();
            total.errors += 1;
            total.first_error.get_or_insert(format!("a request got no answer within {REQUEST_TIMEOUT:?}"));
            continue;
        };
        total.add(part.expect("a load task"));
    }
    total.elapsed = start.elapsed();
    total.latencies_us.sort_unstable();
    total
}

struct Cell {
    load: Load,
    cpu_us_per_request: f64,
    /// The same from the scheduler's run time ([`run_seconds`]).
    run_us_per_request: f64,
    client_cpu_us_per_request: f64,
    peak_rss: u64,
}

/// Warm-up, then the measured seconds with the server's and the client's CPU read on either side.
async fn measure(server: &Server, args: &Args, mut run: impl AsyncFnMut(Duration) -> Load) -> Cell {
    run(Duration::from_secs_f64(args.warmup)).await;
    let (cpu, client_cpu, run_time) = (server.cpu_seconds(), cpu_seconds(std::process::id()), server.run_seconds());
    let load = run(Duration::from_secs_f64(args.seconds)).await;
    let answered = load.ok.max(1) as f64;
    Cell {
        cpu_us_per_request: (server.cpu_seconds() - cpu) * 1e6 / answered,
        run_us_per_request: (server.run_seconds() - run_time) * 1e6 / answered,
        client_cpu_us_per_request: (cpu_seconds(std::process::id()) - client_cpu) * 1e6 / answered,
        peak_rss: server.memory("VmHWM:"),
        load,
    }
}

/// `auth`: ours with a JWT-protected endpoint (`ours http --auth`), every request with its token.
async fn http_cell(sdk: Sdk, era: Era, clients: usize, args: &Args, auth: bool) -> Cell {
    let (server, url, authorization) = Server::http(sdk, None, auth).await;
    let http = Arc::new(Http::new(url.clone(), authorization.clone()));
    let authorization: Arc<Option<String>> = Arc::new(authorization);
    let mut sessions = Vec::new();
    if era == Era::Legacy {
        for _ in 0..clients {
            sessions.push(http.open_session().await.unwrap_or_else(|e| panic!("{sdk:?}: {e}")));
        }
    }
    let sessions = Arc::new(sessions);
    let ids = Arc::new(AtomicI64::new(1));
    let cell = match args.http_client {
        HttpClient::Raw => {
            let connections: Arc<Vec<_>> =
                Arc::new((0..clients).map(|_| tokio::sync::Mutex::new(RawConnection::new(&url))).collect());
            measure(&server, args, async |duration| {
                load(clients, duration, &ids, {
                    let (connections, sessions, authorization) =
                        (Arc::clone(&connections), Arc::clone(&sessions), Arc::clone(&authorization));
                    move |client, id| {
                        let (connections, sessions, authorization) =
                            (Arc::clone(&connections), Arc::clone(&sessions), Arc::clone(&authorization));
                        async move {
                            let mut connection = connections[client].lock().await;
                            let session = sessions.get(client).map(String::as_str);
                            raw_call(&mut connection, era, session, authorization.as_deref(), id).await
                        }
                    }
                })
                .await
            })
            .await
        }
        HttpClient::Blocking => {
            let connections: Vec<_> = (0..clients).map(|_| std::sync::Mutex::new(RawConnection::new(&url))).collect();
            measure(&server, args, async |duration| {
                tokio::task::block_in_place(|| {
                    load_blocking(clients, duration, &ids, |client, id| {
                        let mut connection = connections[client].lock().expect("one thread per connection");
                        let session = sessions.get(client).map(String::as_str);
                        blocking_call(&mut connection, era, session, authorization.as_deref(), id)
                    })
                })
            })
            .await
        }
        HttpClient::Reqwest => {
            measure(&server, args, async |duration| {
                load(clients, duration, &ids, {
                    let (http, sessions) = (Arc::clone(&http), Arc::clone(&sessions));
                    move |client, id| {
                        let (http, sessions) = (Arc::clone(&http), Arc::clone(&sessions));
                        async move { http.call(era, sessions.get(client).map(String::as_str), id).await }
                    }
                })
                .await
            })
            .await
        }
    };
    server.stop().await;
    cell
}

/// The headers of a `tools/call` in `era`, with `Authorization` when `authorization` is given.
fn call_headers<'a>(
    era: Era,
    session: Option<&'a str>,
    authorization: Option<&'a str>,
) -> Vec<(&'static str, &'a str)> {
    let mut headers = match era {
        Era::Modern => vec![("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"), ("Mcp-Name", "add")],
        Era::Legacy => {
            vec![("MCP-Protocol-Version", LEGACY), ("Mcp-Session-Id", session.expect("a legacy call has a session"))]
        }
    };
    if let Some(authorization) = authorization {
        headers.push(("Authorization", authorization));
    }
    headers
}

/// Whether `response` answers `call_body(era, id)` rightly.
fn check_response(response: RawResponse, era: Era, id: i64) -> Result<(), String> {
    let answer = response_in(&response.body, response.sse)?;
    if !(200..300).contains(&response.status) {
        return Err(format!("HTTP {}: {answer}", response.status));
    }
    debug_assert!(response.session.is_none() || era == Era::Legacy);
    check(id, &answer)
}

/// One `tools/call add` on a raw connection, checked.
async fn raw_call(
    connection: &mut RawConnection,
    era: Era,
    session: Option<&str>,
    authorization: Option<&str>,
    id: i64,
) -> Result<(), String> {
    let response = connection.post(&call_body(era, id), &call_headers(era, session, authorization)).await?;
    check_response(response, era, id)
}

/// [`raw_call`] on the calling thread.
fn blocking_call(
    connection: &mut RawConnection,
    era: Era,
    session: Option<&str>,
    authorization: Option<&str>,
    id: i64,
) -> Result<(), String> {
    let response = connection.post_blocking(&call_body(era, id), &call_headers(era, session, authorization))?;
    check_response(response, era, id)
}

async fn stdio_cell(sdk: Sdk, era: Era, in_flight: usize, args: &Args) -> Cell {
    let (server, mut pipe) = Pipe::start(sdk);
    if era == Era::Legacy {
        pipe.initialize().await.unwrap_or_else(|e| panic!("{sdk:?}: {e}"));
    }
    let ids = AtomicI64::new(1);
    let cell = measure(&server, args, async |duration| pipe.load(era, in_flight, duration, &ids).await).await;
    // The server's stdin closes with the pipe.
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
    let (server, url, _) = Server::http(sdk, Some(args.sessions + 1), false).await;
    let http = Arc::new(Http::new(url, None));
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

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// `http-modern-auth` and `http-legacy-auth`: ours open and ours JWT-protected (`--auth`, every
/// request with `Authorization: Bearer`), back to back in each round (which one goes first
/// alternates), and one table with the protected − open server CPU per request of every round.
async fn auth_cells(args: &Args, notes: &mut Vec<String>) {
    let mut rows = Vec::new();
    for (name, era) in [("http-modern-auth", Era::Modern), ("http-legacy-auth", Era::Legacy)] {
        if !args.cells.iter().any(|c| c == name) {
            continue;
        }
        for &clients in &args.clients {
            let (mut open, mut protected) = (Vec::new(), Vec::new());
            for round in 0..args.rounds {
                let order = if round % 2 == 0 { [false, true] } else { [true, false] };
                for auth in order {
                    let cell = http_cell(Sdk::Ours, era, clients, args, auth).await;
                    let label = if auth { "protected" } else { "open" };
                    if let Some(error) = &cell.load.first_error {
                        notes.push(format!(
                            "{name} ×{clients} ours {label}: {} errors, first: {error}",
                            cell.load.errors
                        ));
                    }
                    eprintln!(
                        "{name} x{clients} ours {label}: {:.0} req/s, server CPU {:.1} µs/req (run time), {:.1} (ticks), {} errors",
                        cell.load.rate(),
                        cell.run_us_per_request,
                        cell.cpu_us_per_request,
                        cell.load.errors
                    );
                    if auth { protected.push(cell) } else { open.push(cell) }
                }
            }
            rows.push((name, clients, open, protected));
        }
    }
    if rows.is_empty() {
        return;
    }
    out!(
        "\nJWT-protected requests (ours only): each cell open and with `--auth` (an ES256 access token, verified \
         once, then from the verified-token cache), back to back in each round; every figure is the median of \
         {} round(s); the difference is the median of the rounds' differences. Server CPU: the scheduler's run \
         time of the server's threads (`/proc/<pid>/task/*/schedstat`); \"ticks\": utime + stime, as the main \
         table.\n",
        args.rounds
    );
    out!(
        "| cell | clients | open req/s | protected req/s | protected/open | p50 µs open / protected \
         | p99 µs open / protected | server CPU µs/req open | server CPU µs/req protected \
         | protected − open server CPU µs/req | each round | same from ticks | client CPU µs/req open / protected | errors |"
    );
    out!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|");
    for (name, clients, open, protected) in &rows {
        let m = |cells: &Vec<Cell>, f: &dyn Fn(&Cell) -> f64| median(cells.iter().map(f).collect());
        let differences =
            |f: &dyn Fn(&Cell) -> f64| -> Vec<f64> { open.iter().zip(protected).map(|(o, p)| f(p) - f(o)).collect() };
        let rate = |c: &Cell| c.load.rate();
        let run = |c: &Cell| c.run_us_per_request;
        let each: Vec<String> = differences(&run).iter().map(|d| format!("{d:+.1}")).collect();
        let errors: usize = open.iter().chain(protected).map(|c| c.load.errors).sum();
        out!(
            "| {name} | {clients} | {:.0} | {:.0} | {} | {:.0} / {:.0} | {:.0} / {:.0} | {:.1} | {:.1} | {:+.1} | {} | {:+.1} | {:.1} / {:.1} | {errors} |",
            m(open, &rate),
            m(protected, &rate),
            ratio(m(protected, &rate), m(open, &rate)),
            m(open, &|c| c.load.percentile(0.50)),
            m(protected, &|c| c.load.percentile(0.50)),
            m(open, &|c| c.load.percentile(0.99)),
            m(protected, &|c| c.load.percentile(0.99)),
            m(open, &run),
            m(protected, &run),
            median(differences(&run)),
            each.join(" "),
            median(differences(&|c| c.cpu_us_per_request)),
            m(open, &|c| c.client_cpu_us_per_request),
            m(protected, &|c| c.client_cpu_us_per_request),
        );
    }
}

/// The round that stands for a front or an SDK: its median by requests per second.
fn median_round<T>(mut rounds: Vec<T>, rate: impl Fn(&T) -> f64) -> T {
    rounds.sort_by(|a, b| rate(a).total_cmp(&rate(b)));
    rounds.swap_remove(rounds.len() / 2)
}

// ------------------------------------------------------------------ the gateway cell

/// What stands in front of `ours` in the gateway cell, and how `ours` is reached.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Upstream {
    /// mcp-gateway (`src/bin/gateway.rs`) to `ours http`.
    Http,
    /// mcp-gateway to `ours stdio`, its child.
    Stdio,
    /// `floor proxy`: no gateway, the least any HTTP gateway does (a hyper hop, no JSON read).
    ProxyFloor,
    /// mcp-proxy 0.6.0 (`--peer-gateway mcp-proxy`) to `ours http`.
    PeerHttp,
    /// mcp-proxy 0.6.0 to `ours stdio`, its child.
    PeerStdio,
}

impl Upstream {
    /// The front and the upstream's transport, as the tables name them.
    fn label(self) -> (&'static str, &'static str) {
        match self {
            Upstream::Http => ("mcp-gateway", "HTTP"),
            Upstream::Stdio => ("mcp-gateway", "stdio"),
            Upstream::ProxyFloor => ("proxy floor", "HTTP"),
            Upstream::PeerHttp => ("mcp-proxy", "HTTP"),
            Upstream::PeerStdio => ("mcp-proxy", "stdio"),
        }
    }
}

/// The peer gateway's crate, version and features: the release the issue names, with its
/// default features (as `cargo install mcp-proxy` builds it) and the 2026-07-28 protocol, which
/// its default build leaves out (the legacy era is served either way).
const MCP_PROXY: (&str, &str, &str) = ("mcp-proxy", "0.6.0", "protocol-2026-07-28");

/// The mcp-proxy binary, installed on first use into `<target>/peers` (next to this driver's
/// target directory, so `cargo clean` removes it) by `cargo install --locked`; the process exits
/// with the reason when that fails.
fn mcp_proxy_binary() -> PathBuf {
    let release = std::env::current_exe().expect("own path").parent().expect("a directory").to_owned();
    let root = release.parent().expect("the target directory").join("peers");
    let (name, version, features) = MCP_PROXY;
    let binary = root.join("bin").join(name);
    let stamp = root.join(format!("{name}-{version}-{features}"));
    if binary.exists() && stamp.exists() {
        return binary;
    }
    eprintln!("installing {name} {version} (features: default, {features}) into {}", root.display());
    let build = root.join("build");
    let status = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .args(["install", name, "--version", version, "--locked", "--features", features, "--root"])
        .arg(&root)
        .arg("--target-dir")
        .arg(&build)
        .status();
    match status {
        Ok(status) if status.success() => {}
        Ok(status) => {
            eprintln!(
                "`cargo install {name} --version {version}` failed ({status}); run the gateway cell with \
                 `--peer-gateway none` to leave mcp-proxy out"
            );
            std::process::exit(1);
        }
        Err(error) => {
            eprintln!("cannot run cargo to install {name}: {error}; use `--peer-gateway none`");
            std::process::exit(1);
        }
    }
    let _ = std::fs::remove_dir_all(&build);
    std::fs::write(&stamp, "").expect("write the install stamp");
    binary
}

/// mcp-proxy in front of `ours` (its own HTTP process, or its stdio child), with the one
/// backend named `""` and no separator so that the tool keeps its name `add` (as mcp-gateway's
/// `prefix = ""` does), its log level `warn` (the gateway logs nothing) and no other option:
/// no middleware, no auth, no cache. It listens on a port the driver chose, and is ready when
/// the port takes a connection.
async fn mcp_proxy_server(upstream: Upstream, binary: &std::path::Path) -> (Server, Option<Server>, String) {
    let ours = Sdk::Ours.binary();
    let (upstream_server, backend) = match upstream {
        Upstream::PeerHttp => {
            let (server, url, _) = Server::http(Sdk::Ours, None, false).await;
            (Some(server), format!("transport = \"http\"\nurl = {url:?}\n"))
        }
        Upstream::PeerStdio => {
            (None, format!("transport = \"stdio\"\ncommand = {:?}\nargs = [\"stdio\"]\n", ours.display().to_string()))
        }
        _ => unreachable!("mcp-proxy serves PeerHttp and PeerStdio"),
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port();
    let config = format!(
        "[proxy]\nname = \"peer-bench\"\nseparator = \"\"\n\n[proxy.listen]\nhost = \"127.0.0.1\"\nport = {port}\n\n\
         [observability]\nlog_level = \"warn\"\n\n[[backends]]\nname = \"\"\n{backend}"
    );
    let path = std::env::temp_dir().join(format!("peer-bench-mcp-proxy-{}-{port}.toml", std::process::id()));
    std::fs::write(&path, config).expect("write mcp-proxy's configuration");
    let mut child = Command::new(binary)
        .arg("--config")
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|error| panic!("start {}: {error}", binary.display()));
    let started = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("mcp-proxy exited before it listened ({status}); its configuration: {}", path.display());
        }
        assert!(started.elapsed() < Duration::from_secs(30), "mcp-proxy did not listen on {port} within 30 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = std::fs::remove_file(&path);
    let pid = child.id().expect("running");
    let mut helpers: Vec<u32> = upstream_server.iter().map(|server| server.pid).collect();
    // A stdio upstream is mcp-proxy's child, started before it listened.
    helpers.extend(children(pid));
    (Server { child, pid, helpers }, upstream_server, format!("http://127.0.0.1:{port}/"))
}

/// `src/bin/gateway.rs` in front of `ours` (its own HTTP process, or its stdio child), or the
/// proxy floor in front of `ours http`, the upstream's CPU and memory counted with the front's;
/// the front's URL.
async fn gateway_server(upstream: Upstream) -> (Server, Option<Server>, String) {
    let ours = Sdk::Ours.binary();
    let (upstream_server, arguments) = match upstream {
        Upstream::Http | Upstream::ProxyFloor => {
            let (server, url, _) = Server::http(Sdk::Ours, None, false).await;
            let mode = if upstream == Upstream::Http { "http" } else { "proxy" };
            (Some(server), vec![mode.to_owned(), url])
        }
        Upstream::Stdio => (None, vec!["stdio".to_owned(), ours.display().to_string(), "stdio".to_owned()]),
        Upstream::PeerHttp | Upstream::PeerStdio => unreachable!("mcp_proxy_server starts mcp-proxy"),
    };
    let front = if upstream == Upstream::ProxyFloor { "floor" } else { "gateway" };
    let mut child = Command::new(ours.with_file_name(front))
        .args(&arguments)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|error| panic!("start {front}: {error}"));
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut url = String::new();
    stdout.read_line(&mut url).await.expect("the gateway prints its URL");
    let pid = child.id().expect("running");
    let mut helpers: Vec<u32> = upstream_server.iter().map(|server| server.pid).collect();
    // A stdio upstream is the gateway's child, started before it printed its URL.
    helpers.extend(children(pid));
    (Server { child, pid, helpers }, upstream_server, url.trim().to_owned())
}

/// The child processes of `pid`.
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("children")).ok())
        .flat_map(|list| list.split_whitespace().filter_map(|child| child.parse().ok()).collect::<Vec<u32>>())
        .collect()
}

/// `add` calls in `era` at `url` from `clients` raw keep-alive connections (legacy: each client
/// opens its session there first, outside the measured seconds).
async fn raw_cell(server: &Server, url: &str, era: Era, clients: usize, args: &Args) -> Cell {
    let mut sessions = Vec::new();
    if era == Era::Legacy {
        let http = Http::new(url.to_owned(), None);
        for _ in 0..clients {
            sessions.push(http.open_session().await.unwrap_or_else(|e| panic!("a session at {url}: {e}")));
        }
    }
    let sessions = Arc::new(sessions);
    let ids = Arc::new(AtomicI64::new(1));
    let connections: Arc<Vec<_>> =
        Arc::new((0..clients).map(|_| tokio::sync::Mutex::new(RawConnection::new(url))).collect());
    measure(server, args, async |duration| {
        load(clients, duration, &ids, {
            let (connections, sessions) = (Arc::clone(&connections), Arc::clone(&sessions));
            move |client, id| {
                let (connections, sessions) = (Arc::clone(&connections), Arc::clone(&sessions));
                async move {
                    let mut connection = connections[client].lock().await;
                    raw_call(&mut connection, era, sessions.get(client).map(String::as_str), None, id).await
                }
            }
        })
        .await
    })
    .await
}

/// The `gateway` cell, in each era of `--gateway-eras`: `ours` called directly, then through
/// mcp-gateway to it as an HTTP upstream and as a stdio one, then through the proxy floor to it
/// over HTTP, then (unless `--peer-gateway none`) through mcp-proxy 0.6.0 to it over HTTP and
/// over stdio, back to back in each round; the same `add` calls.
async fn gateway_cells(args: &Args, notes: &mut Vec<String>) {
    let peer = args.peer_gateway.then(mcp_proxy_binary);
    let mut fronts = vec![Upstream::Http, Upstream::Stdio, Upstream::ProxyFloor];
    if peer.is_some() {
        fronts.extend([Upstream::PeerHttp, Upstream::PeerStdio]);
    }
    let mut rows = Vec::new();
    for &era in &args.gateway_eras {
        for &clients in &args.clients {
            // runs[0]: direct; runs[1 + i]: through fronts[i].
            let mut runs: Vec<Vec<Cell>> = (0..=fronts.len()).map(|_| Vec::new()).collect();
            for _ in 0..args.rounds {
                runs[0].push(http_cell(Sdk::Ours, era, clients, args, false).await);
                for (at, &upstream) in fronts.iter().enumerate() {
                    let (front, upstream_server, url) = match (upstream, &peer) {
                        (Upstream::PeerHttp | Upstream::PeerStdio, Some(binary)) => {
                            mcp_proxy_server(upstream, binary).await
                        }
                        _ => gateway_server(upstream).await,
                    };
                    let cell = raw_cell(&front, &url, era, clients, args).await;
                    if matches!(upstream, Upstream::PeerHttp | Upstream::PeerStdio) {
                        // mcp-proxy does not read its stdin; it ends when killed (its stdio
                        // child then reads the end of its pipe and ends too).
                        let mut front = front;
                        let _ = front.child.start_kill();
                        front.stop().await;
                    } else {
                        front.stop().await;
                    }
                    if let Some(server) = upstream_server {
                        server.stop().await;
                    }
                    if let Some(error) = &cell.load.first_error {
                        let (name, transport) = upstream.label();
                        notes.push(format!(
                            "gateway {era:?} ({name}, {transport} upstream) ×{clients}: {} errors, first: {error}",
                            cell.load.errors
                        ));
                    }
                    runs[1 + at].push(cell);
                }
                let rates: Vec<String> = fronts
                    .iter()
                    .zip(&runs[1..])
                    .map(|(upstream, runs)| {
                        let (name, transport) = upstream.label();
                        format!("{name} {transport} {:.0}", runs.last().map_or(0.0, |c| c.load.rate()))
                    })
                    .collect();
                eprintln!(
                    "gateway {era:?} x{clients}: direct {:.0}, {} req/s",
                    runs[0].last().map_or(0.0, |c| c.load.rate()),
                    rates.join(", ")
                );
            }
            // Each front's rate over another's (or the direct one's), round by round.
            let each_round = |over: usize, under: usize| -> Vec<f64> {
                runs[over].iter().zip(&runs[under]).map(|(o, u)| o.load.rate() / u.load.rate()).collect()
            };
            let costs: Vec<Vec<f64>> = (1..runs.len()).map(|at| each_round(0, at)).collect();
            // mcp-gateway over mcp-proxy, the same upstream transport: runs 1/4 (HTTP), 2/5 (stdio).
            let peers: Vec<Vec<f64>> = if peer.is_some() { vec![each_round(1, 4), each_round(2, 5)] } else { vec![] };
            let cells: Vec<Cell> = runs.into_iter().map(|runs| median_round(runs, |cell| cell.load.rate())).collect();
            rows.push((era, clients, cells, costs, peers));
        }
    }
    let rounds = |values: &[f64]| values.iter().map(|v| format!("{v:.2}×")).collect::<Vec<_>>().join(" ");
    out!(
        "\nGateway cell: the same `add` calls to `ours` (2026-07-28 with no handshake, or 2025-11-25 in a \
         session each client opens at the front), directly and through mcp-gateway (its upstream `ours` over \
         HTTP, or over stdio as its child), through the proxy floor (`floor proxy`: hyper's server and client \
         on tokio passing each request and answer through unread, the least any HTTP gateway does){}; a \
         front's CPU and peak RSS count its upstream's. Cost is direct req/s ÷ front req/s (1.0: free); over \
         the proxy floor is proxy floor req/s ÷ front req/s.\n",
        if peer.is_some() {
            ", and through mcp-proxy 0.6.0 (crates.io, default features + `protocol-2026-07-28`, one backend, \
             no middleware) to `ours` over HTTP and over stdio"
        } else {
            ""
        }
    );
    out!(
        "| era | front | upstream | clients | direct req/s | front req/s | cost | direct p50 µs | front p50 µs \
         | p50 front/direct | direct p99 µs | front p99 µs | direct CPU µs/req | front+upstream CPU µs/req \
         | front+upstream peak RSS | errors | cost each round | over the proxy floor |"
    );
    out!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|");
    for (era, clients, cells, costs, _) in &rows {
        let (direct, proxy) = (&cells[0], &cells[3]);
        for ((upstream, cell), costs) in fronts.iter().zip(&cells[1..]).zip(costs) {
            let (name, transport) = upstream.label();
            out!(
                "| {} | {name} | {transport} | {clients} | {:.0} | {:.0} | {} | {:.0} | {:.0} | {} | {:.0} | {:.0} | {:.1} | {:.1} | {} | {} | {} | {} |",
                era_label(*era),
                direct.load.rate(),
                cell.load.rate(),
                ratio(direct.load.rate(), cell.load.rate()),
                direct.load.percentile(0.50),
                cell.load.percentile(0.50),
                ratio(cell.load.percentile(0.50), direct.load.percentile(0.50)),
                direct.load.percentile(0.99),
                cell.load.percentile(0.99),
                direct.cpu_us_per_request,
                cell.cpu_us_per_request,
                mib(cell.peak_rss),
                cell.load.errors,
                rounds(costs),
                ratio(proxy.load.rate(), cell.load.rate()),
            );
        }
    }
    if peer.is_some() {
        out!(
            "\nmcp-gateway against mcp-proxy 0.6.0, the same upstream `ours` over the same transport, each front's \
             median round (req/s: mcp-gateway ÷ mcp-proxy, higher is better for mcp-gateway; p50, p99, CPU and \
             RSS: mcp-gateway ÷ mcp-proxy, lower is better):\n"
        );
        out!(
            "| era | upstream | clients | mcp-gateway req/s | mcp-proxy req/s | req/s ratio | ratio each round \
             | median of rounds | p50 µs gateway/proxy | p99 µs gateway/proxy | CPU µs/req gateway/proxy \
             | peak RSS gateway/proxy |"
        );
        out!("|---|---|---:|---:|---:|---:|---|---:|---|---|---|---|");
        for (era, clients, cells, _, peers) in &rows {
            for ((transport, (ours, theirs)), each) in
                ["HTTP", "stdio"].iter().zip([(&cells[1], &cells[4]), (&cells[2], &cells[5])]).zip(peers)
            {
                out!(
                    "| {} | {transport} | {clients} | {:.0} | {:.0} | {} | {} | {:.2}× | {:.0}/{:.0} | {:.0}/{:.0} | {:.1}/{:.1} | {}/{} |",
                    era_label(*era),
                    ours.load.rate(),
                    theirs.load.rate(),
                    ratio(ours.load.rate(), theirs.load.rate()),
                    rounds(each),
                    median(each.clone()),
                    ours.load.percentile(0.50),
                    theirs.load.percentile(0.50),
                    ours.load.percentile(0.99),
                    theirs.load.percentile(0.99),
                    ours.cpu_us_per_request,
                    theirs.cpu_us_per_request,
                    mib(ours.peak_rss),
                    mib(theirs.peak_rss),
                );
            }
        }
    }
    // Charts: one group per era, client count and upstream transport.
    let mut charts = CHART_ROWS.lock().expect("not poisoned");
    for (era, clients, cells, _, _) in &rows {
        for transport in ["HTTP", "stdio"] {
            let mut bars = vec![("direct", cells[0].load.rate(), cells[0].load.percentile(0.99))];
            for (upstream, cell) in fronts.iter().zip(&cells[1..]) {
                let (name, upstream_transport) = upstream.label();
                if upstream_transport == transport {
                    bars.push((name, cell.load.rate(), cell.load.percentile(0.99)));
                }
            }
            let label = format!("gateway {} ×{clients}, {transport}", era_label(*era));
            charts.push(report::ChartRow { label, bars });
        }
    }
}

/// `modern` (2026-07-28) or `legacy` (2025-11-25), as `--gateway-eras` and the tables name them.
fn era_label(era: Era) -> &'static str {
    match era {
        Era::Modern => "modern",
        Era::Legacy => "legacy",
    }
}

#[tokio::main]
async fn main() {
    let args = args();
    // The commit the binaries were built from: read before the run, while the tree is as built.
    let commit = args.results.as_ref().map(|_| report::commit());
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    out!(
        "peer benchmark: mcp-server (ours) and rmcp 3.11.0, {} s per cell after {} s warm-up, {cpus} CPUs; \
         client and server share the machine; HTTP client: {:?}.\n",
        args.seconds,
        args.warmup,
        args.http_client
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
            let sdks: Vec<Sdk> = [Sdk::Ours, Sdk::Rmcp, Sdk::Floor, Sdk::RuntimeFloor]
                .into_iter()
                .filter(|&s| matches!(s, Sdk::Ours | Sdk::Rmcp) || args.floor)
                .collect();
            let mut runs: Vec<Vec<Cell>> = sdks.iter().map(|_| Vec::new()).collect();
            // The SDKs run back to back in each round, so that a pair sees the same machine.
            for _ in 0..args.rounds {
                for (sdk, runs) in sdks.iter().zip(&mut runs) {
                    let cell = match transport {
                        Transport::Http => http_cell(*sdk, era, clients, &args, false).await,
                        Transport::Stdio => stdio_cell(*sdk, era, clients, &args).await,
                    };
                    if let Some(error) = &cell.load.first_error {
                        notes.push(format!("{name} ×{clients} {sdk:?}: {} errors, first: {error}", cell.load.errors));
                    }
                    eprintln!("{name} x{clients} {sdk:?}: {:.0} req/s, {} errors", cell.load.rate(), cell.load.errors);
                    runs.push(cell);
                }
            }
            let per_round: Vec<String> =
                runs[0].iter().zip(&runs[1]).map(|(o, r)| ratio(o.load.rate(), r.load.rate())).collect();
            // Each SDK's median round by req/s stands for it.
            let cells: Vec<Cell> = runs.into_iter().map(|runs| median_round(runs, |cell| cell.load.rate())).collect();
            let label = format!("{name} ×{clients}");
            let bars = sdks.iter().zip(&cells).map(|(sdk, c)| (sdk.label(), c.load.rate(), c.load.percentile(0.99)));
            CHART_ROWS.lock().expect("not poisoned").push(report::ChartRow { label, bars: bars.collect() });
            rows.push((name, clients, cells, per_round.join(" ")));
        }
    }
    if !rows.is_empty() {
        out!(
            "| cell | clients | ours req/s | rmcp req/s | ours/rmcp | ours p50 µs | rmcp p50 µs | ours p99 µs | rmcp p99 µs | p99 ours/rmcp \
             | ours CPU µs/req | rmcp CPU µs/req | CPU ours/rmcp | client CPU µs/req with ours/rmcp \
             | ours peak RSS | rmcp peak RSS | errors ours/rmcp | ours/rmcp each round |{}",
            if args.floor {
                " floor req/s | floor/rmcp | floor CPU µs/req | ours/floor \
                 | runtime floor req/s | runtime floor/floor | runtime floor CPU µs/req | runtime floor p99 µs | ours/runtime floor |"
            } else {
                ""
            }
        );
        out!(
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|{}",
            if args.floor { "---:|---:|---:|---:|---:|---:|---:|---:|---:|" } else { "" }
        );
        for (name, clients, cells, per_round) in &rows {
            let (o, r) = (&cells[0], &cells[1]);
            out_part!(
                "| {name} | {clients} | {:.0} | {:.0} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {:.1} | {:.1} | {} | {:.1}/{:.1} | {} | {} | {}/{} | {per_round} |{}",
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
                o.client_cpu_us_per_request,
                r.client_cpu_us_per_request,
                mib(o.peak_rss),
                mib(r.peak_rss),
                o.load.errors,
                r.load.errors,
                if cells.len() > 2 { "" } else { "\n" },
            );
            if let [_, _, f, t] = &cells[..] {
                out!(
                    " {:.0} | {} | {:.1} | {} | {:.0} | {} | {:.1} | {:.0} | {} |",
                    f.load.rate(),
                    ratio(f.load.rate(), r.load.rate()),
                    f.cpu_us_per_request,
                    ratio(o.load.rate(), f.load.rate()),
                    t.load.rate(),
                    ratio(t.load.rate(), f.load.rate()),
                    t.cpu_us_per_request,
                    t.load.percentile(0.99),
                    ratio(o.load.rate(), t.load.rate()),
                );
            }
        }
    }
    auth_cells(&args, &mut notes).await;
    if args.cells.iter().any(|c| c == "gateway") {
        gateway_cells(&args, &mut notes).await;
    }
    if args.cells.iter().any(|c| c == "realistic") {
        realistic_cells(&args, &mut notes).await;
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
        out!(
            "\nLegacy sessions (2025-11-25 `initialize` + `notifications/initialized`), {} opened by {} clients and held open:\n",
            args.sessions,
            args.session_clients
        );
        out!(
            "| server | opened | sessions/s | first 10 % /s | last 10 % /s | RSS growth | bytes/session | peak RSS | still usable (sample) | errors |"
        );
        out!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (sdk, s) in &results {
            out!(
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
        out!(
            "| ours/rmcp | | {} | {} | {} | | {} | {} | | |",
            ratio(o.opened as f64 / o.elapsed.as_secs_f64(), r.opened as f64 / r.elapsed.as_secs_f64()),
            ratio(o.first_tenth_rate, r.first_tenth_rate),
            ratio(o.last_tenth_rate, r.last_tenth_rate),
            ratio(o.rss_delta as f64 / o.opened.max(1) as f64, r.rss_delta as f64 / r.opened.max(1) as f64),
            ratio(o.peak_rss as f64, r.peak_rss as f64),
        );
    }
    if !notes.is_empty() {
        out!("\nErrors:");
        for note in notes {
            out!("- {note}");
        }
    }
    if let (Some(dir), Some(commit)) = (&args.results, commit) {
        let date = std::process::Command::new("date")
            .args(["-u", "+%Y-%m-%d"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        let command: Vec<String> = std::env::args().skip(1).collect();
        let body = format!(
            "Machine: {}. Commit: {commit}. Load: `driver {}`.\n\n{}",
            report::machine(),
            command.join(" "),
            PRINTED.lock().expect("not poisoned")
        );
        let rows = std::mem::take(&mut *CHART_ROWS.lock().expect("not poisoned"));
        let heading = format!("{commit}, {date}: {}", args.cells.join(", "));
        let stem = format!("{date}-{commit}");
        report::write(dir, &heading, &body, &rows, &stem).expect("write RESULTS.md and its charts");
        eprintln!("wrote {} and charts/{stem}-*.svg", dir.join("RESULTS.md").display());
    }
}
