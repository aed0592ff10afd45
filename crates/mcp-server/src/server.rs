//! The protocol core: one entry point, [`Server::handle`], that turns an incoming JSON-RPC message
//! into the messages to send back. It knows both protocol eras and nothing of transports.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use base64::Engine as _;
use futures::{Stream, StreamExt as _};
use mcp_types::{
    CacheScope, CallToolRequestParams, ClientCapabilities, CompleteRequestParams, CompleteRequestParamsRef,
    CompleteResult, DiscoverResult, ErrorObject, GetPromptRequestParams, Implementation, InputRequiredResult,
    InputResponses, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PromptsCapability, ReadResourceRequestParams, ReadResourceResult, RequestId, RequestMetaObject, RequestParams,
    ResourcesCapability, ResultType, ServerCapabilities, SubscriptionsListenRequestParams, ToolsCapability,
    error_codes,
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::app_state::AppState;
use crate::bus::{Change, ChangeBus, InMemoryChangeBus};
use crate::context::{Context, Inner as ContextInner};
use crate::error::missing_capability;
use crate::headers::{self, Mirrors};
use crate::message::{Disposition, Outgoing, Reply};
use crate::routes::{
    BoxFuture, CompletionFn, PromptRoute, ResourceRoute, ResourceTemplateRoute, TaskSupport, ToolRoute, error_result,
};
use crate::session::{InMemorySessionStore, Session, SessionStore};
use crate::skills::{SkillInner, SkillRoute};
use crate::state::{self, InMemoryUsedStates, Sealed, StateKey, StateKeyring, StateUse, UseVerdict, UsedStateStore};
use crate::tasks::{InMemoryTaskStore, RawUpdateParams, TaskRequest, TaskStore};
use crate::validation::ArgumentValidator;
use crate::{Era, Error};
use typed::{Source, Typed};

mod builder;
mod legacy_wire;
mod listen;
mod typed;
pub use builder::{BuildError, ServerBuilder};
use mcp_types::ext::skills::{
    DIRECTORY_MIME_TYPE, GetSkillRequestParams, GetSkillResult, ListSkillsRequestParams, ListSkillsResult,
    ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, SkillsSettings,
};
use mcp_types::ext::tasks::{CreateTaskResult, GetTaskResult, TaskAck, TaskIdParams, TaskSubscription};
use mcp_types::ext::{self, SKILLS, TASKS};
use mcp_types::http_headers::{HeaderParam, header_params, name_member};

pub(crate) const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The stateless revisions this server serves per request.
pub const MODERN_VERSIONS: &[&str] = &["2026-07-28"];
/// The revisions this server negotiates through `initialize`, newest first.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Methods that 2026-07-28 removed; on the modern wire they are unknown methods.
const REMOVED_METHODS: &[&str] =
    &["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"];

/// Caching hints for cacheable results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHints {
    /// How long the result may be reused (`ttlMs`), in milliseconds.
    pub ttl_ms: u64,
    /// Who may reuse it (`cacheScope`): every client, or only the one that asked.
    pub scope: CacheScope,
}

/// Tunable behaviour; every field has a default, stated on the field.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// Items per page of every list (default 100).
    pub page_size: usize,
    /// Hints on `server/discover` and the four lists (default 60 s, public).
    pub list_cache: CacheHints,
    /// Hints on `resources/read` (default 0 ms, private: not cached).
    pub read_cache: CacheHints,
    /// Answer the non-standard `health` method (default on).
    pub health: bool,
    /// How long a `requestState` stays valid (default 1 hour).
    pub state_max_age: Duration,
    /// Put `_meta["io.modelcontextprotocol/serverInfo"]` on every modern result (a SHOULD of the
    /// spec; default on).
    pub server_info_in_results: bool,
    /// How long a legacy handler waits for the client's answer to `elicitation/create`,
    /// `sampling/createMessage` or `roots/list` before the call fails naming this limit
    /// (default 5 minutes: a person may be answering).
    pub client_request_timeout: Duration,
    /// Requests one session or connection may have in flight (stdio, an in-memory
    /// [`Connection`](crate::Connection), a legacy HTTP session); more are refused with `-32603`
    /// naming this limit until one finishes (default 64).
    pub max_in_flight: usize,
    /// Elements a 2025-03-26 JSON-RPC batch may hold; a longer batch is refused as a whole with
    /// `-32600` naming this limit (default 100).
    pub max_batch_len: usize,
    /// After a connection's input closes, how long its requests in flight may still run before
    /// they are stopped (default 30 s). Requests waiting on the client fail at once: no answer
    /// can arrive any more.
    pub drain_timeout: Duration,
    /// Accept each `requestState` only once: a replayed state is refused (default off; turn it
    /// on when the state carries authorization or business decisions).
    pub state_single_use: bool,
    /// With [`state_single_use`](Self::state_single_use): how many used states are remembered
    /// until they expire (default 65,536). When it is full, the oldest is forgotten and every
    /// state issued before it is refused as expired, so a replay is never accepted.
    pub state_replay_cache: usize,
    /// How long a task is kept after its creation (`ttlMs`); `None`: until the store needs room
    /// (default 1 hour).
    pub task_ttl: Option<Duration>,
    /// The polling interval suggested to clients (`pollIntervalMs`; default 1 s).
    pub task_poll_interval: Duration,
    /// The lease of the instance running a task's handler, renewed every third of it; a task
    /// whose lease lapsed (its instance died) is reported `failed` (default 30 s).
    pub task_lease: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            page_size: 100,
            list_cache: CacheHints { ttl_ms: 60_000, scope: CacheScope::Public },
            read_cache: CacheHints { ttl_ms: 0, scope: CacheScope::Private },
            health: true,
            state_max_age: Duration::from_secs(3600),
            server_info_in_results: true,
            client_request_timeout: Duration::from_secs(300),
            max_in_flight: 64,
            max_batch_len: 100,
            drain_timeout: Duration::from_secs(30),
            state_single_use: false,
            state_replay_cache: 65_536,
            task_ttl: Some(Duration::from_secs(3600)),
            task_poll_interval: Duration::from_secs(1),
            task_lease: Duration::from_secs(30),
        }
    }
}

struct ToolEntry {
    route: ToolRoute,
    validator: ArgumentValidator,
    headers: Vec<HeaderParam>,
}

struct ServerInner {
    info: Implementation,
    instructions: Option<String>,
    capabilities: ServerCapabilities,
    tools: Vec<ToolEntry>,
    tool_index: HashMap<String, usize>,
    resources: Vec<ResourceRoute>,
    resource_index: HashMap<String, usize>,
    templates: Vec<ResourceTemplateRoute>,
    prompts: Vec<PromptRoute>,
    prompt_index: HashMap<String, usize>,
    completion: Option<CompletionFn>,
    options: Options,
    keyring: StateKeyring,
    /// Used single-use states (with `Options::state_single_use`).
    used_states: Arc<dyn UsedStateStore>,
    changes: Arc<dyn ChangeBus>,
    has_tasks: bool,
    task_store: Arc<dyn TaskStore>,
    session_store: Arc<dyn SessionStore>,
    skills: Vec<SkillRoute>,
    skill_index: HashMap<String, usize>,
    /// The directory resources of the skills' files, with their direct children.
    directories: HashMap<String, Vec<mcp_types::Resource>>,
    app_state: AppState,
}

/// A request refused before it was served.
pub(crate) struct Rejection(pub(crate) ErrorObject, pub(crate) Disposition);

fn bad_request(code: i64, message: impl Into<String>) -> Rejection {
    Rejection(ErrorObject::new(code, message), Disposition::BadRequest)
}

/// A decoded client request, the same for both eras.
pub(crate) enum Decoded {
    Discover,
    Health,
    ListTools(Option<String>),
    ListResources(Option<String>),
    ListTemplates(Option<String>),
    ListPrompts(Option<String>),
    CallTool(CallToolRequestParams),
    Read(ReadResourceRequestParams),
    GetPrompt(GetPromptRequestParams),
    Complete(CompleteRequestParams),
    Listen(SubscriptionsListenRequestParams),
    Task(TaskRequest, RequestMetaObject),
    ListSkills(Option<String>),
    GetSkill(String),
    ReadDirectory(ReadResourceDirectoryRequestParams),
}

/// An MCP server: cheap to clone, shared by every connection and transport.
#[derive(Clone)]
pub struct Server {
    inner: Arc<ServerInner>,
}

impl Server {
    /// Starts a server that identifies itself as `name` `version`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder::new(Implementation { name: name.into(), version: version.into(), ..Default::default() })
    }

    /// The capabilities this server declares, derived from what was registered.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.inner.capabilities
    }

    /// The name and version this server reports (`serverInfo`).
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The application state of type `S` given to [`ServerBuilder::state`], if any.
    pub fn state<S: Send + Sync + 'static>(&self) -> Option<&S> {
        self.inner.app_state.get()
    }

    /// The settings this server was built with.
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    /// Announces that the tool list changed to every listener that asked for it.
    pub fn notify_tools_list_changed(&self) {
        self.inner.changes.publish(Change::Tools);
    }

    /// Announces that the prompt list changed to every listener that asked for it.
    pub fn notify_prompts_list_changed(&self) {
        self.inner.changes.publish(Change::Prompts);
    }

    /// Announces that the resource list changed to every listener that asked for it.
    pub fn notify_resources_list_changed(&self) {
        self.inner.changes.publish(Change::Resources);
    }

    /// Announces that the resource at `uri` changed, to the clients subscribed to it.
    pub fn notify_resource_updated(&self, uri: impl Into<String>) {
        self.inner.changes.publish(Change::ResourceUpdated(uri.into()));
    }

    /// Handles one encoded message. `mirrors` are the values a transport carried beside the body
    /// (HTTP headers); `None` for transports without any (stdio, in-memory).
    ///
    /// The bytes are decoded once, straight into the generated `ClientMessage` of the era the
    /// message belongs to (the `MCP-Protocol-Version` mirror, else the session's state), and the
    /// request is served by its generated variant. Only what those types refuse (to word the
    /// refusal), and a few rare messages, are read as a `serde_json::Value` instead.
    pub fn handle_bytes(&self, session: &Arc<Session>, bytes: &[u8], mirrors: Option<&Mirrors>) -> Option<Reply> {
        // A batch is counted before it is decoded: an oversized one costs no more than its text.
        if bytes.trim_ascii_start().starts_with(b"[")
            && let Ok(elements) = serde_json::from_slice::<Vec<&serde_json::value::RawValue>>(bytes)
            && elements.len() > self.inner.options.max_batch_len
        {
            return Some(self.oversized_batch(elements.len()));
        }
        if !bytes.trim_ascii_start().starts_with(b"[")
            && let Typed::Done(reply) = self.typed(session, Source::Bytes(bytes), mirrors)
        {
            return reply;
        }
        // A batch, or what the typed decode refused or could not place: the `Value` walk,
        // which words every refusal.
        match serde_json::from_slice::<Value>(bytes) {
            Ok(message) => self.handle_value(session, message, mirrors),
            Err(error) => {
                let error = ErrorObject::parse_error(format!("Parse error: {error}"));
                Some(Reply::ready(Outgoing::error_as(None, &error, Disposition::BadRequest)))
            }
        }
    }

    /// Handles one message: a request gives a [`Reply`] (its notifications, then its response);
    /// a notification or a response to a server request gives `None`. A JSON array is a batch,
    /// served only on a session that negotiated 2025-03-26; its reply ends with the array of
    /// its responses. An object is decoded from the `Value` into the generated types as
    /// [`Server::handle_bytes`] decodes bytes.
    pub fn handle(&self, session: &Arc<Session>, message: Value, mirrors: Option<&Mirrors>) -> Option<Reply> {
        if message.is_object()
            && let Typed::Done(reply) = self.typed(session, Source::Value(&message), mirrors)
        {
            return reply;
        }
        self.handle_value(session, message, mirrors)
    }

    /// [`Server::handle`] on a message the typed decode refused or could not place: walks the
    /// `Value` to find what is wrong with it (or serves it, as a batch element or one that only
    /// `serde_json::Value` reads, e.g. with a member given twice).
    fn handle_value(&self, session: &Arc<Session>, message: Value, mirrors: Option<&Mirrors>) -> Option<Reply> {
        let mut message = match message {
            Value::Object(message) => message,
            Value::Array(batch) => return self.handle_batch(session, batch, mirrors),
            _ => return Some(invalid(None, "A JSON-RPC message must be an object")),
        };
        let id = match message.get("id") {
            None => None,
            Some(id) => match serde_json::from_value::<RequestId>(id.clone()) {
                Ok(id) => Some(id),
                Err(_) => return Some(invalid(None, "`id` must be a string or an integer")),
            },
        };
        // A message with `method`, or with `params` and neither `result` nor `error` (a request
        // that lost its method), is a request: an error about it carries its id. Any other
        // message answers one of the server's requests, so its id is in the server's numbering:
        // an error about it carries no id, or the client would take it for the answer to its
        // own request with that id.
        let request_like = is_request_like(&message);
        let reply_id = if request_like { id.as_ref() } else { None };
        if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Some(invalid(reply_id, "`jsonrpc` must be \"2.0\""));
        }
        let params = message.remove("params");
        if params.as_ref().is_some_and(|p| !p.is_object()) {
            return Some(invalid(reply_id, "`params` must be an object"));
        }
        let method = match message.remove("method") {
            None => None,
            Some(Value::String(method)) => Some(method),
            Some(_) => return Some(invalid(id.as_ref(), "`method` must be a string")),
        };
        match (method, id) {
            (Some(method), Some(id)) => Some(self.request(session, id, &method, params, mirrors)),
            (Some(method), None) => {
                self.notification(session, &method, params);
                None
            }
            (None, Some(id)) => {
                let outcome = match (message.remove("result"), message.remove("error")) {
                    (Some(result), None) => Ok(result),
                    (None, Some(error)) => Err(serde_json::from_value(error)
                        .unwrap_or_else(|e| ErrorObject::internal_error(format!("unreadable error: {e}")))),
                    _ if request_like => return Some(invalid(Some(&id), "a request needs a `method`")),
                    _ => return Some(invalid(None, "a response needs exactly one of `result` and `error`")),
                };
                if !session.resolve(&id, outcome) {
                    tracing::debug!(%id, "response to no pending request ignored");
                }
                None
            }
            (None, None) => Some(invalid(None, "a message needs a `method` or an `id`")),
        }
    }

    pub(crate) fn notification(&self, session: &Arc<Session>, method: &str, params: Option<Value>) {
        match method {
            "notifications/initialized" => session.update(|legacy| legacy.initialized = true),
            "notifications/cancelled" => {
                let id = params.as_ref().and_then(|p| p.get("requestId")).cloned();
                if let Some(id) = id.and_then(|id| serde_json::from_value::<RequestId>(id).ok()) {
                    session.cancel(&id);
                }
            }
            _ => tracing::debug!(method, "notification ignored"),
        }
    }

    fn request(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        method: &str,
        params: Option<Value>,
        mirrors: Option<&Mirrors>,
    ) -> Reply {
        let has_modern_meta =
            params.as_ref().and_then(|p| p.get("_meta")).is_some_and(|m| m.get(PROTOCOL_VERSION).is_some());
        let header = mirrors.and_then(|m| m.protocol_version.as_deref());
        let legacy = match header {
            // A body with modern `_meta` is modern whatever the header says (a mismatch is -32020).
            Some(version) => LEGACY_VERSIONS.contains(&version) && !has_modern_meta,
            // A legacy client may `ping` before `initialize`; a modern request always has `_meta`.
            None => !has_modern_meta && (matches!(method, "initialize" | "ping") || session.is_initialized_legacy()),
        };
        if legacy {
            return self.legacy(session, id, method, params);
        }
        match self.modern(session, &id, method, params, mirrors) {
            Ok(reply) => reply,
            Err(Rejection(error, disposition)) => Reply::ready(Outgoing::error_as(Some(&id), &error, disposition)),
        }
    }

    // ---------------------------------------------------------------- modern (2026-07-28)

    fn modern(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        method: &str,
        params: Option<Value>,
        mirrors: Option<&Mirrors>,
    ) -> Result<Reply, Rejection> {
        let meta = params.as_ref().and_then(|p| p.get("_meta"));
        let view = ModernView {
            method,
            meta: meta.map(|meta| MetaView {
                version: meta.get(PROTOCOL_VERSION).and_then(Value::as_str),
                capabilities: meta.get(CLIENT_CAPABILITIES).is_some(),
            }),
            name: name_member(method).and_then(|member| params.as_ref()?.get(member)?.as_str()),
        };
        let version = self.check_modern(&view, mirrors)?;
        let call = self.decode(id, method, params)?;
        self.serve_modern(session, id, version, call, mirrors)
    }

    /// The checks of a modern request that come before its params are read, in the order the
    /// spec's errors are given: the protocol version (header and `_meta`), the mirrored
    /// `Mcp-Method`, the required `_meta` members, the mirrored `Mcp-Name`. Returns the version.
    pub(crate) fn check_modern(&self, view: &ModernView<'_>, mirrors: Option<&Mirrors>) -> Result<String, Rejection> {
        let meta_version = view.meta.as_ref().and_then(|m| m.version);
        let version = match mirrors {
            Some(mirrors) => {
                let Some(header) = mirrors.protocol_version.as_deref() else {
                    return Err(bad_request(
                        error_codes::HEADER_MISMATCH,
                        "The MCP-Protocol-Version header is missing",
                    ));
                };
                if let Some(body) = meta_version
                    && body != header
                {
                    return Err(bad_request(
                        error_codes::HEADER_MISMATCH,
                        format!(
                            "The MCP-Protocol-Version header ({header}) does not match _meta protocolVersion ({body})"
                        ),
                    ));
                }
                header
            }
            None => match meta_version {
                Some(version) => version,
                None => return Err(missing_meta(view.meta.is_some(), PROTOCOL_VERSION)),
            },
        };
        let version = version.to_owned();
        if !MODERN_VERSIONS.contains(&version.as_str()) {
            let supported: Vec<&str> = MODERN_VERSIONS.iter().chain(LEGACY_VERSIONS).copied().collect();
            let error = ErrorObject::new(
                error_codes::UNSUPPORTED_PROTOCOL_VERSION,
                format!("Unsupported protocol version {version}; supported: {}", supported.join(", ")),
            )
            .with_data(json!({ "supported": supported, "requested": version }));
            return Err(Rejection(error, Disposition::BadRequest));
        }
        if let Some(mirrors) = mirrors {
            headers::check_method(mirrors, view.method).map_err(|e| bad_request(error_codes::HEADER_MISMATCH, e))?;
        }
        if meta_version.is_none() {
            return Err(missing_meta(view.meta.is_some(), PROTOCOL_VERSION));
        }
        if !view.meta.as_ref().is_some_and(|m| m.capabilities) {
            return Err(missing_meta(view.meta.is_some(), CLIENT_CAPABILITIES));
        }
        if let (Some(mirrors), Some(_)) = (mirrors, name_member(view.method)) {
            headers::check_name(mirrors, view.name).map_err(|e| bad_request(error_codes::HEADER_MISMATCH, e))?;
        }
        Ok(version)
    }

    /// Serves a checked and decoded modern request (after the mirrored `Mcp-Param-*` check of
    /// a tool call).
    pub(crate) fn serve_modern(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        version: String,
        call: Decoded,
        mirrors: Option<&Mirrors>,
    ) -> Result<Reply, Rejection> {
        let meta = call_meta(&call);
        if let (Decoded::CallTool(params), Some(mirrors)) = (&call, mirrors)
            && let Some(entry) = self.tool(&params.name)
            && !entry.headers.is_empty()
        {
            let arguments = params.arguments.clone().map(Value::Object).unwrap_or_default();
            headers::check_params(mirrors, &entry.headers, &arguments)
                .map_err(|e| bad_request(error_codes::HEADER_MISMATCH, e))?;
        }
        Ok(self.dispatch(session, id.clone(), Era::Modern, version, meta, call))
    }

    /// Decodes a request the typed path left to the `Value` walk through the same generated
    /// `ClientRequest`: its handler call, or the refusal of its params (naming the method and the
    /// member), or of a method this server does not serve.
    fn decode(&self, id: &RequestId, method: &str, params: Option<Value>) -> Result<Decoded, Rejection> {
        let mut message = Map::new();
        message.insert("jsonrpc".to_owned(), Value::from("2.0"));
        message.insert("id".to_owned(), to_value(id));
        message.insert("method".to_owned(), Value::from(method));
        if let Some(params) = params {
            message.insert("params".to_owned(), params);
        }
        match <mcp_types::ClientRequest as serde::Deserialize>::deserialize(Value::Object(message)) {
            Ok(request) => self.modern_call(request),
            Err(_) if !self.serves(method) => Err(unknown(method)),
            Err(error) => Err(params_refused(method, &error)),
        }
    }

    /// Whether this server serves a method of the generated `ClientRequest` (every other method
    /// is served when [`Server::decode_extension`] knows it).
    pub(crate) fn serves(&self, method: &str) -> bool {
        use mcp_types::{
            CallToolRequest, CompleteRequest, GetPromptRequest, ListPromptsRequest, ListResourceTemplatesRequest,
            ListResourcesRequest, ListToolsRequest, ReadResourceRequest,
        };
        match method {
            ListToolsRequest::METHOD | CallToolRequest::METHOD => self.has_tools(),
            ListResourcesRequest::METHOD | ListResourceTemplatesRequest::METHOD | ReadResourceRequest::METHOD => {
                self.has_resources()
            }
            ListPromptsRequest::METHOD | GetPromptRequest::METHOD => self.has_prompts(),
            CompleteRequest::METHOD => self.inner.completion.is_some(),
            _ => true,
        }
    }

    /// Decodes the params of a method that the generated unions do not define (`health` and the
    /// tasks and skills extensions' methods); any other method is not found.
    pub(crate) fn decode_extension(&self, method: &str, params: Value) -> Result<Decoded, Rejection> {
        Ok(match method {
            "health" if self.inner.options.health => typed::<RequestParams>(method, params).map(|_| Decoded::Health)?,
            "tasks/get" | "tasks/cancel" if self.inner.has_tasks => {
                let params: TaskIdParams = typed(method, params)?;
                let meta = params.meta.unwrap_or_default();
                match method {
                    "tasks/get" => Decoded::Task(TaskRequest::Get(params.task_id), meta),
                    _ => Decoded::Task(TaskRequest::Cancel(params.task_id), meta),
                }
            }
            "tasks/update" if self.inner.has_tasks => {
                let params: RawUpdateParams = typed(method, params)?;
                let request = TaskRequest::Update(params.task_id, params.input_responses);
                Decoded::Task(request, params.meta.unwrap_or_default())
            }
            "skills/list" if !self.inner.skills.is_empty() => {
                Decoded::ListSkills(typed::<ListSkillsRequestParams>(method, params)?.cursor)
            }
            "skills/get" if !self.inner.skills.is_empty() => {
                Decoded::GetSkill(typed::<GetSkillRequestParams>(method, params)?.uri)
            }
            "resources/directory/read" if !self.inner.directories.is_empty() => {
                Decoded::ReadDirectory(typed(method, params)?)
            }
            _ => return Err(unknown(method)),
        })
    }

    // ---------------------------------------------------------------- legacy (2024-11-05 … 2025-11-25)

    fn legacy(&self, session: &Arc<Session>, id: RequestId, method: &str, params: Option<Value>) -> Reply {
        let state = session.legacy();
        let reply = |result: Value| Reply::ready(Outgoing::result(&id, &result));
        match method {
            "initialize" => return Reply::ready(self.initialize(session, &id, params)),
            "ping" => return reply(json!({})),
            _ => {}
        }
        let Some(version) = state.version else {
            // Legacy HTTP: a request without a session SHOULD be a 400.
            let error = ErrorObject::invalid_request(format!("{method} before initialize: send initialize first"));
            return Reply::ready(Outgoing::error_as(Some(&id), &error, Disposition::BadRequest));
        };
        let params = params.unwrap_or_else(|| json!({}));
        match method {
            "logging/setLevel" => {
                return match params.get("level").cloned().map(serde_json::from_value) {
                    Some(Ok(level)) => {
                        session.update(|legacy| legacy.log_level = Some(level));
                        reply(json!({}))
                    }
                    _ => Reply::ready(Outgoing::error(
                        Some(&id),
                        &ErrorObject::invalid_params(
                            "Invalid params for logging/setLevel: `level` must be a logging level",
                        ),
                    )),
                };
            }
            "resources/subscribe" | "resources/unsubscribe" if self.has_resources() => {
                let Some(uri) = params.get("uri").and_then(Value::as_str).map(str::to_owned) else {
                    let error =
                        ErrorObject::invalid_params(format!("Invalid params for {method}: missing field `uri`"));
                    return Reply::ready(Outgoing::error(Some(&id), &error));
                };
                if !self.knows_resource(&uri) {
                    return Reply::ready(Outgoing::error(
                        Some(&id),
                        &Error::resource_not_found(&uri).into_error_object(),
                    ));
                }
                let subscribe = method == "resources/subscribe";
                session.update(|legacy| {
                    if subscribe {
                        legacy.subscriptions.insert(uri);
                    } else {
                        legacy.subscriptions.remove(&uri);
                    }
                });
                return reply(json!({}));
            }
            // The tasks extension does not exist before 2026-07-28.
            // Nor does the skills extension.
            "server/discover"
            | "subscriptions/listen"
            | "tasks/get"
            | "tasks/update"
            | "tasks/cancel"
            | "skills/list"
            | "skills/get"
            | "resources/directory/read" => {
                return Reply::ready(Outgoing::error(Some(&id), &ErrorObject::method_not_found(method)));
            }
            _ => {}
        }
        // The remaining methods mean the same in both eras: give the params the `_meta` a
        // modern request would carry, and serve them the same way.
        let Value::Object(mut params) = params else { unreachable!("checked in handle") };
        let mut meta = match params.remove("_meta") {
            Some(Value::Object(meta)) => meta,
            _ => Map::new(),
        };
        meta.insert(PROTOCOL_VERSION.into(), json!(version));
        meta.insert(CLIENT_CAPABILITIES.into(), serde_json::to_value(&state.client_capabilities).unwrap_or_default());
        if let Some(info) = &state.client_info {
            meta.insert("io.modelcontextprotocol/clientInfo".into(), serde_json::to_value(info).unwrap_or_default());
        }
        params.insert("_meta".into(), Value::Object(meta));
        let call = match self.decode(&id, method, Some(Value::Object(params))) {
            Ok(Decoded::Discover | Decoded::Listen(_) | Decoded::Task(..)) => unreachable!("answered above"),
            Ok(call) => call,
            Err(Rejection(error, _)) => return Reply::ready(Outgoing::error(Some(&id), &error)),
        };
        let meta = call_meta(&call);
        self.dispatch(session, id, Era::Legacy, version, meta, call)
    }

    fn initialize(&self, session: &Arc<Session>, id: &RequestId, params: Option<Value>) -> Outgoing {
        if session.is_initialized_legacy() {
            return Outgoing::error(Some(id), &ErrorObject::invalid_request("This session is already initialized"));
        }
        match serde_json::from_value(params.unwrap_or_default()) {
            Ok(params) => self.initialize_with(session, id, params),
            Err(error) => {
                let error = ErrorObject::invalid_params(format!("Invalid params for initialize: {error}"));
                Outgoing::error(Some(id), &error)
            }
        }
    }

    /// Opens a legacy session: negotiates the version and answers `initialize`.
    fn initialize_with(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: mcp_types::v2025_11_25::InitializeRequestParams,
    ) -> Outgoing {
        if session.is_initialized_legacy() {
            return Outgoing::error(Some(id), &ErrorObject::invalid_request("This session is already initialized"));
        }
        let requested = params.protocol_version.as_str();
        let version = if LEGACY_VERSIONS.contains(&requested) { requested } else { LEGACY_VERSIONS[0] };
        let capabilities = serde_json::to_value(&params.capabilities)
            .and_then(serde_json::from_value::<ClientCapabilities>)
            .unwrap_or_default();
        let client_info = serde_json::to_value(&params.client_info).ok().and_then(|v| serde_json::from_value(v).ok());
        session.update(|legacy| {
            legacy.version = Some(version.to_owned());
            legacy.client_capabilities = capabilities;
            legacy.client_info = client_info;
        });
        // Extensions such as tasks belong to 2026-07-28 and later.
        let mut capabilities = self.inner.capabilities.clone();
        capabilities.extensions = None;
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": self.inner.info,
        });
        if let Some(instructions) = &self.inner.instructions {
            result["instructions"] = json!(instructions);
        }
        Outgoing::result(id, &result)
    }

    // ---------------------------------------------------------------- serving, both eras

    fn dispatch(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        era: Era,
        version: String,
        meta: RequestMetaObject,
        call: Decoded,
    ) -> Reply {
        let options = &self.inner.options;
        let list = options.list_cache;
        let finish = |result: Value| Reply::ready(Outgoing::result(&id, &self.finish(era, result)));
        let listed = |result: Result<Outgoing, ErrorObject>| match result {
            Ok(message) => Reply::ready(message),
            Err(error) => Reply::ready(Outgoing::error(Some(&id), &error)),
        };
        match call {
            Decoded::Discover => {
                let mut result = DiscoverResult::new(
                    list.scope,
                    self.inner.capabilities.clone(),
                    MODERN_VERSIONS.iter().chain(LEGACY_VERSIONS).map(|v| v.to_string()).collect(),
                    list.ttl_ms,
                );
                result.instructions = self.inner.instructions.clone();
                Reply::ready(self.respond(&id, era, result))
            }
            Decoded::Health => {
                let mut result = json!({ "protocolVersion": version });
                if era == Era::Modern {
                    result["resultType"] = json!("complete");
                }
                finish(result)
            }
            Decoded::ListTools(cursor) => {
                listed(self.page(cursor, &self.inner.tools, |entry| entry.route.tool.clone()).map(|(tools, next)| {
                    let mut result = ListToolsResult::new(list.scope, tools, list.ttl_ms);
                    result.next_cursor = next;
                    self.respond(&id, era, result)
                }))
            }
            Decoded::ListResources(cursor) => {
                listed(self.page(cursor, &self.inner.resources, |r| r.resource.clone()).map(|(resources, next)| {
                    let mut result = ListResourcesResult::new(list.scope, resources, list.ttl_ms);
                    result.next_cursor = next;
                    self.respond(&id, era, result)
                }))
            }
            Decoded::ListTemplates(cursor) => {
                listed(self.page(cursor, &self.inner.templates, |t| t.template.clone()).map(|(templates, next)| {
                    let mut result = ListResourceTemplatesResult::new(list.scope, templates, list.ttl_ms);
                    result.next_cursor = next;
                    self.respond(&id, era, result)
                }))
            }
            Decoded::ListPrompts(cursor) => {
                listed(self.page(cursor, &self.inner.prompts, |p| p.prompt.clone()).map(|(prompts, next)| {
                    let mut result = ListPromptsResult::new(list.scope, prompts, list.ttl_ms);
                    result.next_cursor = next;
                    self.respond(&id, era, result)
                }))
            }
            Decoded::Listen(params) => self.listen(session, id, params),
            Decoded::ListSkills(cursor) => {
                listed(self.page(cursor, &self.inner.skills, SkillRoute::entry).map(|(skills, next)| {
                    let mut result = ListSkillsResult::new(skills, list.ttl_ms, list.scope);
                    result.next_cursor = next;
                    self.respond(&id, era, result)
                }))
            }
            Decoded::GetSkill(uri) => match self.inner.skill_index.get(&uri) {
                Some(&index) => {
                    let entry = self.inner.skills[index].entry();
                    Reply::ready(self.respond(&id, era, GetSkillResult::new(entry, list.ttl_ms, list.scope)))
                }
                None => {
                    let error = ErrorObject::invalid_params(format!("No skill is served at {uri}"))
                        .with_data(json!({ "uri": uri }));
                    Reply::ready(Outgoing::error(Some(&id), &error))
                }
            },
            Decoded::ReadDirectory(params) => listed(self.read_directory(params).and_then(|(uri, cursor)| {
                let children = &self.inner.directories[&uri];
                self.page(cursor, children, Clone::clone).map(|(resources, next)| {
                    let mut result = ReadResourceDirectoryResult::new(resources);
                    result.next_cursor = next;
                    self.respond(&id, era, result)
                })
            })),
            Decoded::Task(request, meta) => {
                if !ext::declares(&meta.client_capabilities, TASKS) {
                    let error = missing_capability(&ext::client_capabilities(TASKS));
                    return Reply::ready(Outgoing::error_as(Some(&id), &error, Disposition::BadRequest));
                }
                let server = self.clone();
                let principal = session.principal().clone();
                let request_id = id.clone();
                let (respond, rx) = mpsc::channel(1);
                let running = async move { server.task_request(&principal, &request_id, request).await };
                self.drive(session, id, respond, rx, Box::pin(running))
            }
            call => self.spawn(session, id, era, version, meta, call),
        }
    }

    /// Runs a handler: its first step here, and the rest, if it waits for anything, on its own
    /// task; its messages and response arrive through the [`Reply`]. Most handlers answer
    /// without waiting, and then no task is spawned.
    fn spawn(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        era: Era,
        version: String,
        meta: RequestMetaObject,
        call: Decoded,
    ) -> Reply {
        let (sink, rx) = mpsc::channel(32);
        let respond = sink.clone();
        let server = self.clone();
        let run_session = Arc::clone(session);
        let run_id = id.clone();
        let running = Box::pin(async move { server.run(&run_session, &run_id, era, version, meta, call, sink).await });
        self.drive(session, id, respond, rx, running)
    }

    /// Polls `running` once here; if it waits, the rest runs on its own task (cancelled when the
    /// reply is dropped) and its response comes through `respond`.
    fn drive(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        respond: mpsc::Sender<Outgoing>,
        mut rx: mpsc::Receiver<Outgoing>,
        mut running: BoxFuture<Outgoing>,
    ) -> Reply {
        let limit = self.inner.options.max_in_flight;
        if session.in_flight() >= limit {
            return Reply::ready(Outgoing::error(Some(&id), &busy(limit)));
        }
        let mut waker = std::task::Context::from_waker(std::task::Waker::noop());
        // A panicking handler ends its reply without a response, as it does on a task.
        let first = std::panic::catch_unwind(AssertUnwindSafe(|| running.as_mut().poll(&mut waker)));
        let response = match first {
            Ok(Poll::Pending) => {
                let task_session = Arc::clone(session);
                let task_id = id.clone();
                let task = tokio::spawn(async move {
                    let response = running.await;
                    let _ = respond.send(response).await;
                    task_session.untrack(&task_id);
                });
                session.track(id, task.abort_handle());
                return Reply::streaming(rx, task.abort_handle());
            }
            Ok(Poll::Ready(response)) => Some(response),
            Err(_) => None,
        };
        drop(running);
        let mut messages = VecDeque::new();
        while let Ok(message) = rx.try_recv() {
            messages.push_back(message);
        }
        messages.extend(response);
        Reply::finished(messages)
    }

    #[allow(clippy::too_many_arguments)]
    async fn run(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        era: Era,
        version: String,
        meta: RequestMetaObject,
        call: Decoded,
        sink: mpsc::Sender<Outgoing>,
    ) -> Outgoing {
        // Multi-round requests: earlier answers come back sealed in `requestState`, bound to the
        // request they were given for. The binding (a hash) is computed only when needed: to
        // open a state, or to seal one. The legacy wire has neither.
        let modern = era == Era::Modern;
        let (binding, state, responses) = match &call {
            Decoded::CallTool(p) => (
                modern.then(|| Binding {
                    method: "tools/call",
                    target: p.name.clone(),
                    arguments: p.arguments.clone().map(Value::Object).unwrap_or_default(),
                }),
                p.request_state.as_deref(),
                p.input_responses.as_ref(),
            ),
            Decoded::GetPrompt(p) => (
                modern.then(|| Binding {
                    method: "prompts/get",
                    target: p.name.clone(),
                    arguments: serde_json::to_value(&p.arguments).unwrap_or_default(),
                }),
                p.request_state.as_deref(),
                p.input_responses.as_ref(),
            ),
            Decoded::Read(p) => (
                modern.then(|| Binding { method: "resources/read", target: p.uri.clone(), arguments: Value::Null }),
                p.request_state.as_deref(),
                p.input_responses.as_ref(),
            ),
            _ => (None, None, None),
        };
        let principal = session.principal();
        let principal = (!principal.is_anonymous()).then(|| state::principal_digest(principal.as_str()));
        let answers = match self.answers(era, binding.as_ref(), principal.as_deref(), state, responses).await {
            Ok(answers) => answers,
            Err(error) => return Outgoing::error(Some(id), &error),
        };
        let may_become_task = match &call {
            Decoded::CallTool(params) => {
                era == Era::Modern
                    && ext::declares(&meta.client_capabilities, TASKS)
                    && self.tool(&params.name).is_some_and(|t| t.route.task_support != TaskSupport::Forbidden)
            }
            _ => false,
        };
        let ctx = Context::new(ContextInner {
            server: self.clone(),
            era,
            protocol_version: version,
            client_capabilities: meta.client_capabilities,
            client_info: meta.client_info,
            log_level: meta.log_level,
            progress_token: meta.progress_token,
            sink,
            session: (era == Era::Legacy).then(|| Arc::clone(session)),
            answers,
            used: Default::default(),
            principal: session.principal().clone(),
            may_become_task,
            task: Default::default(),
        });
        let is_tool = matches!(call, Decoded::CallTool(_));
        let outcome: Result<Outgoing, Error> = match call {
            Decoded::CallTool(params) if may_become_task => {
                // Served inline until the handler first waits; then the call becomes a task.
                let server = self.clone();
                let handler_ctx = ctx.clone();
                let mut handler: BoxFuture<Result<mcp_types::CallToolResult, Error>> =
                    Box::pin(async move { server.call_tool(handler_ctx, params).await });
                match futures::poll!(handler.as_mut()) {
                    Poll::Ready(outcome) => outcome.map(|r| self.respond(id, era, r)),
                    Poll::Pending => return self.start_task(&ctx, id, handler).await,
                }
            }
            Decoded::CallTool(params) => self.call_tool(ctx.clone(), params).await.map(|r| self.respond(id, era, r)),
            Decoded::Read(params) => self.read(ctx.clone(), params.uri).await.map(|contents| {
                let cache = self.inner.options.read_cache;
                self.respond(id, era, ReadResourceResult::new(cache.scope, contents, cache.ttl_ms))
            }),
            Decoded::GetPrompt(params) => self.get_prompt(ctx.clone(), params).await.map(|r| self.respond(id, era, r)),
            Decoded::Complete(params) => self
                .complete(ctx.clone(), params)
                .await
                .map(|completion| self.respond(id, era, CompleteResult::new(completion))),
            _ => unreachable!("served without a task"),
        };
        match outcome {
            Ok(message) => message,
            Err(Error::Failed(message)) if is_tool => self.respond(id, era, error_result(message)),
            Err(Error::InputRequired(requests)) if era == Era::Modern => {
                let sealed = Sealed {
                    binding: binding.as_ref().map(Binding::digest).unwrap_or_default(),
                    issued: state::now_secs(),
                    answers: ctx.used_answers(),
                    principal,
                    nonce: state::nonce(),
                };
                let mut result = InputRequiredResult::new();
                result.result_type = ResultType::InputRequired;
                result.input_requests = Some(requests);
                result.request_state = Some(self.inner.keyring.seal(&sealed));
                self.respond(id, era, result)
            }
            Err(Error::MissingCapability(required)) if era == Era::Modern => {
                Outgoing::error_as(Some(id), &missing_capability(&required), Disposition::BadRequest)
            }
            Err(Error::MissingCapability(required)) => {
                let names = serde_json::to_value(&required).unwrap_or_default();
                let error = ErrorObject::invalid_params(format!(
                    "The client did not declare the capabilities this needs: {names}"
                ));
                Outgoing::error(Some(id), &error)
            }
            Err(error) => Outgoing::error(Some(id), &error.into_error_object()),
        }
    }

    /// The answers a multi-round request carries: those sealed in its state, then this round's.
    async fn answers(
        &self,
        era: Era,
        binding: Option<&Binding>,
        principal: Option<&str>,
        state: Option<&str>,
        responses: Option<&InputResponses>,
    ) -> Result<BTreeMap<String, Value>, ErrorObject> {
        let mut answers = BTreeMap::new();
        if era == Era::Legacy {
            return Ok(answers);
        }
        if let (Some(state), Some(binding)) = (state, binding) {
            let options = &self.inner.options;
            let invalid = |e: state::StateError| ErrorObject::invalid_params(format!("Invalid requestState: {e}"));
            let sealed =
                self.inner.keyring.open(state, &binding.digest(), principal, options.state_max_age).map_err(invalid)?;
            if options.state_single_use {
                let used = StateUse {
                    issued_secs: sealed.issued,
                    nonce: sealed.nonce,
                    expires_secs: sealed.issued.saturating_add(options.state_max_age.as_secs()),
                };
                match self.inner.used_states.first_use(used).await {
                    Ok(UseVerdict::First) => {}
                    Ok(UseVerdict::Repeated) => return Err(invalid(state::StateError::AlreadyUsed)),
                    Ok(UseVerdict::Forgotten) => return Err(invalid(state::StateError::Forgotten)),
                    Err(error) => {
                        return Err(ErrorObject::internal_error(format!("The used-state store failed: {error}")));
                    }
                }
            }
            answers = sealed.answers;
        }
        for (key, response) in responses.into_iter().flatten() {
            answers.insert(key.clone(), to_value(response));
        }
        Ok(answers)
    }

    async fn call_tool(&self, ctx: Context, params: CallToolRequestParams) -> Result<mcp_types::CallToolResult, Error> {
        let Some(entry) = self.tool(&params.name) else {
            return Err(Error::invalid_params(format!("Unknown tool: {}", params.name)));
        };
        if let Some(required) = &entry.route.requires
            && let Some(missing) = missing_capabilities(required, ctx.client_capabilities())
        {
            return Err(Error::MissingCapability(Box::new(missing)));
        }
        // The extension does not exist before 2026-07-28, whatever a legacy client declared.
        let accepts_tasks = ctx.era() == Era::Modern && ext::declares(ctx.client_capabilities(), TASKS);
        if entry.route.task_support == TaskSupport::Required && !accepts_tasks {
            return Err(match ctx.era() {
                Era::Modern => Error::MissingCapability(Box::new(ext::client_capabilities(TASKS))),
                Era::Legacy => Error::invalid_params(format!(
                    "Tool {} runs only as a task, which needs the tasks extension of protocol 2026-07-28",
                    params.name
                )),
            });
        }
        let arguments = params.arguments.map(Value::Object).unwrap_or_else(|| json!({}));
        let problems = entry.validator.problems(&arguments);
        if !problems.is_empty() {
            return Ok(error_result(format!("Invalid arguments for tool {}: {}", params.name, problems.join("; "))));
        }
        (entry.route.handler)(ctx, arguments).await
    }

    async fn read(&self, ctx: Context, uri: String) -> Result<Vec<mcp_types::ReadResourceResultContentsItem>, Error> {
        if let Some(&index) = self.inner.resource_index.get(&uri) {
            let contents = (self.inner.resources[index].handler)(ctx, uri.clone()).await?;
            return non_empty(contents, &uri);
        }
        // A skill's other files: refuse a path that leaves the skill, generate a dynamic one.
        for skill in &self.inner.skills {
            if let Some(path) = skill.inner.relative(&uri) {
                let path = path?;
                if skill.entry().resources == mcp_types::ext::skills::SkillResources::Dynamic {
                    let contents = skill.inner.read(ctx, path).await?;
                    return non_empty(contents, &uri);
                }
                return Err(Error::resource_not_found(&uri));
            }
        }
        for template in &self.inner.templates {
            if let Some(vars) = template.pattern.matches(&uri) {
                let contents = (template.handler)(ctx, uri.clone(), vars).await?;
                return non_empty(contents, &uri);
            }
        }
        Err(Error::resource_not_found(&uri))
    }

    async fn get_prompt(
        &self,
        ctx: Context,
        params: GetPromptRequestParams,
    ) -> Result<mcp_types::GetPromptResult, Error> {
        let Some(&index) = self.inner.prompt_index.get(&params.name) else {
            return Err(Error::invalid_params(format!("Unknown prompt: {}", params.name)));
        };
        let route = &self.inner.prompts[index];
        let arguments = params.arguments.unwrap_or_default();
        if let Some(missing) = route.missing_argument(&arguments) {
            return Err(Error::invalid_params(format!("Prompt {} needs the argument `{missing}`", params.name)));
        }
        (route.handler)(ctx, arguments).await
    }

    async fn complete(
        &self,
        ctx: Context,
        params: CompleteRequestParams,
    ) -> Result<mcp_types::CompleteResultCompletion, Error> {
        match &params.r#ref {
            CompleteRequestParamsRef::RefPrompt(prompt) if !self.inner.prompt_index.contains_key(&prompt.name) => {
                return Err(Error::invalid_params(format!("Unknown prompt: {}", prompt.name)));
            }
            CompleteRequestParamsRef::RefResource(template)
                if !self.inner.templates.iter().any(|t| t.template.uri_template == template.uri) =>
            {
                return Err(Error::invalid_params(format!("Unknown resource template: {}", template.uri)));
            }
            _ => {}
        }
        let handler = self.inner.completion.as_ref().expect("checked when decoded");
        let mut completion = handler(ctx, params).await?;
        // The spec caps a response at 100 values.
        if completion.values.len() > 100 {
            completion.total.get_or_insert(completion.values.len().into());
            completion.values.truncate(100);
            completion.has_more = Some(true);
        }
        Ok(completion)
    }

    /// The response carrying a typed result, encoded directly. On the modern wire the server's
    /// identity goes in its `_meta` (the typed results always carry `resultType`); on the legacy
    /// wire the members it lacks are left out as they are written ([`legacy_wire::Legacy`]).
    pub(crate) fn respond<T: WireResult>(&self, id: &RequestId, era: Era, mut result: T) -> Outgoing {
        match era {
            Era::Modern => {
                if self.inner.options.server_info_in_results {
                    let meta = result.meta().get_or_insert_with(Default::default);
                    if meta.server_info.is_none() {
                        meta.server_info = Some(self.inner.info.clone());
                    }
                }
                Outgoing::result(id, &result)
            }
            Era::Legacy => {
                // The legacy wire has no server identity in `_meta` (and no `_meta` left empty).
                let meta = result.meta();
                if let Some(object) = meta {
                    object.server_info = None;
                    if object.extra.is_empty() {
                        *meta = None;
                    }
                }
                Outgoing::result(id, &legacy_wire::Legacy(&result))
            }
        }
    }

    /// Era-specific result members: `resultType` and server identity on the modern wire; the
    /// legacy wire has neither, nor the caching hints.
    fn finish(&self, era: Era, mut result: Value) -> Value {
        let Some(object) = result.as_object_mut() else { return result };
        match era {
            Era::Modern => {
                object.entry("resultType").or_insert_with(|| json!("complete"));
                if self.inner.options.server_info_in_results {
                    let meta = object.entry("_meta").or_insert_with(|| json!({}));
                    if let Some(meta) = meta.as_object_mut() {
                        meta.entry(SERVER_INFO).or_insert_with(|| to_value(&self.inner.info));
                    }
                }
            }
            Era::Legacy => {
                object.remove("resultType");
                object.remove("ttlMs");
                object.remove("cacheScope");
                if let Some(Value::Object(meta)) = object.get_mut("_meta") {
                    meta.remove(SERVER_INFO);
                    if meta.is_empty() {
                        object.remove("_meta");
                    }
                }
            }
        }
        result
    }

    fn page<T, U>(
        &self,
        cursor: Option<String>,
        items: &[T],
        item: impl Fn(&T) -> U,
    ) -> Result<(Vec<U>, Option<String>), ErrorObject> {
        let start = match cursor {
            None => 0,
            Some(cursor) => base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(&cursor)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .and_then(|text| text.strip_prefix("offset:").and_then(|n| n.parse::<usize>().ok()))
                .filter(|&start| start <= items.len())
                .ok_or_else(|| ErrorObject::invalid_params(format!("Invalid cursor: {cursor}")))?,
        };
        let end = (start + self.inner.options.page_size).min(items.len());
        let next = (end < items.len())
            .then(|| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("offset:{end}")));
        Ok((items[start..end].iter().map(item).collect(), next))
    }

    pub(crate) fn task_store(&self) -> &Arc<dyn TaskStore> {
        &self.inner.task_store
    }

    /// Where the HTTP transport keeps legacy sessions.
    pub fn session_store(&self) -> &Arc<dyn SessionStore> {
        &self.inner.session_store
    }

    /// The keys sealing `requestState`: rotate or remove keys through it while serving.
    pub fn state_keyring(&self) -> &StateKeyring {
        &self.inner.keyring
    }

    fn tool(&self, name: &str) -> Option<&ToolEntry> {
        self.inner.tool_index.get(name).map(|&index| &self.inner.tools[index])
    }

    fn has_tools(&self) -> bool {
        !self.inner.tools.is_empty()
    }

    fn has_resources(&self) -> bool {
        !self.inner.resources.is_empty() || !self.inner.templates.is_empty()
    }

    fn has_prompts(&self) -> bool {
        !self.inner.prompts.is_empty()
    }

    /// The directory a `resources/directory/read` names, and its cursor.
    fn read_directory(
        &self,
        params: ReadResourceDirectoryRequestParams,
    ) -> Result<(String, Option<String>), ErrorObject> {
        let uri = params.uri;
        if self.inner.directories.contains_key(&uri) {
            return Ok((uri, params.cursor));
        }
        for skill in &self.inner.skills {
            if let Some(Err(error)) = skill.inner.relative(&uri) {
                return Err(error.into_error_object());
            }
        }
        let message = if self.knows_resource(&uri) {
            format!("{uri} is not a directory resource")
        } else {
            format!("No directory resource at {uri}")
        };
        Err(ErrorObject::invalid_params(message).with_data(json!({ "uri": uri })))
    }

    fn knows_resource(&self, uri: &str) -> bool {
        self.inner.resource_index.contains_key(uri)
            || self.inner.templates.iter().any(|t| t.pattern.matches(uri).is_some())
    }
}

/// What binds a `requestState` to its request: the method, the name or URI, and the arguments.
struct Binding {
    method: &'static str,
    target: String,
    arguments: Value,
}

impl Binding {
    fn digest(&self) -> String {
        state::binding(self.method, &self.target, &self.arguments)
    }
}

/// A typed result of the modern schema: it always has `resultType`, and `_meta` for `serverInfo`.
pub(crate) trait WireResult: serde::Serialize {
    fn meta(&mut self) -> &mut Option<mcp_types::ResultMetaObject>;
}

macro_rules! wire_results {
    ($($result:ty),* $(,)?) => {$(
        impl WireResult for $result {
            fn meta(&mut self) -> &mut Option<mcp_types::ResultMetaObject> {
                &mut self.meta
            }
        }
    )*};
}

wire_results!(
    mcp_types::CallToolResult,
    ReadResourceResult,
    mcp_types::GetPromptResult,
    CompleteResult,
    InputRequiredResult,
    DiscoverResult,
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListPromptsResult,
    CreateTaskResult,
    GetTaskResult,
    TaskAck,
    ListSkillsResult,
    GetSkillResult,
    ReadResourceDirectoryResult,
);

/// Whether an error about `message` answers it as a request (with its id): it has a `method`,
/// or `params` and neither `result` nor `error`.
fn is_request_like(message: &serde_json::Map<String, Value>) -> bool {
    message.contains_key("method")
        || (message.contains_key("params") && !message.contains_key("result") && !message.contains_key("error"))
}

/// The refusal of a request beyond [`Options::max_in_flight`].
pub(crate) fn busy(limit: usize) -> ErrorObject {
    ErrorObject::internal_error(format!(
        "Server busy: {limit} requests are already in flight on this session (Options::max_in_flight); \
         retry when one of them has finished"
    ))
}

fn invalid(id: Option<&RequestId>, message: &str) -> Reply {
    Reply::ready(Outgoing::error_as(id, &ErrorObject::invalid_request(message), Disposition::BadRequest))
}

fn missing_meta(has_meta: bool, key: &str) -> Rejection {
    let message = match has_meta {
        false => "Invalid params: params._meta is required (with protocolVersion and clientCapabilities)".to_owned(),
        true => format!("Invalid params: params._meta is missing `{key}`"),
    };
    bad_request(error_codes::INVALID_PARAMS, message)
}

/// A modern request as its checks see it, whichever way it was decoded.
pub(crate) struct ModernView<'a> {
    pub(crate) method: &'a str,
    /// `params._meta`, if present.
    pub(crate) meta: Option<MetaView<'a>>,
    /// The member `Mcp-Name` mirrors (`name`, `uri`, `taskId`), when a string.
    pub(crate) name: Option<&'a str>,
}

pub(crate) struct MetaView<'a> {
    /// `protocolVersion`, when a string.
    pub(crate) version: Option<&'a str>,
    /// Whether `clientCapabilities` is present.
    pub(crate) capabilities: bool,
}

/// The refusal of a request whose params the generated `ClientRequest` did not accept: the
/// union's error without its own prefix (`` `ClientRequest` `tools/call`: at `params.name` ``), so
/// that it reads as the params type's (`` at `name` ``).
fn params_refused(method: &str, error: &serde_json::Error) -> Rejection {
    let text = error.to_string();
    let inner = text
        .strip_prefix("`ClientRequest` `")
        .and_then(|rest| rest.strip_prefix(method))
        .and_then(|rest| rest.strip_prefix("`: "))
        .map(|rest| match (rest.strip_prefix("at `params`: "), rest.strip_prefix("at `params.")) {
            (Some(inner), _) => inner.to_owned(),
            (None, Some(inner)) => format!("at `{inner}"),
            (None, None) => rest.to_owned(),
        })
        .unwrap_or(text);
    Rejection(ErrorObject::invalid_params(format!("Invalid params for {method}: {inner}")), Disposition::Ok)
}

/// Decodes params into the typed form a method defines; the refusal names the method.
fn typed<T: DeserializeOwned>(method: &str, params: Value) -> Result<T, Rejection> {
    serde_json::from_value(params).map_err(|e| {
        Rejection(ErrorObject::invalid_params(format!("Invalid params for {method}: {e}")), Disposition::Ok)
    })
}

/// The refusal of a method this server does not serve (on the modern wire: a 404).
pub(crate) fn unknown(method: &str) -> Rejection {
    let error = if REMOVED_METHODS.contains(&method) {
        ErrorObject::new(
            error_codes::METHOD_NOT_FOUND,
            format!("Method not found: {method} was removed in 2026-07-28 (no handshake; send _meta on every request)"),
        )
    } else {
        ErrorObject::method_not_found(method)
    };
    Rejection(error, Disposition::NotFound)
}

pub(crate) fn call_meta(call: &Decoded) -> RequestMetaObject {
    match call {
        Decoded::CallTool(p) => p.meta.clone(),
        Decoded::Read(p) => p.meta.clone(),
        Decoded::GetPrompt(p) => p.meta.clone(),
        Decoded::Complete(p) => p.meta.clone(),
        Decoded::Listen(p) => p.meta.clone(),
        Decoded::Task(_, meta) => meta.clone(),
        // Served without handlers, so nothing reads their `_meta`.
        Decoded::Discover
        | Decoded::Health
        | Decoded::ListTools(_)
        | Decoded::ListResources(_)
        | Decoded::ListTemplates(_)
        | Decoded::ListPrompts(_)
        | Decoded::ListSkills(_)
        | Decoded::GetSkill(_)
        | Decoded::ReadDirectory(_) => RequestMetaObject::default(),
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("protocol types encode to JSON")
}

fn non_empty(
    contents: Vec<mcp_types::ReadResourceResultContentsItem>,
    uri: &str,
) -> Result<Vec<mcp_types::ReadResourceResultContentsItem>, Error> {
    // An empty `contents` must not stand for a missing resource.
    if contents.is_empty() { Err(Error::resource_not_found(uri)) } else { Ok(contents) }
}

/// The part of `required` that `declared` lacks, if any.
fn missing_capabilities(required: &ClientCapabilities, declared: &ClientCapabilities) -> Option<ClientCapabilities> {
    let mut missing = ClientCapabilities::default();
    if required.sampling.is_some() && declared.sampling.is_none() {
        missing.sampling = required.sampling.clone();
    }
    if required.elicitation.is_some() && declared.elicitation.is_none() {
        missing.elicitation = required.elicitation.clone();
    }
    if required.roots.is_some() && declared.roots.is_none() {
        missing.roots = required.roots.clone();
    }
    for (name, settings) in required.extensions.iter().flatten() {
        if !declared.extensions.as_ref().is_some_and(|e| e.contains_key(name)) {
            missing.extensions.get_or_insert_with(Default::default).insert(name.clone(), settings.clone());
        }
    }
    (missing != ClientCapabilities::default()).then_some(missing)
}
