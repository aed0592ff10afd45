//! One upstream server: its connections (kept up by its [`supervise`] task; with
//! `identity = "exchange"`, also one per caller: [`identity`]), the one a request goes to, and
//! what it lists (tools, prompts, resources, templates) as last listed.
//! An OpenAPI upstream has no connection: its document is kept loaded (`rest`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use mcp_client::auth::{OAuth, OAuthBuilder, SubjectToken};
use mcp_client::{Client, ElicitationModes, Era, EraPreference, HandlerError, Handlers, StderrMode, StdioCommand};
use mcp_server::Principal;
use mcp_types::SamplingCapability;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};

use crate::config::{Identity, UpstreamConfig, UpstreamOAuth};

mod attempt;
mod identity;
mod lists;
mod rest;
mod supervise;
#[cfg(test)]
mod tests;

use identity::Identities;
pub(crate) use lists::{Hints, Lists};
pub(crate) use supervise::{Change, Report, supervise};

/// What a stdio upstream keeps of the gateway's environment without `inherit_env`: `PATH`, to
/// find programs (`npx`, `uvx`, and what they run); on Windows also `SYSTEMROOT`, without
/// which programs fail to start there.
#[cfg(not(windows))]
const KEPT_ENV: &[&str] = &["PATH"];
#[cfg(windows)]
const KEPT_ENV: &[&str] = &["PATH", "SYSTEMROOT"];

const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const LAST_BACKOFF: Duration = Duration::from_secs(30);

/// An upstream and what the gateway knows of it now.
pub(crate) struct Upstream {
    pub(crate) config: UpstreamConfig,
    /// Its connections: one, or one per process of a stdio pool (`pool`).
    members: Vec<Member>,
    /// Held while a request picks its member, so that two at once do not both see the same one
    /// as the least busy.
    picking: Mutex<()>,
    /// The requests it may be sent at once (`max_concurrent_requests`), if limited.
    slots: Option<Arc<Semaphore>>,
    /// The gateway's own OAuth client for it (`[upstream.oauth]`), kept across reconnections.
    oauth: Option<OAuth>,
    /// With `identity = "exchange"`: each caller's credentials and connection.
    callers: Option<Callers>,
    /// Why `era = "auto"` speaks the legacy era to it, once it does (`crate::era`).
    legacy_because: OnceLock<String>,
    /// Held while deciding that, so that calls refused at once lead to one decision; holds when
    /// the upstream last failed the legacy handshake, and what the caller was told.
    choosing: tokio::sync::Mutex<Option<(std::time::Instant, String)>>,
    /// Counts the connections that came up, of every process: a call waiting for one in the
    /// legacy era watches it.
    connections: watch::Sender<u64>,
}

/// The callers of an upstream of `identity = "exchange"`, and the HTTP clients their connections
/// share (one connection pool to the upstream, one to the authorization server).
struct Callers {
    identities: Identities,
    upstream_http: reqwest::Client,
    authorization_http: reqwest::Client,
}

/// One connection of an upstream (one process of a pool), supervised on its own.
struct Member {
    state: Mutex<State>,
    /// Woken when a call suspects the connection (a transport error): check it at once.
    suspect: Notify,
    /// Counts finished connection attempts, so that start-up can wait for the first one.
    attempts: watch::Sender<u64>,
    /// Requests sent on this connection and not yet answered.
    in_flight: Arc<AtomicUsize>,
}

/// A connection chosen for one request; it counts as in flight until dropped.
pub(crate) struct Lease {
    pub(crate) client: Client,
    pub(crate) in_flight: InFlight,
}

/// One request in flight on a member (pool selection counts these).
pub(crate) struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[derive(Default)]
struct State {
    client: Option<Client>,
    /// An OpenAPI upstream's API, while its document is loaded (`rest`): it has no client.
    api: Option<Arc<crate::openapi::Api>>,
    lists: Arc<Lists>,
    /// Why the upstream is not connected, when it is not.
    down_because: Option<String>,
}

impl Upstream {
    pub(crate) fn new(config: UpstreamConfig) -> Upstream {
        let slots = config.max_concurrent_requests.map(|n| Arc::new(Semaphore::new(n.max(1))));
        let members = (0..config.pool_size())
            .map(|_| Member {
                state: Mutex::new(State { down_because: Some("not connected yet".to_owned()), ..State::default() }),
                suspect: Notify::new(),
                attempts: watch::Sender::new(0),
                in_flight: Arc::default(),
            })
            .collect();
        let oauth = config.oauth.as_ref().map(|oauth| client_of(oauth).client_credentials().build());
        let callers = (config.identity == Identity::Exchange).then(|| Callers {
            identities: Identities::new(config.max_identities()),
            upstream_http: reqwest::Client::builder()
                .pool_idle_timeout(config.idle_connection())
                .build()
                .expect("a reqwest client without TLS options"),
            // As mcp-client's own: no redirect takes a caller's token elsewhere.
            authorization_http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(Duration::from_secs(30))
                .build()
                .expect("a reqwest client without TLS options"),
        });
        Upstream {
            slots,
            config,
            members,
            picking: Mutex::new(()),
            oauth,
            callers,
            legacy_because: OnceLock::new(),
            choosing: tokio::sync::Mutex::new(None),
            connections: watch::Sender::new(0),
        }
    }

    /// Left out of the configuration by a reload (its supervisor stopped first): it takes no new
    /// request, and its connections close once the requests in flight on them have had their
    /// time (`timeout_secs`).
    pub(crate) fn retire(&self) {
        for member in &self.members {
            if let Some(client) = member.set_down("removed from the configuration".to_owned()) {
                retire(client, self.config.timeout());
            }
        }
    }

    /// What must never reach a caller or the log: its configured header values, its client
    /// secret and the tokens it holds now (its callers' tokens and those exchanged for them).
    pub(crate) fn secrets(&self) -> Vec<String> {
        let mut secrets: Vec<String> = self.config.headers.values().cloned().collect();
        secrets.extend(self.config.env.values().cloned());
        if let Some(oauth) = &self.config.oauth {
            secrets.push(oauth.client_secret.clone());
        }
        if let Some(tokens) = self.oauth.as_ref().and_then(mcp_client::auth::OAuth::tokens) {
            secrets.push(tokens.access_token.expose().to_owned());
            secrets.extend(tokens.refresh_token.map(|t| t.expose().to_owned()));
        }
        if let Some(callers) = &self.callers {
            callers.identities.secrets(&mut secrets);
        }
        secrets
    }

    /// A failure of this upstream, `what` it was doing: logged whole (redacted) under a new
    /// request id; returned as what a caller may read (the kind of failure and that id).
    pub(crate) fn failure(&self, what: &str, error: &mcp_client::Error) -> String {
        let id = crate::failure::request_id();
        let detail = crate::failure::redact(&crate::failure::error_chain(error), &self.secrets());
        // Debug-formatted: an error page's line breaks stay escaped, inside one log line.
        tracing::warn!(upstream = self.name(), request_id = %id, error = ?detail, "upstream failed {what}");
        format!("{} (request id {id})", crate::failure::kind(error))
    }

    pub(crate) fn name(&self) -> &str {
        &self.config.name
    }

    /// Connection attempts finished, of every process.
    pub(crate) fn attempts(&self) -> u64 {
        self.members.iter().map(|member| *member.attempts.borrow()).sum()
    }

    /// Where the upstream is: its URL, or the program it runs.
    fn target(&self) -> &str {
        match (&self.config.url, &self.config.command) {
            (Some(url), _) => url,
            (None, Some(command)) => &command[0],
            (None, None) => self.config.openapi.as_deref().unwrap_or_default(),
        }
    }

    /// `Ok` while a connection is up, else why none is (the first one's reason).
    pub(crate) fn up(&self) -> Result<(), String> {
        match self.primary() {
            Some(_) => Ok(()),
            None => Err(self.members[0].state.lock().expect("not poisoned").down_because.clone().unwrap_or_default()),
        }
    }

    /// A connected client for one request: of a pool, the process with the fewest requests in
    /// flight (the first of those on a tie); or why none is connected.
    pub(crate) fn lease(&self) -> Result<Lease, String> {
        // Up, with no member to lease: each connected process of a pool ended, unnoticed yet.
        self.lease_where(|_| true).ok_or_else(|| self.up().err().unwrap_or_else(|| "its process ended".to_owned()))
    }

    /// A connection for one request made for `caller`: the shared one (`identity = "gateway"`),
    /// or the caller's own (`"exchange"`); else why none can serve it, naming the upstream.
    pub(crate) async fn lease_for(&self, caller: &Principal) -> Result<Lease, String> {
        match &self.callers {
            None => self.lease().map_err(|why| format!("upstream `{}` is unavailable: {why}", self.name())),
            // Boxed: it may connect, and a connection's future would otherwise be part of every
            // request's, moved with it whatever the path (about 10 KiB).
            Some(callers) => Box::pin(self.caller_lease(callers, caller)).await,
        }
    }

    /// Like [`Upstream::lease_for`], in the legacy era (after [`Upstream::choose_legacy`]).
    pub(crate) async fn legacy_lease_for(&self, caller: &Principal) -> Result<Lease, String> {
        match &self.callers {
            None => Box::pin(self.legacy_lease()).await,
            // Its connection is replaced, being in the era no longer used.
            Some(callers) => Box::pin(self.caller_lease(callers, caller)).await,
        }
    }

    /// The caller's own connection, made (its token exchanged at the first challenge) when it
    /// has none, or has one in an era no longer used. Never the gateway's identity: a request
    /// without a caller's token fails.
    async fn caller_lease(&self, callers: &Callers, caller: &Principal) -> Result<Lease, String> {
        let name = self.name();
        let identity = self.identity_of(callers, caller)?;
        let connect = |oauth: OAuth| async move { self.connect_in(self.preference(), Some((callers, oauth))).await };
        let (client, replaced) =
            identity.connection(|client| !self.outdated(client), connect).await.map_err(|error| {
                let failure = self.failure("connecting as its caller", &error);
                format!("upstream `{name}` could not be reached as the caller: {failure}")
            })?;
        if let Some(replaced) = replaced {
            retire(replaced, self.config.timeout());
        }
        identity.in_flight.fetch_add(1, Ordering::Relaxed);
        Ok(Lease { client, in_flight: InFlight(Arc::clone(&identity.in_flight)) })
    }

    /// The credentials of one request made for `caller` to an OpenAPI upstream: the gateway's own
    /// (`identity = "gateway"`: `[upstream.oauth]`, if any), or the caller's token exchanged for
    /// one of this upstream (`"exchange"`), never the gateway's in place of a caller's.
    pub(crate) fn oauth_for(&self, caller: &Principal) -> Result<Option<OAuth>, String> {
        match &self.callers {
            None => Ok(self.oauth.clone()),
            Some(callers) => Ok(Some(self.identity_of(callers, caller)?.oauth.clone())),
        }
    }

    /// The caller's identity here (its exchanged token, its connection), made at its first
    /// request; a request without a caller's token fails.
    fn identity_of(&self, callers: &Callers, caller: &Principal) -> Result<Arc<identity::Identity>, String> {
        let Some((token, raw)) = caller.token().and_then(|token| Some((token, token.access_token()?))) else {
            return Err(format!(
                "upstream `{}` serves each caller as itself (identity = \"exchange\"), and this request carries no \
                 access token to exchange (a caller over stdio, or an endpoint without [authorization]); the \
                 gateway's own identity never stands in for a caller's",
                self.name()
            ));
        };
        let exchange = |subject| self.exchange_as(callers, subject);
        let (identity, evicted) = callers.identities.of(caller.as_str(), token, raw, exchange);
        if let Some(client) = evicted.and_then(|evicted| evicted.take_connection()) {
            retire(client, self.config.timeout());
        }
        Ok(identity)
    }

    /// The OAuth client that exchanges a caller's token (`subject`) for one of this upstream.
    fn exchange_as(&self, callers: &Callers, subject: SubjectToken) -> OAuth {
        let oauth = self.config.oauth.as_ref().expect("checked: `identity = \"exchange\"` has `[upstream.oauth]`");
        client_of(oauth).token_exchange(subject).http_client(callers.authorization_http.clone()).build()
    }

    /// Like [`Upstream::lease`], among the connections that `usable` accepts.
    fn lease_where(&self, usable: impl Fn(&Client) -> bool) -> Option<Lease> {
        let _picking = (self.members.len() > 1).then(|| self.picking.lock().expect("not poisoned"));
        let mut best: Option<(usize, Client, &Member)> = None;
        for member in &self.members {
            let Some(client) = member.state.lock().expect("not poisoned").client.clone() else { continue };
            // Of a pool, a process that ended is passed over before its supervisor replaces it: a
            // call sent to it would fail unsent. (A lone connection has nothing to pass over to.)
            if !usable(&client) || (self.members.len() > 1 && client.is_closed()) {
                continue;
            }
            let load = member.in_flight.load(Ordering::Relaxed);
            if best.as_ref().is_none_or(|(least, ..)| load < *least) {
                best = Some((load, client, member));
            }
        }
        let (_, client, member) = best?;
        member.in_flight.fetch_add(1, Ordering::Relaxed);
        Some(Lease { client, in_flight: InFlight(Arc::clone(&member.in_flight)) })
    }

    /// The era to negotiate: the configured one, but legacy once `auto` has chosen it.
    fn preference(&self) -> EraPreference {
        match self.legacy_because.get() {
            Some(_) => EraPreference::Legacy,
            None => self.config.era.preference(),
        }
    }

    /// Whether `auto` chose the legacy era for this upstream ([`Upstream::choose_legacy`]).
    pub(crate) fn chose_legacy(&self) -> bool {
        self.legacy_because.get().is_some()
    }

    /// Whether `client` speaks an era this upstream no longer uses (`auto` chose legacy since).
    fn outdated(&self, client: &Client) -> bool {
        self.legacy_because.get().is_some() && client.era() == Era::Modern
    }

    /// After the upstream refused, in the 2026-07-28 era, to send `asked` while serving a call
    /// (`crate::era`): makes the legacy era its era if it speaks it (checked with a handshake of
    /// its own, once), its connections being replaced; `Err` says why not, naming the upstream.
    /// Only for `era = "auto"`.
    pub(crate) async fn choose_legacy(&self, asked: &str) -> Result<(), String> {
        /// How long a failed legacy handshake stands for the next refusals, instead of another.
        const RECHECK: Duration = Duration::from_secs(60);
        let mut failed = self.choosing.lock().await;
        if self.legacy_because.get().is_some() {
            return Ok(());
        }
        if let Some((at, told)) = failed.as_ref()
            && at.elapsed() < RECHECK
        {
            return Err(told.clone());
        }
        let name = self.name();
        match self.connect_in(EraPreference::Legacy, None).await {
            Ok(probe) => probe.close().await,
            Err(error) => {
                let failure = self.failure("connecting in the legacy era", &error);
                let told = format!(
                    "upstream `{name}` cannot send `{asked}` in the 2026-07-28 era, and connecting to it in the \
                     legacy era failed ({failure}): its tools that ask their caller cannot be used through the gateway"
                );
                *failed = Some((std::time::Instant::now(), told.clone()));
                return Err(told);
            }
        }
        let because = format!("it cannot send `{asked}` in the 2026-07-28 era");
        tracing::warn!(
            upstream = name,
            because,
            "era = \"auto\" now speaks the legacy era to this upstream, until the gateway restarts \
             (set `era = \"legacy\"` for it to start there)"
        );
        let _ = self.legacy_because.set(because);
        // Each connection's supervisor sees it is outdated and replaces it.
        self.suspect();
        Ok(())
    }

    /// A connection in the legacy era for one request, waiting for one to come up (after
    /// [`Upstream::choose_legacy`]) for at most the upstream's `timeout_secs`.
    async fn legacy_lease(&self) -> Result<Lease, String> {
        let mut connections = self.connections.subscribe();
        let wait = async {
            loop {
                connections.borrow_and_update();
                if let Some(lease) = self.lease_where(|client| client.era() == Era::Legacy) {
                    return lease;
                }
                // The sender is this upstream's, so it outlives the wait.
                let _ = connections.changed().await;
            }
        };
        tokio::time::timeout(self.config.timeout(), wait).await.map_err(|_| {
            format!(
                "upstream `{}` did not come up in the legacy era within {:?} (its tools that ask their \
                 caller need it): {}",
                self.name(),
                self.config.timeout(),
                self.up().err().unwrap_or_else(|| "still connecting".to_owned())
            )
        })
    }

    /// The first connected member: what it lists is what the upstream lists, and only its
    /// resource updates are passed on (every process of a pool would report the same change).
    fn primary(&self) -> Option<usize> {
        self.members.iter().position(|m| m.state.lock().expect("not poisoned").is_up())
    }

    /// What it lists now, under its own names (its first connected member's lists); `None`
    /// while it is down. One look at each member, so that the two agree.
    pub(crate) fn current(&self) -> Option<Arc<Lists>> {
        self.members.iter().find_map(|member| {
            let state = member.state.lock().expect("not poisoned");
            state.is_up().then(|| Arc::clone(&state.lists))
        })
    }

    /// A slot for one request, waiting (up to the upstream's queue timeout) while all are taken;
    /// `None` when the upstream has no limit.
    pub(crate) async fn slot(&self) -> Result<Option<OwnedSemaphorePermit>, String> {
        let Some(slots) = &self.slots else { return Ok(None) };
        let limit = self.config.max_concurrent_requests.unwrap_or_default();
        match tokio::time::timeout(self.config.queue_timeout(), Arc::clone(slots).acquire_owned()).await {
            Ok(Ok(permit)) => Ok(Some(permit)),
            _ => Err(format!(
                "upstream `{}` is busy: none of its {limit} concurrent requests finished within {:?}",
                self.name(),
                self.config.queue_timeout()
            )),
        }
    }

    /// A call failed in a way that may mean a connection is gone: check them all at once.
    pub(crate) fn suspect(&self) {
        self.members.iter().for_each(|m| m.suspect.notify_one());
    }

    /// Waits until the first connection attempt of every member has ended, either way.
    pub(crate) async fn first_attempt(&self) {
        for member in &self.members {
            let mut attempts = member.attempts.subscribe();
            let _ = attempts.wait_for(|&n| n > 0).await;
        }
    }

    async fn connect(&self) -> Result<Client, mcp_client::Error> {
        self.connect_in(self.preference(), None).await
    }

    /// A connection in `era`: as the gateway, or (`caller`: the callers' shared HTTP clients,
    /// and one caller's exchange) as that caller.
    async fn connect_in(
        &self,
        era: EraPreference,
        caller: Option<(&Callers, OAuth)>,
    ) -> Result<Client, mcp_client::Error> {
        let mut builder = Client::builder("mcp-gateway", env!("CARGO_PKG_VERSION"))
            .handlers(unrouted(caller.is_some()))
            .request_timeout(self.config.timeout())
            // A question the gateway holds for its caller's retry is a server request being
            // answered all that time: the held requests' own bound is what limits them.
            .max_server_requests(crate::bridge::MAX_HELD)
            .max_list_pages(self.config.max_list_pages())
            .era(era);
        match (&self.config.command, &self.config.url) {
            (Some(command), _) => {
                // Its stderr goes to the log, a line at a time, each line bounded. The supervisor
                // restarts it; a call in flight when it died fails, naming the upstream, instead
                // of being sent again to the new process.
                let mut stdio = StdioCommand::new(&command[0])
                    .args(&command[1..])
                    .stderr(StderrMode::Capture)
                    .restart_on_exit(false);
                // The gateway's environment holds its own secrets (and a stdio upstream's `env`
                // may hold another's): a process gets only what it needs to start, unless its
                // configuration says to inherit.
                if !self.config.inherit_env {
                    stdio = stdio.env_clear();
                    for name in KEPT_ENV {
                        if let Some(value) = std::env::var_os(name) {
                            stdio = stdio.env(name, value);
                        }
                    }
                }
                for (key, value) in &self.config.env {
                    stdio = stdio.env(key, value);
                }
                builder.connect_stdio(stdio).await
            }
            (None, Some(url)) => {
                for (name, value) in &self.config.headers {
                    builder = builder.http_header(name, value);
                }
                match caller {
                    // The caller's exchange alone: never the gateway's token. The callers'
                    // connections share one pool of connections to the upstream.
                    Some((callers, exchange)) => {
                        builder = builder.oauth(exchange).http_client(callers.upstream_http.clone());
                    }
                    // mcp-client's own sender: for an `http://` upstream, a kept connection
                    // with the URL prepared once.
                    None => {
                        if let Some(oauth) = &self.oauth {
                            builder = builder.oauth(oauth.clone());
                        }
                        builder = builder.http_idle_timeout(self.config.idle_connection());
                    }
                }
                builder.connect_http(url).await
            }
            (None, None) => unreachable!("the configuration was checked"),
        }
    }
}

impl State {
    /// Connected (an MCP upstream), or its OpenAPI document loaded.
    fn is_up(&self) -> bool {
        self.client.is_some() || self.api.is_some()
    }
}

impl Member {
    fn set_up(&self, client: Client, lists: Lists) {
        let lists = Arc::new(lists);
        *self.state.lock().expect("not poisoned") = State { client: Some(client), lists, ..State::default() };
    }

    fn set_lists(&self, lists: Lists) {
        self.state.lock().expect("not poisoned").lists = Arc::new(lists);
    }

    fn set_down(&self, why: String) -> Option<Client> {
        let mut state = self.state.lock().expect("not poisoned");
        state.lists = Arc::default();
        state.api = None;
        state.down_because = Some(why);
        state.client.take()
    }
}

/// The client-wide handlers of an upstream connection. A legacy server learns at the
/// handshake what its client may be asked: each request's questions go to its own caller
/// (`CallOptions::on_input`), and these answer only those no request can be told apart for, with
/// an error (a stdio server asking while several requests are in flight).
///
/// Roots are a legacy session's, not a request's: a server keeps them and serves every later
/// request under them. A session that all callers share (`one_caller` false) declares none, so
/// that no caller's roots become another's; a caller's own session (`identity = "exchange"`)
/// declares them, and its calls answer with that caller's.
fn unrouted(one_caller: bool) -> Handlers {
    fn refuse() -> HandlerError {
        HandlerError(
            "the gateway cannot tell which of its callers this question is for \
             (its transport does not say which request it belongs to)"
                .to_owned(),
        )
    }
    let handlers = Handlers::new()
        .elicitation(ElicitationModes::BOTH, |_| async { Err(refuse()) })
        .sampling(SamplingCapability::default(), |_| async { Err(refuse()) });
    if one_caller { handlers.roots(|| async { Err(refuse()) }) } else { handlers }
}

/// An OAuth client of `[upstream.oauth]`, its credentials pinned to its `issuer`; the grant is
/// the caller's to choose.
fn client_of(oauth: &UpstreamOAuth) -> OAuthBuilder {
    let mut client = OAuth::builder().client_id(&oauth.client_id).client_secret(oauth.client_secret.clone());
    if let Some(issuer) = &oauth.issuer {
        client = client.authorization_server(issuer).client_issuer(issuer);
    }
    if !oauth.scopes.is_empty() {
        client = client.scopes(oauth.scopes.iter().cloned());
    }
    match oauth.dpop {
        Some(dpop) => client.dpop(dpop),
        None => client,
    }
}

/// Closes a replaced connection once the requests in flight on it have had their time
/// (`timeout_secs`, after which the client has given up on them anyway).
fn retire(client: Client, after: Duration) {
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        client.close().await;
    });
}
