//! Where task state lives: the [`TaskRecord`], the [`TaskStore`] contract that a store shared by
//! several instances implements (compare-and-set updates, handler leases), and the
//! [`InMemoryTaskStore`] of a single instance.

use super::*;
pub use crate::store::{StoreError, StoreFuture};

/// Everything the server knows about one task. A store keeps it whole; the server changes it
/// only through [`TaskStore::update`].
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The task id: 128 random bits, hex-encoded.
    pub id: String,
    /// The party that created the task; nobody else may see it.
    pub owner: Principal,
    /// Where the task stands.
    pub status: TaskStatus,
    /// A human-readable description of the current state.
    pub status_message: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// The time of the last change, in milliseconds since the Unix epoch.
    pub updated_at_ms: u64,
    /// The task may be discarded this long after its creation; `None`: kept until evicted.
    pub ttl_ms: Option<u64>,
    /// The polling interval suggested to clients, in milliseconds.
    pub poll_interval_ms: u64,
    /// The input requests the task waits for, by key.
    pub input_requests: InputRequests,
    /// Every answer the client gave, by key (kept so that a key is never asked twice).
    pub answers: BTreeMap<String, Value>,
    /// `completed`: the tool's result.
    pub result: Option<JsonObject>,
    /// `failed`: the JSON-RPC error.
    pub error: Option<ErrorObject>,
    /// The W3C `traceparent` of the request that created the task (feature `otel`, when it was
    /// traced): the requests about the task, on any instance, add a span to that trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

impl TaskRecord {
    /// A new `working` task owned by `owner`, with a fresh unguessable id.
    pub fn new(owner: Principal, ttl: Option<Duration>, poll_interval: Duration) -> Self {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).expect("the operating system's random source is available");
        let now = now_ms();
        TaskRecord {
            id: bytes.iter().map(|b| format!("{b:02x}")).collect(),
            owner,
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now,
            updated_at_ms: now,
            ttl_ms: ttl.map(|ttl| ttl.as_millis().try_into().unwrap_or(u64::MAX)),
            poll_interval_ms: poll_interval.as_millis().try_into().unwrap_or(u64::MAX),
            input_requests: InputRequests::new(),
            answers: BTreeMap::new(),
            result: None,
            error: None,
            trace: None,
        }
    }

    /// When the task may be discarded (milliseconds since the Unix epoch).
    pub fn expires_at_ms(&self) -> Option<u64> {
        self.ttl_ms.map(|ttl| self.created_at_ms.saturating_add(ttl))
    }

    /// Whether the task's time to live has run out at `now_ms` (milliseconds since the Unix epoch).
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms().is_some_and(|at| now_ms >= at)
    }

    /// Marks the record as changed now.
    pub fn touch(&mut self) {
        self.updated_at_ms = now_ms().max(self.updated_at_ms);
    }

    /// The wire form: the task and the payload of its status.
    pub fn detailed(&self) -> DetailedTask {
        let task = Task {
            created_at: iso8601(self.created_at_ms),
            last_updated_at: iso8601(self.updated_at_ms),
            poll_interval_ms: Some(self.poll_interval_ms.into()),
            status: self.status,
            status_message: self.status_message.clone(),
            task_id: self.id.clone(),
            ttl_ms: self.ttl_ms.map(Into::into),
            extra: JsonObject::new(),
        };
        // Only the payload of the task's status is used; the others stay empty.
        let (input_requests, result, error) = match self.status {
            TaskStatus::InputRequired => (self.input_requests.clone(), JsonObject::new(), ErrorObject::default()),
            TaskStatus::Completed => {
                (InputRequests::new(), self.result.clone().unwrap_or_default(), ErrorObject::default())
            }
            TaskStatus::Failed => (
                InputRequests::new(),
                JsonObject::new(),
                self.error.clone().unwrap_or_else(|| ErrorObject::internal_error("The task failed")),
            ),
            _ => (InputRequests::new(), JsonObject::new(), ErrorObject::default()),
        };
        DetailedTask::new(task, input_requests, result, error)
    }
}

/// The states of one task: the current one first, then one after each change, until the task
/// is removed or expires.
pub type TaskWatch = Pin<Box<dyn Stream<Item = TaskRecord> + Send>>;

/// A change to a task, applied atomically; returns whether it changed anything. A store may
/// run it more than once (an optimistic store retries on a conflict).
pub type TaskChange<'a> = &'a mut (dyn FnMut(&mut TaskRecord) -> bool + Send);

/// Where tasks live. The server keeps no task state of its own: everything a `tasks/*` request
/// needs is read from the store, and the instance running a task's handler learns of answers
/// and cancellation through [`TaskStore::watch`]. A store shared by several instances (and
/// whose `watch` sees other instances' changes) therefore lets any instance serve any request.
///
/// Expired tasks ([`TaskRecord::is_expired`]) must look unknown: `get`, `update` and `watch`
/// treat them as absent.
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task. Resolves once a `get` for its id, on any instance, finds it.
    fn create(&self, task: TaskRecord) -> StoreFuture<'_, ()>;

    /// The task, or `None` if it is unknown or expired.
    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>>;

    /// Applies `change` atomically and returns the task as it is afterwards (`None`: unknown or
    /// expired, nothing changed). Watchers see the new state when `change` returned `true`.
    fn update<'a>(&'a self, id: &'a str, change: TaskChange<'a>) -> StoreFuture<'a, Option<TaskRecord>>;

    /// The task's states, from the current one on ([`TaskWatch`]); an empty stream if the task
    /// is unknown.
    fn watch<'a>(&'a self, id: &'a str) -> StoreFuture<'a, TaskWatch>;

    /// Forgets the task.
    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()>;

    /// Holds the lease of the task's handler for `lease` from now. The instance running the
    /// handler renews it every third of [`Options::task_lease`](crate::Options::task_lease);
    /// once it lapses, any instance reading the task marks it `failed`. The default does
    /// nothing: a store without leases never reports one lapsed.
    fn renew_lease<'a>(&'a self, id: &'a str, lease: Duration) -> StoreFuture<'a, ()> {
        let _ = (id, lease);
        Box::pin(std::future::ready(Ok(())))
    }

    /// Whether the lease of the task's handler is still held (default: always).
    fn lease_held<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        let _ = id;
        Box::pin(std::future::ready(Ok(true)))
    }
}

/// The default [`TaskStore`]: tasks in this process's memory, watched through
/// `tokio::sync::watch` channels. Expired tasks are dropped when touched or when room is needed;
/// when the store is full, the least recently updated finished task makes room, and creating a
/// task fails if every task is still running.
pub struct InMemoryTaskStore {
    tasks: Mutex<HashMap<String, watch::Sender<TaskRecord>>>,
    /// When each task's lease lapses (milliseconds since the Unix epoch).
    leases: Mutex<HashMap<String, u64>>,
    capacity: usize,
}

impl InMemoryTaskStore {
    /// A store of at most 10 000 tasks.
    pub fn new() -> Self {
        Self::with_capacity(10_000)
    }

    /// A store of at most `capacity` tasks (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        InMemoryTaskStore {
            tasks: Mutex::new(HashMap::new()),
            leases: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// How many tasks are stored (expired ones not yet dropped included).
    pub fn len(&self) -> usize {
        self.tasks.lock().expect("not poisoned").len()
    }

    /// Whether the store holds no task.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The live entry for `id`; an expired one is dropped.
    fn live<'a>(
        tasks: &'a mut HashMap<String, watch::Sender<TaskRecord>>,
        id: &str,
    ) -> Option<&'a watch::Sender<TaskRecord>> {
        if tasks.get(id)?.borrow().is_expired(now_ms()) {
            tasks.remove(id);
            return None;
        }
        tasks.get(id)
    }

    /// Drops expired tasks and, if the store is still full, the least recently updated tenth of
    /// the finished ones (in one pass, so that a full store does not scan on every creation).
    fn make_room(&self, tasks: &mut HashMap<String, watch::Sender<TaskRecord>>) -> Result<(), StoreError> {
        if tasks.len() < self.capacity {
            return Ok(());
        }
        let now = now_ms();
        tasks.retain(|_, task| !task.borrow().is_expired(now));
        if tasks.len() < self.capacity {
            return Ok(());
        }
        let mut finished: Vec<(u64, String)> = tasks
            .iter()
            .filter_map(|(id, task)| {
                let task = task.borrow();
                task.status.is_terminal().then(|| (task.updated_at_ms, id.clone()))
            })
            .collect();
        if finished.is_empty() {
            return Err(StoreError(format!("the task store is full ({} running tasks)", tasks.len())));
        }
        let evict = (tasks.len() + 1 - self.capacity).max(self.capacity / 10).min(finished.len());
        finished.select_nth_unstable(evict - 1);
        for (_, id) in &finished[..evict] {
            tasks.remove(id);
        }
        Ok(())
    }
}

impl Default for InMemoryTaskStore {
    fn default() -> Self {
        Self::new()
    }
}

impl TaskStore for InMemoryTaskStore {
    fn create(&self, task: TaskRecord) -> StoreFuture<'_, ()> {
        let outcome = (|| {
            let mut tasks = self.tasks.lock().expect("not poisoned");
            if tasks.contains_key(&task.id) {
                return Err(StoreError(format!("a task with the id {} exists already", task.id)));
            }
            self.make_room(&mut tasks)?;
            tasks.insert(task.id.clone(), watch::channel(task).0);
            Ok(())
        })();
        Box::pin(std::future::ready(outcome))
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        let mut tasks = self.tasks.lock().expect("not poisoned");
        let found = Self::live(&mut tasks, id).map(|task| task.borrow().clone());
        Box::pin(std::future::ready(Ok(found)))
    }

    fn update<'a>(&'a self, id: &'a str, change: TaskChange<'a>) -> StoreFuture<'a, Option<TaskRecord>> {
        let mut tasks = self.tasks.lock().expect("not poisoned");
        let updated = Self::live(&mut tasks, id).map(|task| {
            task.send_if_modified(|record| change(record));
            task.borrow().clone()
        });
        Box::pin(std::future::ready(Ok(updated)))
    }

    fn watch<'a>(&'a self, id: &'a str) -> StoreFuture<'a, TaskWatch> {
        let mut tasks = self.tasks.lock().expect("not poisoned");
        let watch: TaskWatch = match Self::live(&mut tasks, id) {
            None => Box::pin(futures::stream::empty()),
            Some(task) => Box::pin(futures::stream::unfold((task.subscribe(), true), |(mut rx, first)| async move {
                if !first {
                    rx.changed().await.ok()?;
                }
                let record = rx.borrow_and_update().clone();
                if record.is_expired(now_ms()) {
                    return None;
                }
                Some((record, (rx, false)))
            })),
        };
        Box::pin(std::future::ready(Ok(watch)))
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        self.tasks.lock().expect("not poisoned").remove(id);
        self.leases.lock().expect("not poisoned").remove(id);
        Box::pin(std::future::ready(Ok(())))
    }

    fn renew_lease<'a>(&'a self, id: &'a str, lease: Duration) -> StoreFuture<'a, ()> {
        let until = now_ms().saturating_add(lease.as_millis().try_into().unwrap_or(u64::MAX));
        let mut leases = self.leases.lock().expect("not poisoned");
        // Leases of tasks dropped by expiry or eviction go in one pass, not on every renewal.
        if leases.len() >= 2 * self.capacity {
            let tasks = self.tasks.lock().expect("not poisoned");
            leases.retain(|id, _| tasks.contains_key(id));
        }
        leases.insert(id.to_owned(), until);
        Box::pin(std::future::ready(Ok(())))
    }

    fn lease_held<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        let held = self.leases.lock().expect("not poisoned").get(id).is_some_and(|until| *until > now_ms());
        Box::pin(std::future::ready(Ok(held)))
    }
}
