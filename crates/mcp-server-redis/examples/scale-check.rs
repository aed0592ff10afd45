//! The client side of `tests/scale/run.sh`: checks a deployment of `scale-server` instances
//! sharing one Redis behind a load balancer, and prints one `RESULT scenario PASS|FAIL detail`
//! line per scenario (exit status 1 if any failed).
//!
//! ```text
//! scale-check --lb http://127.0.0.1:LB/mcp --instances one=http://127.0.0.1:A/mcp,two=…,three=… \
//!     --keys-file keys.txt --kill-cmd 'kill -9 …' --restart-cmd '…'
//! ```
//!
//! The load balancer names the instance that answered in `X-Served-By` (haproxy:
//! `http-response set-header X-Served-By %[srv_name]`), which is how the checks see where each
//! request landed.
//!
//! With `--auth-lb URL --auth-instances … --issuer ISSUER --tokens FILE` it also checks a second
//! deployment, of protected instances (`scale-server --issuer ISSUER --resource URL`) behind
//! their own load balancer: tokens of one issuer are accepted by every instance, and a legacy
//! session opened by one principal is refused to another on every instance
//! (`auth-sessions-across-instances`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use futures::StreamExt as _;
use mcp_server::encode_header_value;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
const PATIENCE: Duration = Duration::from_secs(15);

#[derive(Parser)]
struct Args {
    /// The load balancer's endpoint.
    #[arg(long)]
    lb: String,
    /// Every instance as NAME=URL, comma-separated (NAME as the load balancer calls it).
    #[arg(long, value_delimiter = ',')]
    instances: Vec<String>,
    /// The keys file every instance watches (rewritten by the key rotation check).
    #[arg(long)]
    keys_file: PathBuf,
    /// Kills one instance (`sh -c`), returning once it is gone (its port refuses connections);
    /// its name is `--killed`.
    #[arg(long)]
    kill_cmd: String,
    /// Starts the killed instance again (`sh -c`; must return once it is started).
    #[arg(long)]
    restart_cmd: String,
    /// The name of the instance the kill command kills.
    #[arg(long)]
    killed: String,
    /// Concurrent clients of the kill test (half legacy sessions, half modern).
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// How long the kill test runs, in seconds (kill at a third, restart at two thirds).
    #[arg(long, default_value_t = 12)]
    seconds: u64,
    /// Only these scenarios (default: all).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// The load balancer of the protected instances, whose URL is their resource (the `aud` of
    /// their tokens); with it, `auth-sessions-across-instances` runs.
    #[arg(long, requires_all = ["auth_instances", "issuer", "tokens"])]
    auth_lb: Option<String>,
    /// Every protected instance as NAME=URL, comma-separated.
    #[arg(long, value_delimiter = ',')]
    auth_instances: Vec<String>,
    /// The protected instances' issuer (oidc-provider with tests/auth/provider.mjs: it gives
    /// client credentials tokens to `test-cc` / `test-cc-secret`).
    #[arg(long)]
    issuer: Option<String>,
    /// Access tokens signed with the issuer's key for the protected load balancer's URL, one
    /// `SUBJECT TOKEN` a line: `alice` and `bob`.
    #[arg(long)]
    tokens: Option<PathBuf>,
}

/// One HTTP exchange, as the checks need it.
struct Answer {
    status: u16,
    served_by: String,
    session: Option<String>,
    messages: Vec<Value>,
}

impl Answer {
    /// The JSON-RPC response to `id`, if the answer holds one.
    fn response(&self, id: &Value) -> Option<&Value> {
        self.messages.iter().find(|m| m.get("method").is_none() && &m["id"] == id)
    }
}

#[derive(Clone)]
struct Http(reqwest::Client);

fn base_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("accept", HeaderValue::from_static("application/json, text/event-stream"));
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers
}

fn modern_headers(body: &Value) -> HeaderMap {
    let mut headers = base_headers();
    headers.insert("mcp-protocol-version", HeaderValue::from_static(MODERN));
    let method = body["method"].as_str().unwrap_or_default();
    headers.insert("mcp-method", HeaderValue::from_str(method).expect("a method is a header value"));
    let name = match method {
        "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
        "resources/read" => body["params"]["uri"].as_str(),
        "tasks/get" | "tasks/update" | "tasks/cancel" => body["params"]["taskId"].as_str(),
        _ => None,
    };
    if let Some(name) = name
        && let Ok(value) = HeaderValue::from_str(&encode_header_value(name))
    {
        headers.insert("mcp-name", value);
    }
    headers
}

fn legacy_headers(session: Option<&str>) -> HeaderMap {
    let mut headers = base_headers();
    headers.insert("mcp-protocol-version", HeaderValue::from_static(LEGACY));
    if let Some(session) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        headers.insert("mcp-session-id", session);
    }
    headers
}

/// A modern request: `_meta` declares the tasks extension and form elicitation.
fn modern(id: Value, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": { "io.modelcontextprotocol/tasks": {} }, "elicitation": {}
        },
    });
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// The JSON messages in an SSE body (the `data:` of each event; empty ones skipped).
fn sse_messages(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event.lines().filter_map(|line| line.strip_prefix("data:")).map(str::trim).collect();
            serde_json::from_str(&data.join("\n")).ok()
        })
        .collect()
}

impl Http {
    async fn post(&self, url: &str, headers: HeaderMap, body: &Value) -> Result<Answer, String> {
        let response = self
            .0
            .post(url)
            .headers(headers)
            .body(body.to_string())
            .timeout(PATIENCE)
            .send()
            .await
            .map_err(|e| format!("transport: {}", chain(&e)))?;
        let status = response.status().as_u16();
        let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let served_by = header("x-served-by").unwrap_or_else(|| "?".to_owned());
        let session = header("mcp-session-id");
        let sse = header("content-type").is_some_and(|t| t.starts_with("text/event-stream"));
        let text = response.text().await.map_err(|e| format!("transport (reading the body): {e}"))?;
        let messages = if sse {
            sse_messages(&text)
        } else {
            serde_json::from_str::<Value>(&text).map(|v| vec![v]).unwrap_or_default()
        };
        Ok(Answer { status, served_by, session, messages })
    }

    /// A modern request's result; an error names what came back instead.
    async fn ask(&self, url: &str, id: i64, method: &str, params: Value) -> Result<(Value, String), String> {
        let body = modern(json!(id), method, params);
        let answer = self.post(url, modern_headers(&body), &body).await?;
        match answer.response(&json!(id)) {
            Some(response) if response.get("result").is_some() => Ok((response["result"].clone(), answer.served_by)),
            Some(response) => Err(format!("{method} on {}: {response}", answer.served_by)),
            None => Err(format!("{method}: HTTP {} without a response", answer.status)),
        }
    }
}

/// What a request to a protected instance got: the body is not read for a 200 event stream
/// (a standalone GET stream does not end), which is dropped.
struct Reply {
    status: u16,
    challenge: String,
    served_by: String,
    session: Option<String>,
    sse: bool,
    body: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// The JSON-RPC messages of the body (one JSON object, or an SSE stream's).
    fn messages(&self) -> Vec<Value> {
        if self.sse { sse_messages(&self.body) } else { vec![self.json()] }
    }

    /// `HTTP status (on NAME): body` (the body cut short), for a problem's description.
    fn describe(&self) -> String {
        let body: String = self.body.chars().take(200).collect();
        format!("HTTP {} on {}: {body}", self.status, self.served_by)
    }
}

impl Http {
    /// One request with `token` as its bearer token (none: no `Authorization` header).
    async fn send(
        &self,
        method: reqwest::Method,
        url: &str,
        mut headers: HeaderMap,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Reply, String> {
        if let Some(token) = token {
            let value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| "a token that is no header")?;
            headers.insert("authorization", value);
        }
        let mut request = self.0.request(method.clone(), url).headers(headers).timeout(PATIENCE);
        if let Some(body) = body {
            request = request.body(body.to_string());
        }
        let response = request.send().await.map_err(|e| format!("{method} {url}: transport: {}", chain(&e)))?;
        let status = response.status().as_u16();
        let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let challenge = header("www-authenticate").unwrap_or_default();
        let served_by = header("x-served-by").unwrap_or_else(|| url.to_owned());
        let session = header("mcp-session-id");
        let sse = header("content-type").is_some_and(|t| t.starts_with("text/event-stream"));
        let body = if sse && status == 200 && method == reqwest::Method::GET {
            String::new()
        } else {
            response.text().await.map_err(|e| format!("{method} {url}: reading the body: {e}"))?
        };
        Ok(Reply { status, challenge, served_by, session, sse, body })
    }
}

/// The Protected Resource Metadata URL of `resource`: the well-known path suffixed with the
/// resource's path (RFC 9728 §3.1).
fn metadata_url(resource: &str) -> String {
    let (scheme, rest) = resource.split_once("://").unwrap_or(("http", resource));
    let (authority, path) = rest.find('/').map_or((rest, ""), |at| rest.split_at(at));
    format!("{scheme}://{authority}/.well-known/oauth-protected-resource{}", path.trim_end_matches('/'))
}

fn accept(key: &str, value: Value) -> Value {
    json!({ "action": "accept", "content": { key: value } })
}

/// An error and its sources, `: `-separated.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(error) = source {
        text.push_str(&format!(": {error}"));
        source = error.source();
    }
    text
}

/// base64url without padding (the key id at the front of a `requestState`).
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

fn state_key_id(result: &Value) -> String {
    result["requestState"].as_str().and_then(|s| s.split('.').next()).unwrap_or_default().to_owned()
}

struct Checks {
    http: Http,
    args: Args,
    instances: Vec<(String, String)>,
}

type Outcome = Result<String, String>;

impl Checks {
    fn url(&self, index: usize) -> &str {
        &self.instances[index % self.instances.len()].1
    }

    /// Three rounds of `InputRequiredResult` through the load balancer, each on another instance.
    async fn mrtr_across_instances(&self) -> Outcome {
        let lb = &self.args.lb;
        let call = |extra: Value| {
            let mut params = json!({ "name": "scale_two_questions", "arguments": {} });
            for (key, value) in extra.as_object().into_iter().flatten() {
                params[key] = value.clone();
            }
            params
        };
        let (first, one) = self.http.ask(lb, 1, "tools/call", call(json!({}))).await?;
        let state = first["requestState"].clone();
        let retry = json!({ "inputResponses": { "name": accept("name", json!("Ada")) }, "requestState": state });
        let (second, two) = self.http.ask(lb, 2, "tools/call", call(retry)).await?;
        let state = second["requestState"].clone();
        let retry = json!({ "inputResponses": { "color": accept("color", json!("blue")) }, "requestState": state });
        let (last, three) = self.http.ask(lb, 3, "tools/call", call(retry)).await?;
        let text = last["content"][0]["text"].as_str().unwrap_or_default();
        let served: BTreeSet<&String> = [&one, &two, &three].into_iter().collect();
        if text != "Ada likes blue" {
            return Err(format!("the last round answered {last}"));
        }
        if served.len() < 2 {
            return Err(format!("every round landed on {one}"));
        }
        Ok(format!("rounds on {one}, {two}, {three}"))
    }

    /// Waits until every instance seals with `key`.
    async fn until_every_instance_seals_with(&self, key: &str) -> Result<(), String> {
        let deadline = Instant::now() + PATIENCE;
        for index in 0..self.instances.len() {
            loop {
                let params = json!({ "name": "scale_whoami", "arguments": {} });
                let (result, _) = self.http.ask(self.url(index), 10, "tools/call", params).await?;
                let who: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap_or("{}"))
                    .map_err(|e| format!("scale_whoami: {e}"))?;
                if who["keyId"] == key {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!("{} still seals with {}", self.instances[index].0, who["keyId"]));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Ok(())
    }

    /// A multi-round exchange whose state was sealed before a key rotation finishes after it:
    /// the old key still opens it until it is removed, the new one seals from then on.
    async fn key_rotation_mid_exchange(&self) -> Outcome {
        let lb = &self.args.lb;
        let keys = &self.args.keys_file;
        let write = |text: &str| std::fs::write(keys, text).map_err(|e| format!("{}: {e}", keys.display()));
        write("k1 first-secret-of-the-scale-check\n")?;
        self.until_every_instance_seals_with("k1").await?;
        let params = json!({ "name": "scale_two_questions", "arguments": {} });
        let (first, _) = self.http.ask(lb, 1, "tools/call", params).await?;
        if state_key_id(&first) != base64url(b"k1") {
            return Err(format!("the first round was not sealed with k1: {first}"));
        }
        write("k1 first-secret-of-the-scale-check\nk2 second-secret-of-the-scale-check\n")?;
        self.until_every_instance_seals_with("k2").await?;
        let retry = |state: &Value, key: &str, value: &str| {
            json!({ "name": "scale_two_questions", "arguments": {},
                    "inputResponses": { key: accept(key, json!(value)) }, "requestState": state })
        };
        let (second, on) = self.http.ask(lb, 2, "tools/call", retry(&first["requestState"], "name", "Ada")).await?;
        if state_key_id(&second) != base64url(b"k2") {
            return Err(format!("after the rotation {on} did not seal with k2: {second}"));
        }
        // k1 retired: its states are refused, k2's still finish the exchange.
        write("k2 second-secret-of-the-scale-check\n")?;
        let deadline = Instant::now() + PATIENCE;
        loop {
            let body = modern(json!(3), "tools/call", retry(&first["requestState"], "name", "Ada"));
            let answer = self.http.post(lb, modern_headers(&body), &body).await?;
            let refused = answer.response(&json!(3)).is_some_and(|r| r["error"]["code"] == -32602);
            // Every instance must refuse it: ask until three refusals in a row.
            if refused && self.refused_everywhere(&first["requestState"]).await? {
                break;
            }
            if Instant::now() > deadline {
                return Err("a state sealed with the retired key k1 is still accepted".to_owned());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let (last, _) = self.http.ask(lb, 4, "tools/call", retry(&second["requestState"], "color", "green")).await?;
        let text = last["content"][0]["text"].as_str().unwrap_or_default();
        if text != "Ada likes green" {
            return Err(format!("the exchange did not finish after the rotation: {last}"));
        }
        Ok("k1 state accepted after rotating to k2, refused once k1 was retired; exchange finished".to_owned())
    }

    async fn refused_everywhere(&self, state: &Value) -> Result<bool, String> {
        for index in 0..self.instances.len() {
            let params = json!({ "name": "scale_two_questions", "arguments": {},
                "inputResponses": { "name": accept("name", json!("Ada")) }, "requestState": state });
            let body = modern(json!(5), "tools/call", params);
            let answer = self.http.post(self.url(index), modern_headers(&body), &body).await?;
            if !answer.response(&json!(5)).is_some_and(|r| r["error"]["code"] == -32602) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// A `subscriptions/listen` on one instance hears a change made through another.
    async fn listen_across_instances(&self) -> Outcome {
        let body =
            modern(json!("listen-1"), "subscriptions/listen", json!({ "notifications": { "toolsListChanged": true } }));
        let response = self
            .http
            .0
            .post(self.url(0))
            .headers(modern_headers(&body))
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| format!("listen: {e}"))?;
        let mut chunks = response.bytes_stream();
        let mut buffer = String::new();
        let mut next_message = async || -> Result<Value, String> {
            loop {
                if let Some(end) = buffer.find("\n\n") {
                    let event: String = buffer.drain(..end + 2).collect();
                    if let Some(message) = sse_messages(&event).pop() {
                        return Ok(message);
                    }
                    continue;
                }
                let chunk = tokio::time::timeout(PATIENCE, chunks.next())
                    .await
                    .map_err(|_| "no notification in time".to_owned())?
                    .ok_or("the listen stream ended")?
                    .map_err(|e| format!("listen stream: {e}"))?;
                buffer.push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
            }
        };
        let ack = next_message().await?;
        if ack["method"] != "notifications/subscriptions/acknowledged" {
            return Err(format!("expected the acknowledgement, got {ack}"));
        }
        let params = json!({ "name": "test_trigger_tool_change", "arguments": {} });
        self.http.ask(self.url(1), 1, "tools/call", params).await?;
        let change = next_message().await?;
        if change["method"] != "notifications/tools/list_changed" {
            return Err(format!("expected the tool list change, got {change}"));
        }
        Ok(format!("listening on {}, change made through {}", self.instances[0].0, self.instances[1].0))
    }

    async fn until_task(&self, index: usize, task_id: &str, done: impl Fn(&Value) -> bool) -> Result<Value, String> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let (task, _) = self.http.ask(self.url(index), 7, "tasks/get", json!({ "taskId": task_id })).await?;
            if done(&task) {
                return Ok(task);
            }
            if Instant::now() > deadline {
                return Err(format!("the task never got there: {task}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A task created through one instance is polled, answered and cancelled through the others.
    async fn task_across_instances(&self) -> Outcome {
        let call = json!({ "name": "confirm_delete", "arguments": { "filename": "a.txt" } });
        let (created, _) = self.http.ask(self.url(0), 1, "tools/call", call).await?;
        let task_id = created["taskId"].as_str().ok_or(format!("no task: {created}"))?.to_owned();
        self.until_task(1, &task_id, |t| t["inputRequests"].get("confirm_delete").is_some()).await?;
        let update =
            json!({ "taskId": task_id, "inputResponses": { "confirm_delete": accept("confirm", json!(true)) } });
        self.http.ask(self.url(2), 2, "tasks/update", update).await?;
        let done = self.until_task(0, &task_id, |t| t["status"] == "completed").await?;
        if done["result"]["content"][0]["text"] != "Deleted a.txt" {
            return Err(format!("unexpected result: {done}"));
        }
        let call = json!({ "name": "slow_compute", "arguments": { "seconds": 600 } });
        let (created, _) = self.http.ask(self.url(1), 3, "tools/call", call).await?;
        let slow = created["taskId"].as_str().ok_or(format!("no task: {created}"))?.to_owned();
        self.http.ask(self.url(2), 4, "tasks/cancel", json!({ "taskId": slow })).await?;
        self.until_task(0, &slow, |t| t["status"] == "cancelled").await?;
        Ok("created on one, polled on two, answered on three, completed; another cancelled across".to_owned())
    }

    /// The cost of a `tools/call` through the load balancer against one instance directly:
    /// sequential calls, alternating batches so that both see the same machine load.
    async fn lb_overhead(&self) -> Outcome {
        let params = || json!({ "name": "test_simple_text", "arguments": {} });
        let (mut direct, mut balanced) = (Duration::ZERO, Duration::ZERO);
        let (batches, per_batch) = (10, 50);
        for _ in 0..20 {
            self.http.ask(self.url(0), 1, "tools/call", params()).await?;
            self.http.ask(&self.args.lb, 1, "tools/call", params()).await?;
        }
        for _ in 0..batches {
            let started = Instant::now();
            for _ in 0..per_batch {
                self.http.ask(self.url(0), 1, "tools/call", params()).await?;
            }
            direct += started.elapsed();
            let started = Instant::now();
            for _ in 0..per_batch {
                self.http.ask(&self.args.lb, 1, "tools/call", params()).await?;
            }
            balanced += started.elapsed();
        }
        let calls = f64::from(batches * per_batch);
        let (direct_us, balanced_us) = (direct.as_secs_f64() * 1e6 / calls, balanced.as_secs_f64() * 1e6 / calls);
        Ok(format!(
            "tools/call direct {direct_us:.0} us, through haproxy {balanced_us:.0} us, ratio {:.2} ({} sequential calls each)",
            balanced_us / direct_us,
            calls
        ))
    }

    /// 64 clients (half legacy sessions) through the load balancer while one instance is killed
    /// and restarted; a task running on it is reported failed after its lease.
    async fn kill_and_restart(&self) -> Outcome {
        let killed_index = self.instances.iter().position(|(name, _)| *name == self.args.killed).ok_or("--killed")?;
        // A task on the instance about to die.
        let call = json!({ "name": "slow_compute", "arguments": { "seconds": 600 } });
        let (created, _) = self.http.ask(self.url(killed_index), 1, "tools/call", call).await?;
        let orphan = created["taskId"].as_str().ok_or(format!("no task: {created}"))?.to_owned();

        let start = Instant::now();
        let run = Duration::from_secs(self.args.seconds);
        let kill_at = run / 3;
        let restart_at = run * 2 / 3;
        let log = Arc::new(std::sync::Mutex::new(Vec::<Exchange>::new()));
        let sessions = Arc::new(std::sync::Mutex::new(Vec::<(usize, String)>::new()));
        let mut clients = Vec::new();
        for client in 0..self.args.clients {
            let (http, lb, log, sessions) =
                (self.http.clone(), self.args.lb.clone(), Arc::clone(&log), Arc::clone(&sessions));
            clients.push(tokio::spawn(async move {
                let legacy = client % 2 == 0;
                let mut session = None;
                if legacy {
                    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                        "protocolVersion": LEGACY, "capabilities": {},
                        "clientInfo": { "name": format!("scale-{client}"), "version": "0" } } });
                    match http.post(&lb, legacy_headers(None), &init).await {
                        Ok(answer) if answer.session.is_some() => {
                            let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
                            let _ = http.post(&lb, legacy_headers(answer.session.as_deref()), &initialized).await;
                            sessions.lock().unwrap().push((client, answer.served_by.clone()));
                            session = answer.session;
                        }
                        Ok(answer) => return Err(format!("initialize: HTTP {} {:?}", answer.status, answer.messages)),
                        Err(error) => return Err(format!("initialize: {error}")),
                    }
                }
                let mut n = 0u64;
                while start.elapsed() < run {
                    n += 1;
                    let id = json!(client as u64 * 1_000_000 + n);
                    let params = json!({ "name": "test_simple_text", "arguments": {} });
                    let (headers, body) = match &session {
                        Some(session) => {
                            let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params });
                            (legacy_headers(Some(session)), body)
                        }
                        None => {
                            let body = modern(id.clone(), "tools/call", params);
                            (modern_headers(&body), body)
                        }
                    };
                    let sent = start.elapsed();
                    let outcome = match http.post(&lb, headers, &body).await {
                        Ok(answer) => match answer.response(&id) {
                            Some(r) if r["result"]["content"][0]["text"].is_string() => Ok(answer.served_by),
                            Some(r) => Err(format!("JSON-RPC error {}", r["error"])),
                            None => Err(format!("HTTP {}", answer.status)),
                        },
                        Err(error) => Err(error),
                    };
                    let exchange = Exchange { client, legacy, sent, done: start.elapsed(), outcome };
                    log.lock().unwrap().push(exchange);
                }
                Ok(())
            }));
        }
        tokio::time::sleep(kill_at.saturating_sub(start.elapsed())).await;
        let kill_started = start.elapsed();
        shell(&self.args.kill_cmd).await?;
        let killed_at = start.elapsed();
        tokio::time::sleep(restart_at.saturating_sub(start.elapsed())).await;
        shell(&self.args.restart_cmd).await?;
        let restarted_at = start.elapsed();
        let mut client_errors = Vec::new();
        for client in clients {
            match client.await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => client_errors.push(error),
                Err(error) => client_errors.push(format!("a client panicked: {error}")),
            }
        }
        // Every client is done: take what they wrote.
        let log = std::mem::take(&mut *log.lock().unwrap());
        let sessions = std::mem::take(&mut *sessions.lock().unwrap());
        let killed = &self.args.killed;

        let sent = log.len();
        let answered = log.iter().filter(|e| e.outcome.is_ok()).count();
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        let mut not_in_flight = 0;
        for exchange in log.iter() {
            if let Err(reason) = &exchange.outcome {
                *reasons.entry(reason.clone()).or_default() += 1;
                // Only a request in flight on the instance as it died may fail: sent before it
                // was gone (a dying process's socket still accepts connections).
                if !(exchange.sent <= killed_at && exchange.done >= kill_started) {
                    not_in_flight += 1;
                    if not_in_flight <= 5 {
                        println!(
                            "kill test:   not in flight at the kill: client {} sent at {:.3} s, failed at {:.3} s: {reason}",
                            exchange.client,
                            exchange.sent.as_secs_f64(),
                            exchange.done.as_secs_f64()
                        );
                    }
                }
            }
        }
        let failed = sent - answered;
        // The legacy sessions opened on the killed instance go on elsewhere.
        let orphaned: Vec<usize> = sessions.iter().filter(|(_, on)| on == killed).map(|(client, _)| *client).collect();
        let stranded: Vec<usize> = orphaned
            .iter()
            .copied()
            .filter(|client| {
                !log.iter().any(|e| {
                    e.client == *client && e.sent > killed_at && e.outcome.as_ref().is_ok_and(|on| on != killed)
                })
            })
            .collect();
        let after_restart =
            log.iter().filter(|e| e.sent > restarted_at && e.outcome.as_ref().is_ok_and(|on| on == killed)).count();
        let legacy_answered = log.iter().filter(|e| e.legacy && e.outcome.is_ok()).count();

        // The orphaned task: failed after its lease, with the reason.
        let orphan_state = self.until_task(0, &orphan, |t| t["status"] != "working").await;
        let lease_outcome = match &orphan_state {
            Ok(task)
                if task["status"] == "failed"
                    && task["error"]["message"].as_str().is_some_and(|m| m.contains("lease")) =>
            {
                "its task failed after the lease".to_owned()
            }
            Ok(task) => format!("its task ended as {task}"),
            Err(error) => format!("its task: {error}"),
        };

        println!(
            "kill test: {} clients for {} s ({} legacy sessions, {} of them on {killed})",
            self.args.clients,
            self.args.seconds,
            sessions.len(),
            orphaned.len()
        );
        println!(
            "kill test: kill -9 {killed} at {:.3} s, gone at {:.3} s, restarted at {:.1} s",
            kill_started.as_secs_f64(),
            killed_at.as_secs_f64(),
            restarted_at.as_secs_f64()
        );
        println!(
            "kill test: sent {sent}, answered {answered}, failed {failed} ({legacy_answered} answered on legacy sessions)"
        );
        for (reason, count) in &reasons {
            println!("kill test:   failed x{count}: {reason}");
        }
        println!(
            "kill test: failures not in flight at the kill: {not_in_flight}; answered by {killed} after its restart: {after_restart}"
        );
        println!("kill test: {lease_outcome}");
        let summary = format!("sent={sent} answered={answered} failed={failed} (all in flight on {killed} as it died)");
        let mut problems = client_errors;
        if not_in_flight > 0 {
            problems.push(format!("{not_in_flight} failures of requests not in flight at the kill"));
        }
        if !stranded.is_empty() {
            problems.push(format!("legacy sessions of {killed} not continued elsewhere: clients {stranded:?}"));
        }
        if orphaned.is_empty() {
            problems.push(format!("no legacy session was opened on {killed}: nothing shows they survive"));
        }
        if after_restart == 0 {
            problems.push(format!("{killed} served nothing after its restart"));
        }
        if !lease_outcome.starts_with("its task failed") {
            problems.push(lease_outcome);
        }
        if problems.is_empty() { Ok(summary) } else { Err(format!("{summary}: {}", problems.join("; "))) }
    }
}

impl Checks {
    /// A deployment of protected instances: every one serves the load balancer's metadata and
    /// challenges a request without a token, accepts a token of the issuer for the load
    /// balancer's URL (and no other), and refuses a legacy session opened by alice to bob (POST,
    /// GET, DELETE) on every instance, while alice goes on with it everywhere and ends it.
    async fn auth_sessions_across_instances(&self) -> Outcome {
        let args = &self.args;
        let (Some(lb), Some(issuer), Some(tokens)) = (&args.auth_lb, &args.issuer, &args.tokens) else {
            return Err("needs --auth-lb, --issuer and --tokens".to_owned());
        };
        let text = std::fs::read_to_string(tokens).map_err(|e| format!("{}: {e}", tokens.display()))?;
        let minted: BTreeMap<&str, &str> = text.lines().filter_map(|line| line.trim().split_once(' ')).collect();
        let token_of = |subject: &str| minted.get(subject).copied().ok_or(format!("no token of {subject} in --tokens"));
        let (alice, bob) = (token_of("alice")?, token_of("bob")?);
        let instances: Vec<(String, String)> = args
            .auth_instances
            .iter()
            .map(|spec| {
                spec.split_once('=').map(|(n, u)| (n.to_owned(), u.to_owned())).ok_or("--auth-instances NAME=URL")
            })
            .collect::<Result<_, _>>()?;
        if instances.len() < 2 {
            return Err("--auth-instances names fewer than two instances".to_owned());
        }
        let mut endpoints = instances.clone();
        endpoints.push(("haproxy".to_owned(), lb.clone()));
        let mut problems = Vec::new();

        // The metadata names the public URL and the issuer, wherever it is asked.
        let well_known = metadata_url(lb);
        for (name, url) in &endpoints {
            // Every endpoint is at the same path (/mcp), so its well-known path is the same.
            let reply = self.http.send(reqwest::Method::GET, &metadata_url(url), HeaderMap::new(), None, None).await?;
            let metadata = reply.json();
            if reply.status != 200
                || metadata["resource"] != *lb
                || metadata["authorization_servers"] != json!([issuer])
            {
                problems.push(format!("the metadata on {name}: {}", reply.describe()));
            }
        }

        // No token: 401 pointing at the metadata, for both eras, on every instance and through haproxy.
        let list = modern(json!(1), "tools/list", json!({}));
        let initialize = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "scale-check", "version": "0" } } });
        let resource_metadata = format!("resource_metadata=\"{well_known}\"");
        for (name, url) in &endpoints {
            for (era, headers, body) in
                [("modern", modern_headers(&list), &list), ("legacy", legacy_headers(None), &initialize)]
            {
                let reply = self.http.send(reqwest::Method::POST, url, headers, None, Some(body)).await?;
                if reply.status != 401 || !reply.challenge.contains(&resource_metadata) {
                    problems.push(format!(
                        "{era} POST without a token on {name}: {} (WWW-Authenticate: {:?})",
                        reply.describe(),
                        reply.challenge
                    ));
                }
            }
        }

        // A client credentials token from the issuer, for the public URL: accepted everywhere.
        let token_for = |resource: &str| {
            let request = self
                .http
                .0
                .post(format!("{issuer}/token"))
                .basic_auth("test-cc", Some("test-cc-secret"))
                .form(&[("grant_type", "client_credentials"), ("resource", resource), ("scope", "notes:read")])
                .timeout(PATIENCE);
            async move {
                let response: Value = request
                    .send()
                    .await
                    .map_err(|e| format!("the token endpoint: {}", chain(&e)))?
                    .json()
                    .await
                    .map_err(|e| format!("the token endpoint's answer: {e}"))?;
                response["access_token"].as_str().map(str::to_owned).ok_or(format!("no token: {response}"))
            }
        };
        let service = token_for(lb).await?;
        for (name, url) in &endpoints {
            let reply =
                self.http.send(reqwest::Method::POST, url, modern_headers(&list), Some(&service), Some(&list)).await?;
            let tools = reply.messages().into_iter().find(|m| m["id"] == 1).map(|m| m["result"]["tools"].clone());
            if reply.status != 200 || tools.as_ref().and_then(Value::as_array).is_none_or(|t| t.is_empty()) {
                problems.push(format!("tools/list with test-cc's token on {name}: {}", reply.describe()));
            }
        }
        // One issued for an instance's own URL is not for this resource.
        let misaimed = token_for(&instances[0].1).await?;
        let reply =
            self.http.send(reqwest::Method::POST, lb, modern_headers(&list), Some(&misaimed), Some(&list)).await?;
        if reply.status != 401 || !reply.challenge.contains("invalid_token") {
            problems.push(format!("a token for {} accepted through haproxy: {}", instances[0].1, reply.describe()));
        }

        // alice opens a legacy session through haproxy.
        let opened =
            self.http.send(reqwest::Method::POST, lb, legacy_headers(None), Some(alice), Some(&initialize)).await?;
        let Some(session) = opened.session.clone().filter(|_| opened.status == 200) else {
            problems.push(format!("alice's initialize through haproxy: {}", opened.describe()));
            return Err(problems.join("; "));
        };
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let reply = self
            .http
            .send(reqwest::Method::POST, lb, legacy_headers(Some(&session)), Some(alice), Some(&initialized))
            .await?;
        if reply.status != 202 {
            problems.push(format!("alice's notifications/initialized: {}", reply.describe()));
        }
        let ping = |id: i64| json!({ "jsonrpc": "2.0", "id": id, "method": "ping" });
        let stream_headers = || {
            let mut headers = legacy_headers(Some(&session));
            headers.remove("content-type");
            headers.insert("accept", HeaderValue::from_static("text/event-stream"));
            headers
        };
        let answered = |reply: &Reply, id: i64| {
            reply.status == 200 && reply.messages().iter().any(|m| m["id"] == id && m.get("result").is_some())
        };
        let refused = |reply: &Reply| {
            reply.status == 403
                && reply.json()["error"]["message"].as_str().is_some_and(|m| m.contains("another principal"))
        };
        let mut id = 10;
        for (name, url) in &endpoints {
            id += 1;
            // bob, with a valid token of the same issuer, on alice's session.
            let post = self
                .http
                .send(reqwest::Method::POST, url, legacy_headers(Some(&session)), Some(bob), Some(&ping(id)))
                .await?;
            let get = self.http.send(reqwest::Method::GET, url, stream_headers(), Some(bob), None).await?;
            let delete =
                self.http.send(reqwest::Method::DELETE, url, legacy_headers(Some(&session)), Some(bob), None).await?;
            for (method, reply) in [("POST", &post), ("GET", &get), ("DELETE", &delete)] {
                if !refused(reply) {
                    problems.push(format!("bob's {method} on alice's session on {name}: {}", reply.describe()));
                }
            }
            if post.json()["id"] != id {
                problems.push(format!("bob's refused ping on {name} does not answer its id: {}", post.describe()));
            }
            // alice goes on with it, wherever she is sent.
            id += 1;
            let reply = self
                .http
                .send(reqwest::Method::POST, url, legacy_headers(Some(&session)), Some(alice), Some(&ping(id)))
                .await?;
            if !answered(&reply, id) {
                problems.push(format!("alice's ping on her session on {name}: {}", reply.describe()));
            }
            let reply = self.http.send(reqwest::Method::GET, url, stream_headers(), Some(alice), None).await?;
            if reply.status != 200 || !reply.sse {
                problems.push(format!("alice's GET stream on her session on {name}: {}", reply.describe()));
            }
        }

        // alice ends it on an instance that did not open it; then it is gone everywhere.
        let (closer, closer_url) =
            instances.iter().find(|(name, _)| *name != opened.served_by).unwrap_or(&instances[0]).clone();
        let reply = self
            .http
            .send(reqwest::Method::DELETE, &closer_url, legacy_headers(Some(&session)), Some(alice), None)
            .await?;
        if reply.status != 200 {
            problems.push(format!("alice's DELETE on {closer}: {}", reply.describe()));
        }
        for (name, url) in &endpoints {
            id += 1;
            let reply = self
                .http
                .send(reqwest::Method::POST, url, legacy_headers(Some(&session)), Some(alice), Some(&ping(id)))
                .await?;
            if reply.status != 404 {
                problems.push(format!("alice's ping on her ended session on {name}: {}", reply.describe()));
            }
        }

        if !problems.is_empty() {
            return Err(problems.join("; "));
        }
        Ok(format!(
            "{} instances + haproxy: metadata names {lb}, no token 401 resource_metadata, test-cc token accepted \
             (one for an instance's own URL refused); alice's session (opened on {}) refused to bob (POST/GET/DELETE 403 \
             another principal) and served to alice everywhere, ended by her DELETE on {closer}, then 404 everywhere",
            instances.len(),
            opened.served_by
        ))
    }
}

struct Exchange {
    client: usize,
    legacy: bool,
    sent: Duration,
    done: Duration,
    /// The instance that answered, or why it failed.
    outcome: Result<String, String>,
}

async fn shell(command: &str) -> Result<(), String> {
    let status = tokio::process::Command::new("sh").arg("-c").arg(command).status().await;
    match status {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("`{command}` exited with {status}")),
        Err(error) => Err(format!("`{command}`: {error}")),
    }
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let instances = args
        .instances
        .iter()
        .map(|spec| spec.split_once('=').map(|(n, u)| (n.to_owned(), u.to_owned())).expect("--instances NAME=URL,…"))
        .collect();
    let checks = Checks { http: Http(reqwest::Client::new()), args, instances };
    let wanted = |name: &str| checks.args.only.is_empty() || checks.args.only.iter().any(|o| o == name);
    let mut failed = false;
    macro_rules! check {
        ($name:literal, $check:expr) => {
            if wanted($name) {
                let outcome = $check.await;
                failed |= outcome.is_err();
                match outcome {
                    Ok(detail) => println!("RESULT {} PASS {detail}", $name),
                    Err(detail) => println!("RESULT {} FAIL {detail}", $name),
                }
            }
        };
    }
    check!("mrtr-rounds-on-different-instances", checks.mrtr_across_instances());
    check!("key-rotation-mid-exchange", checks.key_rotation_mid_exchange());
    check!("listen-hears-change-from-another-instance", checks.listen_across_instances());
    check!("task-across-instances", checks.task_across_instances());
    check!("kill-9-and-restart-under-64-clients", checks.kill_and_restart());
    check!("lb-overhead", checks.lb_overhead());
    if checks.args.auth_lb.is_some() {
        check!("auth-sessions-across-instances", checks.auth_sessions_across_instances());
    }
    std::process::exit(i32::from(failed));
}
