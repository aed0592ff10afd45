//! A real `redis-server` for the tests: started on a free loopback port with persistence off,
//! stopped (only the process this harness started) when dropped.
#![allow(dead_code)]

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RedisServer {
    port: u16,
    child: Option<Child>,
}

/// `$REDIS_SERVER`, else `redis-server` on the `PATH`.
fn binary() -> String {
    std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned())
}

impl RedisServer {
    /// A fresh, empty Redis on a free loopback port.
    pub fn start() -> Self {
        for _ in 0..5 {
            // A port free a moment ago; if another process takes it first, Redis exits and
            // another port is tried.
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let mut server = RedisServer { port, child: None };
            if server.spawn() {
                return server;
            }
        }
        panic!("redis-server did not start on a free loopback port");
    }

    fn spawn(&mut self) -> bool {
        let child = Command::new(binary())
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--dir", &std::env::temp_dir().to_string_lossy()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot run {} ({e}): install Redis (Debian: apt-get install redis-server)", binary())
            });
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.child.as_mut().unwrap().try_wait().unwrap().is_some() {
                self.child = None;
                return false;
            }
            if self.ping() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.stop();
        false
    }

    fn ping(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else { return false };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let mut answer = [0u8; 7];
        stream.write_all(b"PING\r\n").is_ok() && stream.read_exact(&mut answer).is_ok() && &answer == b"+PONG\r\n"
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills the server (its data is lost: persistence is off).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port, empty.
    pub fn restart(&mut self) {
        self.stop();
        assert!(self.spawn(), "redis-server did not restart on port {}", self.port);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

// ------------------------------------------------------------------ a fixture server and client

use mcp_server::{Connection, Context, Error, NoArguments, Server, ServerBuilder, TaskSupport, ToolRoute};
use mcp_types::{ElicitRequestParams, LoggingLevel};
use serde_json::{Value, json};

pub const MODERN: &str = "2026-07-28";
pub const INTERNAL_ERROR: i64 = -32603;
pub const INVALID_PARAMS: i64 = -32602;
pub const PATIENCE: Duration = Duration::from_secs(20);

fn form(key: &str) -> ElicitRequestParams {
    serde_json::from_value(json!({
        "mode": "form",
        "message": format!("Your {key}?"),
        "requestedSchema": { "type": "object", "properties": { key: { "type": "string" } }, "required": [key] },
    }))
    .unwrap()
}

fn answer(result: &mcp_types::ElicitResult, key: &str) -> String {
    let content = serde_json::to_value(&result.content).unwrap();
    content[key].as_str().unwrap_or("?").to_owned()
}

/// `two_inputs` (a task at once that asks `first`, then `second`), `forever` (a task that never
/// ends), `two_questions` (two rounds of `InputRequiredResult`, never a task) and `plain`.
pub fn builder() -> ServerBuilder {
    Server::builder("redis-fixture", "0.0.1")
        .tool(
            ToolRoute::new("two_inputs", |ctx: Context, _: NoArguments| async move {
                ctx.run_as_task().await;
                let first = ctx.elicit_with("first", form("first")).await?;
                let second = ctx.elicit_with("second", form("second")).await?;
                Ok::<_, Error>(format!("{} then {}", answer(&first, "first"), answer(&second, "second")))
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolRoute::new("forever", |ctx: Context, _: NoArguments| async move {
                ctx.run_as_task().await;
                std::future::pending::<()>().await;
                Ok::<_, Error>("never")
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(ToolRoute::new("two_questions", |ctx: Context, _: NoArguments| async move {
            let name = ctx.elicit_with("name", form("name")).await?;
            let color = ctx.elicit_with("color", form("color")).await?;
            Ok::<_, Error>(format!("{} likes {}", answer(&name, "name"), answer(&color, "color")))
        }))
        .tool(ToolRoute::new("plain", |_: Context, _: NoArguments| async move { Ok::<_, Error>("plain") }))
        .tool(ToolRoute::new("whoami", |ctx: Context, _: NoArguments| async move {
            // Which of the two is sent tells the session's log level.
            ctx.log(LoggingLevel::Info, None, json!("info")).await;
            ctx.log(LoggingLevel::Error, None, json!("error")).await;
            let client = ctx.client_info().map_or("?".to_owned(), |info| info.name.clone());
            let elicitation = ctx.client_capabilities().elicitation.is_some();
            Ok::<_, Error>(format!("{} {client} elicitation={elicitation}", ctx.protocol_version()))
        }))
}

/// Client capabilities declaring the tasks extension and form elicitation.
pub fn tasks_caps() -> Value {
    json!({ "extensions": { mcp_types::ext::TASKS: {} }, "elicitation": {} })
}

/// A modern client on an in-memory connection.
pub struct Client {
    connection: Connection,
    next_id: i64,
}

impl Client {
    pub fn start(server: &Server) -> Self {
        let (server_end, client_end) = Connection::memory();
        let server = server.clone();
        tokio::spawn(async move { server.serve(server_end).await });
        Client { connection: client_end, next_id: 0 }
    }

    /// Sends a modern request (with `_meta` declaring `capabilities`) and returns its response.
    pub async fn ask(&mut self, method: &str, params: Value, capabilities: Value) -> Value {
        self.next_id += 1;
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        });
        let message = json!({ "jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params });
        self.connection.sender.send(message.to_string()).await.unwrap();
        loop {
            let text = tokio::time::timeout(PATIENCE, self.connection.receiver.recv()).await.unwrap().unwrap();
            let received: Value = serde_json::from_str(&text).unwrap();
            if received.get("method").is_none() && received["id"] == self.next_id {
                return received;
            }
        }
    }

    pub async fn call(&mut self, tool: &str, extra: Value) -> Value {
        let mut params = json!({ "name": tool, "arguments": {} });
        for (key, value) in extra.as_object().unwrap() {
            params[key] = value.clone();
        }
        self.ask("tools/call", params, tasks_caps()).await
    }

    pub async fn task(&mut self, method: &str, task_id: &str) -> Value {
        self.ask(method, json!({ "taskId": task_id }), tasks_caps()).await
    }

    pub async fn update(&mut self, task_id: &str, responses: Value) -> Value {
        self.ask("tasks/update", json!({ "taskId": task_id, "inputResponses": responses }), tasks_caps()).await
    }

    /// Starts a task of `tool`; returns its id.
    pub async fn start_task(&mut self, tool: &str) -> String {
        let response = self.call(tool, json!({})).await;
        assert_eq!(response["result"]["resultType"], "task", "{response}");
        response["result"]["taskId"].as_str().unwrap().to_owned()
    }

    /// Polls `tasks/get` until `done` holds; returns that state.
    pub async fn until(&mut self, task_id: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let response = self.task("tasks/get", task_id).await;
            let task = response.get("result").unwrap_or_else(|| panic!("a task expected: {response}")).clone();
            if done(&task) {
                return task;
            }
            assert!(Instant::now() < deadline, "the task never got there: {task}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

pub fn accept(key: &str, value: &str) -> Value {
    json!({ "action": "accept", "content": { key: value } })
}

#[track_caller]
pub fn assert_error(response: &Value, code: i64, contains: &str) {
    assert_eq!(response["error"]["code"], code, "{response}");
    let message = response["error"]["message"].as_str().unwrap();
    assert!(message.contains(contains), "{message:?} should contain {contains:?}");
}
