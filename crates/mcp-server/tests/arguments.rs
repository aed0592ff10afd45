//! Tool arguments with and without the `validation` feature. `cargo xtask test` runs this with
//! every feature (the whole `inputSchema` checked by `jsonschema`); `.ci/run` runs it again with
//! the default features, where serde decides what fits a typed tool and raw tools get any object.
#![cfg(feature = "stdio")]

mod common;

use common::*;
use mcp_server::types::{JsonObject, ObjectSchema, Tool};
use mcp_server::{Context, Error, Server, ToolRoute};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    #[schemars(range(min = 0))]
    b: i64,
}

fn server() -> Server {
    let raw = Tool::new(
        ObjectSchema::from_value(json!({ "type": "object", "properties": { "n": { "type": "integer" } } })).unwrap(),
        "raw",
    );
    Server::builder("arguments", "1.0")
        .tool(ToolRoute::new("add", |_: Context, Add { a, b }: Add| async move { Ok::<_, Error>((a + b).to_string()) }))
        .tool(ToolRoute::raw(raw, |_: Context, args: JsonObject| async move {
            Ok::<_, Error>(format!("got {}", serde_json::Value::Object(args)))
        }))
        .build()
        .unwrap()
}

async fn call(client: &mut MemoryClient, id: u64, name: &str, arguments: serde_json::Value) -> serde_json::Value {
    client.ask(modern(id, "tools/call", json!({ "name": name, "arguments": arguments }))).await
}

#[tokio::test]
async fn typed_arguments_get_exactly_their_type_or_a_tool_error_saying_why() {
    let mut client = MemoryClient::start(&server());
    let response = call(&mut client, 1, "add", json!({ "a": 2, "b": 3 })).await;
    assert_eq!(text(&response), "5", "{response}");

    let response = call(&mut client, 2, "add", json!({ "a": 2 })).await;
    assert_eq!(response["result"]["isError"], true, "{response}");
    #[cfg(feature = "validation")]
    assert_eq!(text(&response), "Invalid arguments for tool add: \"b\" is a required property");
    #[cfg(not(feature = "validation"))]
    assert_eq!(text(&response), "Invalid arguments for tool add: missing field `b`");

    // A constraint serde cannot see is checked only against the whole schema.
    let response = call(&mut client, 3, "add", json!({ "a": 2, "b": -1 })).await;
    #[cfg(feature = "validation")]
    assert_eq!(text(&response), "Invalid arguments for tool add: /b: -1 is less than the minimum of 0");
    #[cfg(not(feature = "validation"))]
    assert_eq!(text(&response), "1");
}

#[tokio::test]
async fn raw_tools_are_checked_against_their_schema_only_with_the_feature() {
    let mut client = MemoryClient::start(&server());
    let response = call(&mut client, 1, "raw", json!({ "n": "five" })).await;
    #[cfg(feature = "validation")]
    assert_eq!(text(&response), "Invalid arguments for tool raw: /n: \"five\" is not of type \"integer\"");
    #[cfg(not(feature = "validation"))]
    assert_eq!(text(&response), r#"got {"n":"five"}"#);
}

/// The floats JavaScript's `JSON.stringify` and Python's `json.dumps` write.
const SCRIPT_FLOATS: &str = r#"{"avogadro":6.02214076e+23,"big":1e+21,"huge":1.5e+300,"max":1.7976931348623157e+308,"tiny":5e-324,"zero":-0.0}"#;

fn raw_call(id: u64, meta: Option<&serde_json::Value>, arguments: &str) -> String {
    let meta = meta.map(|meta| format!(r#""_meta":{meta},"#)).unwrap_or_default();
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{{meta}"name":"raw","arguments":{arguments}}}}}"#
    )
}

/// Issue 24: those floats reach a tool exactly, as a modern request, on a legacy session, and in
/// a 2025-03-26 batch (read through a `Value`); an integer beyond 64 bits, which no `Value` holds,
/// is refused naming the member and itself.
#[tokio::test]
async fn the_floats_javascript_and_python_write_reach_a_tool_exactly() {
    let echoed = format!("got {SCRIPT_FLOATS}");
    let mut modern_client = MemoryClient::start(&server());
    modern_client.send_raw(&raw_call(1, Some(&meta()), SCRIPT_FLOATS)).await;
    assert_eq!(text(&modern_client.recv().await), echoed);

    let mut legacy_client = MemoryClient::batching(&server()).await;
    legacy_client.send_raw(&raw_call(2, None, SCRIPT_FLOATS)).await;
    assert_eq!(text(&legacy_client.recv().await), echoed);
    legacy_client.send_raw(&format!("[{}]", raw_call(3, None, SCRIPT_FLOATS))).await;
    let batch = legacy_client.recv().await;
    assert_eq!(text(&batch[0]), echoed, "{batch}");

    let huge = r#"{"huge":123456789012345678901234567890}"#;
    modern_client.send_raw(&raw_call(4, Some(&meta()), huge)).await;
    let refused = modern_client.recv().await;
    assert_eq!(refused["id"], 4, "{refused}");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("arguments") && message.contains("123456789012345678901234567890"), "{message}");
    legacy_client.send_raw(&format!("[{}]", raw_call(5, None, huge))).await;
    let refused = legacy_client.recv().await;
    let message = refused.to_string();
    assert!(message.contains("-32602") && message.contains("123456789012345678901234567890"), "{refused}");
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greet {
    greeting: String,
}

/// Tools that ask for the caller's name: one typed, one raw.
fn greeting_server() -> Server {
    async fn ask_name(ctx: &Context) -> Result<String, Error> {
        let form = serde_json::from_value(json!({
            "mode": "form",
            "message": "What is your name?",
            "requestedSchema": { "type": "object", "properties": { "name": { "type": "string" } } },
        }))
        .expect("a valid form");
        let answer = ctx.elicit_with("name", form).await?;
        Ok(serde_json::to_value(&answer.content).unwrap()["name"].as_str().unwrap_or("?").to_owned())
    }
    let raw = Tool::new(ObjectSchema::from_value(json!({ "type": "object" })).unwrap(), "greet_raw");
    Server::builder("arguments", "1.0")
        .tool(ToolRoute::new("greet", |ctx: Context, Greet { greeting }: Greet| async move {
            Ok::<_, Error>(format!("{greeting}, {}!", ask_name(&ctx).await?))
        }))
        .tool(ToolRoute::raw(raw, |ctx: Context, args: JsonObject| async move {
            Ok::<_, Error>(format!("{}, {}!", args["greeting"].as_str().unwrap_or("?"), ask_name(&ctx).await?))
        }))
        .build()
        .unwrap()
}

/// A handler that asks for input is lent its call's arguments (typed) or given a copy (raw); the
/// `requestState` it gets is bound to those arguments all the same: the next round with the same
/// arguments completes the call, and one with other arguments is refused.
#[tokio::test]
async fn a_request_state_is_bound_to_the_arguments_of_the_call_that_asked() {
    let mut client = MemoryClient::start(&greeting_server());
    let call = |id: u64, name: &str, greeting: &str, extra: serde_json::Value| {
        let mut params = json!({
            "name": name,
            "arguments": { "greeting": greeting },
            "_meta": meta_with(json!({ "elicitation": { "form": {} } })),
        });
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        request(id, "tools/call", params)
    };
    for (first, tool) in [(1, "greet"), (11, "greet_raw")] {
        let response = client.ask(call(first, tool, "Hello", json!({}))).await;
        assert_eq!(response["result"]["resultType"], "input_required", "{tool}: {response}");
        let state = response["result"]["requestState"].as_str().unwrap().to_owned();
        let answer = json!({ "name": { "action": "accept", "content": { "name": "Ada" } } });

        let other = json!({ "inputResponses": answer, "requestState": state });
        let refused = client.ask(call(first + 1, tool, "Goodbye", other)).await;
        assert_error(&refused, first + 1, -32602);
        assert!(message(&refused).contains("different request"), "{tool}: {refused}");

        let same = json!({ "inputResponses": answer, "requestState": state });
        let response = client.ask(call(first + 2, tool, "Hello", same)).await;
        assert_eq!(text(&response), "Hello, Ada!", "{tool}: {response}");
    }
}
