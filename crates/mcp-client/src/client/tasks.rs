//! The client half of the tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): a
//! [`TaskHandle`] follows a task with `tasks/get`, answers its input requests with the
//! application's [`Handlers`](crate::Handlers) (`tasks/update`) and cancels it (`tasks/cancel`).
//! Every `tasks/*` request carries the task id as its `Mcp-Name` (over HTTP).

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use mcp_types::ext::tasks::{CreateTaskResult, GetTaskResult, TaskStatus};
use mcp_types::{CallToolResult, ErrorObject, InputResponses, JsonObject};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::client::options::CallOptions;
use crate::client::results::{decode, result_type_is, tool_result};
use crate::client::{Call, Client, tool_arguments};
use crate::core::Wants;
use crate::error::Error;

/// How long to wait between two `tasks/get` when the server suggests no interval.
const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);
/// The shortest wait between two `tasks/get`, whatever the server suggests.
const MIN_POLL_INTERVAL: Duration = Duration::from_millis(10);

/// How a `tools/call` started by [`Client::call_tool_as_task`] went: the server answered at
/// once, or made the call a task.
#[derive(Debug)]
// Matched at once, never stored in bulk: boxing the result would only cost an allocation.
#[allow(clippy::large_enum_variant)]
pub enum ToolCall {
    /// The server answered at once.
    Complete(CallToolResult),
    /// The call became a task.
    Task(TaskHandle),
}

/// A task on the server: its id and the requests that follow it. Cheap to clone; dropping it
/// does not cancel the task (use [`cancel`](Self::cancel)).
#[derive(Clone)]
pub struct TaskHandle {
    client: Client,
    task_id: String,
    poll_interval: Option<Duration>,
    timeout: Option<Duration>,
    /// The call's own input handler, if it has one.
    input: Option<crate::handlers::InputHook>,
    /// Told each state [`TaskHandle::wait`] polls.
    on_status: Option<crate::handlers::TaskStatusFn>,
}

impl std::fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskHandle")
            .field("task_id", &self.task_id)
            .field("poll_interval", &self.poll_interval)
            .field("timeout", &self.timeout)
            .field("input", &self.input)
            .field("on_status", &self.on_status.is_some())
            .finish_non_exhaustive()
    }
}

impl TaskHandle {
    /// The handle of the task a `tools/call` result announces.
    pub(crate) fn created(client: &Client, result: &RawValue, options: CallOptions) -> Result<Self, Error> {
        let created: CreateTaskResult = decode("tools/call", result)?;
        let mut handle = TaskHandle::new(client, created.task_id.clone(), options);
        handle.poll_interval = created.poll_interval();
        Ok(handle)
    }

    fn new(client: &Client, task_id: String, options: CallOptions) -> Self {
        let timeout = options.request_timeout();
        TaskHandle {
            client: client.clone(),
            task_id,
            poll_interval: None,
            timeout,
            input: options.hooks.input,
            on_status: options.hooks.task_status,
        }
    }

    /// Calls `callback` with each state [`TaskHandle::wait`] polls (status, `statusMessage`,
    /// input requested), as [`CallOptions::on_task_status`] does for a call.
    pub fn on_status(
        mut self,
        callback: impl Fn(&mcp_types::ext::tasks::GetTaskResult) + Send + Sync + 'static,
    ) -> Self {
        self.on_status = Some(std::sync::Arc::new(callback));
        self
    }

    /// The task id (keep it to resume with [`Client::task`], even from another process).
    pub fn id(&self) -> &str {
        &self.task_id
    }

    fn call(&self, method: &'static str, mut params: JsonObject) -> Call {
        params.insert("taskId".into(), json!(self.task_id));
        let mut call = Call::new(&self.client, method, params);
        if let Some(input) = &self.input {
            // The call's own capabilities (they may be what declared the tasks extension).
            let mut options = CallOptions::default();
            options.hooks.input = Some(input.clone());
            call = call.with_options(options);
        }
        call.name = Some(self.task_id.clone());
        if let Some(timeout) = self.timeout {
            call.timeout = Some(timeout);
        }
        call
    }

    /// `tasks/get`: the task's state with its payload (input requests, result or error).
    pub async fn get(&self) -> Result<GetTaskResult, Error> {
        let result = self.client.request(&self.call("tasks/get", JsonObject::new())).await?;
        decode("tasks/get", &result)
    }

    /// The task's current status (one `tasks/get`).
    pub async fn status(&self) -> Result<TaskStatus, Error> {
        Ok(self.get().await?.status())
    }

    /// `tasks/update`: answers some of the task's outstanding input requests, by key.
    pub async fn update(&self, responses: InputResponses) -> Result<(), Error> {
        let responses = serde_json::to_value(responses).map_err(|e| Error::protocol(e.to_string()))?;
        let Value::Object(responses) = responses else { unreachable!("a map encodes as an object") };
        self.update_raw(responses).await
    }

    async fn update_raw(&self, responses: JsonObject) -> Result<(), Error> {
        let mut params = JsonObject::new();
        params.insert("inputResponses".into(), Value::Object(responses));
        self.client.request(&self.call("tasks/update", params)).await.map(drop)
    }

    /// `tasks/cancel`: asks the server to stop the task (acknowledged at once; the task then
    /// ends `cancelled` unless it finished first).
    pub async fn cancel(&self) -> Result<(), Error> {
        self.client.request(&self.call("tasks/cancel", JsonObject::new())).await.map(drop)
    }

    /// As [`TaskHandle::wait`], but the task is cancelled (`tasks/cancel`) if this future is
    /// dropped before the task ended, or if following it failed (transport, handler, timeout):
    /// what [`Client::call_tool`] does with a call that became a task.
    pub async fn wait_or_cancel(&self) -> Result<CallToolResult, Error> {
        let cancel_on_drop = CancelOnDrop::new(self);
        let outcome = self.wait().await;
        let ended = match &outcome {
            Ok(_) | Err(Error::TaskCancelled { .. }) => true,
            Err(Error::Rpc { method, .. }) => method == "tools/call",
            Err(_) => false,
        };
        if ended {
            cancel_on_drop.disarm();
        }
        outcome
    }

    /// Follows the task to its end: polls `tasks/get` every `pollIntervalMs` (500 ms when the
    /// server suggests none, never under 10 ms), answers input requests with the client's
    /// handlers, and returns the tool's result. A failed task is its JSON-RPC error
    /// ([`Error::Rpc`] for `tools/call`); a cancelled one is [`Error::TaskCancelled`].
    pub async fn wait(&self) -> Result<CallToolResult, Error> {
        let mut interval = self.poll_interval;
        let mut answered = HashSet::new();
        loop {
            let state = self.get().await?;
            if let Some(on_status) = &self.on_status {
                on_status(&state);
            }
            if let Some(suggested) = state.poll_interval() {
                interval = Some(suggested);
            }
            match state.status() {
                TaskStatus::Completed => {
                    return match state.result_as::<CallToolResult>() {
                        Some(Ok(result)) => Ok(result),
                        Some(Err(e)) => Err(Error::protocol(format!("malformed result of task {}: {e}", self.task_id))),
                        None => Err(Error::protocol(format!("task {} completed without a result", self.task_id))),
                    };
                }
                TaskStatus::Failed => {
                    let error = state.error().cloned().unwrap_or_else(|| {
                        ErrorObject::new(mcp_types::error_codes::INTERNAL_ERROR, "the task failed without an error")
                    });
                    return Err(Error::Rpc { method: "tools/call".into(), error, http_status: None });
                }
                TaskStatus::Cancelled => {
                    return Err(Error::TaskCancelled {
                        task_id: self.task_id.clone(),
                        message: state.status_message().map(str::to_owned),
                    });
                }
                TaskStatus::InputRequired => {
                    // A key answered once stays answered, even if a poll still lists it.
                    let requests: BTreeMap<String, Value> = state
                        .input_requests()
                        .into_iter()
                        .flatten()
                        .filter(|(key, _)| !answered.contains(*key))
                        .map(|(key, request)| (key.clone(), serde_json::to_value(request).unwrap_or(Value::Null)))
                        .collect();
                    if !requests.is_empty() {
                        let what = format!("task {}", self.task_id);
                        let responses = self.client.answer_inputs(&what, requests, self.input.as_ref()).await?;
                        answered.extend(responses.keys().cloned());
                        self.update_raw(responses).await?;
                        continue;
                    }
                }
                _ => {}
            }
            tokio::time::sleep(interval.unwrap_or(DEFAULT_POLL_INTERVAL).max(MIN_POLL_INTERVAL)).await;
        }
    }
}

/// Cancels the task of a [`TaskHandle::wait_or_cancel`] whose future is dropped before the task
/// ended (`tasks/cancel`, sent from a spawned task: a drop cannot wait).
struct CancelOnDrop {
    handle: Option<TaskHandle>,
}

impl CancelOnDrop {
    fn new(handle: &TaskHandle) -> Self {
        CancelOnDrop { handle: Some(handle.clone()) }
    }

    /// The task ended (or the caller knows it did): nothing to cancel.
    fn disarm(mut self) {
        self.handle = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(handle) = self.handle.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        runtime.spawn(async move {
            if let Err(e) = handle.cancel().await {
                tracing::debug!(task = %handle.task_id, error = %e, "could not cancel an abandoned task");
            }
        });
    }
}

impl Client {
    /// Calls a tool and hands a task to the caller instead of following it: the server's result
    /// when it answered at once, or a [`TaskHandle`] (with [`ClientBuilder::tasks`](crate::ClientBuilder::tasks);
    /// without it the server never makes a call a task).
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: impl serde::Serialize,
        options: CallOptions,
    ) -> Result<ToolCall, Error> {
        let arguments = tool_arguments(name, arguments)?;
        let answer = self.start_tool_call(name, arguments, options.clone(), Wants::ToolResult).await?;
        if let Some(raw) = answer.unsettled()
            && result_type_is(raw, mcp_types::ext::tasks::RESULT_TYPE_TASK)
        {
            return TaskHandle::created(self, raw, options).map(ToolCall::Task);
        }
        tool_result(answer).map(ToolCall::Complete)
    }

    /// The task `task_id` (from [`TaskHandle::id`]), to follow or cancel it from this client:
    /// after a restart, or from another process. The server answers only the principal that
    /// created the task, and only to a client that declares the extension
    /// ([`ClientBuilder::tasks`](crate::ClientBuilder::tasks)).
    pub fn task(&self, task_id: impl Into<String>) -> TaskHandle {
        TaskHandle::new(self, task_id.into(), CallOptions::default())
    }
}
