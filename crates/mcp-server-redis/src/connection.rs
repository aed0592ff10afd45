//! The connection every store of a deployment shares, and what the stores do through it: keys,
//! bounded calls, their spans and errors.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_server::tasks::StoreError;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tracing::Instrument as _;

/// A connection to one Redis server (or anything speaking its protocol, such as Valkey) and the
/// key prefix of one deployment. Cheap to clone; every store made from it shares the connection.
#[derive(Clone)]
pub struct Redis(pub(crate) Arc<Inner>);

pub(crate) struct Inner {
    pub(crate) client: redis::Client,
    pub(crate) manager: ConnectionManager,
    pub(crate) prefix: String,
    pub(crate) timeout: Duration,
    /// How long a task without a TTL is kept.
    pub(crate) task_retention: Duration,
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

    pub(crate) fn key(&self, kind: &str, id: &str) -> String {
        format!("{}{kind}:{id}", self.0.prefix)
    }

    /// Runs `cmd`, bounded by the timeout; an error names `store` and the address.
    pub(crate) async fn query<T: redis::FromRedisValue>(&self, store: &str, cmd: &redis::Cmd) -> Result<T, StoreError> {
        let mut connection = self.0.manager.clone();
        let operation = match cmd.args_iter().next() {
            Some(redis::Arg::Simple(name)) => std::str::from_utf8(name).unwrap_or("command"),
            _ => "command",
        };
        let call = tokio::time::timeout(self.0.timeout, cmd.query_async(&mut connection));
        let outcome = call.instrument(self.span(store, operation)).await;
        self.outcome(store, outcome)
    }

    pub(crate) async fn invoke<T: redis::FromRedisValue>(
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

    pub(crate) fn outcome<T>(
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

    pub(crate) fn error(&self, store: &str, error: impl std::fmt::Display) -> StoreError {
        StoreError(format!("Redis {store} at {}: {error}", self.0.client.get_connection_info().addr()))
    }

    /// A pub/sub connection subscribed to `channel`, bounded by the timeout.
    pub(crate) async fn subscribe(&self, store: &str, channel: &str) -> Result<redis::aio::PubSub, StoreError> {
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

pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis().try_into().unwrap_or(u64::MAX))
}

pub(crate) fn millis(duration: Duration) -> u64 {
    duration.as_millis().clamp(1, u128::from(u64::MAX)) as u64
}
