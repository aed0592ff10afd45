//! Tower middleware around MCP requests: [`ServerBuilder::layer`](crate::ServerBuilder::layer)
//! wraps every request that reaches the application (tool calls, reads, prompts, completions and
//! the four lists), [`ToolRoute::layer`](crate::ToolRoute::layer) and its siblings wrap one
//! route's handler. A layer is any [`tower::Layer`] over an [`McpService`]: typed requests in
//! ([`McpRequest`]: method, typed params, [`Context`], principal), typed results out
//! ([`McpResponse`]), so tower's `timeout`, `concurrency_limit`, `load_shed` and a user's own
//! layers work unchanged, on every transport.
//!
//! A layer's error becomes a JSON-RPC error: an [`Error`] as itself, tower's `Elapsed` and
//! [`TimedOut`] as `-32603` naming the request (and, for [`TimedOut`], the limit), tower's
//! `Overloaded` as `-32603` "Server overloaded", anything else as `-32603` with its text.
//! Requests the protocol serves without application code (`server/discover`, `health`,
//! `subscriptions/listen`, the tasks and skills extensions' methods) do not pass through layers.
//!
//! The OAuth scopes routes declare are checked on this seam before the application's layers;
//! [`RequireScopes`] checks others where it is put.
//!
//! With no layer installed (and no route scopes) the requests go straight to their handlers.
//!
//! A per-principal rate limit ([`PrincipalRateLimit`]), a timeout that names its limit
//! ([`timeout`]), and an audit log in a few lines:
//!
//! ```
//! use std::time::Duration;
//! use mcp_server::middleware::{McpRequest, PrincipalRateLimit, tower::ServiceBuilder};
//! use mcp_server::{NoArguments, Server, ToolRoute};
//!
//! let audit = ServiceBuilder::new().map_request(|request: McpRequest| {
//!     tracing::info!(principal = request.principal().as_str(), method = request.method(),
//!                    target = request.call.target(), "audit");
//!     request
//! });
//! let server = Server::builder("demo", "1.0.0")
//!     .tool(ToolRoute::new("hello", |_ctx, _: NoArguments| async { Ok("hi") }))
//!     .layer(PrincipalRateLimit::new(600, Duration::from_secs(60)))
//!     .layer(audit)
//!     .build()
//!     .unwrap();
//! # let _ = server;
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use mcp_types::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResultCompletion, ErrorObject,
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, ReadResourceRequestParams, ReadResourceResultContentsItem, RequestId,
};
use tower::util::BoxCloneSyncService;
use tower::{Layer, Service, ServiceExt as _};

use crate::{context::Context, error::Error, principal::Principal};

mod scopes;
pub use scopes::{RequireScopes, ScopeCheck};
pub(crate) use scopes::{lacking, route_scopes};

/// The tower this crate's layers are built on, so that an application's layers match its version.
pub use tower;

/// What a layer's error may be: anything, boxed (as tower's own layers produce).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The service a layer wraps: typed MCP requests in, typed results out.
pub type McpService = BoxCloneSyncService<McpRequest, McpResponse, BoxError>;

/// One MCP request on its way to its handler.
pub struct McpRequest {
    /// The request's JSON-RPC id.
    pub id: RequestId,
    /// What the handler will see: era, version, client capabilities, principal, progress.
    pub ctx: Context,
    /// The method and its typed params.
    pub call: McpCall,
}

impl McpRequest {
    /// The JSON-RPC method, such as `tools/call`.
    pub fn method(&self) -> &'static str {
        self.call.method()
    }

    /// Who sent the request ([`Principal::anonymous`] without authorization).
    pub fn principal(&self) -> &Principal {
        self.ctx.principal()
    }
}

impl fmt::Debug for McpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpRequest").field("id", &self.id).field("call", &self.call).finish_non_exhaustive()
    }
}

/// A request's method with its typed params.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum McpCall {
    /// `tools/call`.
    CallTool(CallToolRequestParams),
    /// `resources/read`.
    ReadResource(ReadResourceRequestParams),
    /// `prompts/get`.
    GetPrompt(GetPromptRequestParams),
    /// `completion/complete`.
    Complete(CompleteRequestParams),
    /// `tools/list`, with its cursor.
    ListTools(Option<String>),
    /// `resources/list`, with its cursor.
    ListResources(Option<String>),
    /// `resources/templates/list`, with its cursor.
    ListResourceTemplates(Option<String>),
    /// `prompts/list`, with its cursor.
    ListPrompts(Option<String>),
}

impl McpCall {
    /// The JSON-RPC method.
    pub fn method(&self) -> &'static str {
        match self {
            McpCall::CallTool(_) => "tools/call",
            McpCall::ReadResource(_) => "resources/read",
            McpCall::GetPrompt(_) => "prompts/get",
            McpCall::Complete(_) => "completion/complete",
            McpCall::ListTools(_) => "tools/list",
            McpCall::ListResources(_) => "resources/list",
            McpCall::ListResourceTemplates(_) => "resources/templates/list",
            McpCall::ListPrompts(_) => "prompts/list",
        }
    }

    /// What the request names: the tool or prompt name, or the resource URI.
    pub fn target(&self) -> Option<&str> {
        match self {
            McpCall::CallTool(p) => Some(&p.name),
            McpCall::ReadResource(p) => Some(&p.uri),
            McpCall::GetPrompt(p) => Some(&p.name),
            _ => None,
        }
    }
}

/// The typed result of an [`McpCall`] of the same name.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum McpResponse {
    /// The result of `tools/call` (a failed tool is a result with `isError`).
    CallTool(CallToolResult),
    /// The contents `resources/read` answers with.
    ReadResource(Vec<ReadResourceResultContentsItem>),
    /// The result of `prompts/get`.
    GetPrompt(GetPromptResult),
    /// The completion `completion/complete` answers with.
    Complete(CompleteResultCompletion),
    /// A page of `tools/list`.
    ListTools(ListToolsResult),
    /// A page of `resources/list`.
    ListResources(ListResourcesResult),
    /// A page of `resources/templates/list`.
    ListResourceTemplates(ListResourceTemplatesResult),
    /// A page of `prompts/list`.
    ListPrompts(ListPromptsResult),
}

impl McpResponse {
    /// The method this is the result of.
    pub fn method(&self) -> &'static str {
        match self {
            McpResponse::CallTool(_) => "tools/call",
            McpResponse::ReadResource(_) => "resources/read",
            McpResponse::GetPrompt(_) => "prompts/get",
            McpResponse::Complete(_) => "completion/complete",
            McpResponse::ListTools(_) => "tools/list",
            McpResponse::ListResources(_) => "resources/list",
            McpResponse::ListResourceTemplates(_) => "resources/templates/list",
            McpResponse::ListPrompts(_) => "prompts/list",
        }
    }
}

/// A type-erased layer, applied when the server (or route) is built.
pub(crate) type BoxLayer = Arc<dyn Fn(McpService) -> McpService + Send + Sync>;

/// A tower [`Layer`] that can wrap an [`McpService`]: implemented for every layer whose service
/// takes [`McpRequest`], answers [`McpResponse`], is `Clone + Send + Sync` and whose error
/// converts into [`BoxError`] (tower's `timeout`, `concurrency_limit`, `load_shed`, `map_*`,
/// `option_layer`, [`tower::ServiceBuilder`] stacks, a user's own layers).
pub trait McpLayer: Send + Sync + 'static {
    #[doc(hidden)]
    fn into_erased(self) -> ErasedLayer;
}

/// A layer with its type erased (what [`McpLayer`] turns a layer into).
#[doc(hidden)]
pub struct ErasedLayer(pub(crate) BoxLayer);

impl<L> McpLayer for L
where
    L: Layer<McpService> + Send + Sync + 'static,
    L::Service: Service<McpRequest, Response = McpResponse> + Clone + Send + Sync + 'static,
    <L::Service as Service<McpRequest>>::Error: Into<BoxError>,
    <L::Service as Service<McpRequest>>::Future: Send + 'static,
{
    fn into_erased(self) -> ErasedLayer {
        ErasedLayer(Arc::new(move |inner| BoxCloneSyncService::new(self.layer(inner).map_err(Into::into))))
    }
}

/// `layer` around `inner`, or around the service `base` makes when there is no inner one yet.
pub(crate) fn wrap(inner: Option<McpService>, layer: impl McpLayer, base: impl FnOnce() -> McpService) -> McpService {
    (layer.into_erased().0)(inner.unwrap_or_else(base))
}

/// A service from an async function of the request.
pub(crate) fn service<F, Fut>(serve: F) -> McpService
where
    F: Fn(McpRequest) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<McpResponse, Error>> + Send + 'static,
{
    BoxCloneSyncService::new(tower::service_fn(move |request| {
        let serve = serve.clone();
        async move { serve(request).await.map_err(BoxError::from) }
    }))
}

/// Runs `request` through `service` and words a layer's refusal as the request's error. Boxed,
/// so that the futures of the paths without layers stay small.
pub(crate) fn call(
    service: &McpService,
    request: McpRequest,
) -> Pin<Box<dyn Future<Output = Result<McpResponse, Error>> + Send>> {
    let service = service.clone();
    Box::pin(async move {
        let method = request.method();
        let target = request.call.target().map(str::to_owned);
        let response = service.oneshot(request).await.map_err(|error| layer_error(error, method, target.as_deref()))?;
        if response.method() != method {
            return Err(mismatch(method));
        }
        Ok(response)
    })
}

/// The handler answered with the result of another method: a layer swapped the request.
pub(crate) fn mismatch(method: &str) -> Error {
    Error::internal(format!("A middleware layer answered {method} with the result of another method"))
}

fn layer_error(error: BoxError, method: &str, target: Option<&str>) -> Error {
    let error = match error.downcast::<Error>() {
        Ok(error) => return *error,
        Err(error) => error,
    };
    let request = match target {
        Some(target) => format!("{method} {target}"),
        None => method.to_owned(),
    };
    let message = if let Some(timed_out) = error.downcast_ref::<TimedOut>() {
        format!("{request} timed out after {} ms (a timeout layer's limit)", timed_out.limit.as_millis())
    } else if error.is::<tower::timeout::error::Elapsed>() {
        format!("{request} timed out (tower::timeout)")
    } else if error.is::<tower::load_shed::error::Overloaded>() {
        format!("Server overloaded: {request} was shed by a load-shedding layer; retry later")
    } else {
        format!("{request} failed in a middleware layer: {error}")
    };
    Error::Rpc(ErrorObject::internal_error(message))
}

/// A time limit whose error names the limit (tower's `timeout` works too, without the number).
pub fn timeout(limit: Duration) -> TimeoutLayer {
    TimeoutLayer { limit }
}

/// The layer of [`timeout`].
#[derive(Debug, Clone, Copy)]
pub struct TimeoutLayer {
    limit: Duration,
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Timeout<S> {
        Timeout { inner, limit: self.limit }
    }
}

/// The service of [`timeout`].
#[derive(Debug, Clone)]
pub struct Timeout<S> {
    inner: S,
    limit: Duration,
}

impl<S> Service<McpRequest> for Timeout<S>
where
    S: Service<McpRequest, Response = McpResponse>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = McpResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<McpResponse, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: McpRequest) -> Self::Future {
        let limit = self.limit;
        let response = self.inner.call(request);
        Box::pin(async move {
            match tokio::time::timeout(limit, response).await {
                Ok(result) => result.map_err(Into::into),
                Err(_) => Err(Box::new(TimedOut { limit }) as BoxError),
            }
        })
    }
}

/// The error of [`timeout`]: the request ran past `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedOut {
    /// The limit it ran past.
    pub limit: Duration,
}

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "timed out after {} ms", self.limit.as_millis())
    }
}

impl std::error::Error for TimedOut {}

/// A fixed-window rate limit per [`Principal`]: at most `limit` requests in each `window`, the
/// rest refused with `-32603` "Rate limit" naming the principal and when to retry. Anonymous
/// callers share one window. The table of windows is bounded (`max_principals`, default
/// 100,000): when full, windows that ended are dropped first, then new principals are refused
/// rather than forgetting a principal's count.
#[derive(Clone)]
pub struct PrincipalRateLimit {
    limit: u32,
    window: Duration,
    max_principals: usize,
    windows: Arc<std::sync::Mutex<std::collections::HashMap<Principal, Window>>>,
}

#[derive(Clone, Copy)]
struct Window {
    started: std::time::Instant,
    used: u32,
}

impl PrincipalRateLimit {
    /// At most `limit` requests per principal in each `window`.
    pub fn new(limit: u32, window: Duration) -> Self {
        PrincipalRateLimit { limit, window, max_principals: 100_000, windows: Default::default() }
    }

    /// How many principals' windows are kept at most.
    pub fn max_principals(mut self, max: usize) -> Self {
        self.max_principals = max;
        self
    }

    /// Counts a request of `principal`; the refusal when it is over its limit.
    fn admit(&self, principal: &Principal) -> Result<(), Error> {
        let now = std::time::Instant::now();
        let mut windows = self.windows.lock().expect("not poisoned");
        if !windows.contains_key(principal) && windows.len() >= self.max_principals {
            windows.retain(|_, window| now.duration_since(window.started) < self.window);
            if windows.len() >= self.max_principals {
                return Err(Error::internal("Rate limit: too many principals are being counted; retry later"));
            }
        }
        let window = windows.entry(principal.clone()).or_insert(Window { started: now, used: 0 });
        if now.duration_since(window.started) >= self.window {
            *window = Window { started: now, used: 0 };
        }
        if window.used >= self.limit {
            let retry = self.window.saturating_sub(now.duration_since(window.started));
            let who = if principal.is_anonymous() { "anonymous callers" } else { principal.as_str() };
            let message = format!(
                "Rate limit: {who} made {} requests in {} ms; retry in {} ms",
                self.limit,
                self.window.as_millis(),
                retry.as_millis()
            );
            let data = serde_json::json!({ "retryAfterMs": retry.as_millis() as u64 });
            return Err(Error::Rpc(ErrorObject::internal_error(message).with_data(data)));
        }
        window.used += 1;
        Ok(())
    }
}

impl<S> Layer<S> for PrincipalRateLimit {
    type Service = PrincipalRateLimited<S>;

    fn layer(&self, inner: S) -> PrincipalRateLimited<S> {
        PrincipalRateLimited { inner, limit: self.clone() }
    }
}

/// The service of [`PrincipalRateLimit`].
#[derive(Clone)]
pub struct PrincipalRateLimited<S> {
    inner: S,
    limit: PrincipalRateLimit,
}

impl<S> Service<McpRequest> for PrincipalRateLimited<S>
where
    S: Service<McpRequest, Response = McpResponse>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = McpResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<McpResponse, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: McpRequest) -> Self::Future {
        if let Err(refusal) = self.limit.admit(request.principal()) {
            return Box::pin(std::future::ready(Err(Box::new(refusal) as BoxError)));
        }
        let response = self.inner.call(request);
        Box::pin(async move { response.await.map_err(Into::into) })
    }
}
