//! One upstream server: its connection, kept up (connected, health-checked with
//! `Client::check_alive`,
//! reconnected with backoff after a failure), and what it lists (tools, prompts, resources, templates) as last listed;
//! or an OpenAPI upstream's document kept loaded (`rest`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::StreamExt as _;
use mcp_client::{
    Client, ElicitationModes, Era, EraPreference, HandlerError, Handlers, StderrMode, StdioCommand, Subscription,
};
use mcp_types::{LoggingLevel, SamplingCapability, ServerNotification, SubscriptionFilter};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};

use crate::config::UpstreamConfig;

mod lists;
mod rest;

use lists::ListError;
pub(crate) use lists::{Hints, Lists};

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
    oauth: Option<mcp_client::auth::OAuth>,
    /// Why `era = "auto"` speaks the legacy era to it, once it does (`crate::era`).
    legacy_because: OnceLock<String>,
    /// Held while deciding that, so that calls refused at once lead to one decision; holds when
    /// the upstream last failed the legacy handshake, and what the caller was told.
    choosing: tokio::sync::Mutex<Option<(std::time::Instant, String)>>,
    /// Counts the connections that came up, of every process: a call waiting for one in the
    /// legacy era watches it.
    connections: watch::Sender<u64>,
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
        let oauth = config.oauth.as_ref().map(|oauth| {
            let mut client = mcp_client::auth::OAuth::builder()
                .client_id(&oauth.client_id)
                .client_secret(oauth.client_secret.clone())
                .client_credentials();
            if let Some(issuer) = &oauth.issuer {
                client = client.authorization_server(issuer).client_issuer(issuer);
            }
            if !oauth.scopes.is_empty() {
                client = client.scopes(oauth.scopes.iter().cloned());
            }
            client.build()
        });
        Upstream {
            slots,
            config,
            members,
            picking: Mutex::new(()),
            oauth,
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
    /// secret and the tokens it holds now.
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
        self.lease_where(|_| true).ok_or_else(|| self.up().err().unwrap_or_default())
    }

    /// Like [`Upstream::lease`], among the connections that `usable` accepts.
    fn lease_where(&self, usable: impl Fn(&Client) -> bool) -> Option<Lease> {
        let _picking = (self.members.len() > 1).then(|| self.picking.lock().expect("not poisoned"));
        let mut best: Option<(usize, Client, &Member)> = None;
        for member in &self.members {
            let Some(client) = member.state.lock().expect("not poisoned").client.clone() else { continue };
            if !usable(&client) {
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
        match self.connect_in(EraPreference::Legacy).await {
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
    pub(crate) async fn legacy_lease(&self) -> Result<Lease, String> {
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
        self.connect_in(self.preference()).await
    }

    async fn connect_in(&self, era: EraPreference) -> Result<Client, mcp_client::Error> {
        let mut builder = Client::builder("mcp-gateway", env!("CARGO_PKG_VERSION"))
            .handlers(unrouted())
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
                if let Some(oauth) = &self.oauth {
                    builder = builder.oauth(oauth.clone());
                }
                let http = reqwest::Client::builder()
                    .pool_idle_timeout(self.config.idle_connection())
                    .build()
                    .map_err(|e| mcp_client::Error::Protocol(format!("the HTTP client could not be built: {e}")))?;
                builder.http_client(http).connect_http(url).await
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
/// handshake what its client may be asked, so the gateway declares everything; each request's
/// questions go to its own caller (`CallOptions::on_input`), and these answer only those no
/// request can be told apart for (a stdio server asking while several requests are in flight),
/// with an error.
fn unrouted() -> Handlers {
    fn refuse() -> HandlerError {
        HandlerError(
            "the gateway cannot tell which of its callers this question is for \
             (several requests to this upstream are in flight and its transport does not say)"
                .to_owned(),
        )
    }
    Handlers::new()
        .elicitation(ElicitationModes::BOTH, |_| async { Err(refuse()) })
        .sampling(SamplingCapability::default(), |_| async { Err(refuse()) })
        .roots(|| async { Err(refuse()) })
}

/// What an upstream's supervisor reports.
pub(crate) enum Change {
    /// What it lists changed, or whether it is up.
    Lists,
    /// A resource changed (`notifications/resources/updated`), says the upstream named first:
    /// passed on only if it owns the URI.
    ResourceUpdated(String, String),
}

pub(crate) type Report = Arc<dyn Fn(Change) + Send + Sync>;

/// The notifications the gateway follows: every list change, and updates of every resource it
/// lists (a modern server also takes each template's literal start: its subscriptions match by
/// prefix), when the upstream offers resource subscriptions.
fn interest(client: &Client, lists: &Lists) -> SubscriptionFilter {
    let subscribes = client.server_capabilities().resources.is_some_and(|r| r.subscribe == Some(true));
    let resources = subscribes.then(|| {
        let listed = lists.resources.iter().map(|resource| resource.uri.clone());
        let templates =
            lists.templates.iter().map(|template| template.uri_template.split('{').next().unwrap_or_default());
        let starts = templates.filter(|start| !start.is_empty()).map(str::to_owned);
        match client.era() {
            Era::Modern => listed.chain(starts).collect(),
            Era::Legacy => listed.collect(),
        }
    });
    SubscriptionFilter {
        tools_list_changed: Some(true),
        prompts_list_changed: Some(true),
        resources_list_changed: Some(true),
        resource_subscriptions: resources,
        ..SubscriptionFilter::default()
    }
}

/// Keeps `upstream` connected for as long as the task runs (each process of a pool on its
/// own); reports every change of what it lists or of whether it is up, and every update of a
/// resource it serves.
pub(crate) async fn supervise(upstream: Arc<Upstream>, report: Report) {
    if upstream.config.openapi.is_some() {
        return rest::supervise(&upstream, &report).await;
    }
    let members = (0..upstream.members.len()).map(|at| supervise_member(&upstream, at, &report));
    futures::future::join_all(members).await;
}

async fn supervise_member(upstream: &Upstream, at: usize, report: &Report) {
    let name = match upstream.members.len() {
        1 => upstream.name().to_owned(),
        n => format!("{} (process {} of {n})", upstream.name(), at + 1),
    };
    let member = &upstream.members[at];
    let mut backoff = FIRST_BACKOFF;
    let mut unavailable = Unavailable::default();
    // A connection in an era the upstream no longer uses, serving until its replacement is up.
    let mut outdated: Option<Client> = None;
    loop {
        let connected = match upstream.connect().await {
            Ok(client) => match Lists::of(&client, &upstream.config).await {
                Ok(lists) => Ok((client, lists)),
                Err(error) => {
                    client.close().await;
                    Err(listing_failed(upstream, &error))
                }
            },
            Err(error) => Err(Attempt::failed(upstream, "connecting failed", &error)),
        };
        let (client, lists) = match connected {
            Ok(up) => up,
            Err(failure) => {
                if let Some(unsaid) = unavailable.due(&failure.told) {
                    member.set_down(failure.say(upstream, &name, unsaid, backoff));
                }
                // It goes down with the attempt that was to replace it (the first failure since
                // it came up, so said above).
                if let Some(old) = outdated.take() {
                    retire(old, upstream.config.timeout());
                    report(Change::Lists);
                }
                member.attempts.send_modify(|n| *n += 1);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(LAST_BACKOFF);
                continue;
            }
        };
        unavailable = Unavailable::default();
        tracing::info!(
            upstream = %name, tools = lists.tools.len(), prompts = lists.prompts.len(),
            resources = lists.resources.len(), templates = lists.templates.len(), skills = lists.skills.len(),
            era = ?client.era(),
            "upstream connected"
        );
        backoff = FIRST_BACKOFF;
        // A legacy server logs per session: it sends everything, each caller gets its own level.
        if client.era() == Era::Legacy
            && client.server_capabilities().logging.is_some()
            && let Err(error) = client.set_log_level(LoggingLevel::Debug).await
        {
            tracing::warn!(upstream = %name, %error, "asking for log messages failed; none will be forwarded");
        }
        let wanted = interest(&client, &lists);
        let mut changes = client.listen(wanted.clone()).await.ok();
        member.set_up(client.clone(), lists);
        if let Some(old) = outdated.take() {
            retire(old, upstream.config.timeout());
        }
        member.attempts.send_modify(|n| *n += 1);
        upstream.connections.send_modify(|n| *n += 1);
        report(Change::Lists);
        let ended = watch_connection(upstream, at, &client, wanted, &mut changes, report).await;
        drop(changes);
        let why = match ended {
            Ended::Outdated => {
                // Replaced in place: it serves on until the legacy connection is up, so that the
                // switch never takes the upstream down.
                let because = upstream.legacy_because.get().map_or("", String::as_str);
                tracing::info!(upstream = %name, because, "reconnecting in the legacy era");
                outdated = Some(client);
                continue;
            }
            Ended::Lost(why) => why,
        };
        tracing::warn!(upstream = %name, %why, "upstream lost; reconnecting");
        if let Some(client) = member.set_down(why) {
            client.close().await;
        }
        report(Change::Lists);
        tokio::time::sleep(backoff).await;
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

/// Why following a connection ended.
enum Ended {
    /// `era = "auto"` chose the legacy era for the upstream since it came up in 2026-07-28.
    Outdated,
    /// It is deemed lost, for this reason.
    Lost(String),
}

/// Follows a connected upstream: re-lists what it serves when it says a list changed, checks that it
/// answers every health interval (and when a call suspects it), until it is lost or outdated.
async fn watch_connection(
    upstream: &Upstream,
    at: usize,
    client: &Client,
    mut wanted: SubscriptionFilter,
    changes: &mut Option<Subscription>,
    report: &Report,
) -> Ended {
    let member = &upstream.members[at];
    let mut health = tokio::time::interval(upstream.config.health_interval());
    health.tick().await;
    // A modern subscription starts when first polled, here: a list that changed between the
    // listing and the upstream's acknowledgement would go unseen, so the first one re-lists.
    let mut acknowledged = false;
    loop {
        let check = tokio::select! {
            notification = next_change(changes) => match notification {
                Some(Ok(ServerNotification::ResourceUpdated(updated))) => {
                    if upstream.primary() == Some(at) {
                        report(Change::ResourceUpdated(upstream.name().to_owned(), updated.params.uri));
                    }
                    false
                }
                Some(Ok(ServerNotification::SubscriptionsAcknowledged(_))) if acknowledged => false,
                Some(Ok(notification)) => {
                    acknowledged |= matches!(notification, ServerNotification::SubscriptionsAcknowledged(_));
                    // A burst of list changes is one re-list: the ones that come meanwhile are
                    // taken in by it (resource updates still pass on).
                    settle(upstream, at, changes, report).await;
                    // What the upstream lists now, not pages the client cached for their `ttlMs`:
                    // the re-list at the first acknowledgement is there for a change whose
                    // notification came before the subscription, which invalidated nothing.
                    client.clear_cache();
                    match Lists::of(client, &upstream.config).await {
                        Ok(lists) => {
                            // New resources are followed too: the subscription starts again.
                            let now = interest(client, &lists);
                            if now != wanted {
                                *changes = client.listen(now.clone()).await.ok();
                                wanted = now;
                                acknowledged = false;
                            }
                            member.set_lists(lists);
                            report(Change::Lists);
                        }
                        Err(error) => {
                            let why = listing_failed(upstream, &error).say(upstream, upstream.name(), 0, Duration::ZERO);
                            return Ended::Lost(why);
                        }
                    }
                    false
                }
                // The subscription ended: the connection may have ended with it.
                _ => {
                    *changes = None;
                    true
                }
            },
            _ = health.tick() => true,
            _ = member.suspect.notified() => true,
        };
        if upstream.outdated(client) {
            return Ended::Outdated;
        }
        if check && let Err(error) = client.check_alive().await {
            return Ended::Lost(format!("the health check failed: {error}"));
        }
    }
}

/// Waits `relist_delay` after a list change, passing on resource updates and dropping the
/// list changes that come meanwhile (the re-list that follows takes them in).
async fn settle(upstream: &Upstream, at: usize, changes: &mut Option<Subscription>, report: &Report) {
    let deadline = tokio::time::sleep(upstream.config.relist_delay());
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            () = &mut deadline => return,
            notification = next_change(changes) => match notification {
                Some(Ok(ServerNotification::ResourceUpdated(updated))) => {
                    if upstream.primary() == Some(at) {
                        report(Change::ResourceUpdated(upstream.name().to_owned(), updated.params.uri));
                    }
                }
                Some(Ok(_)) => {}
                // The subscription ended: the main loop checks the connection after the re-list.
                _ => {
                    *changes = None;
                    return;
                }
            },
        }
    }
}

/// Why listing what `upstream` serves failed: over a bound it is degraded (said plainly);
/// any other failure is said under a request id.
fn listing_failed(upstream: &Upstream, error: &ListError) -> Attempt {
    match error {
        ListError::OverBound(why) => Attempt { told: format!("degraded: {why}"), detail: why.clone(), degraded: true },
        ListError::Client(error) => Attempt::failed(upstream, "listing what it serves failed", error),
    }
}

/// Why an attempt to bring an upstream up failed: what a caller is told (no text of the
/// upstream's), and what the log keeps (its error chain, credentials redacted).
struct Attempt {
    told: String,
    detail: String,
    /// Over a bound: up, but left out.
    degraded: bool,
}

impl Attempt {
    fn failed(upstream: &Upstream, what: &str, error: &mcp_client::Error) -> Attempt {
        Attempt {
            told: format!("{what}: {}", crate::failure::kind(error)),
            detail: crate::failure::redact(&crate::failure::error_chain(error), &upstream.secrets()),
            degraded: false,
        }
    }

    /// Says the failure in the log (under a new request id, or as degraded); what a caller is
    /// told of it.
    fn say(self, upstream: &Upstream, name: &str, unsaid: u64, retry_in: Duration) -> String {
        let target = upstream.target();
        let (told, detail) = (self.told, self.detail);
        if self.degraded {
            tracing::error!(upstream = %name, %target, %detail, unsaid, "upstream degraded: its entries are left out");
            return told;
        }
        let id = crate::failure::request_id();
        tracing::warn!(
            upstream = %name, %target, request_id = %id, %told, error = ?detail, ?retry_in, unsaid,
            "upstream unavailable (said again at most once a minute while it stays so)"
        );
        format!("{told} (request id {id})")
    }
}

/// When an upstream that stays unavailable is said in the log: at its first failure, when the
/// failure changes, and at most once a minute otherwise (an upstream down for a day is not a
/// line per retry).
#[derive(Default)]
struct Unavailable {
    said: Option<(std::time::Instant, String)>,
    unsaid: u64,
}

impl Unavailable {
    const EVERY: Duration = Duration::from_secs(60);

    /// `Some(attempts left unsaid since the last line)` when this failure is to be said.
    fn due(&mut self, told: &str) -> Option<u64> {
        match &self.said {
            Some((at, said)) if said == told && at.elapsed() < Self::EVERY => {
                self.unsaid += 1;
                None
            }
            _ => {
                self.said = Some((std::time::Instant::now(), told.to_owned()));
                Some(std::mem::take(&mut self.unsaid))
            }
        }
    }
}

async fn next_change(changes: &mut Option<Subscription>) -> Option<<Subscription as futures::Stream>::Item> {
    match changes {
        Some(changes) => changes.next().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_said_first_when_it_changes_and_not_again_within_a_minute() {
        let mut unavailable = Unavailable::default();
        let said: Vec<Option<u64>> = ["refused", "refused", "refused", "timeout", "timeout", "refused"]
            .into_iter()
            .map(|told| unavailable.due(told))
            .collect();
        assert_eq!(said, [Some(0), None, None, Some(2), None, Some(1)]);
        unavailable.said.as_mut().unwrap().0 -= Unavailable::EVERY;
        assert_eq!(unavailable.due("refused"), Some(0));
    }
}
