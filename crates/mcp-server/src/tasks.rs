//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the server side.
//!
//! A tool registered with [`TaskSupport::Optional`](crate::TaskSupport) or `Required` serves a
//! `tools/call` whose request declares the extension like any other call until its handler first
//! waits (on I/O, a timer, anything not ready at once): input it asked for before that point
//! goes through the usual multi-round `InputRequiredResult`, and a handler that finishes without
//! waiting answers with its plain result. When it waits, the call becomes a task: the task is
//! stored, the client gets a `CreateTaskResult`, and the handler keeps running in the
//! background; input it asks for from then on is published as the task's `inputRequests` and
//! answered through `tasks/update`. A handler can make that switch explicit with
//! [`Context::run_as_task`](crate::Context::run_as_task).
//!
//! Every piece of task state lives in the [`TaskStore`] ([`InMemoryTaskStore`] by default): the
//! status, the outstanding input requests and the answers, the result or error. `tasks/get`,
//! `tasks/update` and `tasks/cancel` only read and write the store, and the running handler
//! learns of answers and cancellation by watching it, so a store shared by several server
//! instances lets any of them serve a task's requests.

use std::collections::{BTreeMap, HashMap};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::{Stream, StreamExt as _};
use mcp_types::ext::tasks::{DetailedTask, Task, TaskStatus};
use mcp_types::{ErrorObject, InputRequest, InputRequests, JsonObject};
use serde_json::Value;
use tokio::sync::watch;

use crate::error::Error;
use crate::principal::Principal;
use crate::telemetry;

mod quota;
mod store;
pub(crate) use quota::{QuotaKey, RunningTasks};
pub use store::*;

/// The task as it stands, marked `failed` first (compare-and-set, so only a task still
/// running is changed) if it is not finished and its handler's lease lapsed: the instance
/// running the handler is gone, and the task would otherwise stay `working` until its TTL.
pub(crate) async fn reap_if_orphaned(
    store: &dyn TaskStore,
    task: TaskRecord,
    lease: Duration,
) -> Result<TaskRecord, StoreError> {
    if task.status.is_terminal() || store.lease_held(&task.id).await? {
        return Ok(task);
    }
    let message = format!(
        "The task's handler stopped running: the server instance running it renewed no lease for {} ms \
         (it stopped or lost its task store), so the task can never finish",
        lease.as_millis()
    );
    let error = ErrorObject::internal_error(message);
    let mut fail = |task: &mut TaskRecord| {
        if task.status.is_terminal() {
            return false;
        }
        task.status = TaskStatus::Failed;
        telemetry::task_status(&task.status);
        task.status_message = Some(error.message.clone());
        task.error = Some(error.clone());
        task.input_requests.clear();
        task.touch();
        true
    };
    Ok(store.update(&task.id, &mut fail).await?.unwrap_or(task))
}

/// [`TaskStore::watch`] for a watcher that does not run the task: while the task is unfinished,
/// its handler's lease is checked every `lease`, and a task whose instance is gone is marked
/// `failed` ([`reap_if_orphaned`]), which the watch then delivers. Without it the watcher would
/// wait until the task expires, since only a read marks such a task.
pub(crate) async fn watch_reaping(
    store: Arc<dyn TaskStore>,
    id: &str,
    lease: Duration,
) -> Result<TaskWatch, StoreError> {
    let states = store.watch(id).await?;
    let checks = tokio::time::interval_at(tokio::time::Instant::now() + lease, lease);
    let state = (states, checks, store, id.to_owned(), false);
    Ok(Box::pin(futures::stream::unfold(state, move |(mut states, mut checks, store, id, finished)| async move {
        loop {
            tokio::select! {
                state = states.next() => {
                    let state = state?;
                    let finished = state.status.is_terminal();
                    return Some((state, (states, checks, store, id, finished)));
                }
                _ = checks.tick(), if !finished => {
                    // A store error here is the next read's to report; the watch goes on.
                    if let Ok(Some(task)) = store.get(&id).await {
                        let _ = reap_if_orphaned(store.as_ref(), task, lease).await;
                    }
                }
            }
        }
    })))
}

/// The task a handler's call became, as its [`Context`] knows it.
pub(crate) struct TaskLink {
    pub id: String,
    pub store: Arc<dyn TaskStore>,
}

/// A `tasks/*` request, decoded.
pub(crate) enum TaskRequest {
    Get(String),
    Update(String, serde_json::Map<String, Value>),
    Cancel(String),
}

/// The params of `tasks/update` as the server reads them: answers stay raw JSON until their key
/// is known to be outstanding (answers to other keys are ignored, whatever their shape).
#[derive(serde::Deserialize)]
pub(crate) struct RawUpdateParams {
    #[serde(rename = "_meta", default)]
    pub meta: Option<mcp_types::RequestMetaObject>,
    #[serde(rename = "taskId")]
    pub task_id: String,
    #[serde(rename = "inputResponses")]
    pub input_responses: serde_json::Map<String, Value>,
}

/// Asks for input inside a task: publishes the requests not yet issued as `inputRequests`
/// (status `input_required`) and waits until every key has an answer. Returns the raw answers.
pub(crate) async fn task_input(
    link: &TaskLink,
    requests: Vec<(String, InputRequest)>,
) -> Result<BTreeMap<String, Value>, Error> {
    let keys: Vec<String> = requests.iter().map(|(key, _)| key.clone()).collect();
    let mut publish = |task: &mut TaskRecord| {
        if task.status.is_terminal() {
            return false;
        }
        let mut changed = false;
        for (key, request) in &requests {
            if !task.answers.contains_key(key) && !task.input_requests.contains_key(key) {
                task.input_requests.insert(key.clone(), request.clone());
                changed = true;
            }
        }
        if !task.input_requests.is_empty() && task.status != TaskStatus::InputRequired {
            task.status = TaskStatus::InputRequired;
            telemetry::task_status(&task.status);
            changed = true;
        }
        if changed {
            task.touch();
        }
        changed
    };
    let gone = || Error::internal("the task ended before its input arrived");
    let store_error = |e: StoreError| Error::internal(format!("the task store failed: {e}"));
    link.store.update(&link.id, &mut publish).await.map_err(store_error)?.ok_or_else(gone)?;
    let mut states = link.store.watch(&link.id).await.map_err(store_error)?;
    while let Some(task) = states.next().await {
        if keys.iter().all(|key| task.answers.contains_key(key)) {
            return Ok(keys.iter().map(|key| (key.clone(), task.answers[key].clone())).collect());
        }
        if task.status.is_terminal() {
            break;
        }
    }
    Err(gone())
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis().try_into().unwrap_or(u64::MAX))
}

/// `2025-11-25T10:30:00.000Z` for a time in milliseconds since the Unix epoch.
pub(crate) fn iso8601(ms: u64) -> String {
    let (days, in_day) = ((ms / 86_400_000) as i64, ms % 86_400_000);
    // Days to a civil date (Howard Hinnant's `civil_from_days`).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    let (hours, minutes) = (in_day / 3_600_000, in_day / 60_000 % 60);
    let (seconds, millis) = (in_day / 1000 % 60, in_day % 1000);
    format!("{year:04}-{month:02}-{day:02}T{hours:02}:{minutes:02}:{seconds:02}.{millis:03}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_8601_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_764_066_600_123), "2025-11-25T10:30:00.123Z");
        assert_eq!(iso8601(4_107_542_399_999), "2100-02-28T23:59:59.999Z");
    }

    #[test]
    fn task_ids_are_128_random_bits() {
        let a = TaskRecord::new(Principal::anonymous(), None, Duration::from_secs(1));
        let b = TaskRecord::new(Principal::anonymous(), None, Duration::from_secs(1));
        assert_eq!(a.id.len(), 32);
        assert!(a.id.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a.id, b.id);
    }

    #[tokio::test]
    async fn the_memory_store_forgets_expired_tasks_and_makes_room_from_finished_ones() {
        let store = InMemoryTaskStore::with_capacity(2);
        let mut expired = TaskRecord::new(Principal::anonymous(), Some(Duration::from_millis(1)), Duration::ZERO);
        expired.created_at_ms -= 10;
        store.create(expired.clone()).await.unwrap();
        assert_eq!(store.get(&expired.id).await.unwrap(), None);
        assert_eq!(store.update(&expired.id, &mut |_| true).await.unwrap(), None);
        assert!(store.watch(&expired.id).await.unwrap().next().await.is_none());

        let running = TaskRecord::new(Principal::anonymous(), None, Duration::ZERO);
        let mut finished = TaskRecord::new(Principal::anonymous(), None, Duration::ZERO);
        finished.status = TaskStatus::Completed;
        store.create(running.clone()).await.unwrap();
        store.create(finished.clone()).await.unwrap();
        let newcomer = TaskRecord::new(Principal::anonymous(), None, Duration::ZERO);
        store.create(newcomer.clone()).await.unwrap();
        assert_eq!(store.get(&finished.id).await.unwrap(), None, "the finished task made room");
        assert!(store.get(&running.id).await.unwrap().is_some());
        let full = store.create(TaskRecord::new(Principal::anonymous(), None, Duration::ZERO)).await;
        assert!(full.unwrap_err().0.contains("full"));
    }

    #[tokio::test]
    async fn watchers_see_the_current_state_then_each_change() {
        let store = InMemoryTaskStore::new();
        let task = TaskRecord::new(Principal::new("alice"), None, Duration::ZERO);
        store.create(task.clone()).await.unwrap();
        let mut states = store.watch(&task.id).await.unwrap();
        assert_eq!(states.next().await.unwrap().status, TaskStatus::Working);
        let unchanged = store.update(&task.id, &mut |_| false).await.unwrap().unwrap();
        assert_eq!(unchanged.status, TaskStatus::Working);
        store
            .update(&task.id, &mut |t| {
                t.status = TaskStatus::Cancelled;
                true
            })
            .await
            .unwrap();
        assert_eq!(states.next().await.unwrap().status, TaskStatus::Cancelled);
        store.remove(&task.id).await.unwrap();
        assert!(states.next().await.is_none());
    }
}
