//! The client half of the tasks extension (`io.modelcontextprotocol/tasks`) against a real
//! `mcp-server`: over Streamable HTTP on 127.0.0.1 (behind an axum layer that sets the
//! request's `Principal` from a header, and records the `Mcp-*` headers of `tasks/*`
//! requests), and over stdio (this test binary, re-run as the server).
#![cfg(all(feature = "http", feature = "stdio"))]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use mcp_client::types::ext::TASKS;
use mcp_client::types::ext::tasks::TaskStatus;
use mcp_client::types::{CallToolResult, ElicitRequestParams, JsonObject, ObjectSchema, Tool};
use mcp_client::{
    CallOptions, Client, ClientBuilder, ElicitationModes, ElicitationResponse, EraPreference, Error, Handlers,
    StdioCommand, TaskHandle, ToolCall,
};
use mcp_server::http::HttpConfig;
use mcp_server::{Context, Options, Principal, Server, TaskSupport, ToolRoute};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const INVALID_PARAMS: i64 = -32602;
const MISSING_CAPABILITY: i64 = -32021;
const PATIENCE: Duration = Duration::from_secs(10);

// ------------------------------------------------------------------ the server

/// Reports when the `forever` handler is dropped (its task cancelled).
struct Dropped(mpsc::UnboundedSender<()>);

impl Drop for Dropped {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

fn form(key: &str) -> ElicitRequestParams {
    serde_json::from_value(json!({
        "mode": "form",
        "message": format!("Your {key}?"),
        "requestedSchema": { "type": "object", "properties": { key: { "type": "string" } }, "required": [key] },
    }))
    .unwrap()
}

fn answer_of(result: &mcp_client::types::ElicitResult, key: &str) -> String {
    let content = serde_json::to_value(&result.content).unwrap_or_default();
    content[key].as_str().unwrap_or_default().to_owned()
}

fn tool(name: &str) -> Tool {
    Tool::new(ObjectSchema::default(), name)
}

/// Task-capable tools: `work {ms}` sleeps then answers; `tool_error` fails as a tool;
/// `rpc_error` ends with the JSON-RPC error -32000; `two_inputs` asks `first` then `second`
/// from inside its task; `forever` never ends (its drop is reported); `only_task` requires a
/// task; `ask_then_work` asks `name` (a multi round-trip exchange) before it becomes a task.
/// `plain` is never one.
fn server(dropped: mpsc::UnboundedSender<()>) -> Server {
    let mut options = Options::default();
    options.task_poll_interval = Duration::from_millis(20);
    Server::builder("tasks-fixture", "0.0.1")
        .options(options)
        .tool(
            ToolRoute::raw(tool("work"), |_: Context, args: JsonObject| async move {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok::<_, mcp_server::Error>(format!("worked {ms} ms"))
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolRoute::raw(tool("tool_error"), |_: Context, _: JsonObject| async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                Err::<String, _>(mcp_server::Error::failed("the job failed"))
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolRoute::raw(tool("rpc_error"), |_: Context, _: JsonObject| async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                Err::<String, _>(mcp_server::Error::Rpc(mcp_client::types::ErrorObject::new(
                    -32000,
                    "the backend is down",
                )))
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolRoute::raw(tool("two_inputs"), |ctx: Context, _: JsonObject| async move {
                ctx.run_as_task().await;
                let first = ctx.elicit_with("first", form("first")).await?;
                let second = ctx.elicit_with("second", form("second")).await?;
                Ok::<_, mcp_server::Error>(format!(
                    "{} then {}",
                    answer_of(&first, "first"),
                    answer_of(&second, "second")
                ))
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolRoute::raw(tool("forever"), move |ctx: Context, _: JsonObject| {
                let guard = Dropped(dropped.clone());
                async move {
                    let _guard = guard;
                    ctx.run_as_task().await;
                    std::future::pending::<()>().await;
                    Ok::<_, mcp_server::Error>("never")
                }
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolRoute::raw(tool("only_task"), |_: Context, _: JsonObject| async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                Ok::<_, mcp_server::Error>("ran as a task")
            })
            .task_support(TaskSupport::Required),
        )
        .tool(
            ToolRoute::raw(tool("ask_then_work"), |ctx: Context, _: JsonObject| async move {
                let name = ctx.elicit_with("name", form("name")).await?;
                ctx.run_as_task().await;
                tokio::time::sleep(Duration::from_millis(5)).await;
                Ok::<_, mcp_server::Error>(format!("Hello, {}!", answer_of(&name, "name")))
            })
            .task_support(TaskSupport::Required),
        )
        .tool(ToolRoute::raw(tool("plain"), |_: Context, _: JsonObject| async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok::<_, mcp_server::Error>("plain")
        }))
        .build()
        .unwrap()
}

/// `(Mcp-Method, Mcp-Name)` of each `tasks/*` request the server received over HTTP.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

struct Http {
    url: String,
    seen: Seen,
    dropped: mpsc::UnboundedReceiver<()>,
}

/// Serves the fixture on loopback HTTP; the `x-test-principal` header becomes the request's
/// [`Principal`] (the auth layer of these tests).
async fn serve_http() -> Http {
    let (dropped_tx, dropped) = mpsc::unbounded_channel();
    let seen = Seen::default();
    let record = seen.clone();
    let layer = axum::middleware::from_fn(move |mut request: Request, next: Next| {
        let record = record.clone();
        async move {
            let headers = request.headers();
            let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
            let (method, name, principal) = (header("mcp-method"), header("mcp-name"), header("x-test-principal"));
            if let Some(method) = method.filter(|m| m.starts_with("tasks/")) {
                record.lock().unwrap().push((method, name));
            }
            if let Some(name) = principal {
                request.extensions_mut().insert(Principal::new(name));
            }
            next.run(request).await
        }
    });
    let app = mcp_server::http::router(server(dropped_tx), HttpConfig::default()).layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Http { url, seen, dropped }
}

// ------------------------------------------------------------------ the client

/// Answers every form with `<key> answered` for each field it asks.
fn handlers() -> Handlers {
    Handlers::new().elicitation(ElicitationModes::FORM, |request: ElicitRequestParams| async move {
        let request = serde_json::to_value(&request).unwrap();
        let mut content = JsonObject::new();
        for key in request["requestedSchema"]["properties"].as_object().into_iter().flatten().map(|(k, _)| k) {
            content.insert(key.clone(), json!(format!("{key} answered")));
        }
        Ok(ElicitationResponse::accept(content))
    })
}

fn builder(tasks: bool) -> ClientBuilder {
    Client::builder("tasks-test", "1.0").handlers(handlers()).tasks(tasks).request_timeout(PATIENCE)
}

async fn connect(http: &Http, principal: &str, tasks: bool) -> Client {
    builder(tasks).http_header("x-test-principal", principal).connect_http(&http.url).await.unwrap()
}

fn args(value: Value) -> Option<JsonObject> {
    value.as_object().cloned()
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap_or_default().to_owned()
}

fn task_of(call: ToolCall) -> TaskHandle {
    match call {
        ToolCall::Task(handle) => handle,
        ToolCall::Complete(result) => panic!("expected a task, got {result:?}"),
    }
}

/// What every transport must do: complete, fail (as a tool and with a JSON-RPC error), and
/// answer two input requests through the handlers.
async fn lifecycle(client: &Client) {
    assert!(mcp_client::types::ext::declares(client.client_capabilities(), TASKS));
    let result = client.call_tool("work", args(json!({"ms": 50}))).await.unwrap();
    assert_eq!(text(&result), "worked 50 ms");
    let result = client.call_tool("tool_error", ()).await.unwrap();
    assert_eq!(result.is_error, Some(true), "a tool error completes the task: {result:?}");
    let err = client.call_tool("rpc_error", ()).await.unwrap_err();
    let error = err.rpc_error().unwrap_or_else(|| panic!("a JSON-RPC error, not {err}"));
    assert_eq!((error.code.as_i64(), error.message.as_str()), (Some(-32000), "the backend is down"));
    let result = client.call_tool("two_inputs", ()).await.unwrap();
    assert_eq!(text(&result), "first answered then second answered");
    let result = client.call_tool("only_task", ()).await.unwrap();
    assert_eq!(text(&result), "ran as a task");
    let result = client.call_tool("ask_then_work", ()).await.unwrap();
    assert_eq!(text(&result), "Hello, name answered!", "the answer before the task reaches its result");
}

#[tokio::test]
async fn a_task_completes_fails_and_takes_input_over_http() {
    let http = serve_http().await;
    let client = connect(&http, "alice", true).await;
    lifecycle(&client).await;
    let seen = http.seen.lock().unwrap().clone();
    assert!(seen.iter().any(|(method, _)| method == "tasks/get"), "the calls were tasks: {seen:?}");
    assert!(seen.iter().any(|(method, _)| method == "tasks/update"), "inputs went by tasks/update: {seen:?}");
    assert!(seen.iter().all(|(_, name)| name.as_deref().is_some_and(|n| !n.is_empty())), "{seen:?}");
}

#[tokio::test]
async fn every_task_request_names_its_task_over_http() {
    let http = serve_http().await;
    let client = connect(&http, "alice", true).await;
    let handle = task_of(client.call_tool_as_task("two_inputs", (), CallOptions::new()).await.unwrap());
    assert_eq!(text(&handle.wait().await.unwrap()), "first answered then second answered");
    assert_eq!(handle.status().await.unwrap(), TaskStatus::Completed);
    let seen = http.seen.lock().unwrap().clone();
    let methods: Vec<&str> = seen.iter().map(|(method, _)| method.as_str()).collect();
    assert_eq!(methods.iter().filter(|m| **m == "tasks/update").count(), 2, "one update per question: {methods:?}");
    for (method, name) in &seen {
        assert_eq!(name.as_deref(), Some(handle.id()), "Mcp-Name of {method}");
    }
}

#[tokio::test]
async fn dropping_the_call_cancels_its_task() {
    let mut http = serve_http().await;
    let client = connect(&http, "alice", true).await;
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("forever", ()).await }
    });
    // Dropped once the call is a task the client polls.
    let polling = async {
        while !http.seen.lock().unwrap().iter().any(|(method, _)| method == "tasks/get") {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(PATIENCE, polling).await.expect("the call became a task");
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    tokio::time::timeout(PATIENCE, http.dropped.recv()).await.expect("the server dropped the handler");
    let seen = http.seen.lock().unwrap().clone();
    let (_, task_id) = seen.iter().find(|(method, _)| method == "tasks/cancel").expect("a tasks/cancel was sent");
    let handle = client.task(task_id.clone().unwrap());
    assert_eq!(handle.status().await.unwrap(), TaskStatus::Cancelled);
    match handle.wait().await {
        Err(Error::TaskCancelled { task_id, .. }) => assert_eq!(task_id, handle.id()),
        other => panic!("expected TaskCancelled, got {other:?}"),
    }
}

#[tokio::test]
async fn a_handle_cancels_and_the_waiter_sees_it() {
    let mut http = serve_http().await;
    let client = connect(&http, "alice", true).await;
    let handle = task_of(client.call_tool_as_task("forever", (), CallOptions::new()).await.unwrap());
    let waiter = tokio::spawn({
        let handle = handle.clone();
        async move { handle.wait().await }
    });
    assert_eq!(handle.status().await.unwrap(), TaskStatus::Working);
    handle.cancel().await.unwrap();
    tokio::time::timeout(PATIENCE, http.dropped.recv()).await.expect("the server dropped the handler");
    let outcome = tokio::time::timeout(PATIENCE, waiter).await.unwrap().unwrap();
    assert!(matches!(outcome, Err(Error::TaskCancelled { .. })), "{outcome:?}");
}

#[tokio::test]
async fn another_principal_is_refused_and_the_owner_resumes_from_a_new_client() {
    let http = serve_http().await;
    let alice = connect(&http, "alice", true).await;
    let handle = task_of(alice.call_tool_as_task("work", args(json!({"ms": 300})), CallOptions::new()).await.unwrap());
    let task_id = handle.id().to_owned();
    alice.close().await;
    drop((alice, handle));

    let bob = connect(&http, "bob", true).await;
    for outcome in [bob.task(&task_id).get().await.map(drop), bob.task(&task_id).cancel().await] {
        let err = outcome.unwrap_err();
        assert_eq!(err.code(), Some(INVALID_PARAMS), "{err}");
    }
    let anonymous = builder(true).connect_http(&http.url).await.unwrap();
    assert_eq!(anonymous.task(&task_id).status().await.unwrap_err().code(), Some(INVALID_PARAMS));

    // Alice again, from a new client: the task is hers and finishes.
    let alice = connect(&http, "alice", true).await;
    let result = alice.task(&task_id).wait().await.unwrap();
    assert_eq!(text(&result), "worked 300 ms");
}

#[tokio::test]
async fn a_task_waiting_for_input_is_finished_by_a_new_client() {
    let http = serve_http().await;
    // The first client declares elicitation but its user walks away: the handler fails.
    let walked_away = Handlers::new()
        .elicitation(ElicitationModes::FORM, |_| async { Err(mcp_client::HandlerError::from("the user left")) });
    let first = Client::builder("tasks-test", "1.0")
        .handlers(walked_away)
        .tasks(true)
        .http_header("x-test-principal", "alice")
        .connect_http(&http.url)
        .await
        .unwrap();
    let handle = task_of(first.call_tool_as_task("two_inputs", (), CallOptions::new()).await.unwrap());
    let state = loop {
        let state = handle.get().await.unwrap();
        if state.status() != TaskStatus::Working {
            break state;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(state.status(), TaskStatus::InputRequired);
    assert!(state.input_requests().is_some_and(|r| r.contains_key("first")), "{state:?}");
    let err = handle.wait().await.unwrap_err();
    assert!(matches!(&err, Error::Handler(m) if m.contains("the user left")), "{err}");
    assert_eq!(handle.status().await.unwrap(), TaskStatus::InputRequired, "a waiter's failure leaves the task");
    let resumed = connect(&http, "alice", true).await;
    let result = resumed.task(handle.id()).wait().await.unwrap();
    assert_eq!(text(&result), "first answered then second answered");
}

#[tokio::test]
async fn a_client_without_the_extension_never_sees_a_task() {
    let http = serve_http().await;
    let client = connect(&http, "alice", false).await;
    assert!(!mcp_client::types::ext::declares(client.client_capabilities(), TASKS));
    assert_eq!(text(&client.call_tool("work", args(json!({"ms": 20}))).await.unwrap()), "worked 20 ms");
    assert_eq!(text(&client.call_tool("two_inputs", ()).await.unwrap()), "first answered then second answered");
    match client.call_tool_as_task("work", args(json!({"ms": 1})), CallOptions::new()).await.unwrap() {
        ToolCall::Complete(result) => assert_eq!(text(&result), "worked 1 ms"),
        ToolCall::Task(handle) => panic!("a task for a client that did not declare the extension: {handle:?}"),
    }
    let err = client.call_tool("only_task", ()).await.unwrap_err();
    assert_eq!(err.code(), Some(MISSING_CAPABILITY), "{err}");
    assert!(http.seen.lock().unwrap().is_empty(), "no tasks/* request: {:?}", http.seen.lock().unwrap());

    // A legacy session never declares extensions, even when the application opted in.
    let legacy = builder(true)
        .era(EraPreference::Legacy)
        .http_header("x-test-principal", "alice")
        .connect_http(&http.url)
        .await
        .unwrap();
    assert_eq!(text(&legacy.call_tool("work", args(json!({"ms": 20}))).await.unwrap()), "worked 20 ms");
    assert!(http.seen.lock().unwrap().is_empty(), "no tasks/* request: {:?}", http.seen.lock().unwrap());
}

// ------------------------------------------------------------------ stdio

const CHILD: &str = "MCP_CLIENT_TASKS_STDIO_CHILD";

/// The stdio server: this test binary, re-run with only this (ignored) test. Test-harness
/// lines on its stdout are not JSON-RPC, and the client skips them.
#[test]
#[ignore = "the stdio server of `tasks_over_stdio`, run in a child process"]
fn stdio_child_server() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (dropped, _probe) = mpsc::unbounded_channel();
    runtime.block_on(mcp_server::stdio::serve_stdio(server(dropped))).unwrap();
}

#[tokio::test]
async fn tasks_over_stdio() {
    // The harness names a test by its path below the crate root: `tasks::stdio_child_server`.
    let module = module_path!().split_once("::").map_or("", |(_, module)| module);
    let test = format!("{module}::stdio_child_server");
    let command = StdioCommand::new(std::env::current_exe().unwrap())
        .args([test.as_str(), "--exact", "--ignored", "--quiet", "--test-threads=1"])
        .env(CHILD, "1")
        .shutdown_grace(Duration::from_millis(500));
    let client = builder(true).probe_timeout(PATIENCE).connect_stdio(command).await.unwrap();
    assert_eq!(client.era(), mcp_client::Era::Modern);
    lifecycle(&client).await;
    let handle = task_of(client.call_tool_as_task("forever", (), CallOptions::new()).await.unwrap());
    handle.cancel().await.unwrap();
    assert!(matches!(handle.wait().await, Err(Error::TaskCancelled { .. })));
    client.close().await;
}

#[tokio::test]
async fn a_call_whose_handler_fails_cancels_its_task() {
    let http = serve_http().await;
    let walked_away = Handlers::new()
        .elicitation(ElicitationModes::FORM, |_| async { Err(mcp_client::HandlerError::from("the user left")) });
    let client = builder(true)
        .handlers(walked_away)
        .http_header("x-test-principal", "alice")
        .connect_http(&http.url)
        .await
        .unwrap();
    let err = client.call_tool("two_inputs", ()).await.unwrap_err();
    assert!(matches!(&err, Error::Handler(m) if m.contains("the user left")), "{err}");
    let cancel_sent = async {
        loop {
            let cancelled = http.seen.lock().unwrap().iter().find(|(method, _)| method == "tasks/cancel").cloned();
            if let Some((_, task_id)) = cancelled {
                break task_id.unwrap();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let task_id = tokio::time::timeout(PATIENCE, cancel_sent).await.expect("a tasks/cancel was sent");
    assert_eq!(client.task(task_id).status().await.unwrap(), TaskStatus::Cancelled);
}

#[tokio::test]
async fn task_states_are_told_while_a_call_or_a_handle_follows_them() {
    let http = serve_http().await;
    let client = connect(&http, "alice", true).await;
    let seen: Arc<Mutex<Vec<TaskStatus>>> = Arc::default();
    let told = Arc::clone(&seen);
    let options = CallOptions::new().on_task_status(move |state| told.lock().unwrap().push(state.status()));
    let result = client.call_tool_with("work", args(json!({"ms": 100})), options).await.unwrap();
    assert_eq!(text(&result), "worked 100 ms");
    let statuses = seen.lock().unwrap().clone();
    assert_eq!(statuses.last(), Some(&TaskStatus::Completed), "{statuses:?}");
    assert!(statuses.contains(&TaskStatus::Working), "polled while it worked: {statuses:?}");

    // The same through a handle.
    let call = client.call_tool_as_task("work", args(json!({"ms": 60})), CallOptions::new()).await.unwrap();
    let seen: Arc<Mutex<Vec<TaskStatus>>> = Arc::default();
    let told = Arc::clone(&seen);
    let handle = task_of(call).on_status(move |state| told.lock().unwrap().push(state.status()));
    assert_eq!(text(&handle.wait_or_cancel().await.unwrap()), "worked 60 ms");
    assert_eq!(seen.lock().unwrap().last(), Some(&TaskStatus::Completed));
}
