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
