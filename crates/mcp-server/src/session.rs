//! The state of one legacy connection (a stdio process or an HTTP `Mcp-Session-Id`): what
//! `initialize` negotiated, the log level, resource subscriptions, and the server-to-client
//! requests waiting for their answers. Modern requests carry everything in `_meta` and use a
//! session only to be cancellable.
//!
//! A session owns the handlers running for it: [`Session::close`] stops them and fails the
//! server-to-client requests they wait on, so nothing outlives the connection or session that
//! started it.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use mcp_types::{ClientCapabilities, ErrorObject, Implementation, LoggingLevel, RequestId};
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};

use crate::message::{Outgoing, Stop};
use crate::store::{StoreError, StoreFuture};
use crate::telemetry::{self, SessionTimer, Transport};
use crate::{error::Error, principal::Principal};

/// Maps by request id, touched on every request: foldhash (seeded per process), not SipHash.
type ById<V> = HashMap<RequestId, V, foldhash::fast::RandomState>;
type Pending = ById<oneshot::Sender<Result<Value, ErrorObject>>>;

/// One connection's state. Cheap to create; transports make one per connection or session.
#[derive(Default)]
pub struct Session {
    principal: Principal,
    /// The token of the session's latest authorized request (HTTP with authorization): what its
    /// handlers read through [`Context::principal`](crate::Context::principal).
    latest_token: Mutex<Option<Arc<crate::principal::VerifiedToken>>>,
    /// What a legacy session negotiated; `None` (nothing) until it changes, so that the session of
    /// a stateless request stays small.
    legacy: Mutex<Option<Box<Legacy>>>,
    /// How many times `legacy` changed: a transport saves the record only when this moved.
    revision: AtomicU64,
    pending: Mutex<Pending>,
    next_id: AtomicI64,
    in_flight: Mutex<InFlight>,
    /// No answer from the client can arrive any more (its input closed, or the session closed).
    input_closed: AtomicBool,
    closed: AtomicBool,
    on_close: Notify,
    /// How the session reaches the server and its HTTP session id, for telemetry.
    transport: OnceLock<Transport>,
    http_id: OnceLock<Arc<str>>,
    /// The remote address of an anonymous HTTP caller: whose quotas its requests count against.
    remote: OnceLock<std::net::IpAddr>,
    /// Set when the session opens (a connection, or a legacy `initialize`).
    timer: OnceLock<SessionTimer>,
}

#[derive(Default, Clone)]
pub(crate) struct Legacy {
    pub version: Option<String>,
    pub initialized: bool,
    /// Shared with each request's context.
    pub client_capabilities: Arc<ClientCapabilities>,
    pub client_info: Option<Arc<Implementation>>,
    pub log_level: Option<LoggingLevel>,
    pub subscriptions: BTreeSet<String>,
}

/// What a legacy session (an HTTP `Mcp-Session-Id`) negotiated and chose: everything another
/// instance needs to serve it. Requests in flight, server-to-client requests and SSE replay
/// logs stay with the instance that holds them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The party that opened the session.
    pub principal: Principal,
    /// The protocol revision `initialize` negotiated.
    pub protocol_version: String,
    /// Whether `notifications/initialized` arrived.
    pub initialized: bool,
    /// The capabilities the client declared in `initialize`.
    pub client_capabilities: ClientCapabilities,
    /// The `clientInfo` of `initialize`.
    pub client_info: Option<Implementation>,
    /// The level of `logging/setLevel`; `None` until the client sets one.
    pub log_level: Option<LoggingLevel>,
    /// The URIs of `resources/subscribe`.
    pub subscriptions: BTreeSet<String>,
}

/// Where legacy HTTP sessions live, by `Mcp-Session-Id`, so that a session opened on one
/// instance is served by any other sharing the store, after the first is gone. A session
/// unused for `idle` is forgotten; every use starts that time again.
/// [`InMemorySessionStore`] (the default) keeps them for one process.
pub trait SessionStore: Send + Sync + 'static {
    /// Stores the session's record, replacing any, to be forgotten after `idle` unused.
    fn save<'a>(&'a self, id: &'a str, record: &'a SessionRecord, idle: Duration) -> StoreFuture<'a, ()>;

    /// The session's record (`None`: unknown, ended or idle too long); starts `idle` again.
    fn load<'a>(&'a self, id: &'a str, idle: Duration) -> StoreFuture<'a, Option<SessionRecord>>;

    /// Forgets the session.
    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()>;

    /// Whether the session is still stored; starts `idle` again. The transport asks this on every
    /// request of a session it already holds, so a store should answer without reading the record.
    fn touch<'a>(&'a self, id: &'a str, idle: Duration) -> StoreFuture<'a, bool> {
        Box::pin(async move { Ok(self.load(id, idle).await?.is_some()) })
    }
}

/// The default [`SessionStore`]: this process's memory. An idle session is dropped when
/// touched, and a sweep drops the rest once as many saves as there were sessions at the last
/// sweep have come (so saving stays O(1) amortized); the HTTP transport's `max_sessions`
/// bounds what is held.
#[derive(Default)]
pub struct InMemorySessionStore(Mutex<Records>);

#[derive(Default)]
struct Records {
    /// By session id: the server's own random ids, so a fast hash is safe (no caller chooses the
    /// keys). Looked up on every request of a session.
    by_id: HashMap<String, (SessionRecord, Instant), foldhash::fast::RandomState>,
    saves_since_sweep: usize,
}

impl Records {
    /// The record, its idle time started again; an idle one is dropped instead.
    fn use_record(&mut self, id: &str, idle: Duration) -> Option<&SessionRecord> {
        let now = Instant::now();
        if self.by_id.get(id).is_some_and(|(_, expires)| *expires <= now) {
            self.by_id.remove(id);
        }
        let (record, expires) = self.by_id.get_mut(id)?;
        *expires = now + idle;
        Some(record)
    }
}

impl InMemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many sessions are stored (idle ones not yet dropped included).
    pub fn len(&self) -> usize {
        self.0.lock().expect("not poisoned").by_id.len()
    }

    /// Whether no session is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl SessionStore for InMemorySessionStore {
    fn save<'a>(&'a self, id: &'a str, record: &'a SessionRecord, idle: Duration) -> StoreFuture<'a, ()> {
        let mut records = self.0.lock().expect("not poisoned");
        let now = Instant::now();
        records.saves_since_sweep += 1;
        if records.saves_since_sweep > records.by_id.len().max(64) {
            records.by_id.retain(|_, (_, expires)| *expires > now);
            records.saves_since_sweep = 0;
        }
        records.by_id.insert(id.to_owned(), (record.clone(), now + idle));
        Box::pin(std::future::ready(Ok(())))
    }

    fn load<'a>(&'a self, id: &'a str, idle: Duration) -> StoreFuture<'a, Option<SessionRecord>> {
        let found = self.0.lock().expect("not poisoned").use_record(id, idle).cloned();
        Box::pin(std::future::ready(Ok::<_, StoreError>(found)))
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        self.0.lock().expect("not poisoned").by_id.remove(id);
        Box::pin(std::future::ready(Ok(())))
    }

    fn touch<'a>(&'a self, id: &'a str, idle: Duration) -> StoreFuture<'a, bool> {
        let found = self.0.lock().expect("not poisoned").use_record(id, idle).is_some();
        Box::pin(std::future::ready(Ok(found)))
    }
}

impl Session {
    /// A session of `record`'s principal in the state `record` describes (a session opened on
    /// another instance).
    pub fn restore(record: SessionRecord) -> Arc<Self> {
        let session = Session::with_principal(record.principal);
        session.update(|legacy| {
            *legacy = Legacy {
                version: Some(record.protocol_version),
                initialized: record.initialized,
                client_capabilities: Arc::new(record.client_capabilities),
                client_info: record.client_info.map(Arc::new),
                log_level: record.log_level,
                subscriptions: record.subscriptions,
            }
        });
        session
    }

    /// What another instance needs to serve this session; `None` before `initialize` succeeded.
    pub fn record(&self) -> Option<SessionRecord> {
        let legacy = self.legacy();
        Some(SessionRecord {
            principal: self.principal.clone(),
            protocol_version: legacy.version?,
            initialized: legacy.initialized,
            client_capabilities: Arc::unwrap_or_clone(legacy.client_capabilities),
            client_info: legacy.client_info.map(Arc::unwrap_or_clone),
            log_level: legacy.log_level,
            subscriptions: legacy.subscriptions,
        })
    }

    /// A session of the anonymous principal.
    pub fn new() -> Arc<Self> {
        Arc::new(Session::default())
    }

    /// A session of `principal`: the party its requests come from (see [`Principal`]).
    pub fn with_principal(principal: Principal) -> Arc<Self> {
        Arc::new(Session { principal, ..Session::default() })
    }

    /// Records how the session reaches the server (the first call counts).
    pub(crate) fn set_transport(&self, transport: Transport) {
        let _ = self.transport.set(transport);
    }

    pub(crate) fn transport(&self) -> Option<Transport> {
        self.transport.get().copied()
    }

    /// The session opened: a stdio connection, or a legacy session's `initialize` (the first
    /// call counts). Its duration is recorded when it is dropped.
    pub(crate) fn opened(&self, version: Option<&str>) {
        if self.timer.get().is_none() {
            let _ = self.timer.set(SessionTimer::start(self.transport(), version));
        }
    }

    /// Records the `Mcp-Session-Id` a legacy HTTP session is known by.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn set_http_id(&self, id: &str) {
        // Called on every request of the session: allocate only the first time.
        if self.http_id.get().is_none() {
            let _ = self.http_id.set(id.into());
        }
    }

    /// Records the remote address of an anonymous HTTP caller (the first call counts).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn set_remote(&self, address: std::net::IpAddr) {
        let _ = self.remote.set(address);
    }

    pub(crate) fn remote(&self) -> Option<std::net::IpAddr> {
        self.remote.get().copied()
    }

    pub(crate) fn http_id(&self) -> Option<&str> {
        self.http_id.get().map(|id| &**id)
    }

    /// The party the session's requests come from.
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// The principal a request on this session is served as: the session's, with the token of
    /// its latest authorized request when one was given ([`Session::authorized`]).
    pub(crate) fn request_principal(&self) -> Principal {
        match &*self.latest_token.lock().expect("not poisoned") {
            Some(token) => self.principal.with_token(Some(Arc::clone(token))),
            None => self.principal.clone(),
        }
    }

    /// A request of the session's own principal came with `token` (a fresh one, perhaps with
    /// more scopes after a step-up): its handlers and later ones read it.
    #[cfg(feature = "http")]
    pub(crate) fn authorized(&self, token: Option<&Arc<crate::principal::VerifiedToken>>) {
        if let Some(token) = token {
            *self.latest_token.lock().expect("not poisoned") = Some(Arc::clone(token));
        }
    }

    /// The version `initialize` negotiated, if this is a legacy session.
    pub fn protocol_version(&self) -> Option<String> {
        self.legacy.lock().expect("not poisoned").as_ref().and_then(|legacy| legacy.version.clone())
    }

    /// Whether `initialize` negotiated a legacy revision on this session.
    pub(crate) fn is_initialized_legacy(&self) -> bool {
        self.legacy.lock().expect("not poisoned").as_ref().is_some_and(|legacy| legacy.version.is_some())
    }

    pub(crate) fn legacy(&self) -> Legacy {
        self.legacy.lock().expect("not poisoned").as_deref().cloned().unwrap_or_default()
    }

    /// Reads the legacy state without copying all of it.
    pub(crate) fn read_legacy<R>(&self, read: impl FnOnce(&Legacy) -> R) -> R {
        static UNCHANGED: std::sync::LazyLock<Legacy> = std::sync::LazyLock::new(Legacy::default);
        read(self.legacy.lock().expect("not poisoned").as_deref().unwrap_or(&UNCHANGED))
    }

    pub(crate) fn update(&self, change: impl FnOnce(&mut Legacy)) {
        change(self.legacy.lock().expect("not poisoned").get_or_insert_default());
        self.revision.fetch_add(1, Ordering::Relaxed);
    }

    /// Moves on every [`SessionRecord`] change (through `update`): compare two readings to know
    /// whether the record must be saved again.
    #[cfg(feature = "http")]
    pub(crate) fn revision(&self) -> u64 {
        self.revision.load(Ordering::Relaxed)
    }

    pub(crate) fn log_level(&self) -> Option<LoggingLevel> {
        self.legacy.lock().expect("not poisoned").as_ref().and_then(|legacy| legacy.log_level)
    }

    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        self.legacy.lock().expect("not poisoned").as_ref().is_some_and(|legacy| legacy.subscriptions.contains(uri))
    }

    /// Sends a server-to-client request on `sink` and waits, at most `timeout`, for the
    /// client's answer.
    pub(crate) async fn request(
        &self,
        sink: &crate::message::Sink,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, Error> {
        let id = RequestId::Integer(self.next_id.fetch_add(1, Ordering::Relaxed) + 1);
        let (tx, rx) = oneshot::channel();
        {
            // Checked under the lock that `end_input` clears, so no waiter is left behind.
            let mut pending = self.pending.lock().expect("not poisoned");
            if self.input_closed.load(Ordering::SeqCst) {
                return Err(Error::Failed(format!("the client closed the connection; {method} cannot be answered")));
            }
            pending.insert(id.clone(), tx);
        }
        let _forget = RemovePending { session: self, id: &id };
        let span = telemetry::outgoing_request_span(method);
        let mut params = params;
        telemetry::inject(&span, &mut params);
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        sink.send(Outgoing::request(&message)).await.map_err(|_| Error::internal("the client went away"))?;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(Error::Failed(format!("the client answered {method} with an error: {error}"))),
            Ok(Err(_)) => {
                Err(Error::Failed(format!("the client closed the connection or session before it answered {method}")))
            }
            Err(_) => Err(Error::Failed(format!(
                "the client did not answer {method} within {} s (Options::client_request_timeout)",
                timeout.as_secs_f64()
            ))),
        }
    }

    /// No answer from the client can arrive any more: the server-to-client requests waiting
    /// fail at once, and new ones fail when they are made. Handlers keep running.
    pub(crate) fn end_input(&self) {
        let mut pending = self.pending.lock().expect("not poisoned");
        self.input_closed.store(true, Ordering::SeqCst);
        pending.clear();
    }

    /// Ends the session: its handlers are stopped, the server-to-client requests they wait on
    /// fail, and its streams end. Idempotent.
    pub fn close(&self) {
        self.end_input();
        self.closed.store(true, Ordering::SeqCst);
        for task in std::mem::take(&mut *self.in_flight.lock().expect("not poisoned")).into_stops() {
            task.abort();
        }
        self.on_close.notify_waiters();
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Completes when the session is closed.
    pub async fn closed(&self) {
        loop {
            let notified = self.on_close.notified();
            if self.is_closed() {
                return;
            }
            notified.await;
        }
    }

    /// Requests whose handlers are still running (on a task of their own, or driven by their reply).
    pub(crate) fn in_flight(&self) -> usize {
        let mut in_flight = self.in_flight.lock().expect("not poisoned");
        in_flight.forget_finished();
        in_flight.len()
    }

    /// Delivers a client's response to the request waiting for it; false if none is.
    pub(crate) fn resolve(&self, id: &RequestId, outcome: Result<Value, ErrorObject>) -> bool {
        match self.pending.lock().expect("not poisoned").remove(id) {
            Some(waiter) => waiter.send(outcome).is_ok(),
            None => false,
        }
    }

    pub(crate) fn track(&self, id: RequestId, task: Stop) {
        let mut in_flight = self.in_flight.lock().expect("not poisoned");
        if self.is_closed() {
            task.abort();
            return;
        }
        in_flight.forget_finished();
        in_flight.insert(id, task);
    }

    pub(crate) fn untrack(&self, id: &RequestId) {
        self.in_flight.lock().expect("not poisoned").remove(id);
    }

    /// Stops the handler of a request the client cancelled; unknown ids are ignored.
    pub(crate) fn cancel(&self, id: &RequestId) {
        if let Some(task) = self.in_flight.lock().expect("not poisoned").remove(id) {
            task.abort();
        }
    }
}

/// The handlers in flight, by request id. Most sessions hold one at a time (a stateless
/// request's own session, a client calling in lockstep): it is kept without a table, which
/// would be allocated for it on every request.
#[derive(Default)]
enum InFlight {
    #[default]
    None,
    One(RequestId, Stop),
    Many(ById<Stop>),
}

impl InFlight {
    fn len(&self) -> usize {
        match self {
            InFlight::None => 0,
            InFlight::One(..) => 1,
            InFlight::Many(tasks) => tasks.len(),
        }
    }

    /// Adds `task` under `id`, in place of one under the same id.
    fn insert(&mut self, id: RequestId, task: Stop) {
        match std::mem::take(self) {
            InFlight::None => *self = InFlight::One(id, task),
            InFlight::One(kept, _) if kept == id => *self = InFlight::One(id, task),
            InFlight::One(kept, kept_task) => {
                let mut tasks = ById::default();
                tasks.insert(kept, kept_task);
                tasks.insert(id, task);
                *self = InFlight::Many(tasks);
            }
            InFlight::Many(mut tasks) => {
                tasks.insert(id, task);
                *self = InFlight::Many(tasks);
            }
        }
    }

    fn remove(&mut self, id: &RequestId) -> Option<Stop> {
        match self {
            InFlight::One(kept, _) if kept == id => match std::mem::take(self) {
                InFlight::One(_, task) => Some(task),
                _ => unreachable!("matched as one"),
            },
            InFlight::Many(tasks) => tasks.remove(id),
            _ => None,
        }
    }

    fn forget_finished(&mut self) {
        match self {
            InFlight::One(_, task) if task.is_finished() => *self = InFlight::None,
            InFlight::Many(tasks) => tasks.retain(|_, task| !task.is_finished()),
            _ => {}
        }
    }

    fn into_stops(self) -> Vec<Stop> {
        match self {
            InFlight::None => Vec::new(),
            InFlight::One(_, task) => vec![task],
            InFlight::Many(tasks) => tasks.into_values().collect(),
        }
    }
}

struct RemovePending<'a> {
    session: &'a Session,
    id: &'a RequestId,
}

impl Drop for RemovePending<'_> {
    fn drop(&mut self) {
        self.session.pending.lock().expect("not poisoned").remove(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stop() -> (Stop, futures::future::AbortHandle) {
        let (handle, _) = futures::future::AbortHandle::new_pair();
        (Stop::Inline(handle.clone()), handle)
    }

    /// One request in flight, then several, then none: each is found, replaced, forgotten and
    /// stopped as a table of them would be.
    #[test]
    fn requests_in_flight_are_kept_by_id_one_or_many() {
        let mut in_flight = InFlight::default();
        let (first, first_handle) = stop();
        in_flight.insert(RequestId::from(1), first);
        assert_eq!(in_flight.len(), 1);
        assert!(in_flight.remove(&RequestId::from(2)).is_none());
        // The same id again takes the place of the first.
        let (again, _) = stop();
        in_flight.insert(RequestId::from(1), again);
        assert_eq!(in_flight.len(), 1);
        let (second, second_handle) = stop();
        in_flight.insert(RequestId::from("two".to_owned()), second);
        assert_eq!(in_flight.len(), 2);
        // An ended handler is forgotten.
        second_handle.abort();
        in_flight.forget_finished();
        assert_eq!(in_flight.len(), 1);
        assert!(in_flight.remove(&RequestId::from("two".to_owned())).is_none());
        let (third, third_handle) = stop();
        in_flight.insert(RequestId::from(3), third);
        let stops = std::mem::take(&mut in_flight).into_stops();
        assert_eq!((stops.len(), in_flight.len()), (2, 0));
        stops.iter().for_each(Stop::abort);
        assert!(third_handle.is_aborted());
        assert!(!first_handle.is_aborted(), "the replaced handler is no longer tracked");

        let (only, only_handle) = stop();
        in_flight.insert(RequestId::from(4), only);
        only_handle.abort();
        in_flight.forget_finished();
        assert_eq!(in_flight.len(), 0);
        let (last, _) = stop();
        in_flight.insert(RequestId::from(5), last);
        assert!(in_flight.remove(&RequestId::from(5)).is_some());
        assert_eq!(in_flight.len(), 0);
    }
}
