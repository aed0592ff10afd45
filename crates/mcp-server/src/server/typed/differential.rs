//! The typed path against the `Value` walk: every mutant of the official 2026-07-28 request
//! examples (see `tests/src/mutate.rs`), modern and with `_meta` taken out on a legacy session,
//! with and without mirrored headers, gets the same messages from both.

#[allow(dead_code)]
#[path = "../../../../../tests/src/mutate.rs"]
pub(crate) mod mutate;

use std::path::Path;
use std::sync::Arc;

use futures::StreamExt as _;
use mcp_types::{
    CompleteResultCompletion, ContentBlock, GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage,
    ReadResourceResultContentsItem, Resource, Role, TextContent, TextResourceContents, Tool,
};
use serde_json::{Value, json};

use super::Source;
use crate::{
    context::Context, error::Error, headers::Mirrors, message::Reply, routes::PromptRoute, routes::ResourceRoute,
    routes::ToolRoute, routes::text_result, server::Server, session::Session,
};

fn server() -> Server {
    let weather = Tool::new(
        serde_json::from_value(json!({
            "type": "object",
            "properties": { "location": { "type": "string", "x-mcp-header": "Location" } },
            "required": ["location"],
        }))
        .unwrap(),
        "get_weather",
    );
    let mut review = Prompt::new("code_review");
    let mut code = PromptArgument::new("code");
    code.required = Some(true);
    review.arguments = Some(vec![code]);
    Server::builder("differential", "0.0.0")
        .tool(ToolRoute::raw(weather, |_: Context, args: JsonObject| async move {
            Ok::<_, Error>(text_result(format!("weather at {}", Value::Object(args))))
        }))
        .resource(ResourceRoute::new(
            Resource { uri: "file:///project/src/main.rs".into(), name: "main".into(), ..Default::default() },
            |_, uri| async move {
                let contents = TextResourceContents { uri, text: "fn main() {}".into(), ..Default::default() };
                Ok(vec![ReadResourceResultContentsItem::TextResourceContents(contents)])
            },
        ))
        .prompt(PromptRoute::raw(review, |_, args| async move {
            Ok(GetPromptResult::new(vec![PromptMessage::new(
                ContentBlock::Text(TextContent::new(format!("Review {}", args["code"]))),
                Role::User,
            )]))
        }))
        .completion(|_, params| async move { Ok(CompleteResultCompletion::new(vec![params.argument.value])) })
        .build()
        .unwrap()
}

fn examples() -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema/2026-07-28/examples");
    assert!(dir.is_dir(), "{} is missing: run `cargo xtask schema sync` first", dir.display());
    let mut out = Vec::new();
    let mut folders: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    folders.sort();
    for folder in folders.into_iter().filter(|p| p.file_name().unwrap().to_string_lossy().ends_with("Request")) {
        let mut files: Vec<_> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        for file in files {
            let message: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            if message.get("jsonrpc").is_some() && message.get("id").is_some() && message.get("method").is_some() {
                out.push(message);
            }
        }
    }
    out
}

pub(crate) async fn drain(reply: Option<Reply>) -> Vec<String> {
    let Some(mut reply) = reply else { return Vec::new() };
    let long_lived = reply.is_long_lived();
    let mut out = Vec::new();
    while let Some(message) = reply.next().await {
        out.push(message.json);
        if long_lived {
            break;
        }
    }
    out
}

/// A session as each case needs it: fresh, or after a legacy `initialize`.
pub(crate) fn session(server: &Server, legacy: bool) -> Arc<Session> {
    let session = Session::new();
    if legacy {
        let initialize = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
        drop(server.handle_value(&session, initialize, None));
    }
    session
}

pub(crate) fn mirrors_of(message: &Value, version: &str) -> Mirrors<'static> {
    let params = &message["params"];
    let name = params.get("name").or_else(|| params.get("uri")).and_then(Value::as_str);
    Mirrors {
        protocol_version: Some(version.to_owned().into()),
        method: message["method"].as_str().map(|method| method.to_owned().into()),
        name: name.map(|name| name.to_owned().into()),
        params: params["arguments"]["location"]
            .as_str()
            .map(|l| ("location".into(), l.to_owned().into()))
            .into_iter()
            .collect(),
    }
}

/// A modern `tools/call` of `name` with `params` and the `_meta` every such request carries.
pub(crate) fn tool_call(name: &str, params: Value) -> Value {
    let mut params = params;
    params["name"] = json!(name);
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
}

/// One text of the `tools/call` cases: the official example or one of its mutants.
pub(crate) struct CallCase {
    pub(crate) text: String,
    pub(crate) mirrors: Option<Mirrors<'static>>,
    /// Sent on a session a legacy `initialize` opened (`_meta` taken out).
    pub(crate) legacy: bool,
}

/// The official `tools/call` example and every mutant of it, modern and on a legacy session, each
/// with and without its mirrored headers.
pub(crate) fn call_tool_cases() -> Vec<CallCase> {
    let example: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../schema/2026-07-28/examples/CallToolRequest/call-tool-request.json"),
        )
        .expect("the schema's examples: `cargo xtask schema sync`"),
    )
    .unwrap();
    let mut legacy = example.clone();
    legacy["params"].as_object_mut().unwrap().remove("_meta");
    let mut cases = Vec::new();
    for (message, legacy, with_mirrors) in
        [(&example, false, false), (&example, false, true), (&legacy, true, false), (&legacy, true, true)]
    {
        let version = if legacy { "2025-11-25" } else { "2026-07-28" };
        let texts = std::iter::once(message.to_string()).chain(mutate::mutants(message).into_iter().map(|m| m.text));
        for text in texts {
            cases.push(CallCase { text, mirrors: with_mirrors.then(|| mirrors_of(message, version)), legacy });
        }
    }
    cases
}

#[tokio::test]
async fn the_typed_path_answers_as_the_value_walk() {
    let server = server();
    let mut cases = 0;
    let mut typed = 0;
    for original in examples() {
        let mut legacy = original.clone();
        if let Some(params) = legacy["params"].as_object_mut() {
            params.remove("_meta");
        }
        let variants = [
            (original.clone(), false, None),
            (original.clone(), false, Some(mirrors_of(&original, "2026-07-28"))),
            (legacy.clone(), true, None),
            (legacy.clone(), true, Some(mirrors_of(&legacy, "2025-11-25"))),
            // A modern body on a legacy session, and a legacy one on a fresh session.
            (original.clone(), true, None),
            (legacy.clone(), false, None),
        ];
        for (variant, (message, legacy_session, mirrors)) in variants.into_iter().enumerate() {
            let mut inputs: Vec<(String, Option<Value>)> = vec![(message.to_string(), Some(message.clone()))];
            inputs.extend(mutate::mutants(&message).into_iter().map(|m| (m.text, m.value)));
            for (index, (text, value)) in inputs.into_iter().enumerate() {
                let Some(value) = value else { continue };
                cases += 1;
                let mirrors = mirrors.as_ref();
                let walked =
                    drain(server.handle_value(&session(&server, legacy_session), value.clone(), mirrors)).await;
                let from_bytes = session(&server, legacy_session);
                match server.typed(&from_bytes, Source::Text(&text), mirrors) {
                    super::Typed::Done(reply) => {
                        typed += 1;
                        assert_eq!(drain(reply).await, walked, "bytes {text} mirrors {mirrors:?}");
                    }
                    // Every modern example, and a legacy `tools/call`, is served typed.
                    super::Typed::Fallback => assert!(
                        index > 0 || !(variant < 2 || (variant < 4 && message["method"] == "tools/call")),
                        "not typed: {text} mirrors {mirrors:?}"
                    ),
                }
                let from_value = drain(server.handle(&session(&server, legacy_session), value, mirrors)).await;
                assert_eq!(from_value, walked, "value {text} mirrors {mirrors:?}");
            }
        }
    }
    // Notifications, with and without an `id` (with one, a request of an unknown method).
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    for message in [
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"_meta":meta}}),
        json!({"jsonrpc":"2.0","id":9,"method":"notifications/cancelled","params":{"requestId":1,"_meta":meta}}),
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}),
        json!({"jsonrpc":"2.0","id":9,"method":"notifications/cancelled","params":{"requestId":1}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":9,"method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":9,"method":"notifications/progress","params":{"progressToken":1,"progress":1}}),
        json!({"jsonrpc":"2.0","method":"notifications/whatever"}),
        json!({"jsonrpc":"2.0","id":9,"method":"notifications/whatever"}),
    ] {
        for legacy_session in [false, true] {
            cases += 1;
            let walked = drain(server.handle_value(&session(&server, legacy_session), message.clone(), None)).await;
            let typed_answer =
                drain(server.handle_bytes(&session(&server, legacy_session), message.to_string().as_bytes(), None))
                    .await;
            assert_eq!(typed_answer, walked, "{message} (legacy session: {legacy_session})");
        }
    }
    // HTTP without the version header: `initialize` and `ping` open the legacy era; anything
    // else lacks the header (unless the session is open).
    let header_less = Mirrors::default();
    let initialize = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let mut messages = vec![
        initialize.clone(),
        json!({"jsonrpc":"2.0","id":2,"method":"ping"}),
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_weather","arguments":{"location":"x"}}}),
        json!({"jsonrpc":"2.0","id":4,"method":"tools/list"}),
    ];
    messages.extend(mutate::mutants(&initialize).into_iter().filter_map(|m| m.value));
    for message in messages {
        for (legacy_session, mirrors) in [(false, Some(&header_less)), (true, Some(&header_less)), (false, None)] {
            cases += 1;
            let walked = drain(server.handle_value(&session(&server, legacy_session), message.clone(), mirrors)).await;
            let typed_answer =
                drain(server.handle_bytes(&session(&server, legacy_session), message.to_string().as_bytes(), mirrors))
                    .await;
            assert_eq!(typed_answer, walked, "{message} (legacy session: {legacy_session}, mirrors {mirrors:?})");
        }
    }
    println!("{cases} cases, {typed} served by the typed path");
}

/// Writes every answer of the cases above to `$MCP_DUMP` (to compare two builds by hand).
#[tokio::test]
#[ignore = "a tool: MCP_DUMP=path cargo test -p mcp-server --lib dump_answers -- --ignored"]
async fn dump_answers() {
    let server = server();
    let mut out = String::new();
    for original in examples() {
        let mut legacy = original.clone();
        if let Some(params) = legacy["params"].as_object_mut() {
            params.remove("_meta");
        }
        let variants = [
            (original.clone(), false, None),
            (original.clone(), false, Some(mirrors_of(&original, "2026-07-28"))),
            (legacy.clone(), true, None),
            (legacy.clone(), true, Some(mirrors_of(&legacy, "2025-11-25"))),
            (original.clone(), true, None),
            (legacy.clone(), false, None),
        ];
        for (message, legacy_session, mirrors) in variants {
            let mut inputs = vec![message.to_string()];
            inputs.extend(mutate::mutants(&message).into_iter().map(|m| m.text));
            for text in inputs {
                let session = session(&server, legacy_session);
                let answers = drain(server.handle_bytes(&session, text.as_bytes(), mirrors.as_ref())).await;
                out.push_str(&format!("{text}\n  {mirrors:?}\n  {answers:?}\n"));
            }
        }
    }
    std::fs::write(std::env::var("MCP_DUMP").expect("MCP_DUMP"), out).unwrap();
}

/// A method of the generated union that this server does not serve is not found, whatever its
/// params (before: its params were not read either).
#[tokio::test]
async fn unserved_methods_are_not_found_before_their_params_are_read() {
    let server = Server::builder("bare", "0.0.0").build().unwrap();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    for params in [json!({"_meta": meta, "name": "x"}), json!({"_meta": meta, "name": 42})] {
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        let answers = drain(server.handle_bytes(&Session::new(), message.to_string().as_bytes(), None)).await;
        let answer: Value = serde_json::from_str(&answers[0]).unwrap();
        assert_eq!(answer["error"]["code"], mcp_types::error_codes::METHOD_NOT_FOUND, "{answer}");
    }
}
