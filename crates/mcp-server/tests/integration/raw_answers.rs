//! `ToolSource::answer`: a source's result given as its JSON text goes out as it is spelled, in
//! both eras, but for `resultType` and the server identity, which the server writes for the
//! caller's era; where the server must read the result (middleware, a call that may become a
//! task) the source is asked for it decoded.

use crate::common;

use std::sync::{Arc, Mutex};

use common::*;
use mcp_server::dynamic::{AnswerFuture, ToolAnswer, ToolFuture, ToolSource};
use mcp_server::middleware::McpRequest;
use mcp_server::{Context, Options, Server, TaskSupport};
use mcp_types::{CallToolRequestParams, ObjectSchema, RawResult, Tool};
use serde_json::{Value, json};
use tower::ServiceBuilder;

/// Numbers as an upstream spelled them (one beyond 64 bits), a member no type has, another
/// server's identity, odd spacing, `resultType` last.
const UPSTREAM: &str = r#"{"content":[{"type":"text","text":"x"}],"structuredContent":{"n":1.0E2,"z":-0.0,"big":123456789012345678901234567890},"vendor":{"k":[1, 2]},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"upstream","version":"9"},"trace":"t1"},"resultType":"complete"}"#;

/// Answers each tool with the text named after it, and records which method was asked.
struct Texts {
    asked: Mutex<Vec<&'static str>>,
    tasks: TaskSupport,
}

impl Texts {
    fn text(name: &str) -> &'static str {
        match name {
            "upstream" => UPSTREAM,
            // A legacy upstream's: no `resultType`; its `_meta` holds only its identity.
            "legacy" => r#"{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"old","version":"1"}}}"#,
            "failed" => r#"{"content":[{"type":"text","text":"no"}],"isError":true}"#,
            "escaped" => r#"{"content":[],"\u0076endor":"v","q\"uote":1}"#,
            // Not a CallToolResult: a `_meta` that is no object.
            "broken" => r#"{"content":[],"_meta":5}"#,
            _ => r#"{"content":[]}"#,
        }
    }
}

impl ToolSource for Texts {
    fn tools(&self, _caller: &mcp_server::Principal) -> Arc<[Tool]> {
        ["upstream", "legacy", "failed", "escaped", "broken"]
            .map(|name| Tool::new(ObjectSchema::default(), name))
            .into()
    }

    fn call(&self, _ctx: Context, params: CallToolRequestParams) -> ToolFuture {
        self.asked.lock().unwrap().push("call");
        let raw = RawResult::from_text(Self::text(&params.name).to_owned()).unwrap();
        Box::pin(async move { ToolAnswer::Raw(raw).decode() })
    }

    fn answer(&self, _ctx: Context, params: CallToolRequestParams) -> AnswerFuture {
        self.asked.lock().unwrap().push("answer");
        let raw = RawResult::from_text(Self::text(&params.name).to_owned()).unwrap();
        Box::pin(async move { Ok(ToolAnswer::Raw(raw)) })
    }

    fn task_support(&self, _tool: &str) -> TaskSupport {
        self.tasks
    }

    fn offers_tasks(&self) -> bool {
        self.tasks != TaskSupport::Forbidden
    }
}

fn texts(tasks: TaskSupport) -> Arc<Texts> {
    Arc::new(Texts { asked: Mutex::default(), tasks })
}

fn server(source: &Arc<Texts>, options: Options) -> Server {
    Server::builder("gateway", "2.0.0")
        .tool_source(Arc::clone(source) as Arc<dyn ToolSource>)
        .options(options)
        .build()
        .unwrap()
}

/// Sends `message` and returns the response's text, as the server wrote it.
async fn ask_text(client: &mut MemoryClient, message: Value) -> String {
    client.send(message).await;
    let text = tokio::time::timeout(PATIENCE, client.connection.receiver.recv()).await.unwrap().unwrap();
    assert!(!text.contains("\"method\""), "a response, not {text}");
    text
}

fn call(id: i64, name: &str) -> Value {
    modern(id, "tools/call", json!({ "name": name, "arguments": {} }))
}

fn legacy_call(id: i64, name: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": name, "arguments": {} } })
}

async fn legacy_client(server: &Server) -> MemoryClient {
    let mut client = MemoryClient::start(server);
    let init = client.ask(initialize(0, "2025-11-25", json!({}))).await;
    assert!(init.get("result").is_some(), "{init}");
    client.send(notification("notifications/initialized", json!({}))).await;
    client
}

#[tokio::test]
async fn a_raw_result_goes_out_as_spelled_with_the_servers_own_identity() {
    let source = texts(TaskSupport::Forbidden);
    let server = server(&source, Options::default());
    let info = serde_json::to_string(server.info()).unwrap();
    let mut client = MemoryClient::start(&server);

    let modern = ask_text(&mut client, call(1, "upstream")).await;
    let expected = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"x"}}],"structuredContent":{{"n":1.0E2,"z":-0.0,"big":123456789012345678901234567890}},"vendor":{{"k":[1, 2]}},"_meta":{{"trace":"t1","io.modelcontextprotocol/serverInfo":{info}}},"resultType":"complete"}}}}"#
    );
    assert_eq!(modern, expected);
    // A legacy upstream's result: `resultType` added, its identity replaced.
    let added = ask_text(&mut client, call(2, "legacy")).await;
    let expected = format!(
        r#"{{"jsonrpc":"2.0","id":2,"result":{{"resultType":"complete","content":[],"_meta":{{"io.modelcontextprotocol/serverInfo":{info}}}}}}}"#
    );
    assert_eq!(added, expected);
    // No `_meta` at all: the server's identity in one of its own.
    let bare = ask_text(&mut client, call(3, "plain")).await;
    let expected = format!(
        r#"{{"jsonrpc":"2.0","id":3,"result":{{"resultType":"complete","content":[],"_meta":{{"io.modelcontextprotocol/serverInfo":{info}}}}}}}"#
    );
    assert_eq!(bare, expected);
    // A member name with an escape is written as JSON writes it, meaning the same.
    let escaped = ask_text(&mut client, call(4, "escaped")).await;
    assert!(escaped.contains(r#""vendor":"v","q\"uote":1"#), "{escaped}");
    assert_eq!(*source.asked.lock().unwrap(), ["answer"; 4]);
}

#[tokio::test]
async fn the_legacy_wire_has_neither_result_type_nor_any_servers_identity() {
    let source = texts(TaskSupport::Forbidden);
    let server = server(&source, Options::default());
    let mut client = legacy_client(&server).await;
    let upstream = ask_text(&mut client, legacy_call(1, "upstream")).await;
    assert_eq!(
        upstream,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}],"structuredContent":{"n":1.0E2,"z":-0.0,"big":123456789012345678901234567890},"vendor":{"k":[1, 2]},"_meta":{"trace":"t1"}}}"#
    );
    // A `_meta` left empty is left out.
    let legacy = ask_text(&mut client, legacy_call(2, "legacy")).await;
    assert_eq!(legacy, r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#);
}

#[tokio::test]
async fn without_the_identity_option_the_sources_identity_is_still_left_out() {
    let source = texts(TaskSupport::Forbidden);
    let mut options = Options::default();
    options.server_info_in_results = false;
    let mut client = MemoryClient::start(&server(&source, options));
    let legacy = ask_text(&mut client, call(1, "legacy")).await;
    assert_eq!(legacy, r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]}}"#);
}

#[tokio::test]
async fn a_result_that_cannot_go_out_as_spelled_is_decoded_and_refused_as_one_would_be() {
    let source = texts(TaskSupport::Forbidden);
    let mut client = MemoryClient::start(&server(&source, Options::default()));
    let broken: Value = serde_json::from_str(&ask_text(&mut client, call(1, "broken")).await).unwrap();
    assert_error(&broken, 1, -32603);
    assert!(message(&broken).contains("not a CallToolResult"), "{broken}");
    // A tool error is a result like any other (its telemetry is in telemetry.rs).
    let failed: Value = serde_json::from_str(&ask_text(&mut client, call(2, "failed")).await).unwrap();
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    assert_eq!(failed["result"]["resultType"], "complete", "{failed}");
}

#[tokio::test]
async fn middleware_and_calls_that_may_become_tasks_get_the_result_decoded() {
    // A server layer reads every result: the source is asked to call, and the result is encoded
    // from its decoded value (the big integer is refused by name, not rounded).
    let source = texts(TaskSupport::Forbidden);
    let layered = Server::builder("gateway", "2.0.0")
        .tool_source(Arc::clone(&source) as Arc<dyn ToolSource>)
        .layer(ServiceBuilder::new().map_request(|request: McpRequest| request))
        .build()
        .unwrap();
    let mut client = MemoryClient::start(&layered);
    let legacy: Value = serde_json::from_str(&ask_text(&mut client, call(1, "legacy")).await).unwrap();
    assert_eq!(legacy["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "old", "{legacy}");
    let upstream: Value = serde_json::from_str(&ask_text(&mut client, call(2, "upstream")).await).unwrap();
    assert_error(&upstream, 2, -32603);
    assert!(message(&upstream).contains("123456789012345678901234567890"), "{upstream}");
    assert_eq!(*source.asked.lock().unwrap(), ["call", "call"]);

    // A caller with the tasks extension, of a tool that may run as one.
    let source = texts(TaskSupport::Optional);
    let mut client = MemoryClient::start(&server(&source, Options::default()));
    let capabilities = json!({ "extensions": { mcp_types::ext::TASKS: {} } });
    let tasked =
        request(3, "tools/call", json!({ "name": "legacy", "arguments": {}, "_meta": meta_with(capabilities) }));
    let answered: Value = serde_json::from_str(&ask_text(&mut client, tasked).await).unwrap();
    assert_eq!(answered["result"]["content"], json!([]), "{answered}");
    // Without the extension it cannot become a task: written out as it is.
    let _ = ask_text(&mut client, call(4, "legacy")).await;
    assert_eq!(*source.asked.lock().unwrap(), ["call", "answer"]);
}
