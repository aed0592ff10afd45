//! Tools, prompts, resources and skills that change while the server runs: a proxy's upstream
//! ones, a plugin host's plugins. A [`ToolSource`] ([`PromptSource`], [`ResourceSource`],
//! [`SkillSource`]) is listed after
//! the server's own routes and asked for every name (URI) none of them serves;
//! [`Server::notify_tools_list_changed`](crate::Server::notify_tools_list_changed) and its siblings
//! tell clients when a list changes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcp_types::ext::skills::Skill;
use mcp_types::http_headers::HeaderParam;
use mcp_types::{
    CallToolRequestParams, CallToolResult, GetPromptRequestParams, GetPromptResult, Prompt, RawResult,
    ReadResourceResultContentsItem, Resource, ResourceTemplate, Tool,
};

use crate::{context::Context, error::Error, principal::Principal, routes::TaskSupport};

/// What [`ToolSource::call`] returns.
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<CallToolResult, Error>> + Send>>;

/// What [`ToolSource::answer`] returns.
pub type AnswerFuture = Pin<Box<dyn Future<Output = Result<ToolAnswer, Error>> + Send>>;

/// What [`ToolSource::relay`] returns.
pub type RelayFuture = Pin<Box<dyn Future<Output = Result<Relayed, Error>> + Send>>;

/// A 2026-07-28 `tools/call` as its caller sent it, for [`ToolSource::relay`]: read only as far as
/// the server's checks need (the envelope, the name, `_meta`), its arguments left as JSON text.
#[derive(Debug, Clone, Copy)]
pub struct RelayCall<'a> {
    /// Who calls, as [`Context::principal`] says for a call.
    pub principal: &'a Principal,
    /// The tool, as the caller named it.
    pub name: &'a str,
    /// The arguments' text (a JSON object), as the caller wrote it.
    pub arguments: Option<&'a serde_json::value::RawValue>,
    /// The capabilities the caller declared in this request's `_meta`, or its session's
    /// handshake (never the tasks extension: such a call is not relayed).
    pub client_capabilities: &'a mcp_types::ClientCapabilities,
}

/// What became of a relayed call.
#[derive(Debug)]
pub enum Relayed {
    /// The tool's result, written out as it is ([`ToolAnswer::Raw`]).
    Result(RawResult),
    /// Not relayed, and nothing run: the server serves the call the usual way
    /// ([`ToolSource::answer`]).
    Again,
}

/// A tool's result as a [`ToolSource`] has it.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolAnswer {
    /// Decoded, as [`ToolSource::call`] returns it.
    Decoded(CallToolResult),
    /// Its JSON text, as a proxy has its upstream's answer: the server writes the members out as
    /// they are spelled, without decoding them, except those it writes for the caller's era:
    /// `resultType` (added on the 2026-07-28 wire; left out on the legacy wire, with the caching
    /// hints) and the server identity in `_meta` (its own, never the source's).
    Raw(RawResult),
}

impl ToolAnswer {
    /// The result decoded (a raw one read now).
    pub fn decode(self) -> Result<CallToolResult, Error> {
        match self {
            ToolAnswer::Decoded(result) => Ok(result),
            ToolAnswer::Raw(raw) => {
                raw.decode().map_err(|e| Error::internal(format!("The tool's result is not a CallToolResult: {e}")))
            }
        }
    }
}

/// What [`PromptSource::get`] returns.
pub type PromptFuture = Pin<Box<dyn Future<Output = Result<GetPromptResult, Error>> + Send>>;

/// What [`ResourceSource::read`] returns: the contents of the resource.
pub type ReadFuture = Pin<Box<dyn Future<Output = Result<Vec<ReadResourceResultContentsItem>, Error>> + Send>>;

/// Tools the server does not know when it is built ([`ServerBuilder::tool_source`](crate::ServerBuilder::tool_source)).
///
/// The source checks its own arguments (the server has no schema of its own for them) and says
/// which of its calls may become tasks. A name that is also a route's goes to the route.
///
/// ```
/// use std::sync::Arc;
/// use mcp_server::dynamic::{ToolFuture, ToolSource};
/// use mcp_server::types::{CallToolRequestParams, ObjectSchema, Tool};
/// use mcp_server::{Context, Error, Principal, Server, text_result};
///
/// /// One tool per name in the list, each answering its own name.
/// struct Named(Vec<String>);
///
/// impl ToolSource for Named {
///     fn tools(&self, _caller: &Principal) -> Arc<[Tool]> {
///         self.0.iter().map(|name| Tool::new(ObjectSchema::default(), name)).collect()
///     }
///
///     fn call(&self, _ctx: Context, params: CallToolRequestParams) -> ToolFuture {
///         let known = self.0.contains(&params.name);
///         Box::pin(async move {
///             match known {
///                 true => Ok(text_result(params.name)),
///                 false => Err(Error::invalid_params(format!("Unknown tool: {}", params.name))),
///             }
///         })
///     }
/// }
///
/// let server = Server::builder("plugins", "1.0.0").tool_source(Arc::new(Named(vec!["a".into()]))).build().unwrap();
/// assert!(server.capabilities().tools.is_some());
/// ```
pub trait ToolSource: Send + Sync + 'static {
    /// The tools as they are now that `caller` may see, in the order they are listed (the
    /// source decides which; [`call`](Self::call) sees the caller as `ctx.principal()`).
    fn tools(&self, caller: &Principal) -> Arc<[Tool]>;

    /// Whether what [`tools`](Self::tools) lists may differ from one caller to another (default:
    /// yes). The server then marks its lists `cacheScope: "private"`; a source that lists the
    /// same to everyone says no, and the server's configured hint stands.
    fn lists_depend_on_caller(&self) -> bool {
        true
    }

    /// The `ttlMs` its lists may be cached for now, in milliseconds (default `None`: the
    /// server's [`Options::list_cache`](crate::Options::list_cache)). With routes of the same
    /// kind in the list, the shorter of the two is sent.
    fn list_ttl_ms(&self) -> Option<u64> {
        None
    }

    /// Calls the tool `params.name` (one no route of the server has). A name the source does not
    /// have is its to refuse, as `Error::invalid_params("Unknown tool: …")` does.
    fn call(&self, ctx: Context, params: CallToolRequestParams) -> ToolFuture;

    /// Calls the tool as [`call`](Self::call) does, for a call whose result the server writes out
    /// without reading it (it has no middleware, and the call cannot become a task). A source
    /// that holds the result as text, as a proxy holds its upstream's answer, may answer with
    /// [`ToolAnswer::Raw`]: it is neither decoded nor encoded again. Default: `call`'s result.
    fn answer(&self, ctx: Context, params: CallToolRequestParams) -> AnswerFuture {
        let call = self.call(ctx, params);
        Box::pin(async move { call.await.map(ToolAnswer::Decoded) })
    }

    /// Whether this source may [`relay`](Self::relay) calls (default: no). The server then reads
    /// a 2026-07-28 `tools/call` of one of its tools only as far as its checks need, and offers it
    /// to `relay` before it builds the call's context and decodes its arguments.
    fn relays(&self) -> bool {
        false
    }

    /// Passes a call on as it came, as a proxy does: the server offers it only a `tools/call`
    /// that it has checked as it checks every call (the envelope, `_meta`, the mirrored headers),
    /// of a tool none of its routes has, with no middleware, no progress token, no log level and
    /// no tasks extension, and no `inputResponses` or `requestState`. Whoever may call `name` is
    /// the source's to decide, as in [`answer`](Self::answer). The call has no context to ask
    /// its caller anything: a source whose upstream asks gives the call back.
    /// [`Relayed::Again`]: the server serves the call through [`answer`](Self::answer); a source
    /// says so only for a call nothing ran (an input round, by the protocol's design, is asked
    /// again when the call is sent again). Default: `Again`.
    fn relay(&self, _call: RelayCall<'_>) -> RelayFuture {
        Box::pin(std::future::ready(Ok(Relayed::Again)))
    }

    /// The definition of the tool `name` that `caller` may see (default: the one in
    /// [`tools`](Self::tools)); the default [`header_params`](Self::header_params) reads its
    /// annotations from it. A source with many tools may answer from an index.
    fn tool(&self, name: &str, caller: &Principal) -> Option<Tool> {
        self.tools(caller).iter().find(|tool| tool.name == name).cloned()
    }

    /// The `x-mcp-header` parameters of the tool `name` that `caller` may see, which a call's
    /// mirrored `Mcp-Param-*` headers are checked against, as a route's are (default: read from
    /// [`tool`](Self::tool)'s input schema on every call, by [`header_params_of`]). `None`: the
    /// tool has none (or annotations no client can mirror), or `caller` may not see it. A source
    /// with many tools may keep them in its index, made by [`header_params_of`] when it lists.
    fn header_params(&self, name: &str, caller: &Principal) -> Option<Arc<[HeaderParam]>> {
        header_params_of(&self.tool(name, caller)?)
    }

    /// Whether [`tools`](Self::tools) lists `name` for `caller` (default: looked up in that
    /// list). The server asks on every call (to label its telemetry); a source with many tools,
    /// or one that filters them per caller, may answer from an index without building the list.
    fn lists_tool(&self, name: &str, caller: &Principal) -> bool {
        self.tools(caller).iter().any(|tool| tool.name == name)
    }

    /// Whether a call of `tool` may run as a task, as
    /// [`ToolRoute::task_support`](crate::ToolRoute::task_support) says for a route (default
    /// `Forbidden`). See [`crate::tasks`] for when a call becomes one
    /// ([`Options::task_grace`](crate::Options::task_grace) lets short calls answer directly).
    fn task_support(&self, _tool: &str) -> TaskSupport {
        TaskSupport::Forbidden
    }

    /// Whether [`task_support`](Self::task_support) may allow tasks for some tool: the server then
    /// declares the tasks extension (default: no).
    fn offers_tasks(&self) -> bool {
        false
    }
}

/// The `x-mcp-header` parameters of `tool`'s input schema, for [`ToolSource::header_params`];
/// `None` when it has none, or annotations that are not valid (no client can mirror them).
pub fn header_params_of(tool: &Tool) -> Option<Arc<[HeaderParam]>> {
    // Parsing the schema is most of the cost: without a backslash nothing in the text is
    // escaped, so an annotation would appear as it is spelled.
    let text = tool.input_schema.as_json();
    if !text.contains('\\') && !text.contains(mcp_types::http_headers::ANNOTATION) {
        return None;
    }
    let headers = mcp_types::http_headers::header_params(&tool.input_schema.to_value()).ok()?;
    (!headers.is_empty()).then(|| headers.into())
}

/// Prompts the server does not know when it is built ([`ServerBuilder::prompt_source`](crate::ServerBuilder::prompt_source)),
/// as [`ToolSource`] is for tools: listed after the routes, asked for every name no route has;
/// the source checks the arguments itself.
pub trait PromptSource: Send + Sync + 'static {
    /// The prompts as they are now that `caller` may see, in the order they are listed.
    fn prompts(&self, caller: &Principal) -> Arc<[Prompt]>;

    /// Whether what [`prompts`](Self::prompts) lists may differ from one caller to another (default:
    /// yes). The server then marks its lists `cacheScope: "private"`; a source that lists the
    /// same to everyone says no, and the server's configured hint stands.
    fn lists_depend_on_caller(&self) -> bool {
        true
    }

    /// The `ttlMs` its lists may be cached for now, in milliseconds (default `None`: the
    /// server's [`Options::list_cache`](crate::Options::list_cache)). With routes of the same
    /// kind in the list, the shorter of the two is sent.
    fn list_ttl_ms(&self) -> Option<u64> {
        None
    }

    /// Gets the prompt `params.name` (one no route of the server has). A name the source does
    /// not have is its to refuse, as `Error::invalid_params("Unknown prompt: …")` does.
    fn get(&self, ctx: Context, params: GetPromptRequestParams) -> PromptFuture;

    /// Whether [`prompts`](Self::prompts) lists `name` for `caller` (default: looked up in that
    /// list), as [`ToolSource::lists_tool`] says for tools.
    fn lists_prompt(&self, name: &str, caller: &Principal) -> bool {
        self.prompts(caller).iter().any(|prompt| prompt.name == name)
    }
}

/// Resources and resource templates the server does not know when it is built
/// ([`ServerBuilder::resource_source`](crate::ServerBuilder::resource_source)): listed after the
/// routes, and asked to read every URI no resource or template route serves.
pub trait ResourceSource: Send + Sync + 'static {
    /// The resources as they are now that `caller` may see, in the order they are listed.
    fn resources(&self, caller: &Principal) -> Arc<[Resource]>;

    /// The resource templates as they are now that `caller` may see, in the order they are listed.
    fn templates(&self, caller: &Principal) -> Arc<[ResourceTemplate]>;

    /// Whether what [`resources`](Self::resources) lists may differ from one caller to another (default:
    /// yes). The server then marks its lists `cacheScope: "private"`; a source that lists the
    /// same to everyone says no, and the server's configured hint stands.
    fn lists_depend_on_caller(&self) -> bool {
        true
    }

    /// The `ttlMs` its lists may be cached for now, in milliseconds (default `None`: the
    /// server's [`Options::list_cache`](crate::Options::list_cache)). With routes of the same
    /// kind in the list, the shorter of the two is sent.
    fn list_ttl_ms(&self) -> Option<u64> {
        None
    }

    /// Reads `uri` (one no route serves). A URI the source does not serve is its to refuse, as
    /// `Error::resource_not_found(uri)` does.
    fn read(&self, ctx: Context, uri: String) -> ReadFuture;

    /// Whether the source serves `uri` to `caller` (for `resources/subscribe`): by default, when
    /// it lists a resource with that URI or a template whose text before its first `{` starts it.
    fn serves(&self, uri: &str, caller: &Principal) -> bool {
        self.resources(caller).iter().any(|r| r.uri == uri)
            || self
                .templates(caller)
                .iter()
                .any(|t| uri.starts_with(t.uri_template.split('{').next().unwrap_or_default()))
    }
}

/// Skills (the `io.modelcontextprotocol/skills` extension) the server does not know when it is
/// built ([`ServerBuilder::skill_source`](crate::ServerBuilder::skill_source)): listed by
/// `skills/list` after the [`SkillRoute`](crate::SkillRoute)s and found by `skills/get`. Their
/// files are resources: the server's [`ResourceSource`] reads them. With `directoryRead` on
/// (the default), `resources/directory/read` lists a directory of a skill from the files its
/// entry lists (a dynamic skill has no directories to list).
pub trait SkillSource: Send + Sync + 'static {
    /// The skills as they are now that `caller` may see, in the order they are listed.
    fn skills(&self, caller: &Principal) -> Arc<[Skill]>;

    /// Whether what [`skills`](Self::skills) lists may differ from one caller to another
    /// (default: yes), as [`ToolSource::lists_depend_on_caller`] says for tools.
    fn lists_depend_on_caller(&self) -> bool {
        true
    }
}
