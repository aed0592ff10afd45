//! How a client is configured: [`ClientBuilder`] for the connection (handlers, era and
//! versions, timeouts, limits, HTTP settings) and [`CallOptions`] for one call.

use std::sync::Arc;
use std::time::Duration;

use mcp_types::{ClientCapabilities, Implementation, InputResponse, LoggingLevel, LoggingMessageNotificationParams};

use super::era::{EraPreference, LEGACY_VERSIONS, MODERN_VERSIONS};
use crate::core::{Limits, Progress, ProgressFn};
use crate::error::HandlerError;
use crate::handlers::{CallHooks, Handlers, InputAsk, InputHook};

/// Per-call options.
#[derive(Clone, Default)]
pub struct CallOptions {
    pub(super) progress: Option<ProgressFn>,
    pub(super) timeout: Option<Duration>,
    pub(super) log_level: Option<LoggingLevel>,
    pub(crate) hooks: CallHooks,
}

impl CallOptions {
    /// No progress callback, the client's timeout and no log level.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for progress notifications and passes them to `callback`.
    pub fn on_progress(mut self, callback: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(callback));
        self
    }

    /// Overrides the client's request timeout for this call.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    pub(crate) fn request_timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Asks for log messages at or above `level` for this call (a deprecated MCP feature; only
    /// on the modern era, where it is per request).
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// Answers the input the server asks for while serving this call with `handler` instead of
    /// the client's [`Handlers`]. The handler gets one round of questions at a time and returns
    /// their answers in the same order: all the input requests of a 2026-07-28
    /// `InputRequiredResult` (or of a task) at once, or a legacy server's `elicitation/create`,
    /// `sampling/createMessage` or `roots/list` request that belongs to this call, alone. On
    /// Streamable HTTP a legacy request belongs to the call whose response stream carries it; on
    /// stdio, which does not say, an `elicitation/create` or `sampling/createMessage` belongs to
    /// the only call in flight with a handler of its own (with several, the client's
    /// [`Handlers`] answer), and a `roots/list` to none: a server asks for roots for its session
    /// (after the handshake, when they change), so the [`Handlers`] answer it. On the modern
    /// wire this call declares `capabilities` in place of the client's; a legacy server keeps
    /// those of the handshake, and this handler answers only what they declared (the
    /// [`Handlers`] refuse the rest).
    ///
    /// A proxy uses this to pass each question on to its own caller.
    pub fn on_input<F, Fut>(mut self, capabilities: ClientCapabilities, handler: F) -> Self
    where
        F: Fn(Vec<InputAsk>) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Vec<InputResponse>, HandlerError>> + Send + 'static,
    {
        self.hooks.input = Some(InputHook::new(capabilities, handler));
        self
    }

    /// Tells `callback` the task id when the server makes this call a task (the tasks
    /// extension: with [`ClientBuilder::tasks`], or capabilities of [`CallOptions::on_input`]
    /// that declare it); [`Client::call_tool_with`](crate::Client::call_tool_with) then follows the task as before.
    pub fn on_task(mut self, callback: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.hooks.task = Some(Arc::new(callback));
        self
    }

    /// Calls `callback` with each state of the task this call becomes (tasks extension) as it
    /// is polled while the call follows it: status, `statusMessage`, input requested. For
    /// progress displays.
    pub fn on_task_status(
        mut self,
        callback: impl Fn(&mcp_types::ext::tasks::GetTaskResult) + Send + Sync + 'static,
    ) -> Self {
        self.hooks.task_status = Some(Arc::new(callback));
        self
    }

    /// Passes the log messages (`notifications/message`) the server sends while serving this
    /// call to `callback`, instead of the client's trace. They belong to the call as input
    /// requests do (see [`CallOptions::on_input`]). Which levels come is set by
    /// [`CallOptions::log_level`] (modern) or [`Client::set_log_level`](crate::Client::set_log_level) (legacy).
    pub fn on_log(mut self, callback: impl Fn(LoggingMessageNotificationParams) + Send + Sync + 'static) -> Self {
        self.hooks.log = Some(Arc::new(callback));
        self
    }
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("progress", &self.progress.is_some())
            .field("timeout", &self.timeout)
            .field("log_level", &self.log_level)
            .field("on_input", &self.hooks.input.is_some())
            .field("on_log", &self.hooks.log.is_some())
            .field("on_task", &self.hooks.task.is_some())
            .field("on_task_status", &self.hooks.task_status.is_some())
            .finish()
    }
}

/// Builds a [`Client`](crate::Client) and connects it.
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    pub(super) client_info: Implementation,
    pub(super) handlers: Handlers,
    pub(super) era: EraPreference,
    pub(super) modern_versions: Vec<String>,
    pub(super) legacy_versions: Vec<String>,
    pub(super) probe_timeout: Duration,
    pub(super) startup_timeout: Duration,
    pub(super) request_timeout: Duration,
    pub(super) log_level: Option<LoggingLevel>,
    pub(super) http_headers: Vec<(String, String)>,
    pub(super) send_client_info: bool,
    pub(super) limits: Limits,
    pub(super) tasks: bool,
    #[cfg(feature = "http")]
    pub(super) http_client: Option<reqwest::Client>,
    #[cfg(feature = "http")]
    pub(super) http_idle_timeout: Duration,
    #[cfg(feature = "http")]
    pub(super) http_layers: crate::layer::HttpLayers,
    #[cfg(feature = "auth")]
    pub(super) oauth: Option<crate::auth::OAuth>,
}

impl ClientBuilder {
    /// A builder for a client that introduces itself as `client_info`, with no handlers and the
    ///  defaults of every setting.
    pub fn new(client_info: Implementation) -> Self {
        ClientBuilder {
            client_info,
            handlers: Handlers::new(),
            era: EraPreference::Auto,
            modern_versions: MODERN_VERSIONS.iter().map(|v| v.to_string()).collect(),
            legacy_versions: LEGACY_VERSIONS.iter().map(|v| v.to_string()).collect(),
            probe_timeout: Duration::from_secs(3),
            startup_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            log_level: None,
            http_headers: Vec::new(),
            send_client_info: true,
            limits: Limits::default(),
            tasks: false,
            #[cfg(feature = "http")]
            http_client: None,
            #[cfg(feature = "http")]
            http_idle_timeout: Duration::from_secs(90),
            #[cfg(feature = "http")]
            http_layers: Default::default(),
            #[cfg(feature = "auth")]
            oauth: None,
        }
    }

    /// The handlers for elicitation, sampling and roots; they decide the declared capabilities.
    pub fn handlers(mut self, handlers: Handlers) -> Self {
        self.handlers = handlers;
        self
    }

    /// Which era(s) to negotiate (default [`EraPreference::Auto`]).
    pub fn era(mut self, era: EraPreference) -> Self {
        self.era = era;
        self
    }

    /// Restricts and orders the versions offered: each list preferred first. Unknown era
    /// versions are ignored.
    pub fn protocol_versions<I: IntoIterator<Item = S>, S: Into<String>>(mut self, versions: I) -> Self {
        let versions: Vec<String> = versions.into_iter().map(Into::into).collect();
        self.modern_versions = versions.iter().filter(|v| MODERN_VERSIONS.contains(&v.as_str())).cloned().collect();
        self.legacy_versions = versions.iter().filter(|v| LEGACY_VERSIONS.contains(&v.as_str())).cloned().collect();
        self
    }

    /// How long the stdio `server/discover` probe waits before assuming a legacy server (3 s),
    /// counted from the server's first output on stdout or stderr: start-up does not count (see
    /// [`Self::startup_timeout`]). A `DiscoverResult` that comes later, while `initialize` is
    /// under way, still makes the connection modern.
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// How long the stdio probe waits for a server that has written nothing yet to show a first
    /// sign of life before its [`Self::probe_timeout`] starts anyway (10 s).
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// The default per-request timeout (60 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The most pages one listing follows (default 1000): `all_tools` and the other `all_*`
    /// and `list_*` streams end with [`Error::LimitExceeded`](crate::Error::LimitExceeded) after it, and the listing that
    /// `call_tool` does to learn a tool's headers stops there.
    pub fn max_list_pages(mut self, pages: usize) -> Self {
        self.limits.max_list_pages = pages;
        self
    }

    /// Bytes of results kept by the `ttlMs` cache (default 16 MiB); expired entries go first,
    /// then the ones closest to expiry. The tools' `x-mcp-header` annotations are kept within
    /// the same number of bytes (a tool whose annotations did not fit is listed again when
    /// called); [`Client::close`](crate::Client::close) frees both.
    pub fn max_cache_bytes(mut self, bytes: usize) -> Self {
        self.limits.max_cache_bytes = bytes;
        self
    }

    /// Server-to-client requests (legacy `ping`, elicitation, sampling, roots) answered at
    /// once (default 16); while that many are open the client stops reading further ones, so
    /// a flooding server slows itself down.
    pub fn max_server_requests(mut self, requests: usize) -> Self {
        self.limits.max_server_requests = requests;
        self
    }

    /// How long answering one server-to-client request may take, the handler and the delivery
    /// of its answer together (default 5 minutes: a person may be answering).
    pub fn server_request_timeout(mut self, timeout: Duration) -> Self {
        self.limits.server_request_timeout = timeout;
        self
    }

    /// Bytes of messages queued for a stdio server's stdin (default 8 MiB). Requests and answers
    /// wait for room; a notification that finds no room fails with [`Error::LimitExceeded`](crate::Error::LimitExceeded).
    pub fn max_outbox_bytes(mut self, bytes: usize) -> Self {
        self.limits.max_outbox_bytes = bytes;
        self
    }

    /// Asks for log messages on every modern request (deprecated MCP feature).
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// Whether to send `clientInfo` in every modern request's `_meta` (default: yes).
    pub fn send_client_info(mut self, send: bool) -> Self {
        self.send_client_info = send;
        self
    }

    /// Opts in to the tasks extension (`io.modelcontextprotocol/tasks`, default: off): the client
    /// declares it on every modern request, so a server may answer a `tools/call` with a task.
    /// [`Client::call_tool`](crate::Client::call_tool) then follows the task to its end (polling `tasks/get`, answering its
    /// input requests with the [`Handlers`], cancelling it when the call is dropped), and
    /// [`Client::call_tool_as_task`](crate::Client::call_tool_as_task) hands the task to the caller. Without it a server never
    /// makes a call a task.
    pub fn tasks(mut self, enabled: bool) -> Self {
        self.tasks = enabled;
        self
    }

    /// An extra header on every HTTP request (for example `Authorization`).
    pub fn http_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.http_headers.push((name.into(), value.into()));
        self
    }

    /// The HTTP client for the MCP server, for proxies, extra root certificates, client
    /// certificates or connection settings. Without it: for an `https://` URL,
    /// `reqwest::Client::new()`; for an `http://` URL, hyper-util's pooled client with the
    /// endpoint prepared once (a kept connection, no per-request URL parse), with the settings
    /// of `reqwest::Client::new()` (its redirect policy and environment proxies included; when
    /// such a proxy applies to the URL, `reqwest::Client::new()` itself).
    #[cfg(feature = "http")]
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http_client = Some(client);
        self
    }

    /// How long an idle connection to the MCP server is kept for reuse (default 90 s, as
    /// reqwest's). Keep it below the server's own idle timeout, so that no request goes out on a
    /// connection the server is closing. Not for a client given to
    /// [`http_client`](Self::http_client), which has its own (`pool_idle_timeout`).
    #[cfg(feature = "http")]
    pub fn http_idle_timeout(mut self, idle: Duration) -> Self {
        self.http_idle_timeout = idle;
        self
    }

    /// Wraps the client's HTTP traffic in a tower layer: every request to the MCP server (POST,
    /// event-stream GET, session DELETE, and the deprecated HTTP+SSE transport's) goes through
    /// it, as a `reqwest::Request` answered with a `reqwest::Response`. May be given several
    /// times; the first layer given is the outermost (it sees a request first), as with
    /// `tower::ServiceBuilder`, and all of them are outside the OAuth layer of
    /// `oauth` (feature `auth`). See [`layer`](crate::layer).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// // Any tower layer over `mcp_client::layer::HttpService` fits, e.g. a timeout per HTTP
    /// // request (tower's `timeout` feature) or a concurrency limit:
    /// let builder = mcp_client::Client::builder("my-app", "1.0.0")
    ///     .http_layer(tower::layer::layer_fn(|service| service))
    ///     .request_timeout(Duration::from_secs(30));
    /// # let _ = builder;
    /// ```
    #[cfg(feature = "http")]
    pub fn http_layer<L>(mut self, layer: L) -> Self
    where
        L: tower::Layer<crate::layer::HttpService> + Send + Sync + 'static,
        L::Service: tower::Service<reqwest::Request, Response = reqwest::Response> + Clone + Send + Sync + 'static,
        <L::Service as tower::Service<reqwest::Request>>::Error: Into<crate::layer::BoxError>,
        <L::Service as tower::Service<reqwest::Request>>::Future: Send + 'static,
    {
        self.http_layers.push(layer);
        self
    }

    /// OAuth authorization for the HTTP transports: requests carry its access token, and a
    /// 401 or a 403 `insufficient_scope` runs its flow and retries the request. It is the
    /// innermost layer of the client's HTTP service ([`OAuth::layer`](crate::auth::OAuth::layer)),
    /// inside those of [`http_layer`](Self::http_layer).
    #[cfg(feature = "auth")]
    pub fn oauth(mut self, oauth: crate::auth::OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }
}
