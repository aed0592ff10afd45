//! A small fixture server and drivers shared by the integration tests.
//!
//! Every test file includes this module and uses only part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::Duration;

use mcp_server::{
    Connection, Context, Error, NoArguments, PromptRoute, ResourceRoute, ResourceTemplateRoute, Server, ServerBuilder,
    ToolRoute, text_result,
};
use mcp_types::{
    ClientCapabilities, ContentBlock, ElicitRequestParams, GetPromptResult, JsonObject, LoggingLevel, Prompt,
    PromptArgument, PromptMessage, ReadResourceResultContentsItem, Resource, ResourceTemplate, Role,
    SamplingCapability, TextContent, TextResourceContents, Tool,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

pub const MODERN: &str = "2026-07-28";
pub const LEGACY: &str = "2025-11-25";
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// An upper bound for "this should arrive"; never reached when the code under test works.
pub const PATIENCE: Duration = Duration::from_secs(20);
/// How long a test listens before concluding that nothing more arrives.
pub const QUIET: Duration = Duration::from_millis(200);

/// The names of the fixture tools, in registration order.
pub const TOOL_NAMES: &[&str] =
    &["echo", "fail", "regional", "needs_sampling", "ask_name", "two_questions", "progress_logger"];

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Echo {
    /// The text to echo.
    pub text: String,
}

fn form(message: &str, property: &str) -> ElicitRequestParams {
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": { property: { "type": "string" } },
            "required": [property],
        },
    }))
    .expect("a valid form elicitation")
}

/// The string an elicitation answered for `property`, or "?".
fn answered(result: &mcp_types::ElicitResult, property: &str) -> String {
    let content = serde_json::to_value(&result.content).unwrap_or_default();
    content.get(property).and_then(Value::as_str).unwrap_or("?").to_owned()
}

fn text_contents(uri: &str, body: &str) -> Vec<ReadResourceResultContentsItem> {
    let contents = TextResourceContents { uri: uri.into(), text: body.into(), ..Default::default() };
    vec![contents.with_mime_type("text/plain").into()]
}

/// The fixture server's handlers:
///
/// - `echo {text}`: answers `echo: {text}` (schema-validated arguments);
/// - `fail`: an execution failure (`isError: true`);
/// - `regional {region, count?}`: a hand-written schema whose properties carry `x-mcp-header`
///   (`Region`, `Count`);
/// - `needs_sampling`: `.requires(sampling)`, asks the client's model;
/// - `ask_name`: elicits a name (`input_required` on the modern wire, `elicitation/create` on a
///   legacy session);
/// - `two_questions`: elicits twice, in two rounds;
/// - `progress_logger`: reports progress 1/3, 2/3, 3/3 and logs at debug, info and warning;
/// - resources `test://static` and `test://watched`, template `test://items/{id}`;
/// - prompts `plain` (no arguments) and `greeting` (required `name`).
pub fn builder() -> ServerBuilder {
    let regional = Tool::new(
        serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "region": { "type": "string", "x-mcp-header": "Region" },
                "count": { "type": "integer", "x-mcp-header": "Count" },
            },
            "required": ["region"],
        }))
        .expect("a valid object schema"),
        "regional",
    );
    let sampling = ClientCapabilities { sampling: Some(SamplingCapability::default()), ..Default::default() };
    Server::builder("fixture", "1.2.3")
        .instructions("A fixture server for the integration tests.")
        .tool(
            ToolRoute::new("echo", |_: Context, args: Echo| async move { Ok::<_, Error>(format!("echo: {}", args.text)) })
                .description("Echoes its text"),
        )
        .tool(ToolRoute::new("fail", |_: Context, _: NoArguments| async move {
            Err::<String, _>(Error::failed("the fixture tool failed on purpose"))
        }))
        .tool(ToolRoute::raw(regional, |_: Context, args: JsonObject| async move {
            Ok::<_, Error>(text_result(format!("region: {}", Value::Object(args))))
        }))
        .tool(
            ToolRoute::new("needs_sampling", |ctx: Context, _: NoArguments| async move {
                let params = serde_json::from_value(json!({
                    "messages": [{ "role": "user", "content": { "type": "text", "text": "Say hi" } }],
                    "maxTokens": 10,
                }))
                .expect("valid sampling params");
                let reply = ctx.create_message("question", params).await?;
                Ok(text_result(format!("model: {}", json!(reply.content))))
            })
            .requires(sampling),
        )
        .tool(ToolRoute::new("ask_name", |ctx: Context, _: NoArguments| async move {
            let answer = ctx.elicit_with("name", form("What is your name?", "name")).await?;
            Ok(text_result(format!("Hello, {}!", answered(&answer, "name"))))
        }))
        .tool(ToolRoute::new("two_questions", |ctx: Context, _: NoArguments| async move {
            let name = ctx.elicit_with("step1", form("What is your name?", "name")).await?;
            let color = ctx.elicit_with("step2", form("What is your favourite colour?", "color")).await?;
            Ok(text_result(format!("{} likes {}", answered(&name, "name"), answered(&color, "color"))))
        }))
        .tool(ToolRoute::new("progress_logger", |ctx: Context, _: NoArguments| async move {
            for step in 1..=3 {
                ctx.progress(f64::from(step), Some(3.0), Some(&format!("step {step}"))).await;
            }
            ctx.log(LoggingLevel::Debug, Some("fixture"), json!("debug line")).await;
            ctx.log(LoggingLevel::Info, Some("fixture"), json!("info line")).await;
            ctx.log(LoggingLevel::Warning, Some("fixture"), json!("warning line")).await;
            Ok::<_, Error>("progress done")
        }))
        .resource(ResourceRoute::new(Resource { uri: "test://static".into(), name: "static".into(), ..Default::default() }, |_, uri| async move {
            Ok(text_contents(&uri, "static content"))
        }))
        .resource(ResourceRoute::new(Resource { uri: "test://watched".into(), name: "watched".into(), ..Default::default() }, |_, uri| async move {
            Ok(text_contents(&uri, "watched content"))
        }))
        .resource_template(ResourceTemplateRoute::new(
            ResourceTemplate { uri_template: "test://items/{id}".into(), name: "items".into(), ..Default::default() },
            |_, uri, vars: BTreeMap<String, String>| async move { Ok(text_contents(&uri, &format!("item {}", vars["id"]))) },
        ))
        .prompt(PromptRoute::raw(Prompt::new("plain"), |_, _| async move {
            Ok(GetPromptResult::new(vec![PromptMessage::new(
                ContentBlock::Text(TextContent::new("a plain prompt")),
                Role::User,
            )]))
        }))
        .prompt(PromptRoute::raw(
            {
                let mut prompt = Prompt::new("greeting");
                let mut name = PromptArgument::new("name");
                name.required = Some(true);
                prompt.arguments = Some(vec![name]);
                prompt
            },
            |_, args| async move {
                Ok(GetPromptResult::new(vec![PromptMessage::new(
                    ContentBlock::Text(TextContent::new(format!("Greet {}", args["name"]))),
                    Role::User,
                )]))
            },
        ))
}

pub fn server() -> Server {
    builder().build().expect("the fixture server is well-formed")
}

/// Tells a test when the `slow` tool started and when its handler was dropped (cancelled).
pub struct SlowProbe {
    pub started: mpsc::UnboundedReceiver<()>,
    pub dropped: mpsc::UnboundedReceiver<()>,
}

struct DropSignal(mpsc::UnboundedSender<()>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// The fixture server plus `slow`, a tool that never finishes on its own.
pub fn server_with_slow_tool() -> (Server, SlowProbe) {
    let (started_tx, started) = mpsc::unbounded_channel();
    let (dropped_tx, dropped) = mpsc::unbounded_channel();
    let server = builder()
        .tool(ToolRoute::new("slow", move |_: Context, _: NoArguments| {
            let started = started_tx.clone();
            let guard = DropSignal(dropped_tx.clone());
            async move {
                let _guard = guard;
                let _ = started.send(());
                std::future::pending::<()>().await;
                Ok::<_, Error>("never")
            }
        }))
        .build()
        .expect("the fixture server is well-formed");
    (server, SlowProbe { started, dropped })
}

/// The `_meta` of a modern request with no client capabilities.
pub fn meta() -> Value {
    json!({ PROTOCOL_VERSION: MODERN, CLIENT_CAPABILITIES: {} })
}

/// The `_meta` of a modern request declaring `capabilities`.
pub fn meta_with(capabilities: Value) -> Value {
    json!({ PROTOCOL_VERSION: MODERN, CLIENT_CAPABILITIES: capabilities })
}

/// `params` with the modern `_meta` added (unless it has one already).
pub fn with_meta(params: Value) -> Value {
    let mut params = params;
    let object = params.as_object_mut().expect("params are an object");
    object.entry("_meta").or_insert_with(meta);
    params
}

pub fn request(id: impl Into<Value>, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id.into(), "method": method, "params": params })
}

/// A modern request: `params` plus the `_meta` every 2026-07-28 request carries.
pub fn modern(id: impl Into<Value>, method: &str, params: Value) -> Value {
    request(id, method, with_meta(params))
}

pub fn initialize(id: impl Into<Value>, version: &str, capabilities: Value) -> Value {
    request(
        id,
        "initialize",
        json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "clientInfo": { "name": "test-client", "version": "0.0.1" },
        }),
    )
}

pub fn notification(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

/// The `error.code` of a response (panics on a result).
pub fn code(response: &Value) -> i64 {
    response["error"]["code"].as_i64().unwrap_or_else(|| panic!("an error response expected: {response}"))
}

pub fn message(response: &Value) -> &str {
    response["error"]["message"].as_str().unwrap_or_else(|| panic!("an error message expected: {response}"))
}

/// The text of a tool result's first content block.
pub fn text(response: &Value) -> &str {
    response["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("a text result expected: {response}"))
}

/// Asserts an error response with `code` for request `id`, and returns it.
#[track_caller]
pub fn assert_error(response: &Value, id: impl Into<Value>, code: i64) {
    assert_eq!(response["jsonrpc"], "2.0", "{response}");
    assert_eq!(response["id"], id.into(), "{response}");
    assert_eq!(response["error"]["code"], code, "{response}");
    assert!(response.get("result").is_none(), "{response}");
}

/// The client end of an in-memory connection to a served server.
pub struct MemoryClient {
    pub connection: Connection,
}

impl MemoryClient {
    /// Serves `server` on an in-memory connection in the background.
    pub fn start(server: &Server) -> Self {
        let (server_end, client_end) = Connection::memory();
        let server = server.clone();
        tokio::spawn(async move { server.serve(server_end).await });
        MemoryClient { connection: client_end }
    }

    pub async fn send(&self, message: Value) {
        self.connection.sender.send(message.to_string()).await.expect("the server is serving");
    }

    pub async fn send_raw(&self, text: &str) {
        self.connection.sender.send(text.to_owned()).await.expect("the server is serving");
    }

    /// The next message from the server.
    pub async fn recv(&mut self) -> Value {
        let text = tokio::time::timeout(PATIENCE, self.connection.receiver.recv())
            .await
            .expect("a message from the server")
            .expect("the server is serving");
        serde_json::from_str(&text).expect("the server sends JSON")
    }

    /// Whether nothing arrives within [`QUIET`].
    pub async fn quiet(&mut self) -> bool {
        tokio::time::timeout(QUIET, self.connection.receiver.recv()).await.is_err()
    }

    /// Sends `message` and returns the next message from the server, whatever it is.
    pub async fn recv_after(&mut self, message: Value) -> Value {
        self.send(message).await;
        self.recv().await
    }

    /// Sends a request and collects what arrives up to its response: (notifications and server
    /// requests before it, the response).
    pub async fn call(&mut self, message: Value) -> (Vec<Value>, Value) {
        let id = message["id"].clone();
        self.send(message).await;
        let mut before = Vec::new();
        loop {
            let message = self.recv().await;
            if message.get("method").is_none() && message["id"] == id {
                return (before, message);
            }
            before.push(message);
        }
    }

    /// Sends a request and returns its response, asserting nothing came before it.
    pub async fn ask(&mut self, message: Value) -> Value {
        let (before, response) = self.call(message).await;
        assert!(before.is_empty(), "unexpected messages before the response: {before:?}");
        response
    }
}

/// The only revision with JSON-RPC batches.
pub const BATCH_VERSION: &str = "2025-03-26";

/// The elements of a batch response, ordered by id (the server may answer in any order):
/// integer ids, then string ids, then the errors without one.
pub fn by_id(batch: &Value) -> Vec<Value> {
    let mut responses = batch.as_array().unwrap_or_else(|| panic!("a JSON array expected: {batch}")).clone();
    responses.sort_by_key(|response| (response["id"].as_i64().unwrap_or(i64::MAX), response["id"].to_string()));
    responses
}

/// A batch of two requests (ids 1 and 2: `ping` and a call to `echo`) and a notification.
pub fn two_requests_and_a_notification() -> Value {
    json!([
        request(1, "ping", json!({})),
        notification("notifications/roots/list_changed", json!({})),
        request(2, "tools/call", json!({ "name": "echo", "arguments": { "text": "batched" } })),
    ])
}

/// A batch whose first element is invalid (`jsonrpc` 1.0, id "bad") and whose second is `ping` (id 3).
pub fn one_bad_element() -> Value {
    json!([
        { "jsonrpc": "1.0", "id": "bad", "method": "ping" },
        request(3, "ping", json!({})),
    ])
}

impl MemoryClient {
    /// A client whose session negotiated the batching revision.
    pub async fn batching(server: &Server) -> Self {
        let mut client = MemoryClient::start(server);
        let response = client.ask(initialize(0, BATCH_VERSION, json!({}))).await;
        assert_eq!(response["result"]["protocolVersion"], BATCH_VERSION, "{response}");
        client.send(notification("notifications/initialized", json!({}))).await;
        client
    }
}
