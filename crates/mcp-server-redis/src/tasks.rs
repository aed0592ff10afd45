//! Tasks of the tasks extension in Redis, watched through pub/sub.

use std::time::Duration;

use futures::StreamExt as _;
use mcp_server::TaskStore;
use mcp_server::tasks::{StoreError, StoreFuture, TaskChange, TaskRecord, TaskWatch};
use tokio::sync::mpsc;

use crate::connection::{Redis, millis, now_ms};

impl Redis {
    /// The task store of this deployment.
    pub fn task_store(&self) -> RedisTaskStore {
        RedisTaskStore(self.clone())
    }
}

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
