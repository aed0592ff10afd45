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
//!
//! [`TaskStore`]: mcp_server::TaskStore
//! [`UsedStateStore`]: mcp_server::UsedStateStore
//! [`SessionStore`]: mcp_server::SessionStore
//! [`StoreError`]: mcp_server::tasks::StoreError
//! [`ConnectionManager`]: redis::aio::ConnectionManager

#![warn(missing_docs)]

mod bus;
mod connection;
mod events;
#[cfg(feature = "auth")]
mod replay;
mod sessions;
mod states;
mod tasks;

pub use bus::RedisChangeBus;
pub use connection::Redis;
pub use events::RedisEventStore;
#[cfg(feature = "auth")]
pub use replay::RedisReplayStore;
pub use sessions::RedisSessionStore;
pub use states::RedisUsedStates;
pub use tasks::RedisTaskStore;
