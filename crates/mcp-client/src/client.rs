//! The client: configuration, era negotiation, the request pipeline (per-request `_meta`, HTTP
//! headers, timeouts, version retry, caching, multi round-trip requests) and the typed API.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use mcp_types::{
    ClientCapabilities, DiscoverResult, Implementation, JsonObject, RequestId, ServerCapabilities, error_codes,
};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::core::{Answer, Core, MetaText, Wants, request_message, token_key};
use crate::error::Error;
use crate::handlers::InputHook;
use crate::telemetry;
use crate::transport::request::{CancelNotice, Outgoing, version_value};
use crate::transport::{Transport, TransportKind};
use mcp_types::http_headers::encode_value as encode_header_value;
use tracing::Instrument as _;

// Below the client: what it is made of.
pub(crate) mod era;
pub(crate) mod options;
pub(crate) mod results;
mod tool_annotations;
// Above it: what it does, in `impl Client` blocks of their own.
pub(crate) mod apps;
mod cache;
mod connect;
mod methods;
mod negotiation;
pub(crate) mod relay;
pub(crate) mod skills;
pub(crate) mod subscription;
pub(crate) mod tasks;

use era::{Era, ServerDetails};
use options::{CallOptions, ClientBuilder};
use results::{check_result_type, result_type_is, supported_versions};

const MAX_INPUT_ROUNDS: usize = 16;
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
const META_INFO: &str = "io.modelcontextprotocol/clientInfo";
const META_LOG: &str = "io.modelcontextprotocol/logLevel";

/// A cached result and when it goes stale (the cache itself is in `cache`).
struct CacheEntry {
    pub(super) expires: Instant,
    pub(super) result: Box<RawValue>,
}

struct Inner {
    core: Arc<Core>,
    transport: RwLock<Arc<Transport>>,
    config: ClientBuilder,
    capabilities: ClientCapabilities,
    /// `capabilities` and the client's identity as JSON text, written into every modern
    /// request's `_meta` as they are (the identity `None` when it is not sent).
    capabilities_json: Box<RawValue>,
    client_info_json: Option<Box<RawValue>>,
    state: RwLock<ServerDetails>,
    cache: Mutex<HashMap<String, CacheEntry>>,
    discover_cache: Mutex<Option<(Instant, DiscoverResult)>>,
    /// `x-mcp-header` annotations of the tools listed, and the tools left out for invalid ones.
    tool_annotations: Mutex<tool_annotations::ToolAnnotations>,
    tools_listed: std::sync::atomic::AtomicBool,
    /// Where requests go, for telemetry (the same for the HTTP+SSE fallback).
    peer: Arc<telemetry::Peer>,
    session_clock: telemetry::SessionClock,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // A client dropped without `close` ends its session here.
        let version = self.state.get_mut().map(|state| state.protocol_version.clone()).unwrap_or_default();
        self.session_clock.end(&self.peer, &version);
    }
}

/// A connected MCP client; cheap to clone (all clones share one connection).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("server", &*self.inner.state.read().unwrap()).finish()
    }
}

/// One request on its way through the pipeline.
#[derive(Clone)]
pub(crate) struct Call {
    pub(crate) method: &'static str,
    pub(crate) params: JsonObject,
    /// `Mcp-Name` value (tools/call, prompts/get, resources/read, the task id of tasks/*).
    pub(crate) name: Option<String>,
    param_headers: Vec<(String, String)>,
    options: CallOptions,
    /// `None`: no timeout (subscriptions).
    pub(crate) timeout: Option<Duration>,
    /// When the whole call must be over (the listing `call_tool` does first included).
    deadline: Option<Instant>,
    cancel_on_drop: bool,
    /// Used by negotiation to send with an era/version not yet settled.
    era_override: Option<(Era, String)>,
    /// How the result is delivered: a `tools/call`'s or a `resources/read`'s decoded as it
    /// arrives, unless its caller wants the text.
    wants: Wants,
}

impl Call {
    pub(crate) fn new(client: &Client, method: &'static str, params: JsonObject) -> Self {
        Call {
            method,
            params,
            name: None,
            param_headers: Vec::new(),
            options: CallOptions::default(),
            timeout: Some(client.inner.config.request_timeout),
            deadline: None,
            cancel_on_drop: true,
            era_override: None,
            wants: Wants::for_method(method),
        }
    }

    pub(crate) fn with_options(mut self, options: CallOptions) -> Self {
        if let Some(timeout) = options.timeout {
            self.timeout = Some(timeout);
        }
        self.options = options;
        self
    }
}

/// Unregisters a progress callback when its request ends or is dropped.
struct ProgressGuard(Arc<Core>, String);

impl Drop for ProgressGuard {
    fn drop(&mut self) {
        self.0.unwatch_progress(&self.1);
    }
}

impl Client {
    /// Starts building a client that introduces itself as `name` `version`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ClientBuilder {
        ClientBuilder::new(Implementation { name: name.into(), version: version.into(), ..Default::default() })
    }

    fn assemble(config: ClientBuilder, core: Arc<Core>, transport: Transport) -> Self {
        let capabilities = declared(config.handlers.capabilities(), config.tasks);
        let capabilities_json = raw_json(&capabilities);
        let client_info_json = config.send_client_info.then(|| raw_json(&config.client_info));
        let kind = transport.kind();
        let peer = transport.peer();
        Client {
            inner: Arc::new(Inner {
                core,
                transport: RwLock::new(Arc::new(transport)),
                state: RwLock::new(ServerDetails {
                    era: Era::Modern,
                    protocol_version: config.modern_versions.first().cloned().unwrap_or_default(),
                    server_info: None,
                    capabilities: ServerCapabilities::default(),
                    instructions: None,
                    supported_versions: Vec::new(),
                    transport: kind,
                }),
                config,
                capabilities,
                capabilities_json,
                client_info_json,
                cache: Mutex::default(),
                discover_cache: Mutex::default(),
                tool_annotations: Mutex::default(),
                tools_listed: Default::default(),
                peer,
                session_clock: Default::default(),
            }),
        }
    }

    fn transport(&self) -> Arc<Transport> {
        self.inner.transport.read().unwrap().clone()
    }

    /// What negotiation established.
    pub fn server(&self) -> ServerDetails {
        self.inner.state.read().unwrap().clone()
    }

    /// The era negotiated.
    pub fn era(&self) -> Era {
        self.inner.state.read().unwrap().era
    }

    /// The protocol version requests are sent with.
    pub fn protocol_version(&self) -> String {
        self.inner.state.read().unwrap().protocol_version.clone()
    }

    /// [`Self::protocol_version`] without a copy when it is a known revision's (per request).
    pub(crate) fn version(&self) -> Cow<'static, str> {
        version_value(&self.inner.state.read().unwrap().protocol_version)
    }

    /// The server's self-description, if it gave one.
    pub fn server_info(&self) -> Option<Implementation> {
        self.inner.state.read().unwrap().server_info.clone()
    }

    /// The records this client keeps for requests in flight (a response awaited, a call's
    /// hooks, a progress watcher): each ends with its request, however the request ends, so
    /// this is zero whenever nothing is in flight. A gauge for a process that makes millions of
    /// calls through one client.
    pub fn records_in_flight(&self) -> usize {
        self.inner.core.records_in_flight()
    }

    /// What the server can do.
    pub fn server_capabilities(&self) -> ServerCapabilities {
        self.inner.state.read().unwrap().capabilities.clone()
    }

    /// The capabilities this client declares (derived from its handlers).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.capabilities
    }

    /// The most recent lines the stdio server wrote to stderr (with [`StderrMode::Capture`](crate::StderrMode::Capture)).
    pub fn stderr_lines(&self) -> Vec<String> {
        match &*self.transport() {
            #[cfg(feature = "stdio")]
            Transport::Stdio(t) => t.stderr_lines(),
            #[allow(unreachable_patterns)]
            _ => Vec::new(),
        }
    }

    /// Shuts the connection down (stdio: close stdin, wait, then terminate; legacy HTTP: end
    /// the session).
    pub async fn close(&self) {
        // What the client kept of the server goes with it.
        self.inner.tool_annotations.lock().unwrap().clear();
        self.inner.cache.lock().unwrap().clear();
        self.inner.tools_listed.store(false, std::sync::atomic::Ordering::SeqCst);
        self.transport().close().await;
        self.inner.session_clock.end(&self.inner.peer, &self.protocol_version());
    }

    // ---------------------------------------------------------------------------------------
    // The request pipeline
    // ---------------------------------------------------------------------------------------

    /// Sends one request and returns its result, after validating `resultType`.
    async fn send(&self, call: &Call, id: RequestId) -> Result<Answer, Error> {
        let (era, version) = match &call.era_override {
            Some((era, version)) => (*era, version_value(version)),
            None => {
                let state = self.inner.state.read().unwrap();
                (state.era, version_value(&state.protocol_version))
            }
        };
        let core = &self.inner.core;
        let params = &call.params;
        let mut meta = match params.get("_meta") {
            Some(Value::Object(meta)) => meta.clone(),
            _ => JsonObject::new(),
        };
        let mut _progress = None;
        let mut _hooks = None;
        if !call.options.hooks.is_empty() {
            core.watch_call(id.clone(), call.options.hooks.clone());
            _hooks = Some(CallHooksGuard(core.clone(), id.clone()));
        }
        if let Some(callback) = &call.options.progress {
            let token = json!(format!("progress-{id}"));
            core.watch_progress(token_key(&token), callback.clone());
            _progress = Some(ProgressGuard(core.clone(), token_key(&token)));
            meta.insert("progressToken".into(), token);
        }
        let transport = self.transport();
        let target = telemetry::Target::of(call.method, params);
        let labels = telemetry::RequestLabels { method: call.method, id: &id, version: &version, target };
        let operation = telemetry::Operation::start(&self.inner.peer, &labels, || self.legacy_session());
        operation.inject(&mut meta);
        let mut headers = Vec::new();
        // The members every modern request carries, written as prepared text after `meta`'s
        // (which loses any of the same name).
        let call_capabilities;
        let mut fixed = [None, None, None];
        if era == Era::Modern {
            let capabilities = match &call.options.hooks.input {
                Some(input) => {
                    call_capabilities =
                        raw_json(&declared(ClientCapabilities::clone(&input.capabilities), self.inner.config.tasks));
                    &*call_capabilities
                }
                None => &*self.inner.capabilities_json,
            };
            fixed = [
                Some((META_CAPS, MetaText::Json(capabilities))),
                self.inner.client_info_json.as_deref().map(|info| (META_INFO, MetaText::Json(info))),
                Some((META_VERSION, MetaText::Str(&version))),
            ];
            if let Some(level) = call.options.log_level.or(self.inner.config.log_level) {
                meta.insert(META_LOG.into(), json!(level));
            }
            if transport.kind() == TransportKind::StreamableHttp {
                headers.push(("MCP-Protocol-Version".into(), version.clone()));
                headers.push(("Mcp-Method".into(), call.method.into()));
                if let Some(name) = &call.name {
                    headers.push(("Mcp-Name".into(), encode_header_value(name).into()));
                }
                headers
                    .extend(call.param_headers.iter().map(|(name, value)| (name.clone().into(), value.clone().into())));
            }
        }
        let message = request_message(&id, call.method, params, &meta, &fixed);
        let cancel_notice =
            CancelNotice { peer: self.inner.peer.clone(), version, request_span: operation.span().clone() };
        let out = Outgoing {
            id,
            method: call.method,
            message,
            headers,
            cancel_on_drop: call.cancel_on_drop,
            cancel_notice,
            wants: call.wants,
        };
        let exchange = async {
            let exchange = transport.request(core, out);
            let reply = match call.timeout {
                Some(after) => {
                    let left =
                        call.deadline.map_or(after, |deadline| deadline.saturating_duration_since(Instant::now()));
                    tokio::time::timeout(after.min(left), exchange)
                        .await
                        .map_err(|_| Error::Timeout { method: call.method.to_owned(), after })??
                }
                None => exchange.await?,
            };
            let result =
                reply.map_err(|error| Error::Rpc { method: call.method.to_owned(), error, http_status: None })?;
            // A call may opt in to tasks with capabilities of its own.
            let tasks = self.inner.config.tasks
                || call.options.hooks.input.as_ref().is_some_and(|input| {
                    input.capabilities.extensions.as_ref().is_some_and(|e| e.contains_key(mcp_types::ext::TASKS))
                });
            // A result decoded on arrival is complete (nothing else is decoded then); one found
            // complete here is marked so.
            match result {
                Answer::Raw(raw) if check_result_type(call.method, &raw, tasks)? => Ok(Answer::Complete(raw)),
                result => Ok(result),
            }
        };
        let result = exchange.instrument(operation.span().clone()).await;
        self.inner.session_clock.observe(&result);
        operation.finish(result.as_ref().map(|answer| answer.is_tool_error(call.method)));
        result
    }

    /// Sends a notification (no params) in a span of its own.
    pub(crate) async fn notify(&self, method: &'static str) -> Result<(), Error> {
        let span = telemetry::notification_span(&self.inner.peer, method, &self.protocol_version());
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        telemetry::inject_into_message(&span, &mut message);
        let sent = self.transport().notify(message, Vec::new()).instrument(span.clone()).await;
        if let Err(error) = &sent {
            telemetry::notification_failed(&span, error);
        }
        sent
    }

    /// The legacy HTTP session's id, if there is one.
    fn legacy_session(&self) -> Option<String> {
        #[cfg(feature = "http")]
        if let Transport::Http(http) = &*self.transport() {
            return http.session();
        }
        None
    }

    /// [`answer`](Self::answer) as JSON text.
    pub(crate) async fn request(&self, call: &Call) -> Result<Box<RawValue>, Error> {
        self.answer(call).await.map(Answer::into_raw)
    }

    /// [`send`](Self::send), retrying once with a version the server offers when a modern
    /// server answers `-32022`.
    async fn answer(&self, call: &Call) -> Result<Answer, Error> {
        let mut first = self.send(call, self.inner.core.next_id()).await;
        let revive = match &first {
            Err(Error::Closed) => true,
            // A legacy HTTP session the server forgot: start a new one (spec: MUST re-initialize).
            Err(Error::HttpStatus { status: 404, .. }) => self.has_legacy_session(),
            _ => false,
        };
        // Boxed, as a task is followed: a rare path's future would otherwise be carried (and
        // moved) by every request's.
        if revive && call.era_override.is_none() && Box::pin(self.revive()).await? {
            // The request was lost with the process; it is retried once on the new one.
            first = self.send(call, self.inner.core.next_id()).await;
        }
        let Err(Error::Rpc { error, .. }) = &first else { return first };
        if error.code != error_codes::UNSUPPORTED_PROTOCOL_VERSION
            || call.era_override.is_some()
            || self.era() != Era::Modern
        {
            return first;
        }
        let offered = supported_versions(error);
        match self.pick_modern(&offered) {
            Some(version) => {
                let mut state = self.inner.state.write().unwrap();
                state.protocol_version = version;
                state.supported_versions = offered;
            }
            None => return Err(Error::VersionMismatch { requested: self.protocol_version(), offered }),
        }
        self.send(call, self.inner.core.next_id()).await
    }

    /// Restarts a stdio server that exited unexpectedly (and repeats the handshake on the
    /// legacy era). `false` when there is nothing to restart.
    async fn revive(&self) -> Result<bool, Error> {
        #[cfg(feature = "stdio")]
        if let Transport::Stdio(stdio) = &*self.transport()
            && stdio.restarts_on_exit()
            && !stdio.is_alive()
        {
            tracing::warn!("the stdio server exited; restarting it");
            stdio.restart(&self.inner.core).await?;
            if self.era() == Era::Legacy {
                let version = self.protocol_version();
                self.initialize(&version).await?;
            }
            return Ok(true);
        }
        #[cfg(feature = "http")]
        if let Transport::Http(http) = &*self.transport()
            && self.has_legacy_session()
        {
            tracing::warn!("the server forgot the session; initializing a new one");
            http.clear_session();
            let version = self.protocol_version();
            self.initialize(&version).await?;
            return Ok(true);
        }
        Ok(false)
    }

    fn has_legacy_session(&self) -> bool {
        #[cfg(feature = "http")]
        if let Transport::Http(http) = &*self.transport() {
            return self.era() == Era::Legacy && http.session().is_some();
        }
        false
    }

    fn pick_modern(&self, offered: &[String]) -> Option<String> {
        self.inner.config.modern_versions.iter().find(|v| offered.contains(v)).cloned()
    }

    fn pick_legacy(&self, offered: &[String]) -> Option<String> {
        self.inner.config.legacy_versions.iter().find(|v| offered.contains(v)).cloned()
    }

    /// A request that may answer `input_required`: fulfils the input requests with the
    /// handlers and retries (new id, the original params plus `inputResponses` and the
    /// `requestState` echoed unchanged) until the result is complete.
    async fn request_with_input(&self, call: &Call) -> Result<Answer, Error> {
        // The call as the next round sends it: the caller's params with the answers so far, made
        // (a copy of the caller's call) only once a round asks for input.
        let mut round: Option<Call> = None;
        for _ in 0..MAX_INPUT_ROUNDS {
            let answer = self.answer(round.as_ref().unwrap_or(call)).await?;
            let result = match answer {
                Answer::Raw(raw) if result_type_is(&raw, "input_required") => raw,
                complete => return Ok(complete),
            };
            #[derive(Deserialize)]
            struct InputRequired {
                #[serde(rename = "inputRequests")]
                input_requests: Option<BTreeMap<String, Value>>,
                #[serde(rename = "requestState")]
                request_state: Option<String>,
            }
            let input: InputRequired = serde_json::from_str(result.get())
                .map_err(|e| Error::protocol(format!("malformed InputRequiredResult for {}: {e}", call.method)))?;
            if input.input_requests.is_none() && input.request_state.is_none() {
                return Err(Error::protocol(format!(
                    "{} returned input_required with neither inputRequests nor requestState",
                    call.method
                )));
            }
            let requests = input.input_requests.unwrap_or_default();
            let responses = self.answer_inputs(call.method, requests, call.options.hooks.input.as_ref()).await?;
            let next = round.get_or_insert_with(|| {
                // Each retry, after the handlers answered, has the request timeout of its own.
                let mut next = call.clone();
                next.deadline = None;
                next
            });
            next.params = call.params.clone();
            if !responses.is_empty() {
                next.params.insert("inputResponses".into(), Value::Object(responses));
            }
            if let Some(state) = input.request_state {
                next.params.insert("requestState".into(), Value::String(state));
            }
        }
        Err(Error::protocol(format!("{} still needs input after {MAX_INPUT_ROUNDS} rounds", call.method)))
    }

    /// Answers input requests (elicitation, sampling, roots) with the call's own handler, else
    /// the application's handlers: the one path for MRTR rounds and for the input requests of a
    /// task.
    pub(crate) async fn answer_inputs(
        &self,
        what: &str,
        requests: BTreeMap<String, Value>,
        hook: Option<&InputHook>,
    ) -> Result<JsonObject, Error> {
        let mut questions = Vec::with_capacity(requests.len());
        for (key, request) in &requests {
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .ok_or_else(|| Error::protocol(format!("input request {key:?} of {what} has no method")))?;
            let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
            questions.push((key.clone(), method, params));
        }
        let mut responses = JsonObject::new();
        let Some(hook) = hook else {
            for (key, method, params) in questions {
                let span = telemetry::answer_span(method, None, &params);
                let answer = self.inner.core.handlers.answer(method, params).instrument(span.clone()).await;
                if answer.is_err() {
                    telemetry::answer_failed(&span, "handler", None);
                }
                let answer = answer.map_err(|e| Error::Handler(format!("input request {key:?} ({method}): {e}")))?;
                responses.insert(key, answer);
            }
            return Ok(responses);
        };
        // A call's own handler gets the round's questions together (a proxy passes them on as
        // one round); each has a span lasting the round.
        let spans: Vec<_> =
            questions.iter().map(|(_, method, params)| telemetry::answer_span(method, None, params)).collect();
        let keys: Vec<String> = questions.iter().map(|(key, _, _)| key.clone()).collect();
        let round = questions.into_iter().map(|(key, method, params)| (Some(key), method, params)).collect();
        match hook.answer(round).await {
            Ok(answers) => {
                responses.extend(keys.into_iter().zip(answers));
                Ok(responses)
            }
            Err(e) => {
                spans.iter().for_each(|span| telemetry::answer_failed(span, "handler", None));
                Err(Error::Handler(format!("input requests {keys:?} of {what}: {e}")))
            }
        }
    }
}

/// `value` as JSON text (these types always encode).
fn raw_json(value: &impl Serialize) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).expect("capabilities and implementations encode")
}

/// The capabilities a client declares: its handlers', and the tasks extension if it opted in.
fn declared(mut capabilities: ClientCapabilities, tasks: bool) -> ClientCapabilities {
    if tasks {
        capabilities.extensions.get_or_insert_default().insert(mcp_types::ext::TASKS.to_owned(), JsonObject::new());
    }
    capabilities
}

/// Stops routing a call's server messages to its hooks once the call is over.
struct CallHooksGuard(Arc<Core>, RequestId);

impl Drop for CallHooksGuard {
    fn drop(&mut self) {
        self.0.unwatch_call(&self.1);
    }
}

/// A tool call's `arguments`: a value that serializes to an object, or to `null` for none.
pub(crate) fn tool_arguments(name: &str, arguments: impl Serialize) -> Result<Option<JsonObject>, Error> {
    match serde_json::to_value(arguments) {
        Ok(Value::Object(arguments)) => Ok(Some(arguments)),
        Ok(Value::Null) => Ok(None),
        Ok(other) => Err(Error::InvalidArguments {
            tool: name.to_owned(),
            message: format!("arguments must serialize to a JSON object, not {other}"),
        }),
        Err(error) => Err(Error::InvalidArguments { tool: name.to_owned(), message: error.to_string() }),
    }
}
