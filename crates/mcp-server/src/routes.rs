//! Tools, resources, resource templates, prompts and completions, each a plain async function.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcp_types::ext::apps::McpUiToolVisibility;
use mcp_types::{
    CallToolResult, ClientCapabilities, CompleteRequestParams, CompleteResultCompletion, ContentBlock, GetPromptResult,
    JsonObject, ObjectSchema, Prompt, PromptArgument, PromptMessage, ReadResourceResultContentsItem, Resource,
    ResourceTemplate, Role, TextContent, TextResourceContents, Tool, ToolAnnotations,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::middleware::{self, McpCall, McpLayer, McpResponse, McpService};
use crate::{context::Context, error::Error};

mod prompts;
#[cfg(test)]
use prompts::prompt_arguments;
pub use prompts::{IntoPromptResult, PromptRoute};

pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type ToolFn = Arc<dyn Fn(Context, ToolArguments<'_>) -> BoxFuture<Result<CallToolResult, Error>> + Send + Sync>;

/// A call's arguments for a tool route's handler: given to it, or lent while its future is made
/// when the server needs them afterwards (a modern call's `requestState` binding, made only if
/// the handler asks for input), or lent as the request's text (an object the exact decode would
/// read as serde_json does: see `server::lane`). A typed handler decodes any of them without a
/// copy of the object.
pub(crate) enum ToolArguments<'a> {
    Given(Value),
    Lent(&'a Value),
    Text(&'a str),
}
type ReadFn =
    Arc<dyn Fn(Context, String) -> BoxFuture<Result<Vec<ReadResourceResultContentsItem>, Error>> + Send + Sync>;
type TemplateFn = Arc<
    dyn Fn(Context, String, BTreeMap<String, String>) -> BoxFuture<Result<Vec<ReadResourceResultContentsItem>, Error>>
        + Send
        + Sync,
>;
type PromptFn =
    Arc<dyn Fn(Context, BTreeMap<String, String>) -> BoxFuture<Result<GetPromptResult, Error>> + Send + Sync>;
pub(crate) type CompletionFn =
    Arc<dyn Fn(Context, CompleteRequestParams) -> BoxFuture<Result<CompleteResultCompletion, Error>> + Send + Sync>;

/// The OAuth scopes a route needs (usually none: a small list, searched linearly).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Scopes(pub(crate) Arc<[String]>);

impl Scopes {
    /// The first name that is not an RFC 6749 scope-token: a challenge could not carry it.
    pub(crate) fn invalid(&self) -> Option<&str> {
        self.0.iter().map(String::as_str).find(|scope| !is_scope_token(scope))
    }
}

/// Whether `scope` is an RFC 6749 scope-token (`1*( %x21 / %x23-5B / %x5D-7E )`): no space, quote,
/// backslash or control character, which a `WWW-Authenticate` challenge could not carry.
pub fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty() && scope.bytes().all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
}

impl<S: Into<String>> FromIterator<S> for Scopes {
    fn from_iter<I: IntoIterator<Item = S>>(scopes: I) -> Self {
        let mut scopes: Vec<String> = scopes.into_iter().map(Into::into).collect();
        scopes.sort();
        scopes.dedup();
        Scopes(scopes.into())
    }
}

/// What a tool handler may return: anything that becomes a `CallToolResult`.
pub trait IntoToolResult {
    /// The result to answer `tools/call` with.
    fn into_tool_result(self) -> CallToolResult;

    /// The tool's `outputSchema`, when the result type fixes one ([`Structured<T>`] does);
    /// [`ToolRoute::new`] declares it.
    fn output_schema() -> Option<mcp_types::JsonSchema>
    where
        Self: Sized,
    {
        None
    }
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> CallToolResult {
        self
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> CallToolResult {
        text_result(self)
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> CallToolResult {
        text_result(self)
    }
}

impl IntoToolResult for Vec<ContentBlock> {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::new(self)
    }
}

/// A tool result with `structuredContent` (and, as the spec recommends, the same JSON as text).
/// A tool whose handler returns it declares `outputSchema` from `T` by itself.
#[derive(Debug, Clone)]
pub struct Structured<T>(pub T);

impl<T: Serialize + schemars::JsonSchema> IntoToolResult for Structured<T> {
    fn output_schema() -> Option<mcp_types::JsonSchema> {
        Some(mcp_types::JsonSchema::for_type::<T>())
    }

    fn into_tool_result(self) -> CallToolResult {
        match serde_json::to_value(&self.0) {
            Ok(value) => {
                let mut result = text_result(value.to_string());
                result.structured_content = Some(value);
                result
            }
            Err(error) => error_result(format!("the tool's output could not be encoded: {error}")),
        }
    }
}

/// A result with one text block.
pub fn text_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::new(vec![ContentBlock::Text(TextContent::new(text))])
}

/// A result with `isError: true` and one text block, for failures the model should see.
pub fn error_result(text: impl Into<String>) -> CallToolResult {
    let mut result = text_result(text);
    result.is_error = Some(true);
    result
}

/// Arguments of a tool or prompt that takes none. A tool's `inputSchema` is exactly
/// `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false}`;
/// a prompt declares no arguments.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

/// Whether a tool's calls may run as tasks (the tasks extension, `io.modelcontextprotocol/tasks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskSupport {
    /// Calls are always answered directly (the default).
    #[default]
    Forbidden,
    /// A call from a client that declared the extension becomes a task when its handler waits;
    /// other clients get the result directly.
    Optional,
    /// As `Optional`, and a call that did not declare the extension is refused (`-32021`
    /// naming the extension) before the handler runs.
    Required,
}

/// A tool: its definition, its handler, and the client capabilities a call needs.
pub struct ToolRoute {
    pub(crate) tool: Tool,
    pub(crate) handler: ToolFn,
    pub(crate) requires: Option<ClientCapabilities>,
    pub(crate) schema_error: Option<String>,
    pub(crate) task_support: TaskSupport,
    pub(crate) scopes: Scopes,
    /// The handler inside the route's own layers, when it has any.
    pub(crate) service: Option<McpService>,
}

impl ToolRoute {
    /// A tool whose arguments decode into `A`; `inputSchema` is derived from `A` with schemars
    /// (JSON Schema 2020-12). Arguments that do not decode into `A` get a tool error saying why
    /// (`Invalid arguments for tool add: missing field `b``); with the `validation` feature they
    /// are first checked against the whole schema (constraints such as `minimum` included).
    pub fn new<A, F, Fut, R>(name: impl Into<String>, handler: F) -> Self
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        F: Fn(Context, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, Error>> + Send + 'static,
        R: IntoToolResult,
    {
        let (input_schema, schema_error) = match ObjectSchema::for_type::<A>() {
            Ok(schema) => (schema, None),
            Err(error) => (ObjectSchema::default(), Some(error.to_string())),
        };
        let name: Arc<str> = name.into().into();
        let handler = Arc::new(handler);
        let tool_name = Arc::clone(&name);
        let handler: ToolFn = Arc::new(move |ctx, arguments| {
            let decoded = match arguments {
                ToolArguments::Given(arguments) => serde_json::from_value(arguments),
                ToolArguments::Lent(arguments) => A::deserialize(arguments),
                // Straight from the text; what that refuses is decoded again as the object the
                // other ways build (a member given twice is then the last one), and refused, if
                // it is, in the same words.
                ToolArguments::Text(text) => serde_json::from_str(text).or_else(|_| {
                    let object: Value = serde_json::from_str(text).unwrap_or_default();
                    A::deserialize(&object)
                }),
            };
            let arguments: A = match decoded {
                Ok(arguments) => arguments,
                Err(error) => {
                    let result = error_result(format!("Invalid arguments for tool {tool_name}: {error}"));
                    return Box::pin(std::future::ready(Ok(result)));
                }
            };
            let handler = Arc::clone(&handler);
            Box::pin(async move { handler(ctx, arguments).await.map(IntoToolResult::into_tool_result) })
        });
        let mut tool = Tool::new(input_schema, &*name);
        tool.output_schema = R::output_schema();
        ToolRoute {
            tool,
            handler,
            requires: None,
            schema_error,
            task_support: TaskSupport::Forbidden,
            scopes: Scopes::default(),
            service: None,
        }
    }

    /// A tool defined by hand (its `inputSchema` exactly as given) whose handler receives the
    /// arguments as a JSON object: checked against that schema first with the `validation`
    /// feature, as sent without it.
    pub fn raw<F, Fut, R>(tool: Tool, handler: F) -> Self
    where
        F: Fn(Context, JsonObject) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, Error>> + Send + 'static,
        R: IntoToolResult,
    {
        let handler = Arc::new(handler);
        let handler: ToolFn = Arc::new(move |ctx, arguments| {
            let arguments = match arguments {
                ToolArguments::Given(Value::Object(arguments)) => Some(arguments),
                ToolArguments::Lent(Value::Object(arguments)) => Some(arguments.clone()),
                ToolArguments::Text(text) => serde_json::from_str(text).ok(),
                _ => None,
            };
            let arguments = match arguments {
                Some(arguments) => arguments,
                None => return Box::pin(std::future::ready(Ok(error_result("Invalid arguments: expected an object")))),
            };
            let handler = Arc::clone(&handler);
            Box::pin(async move { handler(ctx, arguments).await.map(IntoToolResult::into_tool_result) })
        });
        let mut tool = tool;
        if tool.output_schema.is_none() {
            tool.output_schema = R::output_schema();
        }
        ToolRoute {
            tool,
            handler,
            requires: None,
            schema_error: None,
            task_support: TaskSupport::Forbidden,
            scopes: Scopes::default(),
            service: None,
        }
    }

    /// What the tool does, for the model (`description`).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.tool.description = Some(description.into());
        self
    }

    /// A name for people (`title`); clients show it instead of the tool's name.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.tool.title = Some(title.into());
        self
    }

    /// Hints about the tool's behaviour (read-only, destructive, idempotent, open world);
    /// clients must not rely on them for security.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.tool.annotations = Some(annotations);
        self
    }

    /// Declares `outputSchema` from `T`. A handler returning [`Structured<T>`] needs no call:
    /// this is for one that builds its `CallToolResult` (with `structuredContent`) by hand.
    pub fn structured<T: schemars::JsonSchema>(mut self) -> Self {
        self.tool.output_schema = Some(mcp_types::JsonSchema::for_type::<T>());
        self
    }

    /// Client capabilities every call needs; a call that does not declare them is refused
    /// before the handler runs (`-32021` on the 2026-07-28 wire).
    pub fn requires(mut self, capabilities: ClientCapabilities) -> Self {
        self.requires = Some(capabilities);
        self
    }

    /// Whether calls may run as tasks ([`TaskSupport`]; default `Forbidden`). A server with a
    /// task-capable tool declares the tasks extension in its capabilities. The handler is the
    /// same either way: see [`crate::tasks`] for when a call becomes a task.
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.task_support = support;
        self
    }

    /// OAuth scopes a call needs besides the server's own (an HTTP server with
    /// `HttpConfig::authorization`, feature `auth`): a token without every one of them gets
    /// [`Error::InsufficientScope`](crate::Error::InsufficientScope), a 403 `insufficient_scope`
    /// naming all that the call needs. Checked on the [`middleware`] seam before the server's
    /// own layers and the handler; not over stdio, which has no tokens.
    pub fn scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.scopes = Scopes::from_iter(scopes);
        self
    }

    /// Wraps this tool's handler in a tower layer ([`McpLayer`]), inside the server's own
    /// layers and after the call was checked (capabilities, arguments). Each call wraps the
    /// layers added before it. See [`crate::middleware`].
    pub fn layer(mut self, layer: impl McpLayer) -> Self {
        let handler = Arc::clone(&self.handler);
        self.service = Some(middleware::wrap(self.service.take(), layer, move || {
            middleware::service(move |request| {
                let handler = Arc::clone(&handler);
                async move {
                    let McpCall::CallTool(params) = request.call else {
                        return Err(middleware::mismatch("tools/call"));
                    };
                    let arguments = Value::Object(params.arguments.unwrap_or_default());
                    handler(request.ctx, ToolArguments::Given(arguments)).await.map(McpResponse::CallTool)
                }
            })
        }));
        self
    }

    /// Links the tool to an MCP App's interface: the `ui://` URI of a
    /// [`UiResource`](crate::apps::UiResource) registered on the same server
    /// (`_meta.ui.resourceUri`; [`ServerBuilder::build`](crate::ServerBuilder::build) refuses a
    /// URI no UI resource has).
    pub fn ui(mut self, resource_uri: impl Into<String>) -> Self {
        set_tool_ui(&mut self.tool.meta, "resourceUri", Value::String(resource_uri.into()));
        self
    }

    /// Who may call the tool (`_meta.ui.visibility`; hosts default to both): the model, the
    /// app (from its interface, through the host), or both. Hosts enforce it.
    pub fn ui_visibility(mut self, visibility: impl IntoIterator<Item = McpUiToolVisibility>) -> Self {
        let visibility: Vec<McpUiToolVisibility> = visibility.into_iter().collect();
        set_tool_ui(&mut self.tool.meta, "visibility", visibility_value(&visibility));
        self
    }

    /// The definition as listed by `tools/list`.
    pub fn tool(&self) -> &Tool {
        &self.tool
    }
}

/// What a resource handler may return: the contents of the URI read.
pub trait IntoResourceContents {
    /// The contents of `uri` (an empty list is answered as resource not found).
    fn into_contents(self, uri: &str) -> Vec<ReadResourceResultContentsItem>;
}

impl IntoResourceContents for Vec<ReadResourceResultContentsItem> {
    fn into_contents(self, _uri: &str) -> Vec<ReadResourceResultContentsItem> {
        self
    }
}

/// The text of `uri` (`text/plain`).
impl IntoResourceContents for String {
    fn into_contents(self, uri: &str) -> Vec<ReadResourceResultContentsItem> {
        let contents = TextResourceContents { uri: uri.to_owned(), text: self, ..Default::default() };
        vec![contents.with_mime_type("text/plain").into()]
    }
}

/// The resource does not exist (resource not found).
impl<T: IntoResourceContents> IntoResourceContents for Option<T> {
    fn into_contents(self, uri: &str) -> Vec<ReadResourceResultContentsItem> {
        self.map(|contents| contents.into_contents(uri)).unwrap_or_default()
    }
}

/// Adds `value` at `_meta.ui.<key>` of a tool's `_meta`.
fn set_tool_ui(meta: &mut Option<JsonObject>, key: &str, value: Value) {
    let ui = meta
        .get_or_insert_with(JsonObject::new)
        .entry(mcp_types::ext::apps::META_KEY)
        .or_insert_with(|| Value::Object(JsonObject::new()));
    if !ui.is_object() {
        *ui = Value::Object(JsonObject::new());
    }
    if let Value::Object(ui) = ui {
        ui.insert(key.to_owned(), value);
    }
}

/// The visibility list as the schema writes it.
fn visibility_value(visibility: &[McpUiToolVisibility]) -> Value {
    serde_json::to_value(visibility).unwrap_or(Value::Null)
}

/// A resource with a fixed URI.
pub struct ResourceRoute {
    pub(crate) resource: Resource,
    pub(crate) handler: ReadFn,
    pub(crate) scopes: Scopes,
    pub(crate) service: Option<McpService>,
}

impl ResourceRoute {
    /// `resource` as listed by `resources/list`; the handler receives the URI read and returns
    /// its contents ([`IntoResourceContents`]: a `String` is its text, `None` or an empty list
    /// is answered as resource not found).
    pub fn new<F, Fut, R>(resource: Resource, handler: F) -> Self
    where
        F: Fn(Context, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, Error>> + Send + 'static,
        R: IntoResourceContents,
    {
        let handler = Arc::new(handler);
        let handler: ReadFn = Arc::new(move |ctx, uri| {
            let handler = Arc::clone(&handler);
            Box::pin(async move {
                let contents = handler(ctx, uri.clone()).await?;
                Ok(contents.into_contents(&uri))
            })
        });
        ResourceRoute { resource, handler, scopes: Scopes::default(), service: None }
    }

    /// OAuth scopes reading (or subscribing to) the resource needs, as [`ToolRoute::scopes`].
    pub fn scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.scopes = Scopes::from_iter(scopes);
        self
    }

    /// Wraps this resource's handler in a tower layer, as [`ToolRoute::layer`].
    pub fn layer(mut self, layer: impl McpLayer) -> Self {
        let handler = Arc::clone(&self.handler);
        self.service = Some(middleware::wrap(self.service.take(), layer, move || {
            middleware::service(move |request| {
                let handler = Arc::clone(&handler);
                async move {
                    let McpCall::ReadResource(params) = request.call else {
                        return Err(middleware::mismatch("resources/read"));
                    };
                    handler(request.ctx, params.uri).await.map(McpResponse::ReadResource)
                }
            })
        }));
        self
    }
}

/// A family of resources whose URIs match an RFC 6570 template (`{name}` expressions).
pub struct ResourceTemplateRoute {
    pub(crate) template: ResourceTemplate,
    pub(crate) pattern: UriPattern,
    pub(crate) handler: TemplateFn,
    pub(crate) scopes: Scopes,
    pub(crate) service: Option<McpService>,
}

impl ResourceTemplateRoute {
    /// The handler receives the URI and the values of the template's variables, and returns the
    /// contents as for [`ResourceRoute::new`].
    pub fn new<F, Fut, R>(template: ResourceTemplate, handler: F) -> Self
    where
        F: Fn(Context, String, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, Error>> + Send + 'static,
        R: IntoResourceContents,
    {
        let pattern = UriPattern::parse(&template.uri_template);
        let handler = Arc::new(handler);
        let handler: TemplateFn = Arc::new(move |ctx, uri, vars| {
            let handler = Arc::clone(&handler);
            Box::pin(async move {
                let contents = handler(ctx, uri.clone(), vars).await?;
                Ok(contents.into_contents(&uri))
            })
        });
        ResourceTemplateRoute { template, pattern, handler, scopes: Scopes::default(), service: None }
    }

    /// OAuth scopes reading (or subscribing to) a resource of the template needs, as
    /// [`ToolRoute::scopes`].
    pub fn scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.scopes = Scopes::from_iter(scopes);
        self
    }

    /// Wraps this template's handler in a tower layer, as [`ToolRoute::layer`].
    pub fn layer(mut self, layer: impl McpLayer) -> Self {
        let handler = Arc::clone(&self.handler);
        let pattern = self.pattern.clone();
        self.service = Some(middleware::wrap(self.service.take(), layer, move || {
            middleware::service(move |request| {
                let handler = Arc::clone(&handler);
                let pattern = pattern.clone();
                async move {
                    let McpCall::ReadResource(params) = request.call else {
                        return Err(middleware::mismatch("resources/read"));
                    };
                    let Some(vars) = pattern.matches(&params.uri) else {
                        return Err(Error::resource_not_found(&params.uri));
                    };
                    handler(request.ctx, params.uri, vars).await.map(McpResponse::ReadResource)
                }
            })
        }));
        self
    }
}

/// A URI template of literal text and `{name}` expressions (RFC 6570 level 1); an expression
/// matches one or more characters other than `/`, `?` and `#`.
#[derive(Debug, Clone)]
pub(crate) struct UriPattern {
    parts: Vec<Part>,
}

#[derive(Debug, Clone)]
enum Part {
    Literal(String),
    Var(String),
}

impl UriPattern {
    /// Why `template` cannot serve as a resource template: an unclosed or stray brace, an empty
    /// expression, or no expression at all (a fixed URI is a resource, not a template).
    pub(crate) fn check(template: &str) -> Result<(), String> {
        let mut expressions = 0;
        let mut rest = template;
        loop {
            let open = rest.find('{');
            let close = rest.find('}');
            match (open, close) {
                (None, None) => break,
                (Some(open), Some(close)) if open < close => {
                    let expression = &rest[open + 1..close];
                    if expression.is_empty() {
                        return Err("has an empty expression `{}`".into());
                    }
                    if expression.contains('{') {
                        return Err(format!("has an unclosed `{{` before `{expression}`"));
                    }
                    expressions += 1;
                    rest = &rest[close + 1..];
                }
                (Some(_), None) => return Err("has an unclosed `{`".into()),
                (_, Some(_)) => return Err("has a `}` that closes no expression".into()),
            }
        }
        if expressions == 0 {
            return Err("has no `{variable}`: register a fixed URI as a resource".into());
        }
        Ok(())
    }

    pub(crate) fn parse(template: &str) -> Self {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}') else { break };
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            parts.push(Part::Var(rest[open + 1..open + close].to_owned()));
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        UriPattern { parts }
    }

    pub(crate) fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut vars = BTreeMap::new();
        let mut rest = uri;
        for (index, part) in self.parts.iter().enumerate() {
            match part {
                Part::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
                Part::Var(name) => {
                    let end = match self.parts.get(index + 1) {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || value.contains(['/', '?', '#']) {
                        return None;
                    }
                    vars.insert(name.clone(), value.to_owned());
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(vars)
    }
}

#[cfg(test)]
mod tests;
