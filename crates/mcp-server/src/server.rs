//! The protocol core: one entry point, [`Server::handle`], that turns an incoming JSON-RPC message
//! into the messages to send back. It knows both protocol eras and nothing of transports.

use std::any::Any;
use std::borrow::Cow;
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

use crate::app_state::AppState;
use crate::bus::{Change, ChangeBus, InMemoryChangeBus};
use crate::context::{Context, Inner as ContextInner, Served};
use crate::error::missing_capability;
use crate::headers::{self, Mirrors};
use crate::message::{Disposition, Outgoing, Reply};
use crate::middleware::{self, McpCall, McpRequest, McpResponse};
use crate::routes::{
    BoxFuture, CompletionFn, PromptRoute, ResourceRoute, ResourceTemplateRoute, Scopes, TaskSupport, ToolRoute,
    error_result,
};
use crate::session::{InMemorySessionStore, Session, SessionStore};
use crate::skills::{SkillInner, SkillRoute};
use crate::state::{self, InMemoryUsedStates, Sealed, StateKey, StateKeyring, StateUse, UseVerdict, UsedStateStore};
use crate::tasks::{InMemoryTaskStore, RawUpdateParams, TaskRequest, TaskStore};
use crate::telemetry::{Operation, RequestLabels};
use crate::validation::ArgumentValidator;
use crate::{era::Era, error::Error, principal::Principal};
use typed::{Source, Typed};

mod binding;
mod builder;
mod caller_meta;
mod decoded;
mod handshake;
mod lane;
mod legacy_wire;
mod listen;
mod lists;
mod options;
mod raw_results;
mod refusals;
mod relay;
mod results;
mod run;
mod skill_requests;
mod task_requests;
mod typed;
mod versions;
mod visibility;
mod walk;
pub use builder::{BuildError, ServerBuilder};
use caller_meta::CallerMeta;
use decoded::call_meta;
use mcp_types::ext::skills::{
    DIRECTORY_MIME_TYPE, GetSkillRequestParams, GetSkillResult, ListSkillsRequestParams, ListSkillsResult,
    ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, SkillsSettings,
};
use mcp_types::ext::tasks::{
    CancelTaskResult, CreateTaskResult, GetTaskRequestParams, GetTaskResult, TaskSubscriptionNotifications,
    UpdateTaskResult,
};
use mcp_types::ext::{self, APPS, SKILLS, TASKS};
use mcp_types::http_headers::{HeaderParam, header_params, name_member};
pub use options::{CacheHints, Options};
pub(crate) use refusals::*;
pub(crate) use versions::settled_version;
pub use versions::{LEGACY_VERSIONS, MODERN_VERSIONS};

pub(crate) const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// Methods that 2026-07-28 removed; on the modern wire they are unknown methods.
const REMOVED_METHODS: &[&str] =
    &["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"];

struct ToolEntry {
    route: ToolRoute,
    validator: ArgumentValidator,
    headers: Arc<[HeaderParam]>,
}

/// Routes by name or URI. Built once and only read after, so a fast hash is safe: a caller
/// choosing the keys it asks for cannot make the table degrade.
type RouteIndex = HashMap<String, usize, foldhash::fast::RandomState>;

struct ServerInner {
    info: Implementation,
    /// `info` as JSON, encoded once: the `serverInfo` of every modern result's `_meta`.
    info_json: String,
    instructions: Option<String>,
    capabilities: ServerCapabilities,
    tools: Vec<ToolEntry>,
    tool_index: RouteIndex,
    /// Tools listed after the routes, called for names no route has.
    tool_source: Option<Arc<dyn crate::dynamic::ToolSource>>,
    resources: Vec<ResourceRoute>,
    resource_index: RouteIndex,
    templates: Vec<ResourceTemplateRoute>,
    prompts: Vec<PromptRoute>,
    prompt_index: RouteIndex,
    /// Prompts listed after the routes, asked for names no route has.
    prompt_source: Option<Arc<dyn crate::dynamic::PromptSource>>,
    /// Resources and templates listed after the routes, asked for URIs no route serves.
    resource_source: Option<Arc<dyn crate::dynamic::ResourceSource>>,
    completion: Option<CompletionFn>,
    options: Options,
    keyring: StateKeyring,
    /// Used single-use states (with `Options::state_single_use`).
    used_states: Arc<dyn UsedStateStore>,
    changes: Arc<dyn ChangeBus>,
    has_tasks: bool,
    running_tasks: Arc<crate::tasks::RunningTasks>,
    /// Every scope some tool, resource, template or prompt needs of its own (sorted).
    route_scopes: crate::routes::Scopes,
    task_store: Arc<dyn TaskStore>,
    session_store: Arc<dyn SessionStore>,
    skills: Vec<SkillRoute>,
    skill_index: RouteIndex,
    skill_source: Option<Arc<dyn crate::dynamic::SkillSource>>,
    /// `resources/directory/read` lists the directories of the source's skills too.
    source_directories: bool,
    /// The directory resources of the skills' files, with their direct children.
    directories: HashMap<String, Vec<mcp_types::Resource>>,
    app_state: AppState,
    /// The server's middleware around the requests that reach the application, if any.
    layer: Option<crate::middleware::McpService>,
    /// Some tool, resource, template or prompt has middleware of its own.
    has_route_layers: bool,
}

/// A decoded client request, the same for both eras.
pub(crate) enum Decoded {
    Discover,
    Health,
    ListTools(Listing),
    ListResources(Listing),
    ListTemplates(Listing),
    ListPrompts(Listing),
    /// A tool call; its arguments are still the request's text when the lane read it
    /// (`server::lane`), and `params.arguments` is then `None` until [`arguments_read`] reads them.
    CallTool(CallToolRequestParams, Option<Box<serde_json::value::RawValue>>),
    Read(ReadResourceRequestParams),
    GetPrompt(GetPromptRequestParams),
    Complete(CompleteRequestParams),
    Listen(SubscriptionsListenRequestParams),
    Task(TaskRequest, RequestMetaObject),
    ListSkills(Option<String>),
    GetSkill(String),
    ReadDirectory(ReadResourceDirectoryRequestParams),
}

/// A list request's cursor and `_meta` (the caller's trace context, capabilities).
pub(crate) struct Listing {
    pub(crate) cursor: Option<String>,
    pub(crate) meta: RequestMetaObject,
}

/// An MCP server: cheap to clone, shared by every connection and transport.
#[derive(Clone)]
pub struct Server {
    inner: Arc<ServerInner>,
}

impl Served for Server {
    fn app_state(&self) -> &AppState {
        &self.inner.app_state
    }

    fn client_request_timeout(&self) -> Duration {
        self.inner.options.client_request_timeout
    }
}

impl Context {
    /// The server serving this request (to announce list changes, for instance).
    pub fn server(&self) -> &Server {
        let served: &dyn Any = self.served();
        served.downcast_ref().expect("every context is made by a `Server`")
    }
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
    ///
    /// A message with more objects and arrays than [`Options::max_json_containers`] is refused
    /// before any of it is decoded.
    ///
    /// A handler that does not answer at once goes on as the returned [`Reply`] is polled: read
    /// the reply to its end, here or on a task of its own; dropping it cancels the request.
    pub fn handle_bytes(&self, session: &Arc<Session>, bytes: &[u8], mirrors: Option<&Mirrors>) -> Option<Reply> {
        match self.refusal_before_decode(bytes) {
            Some(refusal) => Some(refusal),
            None => self.handle_measured_bytes(session, bytes, mirrors),
        }
    }

    /// [`Server::handle_bytes`] for bytes [`Server::refusal_before_decode`] already let through
    /// (the HTTP transport measures a body before it peeks into it).
    pub(crate) fn handle_measured_bytes(
        &self,
        session: &Arc<Session>,
        bytes: &[u8],
        mirrors: Option<&Mirrors>,
    ) -> Option<Reply> {
        // Checked as UTF-8 once, whole, rather than string by string as `from_slice` would; text
        // that is not UTF-8 goes to the `Value` walk, which words the error.
        match std::str::from_utf8(bytes) {
            Ok(text) => self.handle_measured_text(session, text, mirrors),
            Err(_) => self.walk_bytes(session, bytes, mirrors),
        }
    }

    /// [`Server::handle_measured_bytes`] for a message already read as text (a stdio line).
    pub(crate) fn handle_measured_text(
        &self,
        session: &Arc<Session>,
        text: &str,
        mirrors: Option<&Mirrors>,
    ) -> Option<Reply> {
        if !text.trim_ascii_start().starts_with('[')
            && let Typed::Done(reply) = self.typed(session, Source::Text(text), mirrors)
        {
            return reply;
        }
        self.walk_bytes(session, text.as_bytes(), mirrors)
    }

    /// The refusal of a message its text alone condemns, before anything is built from it: a
    /// batch longer than [`Options::max_batch_len`], a message with more objects and arrays
    /// than [`Options::max_json_containers`].
    pub(crate) fn refusal_before_decode(&self, bytes: &[u8]) -> Option<Reply> {
        // A batch is counted first: an oversized one costs no more than its text.
        if bytes.trim_ascii_start().starts_with(b"[")
            && let Ok(elements) = serde_json::from_slice::<Vec<&serde_json::value::RawValue>>(bytes)
            && elements.len() > self.inner.options.max_batch_len
        {
            return Some(self.oversized_batch(elements.len()));
        }
        crate::wide::too_wide(bytes, self.inner.options.max_json_containers)
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

    /// The checks of a modern request that come before its params are read, in the order the
    /// spec's errors are given: the protocol version (header and `_meta`), the mirrored
    /// `Mcp-Method`, the required `_meta` members, the mirrored `Mcp-Name`. Returns the version.
    pub(crate) fn check_modern(
        &self,
        view: &ModernView<'_>,
        mirrors: Option<&Mirrors>,
    ) -> Result<&'static str, Rejection> {
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
        let Some(version) = MODERN_VERSIONS.iter().copied().find(|known| *known == version) else {
            let supported: Vec<&str> = MODERN_VERSIONS.iter().chain(LEGACY_VERSIONS).copied().collect();
            let error = ErrorObject::new(
                error_codes::UNSUPPORTED_PROTOCOL_VERSION,
                format!("Unsupported protocol version {version}; supported: {}", supported.join(", ")),
            )
            .with_data(json!({ "supported": supported, "requested": version }));
            return Err(Rejection(error, Disposition::BadRequest));
        };
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
        version: Cow<'static, str>,
        call: Decoded,
        meta: Option<CallerMeta>,
        mirrors: Option<&Mirrors>,
    ) -> Result<Reply, Rejection> {
        if let (Decoded::CallTool(params, text), Some(mirrors)) = (&call, mirrors)
            && let Some(expected) = self.mirrored_params(&params.name, session)
        {
            let arguments = match text {
                Some(text) => decoded::arguments_from_text(text).map(Value::Object).unwrap_or_default(),
                None => params.arguments.clone().map(Value::Object).unwrap_or_default(),
            };
            headers::check_params(mirrors, &expected, &arguments)
                .map_err(|e| bad_request(error_codes::HEADER_MISMATCH, e))?;
        }
        Ok(self.dispatch(session, id.clone(), Era::Modern, version, call, meta))
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
                // tasks/cancel's params are the same object as tasks/get's.
                let mut params: GetTaskRequestParams = typed(method, params)?;
                let meta = task_request_meta(method, &mut params.extra)?;
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
            "skills/list" if self.has_skills() => {
                Decoded::ListSkills(typed::<ListSkillsRequestParams>(method, params)?.cursor)
            }
            "skills/get" if self.has_skills() => Decoded::GetSkill(typed::<GetSkillRequestParams>(method, params)?.uri),
            "resources/directory/read" if !self.inner.directories.is_empty() || self.inner.source_directories => {
                Decoded::ReadDirectory(typed(method, params)?)
            }
            _ => return Err(unknown(method)),
        })
    }

    // ---------------------------------------------------------------- serving, both eras

    /// A request's `_meta`, for its handler's context: `read`, where the lane read it apart from
    /// the params. A tool call's is moved out of its params when nothing else sees them (a route of
    /// its own with no middleware, which is given only the arguments); any other is copied, as
    /// layers, route middleware and sources get the params whole (and a call the lane read gets
    /// its `_meta` put back into them).
    fn request_meta(&self, call: &mut Decoded, version: &str, read: Option<CallerMeta>) -> CallerMeta {
        match (call, read) {
            (Decoded::CallTool(params, _), Some(meta)) => {
                if !self.handler_sees_only_arguments(&params.name) {
                    params.meta = meta.to_object(version);
                }
                meta
            }
            (Decoded::CallTool(params, _), None) if self.handler_sees_only_arguments(&params.name) => {
                CallerMeta::from(std::mem::take(&mut params.meta))
            }
            (call, _) => CallerMeta::from(call_meta(call)),
        }
    }

    fn dispatch(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        era: Era,
        version: Cow<'static, str>,
        mut call: Decoded,
        read: Option<CallerMeta>,
    ) -> Reply {
        let meta = self.request_meta(&mut call, &version, read);
        let labels = RequestLabels {
            method: call.method(),
            id: &id,
            version: &version,
            target: self.target_label(&call, session.principal()),
            meta: Some(&meta.extra),
            transport: session.transport(),
            session_id: session.http_id().filter(|_| era == Era::Legacy),
        };
        let mut operation = Some(Operation::start(&labels));
        let span = operation.as_ref().map(|op| op.span().clone()).unwrap_or_else(tracing::Span::none);
        let reply = if span.is_disabled() {
            self.serve_decoded(session, id, era, version, meta, call, &mut operation)
        } else {
            span.in_scope(|| self.serve_decoded(session, id, era, version, meta, call, &mut operation))
        };
        // Not handed to a handler's task: answered here.
        if let Some(operation) = operation {
            operation.finish(reply.known_response());
        }
        reply
    }

    #[allow(clippy::too_many_arguments)]
    fn serve_decoded(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        era: Era,
        version: Cow<'static, str>,
        meta: CallerMeta,
        call: Decoded,
        operation: &mut Option<Operation>,
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
            // With middleware, the lists run through it like the handlers (on the handlers' path).
            Decoded::ListTools(_) | Decoded::ListResources(_) | Decoded::ListTemplates(_) | Decoded::ListPrompts(_)
                if self.inner.layer.is_some() =>
            {
                self.spawn(session, id, era, version, meta, call, operation.take())
            }
            Decoded::ListTools(listing) => listed(
                self.list_tools(|| session.request_principal(), listing.cursor).map(|r| self.respond(&id, era, r)),
            ),
            Decoded::ListResources(listing) => listed(
                self.list_resources(|| session.request_principal(), listing.cursor).map(|r| self.respond(&id, era, r)),
            ),
            Decoded::ListTemplates(listing) => listed(
                self.list_templates(|| session.request_principal(), listing.cursor).map(|r| self.respond(&id, era, r)),
            ),
            Decoded::ListPrompts(listing) => listed(
                self.list_prompts(|| session.request_principal(), listing.cursor).map(|r| self.respond(&id, era, r)),
            ),
            Decoded::Listen(params) => self.listen(session, id, params),
            Decoded::ListSkills(cursor) => {
                listed(self.skills_page(cursor, || session.request_principal()).map(|(skills, next)| {
                    let mut result = ListSkillsResult::new(skills, list.ttl_ms, self.skills_scope());
                    result.next_cursor = next;
                    self.respond(&id, era, result)
                }))
            }
            Decoded::GetSkill(uri) => match self.skill(&uri, || session.request_principal()) {
                Some(entry) => {
                    Reply::ready(self.respond(&id, era, GetSkillResult::new(entry, list.ttl_ms, self.skills_scope())))
                }
                None => {
                    let error = ErrorObject::invalid_params(format!("No skill is served at {uri}"))
                        .with_data(json!({ "uri": uri }));
                    Reply::ready(Outgoing::error(Some(&id), &error))
                }
            },
            Decoded::ReadDirectory(params) => {
                listed(self.read_directory(params, || session.request_principal()).and_then(|(children, cursor)| {
                    self.page(cursor, &children, Clone::clone).map(|(resources, next)| {
                        let mut result = ReadResourceDirectoryResult::new(resources);
                        result.next_cursor = next;
                        self.respond(&id, era, result)
                    })
                }))
            }
            Decoded::Task(request, meta) => {
                if !ext::declares(&meta.client_capabilities, TASKS) {
                    let error = missing_capability(&ext::client_capabilities(TASKS));
                    return Reply::ready(Outgoing::error_as(Some(&id), &error, Disposition::BadRequest));
                }
                let server = self.clone();
                let principal = session.principal().clone();
                let request_id = id.clone();
                // A tasks/* request sends no messages of its own: its reply is its response.
                let (_, rx) = crate::message::sink();
                let running = async move { server.task_request(&principal, &request_id, request).await };
                self.drive(session, id, rx, None, Box::pin(running), operation.take())
            }
            call => self.spawn(session, id, era, version, meta, call, operation.take()),
        }
    }

    /// Whether any tool, resource, template or prompt declares OAuth scopes of its own (when
    /// none does, an authorization layer need not read the body for [`Server::scopes_for`]).
    pub fn has_route_scopes(&self) -> bool {
        !self.inner.route_scopes.0.is_empty()
    }

    /// Every scope some tool, resource, template or prompt needs of its own, sorted: a
    /// resource server lists them in its metadata's `scopes_supported`, so that a client can
    /// register for the scopes it will be asked to step up to.
    pub fn route_scopes(&self) -> &[String] {
        &self.inner.route_scopes.0
    }

    pub(crate) fn running_tasks(&self) -> &Arc<crate::tasks::RunningTasks> {
        &self.inner.running_tasks
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

    /// Whether a call of `name` reaches no layer and no middleware, only a route's handler, which
    /// is given the arguments and never the params.
    fn handler_sees_only_arguments(&self, name: &str) -> bool {
        self.inner.layer.is_none() && self.tool(name).is_some_and(|entry| entry.route.service.is_none())
    }

    fn has_tools(&self) -> bool {
        !self.inner.tools.is_empty() || self.inner.tool_source.is_some()
    }

    fn has_resources(&self) -> bool {
        !self.inner.resources.is_empty() || !self.inner.templates.is_empty() || self.inner.resource_source.is_some()
    }

    fn has_prompts(&self) -> bool {
        !self.inner.prompts.is_empty() || self.inner.prompt_source.is_some()
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
