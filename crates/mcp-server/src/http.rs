//! Streamable HTTP with axum: one endpoint for both eras. Modern requests are stateless POSTs;
//! legacy clients open a session with `initialize` and get an `Mcp-Session-Id`, a GET stream for
//! session notifications, and DELETE to end it.
//!
//! This layer only carries bytes and headers: it checks Host/Origin, the body size and the
//! session, hands the body and the mirrored headers to [`Server::handle`], and turns the
//! [`Reply`](crate::Reply) into a JSON body (when the response is all there is) or an SSE stream.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt as _};
use mcp_types::ErrorObject;
use serde_json::Value;
use tokio::net::TcpListener;

use crate::message::{Disposition, Outgoing, OutgoingKind};
use crate::{LEGACY_VERSIONS, Mirrors, Server, Session};

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
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            path: "/mcp".to_owned(),
            host_check: HostCheck::Loopback,
            max_body_bytes: 4 * 1024 * 1024,
            session_idle: Duration::from_secs(30 * 60),
            max_sessions: 1024,
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
    last_used: Instant,
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
    if let Err(response) = check_host(&shared.config.host_check, &parts.headers) {
        return response;
    }
    match parts.method {
        Method::POST => post(shared, parts.headers, body).await,
        Method::GET => get(shared, &parts.headers),
        Method::DELETE => delete(shared, &parts.headers),
        _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
    }
}

async fn post(shared: Arc<Shared>, headers: HeaderMap, body: Body) -> Response {
    if let Some(accept) = header_str(&headers, header::ACCEPT.as_str())
        && !["application/json", "text/event-stream", "*/*", "application/*", "text/*"].iter().any(|t| accept.contains(t))
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
    let (session, new_session) = match (legacy_wire, session_id) {
        (true, Some(session_id)) => match shared.session(session_id) {
            Some(session) => (session, false),
            None => {
                let error = ErrorObject::invalid_request("Session not found; send initialize without a session id");
                return json_response(StatusCode::NOT_FOUND, &Outgoing::error_as(id.as_ref(), &error, Disposition::NotFound));
            }
        },
        (true, None) if is_initialize => (Session::new(), true),
        _ => (Session::new(), false),
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
    if header_str(headers, header::ACCEPT.as_str()).is_some_and(|a| !a.contains("text/event-stream") && !a.contains("*/*"))
    {
        return error(StatusCode::NOT_ACCEPTABLE, None, "Accept must allow text/event-stream");
    }
    match shared.session(session_id) {
        Some(session) => sse(shared.server.session_notifications(session)),
        None => error(StatusCode::NOT_FOUND, None, "Session not found"),
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
    fn session(&self, id: &str) -> Option<Arc<Session>> {
        let mut sessions = self.sessions.lock().expect("not poisoned");
        let entry = sessions.get_mut(id)?;
        if entry.last_used.elapsed() > self.config.session_idle {
            sessions.remove(id);
            return None;
        }
        entry.last_used = Instant::now();
        Some(Arc::clone(&entry.session))
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
        sessions.insert(id.clone(), Entry { session, last_used: Instant::now() });
        id
    }
}

fn check_host(check: &HostCheck, headers: &HeaderMap) -> Result<(), Response> {
    let allowed: &[String] = match check {
        HostCheck::Disabled => return Ok(()),
        HostCheck::Loopback => &[],
        HostCheck::Allow(hosts) => hosts,
    };
    let ok = |host: &str| {
        let name = strip_port(host);
        matches!(name, "localhost" | "127.0.0.1" | "[::1]") || allowed.iter().any(|a| a.eq_ignore_ascii_case(name))
    };
    let host = header_str(headers, header::HOST.as_str()).unwrap_or_default();
    if !ok(host) {
        return Err(error(StatusCode::FORBIDDEN, None, &format!("Host `{host}` is not allowed")));
    }
    if let Some(origin) = header_str(headers, header::ORIGIN.as_str()) {
        let authority = origin.split_once("://").map_or(origin, |(_, rest)| rest);
        if !ok(authority.split('/').next().unwrap_or_default()) {
            return Err(error(StatusCode::FORBIDDEN, None, &format!("Origin `{origin}` is not allowed")));
        }
    }
    Ok(())
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
    let events = messages.map(|message| Ok::<_, Infallible>(Event::default().data(message.json)));
    let mut response = Sse::new(events).keep_alive(KeepAlive::default()).into_response();
    response.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}
