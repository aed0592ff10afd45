//! The tasks extension, `io.modelcontextprotocol/tasks` (SEP-2663): a server may answer a
//! `tools/call` with a task handle ([`CreateTaskResult`], `resultType: "task"`) and the client
//! follows the task with `tasks/get`, answers its input requests with `tasks/update`, and may
//! `tasks/cancel` it; `notifications/tasks` pushes status changes on a `subscriptions/listen`
//! stream.
//!
//! Written by hand from the extension's official schema, `schema/draft/schema.ts` of
//! github.com/modelcontextprotocol/ext-tasks at commit `e4345978be1f602f1fc48d89051e8559dd5302a6`
//! (and its `specification/draft/tasks.md`). The types `cargo xtask codegen` generates from the
//! same schema (`schema/pins.toml`, `[extensions.ext-tasks]`) are in [`schema`]; the server and
//! client move onto them, and this module's hand-written types go (issue 28).
//!
//! Unknown members of every object survive decode → encode (`extra`), and an unknown task
//! status decodes as [`TaskStatus::Other`].
//!
//! ```
//! use mcp_types::ext::tasks::{CallToolOutcomeWithTask, GetTaskResult, TaskStatus};
//!
//! let created: CallToolOutcomeWithTask = serde_json::from_str(r#"{"resultType":"task",
//!     "taskId":"786512e2","status":"working","createdAt":"2025-11-25T10:30:00Z",
//!     "lastUpdatedAt":"2025-11-25T10:30:00Z","ttlMs":60000,"pollIntervalMs":5000}"#).unwrap();
//! let CallToolOutcomeWithTask::Task(created) = created else { panic!() };
//! assert_eq!(created.task.poll_interval(), Some(std::time::Duration::from_secs(5)));
//!
//! let polled: GetTaskResult = serde_json::from_str(r#"{"resultType":"complete",
//!     "taskId":"786512e2","status":"completed","createdAt":"2025-11-25T10:30:00Z",
//!     "lastUpdatedAt":"2025-11-25T10:50:00Z","ttlMs":60000,
//!     "result":{"content":[{"type":"text","text":"Hello, Luca!"}],"isError":false}}"#).unwrap();
//! assert_eq!(polled.task.task.status, TaskStatus::Completed);
//! let result: mcp_types::CallToolResult = polled.task.result_as().unwrap().unwrap();
//! assert_eq!(result.is_error, Some(false));
//! ```

use std::fmt;
use std::time::Duration;

/// Every definition of the extension's schema, generated: its own types (`Task`, `GetTaskResult`,
/// `TaskStatusNotification`, ...), with `Request`/`Notification` for its methods, and the core
/// definitions it restates re-exported from [`crate::v2026_07_28`].
pub mod schema {
    pub use crate::generated::ext_tasks::*;
}

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::ext::{ext_notification, ext_request};
use crate::{
    CallToolResult, ErrorObject, InputRequests, InputRequiredResult, InputResponses, JsonObject,
    NotificationMetaObject, RequestMetaObject, ResultMetaObject, ResultType,
};

pub use crate::ext::TASKS as EXTENSION_ID;

/// The `resultType` of a [`CreateTaskResult`].
pub const RESULT_TYPE_TASK: &str = "task";

/// The status of a task.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskStatus {
    /// `working`: the request is being processed.
    Working,
    /// `input_required`: the task waits for the answers to its `inputRequests`.
    InputRequired,
    /// `completed`: the result is available (a tool result with `isError: true` included).
    Completed,
    /// `failed`: the request ended with a JSON-RPC error.
    Failed,
    /// `cancelled`: the request was cancelled before it completed.
    Cancelled,
    /// A status this crate does not know, kept as received.
    Other(String),
}

impl TaskStatus {
    /// The wire string (`"working"`, `"input_required"`, …).
    pub fn as_str(&self) -> &str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Other(other) => other,
        }
    }

    /// `completed`, `failed` or `cancelled`: the task will not change any more.
    pub fn is_terminal(&self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }
}

impl From<&str> for TaskStatus {
    fn from(status: &str) -> Self {
        match status {
            "working" => TaskStatus::Working,
            "input_required" => TaskStatus::InputRequired,
            "completed" => TaskStatus::Completed,
            "failed" => TaskStatus::Failed,
            "cancelled" => TaskStatus::Cancelled,
            other => TaskStatus::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for TaskStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskStatus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let status = crate::private::Str::deserialize(d)?;
        Ok(TaskStatus::from(&*status.0))
    }
}

/// The state every task carries (the schema's `Task`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The task's id, chosen by the server.
    pub task_id: String,
    /// Where the task stands.
    pub status: TaskStatus,
    /// A human-readable description of the current state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601 time of creation.
    pub created_at: String,
    /// ISO 8601 time of the last change.
    pub last_updated_at: String,
    /// Milliseconds from creation after which the server may discard the task; `null` (`None`)
    /// for unlimited. Always encoded (the schema requires the member); an absent one decodes as
    /// `None`.
    pub ttl_ms: Option<i64>,
    /// Suggested milliseconds between two `tasks/get`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<i64>,
    /// Members this crate does not know, kept for re-encoding.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Task {
    /// A task with the required members (`pollIntervalMs` and `statusMessage` unset).
    pub fn new(
        task_id: impl Into<String>,
        status: TaskStatus,
        created_at: impl Into<String>,
        last_updated_at: impl Into<String>,
        ttl_ms: Option<i64>,
    ) -> Self {
        Task {
            task_id: task_id.into(),
            status,
            status_message: None,
            created_at: created_at.into(),
            last_updated_at: last_updated_at.into(),
            ttl_ms,
            poll_interval_ms: None,
            extra: JsonObject::new(),
        }
    }

    /// `pollIntervalMs` as a duration, a negative value counting as 0.
    pub fn poll_interval(&self) -> Option<Duration> {
        self.poll_interval_ms.map(|ms| Duration::from_millis(ms.max(0) as u64))
    }

    /// `ttlMs` as a duration (`None`: unlimited), a negative value counting as 0.
    pub fn ttl(&self) -> Option<Duration> {
        self.ttl_ms.map(|ms| Duration::from_millis(ms.max(0) as u64))
    }
}

/// A task with the payload of its status (the schema's `DetailedTask` union, flattened):
/// `inputRequests` when `input_required`, `result` when `completed`, `error` when `failed`.
/// Used by `tasks/get` ([`GetTaskResult`]) and `notifications/tasks`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetailedTask {
    /// The task's state (flattened into the object).
    #[serde(flatten)]
    pub task: Task,
    /// `input_required`: the outstanding server-to-client requests, by key (each key unique
    /// over the task's life).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// `completed`: the result of the original request (a `CallToolResult` for `tools/call`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<JsonObject>,
    /// `failed`: the JSON-RPC error the request ended with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

impl DetailedTask {
    /// A task with no payload (`working` or `cancelled`).
    pub fn new(task: Task) -> Self {
        DetailedTask { task, input_requests: None, result: None, error: None }
    }

    /// The `result` decoded as `T` (for a `tools/call` task, [`CallToolResult`]); `None` when
    /// there is none.
    pub fn result_as<T: DeserializeOwned>(&self) -> Option<Result<T, serde_json::Error>> {
        let result = self.result.as_ref()?;
        Some(T::deserialize(Value::Object(result.clone())))
    }
}

/// The result of a request the server chose to run as a task (`resultType: "task"`): the task's
/// first state, flat (`Result & Task`), without any status payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateTaskResult {
    /// The result's `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMetaObject>,
    /// Always `"task"` ([`RESULT_TYPE_TASK`]); decoding refuses any other value.
    #[serde(rename = "resultType", deserialize_with = "task_result_type")]
    pub result_type: ResultType,
    /// The task's first state (flattened into the object).
    #[serde(flatten)]
    pub task: Task,
}

impl CreateTaskResult {
    /// A `resultType: "task"` result for `task`.
    pub fn new(task: Task) -> Self {
        CreateTaskResult { meta: None, result_type: ResultType::Other(RESULT_TYPE_TASK.to_owned()), task }
    }
}

fn task_result_type<'de, D: Deserializer<'de>>(d: D) -> Result<ResultType, D::Error> {
    let result_type = ResultType::deserialize(d)?;
    if result_type.as_str() == RESULT_TYPE_TASK {
        Ok(result_type)
    } else {
        Err(serde::de::Error::custom(format_args!(
            "a CreateTaskResult has `resultType` \"task\", found {:?}",
            result_type.as_str()
        )))
    }
}

/// The result of `tasks/get`: the task and its status payload (`resultType: "complete"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetTaskResult {
    /// The result's `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMetaObject>,
    /// `"complete"`; absent decodes as `complete`.
    #[serde(rename = "resultType", default)]
    pub result_type: ResultType,
    /// The task and its status payload (flattened into the object).
    #[serde(flatten)]
    pub task: DetailedTask,
}

impl GetTaskResult {
    /// A `complete` result for `task`.
    pub fn new(task: DetailedTask) -> Self {
        GetTaskResult { meta: None, result_type: ResultType::Complete, task }
    }
}

/// The empty acknowledgement of `tasks/update` and `tasks/cancel` (`resultType: "complete"`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TaskAck {
    /// The result's `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMetaObject>,
    /// `"complete"`; absent decodes as `complete`.
    #[serde(rename = "resultType", default)]
    pub result_type: ResultType,
    /// Members this crate does not know, kept for re-encoding.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The result of `tasks/update`.
pub type UpdateTaskResult = TaskAck;
/// The result of `tasks/cancel`.
pub type CancelTaskResult = TaskAck;

/// The params of `tasks/get` and `tasks/cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskIdParams {
    /// The per-request `_meta` of the 2026-07-28 wire (protocol version, client capabilities).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMetaObject>,
    /// The task's id.
    #[serde(rename = "taskId")]
    pub task_id: String,
    /// Members this crate does not know, kept for re-encoding.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl TaskIdParams {
    /// The params for the task `task_id`.
    pub fn new(task_id: impl Into<String>) -> Self {
        TaskIdParams { meta: None, task_id: task_id.into(), extra: JsonObject::new() }
    }
}

/// The params of `tasks/get`.
pub type GetTaskRequestParams = TaskIdParams;
/// The params of `tasks/cancel`.
pub type CancelTaskRequestParams = TaskIdParams;

/// The params of `tasks/update`: answers to outstanding `inputRequests`, by their keys.
///
/// A server ignores answers to keys that are not outstanding (never issued, already answered);
/// it may accept a subset, the task staying `input_required` until the rest arrive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpdateTaskRequestParams {
    /// The per-request `_meta` of the 2026-07-28 wire (protocol version, client capabilities).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMetaObject>,
    /// The task's id.
    #[serde(rename = "taskId")]
    pub task_id: String,
    /// The answers, by the keys of the task's `inputRequests`.
    #[serde(rename = "inputResponses")]
    pub input_responses: InputResponses,
    /// Members this crate does not know, kept for re-encoding.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl UpdateTaskRequestParams {
    /// The params answering `input_responses` for the task `task_id`.
    pub fn new(task_id: impl Into<String>, input_responses: InputResponses) -> Self {
        UpdateTaskRequestParams { meta: None, task_id: task_id.into(), input_responses, extra: JsonObject::new() }
    }
}

/// The params of `notifications/tasks`: the full task state, as `tasks/get` would return it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskStatusNotificationParams {
    /// The notification's `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMetaObject>,
    /// The task and its status payload (flattened into the object).
    #[serde(flatten)]
    pub task: DetailedTask,
}

ext_request!(
    /// `tasks/get`: the task's current state and status payload.
    GetTask => GetTaskRequest, "tasks/get", TaskIdParams, GetTaskResult
);
ext_request!(
    /// `tasks/update`: answers to the task's outstanding `inputRequests`.
    UpdateTask => UpdateTaskRequest, "tasks/update", UpdateTaskRequestParams, TaskAck
);
ext_request!(
    /// `tasks/cancel`: asks the server to stop the task (cooperative; acknowledged at once).
    CancelTask => CancelTaskRequest, "tasks/cancel", TaskIdParams, TaskAck
);
ext_notification!(
    /// `notifications/tasks`: a task's new state, on a `subscriptions/listen` stream that asked
    /// for its id.
    TaskStatusChanged => TaskStatusNotification, "notifications/tasks", TaskStatusNotificationParams
);

/// The extension's addition to `subscriptions/listen`'s `notifications` filter (and to the
/// acknowledgement's): the task ids whose `notifications/tasks` the client wants (or the server
/// agreed to send). Carried in [`SubscriptionFilter::extra`](crate::SubscriptionFilter).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TaskSubscription {
    /// The task ids (`None`: the member is absent).
    #[serde(rename = "taskIds", default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<String>>,
}

impl TaskSubscription {
    /// The `taskIds` member of a filter, if it has one (`Err` if it is not a list of strings).
    pub fn of(filter: &crate::SubscriptionFilter) -> Result<Self, serde_json::Error> {
        match filter.extra.get("taskIds") {
            None => Ok(TaskSubscription::default()),
            Some(ids) => Ok(TaskSubscription { task_ids: Some(Vec::<String>::deserialize(ids)?) }),
        }
    }
}

/// The result of a `tools/call` made with the extension declared, by `resultType`: the tool's
/// result (`complete` or absent), an MRTR round (`input_required`), or a task (`task`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallToolOutcomeWithTask {
    /// `complete` (or absent): the tool's result.
    Complete(CallToolResult),
    /// `input_required`: a multi-round-trip request round.
    InputRequired(InputRequiredResult),
    /// `task`: the call runs as a task; follow it with `tasks/get`.
    Task(CreateTaskResult),
}

impl Serialize for CallToolOutcomeWithTask {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            CallToolOutcomeWithTask::Complete(result) => result.serialize(s),
            CallToolOutcomeWithTask::InputRequired(result) => result.serialize(s),
            CallToolOutcomeWithTask::Task(result) => result.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for CallToolOutcomeWithTask {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let value = Value::deserialize(d)?;
        let result_type = match value.get("resultType") {
            None => "complete",
            Some(Value::String(result_type)) => result_type.as_str(),
            Some(other) => return Err(D::Error::custom(format_args!("`resultType` must be a string, found {other}"))),
        };
        match result_type {
            "complete" => CallToolResult::deserialize(value).map(CallToolOutcomeWithTask::Complete),
            "input_required" => InputRequiredResult::deserialize(value).map(CallToolOutcomeWithTask::InputRequired),
            RESULT_TYPE_TASK => CreateTaskResult::deserialize(value).map(CallToolOutcomeWithTask::Task),
            other => {
                return Err(D::Error::custom(format_args!(
                    "unknown `resultType` {other:?} for tools/call (expected complete, input_required or task)"
                )));
            }
        }
        .map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip<T: Serialize + DeserializeOwned + PartialEq + fmt::Debug>(wire: Value) -> T {
        let decoded: T = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(serde_json::to_value(&decoded).unwrap(), wire, "re-encoding changed the message");
        decoded
    }

    // The wire examples of specification/draft/tasks.md (ext-tasks @ e4345978).
    #[test]
    fn create_task_result_is_flat_and_keeps_unknown_members() {
        let created: CreateTaskResult = round_trip(json!({
            "resultType": "task",
            "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
            "status": "working",
            "statusMessage": "The operation is now in progress.",
            "createdAt": "2025-11-25T10:30:00Z",
            "lastUpdatedAt": "2025-11-25T10:40:00Z",
            "ttlMs": 60000,
            "pollIntervalMs": 5000,
            "vendor": {"x": 1}
        }));
        assert_eq!(created.task.status, TaskStatus::Working);
        assert_eq!(created.task.ttl(), Some(Duration::from_secs(60)));
        assert_eq!(created.task.extra["vendor"], json!({"x": 1}));
        let err = serde_json::from_value::<CreateTaskResult>(json!({
            "resultType": "complete", "taskId": "t", "status": "working",
            "createdAt": "x", "lastUpdatedAt": "x", "ttlMs": null
        }))
        .unwrap_err()
        .to_string();
        assert!(err.contains("\"task\""), "{err}");
    }

    #[test]
    fn get_task_results_carry_the_payload_of_their_status() {
        let input: GetTaskResult = round_trip(json!({
            "resultType": "complete",
            "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
            "status": "input_required",
            "createdAt": "2025-11-25T10:30:00Z",
            "lastUpdatedAt": "2025-11-25T10:50:00Z",
            "ttlMs": 3600000,
            "pollIntervalMs": 5000,
            "inputRequests": {"name": {"method": "elicitation/create", "params": {
                "mode": "form", "message": "Please enter your name.",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}},
                                    "required": ["name"]}}}}
        }));
        assert_eq!(input.task.task.status, TaskStatus::InputRequired);
        assert!(matches!(input.task.input_requests.as_ref().unwrap()["name"], crate::InputRequest::Elicit(_)));

        let failed: GetTaskResult = round_trip(json!({
            "resultType": "complete",
            "taskId": "786512e2", "status": "failed",
            "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:40:00Z",
            "ttlMs": null,
            "statusMessage": "Tool execution failed: API rate limit exceeded",
            "error": {"code": -32603, "message": "API rate limit exceeded"}
        }));
        assert_eq!(failed.task.error.as_ref().unwrap().code, -32603);
        assert_eq!(failed.task.task.ttl_ms, None);

        let unknown: GetTaskResult = round_trip(json!({
            "resultType": "complete", "taskId": "t", "status": "paused",
            "createdAt": "x", "lastUpdatedAt": "y", "ttlMs": 5, "progress": 0.5
        }));
        assert_eq!(unknown.task.task.status, TaskStatus::Other("paused".into()));
        assert!(!unknown.task.task.status.is_terminal());
        assert_eq!(unknown.task.task.extra["progress"], json!(0.5));
    }

    #[test]
    fn requests_and_notifications_have_their_envelopes() {
        let get: GetTaskRequest = round_trip(json!({
            "jsonrpc": "2.0", "id": 3, "method": "tasks/get",
            "params": {"taskId": "786512e2-9e0d-44bd-8f29-789f320fe840"}
        }));
        assert_eq!(get.params.task_id, "786512e2-9e0d-44bd-8f29-789f320fe840");
        assert_eq!(GetTaskRequest::METHOD, "tasks/get");
        assert_eq!(<CancelTaskRequest as crate::Request>::METHOD, "tasks/cancel");

        let update: UpdateTaskRequest = round_trip(json!({
            "jsonrpc": "2.0", "id": 6, "method": "tasks/update",
            "params": {"taskId": "786512e2", "inputResponses": {
                "name": {"action": "accept", "content": {"input": "Luca"}}}}
        }));
        assert!(matches!(update.params.input_responses["name"], crate::InputResponse::Elicit(_)));

        let wrong = serde_json::from_value::<GetTaskRequest>(json!({
            "jsonrpc": "2.0", "id": 1, "method": "tasks/cancel", "params": {"taskId": "t"}
        }));
        assert!(wrong.unwrap_err().to_string().contains("expected the method `tasks/get`"));

        let note: TaskStatusNotification = round_trip(json!({
            "jsonrpc": "2.0", "method": "notifications/tasks",
            "params": {"taskId": "786512e2", "status": "completed",
                "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:50:00Z",
                "ttlMs": 60000, "pollIntervalMs": 5000,
                "result": {"content": [{"type": "text", "text": "Operation completed successfully."}],
                           "isError": false}}
        }));
        let result: CallToolResult = note.params.task.result_as().unwrap().unwrap();
        assert_eq!(result.is_error, Some(false));

        let ack: <UpdateTaskRequest as crate::Request>::Result = round_trip(json!({"resultType": "complete"}));
        assert_eq!(ack.result_type, ResultType::Complete);
    }

    #[test]
    fn tools_call_results_decode_by_result_type() {
        let plain: CallToolOutcomeWithTask = serde_json::from_value(json!({"content": []})).unwrap();
        assert!(matches!(plain, CallToolOutcomeWithTask::Complete(_)));
        let more: CallToolOutcomeWithTask =
            serde_json::from_value(json!({"resultType": "input_required", "requestState": "s"})).unwrap();
        assert!(matches!(more, CallToolOutcomeWithTask::InputRequired(_)));
        let task: CallToolOutcomeWithTask = round_trip(json!({"resultType": "task", "taskId": "t",
            "status": "working", "createdAt": "a", "lastUpdatedAt": "b", "ttlMs": null}));
        assert!(matches!(task, CallToolOutcomeWithTask::Task(_)));
        let err = serde_json::from_value::<CallToolOutcomeWithTask>(json!({"resultType": "stream"})).unwrap_err();
        assert!(err.to_string().contains("unknown `resultType` \"stream\""), "{err}");
    }

    #[test]
    fn task_ids_ride_in_the_subscription_filter() {
        let filter: crate::SubscriptionFilter =
            serde_json::from_value(json!({"toolsListChanged": true, "taskIds": ["a", "b"]})).unwrap();
        assert_eq!(TaskSubscription::of(&filter).unwrap().task_ids, Some(vec!["a".into(), "b".into()]));
        let bad: crate::SubscriptionFilter = serde_json::from_value(json!({"taskIds": "a"})).unwrap();
        assert!(TaskSubscription::of(&bad).is_err());
        assert!(crate::ext::declares(&crate::ext::client_capabilities(EXTENSION_ID), EXTENSION_ID));
        assert!(!crate::ext::declares(&crate::ClientCapabilities::default(), EXTENSION_ID));
    }
}
