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

use std::borrow::Cow;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt as _};
use mcp_types::ErrorObject;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::events::EventStore;
use crate::message::{Disposition, Outgoing, OutgoingKind};
use crate::session_table::{ClientKey, SessionTable, ShareFull};
use crate::store::StoreError;
use crate::telemetry::Arrival;
use crate::{
    headers::Mirrors, principal::Principal, server::LEGACY_VERSIONS, server::Server, session::Session,
    session::SessionRecord,
};

#[cfg(feature = "auth")]
mod authorization;
mod bodies;
mod connections;
mod guards;
mod self_wake;
mod sessions;
mod sse;
mod streams;
use bodies::{error, json_body, json_response, method_of, probe, read_body};
pub use connections::{ConnectionLimits, serve_router};
use guards::{KnownHeaders, host_refusal, repeated_mirror, repeated_single};
use sessions::SESSION_SHARE_FULL;
use sessions::{delete, get, other_principal, store_error};
use sse::{Event, KEEP_ALIVE_COMMENT, Logs, ReplayBudget, sse, sse_events};

const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
// Parsed once: a lookup by a `&str` parses the name again each time.
const PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");
const LAST_EVENT_ID_HEADER: HeaderName = HeaderName::from_static("last-event-id");

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

/// Settings of the HTTP transport. The connection limits ([`max_connections`](Self::max_connections),
/// [`max_connections_per_client`](Self::max_connections_per_client) and the header read timeout)
/// are applied by [`serve`], [`serve_with_shutdown`] and
/// [`serve_router`]; an application that serves [`router`] another way applies its own.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The endpoint path (default `/mcp`).
    pub path: String,
    /// Which `Host` and `Origin` values are accepted (default [`HostCheck::Loopback`]).
    pub host_check: HostCheck,
    /// Larger bodies get 413 (default 4 MiB).
    pub max_body_bytes: usize,
    /// A legacy session unused this long is closed: its requests in flight are stopped and its
    /// streams end (default 30 minutes).
    pub session_idle: Duration,
    /// At most this many legacy sessions on this instance; the least recently used one is
    /// closed to make room for a new one (default 65,536; each costs about 1 KiB beside what
    /// its requests hold).
    pub max_sessions: usize,
    /// At most this many legacy sessions per client, so that one client cannot push out
    /// everyone else's: a further `initialize` is refused with 429 naming this limit until one
    /// of its sessions ends (default 4,096). The client is the [`Principal`] an auth layer
    /// names, else the remote address (behind a proxy: the proxy's, so raise this or
    /// authenticate); without either ([`router`] served without connection info) no share
    /// applies.
    pub max_sessions_per_client: usize,
    /// The `retry` a legacy SSE stream announces in its priming event (default 1 s).
    pub sse_retry: Duration,
    /// Connections served at once (default 512); further ones wait in the listen backlog until
    /// one closes. Keep it below the process's descriptor limit (`ulimit -n`).
    pub max_connections: usize,
    /// Connections one remote address may hold at once (default 256, half of
    /// [`max_connections`](Self::max_connections)), so that one client opening connections and
    /// sending nothing cannot take them all: a further one is answered 429 and closed. The
    /// principal is not known yet when a connection opens, so this is per address; behind a
    /// proxy every client shares the proxy's address: raise it to `max_connections` there.
    pub max_connections_per_client: usize,
    /// A client must send a request's headers within this time of the connection becoming
    /// ready for them (a new connection, or an idle keep-alive one), or the connection is
    /// closed (default 10 s).
    pub header_read_timeout: Duration,
    /// A request body must arrive completely within this time, or the request is answered 408
    /// naming this limit and the connection closed (default 30 s).
    pub body_read_timeout: Duration,
    /// Bytes of messages a legacy session keeps for resumption with `Last-Event-ID` (default
    /// 1 MiB). Beyond it the oldest are dropped, and a message larger than it is not kept; a
    /// client reading its stream live loses nothing, a client resuming after a long gap may
    /// miss the oldest notifications.
    pub max_replay_bytes: usize,
    /// Bytes of messages all legacy sessions of this router keep for resumption together
    /// (default 64 MiB): beyond it, a session that writes drops its own oldest first, so that
    /// many sessions cannot hold their whole [`max_replay_bytes`](Self::max_replay_bytes) each.
    pub max_replay_bytes_total: usize,
    /// Long-lived streams (legacy GET streams, `subscriptions/listen`) one client may hold open
    /// at once: its principal, else its remote address (default 256, half of
    /// [`max_connections`](Self::max_connections), so that one client cannot hold them all).
    /// One more is answered 429 with `-32000` naming this limit. Behind a proxy, anonymous
    /// callers share the proxy's address: identify them (an auth layer's principal) or raise it.
    pub max_streams_per_client: usize,
    /// A long-lived stream (legacy GET stream, `subscriptions/listen`) that carried no event for
    /// this long is ended (default 30 min; keep-alive comments do not count), so that a stream
    /// nobody uses does not hold its client's share and a connection for ever; clients open
    /// it again.
    pub stream_idle: Duration,
    /// Where legacy SSE events are also kept, so that a client resumes a stream with
    /// `Last-Event-ID` on any instance sharing the store (default `None`: only on the instance
    /// that wrote it). See [`crate::events`].
    pub event_store: Option<Arc<dyn EventStore>>,
    /// Makes the endpoint an OAuth 2.1 resource server (feature `auth`): every request needs a
    /// valid access token, and its subject becomes the request's [`Principal`]. See
    /// [`crate::auth`]. Default `None`: requests are anonymous, unless a layer in front of the
    /// router inserts a [`Principal`].
    #[cfg(feature = "auth")]
    pub authorization: Option<crate::auth::ResourceServer>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            path: "/mcp".to_owned(),
            host_check: HostCheck::Loopback,
            max_body_bytes: 4 * 1024 * 1024,
            session_idle: Duration::from_secs(30 * 60),
            max_sessions: 65_536,
            max_sessions_per_client: 4_096,
            sse_retry: Duration::from_secs(1),
            max_connections: 512,
            max_connections_per_client: 256,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            max_replay_bytes: 1024 * 1024,
            max_replay_bytes_total: 64 * 1024 * 1024,
            max_streams_per_client: 256,
            stream_idle: Duration::from_secs(30 * 60),
            event_store: None,
            #[cfg(feature = "auth")]
            authorization: None,
        }
    }
}

struct Shared {
    server: Server,
    config: HttpConfig,
    sessions: Mutex<SessionTable<Entry>>,
    sweeper: std::sync::Once,
    /// What the replay logs of every session keep, in bytes.
    replay_bytes: Arc<std::sync::atomic::AtomicUsize>,
    streams: Arc<streams::StreamShares>,
}

struct Entry {
    session: Arc<Session>,
    logs: Arc<Mutex<Logs>>,
}

/// An axum router serving `server` at `config.path`.
///
/// The router applies the body size limit and timeout, the session limits and the replay
/// budget; [`serve`] adds the connection cap and the header read timeout.
pub fn router(server: Server, config: HttpConfig) -> Router {
    routes(server, config).0
}

/// [`router`], and the endpoint's state, for serving the endpoint's path without routing.
fn routes(server: Server, config: HttpConfig) -> (Router, Arc<Shared>) {
    let path = config.path.clone();
    // The metadata lists the scopes the routes need: a client registers for them.
    #[cfg(feature = "auth")]
    let config = HttpConfig {
        authorization: config.authorization.map(|a| a.with_route_scopes(server.route_scopes())),
        ..config
    };
    #[cfg(feature = "auth")]
    let authorization = config.authorization.clone();
    let shared = Arc::new(Shared {
        server,
        config,
        sessions: Mutex::new(SessionTable::default()),
        sweeper: std::sync::Once::new(),
        replay_bytes: Default::default(),
        streams: Default::default(),
    });
    let router = Router::new().route(&path, axum::routing::any(endpoint));
    #[cfg(feature = "auth")]
    let router = match authorization {
        Some(authorization) => authorization.metadata_paths().into_iter().fold(router, |router, well_known| {
            let authorization = authorization.clone();
            router.route(&well_known, axum::routing::get(move || std::future::ready(authorization.metadata_response())))
        }),
        None => router,
    };
    (router.with_state(Arc::clone(&shared)), shared)
}

/// Serves until the listener fails.
pub async fn serve(listener: TcpListener, server: Server, config: HttpConfig) -> std::io::Result<()> {
    serve_with_shutdown(listener, server, config, std::future::pending()).await
}

/// Serves until `shutdown` completes, then lets the open connections finish.
///
/// At most [`HttpConfig::max_connections`] connections are served at once (further ones wait
/// in the listen backlog), at most [`HttpConfig::max_connections_per_client`] of one remote
/// address, and each must send its request headers within [`HttpConfig::header_read_timeout`].
pub async fn serve_with_shutdown(
    listener: TcpListener,
    server: Server,
    config: HttpConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with_routes(listener, server, config, Router::new(), shutdown).await
}

/// [`serve_with_shutdown`], with routes of the application's own beside the endpoint (a health
/// check, say): `routes` may carry layers, which apply to its routes only.
///
/// The endpoint itself is served without routing. To put a layer in front of the endpoint (an
/// authentication layer, say), serve a layered [`router`] with [`serve_router`] instead.
///
/// # Panics
///
/// If `routes` has a route at the endpoint's path or the authorization metadata's, as
/// [`Router::merge`] does.
pub async fn serve_with_routes(
    listener: TcpListener,
    server: Server,
    config: HttpConfig,
    routes: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = ConnectionLimits::from(&config);
    #[cfg(feature = "auth")]
    if let Some(authorization) = config.authorization.clone() {
        tokio::spawn(log_authorization_check(authorization));
    }
    // Nothing is layered onto the endpoint's route, so it is served without routing.
    let (app, shared) = self::routes(server, config);
    connections::serve_endpoint_direct(listener, app.merge(routes), shared, limits, shutdown).await
}

/// Says once, at start, whether access tokens can be verified as configured (the issuer's
/// metadata found and naming that issuer, its keys fetched), beside serving: an issuer that is
/// not up yet is no reason to wait.
#[cfg(feature = "auth")]
async fn log_authorization_check(authorization: crate::auth::ResourceServer) {
    use crate::auth::VerifyError;
    let resource = authorization.resource().to_owned();
    match authorization.check().await {
        Ok(()) => tracing::info!(%resource, "access tokens can be verified"),
        Err(VerifyError::Misconfigured(why)) => {
            tracing::error!(%resource, %why, "no access token can be verified as configured; fix the configuration")
        }
        Err(error) => tracing::warn!(%resource, %error, "access tokens cannot be verified yet"),
    }
}

/// Who makes the request: the verified token's subject when the endpoint is a resource server
/// (else its challenge), or what an auth layer in front of the router inserted, or anonymous.
async fn caller(
    shared: &Shared,
    parts: &axum::http::request::Parts,
    remote: Option<IpAddr>,
    arrival: Option<&mut Arrival>,
) -> Result<Principal, Response> {
    #[cfg(feature = "auth")]
    if let Some(authorization) = &shared.config.authorization {
        return authorization::authenticate(authorization, parts, remote, arrival).await;
    }
    #[cfg(not(feature = "auth"))]
    let _ = (shared, remote, arrival);
    Ok(parts.extensions.get::<Principal>().cloned().unwrap_or_default())
}

/// The W3C trace context headers of a request, as `_meta` would carry them.
fn trace_headers(headers: &HeaderMap) -> Option<mcp_types::JsonObject> {
    let trace: mcp_types::JsonObject = ["traceparent", "tracestate", "baggage"]
        .into_iter()
        .filter_map(|name| Some((name.to_owned(), Value::from(headers.get(name)?.to_str().ok()?))))
        .collect();
    (!trace.is_empty()).then_some(trace)
}

/// The endpoint as the router serves it: the remote address, when known, comes as the
/// `ConnectInfo` extension.
async fn endpoint(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let remote = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|info| info.0.ip());
    serve_request(shared, request, remote).await
}

/// Serves a request to the endpoint from `remote`.
async fn serve_request(shared: Arc<Shared>, request: Request, remote: Option<IpAddr>) -> Response {
    shared.start_sweeper();
    let (parts, body) = request.into_parts();
    // A POST carries a request: its span opens now, so that the authorization check runs in it
    // and a refusal before the server sees the message is recorded in it. A GET or a DELETE has
    // a span of its own too, named by the HTTP method.
    let known = KnownHeaders::of(&parts.headers);
    let trace = || trace_headers(&parts.headers);
    let mut arrival = match parts.method {
        Method::POST => Some(Arrival::open(KnownHeaders::text(known.method), trace)),
        Method::GET => Some(Arrival::open_without_message("GET", trace)),
        Method::DELETE => Some(Arrival::open_without_message("DELETE", trace)),
        _ => None,
    };
    let response = serve_endpoint(shared, &parts, &known, body, remote, arrival.as_mut()).await;
    // Refused before the server served the message (unless recorded already): by the JSON-RPC
    // error the body carries, else by the HTTP status.
    if let Some(arrival) = &mut arrival {
        let rpc_code = response.extensions().get::<RefusedWith>().map(|RefusedWith(code)| *code);
        arrival.answered(response.status(), rpc_code);
    }
    response
}

/// The JSON-RPC error code of a response the transport wrote, for the request's span.
#[derive(Clone, Copy)]
struct RefusedWith(i64);

async fn serve_endpoint(
    shared: Arc<Shared>,
    parts: &axum::http::request::Parts,
    known: &KnownHeaders<'_>,
    body: Body,
    remote: Option<IpAddr>,
    mut arrival: Option<&mut Arrival>,
) -> Response {
    if let Some(name) = repeated_single(&parts.headers) {
        let message = format!("The {name} header appears more than once; send it exactly once");
        return error(StatusCode::BAD_REQUEST, None, &message);
    }
    if let Some(refusal) = host_refusal(&shared.config.host_check, known) {
        return refusal;
    }
    let principal = match caller(&shared, parts, remote, arrival.as_deref_mut()).await {
        Ok(principal) => principal,
        Err(refusal) => return refusal,
    };
    let client = ClientKey::new(&principal, remote);
    let long_lived = streams::is_long_lived(&parts.method, known);
    let slot = match long_lived {
        false => None,
        true => match streams::admit(&shared.streams, &client, shared.config.max_streams_per_client) {
            Ok(slot) => slot,
            Err(()) => return streams::share_full(shared.config.max_streams_per_client),
        },
    };
    let response = match (&parts.method, arrival) {
        (&Method::POST, Some(arrival)) => {
            post(Arc::clone(&shared), &parts.headers, known, body, principal, client, arrival).await
        }
        (&Method::GET, _) => get(Arc::clone(&shared), &parts.headers, &principal).await,
        (&Method::DELETE, _) => delete(Arc::clone(&shared), &parts.headers, &principal).await,
        _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
    };
    if !long_lived {
        return response;
    }
    streams::holding(response, slot, shared.config.stream_idle)
}

async fn post(
    shared: Arc<Shared>,
    headers: &HeaderMap,
    known: &KnownHeaders<'_>,
    body: Body,
    principal: Principal,
    client: ClientKey,
    arrival: &mut Arrival,
) -> Response {
    if let Some(accept) = KnownHeaders::text(known.accept)
        && !["application/json", "text/event-stream", "*/*", "application/*", "text/*"]
            .iter()
            .any(|t| accept.contains(t))
    {
        return error(StatusCode::NOT_ACCEPTABLE, None, "Accept must allow application/json and text/event-stream");
    }
    let limit = shared.config.max_body_bytes;
    let deadline = shared.config.body_read_timeout;
    let bytes = match tokio::time::timeout(deadline, read_body(body, limit)).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(bodies::BodyError::TooLarge)) => {
            return error(StatusCode::PAYLOAD_TOO_LARGE, None, &format!("The request body exceeds {limit} bytes"));
        }
        Ok(Err(bodies::BodyError::Unreadable(reason))) => {
            return error(StatusCode::BAD_REQUEST, None, &format!("The request body could not be read: {reason}"));
        }
        Err(_) => {
            let message = format!(
                "The request body did not arrive within {} s (HttpConfig::body_read_timeout)",
                deadline.as_secs_f64()
            );
            let mut response = error(StatusCode::REQUEST_TIMEOUT, None, &message);
            // The rest of the body is never read: the connection cannot carry another request.
            response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        }
    };
    // Before anything is built from the body: a body of very many tiny objects is refused for
    // what its text costs (`Options::max_json_containers`), an oversized batch for its length.
    if let Some(refusal) = shared.server.refusal_before_decode(&bytes)
        && let Some(response) = refusal.known_response()
    {
        return json_response(StatusCode::BAD_REQUEST, response);
    }
    // The body is decoded once, by the server, into the types of its era. Before that, only a
    // refusal needs it (for its id) and a legacy request without a session (is it `initialize`?):
    // they read it here, and a body that is not JSON is refused first, as a parse error.
    let peek = || match serde_json::from_slice::<Value>(&bytes) {
        Ok(message) => Ok(message),
        Err(e) => {
            let error = ErrorObject::parse_error(format!("Parse error: {e}"));
            Err(Box::new(json_response(
                StatusCode::BAD_REQUEST,
                &Outgoing::error_as(None, &error, Disposition::BadRequest),
            )))
        }
    };
    let request_id = |message: &Value| message.get("id").cloned().and_then(|id| serde_json::from_value(id).ok());
    if let Some(name) = repeated_mirror(headers) {
        let id: Option<mcp_types::RequestId> = match peek() {
            Ok(message) => request_id(&message),
            Err(response) => return *response,
        };
        let error = ErrorObject::new(
            mcp_types::error_codes::HEADER_MISMATCH,
            format!("The {name} header appears more than once; send each mirrored header exactly once"),
        );
        return json_response(
            StatusCode::BAD_REQUEST,
            &Outgoing::error_as(id.as_ref(), &error, Disposition::BadRequest),
        );
    }
    let version = KnownHeaders::text(known.protocol_version);
    let legacy_wire = version.is_none_or(|v| LEGACY_VERSIONS.contains(&v));
    let session_id = KnownHeaders::text(known.session);

    // Modern requests are stateless: a session id that comes with one is ignored.
    let (session, new_session, logs) = match (legacy_wire, session_id) {
        (true, Some(session_id)) => match shared.resolve(session_id).await {
            Ok(Some((session, _))) if session.principal() != &principal => {
                let id = peek().ok().as_ref().and_then(request_id);
                return other_principal(id.as_ref());
            }
            Ok(Some((session, logs))) => {
                session.authorized(principal.token_arc());
                (session, false, Some(logs))
            }
            Err(e) => {
                let id = match peek() {
                    Ok(message) => request_id(&message),
                    Err(response) => return *response,
                };
                return json_response(StatusCode::OK, &Outgoing::error(id.as_ref(), &store_error(&e)));
            }
            Ok(None) => {
                let id = match peek() {
                    Ok(message) => request_id(&message),
                    Err(response) => return *response,
                };
                let error = ErrorObject::invalid_request("Session not found; send initialize without a session id");
                return json_response(
                    StatusCode::NOT_FOUND,
                    &Outgoing::error_as(id.as_ref(), &error, Disposition::NotFound),
                );
            }
        },
        (true, None) => {
            let (id, is_initialize) = match probe(&bytes) {
                Some(found) => found,
                None => match peek() {
                    Ok(message) => {
                        (request_id(&message), message.get("method").and_then(Value::as_str) == Some("initialize"))
                    }
                    Err(response) => return *response,
                },
            };
            if is_initialize {
                if let Some(refusal) = shared.share_refusal(&client, id.as_ref()) {
                    return refusal;
                }
                (Session::with_principal(principal), true, None)
            } else {
                (Session::with_principal(principal), false, None)
            }
        }
        _ => (Session::with_principal(principal), false, None),
    };
    let mirrors = Mirrors {
        protocol_version: version.map(Cow::Borrowed),
        method: KnownHeaders::text(known.method).map(Cow::Borrowed),
        name: KnownHeaders::text(known.name).map(Cow::Borrowed),
        params: known
            .params
            .iter()
            .map(|&(param, value)| (Cow::Borrowed(param), String::from_utf8_lossy(value.as_bytes())))
            .collect(),
    };
    session.set_transport(crate::telemetry::Transport::Http);
    if let ClientKey::Address(address) = &client {
        session.set_remote(*address);
    }
    if let (Some(id), Some(_)) = (session_id, &logs) {
        session.set_http_id(id);
    }
    // What the session was before this message: a change is saved for the other instances
    // before the answer goes out.
    let stored = session_id.filter(|_| logs.is_some()).map(|id| (id, session.revision()));
    let persist = async |session: &Session| match stored {
        Some((id, before)) => shared.persist(id, session, before).await,
        None => Ok(()),
    };
    // A batch's requests open spans of their own.
    let handled = match bytes.trim_ascii_start().starts_with(b"[") {
        true => shared.server.handle_measured_bytes(&session, &bytes, Some(&mirrors)),
        false => arrival.serve(|| shared.server.handle_measured_bytes(&session, &bytes, Some(&mirrors))),
    };
    let Some(mut reply) = handled else {
        arrival.name_unserved(|| method_of(&bytes));
        if let Err(e) = persist(&session).await {
            return json_response(StatusCode::OK, &Outgoing::error(None, &store_error(&e)));
        }
        return StatusCode::ACCEPTED.into_response();
    };
    let Some(first) = reply.next().await else {
        // Cancelled before it answered (a legacy `notifications/cancelled`).
        return StatusCode::NO_CONTENT.into_response();
    };
    // Refused before a handler was reached (when a handler's request took the span, a no-op).
    arrival.name_unserved(|| method_of(&bytes));
    if first.is_response() {
        arrival.refused_with(&first);
    }
    if let Err(e) = persist(&session).await {
        let id = peek().ok().as_ref().and_then(request_id);
        return json_response(StatusCode::OK, &Outgoing::error(id.as_ref(), &store_error(&e)));
    }
    #[cfg(feature = "auth")]
    if first.kind == OutgoingKind::Response(Disposition::Forbidden)
        && let Some(authorization) = &shared.config.authorization
        && let Some(challenge) = authorization::scope_challenge(authorization, session.principal(), &first)
    {
        return challenge;
    }
    let mut response = if first.is_response() {
        let status = match first.kind {
            OutgoingKind::Response(Disposition::BadRequest) => StatusCode::BAD_REQUEST,
            OutgoingKind::Response(Disposition::NotFound) => StatusCode::NOT_FOUND,
            OutgoingKind::Response(Disposition::Forbidden) => StatusCode::FORBIDDEN,
            _ => StatusCode::OK,
        };
        // Moved, not copied: a large result is written once.
        json_body(status, first.json)
    } else if let Some(logs) = logs {
        // The messages go to the session's replay log and, while the client reads, straight to
        // this response: a live reader loses nothing to the replay budget, and a client that
        // hung up can resume with `Last-Event-ID`.
        let (stream, log) = logs.lock().expect("not poisoned").open();
        let (live, events) = tokio::sync::mpsc::channel::<Event>(32);
        let pump_session = Arc::clone(&session);
        let store = shared.config.event_store.clone().zip(session_id.map(str::to_owned));
        let store_for_end = store.clone();
        tokio::spawn(async move {
            let pump = async {
                let mut live = Some(live);
                let mut next = Some(first);
                loop {
                    let message = match next.take() {
                        Some(message) => message,
                        None => match reply.next().await {
                            Some(message) => message,
                            None => break,
                        },
                    };
                    let entry = message.is_message().then_some(message.json);
                    let position = logs.lock().expect("not poisoned").push(&log, entry.clone());
                    if let (Some((store, session_id)), Some(data)) = (&store, &entry) {
                        // Stored before it is sent: a client that sees it can resume after it
                        // anywhere.
                        if let Err(error) = store.append(session_id, stream, position as u64, data).await {
                            tracing::warn!(%error, stream, "an SSE event was not stored for resumption elsewhere");
                        }
                    }
                    let Some(data) = entry else {
                        // A stream break ends this response; the client resumes from the log.
                        live = None;
                        continue;
                    };
                    if let Some(sender) = &live {
                        let event = Event { id: Some(format!("{stream}:{position}")), retry: None, data };
                        if sender.send(event).await.is_err() {
                            live = None;
                        }
                    }
                }
            };
            tokio::select! {
                () = pump => {}
                () = pump_session.closed() => {}
            }
            log.finish();
            if let Some((store, session_id)) = store_for_end
                && let Err(error) = store.finish(&session_id, stream).await
            {
                tracing::warn!(%error, stream, "an SSE stream's end was not stored");
            }
        });
        let priming =
            Event { id: Some(format!("{stream}:0")), retry: Some(shared.config.sse_retry), data: String::new() };
        let live = futures::stream::unfold(events, |mut events| async move { Some((events.recv().await?, events)) });
        sse_events(futures::stream::once(async { priming }).chain(live))
    } else {
        sse(futures::stream::once(async { first }).chain(reply))
    };
    if new_session && let Some(record) = session.record() {
        let session_id = match shared.insert(session, &record, client).await {
            Ok(Ok(session_id)) => session_id,
            Ok(Err(ShareFull)) => {
                return shared.share_refusal_response(peek().ok().as_ref().and_then(request_id).as_ref());
            }
            Err(e) => {
                let id = peek().ok().as_ref().and_then(request_id);
                return json_response(StatusCode::OK, &Outgoing::error(id.as_ref(), &store_error(&e)));
            }
        };
        if let Ok(value) = HeaderValue::from_str(&session_id) {
            response.headers_mut().insert(SESSION_HEADER, value);
        }
    }
    response
}

/// A header's first value as text, trimmed; `None` when absent or not visible ASCII.
fn header_str<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    KnownHeaders::text(headers.get(name))
}
