//! One upstream's section (`[[upstream]]`): its target, its limits and whose identity its
//! requests carry, and the checks of what its settings allow together.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

/// The gateway's own OAuth client for an HTTP upstream: the client credentials grant, at the
/// configured `issuer` alone. An upstream whose Protected Resource Metadata does not list that
/// authorization server is refused (down, naming why): the credentials never go elsewhere.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamOAuth {
    /// The authorization server's issuer identifier, exactly as in its metadata (required).
    #[serde(default)]
    pub issuer: Option<String>,
    /// The gateway's client id there.
    pub client_id: String,
    /// Its secret.
    pub client_secret: String,
    /// The scopes to ask for (default: those the upstream asks for).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// DPoP-bound tokens (RFC 9449; a key of the gateway's own, a proof with each request):
    /// `true` always, `false` never; unset (the default), exactly when the upstream's Protected
    /// Resource Metadata says `dpop_bound_access_tokens_required`.
    #[serde(default)]
    pub dpop: Option<bool>,
}

/// Whose identity the gateway's requests to an HTTP upstream carry (`identity`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Identity {
    /// The gateway's own: its `headers`, and the token of `[upstream.oauth]` (client
    /// credentials). Every caller's requests arrive as the gateway.
    #[default]
    Gateway,
    /// The caller's: each request made for a caller (a call, a prompt, a read, a completion)
    /// carries a token the authorization server issued for the upstream in exchange for the
    /// caller's own (RFC 8693 token exchange, as the client of `[upstream.oauth]`, with its
    /// scopes, `audience` and `resource` the upstream), so that the upstream sees the caller as
    /// its subject. The caller's token itself never reaches the upstream. Each caller (its
    /// principal, client and scopes) has a connection of its own (in the legacy era, a session
    /// of its own), at most `max_identities` of them, and its exchanged token is kept until it
    /// is about to expire, or until the upstream refuses it (401: exchanged again, once).
    /// What the gateway does for no caller (listing, following list changes and resource
    /// updates, health checks) is done as the gateway (client credentials of the same client).
    /// A request without a caller's token (stdio, or an endpoint without `[authorization]`)
    /// fails, saying so: the gateway's identity never stands in for a caller's.
    Exchange,
}

/// One server behind the gateway: a command (stdio) or a URL (Streamable HTTP, either era), or
/// a REST API described by an OpenAPI document (`openapi`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    /// The upstream's name, in errors and logs, and the default prefix of its tools.
    pub name: String,
    /// The program and its arguments, spoken to over stdio.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// How many processes of `command` to keep running (default 1). Each request goes to the one
    /// with the fewest requests in flight, so a pool suits servers that keep no state between
    /// requests; each process is restarted on its own, and the upstream is up while one is.
    #[serde(default)]
    pub pool: Option<usize>,
    /// Environment variables for `command`. The process gets these and `PATH` (and, on
    /// Windows, `SYSTEMROOT`, without which programs fail to start there), nothing else of the
    /// gateway's environment, unless `inherit_env` says so.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Whether `command` inherits the gateway's whole environment (`env` added to it). Default
    /// false: the gateway's secrets (and another upstream's `env`) stay out of the process.
    #[serde(default)]
    pub inherit_env: bool,
    /// A Streamable HTTP endpoint.
    #[serde(default)]
    pub url: Option<String>,
    /// Headers sent with every HTTP request (`Authorization`, API keys).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// What goes before each tool's name, with `_`; `""` keeps the names. Default: `name`.
    #[serde(default)]
    pub prefix: Option<String>,
    /// Tools listed under another name (upstream name → listed name), instead of the prefix.
    #[serde(default)]
    pub rename: BTreeMap<String, String>,
    /// Which protocol era to speak. `auto` (the default): 2026-07-28 when the upstream speaks
    /// it, else legacy; and legacy from the first time the upstream, in 2026-07-28, refuses to
    /// send an elicitation, sampling or roots request while serving a call (if it speaks legacy:
    /// that call is sent again there, once). `modern`: 2026-07-28 only (such a refusal fails the
    /// call, saying to set `auto` or `legacy`). `legacy`: the `initialize` handshake only.
    #[serde(default)]
    pub era: Era,
    /// Seconds between two health checks of a connected upstream (`ping`, or `server/discover`
    /// on the modern era). Default 10.
    #[serde(default)]
    pub health_interval_secs: Option<f64>,
    /// Seconds a call may take before it fails naming the upstream. Default 60.
    #[serde(default)]
    pub timeout_secs: Option<f64>,
    /// Seconds an idle connection to an HTTP upstream is kept for the next request. Default 4:
    /// below the idle timeouts servers commonly close them at (Node's and uvicorn's 5 s,
    /// mcp-server's 10 s), so that no request is sent on a connection the upstream is closing.
    #[serde(default)]
    pub idle_connection_secs: Option<f64>,
    /// How many requests the gateway sends the upstream at once; more wait for one to finish,
    /// up to `queue_timeout_secs`. Default: no limit.
    #[serde(default)]
    pub max_concurrent_requests: Option<usize>,
    /// Seconds a request waits for one of `max_concurrent_requests` before it fails naming the
    /// upstream. Default: `timeout_secs`.
    #[serde(default)]
    pub queue_timeout_secs: Option<f64>,
    /// Scopes a caller's access token must hold to see this upstream's entries and use them;
    /// a caller without them gets 403 `insufficient_scope` naming them (to step up).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The principals (token subjects, else client ids) that may see and use this upstream;
    /// to anyone else it does not exist. Empty: any caller.
    #[serde(default)]
    pub principals: Vec<String>,
    /// Scopes needed besides `scopes` for single tools and prompts, by the upstream's own
    /// names.
    #[serde(default)]
    pub entry_scopes: BTreeMap<String, Vec<String>>,
    /// The gateway's own token for an HTTP upstream that asks for one (client credentials);
    /// with `identity = "exchange"`, also the client that exchanges the callers' tokens.
    #[serde(default)]
    pub oauth: Option<UpstreamOAuth>,
    /// Whose identity its requests carry: the gateway's (`"gateway"`, the default) or, for an
    /// HTTP upstream, each caller's (`"exchange"`; see [`Identity::Exchange`]).
    #[serde(default)]
    pub identity: Identity,
    /// With `identity = "exchange"`: the most callers whose exchanged tokens and connections are
    /// kept (default 1,000); past it, the one unused the longest is let go (its connection closed
    /// once its requests have had their time).
    #[serde(default)]
    pub max_identities: Option<usize>,
    /// Whether a long call of this upstream's tools becomes a task for a caller that declared the
    /// tasks extension (`task_after_secs`); the gateway follows the upstream's own tasks either
    /// way. Default true.
    #[serde(default = "yes")]
    pub tasks: bool,
    /// The most entries of each kind (tools, prompts, resources, templates, skills) it may
    /// list. Default 10,000. An upstream that lists more is degraded: none of its entries are
    /// listed, and it is tried again later.
    #[serde(default)]
    pub max_entries: Option<usize>,
    /// The most pages one of its lists may take. Default 100; more degrades it too.
    #[serde(default)]
    pub max_list_pages: Option<usize>,
    /// The most bytes its lists (every kind together, as JSON) may take. Default 16 MiB
    /// (16,777,216); more degrades it too. Counted as the entries come, so that the gateway
    /// holds at most about a page more.
    #[serde(default)]
    pub max_list_bytes: Option<usize>,
    /// Seconds the gateway waits after a list-changed notification before it lists again, so
    /// that a burst of them costs one re-list. Default 0.25.
    #[serde(default)]
    pub relist_delay_secs: Option<f64>,
    /// A REST API instead of an MCP server: its OpenAPI 3.0 or 3.1 document (JSON or YAML), an
    /// `http(s)://` URL or a file's path (relative to the gateway's working directory). Each operation is a tool; the document is loaded at
    /// start, and again when a call could not reach the API (see `crate::openapi`).
    #[serde(default)]
    pub openapi: Option<String>,
    /// Where an `openapi` upstream's calls go (an `http(s)://` URL, the operations' paths
    /// appended). Default: the document's first `servers` URL (its variables at their defaults),
    /// resolved against the document's URL; a document fetched by URL that names none: its
    /// origin.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The most bytes an `openapi` upstream's response may take; a larger one is a tool error
    /// naming this limit. Default 1 MiB (1,048,576).
    #[serde(default)]
    pub max_response_bytes: Option<usize>,
}

fn yes() -> bool {
    true
}

/// The protocol era to speak to an upstream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Era {
    /// Modern first, falling back to legacy as the specification's compatibility rules say, or
    /// when the upstream cannot ask its caller anything in the modern era (as the Python SDK's
    /// servers cannot).
    #[default]
    Auto,
    /// 2026-07-28 only.
    Modern,
    /// The `initialize` handshake only.
    Legacy,
}

impl Era {
    pub(crate) fn preference(self) -> mcp_client::EraPreference {
        match self {
            Era::Auto => mcp_client::EraPreference::Auto,
            Era::Modern => mcp_client::EraPreference::Modern,
            Era::Legacy => mcp_client::EraPreference::Legacy,
        }
    }
}

impl UpstreamConfig {
    /// Checks what this upstream's own settings allow together; `has_authorization`: the
    /// endpoint has an `[authorization]` section (its callers have tokens).
    pub(super) fn check(&self, has_authorization: bool) -> Result<(), String> {
        if self.name.is_empty() {
            return Err("an upstream has an empty `name`".into());
        }
        let seconds = [
            ("health_interval_secs", self.health_interval_secs),
            ("timeout_secs", self.timeout_secs),
            ("idle_connection_secs", self.idle_connection_secs),
            ("queue_timeout_secs", self.queue_timeout_secs),
            ("relist_delay_secs", self.relist_delay_secs),
        ];
        for (field, value) in seconds {
            check_seconds(field, value).map_err(|e| format!("upstream `{}`: {e}", self.name))?;
        }
        self.check_openapi()?;
        match (&self.command, &self.url) {
            (Some(command), None) if !command.is_empty() => {}
            (Some(_), None) => return Err(format!("upstream `{}`: `command` is empty", self.name)),
            (None, Some(_)) => {}
            (Some(_), Some(_)) => {
                return Err(format!("upstream `{}` has both `command` and `url`; give one", self.name));
            }
            (None, None) if self.openapi.is_some() => {}
            (None, None) => {
                return Err(format!("upstream `{}` needs a `command`, a `url` or an `openapi`", self.name));
            }
        }
        match self.pool {
            Some(0) => return Err(format!("upstream `{}`: `pool` must be at least 1", self.name)),
            Some(n) if n > 1 && self.command.is_none() => {
                return Err(format!(
                    "upstream `{}`: `pool` is for stdio upstreams (`command`); scale an HTTP one behind its own \
                     load balancer",
                    self.name
                ));
            }
            _ => {}
        }
        if self.inherit_env && self.command.is_none() {
            return Err(format!("upstream `{}`: `inherit_env` is for stdio upstreams (`command`)", self.name));
        }
        self.check_identity(has_authorization)?;
        if self.oauth.is_some() && self.command.is_some() {
            return Err(format!(
                "upstream `{}`: `oauth` is for HTTP upstreams; a stdio server takes credentials from its `env`",
                self.name
            ));
        }
        if let Some(oauth) = &self.oauth
            && oauth.issuer.as_deref().is_none_or(str::is_empty)
        {
            return Err(format!(
                "upstream `{}`: `[upstream.oauth]` needs `issuer`, the authorization server the gateway sends its \
                 client credentials to (and no other)",
                self.name
            ));
        }
        let scopes = self.scopes.iter().chain(self.entry_scopes.values().flatten());
        if let Some(bad) = scopes.clone().find(|scope| !mcp_server::auth::is_scope_token(scope)) {
            return Err(format!(
                "upstream `{}`: the scope {bad:?} is not an OAuth scope-token (RFC 6749: no space, quote, \
                 backslash or control character)",
                self.name
            ));
        }
        if self.max_list_bytes == Some(0) {
            return Err(format!("upstream `{}`: `max_list_bytes` must be at least 1", self.name));
        }
        if self.restricts_callers() && !has_authorization {
            return Err(format!(
                "upstream `{}` restricts its callers (`scopes`, `principals` or `entry_scopes`), \
                 which needs an `[authorization]` section to know who they are",
                self.name
            ));
        }
        Ok(())
    }

    /// `identity = "exchange"` has a caller's token to exchange (an HTTP upstream behind an
    /// `[authorization]` endpoint), a client to exchange it as, and no configured credential
    /// that would stand in for the caller's.
    fn check_identity(&self, has_authorization: bool) -> Result<(), String> {
        let name = &self.name;
        if self.identity == Identity::Gateway {
            if self.max_identities.is_some() {
                return Err(format!("upstream `{name}`: `max_identities` is for `identity = \"exchange\"`"));
            }
            return Ok(());
        }
        if self.command.is_some() {
            return Err(format!(
                "upstream `{name}`: `identity = \"exchange\"` is for HTTP upstreams (`url`): a stdio server \
                 is started once for every caller, and takes its credentials from its `env`"
            ));
        }
        if !has_authorization {
            return Err(format!(
                "upstream `{name}`: `identity = \"exchange\"` needs an `[authorization]` section: the callers' \
                 access tokens it exchanges are those the endpoint verifies"
            ));
        }
        if self.oauth.is_none() {
            return Err(format!(
                "upstream `{name}`: `identity = \"exchange\"` needs `[upstream.oauth]`: the authorization server \
                 (`issuer`) and the client (`client_id`, `client_secret`) the gateway exchanges its callers' \
                 tokens as"
            ));
        }
        if self.headers.keys().any(|header| header.eq_ignore_ascii_case("authorization")) {
            return Err(format!(
                "upstream `{name}`: `identity = \"exchange\"` sends each caller's exchanged token: an \
                 `Authorization` header in `headers` would stand in for it"
            ));
        }
        if self.max_identities == Some(0) {
            return Err(format!("upstream `{name}`: `max_identities` must be at least 1"));
        }
        Ok(())
    }

    /// An `openapi` upstream has no other target, and only it takes `base_url` and
    /// `max_response_bytes`.
    fn check_openapi(&self) -> Result<(), String> {
        let name = &self.name;
        if self.openapi.is_none() {
            for (field, set) in
                [("base_url", self.base_url.is_some()), ("max_response_bytes", self.max_response_bytes.is_some())]
            {
                if set {
                    return Err(format!("upstream `{name}`: `{field}` is for OpenAPI upstreams (`openapi`)"));
                }
            }
            return Ok(());
        }
        if self.command.is_some() || self.url.is_some() {
            return Err(format!(
                "upstream `{name}` has `openapi` and a `command` or `url`; give one (an OpenAPI upstream's calls go \
                 to `base_url`)"
            ));
        }
        if self.openapi.as_deref().is_some_and(str::is_empty) {
            return Err(format!("upstream `{name}`: `openapi` is empty"));
        }
        if let Some(base) = &self.base_url {
            let scheme = base.split_once("://").map(|(scheme, _)| scheme.to_ascii_lowercase());
            if !matches!(scheme.as_deref(), Some("http" | "https")) {
                return Err(format!("upstream `{name}`: `base_url` must be an http:// or https:// URL (got {base:?})"));
            }
        }
        if self.max_response_bytes == Some(0) {
            return Err(format!("upstream `{name}`: `max_response_bytes` must be at least 1"));
        }
        Ok(())
    }

    /// Whether some callers may not see or use all of this upstream.
    pub fn restricts_callers(&self) -> bool {
        !self.scopes.is_empty() || !self.principals.is_empty() || !self.entry_scopes.is_empty()
    }

    /// The name a tool of this upstream is listed under without a prefix: its `rename`, else its
    /// own.
    pub(crate) fn bare_name(&self, tool: &str) -> String {
        self.rename.get(tool).cloned().unwrap_or_else(|| tool.to_owned())
    }

    /// The name a tool of this upstream is listed under with `prefix_mode = "always"`.
    pub fn listed_name(&self, tool: &str) -> String {
        if let Some(renamed) = self.rename.get(tool) {
            return renamed.clone();
        }
        match self.prefix.as_deref().unwrap_or(&self.name) {
            "" => tool.to_owned(),
            prefix => format!("{prefix}_{tool}"),
        }
    }

    /// How many connections (processes, for a stdio pool) the upstream is served by.
    pub(crate) fn pool_size(&self) -> usize {
        self.pool.unwrap_or(1).max(1)
    }

    pub(crate) fn health_interval(&self) -> Duration {
        Duration::from_secs_f64(self.health_interval_secs.unwrap_or(10.0).max(0.05))
    }

    pub(crate) fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.timeout_secs.unwrap_or(60.0).max(0.001))
    }

    pub(crate) fn idle_connection(&self) -> Duration {
        Duration::from_secs_f64(self.idle_connection_secs.unwrap_or(4.0))
    }

    pub(crate) fn max_identities(&self) -> usize {
        self.max_identities.unwrap_or(1000).max(1)
    }

    pub(crate) fn max_entries(&self) -> usize {
        self.max_entries.unwrap_or(10_000)
    }

    pub(crate) fn max_list_bytes(&self) -> usize {
        self.max_list_bytes.unwrap_or(16 << 20)
    }

    pub(crate) fn max_list_pages(&self) -> usize {
        self.max_list_pages.unwrap_or(100).max(1)
    }

    pub(crate) fn relist_delay(&self) -> Duration {
        Duration::from_secs_f64(self.relist_delay_secs.unwrap_or(0.25).clamp(0.0, 60.0))
    }

    pub(crate) fn max_response_bytes(&self) -> usize {
        self.max_response_bytes.unwrap_or(1 << 20)
    }

    pub(crate) fn queue_timeout(&self) -> Duration {
        self.queue_timeout_secs.map_or_else(|| self.timeout(), |secs| Duration::from_secs_f64(secs.max(0.0)))
    }
}

/// A number of seconds is finite and not negative (a `Duration` holds nothing else).
pub(super) fn check_seconds(field: &str, value: Option<f64>) -> Result<(), String> {
    match value {
        Some(secs) if !secs.is_finite() || secs < 0.0 => {
            Err(format!("`{field}` must be a finite number of seconds, at least 0 (got {secs})"))
        }
        _ => Ok(()),
    }
}
