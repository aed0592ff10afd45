//! The server's side of the tasks extension: a waiting `tools/call` becomes a task, and
//! `tasks/get`, `tasks/update` and `tasks/cancel` read and write the task store.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt as _, StreamExt as _};
use mcp_types::ext::tasks::*;
use mcp_types::{CallToolResult, ErrorObject, RequestId};
use serde_json::Value;

use super::Server;
use crate::context::{Context, decode_response};
use crate::era::Era;
use crate::error::{Error, input_method};
use crate::message::Outgoing;
use crate::principal::Principal;
use crate::routes::{BoxFuture, error_result};
use crate::tasks::*;
use crate::telemetry;

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
