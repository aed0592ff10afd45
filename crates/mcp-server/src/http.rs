//! Streamable HTTP with axum: one endpoint for both eras. Modern requests are stateless POSTs;
//! legacy clients open a session with `initialize` and get an `Mcp-Session-Id`, a GET stream for
//! session notifications, and DELETE to end it.
//!
//! This layer only carries bytes and headers: it checks Host/Origin, the body size and the
//! session, hands the body and the mirrored headers to [`Server::handle`], and turns the
//! [`Reply`](crate::Reply) into a JSON body (when the response is all there is) or an SSE stream.
//!
//! The caller's identity comes from the request's extensions: a layer in front of the router
//! (authentication middleware) inserts a [`Principal`]; without one, requests are anonymous.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt as _};
use mcp_types::ErrorObject;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::message::{Disposition, Outgoing, OutgoingKind};
use crate::{LEGACY_VERSIONS, Mirrors, Principal, Server, Session};

const SESSION_HEADER: &str = "mcp-session-id";

/// Which `Host` (and `Origin`) values are accepted: the guard against DNS rebinding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostCheck {
    /// `localhost`, `127.0.0.1` and `[::1]`, any port: the default, right for loopback binds.
    Loopback,
    /// These host names (without port), and the loopback ones.
    Allow(Vec<String>),
    /// No check (behind a proxy that does it).
    Disabled,
}

/// Settings of the HTTP transport.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The endpoint path.
    pub path: String,
    pub host_check: HostCheck,
    /// Larger bodies get 413.
    pub max_body_bytes: usize,
    /// A legacy session unused this long is forgotten.
    pub session_idle: Duration,
    /// At most this many legacy sessions; the least recently used one makes room for a new one.
    pub max_sessions: usize,
    /// The `retry` a legacy SSE stream announces in its priming event.
    pub sse_retry: Duration,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            path: "/mcp".to_owned(),
            host_check: HostCheck::Loopback,
            max_body_bytes: 4 * 1024 * 1024,
            session_idle: Duration::from_secs(30 * 60),
            max_sessions: 1024,
            sse_retry: Duration::from_secs(1),
        }
    }
}

struct Shared {
    server: Server,
    config: HttpConfig,
    sessions: Mutex<HashMap<String, Entry>>,
}

struct Entry {
    session: Arc<Session>,
    logs: Arc<Mutex<Logs>>,
    last_used: Instant,
}

/// The recent SSE streams of a legacy session, kept so that a client can resume one.
#[derive(Default)]
struct Logs {
    next: u64,
    streams: VecDeque<(u64, Arc<StreamLog>)>,
}

const LOGS_PER_SESSION: usize = 32;

impl Logs {
    fn open(&mut self) -> (u64, Arc<StreamLog>) {
        self.next += 1;
        let log = Arc::new(StreamLog { entries: Mutex::new(Vec::new()), progress: watch::channel((0, false)).0 });
        if self.streams.len() == LOGS_PER_SESSION {
            self.streams.pop_front();
        }
        self.streams.push_back((self.next, Arc::clone(&log)));
        (self.next, log)
    }

    fn find(&self, stream: u64) -> Option<Arc<StreamLog>> {
        self.streams.iter().find(|(id, _)| *id == stream).map(|(_, log)| Arc::clone(log))
    }
}

/// One request's messages on a legacy session, independent of the HTTP connection that
/// carries them (a legacy disconnect is not a cancellation). `None` marks a stream break.
struct StreamLog {
    entries: Mutex<Vec<Option<String>>>,
    /// (entries written, finished)
    progress: watch::Sender<(usize, bool)>,
}

impl StreamLog {
    fn push(&self, entry: Option<String>) {
        let mut entries = self.entries.lock().expect("not poisoned");
        entries.push(entry);
        let len = entries.len();
        self.progress.send_modify(|progress| progress.0 = len);
    }

    /// Events from position `from` (event id `stream:n` is entry n-1); the POST that opened the
    /// stream stops at the first break, a resuming GET reads to the end.
    fn read(self: Arc<Self>, stream: u64, from: usize, stop_at_break: bool) -> impl Stream<Item = Event> + Send {
        let progress = self.progress.subscribe();
        futures::stream::unfold((self, progress, from), move |(log, mut progress, mut next)| async move {
            loop {
                let (len, done) = *progress.borrow_and_update();
                if next < len {
                    let entry = log.entries.lock().expect("not poisoned")[next].clone();
                    next += 1;
                    match entry {
                        Some(json) => {
                            let event = Event { id: Some(format!("{stream}:{next}")), retry: None, data: json };
                            return Some((event, (log, progress, next)));
                        }
                        None if stop_at_break => return None,
                        None => continue,
                    }
                }
                if done || progress.changed().await.is_err() {
                    return None;
                }
            }
        })
    }
}

/// An axum router serving `server` at `config.path`.
pub fn router(server: Server, config: HttpConfig) -> Router {
    let path = config.path.clone();
    let shared = Arc::new(Shared { server, config, sessions: Mutex::new(HashMap::new()) });
    Router::new().route(&path, axum::routing::any(endpoint)).with_state(shared)
}

/// Serves until the listener fails.
pub async fn serve(listener: TcpListener, server: Server, config: HttpConfig) -> std::io::Result<()> {
    axum::serve(listener, router(server, config)).await
}

/// Serves until `shutdown` completes.
pub async fn serve_with_shutdown(
    listener: TcpListener,
    server: Server,
    config: HttpConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(server, config)).with_graceful_shutdown(shutdown).await
}

async fn endpoint(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    if let Some(refusal) = host_refusal(&shared.config.host_check, &parts.headers) {
        return refusal;
    }
    // An auth layer in front of the router names the caller; without one, it is anonymous.
    let principal = parts.extensions.get::<Principal>().cloned().unwrap_or_default();
    match parts.method {
        Method::POST => post(shared, parts.headers, body, principal).await,
        Method::GET => get(shared, &parts.headers),
        Method::DELETE => delete(shared, &parts.headers),
        _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
    }
}

async fn post(shared: Arc<Shared>, headers: HeaderMap, body: Body, principal: Principal) -> Response {
    if let Some(accept) = header_str(&headers, header::ACCEPT.as_str())
        && !["application/json", "text/event-stream", "*/*", "application/*", "text/*"]
            .iter()
            .any(|t| accept.contains(t))
    {
        return error(StatusCode::NOT_ACCEPTABLE, None, "Accept must allow application/json and text/event-stream");
    }
    let limit = shared.config.max_body_bytes;
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        return error(StatusCode::PAYLOAD_TOO_LARGE, None, &format!("The request body exceeds {limit} bytes"));
    };
    let message: Value = match serde_json::from_slice(&bytes) {
        Ok(message) => message,
        Err(e) => {
            let error = ErrorObject::parse_error(format!("Parse error: {e}"));
            return json_response(StatusCode::BAD_REQUEST, &Outgoing::error_as(None, &error, Disposition::BadRequest));
        }
    };
    let id = message.get("id").cloned().and_then(|id| serde_json::from_value(id).ok());
    let version = header_str(&headers, "mcp-protocol-version");
    let legacy_wire = version.is_none_or(|v| LEGACY_VERSIONS.contains(&v));
    let is_initialize = message.get("method").and_then(Value::as_str) == Some("initialize");
    let session_id = header_str(&headers, SESSION_HEADER);

    // Modern requests are stateless: a session id that comes with one is ignored.
    let (session, new_session, logs) = match (legacy_wire, session_id) {
        (true, Some(session_id)) => match shared.session(session_id) {
            Some((session, logs)) => (session, false, Some(logs)),
            None => {
                let error = ErrorObject::invalid_request("Session not found; send initialize without a session id");
                return json_response(
                    StatusCode::NOT_FOUND,
                    &Outgoing::error_as(id.as_ref(), &error, Disposition::NotFound),
                );
            }
        },
        (true, None) if is_initialize => (Session::with_principal(principal), true, None),
        _ => (Session::with_principal(principal), false, None),
    };
    let mirrors = Mirrors {
        protocol_version: version.map(str::to_owned),
        method: header_str(&headers, "mcp-method").map(str::to_owned),
        name: header_str(&headers, "mcp-name").map(str::to_owned),
        params: headers
            .iter()
            .filter_map(|(name, value)| {
                let param = name.as_str().strip_prefix("mcp-param-")?;
                Some((param.to_owned(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
            })
            .collect(),
    };
    let Some(mut reply) = shared.server.handle(&session, message, Some(&mirrors)) else {
        return StatusCode::ACCEPTED.into_response();
    };
    let Some(first) = reply.next().await else {
        // Cancelled before it answered (a legacy `notifications/cancelled`).
        return StatusCode::NO_CONTENT.into_response();
    };
    let mut response = if first.is_response() {
        let status = match first.kind {
            OutgoingKind::Response(Disposition::BadRequest) => StatusCode::BAD_REQUEST,
            OutgoingKind::Response(Disposition::NotFound) => StatusCode::NOT_FOUND,
            _ => StatusCode::OK,
        };
        json_response(status, &first)
    } else if let Some(logs) = logs {
        let (stream, log) = logs.lock().expect("not poisoned").open();
        let pump = Arc::clone(&log);
        tokio::spawn(async move {
            pump.push(first.is_message().then_some(first.json));
            while let Some(message) = reply.next().await {
                pump.push(message.is_message().then_some(message.json));
            }
            pump.progress.send_modify(|progress| progress.1 = true);
        });
        let priming =
            Event { id: Some(format!("{stream}:0")), retry: Some(shared.config.sse_retry), data: String::new() };
        sse_events(futures::stream::once(async { priming }).chain(log.read(stream, 0, true)))
    } else {
        sse(futures::stream::once(async { first }).chain(reply))
    };
    if new_session && session.protocol_version().is_some() {
        let session_id = shared.insert(session);
        if let Ok(value) = HeaderValue::from_str(&session_id) {
            response.headers_mut().insert(SESSION_HEADER, value);
        }
    }
    response
}

/// The legacy standalone stream: session notifications outside any request.
fn get(shared: Arc<Shared>, headers: &HeaderMap) -> Response {
    let Some(session_id) = header_str(headers, SESSION_HEADER) else {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    };
    if header_str(headers, header::ACCEPT.as_str())
        .is_some_and(|a| !a.contains("text/event-stream") && !a.contains("*/*"))
    {
        return error(StatusCode::NOT_ACCEPTABLE, None, "Accept must allow text/event-stream");
    }
    let Some((session, logs)) = shared.session(session_id) else {
        return error(StatusCode::NOT_FOUND, None, "Session not found");
    };
    // `Last-Event-ID: stream:n` resumes that request's stream after its n-th event.
    let resume = header_str(headers, "last-event-id").and_then(|last| {
        let (stream, position) = last.split_once(':')?;
        let (stream, position) = (stream.parse::<u64>().ok()?, position.parse::<usize>().ok()?);
        Some((stream, position, logs.lock().expect("not poisoned").find(stream)?))
    });
    match resume {
        Some((stream, position, log)) => sse_events(log.read(stream, position, false)),
        None => sse(shared.server.session_notifications(session)),
    }
}

fn delete(shared: Arc<Shared>, headers: &HeaderMap) -> Response {
    let Some(session_id) = header_str(headers, SESSION_HEADER) else {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    };
    match shared.sessions.lock().expect("not poisoned").remove(session_id) {
        Some(_) => StatusCode::OK.into_response(),
        None => error(StatusCode::NOT_FOUND, None, "Session not found"),
    }
}

impl Shared {
    fn session(&self, id: &str) -> Option<(Arc<Session>, Arc<Mutex<Logs>>)> {
        let mut sessions = self.sessions.lock().expect("not poisoned");
        let entry = sessions.get_mut(id)?;
        if entry.last_used.elapsed() > self.config.session_idle {
            sessions.remove(id);
            return None;
        }
        entry.last_used = Instant::now();
        Some((Arc::clone(&entry.session), Arc::clone(&entry.logs)))
    }

    fn insert(&self, session: Arc<Session>) -> String {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).expect("the operating system's random source is available");
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut sessions = self.sessions.lock().expect("not poisoned");
        let idle = self.config.session_idle;
        sessions.retain(|_, entry| entry.last_used.elapsed() <= idle);
        while sessions.len() >= self.config.max_sessions.max(1) {
            let oldest = sessions.iter().min_by_key(|(_, entry)| entry.last_used).map(|(id, _)| id.clone());
            let Some(oldest) = oldest else { break };
            sessions.remove(&oldest);
        }
        sessions.insert(id.clone(), Entry { session, logs: Default::default(), last_used: Instant::now() });
        id
    }
}

/// The 403 for a Host or Origin that is not allowed.
fn host_refusal(check: &HostCheck, headers: &HeaderMap) -> Option<Response> {
    let allowed: &[String] = match check {
        HostCheck::Disabled => return None,
        HostCheck::Loopback => &[],
        HostCheck::Allow(hosts) => hosts,
    };
    let ok = |host: &str| {
        let name = strip_port(host);
        matches!(name, "localhost" | "127.0.0.1" | "[::1]") || allowed.iter().any(|a| a.eq_ignore_ascii_case(name))
    };
    let host = header_str(headers, header::HOST.as_str()).unwrap_or_default();
    if !ok(host) {
        return Some(error(StatusCode::FORBIDDEN, None, &format!("Host `{host}` is not allowed")));
    }
    if let Some(origin) = header_str(headers, header::ORIGIN.as_str()) {
        let authority = origin.split_once("://").map_or(origin, |(_, rest)| rest);
        if !ok(authority.split('/').next().unwrap_or_default()) {
            return Some(error(StatusCode::FORBIDDEN, None, &format!("Origin `{origin}` is not allowed")));
        }
    }
    None
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok()).map(str::trim)
}

fn json_response(status: StatusCode, message: &Outgoing) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], message.json.clone()).into_response()
}

fn error(status: StatusCode, id: Option<&mcp_types::RequestId>, message: &str) -> Response {
    let error = ErrorObject::invalid_request(message);
    json_response(status, &Outgoing::error_as(id, &error, Disposition::BadRequest))
}

fn sse(messages: impl Stream<Item = Outgoing> + Send + 'static) -> Response {
    sse_events(messages.filter(|message| std::future::ready(message.is_message())).map(|m| Event::data(m.json)))
}

/// One server-sent event.
struct Event {
    id: Option<String>,
    retry: Option<Duration>,
    data: String,
}

impl Event {
    fn data(data: String) -> Self {
        Event { id: None, retry: None, data }
    }

    fn encode(&self) -> String {
        let mut text = String::new();
        if let Some(id) = &self.id {
            text.push_str(&format!("id: {id}\n"));
        }
        if let Some(retry) = self.retry {
            text.push_str(&format!("retry: {}\n", retry.as_millis()));
        }
        // Always a data line, so that an empty priming event is still dispatched by clients.
        for line in self.data.split('\n') {
            text.push_str(&format!("data: {line}\n"));
        }
        text.push('\n');
        text
    }
}

const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// An SSE response; a comment line every 15 s keeps idle streams (subscriptions) open.
fn sse_events(events: impl Stream<Item = Event> + Send + 'static) -> Response {
    let events = Box::pin(events);
    let body = futures::stream::unfold(events, |mut events| async move {
        let chunk = tokio::select! {
            event = events.next() => event?.encode(),
            () = tokio::time::sleep(KEEP_ALIVE) => ":\n\n".to_owned(),
        };
        Some((Ok::<_, Infallible>(chunk), events))
    });
    let mut response = Response::new(Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}
