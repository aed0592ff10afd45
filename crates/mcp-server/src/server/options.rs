//! The server's [`Options`] (page size, caching hints, limits on requests in flight, batches and
//! multi-round state, task timings) and the [`CacheHints`] of cacheable results.

use super::*;

/// Caching hints for cacheable results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHints {
    /// How long the result may be reused (`ttlMs`), in milliseconds.
    pub ttl_ms: u64,
    /// Who may reuse it (`cacheScope`): every client, or only the one that asked.
    pub scope: CacheScope,
}

/// Tunable behaviour; every field has a default, stated on the field.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// Items per page of every list (default 100).
    pub page_size: usize,
    /// Hints on `server/discover` and the four lists (default 60 s, public). A list that may
    /// differ by caller is marked private whatever this says: with
    /// [`list_only_permitted`](Self::list_only_permitted) and routes that declare scopes, or with a
    /// source whose lists depend on the caller
    /// ([`ToolSource::lists_depend_on_caller`](crate::dynamic::ToolSource::lists_depend_on_caller)).
    pub list_cache: CacheHints,
    /// Hints on `resources/read` (default 0 ms, private: not cached).
    pub read_cache: CacheHints,
    /// Answer the non-standard `health` method (default on).
    pub health: bool,
    /// How long a `requestState` stays valid (default 1 hour).
    pub state_max_age: Duration,
    /// Put `_meta["io.modelcontextprotocol/serverInfo"]` on every modern result (a SHOULD of the
    /// spec; default on).
    pub server_info_in_results: bool,
    /// How long a legacy handler waits for the client's answer to `elicitation/create`,
    /// `sampling/createMessage` or `roots/list` before the call fails naming this limit
    /// (default 5 minutes: a person may be answering).
    pub client_request_timeout: Duration,
    /// Requests one session or connection may have in flight (stdio, an in-memory
    /// [`Connection`](crate::Connection), a legacy HTTP session); more are refused with `-32603`
    /// naming this limit until one finishes (default 64).
    pub max_in_flight: usize,
    /// Elements a 2025-03-26 JSON-RPC batch may hold; a longer batch is refused as a whole with
    /// `-32600` naming this limit (default 100).
    pub max_batch_len: usize,
    /// JSON objects and arrays one message may hold (default 16,384), counted in its text
    /// before anything is decoded: a decoded tiny object costs about 80× its text, so a body of
    /// many of them is refused with `-32600` naming this limit instead of being built. Within
    /// it, a message's decoded form stays within about 10 MiB beside 16× its size.
    pub max_json_containers: usize,
    /// After a connection's input closes, how long its requests in flight may still run before
    /// they are stopped (default 30 s). Requests waiting on the client fail at once: no answer
    /// can arrive any more.
    pub drain_timeout: Duration,
    /// Accept each `requestState` only once: a replayed state is refused (default off; turn it
    /// on when the state carries authorization or business decisions).
    pub state_single_use: bool,
    /// With [`state_single_use`](Self::state_single_use): how many used states are remembered
    /// until they expire (default 65,536). When it is full, the oldest is forgotten and every
    /// state issued before it is refused as expired, so a replay is never accepted.
    pub state_replay_cache: usize,
    /// How long a task is kept after its creation (`ttlMs`); `None`: until the store needs room
    /// (default 1 hour).
    pub task_ttl: Option<Duration>,
    /// The polling interval suggested to clients (`pollIntervalMs`; default 1 s).
    pub task_poll_interval: Duration,
    /// How long a call that may become a task is answered directly before it becomes one
    /// (default zero: it becomes one as soon as its handler first waits). A proxy, whose every
    /// call waits on its upstream, offers only its long calls as tasks this way.
    pub task_grace: Duration,
    /// The lease of the instance running a task's handler, renewed every third of it; a task
    /// whose lease lapsed (its instance died) is reported `failed` (default 30 s).
    pub task_lease: Duration,
    /// How many tasks one client may have running on this instance at once: its principal, or
    /// for anonymous HTTP callers their remote address (default 100, far below the in-memory
    /// task store's 10,000, so that one client cannot fill it for everyone). One more
    /// task-augmented call is refused with `-32603` naming this limit.
    pub max_running_tasks_per_client: usize,
    /// Lists leave out the tools, resources, templates and prompts whose
    /// [`scopes`](crate::ToolRoute::scopes) the request's access token does not grant (default
    /// off: everything is listed, and a call without the scopes gets 403 `insufficient_scope`,
    /// which lets a client step up). Applies only to requests with a verified token.
    pub list_only_permitted: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            page_size: 100,
            list_cache: CacheHints { ttl_ms: 60_000, scope: CacheScope::Public },
            read_cache: CacheHints { ttl_ms: 0, scope: CacheScope::Private },
            health: true,
            state_max_age: Duration::from_secs(3600),
            server_info_in_results: true,
            client_request_timeout: Duration::from_secs(300),
            max_in_flight: 64,
            max_batch_len: 100,
            max_json_containers: 16_384,
            drain_timeout: Duration::from_secs(30),
            state_single_use: false,
            state_replay_cache: 65_536,
            task_ttl: Some(Duration::from_secs(3600)),
            task_poll_interval: Duration::from_secs(1),
            task_grace: Duration::ZERO,
            task_lease: Duration::from_secs(30),
            max_running_tasks_per_client: 100,
            list_only_permitted: false,
        }
    }
}
