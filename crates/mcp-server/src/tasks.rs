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
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::{FutureExt as _, Stream, StreamExt as _};
use mcp_types::ext::tasks::{
    CancelTaskResult, CreateTaskResult, DetailedTask, GetTaskResult, Task, TaskStatus, UpdateTaskResult,
};
use mcp_types::{CallToolResult, ErrorObject, InputRequest, InputRequests, JsonObject, RequestId};
use serde_json::Value;
use tokio::sync::watch;

use crate::context::decode_response;
use crate::error::input_method;
use crate::message::Outgoing;
use crate::routes::{BoxFuture, error_result};
use crate::telemetry;
use crate::{Context, Era, Error, Principal, Server};

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

fn store_failure(id: &RequestId, error: StoreError) -> Outgoing {
    Outgoing::error(Some(id), &ErrorObject::internal_error(format!("The task store failed: {error}")))
}

/// The `-32602` for a task that does not exist, expired, or belongs to someone else (the same
/// answer for all three, so that nobody learns of another party's tasks).
fn unknown_task(id: &RequestId, task_id: &str) -> Outgoing {
    Outgoing::error(
        Some(id),
        &ErrorObject::invalid_params(format!("Failed to retrieve task: task not found: {task_id}")),
    )
}

impl Server {
    /// Turns a `tools/call` whose handler is waiting into a task: stores it, lets the handler
    /// run on in the background, and answers with the `CreateTaskResult`.
    pub(crate) async fn start_task(
        &self,
        ctx: &Context,
        client: QuotaKey,
        id: &RequestId,
        handler: BoxFuture<Result<CallToolResult, Error>>,
    ) -> Outgoing {
        let options = self.options();
        let limit = options.max_running_tasks_per_client;
        let Some(slot) = self.running_tasks().admit(client.clone(), limit) else {
            telemetry::refused("task_quota");
            let message = format!(
                "Too many running tasks: {} already run {limit} on this server \
                 (Options::max_running_tasks_per_client); wait for one to end or cancel one",
                client.describe()
            );
            let error = ErrorObject::internal_error(message).with_data(serde_json::json!({ "limit": limit }));
            return Outgoing::error(Some(id), &error);
        };
        let mut record = TaskRecord::new(ctx.principal().clone(), options.task_ttl, options.task_poll_interval);
        record.trace = telemetry::current_trace();
        let store = Arc::clone(self.task_store());
        // Leased before it exists, so that no instance finds it without a lease.
        let lease = options.task_lease;
        if let Err(error) = store.renew_lease(&record.id, lease).await {
            return store_failure(id, error);
        }
        if let Err(error) = store.create(record.clone()).await {
            return store_failure(id, error);
        }
        ctx.attach_task(TaskLink { id: record.id.clone(), store: Arc::clone(&store) });
        telemetry::task_status(&record.status);
        // The task runs in a span of its own, a child of the request that created it.
        let span = telemetry::task_span(&record.id);
        // The slot is held as long as the handler is.
        let handler = Box::pin(async move {
            let _slot = slot;
            handler.await
        });
        let running = run_task(store, record.id.clone(), record.expires_at_ms(), lease, handler);
        tokio::spawn(tracing::Instrument::instrument(running, span));
        self.respond(id, Era::Modern, CreateTaskResult::from(record.detailed().task()))
    }

    /// Serves `tasks/get`, `tasks/update` and `tasks/cancel` for `principal`.
    pub(crate) async fn task_request(&self, principal: &Principal, id: &RequestId, request: TaskRequest) -> Outgoing {
        let store = self.task_store();
        let (method, task_id) = match &request {
            TaskRequest::Get(task_id) => ("tasks/get", task_id.clone()),
            TaskRequest::Update(task_id, _) => ("tasks/update", task_id.clone()),
            TaskRequest::Cancel(task_id) => ("tasks/cancel", task_id.clone()),
        };
        let task_id = task_id.as_str();
        let task = match store.get(task_id).await {
            Ok(Some(task)) if &task.owner == principal => task,
            Ok(_) => return unknown_task(id, task_id),
            Err(error) => return store_failure(id, error),
        };
        // Open until this request is answered.
        let _in_creating_trace = telemetry::task_request_span(method, task_id, task.trace.as_deref());
        let task = match reap_if_orphaned(store.as_ref(), task, self.options().task_lease).await {
            Ok(task) => task,
            Err(error) => return store_failure(id, error),
        };
        let is_update = matches!(request, TaskRequest::Update(..));
        let mut change: Box<dyn FnMut(&mut TaskRecord) -> bool + Send> = match request {
            TaskRequest::Get(_) => return self.respond(id, Era::Modern, GetTaskResult::from(task.detailed())),
            TaskRequest::Update(_, responses) => {
                // Only answers to outstanding keys count; they must fit their request.
                let mut accepted = BTreeMap::new();
                for (key, answer) in responses {
                    let Some(request) = task.input_requests.get(&key) else { continue };
                    let method = input_method(request);
                    if let Err(error) = decode_response(method, answer.clone()) {
                        let error = ErrorObject::invalid_params(format!(
                            "Invalid params for tasks/update: input response `{key}` is not a {method} result: {error}"
                        ));
                        return Outgoing::error(Some(id), &error);
                    }
                    accepted.insert(key, answer);
                }
                Box::new(move |task: &mut TaskRecord| {
                    let mut changed = false;
                    for (key, answer) in &accepted {
                        if task.input_requests.remove(key).is_some() {
                            task.answers.insert(key.clone(), answer.clone());
                            changed = true;
                        }
                    }
                    if changed && task.input_requests.is_empty() && task.status == TaskStatus::InputRequired {
                        task.status = TaskStatus::Working;
                        telemetry::task_status(&task.status);
                    }
                    if changed {
                        task.touch();
                    }
                    changed
                })
            }
            TaskRequest::Cancel(_) => Box::new(|task: &mut TaskRecord| {
                if task.status.is_terminal() {
                    return false;
                }
                task.status = TaskStatus::Cancelled;
                telemetry::task_status(&task.status);
                task.status_message = Some("Cancelled at the client's request".to_owned());
                task.input_requests.clear();
                task.touch();
                true
            }),
        };
        match store.update(task_id, &mut *change).await {
            Ok(Some(_)) if is_update => self.respond(id, Era::Modern, UpdateTaskResult::default()),
            Ok(Some(_)) => self.respond(id, Era::Modern, CancelTaskResult::default()),
            Ok(None) => unknown_task(id, task_id),
            Err(error) => store_failure(id, error),
        }
    }
}

/// Drives a task's handler to its end and records how it ended. The handler is dropped (its
/// cooperative cancellation) when the task reaches a final status some other way (`tasks/cancel`,
/// possibly on another instance) or expires.
async fn run_task(
    store: Arc<dyn TaskStore>,
    task_id: String,
    expires_at_ms: Option<u64>,
    lease: Duration,
    handler: BoxFuture<Result<CallToolResult, Error>>,
) {
    // The heartbeat: while this runs, no instance takes the task for orphaned.
    let heartbeat = async {
        let mut beats = tokio::time::interval((lease / 3).max(Duration::from_millis(1)));
        beats.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            beats.tick().await;
            if let Err(error) = store.renew_lease(&task_id, lease).await {
                tracing::warn!(%task_id, %error, "the task's lease could not be renewed");
            }
        }
    };
    let ended_elsewhere = async {
        match store.watch(&task_id).await {
            Ok(mut states) => {
                while let Some(task) = states.next().await {
                    if task.status.is_terminal() {
                        return;
                    }
                }
            }
            // Without a watch the handler cannot be stopped early, but it still finishes.
            Err(error) => {
                tracing::warn!(%task_id, %error, "cannot watch the task for cancellation");
                std::future::pending::<()>().await;
            }
        }
    };
    let expired = async {
        match expires_at_ms {
            Some(at) => tokio::time::sleep(Duration::from_millis(at.saturating_sub(now_ms()))).await,
            None => std::future::pending().await,
        }
    };
    let outcome = tokio::select! {
        outcome = AssertUnwindSafe(handler).catch_unwind() => outcome,
        () = heartbeat => return,
        () = ended_elsewhere => return,
        () = expired => {
            let _ = store.remove(&task_id).await;
            return;
        }
    };
    let (status, result, error) = match outcome {
        Ok(Ok(result)) => (TaskStatus::Completed, Some(result), None),
        // An execution failure is a tool result the model reads, not a protocol error.
        Ok(Err(Error::Failed(message))) => (TaskStatus::Completed, Some(error_result(message)), None),
        Ok(Err(error)) => (TaskStatus::Failed, None, Some(error.into_error_object())),
        Err(_) => (TaskStatus::Failed, None, Some(ErrorObject::internal_error("The tool's handler panicked"))),
    };
    let result = result.map(|result| match serde_json::to_value(result) {
        Ok(Value::Object(object)) => object,
        _ => JsonObject::new(),
    });
    let mut finish = |task: &mut TaskRecord| {
        if task.status.is_terminal() {
            return false;
        }
        task.status = status;
        telemetry::task_status(&task.status);
        task.status_message = error.as_ref().map(|error| error.message.clone());
        task.result = result.clone();
        task.error = error.clone();
        task.input_requests.clear();
        task.touch();
        true
    };
    if let Err(error) = store.update(&task_id, &mut finish).await {
        tracing::warn!(%task_id, %error, "the task's outcome could not be stored");
    }
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
