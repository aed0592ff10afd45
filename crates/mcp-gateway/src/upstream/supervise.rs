//! An upstream's supervisor: keeps each of its connections up (connected, listed, health-checked
//! with `Client::check_alive`, reconnected with backoff after a failure, replaced when the era
//! changes) and reports what changed.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use mcp_client::{Client, Era, Subscription};
use mcp_types::{LoggingLevel, ServerNotification, SubscriptionFilter};

use super::attempt::{Attempt, Unavailable};
use super::lists::{ListError, Lists};
use super::{FIRST_BACKOFF, LAST_BACKOFF, Upstream, retire};

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
        return super::rest::supervise(&upstream, &report).await;
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

async fn next_change(changes: &mut Option<Subscription>) -> Option<<Subscription as futures::Stream>::Item> {
    match changes {
        Some(changes) => changes.next().await,
        None => std::future::pending().await,
    }
}
