//! The gateway: its upstreams supervised, their lists in one catalogue, and the downstream
//! server (and HTTP application) that serves it.

use std::sync::Arc;

use mcp_server::Server;

use crate::catalogue::Catalogue;
use crate::config::{self, Config};
use crate::index::Clash;
use crate::live::Live;
use crate::upstream::{self, Upstream};

/// With `[redis]`, the DPoP proofs of one key held in the shared replay store at most (about 130
/// requests a second per client: a proof's `jti` is kept for up to two minutes).
const DPOP_PROOFS_PER_KEY: u64 = 16_384;

/// Why the gateway did not start.
#[derive(Debug)]
pub enum StartError {
    /// The configuration is invalid.
    Config(String),
    /// Two upstreams list a tool under the same name.
    Clash(Clash),
    /// The downstream server could not be built.
    Server(String),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Config(why) => write!(f, "invalid configuration: {why}"),
            StartError::Clash(clash) => clash.fmt(f),
            StartError::Server(why) => write!(f, "the downstream server: {why}"),
        }
    }
}

impl std::error::Error for StartError {}

/// A running gateway: its upstreams supervised, its downstream [`Server`] ready to serve.
pub struct Gateway {
    server: Server,
    live: Arc<Live>,
    authorization: Option<config::AuthorizationConfig>,
    /// The Redis the instances of a deployment share, if configured.
    redis: Option<mcp_server_redis::Redis>,
    /// Tells the catalogue in service what an upstream reports.
    report: upstream::Report,
    /// The configuration in service and each upstream's supervisor; a reload holds it.
    running: tokio::sync::Mutex<Running>,
    /// What the last resource server [`http_config`](Self::http_config) built was built with.
    endpoint: std::sync::Mutex<Option<Endpoint>>,
}

/// What a reload replaces.
struct Running {
    config: Config,
    supervisors: Vec<(Arc<Upstream>, tokio::task::JoinHandle<()>)>,
}

impl Gateway {
    /// Connects to every upstream (waiting for each one's first attempt; one that fails is
    /// retried in the background), checks that no two list the same name, and builds the
    /// downstream server.
    pub async fn start(config: &Config) -> Result<Gateway, StartError> {
        config.check().map_err(StartError::Config)?;
        // Opened first: a gateway that cannot keep its audit log does not serve.
        let audit = config.audit.as_deref().map(crate::audit::Audit::open).transpose().map_err(StartError::Config)?;
        let upstreams: Vec<Arc<Upstream>> =
            config.upstreams.iter().cloned().map(|c| Arc::new(Upstream::new(c))).collect();
        let catalogue = Arc::new(catalogue_of(config, upstreams.clone(), Arc::default()).map_err(StartError::Config)?);
        let live = Arc::new(Live::new(Arc::clone(&catalogue)));
        let report: upstream::Report = {
            let live = Arc::downgrade(&live);
            Arc::new(move |change| {
                let Some(live) = live.upgrade() else { return };
                let catalogue = live.get();
                match change {
                    upstream::Change::Lists => catalogue.changed(),
                    // The server tells the callers that subscribed to it (or to a prefix of it), if
                    // the upstream owns it.
                    upstream::Change::ResourceUpdated(upstream, uri) => catalogue.resource_updated(&upstream, uri),
                }
            })
        };
        let supervisors: Vec<_> = upstreams.iter().map(|upstream| supervised(upstream, &report)).collect();
        crate::metrics::watch({
            let live = Arc::downgrade(&live);
            move || live.upgrade().map(|live| live.get().upstreams.clone()).unwrap_or_default()
        });
        futures::future::join_all(upstreams.iter().map(|u| u.first_attempt())).await;
        if let Some(clash) = catalogue.start().into_iter().next() {
            supervisors.iter().for_each(|(_, supervisor)| supervisor.abort());
            return Err(StartError::Clash(clash));
        }
        let redis = match &config.redis {
            Some(shared) => Some(
                mcp_server_redis::Redis::open(&shared.url)
                    .map_err(|e| StartError::Config(format!("[redis] url {}: {e}", shared.url)))?
                    .with_prefix(shared.prefix.as_deref().unwrap_or("mcp-gateway:")),
            ),
            None => None,
        };
        let mut options = mcp_server::Options::default();
        options.list_only_permitted = config.authorization.as_ref().is_some_and(|a| a.list_only_permitted);
        options.task_grace = config.task_after();
        let mut builder = Server::builder("mcp-gateway", env!("CARGO_PKG_VERSION")).options(options);
        if let Some(redis) = &redis {
            builder = builder
                .task_store(Arc::new(redis.task_store()))
                .used_state_store(Arc::new(redis.used_state_store()))
                .session_store(Arc::new(redis.session_store()));
        }
        if let Some(secret) = config.redis.as_ref().and_then(|shared| shared.state_secret.as_deref()) {
            let key = mcp_server::StateKey::from_secret(secret.as_bytes());
            builder = builder.state_keyring(mcp_server::StateKeyring::new("shared", key));
        }
        if let Some(audit) = audit {
            builder = builder.layer(crate::audit::layer(Arc::new(audit), Arc::downgrade(&live)));
        }
        let server = builder
            .tool_source(Arc::clone(&live) as Arc<dyn mcp_server::dynamic::ToolSource>)
            .prompt_source(Arc::clone(&live) as Arc<dyn mcp_server::dynamic::PromptSource>)
            .resource_source(Arc::clone(&live) as Arc<dyn mcp_server::dynamic::ResourceSource>)
            .skill_source(Arc::clone(&live) as Arc<dyn mcp_server::dynamic::SkillSource>)
            .completion({
                let live = Arc::downgrade(&live);
                move |ctx: mcp_server::Context, params| {
                    let catalogue = live.upgrade().map(|live| live.get());
                    async move {
                        match catalogue {
                            Some(catalogue) => catalogue.complete(ctx.principal(), params).await,
                            None => Err(mcp_server::Error::internal("the gateway is stopping")),
                        }
                    }
                }
            })
            .build()
            .map_err(|e| StartError::Server(e.to_string()))?;
        let _ = catalogue.server.set(server.clone());
        let running = Running { config: config.clone(), supervisors };
        let gateway = Gateway {
            server,
            live,
            report,
            running: tokio::sync::Mutex::new(running),
            authorization: config.authorization.clone(),
            redis,
            endpoint: std::sync::Mutex::new(None),
        };
        if let Some(authorization) = gateway.http_config().authorization {
            check_authorization(&authorization).await?;
        }
        Ok(gateway)
    }

    /// Serves `config` from the next request on, without dropping a session or a request in
    /// flight: an upstream whose configuration is unchanged keeps its connections; a new or
    /// changed one is connected first (its first attempt), then the whole catalogue (names,
    /// visibility, search mode) is replaced at once, and the connections of a removed or
    /// changed upstream close once their requests in flight have had their time. An invalid
    /// configuration, or one whose new upstreams clash with the others, is refused and the
    /// running one kept. Settings the running endpoint was built with (`listen`,
    /// `[authorization]`, `[redis]`, `audit`, `task_after_secs`) need a restart: a change to
    /// them is kept out, and said in the result.
    pub async fn reload(&self, config: &Config) -> Result<Reloaded, StartError> {
        config.check().map_err(StartError::Config)?;
        let mut running = self.running.lock().await;
        let mut reloaded =
            Reloaded { restart_needed: config.restart_only_changes(&running.config), ..Reloaded::default() };
        let before = self.live.get();
        let mut fresh = Vec::new();
        let upstreams: Vec<Arc<Upstream>> = config
            .upstreams
            .iter()
            .map(|wanted| match running.supervisors.iter().find(|(u, _)| u.config == *wanted) {
                Some((kept, _)) => Arc::clone(kept),
                None => {
                    let upstream = Arc::new(Upstream::new(wanted.clone()));
                    let known = running.supervisors.iter().any(|(u, _)| u.name() == wanted.name);
                    match known {
                        true => reloaded.replaced.push(wanted.name.clone()),
                        false => reloaded.added.push(wanted.name.clone()),
                    }
                    fresh.push(supervised(&upstream, &self.report));
                    upstream
                }
            })
            .collect();
        futures::future::join_all(fresh.iter().map(|(u, _)| u.first_attempt())).await;
        let next = match catalogue_of(config, upstreams, before.held()) {
            Ok(next) => Arc::new(next),
            Err(error) => {
                fresh.iter().for_each(|(_, supervisor)| supervisor.abort());
                return Err(StartError::Config(error));
            }
        };
        let clashes = next.start();
        // Clashes among the upstreams that stayed are the running catalogue's own (left out as
        // after any list change); one that a new upstream brings is the configuration's fault.
        let is_fresh = |name: &str| fresh.iter().any(|(u, _)| u.name() == name);
        if let Some(clash) = clashes.into_iter().find(|c| is_fresh(&c.first.0) || is_fresh(&c.second.0)) {
            fresh.iter().for_each(|(_, supervisor)| supervisor.abort());
            return Err(StartError::Clash(clash));
        }
        if let (Some(authorization), Some(built)) = (&self.authorization, &*self.endpoint.lock().unwrap()) {
            reloaded.restart_needed.extend(Endpoint::of(authorization, &next).restart_needed(built));
        }
        let _ = next.server.set(self.server.clone());
        let before = self.live.replace(Arc::clone(&next));
        next.tell_changes_since(&before);
        let (stay, gone): (Vec<_>, Vec<_>) = std::mem::take(&mut running.supervisors)
            .into_iter()
            .partition(|(u, _)| next.upstreams.iter().any(|kept| Arc::ptr_eq(kept, u)));
        for (upstream, supervisor) in gone {
            supervisor.abort();
            upstream.retire();
            if !config.upstreams.iter().any(|c| c.name == upstream.name()) {
                reloaded.removed.push(upstream.name().to_owned());
            }
        }
        running.supervisors = stay.into_iter().chain(fresh).collect();
        // What needs a restart stays as the endpoint was built.
        let mut kept = config.clone();
        kept.listen.clone_from(&running.config.listen);
        kept.authorization.clone_from(&running.config.authorization);
        kept.redis.clone_from(&running.config.redis);
        kept.audit.clone_from(&running.config.audit);
        kept.task_after_secs = running.config.task_after_secs;
        running.config = kept;
        Ok(reloaded)
    }

    /// The downstream server: serve it with `mcp_server::http::serve` or `mcp_server::stdio`.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The names of the upstreams that are connected now.
    pub fn connected(&self) -> Vec<String> {
        self.live.get().upstreams.iter().filter(|u| u.up().is_ok()).map(|u| u.name().to_owned()).collect()
    }

    /// Each upstream, in configuration order, and why it is not connected (`Ok` when it is).
    pub fn upstreams(&self) -> Vec<(String, Result<(), String>)> {
        self.live.get().upstreams.iter().map(|u| (u.name().to_owned(), u.up())).collect()
    }

    /// Each upstream's connection attempts finished so far (for tests: the log says an
    /// upstream that stays down only once a minute).
    #[doc(hidden)]
    pub fn connection_attempts(&self) -> Vec<(String, u64)> {
        self.live.get().upstreams.iter().map(|u| (u.name().to_owned(), u.attempts())).collect()
    }

    /// How many names the index records now: owners of every kind, template literal starts and
    /// refused entries (bounded by what the upstreams list, plus what those that are down
    /// listed last).
    #[doc(hidden)]
    pub fn recorded_names(&self) -> usize {
        self.live.get().recorded()
    }

    /// The downstream HTTP settings the configuration asks for: its `[authorization]` (a
    /// resource server verifying the callers' tokens, listing every scope an upstream asks for
    /// in its metadata) and `[redis]` (SSE events shared), else the defaults.
    pub fn http_config(&self) -> mcp_server::http::HttpConfig {
        let mut http = mcp_server::http::HttpConfig::default();
        if let Some(redis) = &self.redis {
            // A legacy stream resumes (`Last-Event-ID`) on whichever instance gets the request.
            http.event_store = Some(Arc::new(redis.event_store()));
        }
        if let Some(authorization) = &self.authorization {
            use mcp_server::auth::{IntrospectionVerifier, JwtVerifier, ResourceServer};
            let (resource, issuer) = (&authorization.resource, &authorization.issuer);
            let builder = match &authorization.introspection {
                Some(client) => {
                    let mut verifier =
                        IntrospectionVerifier::new(issuer, resource, &client.client_id, &client.client_secret);
                    if let Some(endpoint) = &client.endpoint {
                        verifier = verifier.endpoint(endpoint);
                    }
                    ResourceServer::builder(resource, verifier)
                }
                None => ResourceServer::builder(resource, JwtVerifier::new(issuer, resource)),
            };
            // DPoP proofs are single-use across every instance of the deployment.
            let builder = match &self.redis {
                Some(redis) => builder.dpop_replay_store(Arc::new(redis.replay_store(DPOP_PROOFS_PER_KEY))),
                None => builder,
            };
            let endpoint = Endpoint::of(authorization, &self.live.get());
            let server = builder
                .keep_access_tokens(endpoint.keeps_tokens)
                .authorization_server(issuer)
                .required_scopes(authorization.required_scopes.iter().cloned())
                .scopes_supported(endpoint.scopes.iter().cloned())
                .build();
            *self.endpoint.lock().unwrap() = Some(endpoint);
            http.authorization = Some(server);
        }
        http
    }

    /// The downstream HTTP application: the MCP endpoint (at `config.path`) and the
    /// [`health_routes`](Self::health_routes). Serve it with `mcp_server::http::serve_router`,
    /// which applies `config`'s connection limits.
    pub fn router(&self, config: mcp_server::http::HttpConfig) -> axum::Router {
        mcp_server::http::router(self.server.clone(), config).merge(self.health_routes())
    }

    /// `GET /healthz` (200 while the process serves) and `GET /readyz` (200 when every upstream
    /// is connected, else 503; both with a JSON body naming each upstream's state), to serve
    /// beside the endpoint (`mcp_server::http::serve_with_routes`).
    pub fn health_routes(&self) -> axum::Router {
        use axum::http::{StatusCode, header};
        let live = Arc::clone(&self.live);
        let states = move |ready_only: bool| {
            let catalogue = live.get();
            let upstreams: serde_json::Map<String, serde_json::Value> = catalogue
                .upstreams
                .iter()
                .map(|u| {
                    (u.name().to_owned(), u.up().map_or_else(|why| format!("down: {why}"), |()| "up".into()).into())
                })
                .collect();
            let ready = catalogue.upstreams.iter().all(|u| u.up().is_ok());
            let status = if ready || !ready_only { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
            let body = serde_json::json!({ "ready": ready, "upstreams": upstreams }).to_string();
            (status, [(header::CONTENT_TYPE, "application/json")], body)
        };
        let health = states.clone();
        axum::Router::new()
            .route("/healthz", axum::routing::get(move || std::future::ready(health(false))))
            .route("/readyz", axum::routing::get(move || std::future::ready(states(true))))
    }
}

/// Whether callers' tokens can be verified as configured: an issuer whose metadata names
/// another issuer is a start error (it would not pass by itself); one that is not up yet is
/// said in the log, and its tokens are verified once it is.
async fn check_authorization(authorization: &mcp_server::auth::ResourceServer) -> Result<(), StartError> {
    use mcp_server::auth::VerifyError;
    match authorization.check().await {
        Ok(()) => tracing::info!("[authorization]: access tokens can be verified"),
        Err(VerifyError::Misconfigured(why)) => {
            return Err(StartError::Config(format!("[authorization] issuer: {why}")));
        }
        Err(error) => tracing::warn!(%error, "[authorization]: access tokens cannot be verified yet"),
    }
    Ok(())
}

impl Drop for Gateway {
    fn drop(&mut self) {
        // The supervisors own the upstream clients; a stdio child ends with its client.
        self.running.get_mut().supervisors.iter().for_each(|(_, supervisor)| supervisor.abort());
    }
}

/// The catalogue of `upstreams` as `config` lists them, under its `[[policy]]` rules, holding
/// `held`.
fn catalogue_of(
    config: &Config,
    upstreams: Vec<Arc<Upstream>>,
    held: Arc<crate::bridge::Held>,
) -> Result<Catalogue, String> {
    let policy = Arc::new(crate::policy::Policy::compile(&config.policies)?);
    Ok(Catalogue::new(upstreams, config.prefix_mode).searching(config.catalogue).policed(policy).holding(held))
}

/// `upstream` and its supervisor, started.
fn supervised(upstream: &Arc<Upstream>, report: &upstream::Report) -> (Arc<Upstream>, tokio::task::JoinHandle<()>) {
    (Arc::clone(upstream), tokio::spawn(upstream::supervise(Arc::clone(upstream), Arc::clone(report))))
}

/// What a reload changed.
/// What the endpoint's resource server is built with from the upstreams and rules: fixed until
/// a restart.
#[derive(PartialEq)]
struct Endpoint {
    /// Its metadata's `scopes_supported`: the required ones, every scope an upstream or an
    /// entry asks for, and those the rules name.
    scopes: Vec<String>,
    /// Whether verified tokens are kept: an upstream that serves each caller as itself
    /// exchanges the caller's token.
    keeps_tokens: bool,
}

impl Endpoint {
    fn of(authorization: &config::AuthorizationConfig, catalogue: &Catalogue) -> Endpoint {
        let mut scopes: Vec<String> = authorization.required_scopes.clone();
        for upstream in &catalogue.upstreams {
            scopes.extend(upstream.config.scopes.iter().cloned());
            scopes.extend(upstream.config.entry_scopes.values().flatten().cloned());
        }
        scopes.extend(catalogue.policy_scopes());
        scopes.sort();
        scopes.dedup();
        let keeps_tokens = catalogue.upstreams.iter().any(|u| u.config.identity == config::Identity::Exchange);
        Endpoint { scopes, keeps_tokens }
    }

    /// What differs from `running` and waits for a restart.
    fn restart_needed(&self, running: &Endpoint) -> Vec<&'static str> {
        let mut needed = Vec::new();
        if self.scopes != running.scopes {
            needed.push("the endpoint metadata's scopes_supported");
        }
        if self.keeps_tokens && !running.keeps_tokens {
            needed.push("keeping callers' tokens (a first identity = \"exchange\" upstream)");
        }
        needed
    }
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// Upstreams new to the configuration.
    pub added: Vec<String>,
    /// Upstreams whose configuration changed: connected anew, the old connections retired.
    pub replaced: Vec<String>,
    /// Upstreams no longer in the configuration: their connections retired.
    pub removed: Vec<String>,
    /// Settings that differ but need a restart (kept as they were).
    pub restart_needed: Vec<&'static str>,
}

impl std::fmt::Display for Reloaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |names: &[String]| if names.is_empty() { "none".to_owned() } else { names.join(", ") };
        write!(
            f,
            "added: {}; replaced: {}; removed: {}",
            list(&self.added),
            list(&self.replaced),
            list(&self.removed)
        )?;
        if !self.restart_needed.is_empty() {
            write!(f, "; needs a restart, kept as it was: {}", self.restart_needed.join(", "))?;
        }
        Ok(())
    }
}
