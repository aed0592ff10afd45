//! The gateway's configuration: one TOML file.
//!
//! ```toml
//! listen = "127.0.0.1:8080"          # the downstream HTTP endpoint (at /mcp)
//! task_after_secs = 1                # a call still running then becomes a task (tasks extension)
//! audit = "/var/log/mcp-gateway.jsonl"  # a JSON line per call, read, prompt and list ("stderr")
//! prefix_mode = "always"             # tools and prompts under `<prefix>_<name>` always (default),
//!                                    # "conditional" (only a clashing name) or "never"
//! catalogue = "search"               # list only `search_tools` and `call_tool` (default "plain":
//!                                    # every tool)
//!
//! [[upstream]]
//! name = "files"                     # tools are listed as `files_<tool>`
//! command = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv"]
//! pool = 4                           # processes of it; a call goes to the least busy
//! env = { FILES_TOKEN = "…" }        # its environment: this and PATH, nothing else…
//! inherit_env = false                # …unless true: all of the gateway's, `env` added
//!
//! [[upstream]]
//! name = "notes"
//! url = "http://127.0.0.1:9000/mcp"
//! headers = { Authorization = "Bearer secret" }
//! prefix = ""                        # the tools keep their names
//! rename = { search = "notes_search" }
//! era = "legacy"                     # "auto" (the default), "modern" or "legacy"
//! timeout_secs = 30                  # each request (default 60)
//! idle_connection_secs = 4           # an idle connection is reused this long (default; keep it
//!                                    # below the upstream's own idle timeout)
//! max_concurrent_requests = 8        # at once; more wait…
//! queue_timeout_secs = 2             # …this long, then fail naming the upstream
//! health_interval_secs = 10          # `ping` / `server/discover` while connected
//! scopes = ["notes"]                 # a caller's token needs these to see and use it…
//! principals = ["alice"]             # …and only these principals may (default: any; a token
//!                                    # with no `sub` is the principal `client:<client_id>`)
//! entry_scopes = { delete = ["notes:write"] }  # more for one tool or prompt (own names)
//! tasks = true                       # its long calls may become tasks (default)
//! max_entries = 10000                # tools (prompts, resources…) it may list, each kind (default)
//! max_list_pages = 100               # pages one list may take (default)
//! max_list_bytes = 16777216          # bytes of JSON all its lists take together (default 16 MiB);
//!                                    # over any of the three: degraded
//! relist_delay_secs = 0.25           # a burst of list changes is one re-list after this (default)
//!
//! [upstream.oauth]                   # the gateway's own token for this upstream
//! issuer = "https://auth.example"    # the only authorization server it is sent to (required)
//! client_id = "gateway"              # (client credentials; never the caller's token)
//! client_secret = "…"
//! scopes = ["notes"]
//! dpop = true                        # DPoP-bound tokens (RFC 9449) always; false: never; unset
//!                                    # (default): when the upstream's metadata requires them
//!
//! [[upstream]]
//! name = "mail"
//! url = "https://mail.example/mcp"
//! identity = "exchange"              # each call as its caller: the caller's token exchanged (RFC
//!                                    # 8693) for one of this upstream, as the oauth client below;
//!                                    # default "gateway" (the gateway's own, as for `notes`)
//! max_identities = 1000              # callers whose tokens and connections are kept (default)
//! oauth = { issuer = "https://auth.example", client_id = "gateway", client_secret = "…" }
//!
//! [[upstream]]                       # a REST API: each operation of its OpenAPI 3.0 or 3.1
//! name = "pets"                      # document is a tool (`pets_<operationId>`)
//! openapi = "https://pets.example/openapi.json"  # the document: a URL, or a file's path
//! base_url = "https://pets.example/v1"  # where calls go (default: the document's `servers`)
//! headers = { X-Api-Key = "…" }      # its credentials: these headers, and/or `[upstream.oauth]`
//! max_response_bytes = 1048576       # a larger response is a tool error (default 1 MiB)
//! timeout_secs = 30                  # each call (default 60)
//!
//! [redis]                            # several instances behind a load balancer share…
//! url = "redis://127.0.0.1:6379"     # …sessions, SSE events, tasks and used states
//! state_secret = "…"                 # …and the key that seals requestState
//!
//! [authorization]                    # the endpoint is an OAuth 2.1 resource server
//! resource = "https://gateway.example/mcp"   # the audience its tokens are issued for
//! issuer = "https://auth.example"    # JWT access tokens, checked with its JWKS…
//! introspection = { client_id = "gateway", client_secret = "…" }  # …or introspected
//! required_scopes = ["mcp"]          # every request
//! list_only_permitted = true         # hide what a token lacks the scopes for (default: 403 on call)
//!
//! [[policy]]                         # CEL rules, checked before every use and on every list
//! name = "ops-delete"                # named in refusals and in the audit log
//! when = 'entry.name.endsWith("_delete")'    # when it applies (default: always)
//! allow = '"ops" in principal.claims.groups' # or `deny = '…'`; one that fails refuses
//!
//! [[policy]]
//! name = "srv-only"
//! when = 'upstream == "files" && method == "tools/call"'
//! allow = 'arguments.path.startsWith("/srv")'
//! scopes = ["files:any"]             # a token lacking these gets 403 insufficient_scope instead
//! ```
//!
//! Every `[[policy]]` rule that applies must let a request pass (no precedence between `allow`
//! and `deny`); see [`PolicyRule`] for the variables.

use std::time::Duration;

use serde::Deserialize;

pub use crate::policy::PolicyRule;
pub use upstream::{Era, Identity, UpstreamConfig, UpstreamOAuth};

use upstream::check_seconds;

mod upstream;

/// The whole file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Where the downstream HTTP endpoint listens (`IP:port`); none: only `--stdio` serves.
    #[serde(default)]
    pub listen: Option<String>,
    /// The servers behind the gateway.
    #[serde(rename = "upstream", default)]
    pub upstreams: Vec<UpstreamConfig>,
    /// What `tools/list` lists: every upstream's tools (`"plain"`, the default), or only
    /// `search_tools` and `call_tool` (`"search"`), for catalogues too large for a model's context.
    #[serde(default)]
    pub catalogue: CatalogueMode,
    /// Makes the HTTP endpoint an OAuth 2.1 resource server; none: it takes every caller.
    #[serde(default)]
    pub authorization: Option<AuthorizationConfig>,
    /// Several gateway instances behind a load balancer: what they share in Redis.
    #[serde(default)]
    pub redis: Option<RedisConfig>,
    /// The audit log: `stderr`, or a file's path (appended to; one that cannot be opened stops
    /// the gateway at start). One JSON line per call, prompt, read, completion and list: its
    /// time, principal, upstream, method, name, decision, duration and error. None: no audit.
    #[serde(default)]
    pub audit: Option<String>,
    /// When tools and prompts are listed under their upstream's prefix (`<prefix>_<name>`):
    /// `always` (the default), `conditional` (only where upstreams' names clash) or `never`.
    #[serde(default)]
    pub prefix_mode: PrefixMode,
    /// Seconds after which a call still running becomes a task, for a caller that declared the
    /// tasks extension (an upstream's `tasks = false` opts out). Default 1.
    #[serde(default)]
    pub task_after_secs: Option<f64>,
    /// Policy rules in CEL (`[[policy]]`), checked before every use of an entry and on every list
    /// (see [`PolicyRule`]). None: what the upstreams' `scopes` and `principals` allow.
    #[serde(rename = "policy", default)]
    pub policies: Vec<PolicyRule>,
}

/// How the HTTP endpoint checks its callers' access tokens (stdio has no tokens: its caller
/// is the process that started the gateway).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthorizationConfig {
    /// The endpoint's canonical URI: the audience (`resource`) its tokens must be issued for.
    pub resource: String,
    /// The authorization server's issuer identifier, exactly as in its metadata.
    pub issuer: String,
    /// Introspect tokens (RFC 7662) as this client instead of verifying them as JWTs (RFC 9068)
    /// with the issuer's keys.
    #[serde(default)]
    pub introspection: Option<IntrospectionConfig>,
    /// Scopes every request needs.
    #[serde(default)]
    pub required_scopes: Vec<String>,
    /// Leave out of the lists what a caller's token lacks the scopes for (default: list it, and
    /// a call gets 403 `insufficient_scope`, which lets the client step up). Entries of an
    /// upstream whose `principals` leave the caller out are never listed.
    #[serde(default)]
    pub list_only_permitted: bool,
}

/// The Redis every instance of one deployment shares: legacy sessions (and their SSE events, for
/// `Last-Event-ID` on any instance), tasks, and used single-use states; with `state_secret`,
/// every instance opens the `requestState` another sealed. Each instance follows its upstreams
/// itself, so list changes and resource updates reach its own callers without Redis.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedisConfig {
    /// `redis://host:port/db`.
    pub url: String,
    /// The prefix of this deployment's keys (default `mcp-gateway:`).
    #[serde(default)]
    pub prefix: Option<String>,
    /// The secret every instance seals `requestState` with (at least 32 random bytes); none: one
    /// random key per process, and a multi-round request must come back to its instance.
    #[serde(default)]
    pub state_secret: Option<String>,
}

/// The gateway's credentials at the authorization server's introspection endpoint.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntrospectionConfig {
    /// The gateway's client id.
    pub client_id: String,
    /// Its secret.
    pub client_secret: String,
    /// The endpoint, instead of the one in the issuer's metadata.
    #[serde(default)]
    pub endpoint: Option<String>,
}

/// When the gateway lists a tool or prompt under its upstream's prefix. A `rename` rule always
/// applies; resource and template URIs are never rewritten (so a tool's MCP App,
/// `_meta.ui.resourceUri`, stays its own upstream's in every mode).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PrefixMode {
    /// Every name, under `<prefix>_<name>` (the prefix defaults to the upstream's name).
    #[default]
    Always,
    /// Names as the upstreams list them, except where one clashes with the name of an upstream
    /// configured before: that one is prefixed (logged once).
    Conditional,
    /// Names as the upstreams list them: a clash is refused at start; after start, the
    /// upstream configured first keeps the name, the other's entry is left out (logged).
    Never,
}

/// What the gateway's `tools/list` lists (`catalogue`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CatalogueMode {
    /// Every tool of every upstream the caller may see.
    #[default]
    Plain,
    /// Two tools: `search_tools` (BM25 over the names, descriptions and arguments of the tools the
    /// caller may see; their full definitions, best first) and `call_tool` (calls one by name, as
    /// a direct call would). Direct calls of the tools still work.
    Search,
}

impl Config {
    /// How long a call runs before it becomes a task (for callers with the tasks extension).
    pub fn task_after(&self) -> Duration {
        Duration::from_secs_f64(self.task_after_secs.unwrap_or(1.0).max(0.0))
    }

    /// What differs from `running` that a reload cannot change (the endpoint, its
    /// authorization, Redis, the audit log, when a call becomes a task): kept as it is until a
    /// restart.
    pub fn restart_only_changes(&self, running: &Config) -> Vec<&'static str> {
        let fields = [
            ("listen", self.listen != running.listen),
            ("authorization", self.authorization != running.authorization),
            ("redis", self.redis != running.redis),
            ("audit", self.audit != running.audit),
            ("task_after_secs", self.task_after_secs != running.task_after_secs),
        ];
        fields.into_iter().filter(|(_, changed)| *changed).map(|(field, _)| field).collect()
    }

    /// Reads and checks a TOML configuration.
    pub fn from_toml(text: &str) -> Result<Config, String> {
        let config: Config = toml::from_str(text).map_err(|e| e.to_string())?;
        config.check()?;
        Ok(config)
    }

    /// Every upstream has a unique name and is well formed ([`UpstreamConfig`]'s checks), and
    /// so are the endpoint's scopes and the policy rules.
    pub fn check(&self) -> Result<(), String> {
        let mut names = std::collections::BTreeSet::new();
        check_seconds("task_after_secs", self.task_after_secs)?;
        for upstream in &self.upstreams {
            if !names.insert(upstream.name.as_str()) {
                return Err(format!("two upstreams are named `{}`", upstream.name));
            }
            upstream.check(self.authorization.is_some())?;
        }
        let required = self.authorization.iter().flat_map(|a| a.required_scopes.iter());
        if let Some(bad) = required.clone().find(|scope| !mcp_server::auth::is_scope_token(scope)) {
            return Err(format!(
                "[authorization] required_scopes: {bad:?} is not an OAuth scope-token (RFC 6749: no space, quote, \
                 backslash or control character)"
            ));
        }
        // Compiled here to be refused at load, with where the error is; `Gateway::start` compiles
        // them again for itself.
        crate::policy::Policy::compile(&self.policies)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
