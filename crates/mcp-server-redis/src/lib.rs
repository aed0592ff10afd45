//! Redis stores for [`mcp_server`], so that several server instances behind a load balancer
//! serve one deployment: any instance answers any request.
//!
//! - [`RedisTaskStore`]: the tasks of the tasks extension ([`TaskStore`]); each task is one JSON
//!   value under a key that expires with the task, changed by compare-and-set, and its changes
//!   are published so that the instance running the handler sees answers and cancellations.
//! - [`RedisUsedStates`]: the single-use `requestState`s already used ([`UsedStateStore`]),
//!   one key each, expiring with the state.
//! - [`RedisSessionStore`]: legacy HTTP sessions ([`SessionStore`]), one key each, expiring
//!   when idle.
//! - [`RedisEventStore`]: legacy SSE events ([`mcp_server::EventStore`]), one capped Redis
//!   stream per SSE stream, so that `Last-Event-ID` resumes on any instance.
//! - [`RedisChangeBus`]: list changes and resource updates ([`mcp_server::ChangeBus`]) on
//!   pub/sub, so that a change announced through one instance reaches the listeners of all.
//! - `RedisReplayStore` (feature `auth`): the `jti`s of DPoP proofs already used
//!   (`mcp_server::auth::ReplayStore`), bounded per DPoP key, so that a proof accepted by one
//!   instance is refused by every other.
//!
//! Every store of one [`Redis`] shares its connection (a [`ConnectionManager`] that reconnects
//! by itself). While Redis is unreachable an operation fails after
//! [`Redis::with_timeout`] with a [`StoreError`] naming the store and the address, which the
//! server answers with `-32603`; it works again as soon as Redis is back.
//!
//! ```no_run
//! # async fn demo() -> Result<(), redis::RedisError> {
//! let redis = mcp_server_redis::Redis::open("redis://127.0.0.1:6379")?.with_prefix("myapp:");
//! let server = mcp_server::Server::builder("shared", "1.0.0")
//!     .task_store(std::sync::Arc::new(redis.task_store()))
//!     .used_state_store(std::sync::Arc::new(redis.used_state_store()))
//!     .session_store(std::sync::Arc::new(redis.session_store()))
//!     .build()
//!     .unwrap();
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod bus;
mod events;
#[cfg(feature = "auth")]
mod replay;

pub use bus::RedisChangeBus;
pub use events::RedisEventStore;
#[cfg(feature = "auth")]
pub use replay::RedisReplayStore;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt as _;
use mcp_server::tasks::{StoreError, StoreFuture, TaskChange, TaskRecord, TaskWatch};
use mcp_server::{SessionRecord, SessionStore, StateUse, TaskStore, UseVerdict, UsedStateStore};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::mpsc;
use tracing::Instrument as _;

/// A connection to one Redis server (or anything speaking its protocol, such as Valkey) and the
/// key prefix of one deployment. Cheap to clone; every store made from it shares the connection.
#[derive(Clone)]
pub struct Redis(Arc<Inner>);

struct Inner {
    client: redis::Client,
    manager: ConnectionManager,
    prefix: String,
    timeout: Duration,
    /// How long a task without a TTL is kept.
    task_retention: Duration,
}

impl Redis {
    /// A connection to `url` (`redis://host:port/db`), opened on first use: a server can start
    /// while Redis is still down. Keys start with `mcp:`.
    pub fn open(url: &str) -> Result<Self, redis::RedisError> {
        Self::build(redis::Client::open(url)?, "mcp:".to_owned(), Duration::from_secs(2), Duration::from_secs(86_400))
    }

    fn build(
        client: redis::Client,
        prefix: String,
        timeout: Duration,
        task_retention: Duration,
    ) -> Result<Self, redis::RedisError> {
        // Few, short retries: a request waiting on a down Redis should fail soon, and the next
        // request tries again anyway.
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_millis(200));
        let manager = ConnectionManager::new_lazy_with_config(client.clone(), config)?;
        Ok(Redis(Arc::new(Inner { client, manager, prefix, timeout, task_retention })))
    }

    /// Keys (and pub/sub channels) start with `prefix`: deployments sharing one Redis use
    /// different prefixes.
    pub fn with_prefix(self, prefix: impl Into<String>) -> Self {
        let inner = &self.0;
        Self::build(inner.client.clone(), prefix.into(), inner.timeout, inner.task_retention)
            .expect("the client was valid already")
    }

    /// How long one operation may wait for Redis, connecting included (default 2 s).
    pub fn with_timeout(self, timeout: Duration) -> Self {
        let inner = &self.0;
        Self::build(inner.client.clone(), inner.prefix.clone(), timeout, inner.task_retention)
            .expect("the client was valid already")
    }

    /// How long a task created without a TTL is kept (default one day): every key expires.
    pub fn with_task_retention(self, retention: Duration) -> Self {
        let inner = &self.0;
        Self::build(inner.client.clone(), inner.prefix.clone(), inner.timeout, retention)
            .expect("the client was valid already")
    }

    /// The task store of this deployment.
    pub fn task_store(&self) -> RedisTaskStore {
        RedisTaskStore(self.clone())
    }

    /// The store of used single-use `requestState`s of this deployment.
    pub fn used_state_store(&self) -> RedisUsedStates {
        RedisUsedStates(self.clone())
    }

    /// The legacy session store of this deployment.
    pub fn session_store(&self) -> RedisSessionStore {
        RedisSessionStore(self.clone())
    }

    fn key(&self, kind: &str, id: &str) -> String {
        format!("{}{kind}:{id}", self.0.prefix)
    }

    /// Runs `cmd`, bounded by the timeout; an error names `store` and the address.
    async fn query<T: redis::FromRedisValue>(&self, store: &str, cmd: &redis::Cmd) -> Result<T, StoreError> {
        let mut connection = self.0.manager.clone();
        let operation = match cmd.args_iter().next() {
            Some(redis::Arg::Simple(name)) => std::str::from_utf8(name).unwrap_or("command"),
            _ => "command",
        };
        let call = tokio::time::timeout(self.0.timeout, cmd.query_async(&mut connection));
        let outcome = call.instrument(self.span(store, operation)).await;
        self.outcome(store, outcome)
    }

    async fn invoke<T: redis::FromRedisValue>(
        &self,
        store: &str,
        invocation: redis::ScriptInvocation<'_>,
    ) -> Result<T, StoreError> {
        let mut connection = self.0.manager.clone();
        let call = tokio::time::timeout(self.0.timeout, invocation.invoke_async(&mut connection));
        let outcome = call.instrument(self.span(store, "EVALSHA")).await;
        self.outcome(store, outcome)
    }

    /// A client span for one Redis call, by the OpenTelemetry database conventions (a child of
    /// the request span it serves).
    fn span(&self, store: &str, operation: &str) -> tracing::Span {
        tracing::info_span!(
            target: "mcp_server_redis",
            "redis",
            otel.name = %format_args!("{operation} ({store})"),
            otel.kind = "client",
            db.system.name = "redis",
            db.operation.name = operation,
        )
    }

    fn outcome<T>(
        &self,
        store: &str,
        outcome: Result<redis::RedisResult<T>, tokio::time::error::Elapsed>,
    ) -> Result<T, StoreError> {
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(self.error(store, error)),
            Err(_) => Err(self.error(store, format!("no answer within {} ms", self.0.timeout.as_millis()))),
        }
    }

    fn error(&self, store: &str, error: impl std::fmt::Display) -> StoreError {
        StoreError(format!("Redis {store} at {}: {error}", self.0.client.get_connection_info().addr()))
    }

    /// A pub/sub connection subscribed to `channel`, bounded by the timeout.
    async fn subscribe(&self, store: &str, channel: &str) -> Result<redis::aio::PubSub, StoreError> {
        let subscribe = async {
            let mut pubsub = self.0.client.get_async_pubsub().await?;
            pubsub.subscribe(channel).await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        self.outcome(store, tokio::time::timeout(self.0.timeout, subscribe).await)
    }
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis")
            .field("addr", &self.0.client.get_connection_info().addr().to_string())
            .field("prefix", &self.0.prefix)
            .finish()
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis().try_into().unwrap_or(u64::MAX))
}

// ------------------------------------------------------------------ tasks

const TASKS: &str = "task store";

/// Replaces a task's value only if it is still the one read, keeping its expiry, and publishes
/// the new value; 0 when another instance changed it first (the caller retries).
const COMPARE_AND_SET: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
redis.call('PUBLISH', KEYS[2], ARGV[2])
return 1
";

/// Tasks in Redis: `PREFIXtask:ID` holds the [`TaskRecord`] as JSON and expires with the task
/// (or after [`Redis::with_task_retention`]); each change is published on `PREFIXtask-changes:ID`
/// (an empty message: the task was removed); `PREFIXtask-lease:ID` exists while the instance
/// running the handler renews its lease (it expires by itself when that instance is gone). A [`watch`](TaskStore::watch) holds its own pub/sub
/// connection, and survives a lost connection by reconnecting and reading the task again.
#[derive(Clone, Debug)]
pub struct RedisTaskStore(Redis);

impl RedisTaskStore {
    fn keys(&self, id: &str) -> (String, String) {
        (self.0.key("task", id), self.0.key("task-changes", id))
    }

    fn encode(task: &TaskRecord) -> Result<String, StoreError> {
        serde_json::to_string(task).map_err(|e| StoreError(format!("a task did not encode: {e}")))
    }

    /// The task and its JSON as stored; `None` if absent or expired.
    async fn read(&self, id: &str) -> Result<Option<(TaskRecord, String)>, StoreError> {
        let json: Option<String> = self.0.query(TASKS, redis::cmd("GET").arg(self.keys(id).0)).await?;
        let Some(json) = json else { return Ok(None) };
        let task: TaskRecord = serde_json::from_str(&json)
            .map_err(|e| self.0.error(TASKS, format!("task {id} is not a task record: {e}")))?;
        Ok((!task.is_expired(now_ms())).then_some((task, json)))
    }
}

impl TaskStore for RedisTaskStore {
    fn create(&self, task: TaskRecord) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let now = now_ms();
            let ttl_ms = match task.expires_at_ms() {
                Some(at) => at.saturating_sub(now).max(1),
                None => self.0.0.task_retention.as_millis().try_into().unwrap_or(u64::MAX),
            };
            let json = Self::encode(&task)?;
            let mut set = redis::cmd("SET");
            set.arg(self.keys(&task.id).0).arg(json).arg("NX").arg("PX").arg(ttl_ms);
            let created: Option<String> = self.0.query(TASKS, &set).await?;
            match created {
                Some(_) => Ok(()),
                None => Err(self.0.error(TASKS, format!("a task with the id {} exists already", task.id))),
            }
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move { Ok(self.read(id).await?.map(|(task, _)| task)) })
    }

    fn update<'a>(&'a self, id: &'a str, change: TaskChange<'a>) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            let script = redis::Script::new(COMPARE_AND_SET);
            let (key, channel) = self.keys(id);
            // Each retry means another instance's change landed: bounded, but never reached
            // in practice.
            for _ in 0..100 {
                let Some((mut task, old)) = self.read(id).await? else { return Ok(None) };
                if !change(&mut task) {
                    return Ok(Some(task));
                }
                let new = Self::encode(&task)?;
                let mut invocation = script.key(&key);
                invocation.key(&channel).arg(&old).arg(&new);
                let swapped: i64 = self.0.invoke(TASKS, invocation).await?;
                if swapped == 1 {
                    return Ok(Some(task));
                }
            }
            Err(self.0.error(TASKS, format!("task {id} kept changing under 100 attempts to update it")))
        })
    }

    fn watch<'a>(&'a self, id: &'a str) -> StoreFuture<'a, TaskWatch> {
        Box::pin(async move {
            // Subscribed before reading, so that no change falls between the two.
            let (_, channel) = self.keys(id);
            let pubsub = self.0.subscribe(TASKS, &channel).await?;
            let Some((task, json)) = self.read(id).await? else {
                return Ok(Box::pin(futures::stream::empty()) as TaskWatch);
            };
            let (sender, receiver) = mpsc::channel(16);
            sender.try_send(task.clone()).expect("an empty channel has room");
            tokio::spawn(follow(self.clone(), id.to_owned(), channel, pubsub, json, task.expires_at_ms(), sender));
            Ok(Box::pin(futures::stream::unfold(receiver, |mut receiver| async move {
                receiver.recv().await.map(|task| (task, receiver))
            })) as TaskWatch)
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let (key, channel) = self.keys(id);
            let mut remove = redis::pipe();
            let lease = self.0.key("task-lease", id);
            remove.atomic().del(&key).ignore().del(&lease).ignore().publish(&channel, "").ignore();
            let mut connection = self.0.0.manager.clone();
            let outcome = tokio::time::timeout(self.0.0.timeout, remove.query_async::<()>(&mut connection)).await;
            self.0.outcome(TASKS, outcome)
        })
    }

    fn renew_lease<'a>(&'a self, id: &'a str, lease: Duration) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut set = redis::cmd("SET");
            set.arg(self.0.key("task-lease", id)).arg(1).arg("PX").arg(millis(lease));
            self.0.query::<()>(TASKS, &set).await
        })
    }

    fn lease_held<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move { self.0.query(TASKS, redis::cmd("EXISTS").arg(self.0.key("task-lease", id))).await })
    }
}

/// Forwards a task's published states to a watcher until the task is removed or expires, or
/// the watcher goes away. A lost connection is not the task's end: it reconnects, reads the
/// task again and goes on.
async fn follow(
    store: RedisTaskStore,
    id: String,
    channel: String,
    pubsub: redis::aio::PubSub,
    mut last: String,
    expires_at_ms: Option<u64>,
    sender: mpsc::Sender<TaskRecord>,
) {
    let expired = async {
        match expires_at_ms {
            Some(at) => tokio::time::sleep(Duration::from_millis(at.saturating_sub(now_ms()))).await,
            None => std::future::pending().await,
        }
    };
    let forward = async {
        let mut messages = pubsub.into_on_message();
        loop {
            while let Some(message) = messages.next().await {
                let Ok(json) = message.get_payload::<String>() else { continue };
                if json.is_empty() {
                    return;
                }
                let Ok(task) = serde_json::from_str::<TaskRecord>(&json) else { continue };
                if task.is_expired(now_ms()) {
                    return;
                }
                if json != last {
                    last = json;
                    if sender.send(task).await.is_err() {
                        return;
                    }
                }
            }
            // The connection was lost: subscribe again, then catch up on what was missed.
            let mut delay = Duration::from_millis(50);
            messages = loop {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(1));
                let Ok(pubsub) = store.0.subscribe(TASKS, &channel).await else { continue };
                match store.read(&id).await {
                    Ok(None) => return,
                    Ok(Some((task, json))) => {
                        if json != last {
                            last = json;
                            if sender.send(task).await.is_err() {
                                return;
                            }
                        }
                        break pubsub.into_on_message();
                    }
                    Err(error) => tracing::debug!(%id, %error, "the task watch is waiting for Redis"),
                }
            };
        }
    };
    tokio::select! {
        () = forward => {}
        () = expired => {}
        () = sender.closed() => {}
    }
}

// ------------------------------------------------------------------ single-use states

const USED_STATES: &str = "used-state store";

/// The used single-use `requestState`s in Redis: one `PREFIXused-state:ISSUED.NONCE` key each,
/// set only if absent and expiring with the state, so the first use on any instance wins and
/// nothing is ever forgotten early ([`UseVerdict::Forgotten`] is never returned).
#[derive(Clone, Debug)]
pub struct RedisUsedStates(Redis);

impl UsedStateStore for RedisUsedStates {
    fn first_use(&self, state: StateUse) -> StoreFuture<'_, UseVerdict> {
        Box::pin(async move {
            let key = self.0.key("used-state", &format!("{}.{}", state.issued_secs, state.nonce));
            // An expiry already past would make the key vanish at once and accept a replay.
            let now_secs = now_ms() / 1000;
            let expires = state.expires_secs.max(now_secs + 1);
            let mut set = redis::cmd("SET");
            set.arg(key).arg(1).arg("NX").arg("EXAT").arg(expires);
            let first: Option<String> = self.0.query(USED_STATES, &set).await?;
            Ok(if first.is_some() { UseVerdict::First } else { UseVerdict::Repeated })
        })
    }
}

// ------------------------------------------------------------------ legacy sessions

const SESSIONS: &str = "session store";

fn millis(duration: Duration) -> u64 {
    duration.as_millis().clamp(1, u128::from(u64::MAX)) as u64
}

/// Legacy HTTP sessions in Redis: `PREFIXsession:ID` holds the [`SessionRecord`] as JSON and
/// expires after the session's idle time; each use (`GETEX`, or `PEXPIRE` where the record is
/// not needed) starts it again.
#[derive(Clone, Debug)]
pub struct RedisSessionStore(Redis);

impl SessionStore for RedisSessionStore {
    fn save<'a>(&'a self, id: &'a str, record: &'a SessionRecord, idle: Duration) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let json = serde_json::to_string(record).map_err(|e| self.0.error(SESSIONS, e))?;
            let mut set = redis::cmd("SET");
            set.arg(self.0.key("session", id)).arg(json).arg("PX").arg(millis(idle));
            self.0.query::<()>(SESSIONS, &set).await
        })
    }

    fn load<'a>(&'a self, id: &'a str, idle: Duration) -> StoreFuture<'a, Option<SessionRecord>> {
        Box::pin(async move {
            let mut get = redis::cmd("GETEX");
            get.arg(self.0.key("session", id)).arg("PX").arg(millis(idle));
            let json: Option<String> = self.0.query(SESSIONS, &get).await?;
            json.map(|json| {
                serde_json::from_str(&json)
                    .map_err(|e| self.0.error(SESSIONS, format!("session {id} is not a session record: {e}")))
            })
            .transpose()
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move { self.0.query::<()>(SESSIONS, redis::cmd("DEL").arg(self.0.key("session", id))).await })
    }

    /// `PEXPIRE`: the record is neither sent nor decoded.
    fn touch<'a>(&'a self, id: &'a str, idle: Duration) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let mut expire = redis::cmd("PEXPIRE");
            expire.arg(self.0.key("session", id)).arg(millis(idle));
            Ok(self.0.query::<i64>(SESSIONS, &expire).await? == 1)
        })
    }
}
