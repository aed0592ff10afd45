//! The transport-independent protocol core: request ids, correlation of responses, routing of
//! notifications (progress, subscriptions) and server-to-client requests.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_types::{CallToolResult, ErrorObject, OnePassResponse, RawResult, ReadResourceResult, RequestId, ResultType};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, broadcast, mpsc, oneshot};

use crate::handlers::{CallHooks, Handlers};
use crate::telemetry;
use tracing::Instrument as _;

/// The outcome of one JSON-RPC request: its `result` or its `error`.
pub(crate) type Reply = Result<Answer, ErrorObject>;

/// A request's `result` as it is delivered.
#[derive(Debug)]
pub(crate) enum Answer {
    /// The result's exact JSON text, for the caller to read.
    Raw(Box<RawValue>),
    /// The same, its `resultType` checked and found complete (no task, no input round), so
    /// that nothing reads the text for it again.
    Complete(Box<RawValue>),
    /// A complete `tools/call` result, decoded from the response as it arrived, in one pass
    /// ([`OnePassResponse`]).
    ToolResult(Box<CallToolResult>),
    /// A complete `resources/read` result, decoded the same way.
    ReadResult(Box<ReadResourceResult>),
    /// The result's text checked by a scan that found its members ([`RawResult::scan`]), for a
    /// request that [`Wants::Scan`] (a relayed call, which checks its `resultType` itself).
    Scanned(RawResult),
}

impl Answer {
    /// The result as JSON text (a decoded result encoded again: nothing asks for that today).
    pub fn into_raw(self) -> Box<RawValue> {
        match self {
            Answer::Raw(raw) | Answer::Complete(raw) => raw,
            Answer::ToolResult(result) => {
                serde_json::value::to_raw_value(&result).expect("a CallToolResult always encodes")
            }
            Answer::ReadResult(result) => {
                serde_json::value::to_raw_value(&result).expect("a ReadResourceResult always encodes")
            }
            Answer::Scanned(result) => {
                RawValue::from_string(result.get().to_owned()).expect("a scanned result is valid JSON")
            }
        }
    }

    /// Whether this is the result of a `tools/call` (the request's `method`) that says
    /// `isError: true`.
    pub fn is_tool_error(&self, method: &str) -> bool {
        #[derive(Deserialize)]
        struct ToolResult {
            #[serde(rename = "isError", default)]
            is_error: Option<bool>,
        }
        match self {
            Answer::ToolResult(result) => result.is_error == Some(true),
            Answer::ReadResult(_) => false,
            Answer::Raw(_) | Answer::Complete(_) | Answer::Scanned(_) if method != "tools/call" => false,
            // The scan found each member, named without escapes.
            Answer::Scanned(result) => {
                result.members().is_some_and(|mut members| members.any(|member| member == ("isError", "true")))
            }
            Answer::Raw(raw) | Answer::Complete(raw) => {
                crate::json_text::may_hold(raw.get(), crate::json_text::needle!(r#""isError""#))
                    && serde_json::from_str::<ToolResult>(raw.get()).is_ok_and(|r| r.is_error == Some(true))
            }
        }
    }

    /// The raw text, unless the result was decoded or scanned as it arrived.
    pub fn as_raw(&self) -> Option<&RawValue> {
        match self {
            Answer::Raw(raw) | Answer::Complete(raw) => Some(raw),
            Answer::ToolResult(_) | Answer::ReadResult(_) | Answer::Scanned(_) => None,
        }
    }

    /// The text of a result not known to be complete: it may be a task or an input round. (A
    /// scanned result is asked for only by the relay, which settles it itself.)
    pub fn unsettled(&self) -> Option<&RawValue> {
        match self {
            Answer::Raw(raw) => Some(raw),
            Answer::Complete(_) | Answer::ToolResult(_) | Answer::ReadResult(_) | Answer::Scanned(_) => None,
        }
    }
}

/// How a request wants its result delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wants {
    Raw,
    /// A complete `CallToolResult` decoded on arrival when the response allows it
    /// ([`Answer::ToolResult`]); anything else raw.
    ToolResult,
    /// The same for a `ReadResourceResult` ([`Answer::ReadResult`]).
    ReadResult,
    /// The result's text checked and split by a scan ([`Answer::Scanned`]) when the response
    /// allows it, whatever its `resultType`; anything else raw.
    Scan,
}

impl Wants {
    /// The results that may be large (a tool's output, a resource's contents) are decoded on
    /// arrival; the rest are read raw.
    pub fn for_method(method: &str) -> Self {
        match method {
            "tools/call" => Wants::ToolResult,
            "resources/read" => Wants::ReadResult,
            _ => Wants::Raw,
        }
    }
}

/// A request waiting for its response.
struct Waiter {
    tx: oneshot::Sender<Delivery>,
    wants: Wants,
}

/// What a waiting request receives: its reply, or why the response was unusable.
pub(crate) type Delivery = Result<Reply, String>;

/// Progress reported by the server for one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How far the request has come (increases with each notification).
    pub progress: f64,
    /// The total, if the server knows it.
    pub total: Option<f64>,
    /// A human-readable description of the progress.
    pub message: Option<String>,
}

pub(crate) type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;

/// The client's resource limits, set through [`ClientBuilder`](crate::ClientBuilder).
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub max_list_pages: usize,
    pub max_cache_bytes: usize,
    pub max_server_requests: usize,
    pub server_request_timeout: Duration,
    pub max_outbox_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_list_pages: 1000,
            max_cache_bytes: 16 * 1024 * 1024,
            max_server_requests: 16,
            server_request_timeout: Duration::from_secs(300),
            max_outbox_bytes: 8 * 1024 * 1024,
        }
    }
}

/// A server-to-client JSON-RPC request (legacy era) waiting for an answer.
pub(crate) struct ServerRequest {
    pub id: Value,
    pub method: String,
    pub params: Value,
    /// The client's request whose response stream carried it, if the transport knows.
    pub related: Option<RequestId>,
}

/// A map keyed by the ids of this client's own requests. A server only looks ids up in it (it
/// cannot add one), so a fast hasher costs no resistance to crafted keys.
type ById<V> = HashMap<RequestId, V, foldhash::fast::RandomState>;

pub(crate) struct Core {
    next_id: AtomicI64,
    pending: Mutex<ById<Waiter>>,
    progress: Mutex<HashMap<String, ProgressFn>>,
    subscriptions: Mutex<HashMap<RequestId, mpsc::UnboundedSender<String>>>,
    /// The calls in flight with hooks of their own (`CallOptions::on_input`, `on_log`).
    calls: Mutex<ById<CallHooks>>,
    /// Notifications not tied to a request or subscription (legacy list changes, updates).
    pub notifications: broadcast::Sender<String>,
    pub handlers: Handlers,
    pub limits: Limits,
    /// One permit per server-to-client request being answered.
    server_requests: Arc<Semaphore>,
}

impl Core {
    pub fn new(handlers: Handlers, limits: Limits) -> Arc<Self> {
        Arc::new(Core {
            next_id: AtomicI64::new(1),
            pending: Mutex::default(),
            progress: Mutex::default(),
            subscriptions: Mutex::default(),
            calls: Mutex::default(),
            notifications: broadcast::channel(256).0,
            handlers,
            server_requests: Arc::new(Semaphore::new(limits.max_server_requests.max(1))),
            limits,
        })
    }

    /// Waits until fewer than `max_server_requests` server requests are being answered; the
    /// caller stops reading from the server meanwhile, which slows a flooding server down.
    pub async fn server_request_slot(&self) -> OwnedSemaphorePermit {
        Arc::clone(&self.server_requests).acquire_owned().await.expect("the semaphore is never closed")
    }

    /// Answers `request` and delivers the answer with `deliver`, both within
    /// `server_request_timeout`.
    pub async fn answer_and_deliver<F, Fut>(
        self: Arc<Self>,
        request: ServerRequest,
        slot: OwnedSemaphorePermit,
        deliver: F,
    ) where
        F: FnOnce(Value) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let _slot = slot;
        let deadline = self.limits.server_request_timeout;
        let answered = tokio::time::timeout(deadline, async {
            let answer = self.answer(&request).await;
            deliver(answer).await;
        })
        .await;
        if answered.is_err() {
            tracing::warn!(
                method = %request.method,
                "gave up answering a server request after {deadline:?} (ClientBuilder::server_request_timeout)"
            );
        }
    }

    pub fn next_id(&self) -> RequestId {
        RequestId::Integer(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// The records of requests in flight: responses awaited, call hooks and progress watchers.
    pub fn records_in_flight(&self) -> usize {
        self.pending.lock().unwrap().len() + self.calls.lock().unwrap().len() + self.progress.lock().unwrap().len()
    }

    /// Registers interest in the response to `id`, its result delivered as `wants` says.
    pub fn expect(&self, id: RequestId, wants: Wants) -> oneshot::Receiver<Delivery> {
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, Waiter { tx, wants });
        rx
    }

    /// Stops waiting for `id`: a late response is then dropped.
    pub fn forget(&self, id: &RequestId) {
        self.pending.lock().unwrap().remove(id);
    }

    /// Fails every outstanding request (the connection is gone).
    pub fn close_all(&self) {
        self.pending.lock().unwrap().clear();
        self.subscriptions.lock().unwrap().clear();
    }

    pub fn watch_progress(&self, token: String, callback: ProgressFn) {
        self.progress.lock().unwrap().insert(token, callback);
    }

    pub fn unwatch_progress(&self, token: &str) {
        self.progress.lock().unwrap().remove(token);
    }

    /// Files the hooks of the call sent as `id` until [`Core::unwatch_call`].
    pub fn watch_call(&self, id: RequestId, hooks: CallHooks) {
        self.calls.lock().unwrap().insert(id, hooks);
    }

    pub fn unwatch_call(&self, id: &RequestId) {
        self.calls.lock().unwrap().remove(id);
    }

    /// The hooks of the call a server message belongs to: the call whose response stream
    /// carried it, else (stdio says nothing) the only call in flight with hooks, when `guess`.
    fn call_hooks(&self, related: Option<&RequestId>, guess: bool) -> Option<CallHooks> {
        let calls = self.calls.lock().unwrap();
        match related {
            Some(id) => calls.get(id).cloned(),
            None if guess && calls.len() == 1 => calls.values().next().cloned(),
            None => None,
        }
    }

    pub fn subscribe(&self, id: RequestId) -> mpsc::UnboundedReceiver<String> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.subscriptions.lock().unwrap().insert(id, tx);
        rx
    }

    pub fn unsubscribe(&self, id: &RequestId) {
        self.subscriptions.lock().unwrap().remove(id);
    }

    /// Routes one message received from the server (its JSON text); `related` is the request
    /// whose response stream carried it, if any. Returns a server-to-client request that the
    /// transport must answer. Malformed messages are logged and dropped, never fatal.
    pub fn dispatch(&self, text: &str, related: Option<&RequestId>) -> Option<ServerRequest> {
        telemetry::wire("receive", text);
        if let Some(response) = OnePassResponse::read(text) {
            let wants = self.pending.lock().unwrap().get(response.id()).map(|waiter| waiter.wants);
            if let Some(result) = wants.and_then(|wants| arrived(&response, wants)) {
                if let Some(waiter) = self.pending.lock().unwrap().remove(response.id()) {
                    let _ = waiter.tx.send(Ok(Ok(result)));
                }
                return None;
            }
        }
        let envelope = match serde_json::from_str::<Envelope<'_>>(text) {
            Ok(envelope) => envelope,
            Err(e) => {
                tracing::warn!(error = %e, "ignoring a malformed JSON-RPC message from the server");
                return None;
            }
        };
        // Exactly: the floats JavaScript and Python write kept, an integer beyond 64 bits refused.
        let params =
            || envelope.params.and_then(|p| mcp_types::free_form_from_str(p.get()).ok()).unwrap_or(Value::Null);
        match (&envelope.method, &envelope.id) {
            (Some(method), Some(id)) => {
                let related = related.cloned();
                Some(ServerRequest { id: id.clone(), method: method.clone(), params: params(), related })
            }
            (Some(method), None) => {
                self.notification(method, params(), text, related);
                None
            }
            (None, id) => {
                let reply = envelope.reply().ok_or_else(|| format!("malformed JSON-RPC response: {text}"));
                let id = id.as_ref().and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
                match id {
                    Some(id) => match self.pending.lock().unwrap().remove(&id) {
                        Some(waiter) => {
                            let _ = waiter.tx.send(reply);
                        }
                        None => tracing::debug!(%id, "ignoring a response to a request no one waits for"),
                    },
                    None => tracing::warn!(?reply, "the server sent a response without a usable id"),
                }
                None
            }
        }
    }

    fn notification(&self, method: &str, params: Value, text: &str, related: Option<&RequestId>) {
        if method == "notifications/progress" {
            let token = params.get("progressToken").map(token_key);
            let callback = token.and_then(|t| self.progress.lock().unwrap().get(&t).cloned());
            if let Some(callback) = callback {
                callback(Progress {
                    progress: params.get("progress").and_then(Value::as_f64).unwrap_or(0.0),
                    total: params.get("total").and_then(Value::as_f64),
                    message: params.get("message").and_then(Value::as_str).map(str::to_owned),
                });
            }
            return;
        }
        if method == "notifications/message" {
            if let Some(log) = self.call_hooks(related, true).and_then(|hooks| hooks.log) {
                match serde_json::from_value(params.clone()) {
                    Ok(message) => return log(message),
                    Err(error) => tracing::warn!(%error, "ignoring a malformed log message from the server"),
                }
            }
            tracing::info!(target: "mcp_client::server_log", params = %params, "server log message");
            return;
        }
        let subscription = params
            .pointer("/_meta/io.modelcontextprotocol~1subscriptionId")
            .or_else(|| (method == "notifications/cancelled").then(|| params.get("requestId")).flatten())
            .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
        if let Some(id) = subscription {
            let mut subs = self.subscriptions.lock().unwrap();
            if let Some(tx) = subs.get(&id) {
                if tx.send(text.to_owned()).is_err() || method == "notifications/cancelled" {
                    subs.remove(&id);
                }
                return;
            }
        }
        let _ = self.notifications.send(text.to_owned());
    }

    /// Answers a legacy server-to-client request with the configured handlers.
    pub async fn answer(&self, request: &ServerRequest) -> Value {
        let span = telemetry::answer_span(&request.method, Some(&request.id), &request.params);
        let outcome = match request.method.as_str() {
            "ping" => Ok(json!({})),
            "elicitation/create" | "sampling/createMessage" | "roots/list" => {
                let params = request.params.clone();
                // A server asks for roots once it is initialized and when they change: they are
                // the session's, not a call's. Guessed from the only call in flight (a stdio
                // server's timer firing during it), one caller's roots would become the session's
                // for every caller after; only a request the call's own stream carried is its.
                let guess = request.method != "roots/list";
                // The handshake declared what the session may be asked: a call's hook answers
                // nothing beyond it (a gateway declares no roots for a session its callers share).
                let declared = self.handlers.declares(&request.method);
                let hooks = declared.then(|| self.call_hooks(request.related.as_ref(), guess)).flatten();
                let answer = match hooks.and_then(|hooks| hooks.input) {
                    Some(hook) => hook
                        .answer(vec![(None, request.method.as_str(), params)])
                        .instrument(span.clone())
                        .await
                        .map(|mut answers| answers.remove(0)),
                    None => self.handlers.answer(&request.method, params).instrument(span.clone()).await,
                };
                answer.map_err(|e| ErrorObject::new(mcp_types::error_codes::INVALID_REQUEST, e.0))
            }
            other => Err(ErrorObject::method_not_found(other)),
        };
        if let Err(error) = &outcome {
            let code = error.code.to_string();
            telemetry::answer_failed(&span, &code, Some(&code));
        }
        match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": request.id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": request.id, "error": error}),
        }
    }
}

/// The key progress callbacks are filed under: the token's JSON text, so that the string
/// `"1"` and the integer `1` stay distinct.
pub(crate) fn token_key(token: &Value) -> String {
    token.to_string()
}

/// The members of a JSON-RPC message this client routes on; `params` and `result` stay raw so
/// that tool schemas keep their exact text.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, deserialize_with = "non_null")]
    id: Option<Value>,
    method: Option<String>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    error: Option<Value>,
}

fn non_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Ok(Option::<Value>::deserialize(d)?.filter(|v| !v.is_null()))
}

impl Envelope<'_> {
    fn reply(&self) -> Option<Reply> {
        match (self.result, &self.error) {
            (Some(result), None) if result.get().trim_start().starts_with('{') => {
                Some(Ok(Answer::Raw(result.to_owned())))
            }
            (None, Some(error)) => Some(Err(serde_json::from_value(error.clone()).ok()?)),
            _ => None,
        }
    }
}

/// The result of `response` as it arrived: decoded if the request `wants` that and it is a
/// complete result, its text otherwise (`None` if it is not one JSON object).
fn arrived(response: &OnePassResponse<'_>, wants: Wants) -> Option<Answer> {
    let decoded = match wants {
        Wants::Raw => None,
        Wants::Scan => response.scan().map(Answer::Scanned),
        Wants::ToolResult => response
            .decode::<CallToolResult>()
            .filter(|result| result.result_type == ResultType::Complete)
            .map(|result| Answer::ToolResult(Box::new(result))),
        Wants::ReadResult => response
            .decode::<ReadResourceResult>()
            .filter(|result| result.result_type == ResultType::Complete)
            .map(|result| Answer::ReadResult(Box::new(result))),
    };
    decoded.or_else(|| response.decode::<Box<RawValue>>().map(Answer::Raw))
}

/// If `text` is the response to `id` (or an id-less error, which on HTTP answers the only
/// request of the exchange), its reply, its result delivered as `wants` says; a malformed one
/// is reported as such. A response written the usual way is read in one pass
/// ([`OnePassResponse`]); anything else through the envelope.
#[cfg(any(feature = "http", feature = "fuzzing"))]
pub(crate) fn as_reply_to(text: &str, id: &RequestId, wants: Wants) -> Option<Delivery> {
    if let Some(response) = OnePassResponse::read(text) {
        if response.id() != id {
            return None;
        }
        if let Some(answer) = arrived(&response, wants) {
            return Some(Ok(Ok(answer)));
        }
    }
    let envelope = serde_json::from_str::<Envelope<'_>>(text).ok()?;
    if envelope.method.is_some() {
        return None;
    }
    let matches = match &envelope.id {
        Some(got) => serde_json::from_value::<RequestId>(got.clone()).ok().as_ref() == Some(id),
        None => envelope.error.is_some(),
    };
    matches.then(|| envelope.reply().ok_or_else(|| format!("malformed JSON-RPC response: {text}")))
}

/// A `_meta` member's value written as it is: a string, or prepared JSON text.
#[derive(Clone, Copy)]
pub(crate) enum MetaText<'a> {
    Str(&'a str),
    Json(&'a RawValue),
}

impl serde::Serialize for MetaText<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            MetaText::Str(text) => serializer.serialize_str(text),
            MetaText::Json(json) => json.serialize(serializer),
        }
    }
}

/// The members of `_meta` that are written as prepared text, after the map's own.
pub(crate) type FixedMeta<'a> = [Option<(&'static str, MetaText<'a>)>];

/// A request's `_meta`: the members of `meta` and then `fixed` (a member of `meta` named in
/// `fixed` is left out).
pub(crate) struct Meta<'a> {
    pub(crate) meta: &'a serde_json::Map<String, Value>,
    pub(crate) fixed: &'a FixedMeta<'a>,
}

impl serde::Serialize for Meta<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(None)?;
        let prepared = || self.fixed.iter().flatten();
        for (name, value) in self.meta.iter().filter(|(name, _)| !prepared().any(|(fixed, _)| fixed == name)) {
            map.serialize_entry(name, value)?;
        }
        for (name, value) in prepared() {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// The encoded request: `params` with `meta` and then `fixed` as its `_meta` (left out when
/// both are empty; a member of `meta` named in `fixed` is left out), written straight from the
/// caller's maps rather than through a copy of them.
pub(crate) fn request_message(
    id: &RequestId,
    method: &str,
    params: &serde_json::Map<String, Value>,
    meta: &serde_json::Map<String, Value>,
    fixed: &FixedMeta<'_>,
) -> String {
    struct Params<'a> {
        params: &'a serde_json::Map<String, Value>,
        meta: Meta<'a>,
    }
    impl serde::Serialize for Params<'_> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap as _;
            let mut map = serializer.serialize_map(None)?;
            for (name, value) in self.params.iter().filter(|(name, _)| *name != "_meta") {
                map.serialize_entry(name, value)?;
            }
            if !self.meta.meta.is_empty() || self.meta.fixed.iter().any(Option::is_some) {
                map.serialize_entry("_meta", &self.meta)?;
            }
            map.end()
        }
    }
    #[derive(serde::Serialize)]
    struct Request<'a> {
        jsonrpc: &'static str,
        id: &'a RequestId,
        method: &'a str,
        params: Params<'a>,
    }
    let request = Request { jsonrpc: "2.0", id, method, params: Params { params, meta: Meta { meta, fixed } } };
    serde_json::to_string(&request).expect("JSON values and request ids always serialize")
}

#[cfg(test)]
mod tests;
