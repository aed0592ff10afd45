//! The event store on Redis streams.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use mcp_server::EventStore;
use mcp_server::events::{EventFeed, StoredEvent};
use mcp_server::tasks::{StoreError, StoreFuture};

use crate::connection::{Redis, millis};

const EVENTS: &str = "event store";

/// How long a reader blocks on Redis before it checks that the stream still exists.
const BLOCK: Duration = Duration::from_secs(1);

/// Legacy SSE events in Redis, for `Last-Event-ID` resumption on any instance: one Redis stream
/// per SSE stream, `PREFIXevents:SESSION:STREAM`, whose entry ids are the event positions,
/// capped at [`with_max_events`](Self::with_max_events) entries (the oldest go) and expiring
/// [`with_ttl`](Self::with_ttl) after its last event. The end of a stream is one more entry
/// (field `end`). A reader of a stream still being written blocks on `XREAD` on a connection of
/// its own.
#[derive(Clone, Debug)]
pub struct RedisEventStore {
    redis: Redis,
    max_events: usize,
    ttl: Duration,
}

/// An `XREAD` reply: per key, its entries (id, fields).
type ReadReply = Option<Vec<(String, Vec<(String, HashMap<String, String>)>)>>;

impl Redis {
    /// The event store of this deployment: at most 1,000 events per stream, kept 30 minutes
    /// after the last.
    pub fn event_store(&self) -> RedisEventStore {
        RedisEventStore { redis: self.clone(), max_events: 1_000, ttl: Duration::from_secs(30 * 60) }
    }
}

impl RedisEventStore {
    /// At most `max_events` (at least one) events per stream.
    pub fn with_max_events(mut self, max_events: usize) -> Self {
        self.max_events = max_events.max(1);
        self
    }

    /// A stream is forgotten this long after its last event.
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    fn key(&self, session: &str, stream: u64) -> String {
        self.redis.key("events", &format!("{session}:{stream}"))
    }

    async fn add(&self, session: &str, stream: u64, id: &str, field: &str, value: &str) -> Result<(), StoreError> {
        let key = self.key(session, stream);
        let mut add = redis::pipe();
        add.atomic()
            .cmd("XADD")
            .arg(&key)
            .arg("MAXLEN")
            .arg(self.max_events + 1)
            .arg(id)
            .arg(field)
            .arg(value)
            .ignore()
            .cmd("PEXPIRE")
            .arg(&key)
            .arg(millis(self.ttl))
            .ignore();
        let mut connection = self.redis.0.manager.clone();
        let outcome = tokio::time::timeout(self.redis.0.timeout, add.query_async::<()>(&mut connection)).await;
        self.redis.outcome(EVENTS, outcome)
    }
}

impl EventStore for RedisEventStore {
    fn append<'a>(&'a self, session: &'a str, stream: u64, position: u64, data: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move { self.add(session, stream, &format!("{position}-1"), "data", data).await })
    }

    fn finish<'a>(&'a self, session: &'a str, stream: u64) -> StoreFuture<'a, ()> {
        // An id from the clock: above every position.
        Box::pin(async move { self.add(session, stream, "*", "end", "1").await })
    }

    fn read<'a>(&'a self, session: &'a str, stream: u64, after: u64) -> StoreFuture<'a, Option<EventFeed>> {
        Box::pin(async move {
            let key = self.key(session, stream);
            let exists: bool = self.redis.query(EVENTS, redis::cmd("EXISTS").arg(&key)).await?;
            if !exists {
                return Ok(None);
            }
            // Blocking reads get a connection of their own: on the shared one they would hold
            // up every other command.
            let config = redis::AsyncConnectionConfig::new()
                .set_connection_timeout(Some(self.redis.0.timeout))
                .set_response_timeout(Some(BLOCK + self.redis.0.timeout));
            let connect = self.redis.0.client.get_multiplexed_async_connection_with_config(&config);
            let connection = self.redis.outcome(EVENTS, tokio::time::timeout(self.redis.0.timeout, connect).await)?;
            let state =
                Reader { store: self.clone(), key, connection, last: format!("{after}-1"), ready: VecDeque::new() };
            let feed = futures::stream::unfold(Some(state), |state| async move {
                let mut state = state?;
                match state.next().await {
                    Ok(Some(event)) => Some((Ok(event), Some(state))),
                    Ok(None) => None,
                    Err(error) => Some((Err(error), None)),
                }
            });
            Ok(Some(Box::pin(feed) as EventFeed))
        })
    }
}

struct Reader {
    store: RedisEventStore,
    key: String,
    connection: redis::aio::MultiplexedConnection,
    /// The id of the last entry read.
    last: String,
    ready: VecDeque<Option<StoredEvent>>,
}

impl Reader {
    /// The next event; `None` at the stream's end (or once it expired).
    async fn next(&mut self) -> Result<Option<StoredEvent>, StoreError> {
        loop {
            if let Some(next) = self.ready.pop_front() {
                return Ok(next);
            }
            let mut read = redis::cmd("XREAD");
            read.arg("COUNT").arg(100).arg("BLOCK").arg(millis(BLOCK)).arg("STREAMS").arg(&self.key).arg(&self.last);
            let reply: ReadReply =
                read.query_async(&mut self.connection).await.map_err(|e| self.store.redis.error(EVENTS, e))?;
            let entries: Vec<_> = reply.into_iter().flatten().flat_map(|(_, entries)| entries).collect();
            if entries.is_empty() {
                // Nothing within the block: the stream may have expired meanwhile.
                let exists: bool = self.store.redis.query(EVENTS, redis::cmd("EXISTS").arg(&self.key)).await?;
                if !exists {
                    return Ok(None);
                }
                continue;
            }
            for (id, mut fields) in entries {
                self.last = id.clone();
                if fields.contains_key("end") {
                    self.ready.push_back(None);
                    break;
                }
                let position = id.split('-').next().and_then(|p| p.parse().ok());
                if let (Some(position), Some(data)) = (position, fields.remove("data")) {
                    self.ready.push_back(Some(StoredEvent { position, data }));
                }
            }
        }
    }
}
