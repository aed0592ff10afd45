//! `Client::relay_tool_call` against an `mcp-server` over Streamable HTTP on 127.0.0.1: a call
//! relayed as it came is answered as `call_tool_raw` is answered, and what the relay cannot give is
//! given back before anything ran.
#![cfg(feature = "http")]

use std::time::Duration;

use mcp_client::types::{ClientCapabilities, ElicitRequestFormParams, ElicitRequestParams, JsonObject, Tool};
use mcp_client::{CallOptions, Client, ElicitationModes, ElicitationResponse, EraPreference, Handlers, Relayed};
use mcp_server::{Context, Server, ToolRoute};
use serde_json::value::RawValue;
use serde_json::{Value, json};

fn tool(name: &str, schema: Value) -> Tool {
    Tool::new(mcp_client::types::ObjectSchema::from_value(schema).unwrap(), name)
}

async fn start() -> String {
    let echo = tool("echo", json!({"type": "object"}));
    let located =
        tool("located", json!({"type": "object", "properties": {"city": {"type": "string", "x-mcp-header": "City"}}}));
    let asks = tool("asks", json!({"type": "object"}));
    let server = Server::builder("relayed", "1.0")
        .tool(ToolRoute::raw(echo, |_: Context, args: JsonObject| async move {
            Ok::<_, mcp_server::Error>(Value::Object(args).to_string())
        }))
        .tool(ToolRoute::raw(located, |_: Context, args: JsonObject| async move {
            Ok::<_, mcp_server::Error>(Value::Object(args).to_string())
        }))
        .tool(ToolRoute::raw(asks, |ctx: Context, _: JsonObject| async move {
            let schema = serde_json::from_value(json!({"type": "object", "properties": {}})).unwrap();
            let form = ElicitRequestParams::Form(ElicitRequestFormParams::new("Go on?", schema));
            let answer = ctx.elicit_with("go", form).await?;
            Ok::<_, mcp_server::Error>(format!("{:?}", answer.action))
        }))
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { mcp_server::http::serve(listener, server, Default::default()).await });
    url
}

async fn client(url: &str, era: EraPreference) -> Client {
    let handlers = Handlers::new()
        .elicitation(ElicitationModes::FORM, |_| async { Ok(ElicitationResponse::accept(JsonObject::new())) });
    let builder = Client::builder("relay-test", "1.0").era(era).handlers(handlers);
    builder.request_timeout(Duration::from_secs(20)).connect_http(url).await.unwrap()
}

fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).unwrap()
}

#[tokio::test]
async fn a_relayed_call_is_answered_as_a_raw_call_is() {
    let url = start().await;
    let client = client(&url, EraPreference::Auto).await;
    let none = ClientCapabilities::default();
    let arguments = raw(r#"{"b": 1.50, "a": {"deep": ["x", null, true]}}"#);
    // Before a listing, the client does not know which tools need `Mcp-Param-*` headers.
    assert!(!client.can_relay("echo"));
    assert!(matches!(client.relay_tool_call("echo", Some(&arguments), &none, None).await, Ok(Relayed::Again)));
    client.all_tools().await.unwrap();
    assert!(client.can_relay("echo"));
    let Relayed::Result(relayed) = client.relay_tool_call("echo", Some(&arguments), &none, None).await.unwrap() else {
        panic!("not relayed")
    };
    let usual = client
        .call_tool_raw("echo", serde_json::from_str::<Value>(arguments.get()).unwrap(), CallOptions::default())
        .await
        .unwrap();
    assert_eq!(relayed.get(), usual.get());
    assert!(relayed.get().contains(r#"\"deep\":[\"x\",null,true]"#), "{}", relayed.get());
    // No arguments at all.
    let Relayed::Result(empty) = client.relay_tool_call("echo", None, &none, None).await.unwrap() else {
        panic!("not relayed")
    };
    assert!(empty.get().contains(r#""text":"{}""#), "{}", empty.get());
    // An unknown tool: the server's error, as the usual call gets it.
    let relayed = client.relay_tool_call("nothing", None, &none, None).await.unwrap_err();
    let usual = client.call_tool_raw("nothing", (), CallOptions::default()).await.unwrap_err();
    assert_eq!(relayed.to_string(), usual.to_string());
    client.close().await;
}

#[tokio::test]
async fn what_the_relay_cannot_give_is_given_back() {
    let url = start().await;
    let client = client(&url, EraPreference::Auto).await;
    client.all_tools().await.unwrap();
    let none = ClientCapabilities::default();
    // A tool whose arguments go into headers.
    assert!(!client.can_relay("located"));
    let city = raw(r#"{"city":"Paris"}"#);
    assert!(matches!(client.relay_tool_call("located", Some(&city), &none, None).await, Ok(Relayed::Again)));
    // Arguments that are no object: the usual call refuses them, in its own words.
    let list = raw("[1]");
    assert!(matches!(client.relay_tool_call("echo", Some(&list), &none, None).await, Ok(Relayed::Again)));
    // A caller that follows tasks.
    let extensions = Some([(mcp_client::types::ext::TASKS.to_owned(), JsonObject::new())].into());
    let tasks = ClientCapabilities { extensions, ..Default::default() };
    assert!(matches!(client.relay_tool_call("echo", None, &tasks, None).await, Ok(Relayed::Again)));
    // An input round: given back; the usual call answers it.
    let asking = client.client_capabilities().clone();
    assert!(matches!(client.relay_tool_call("asks", None, &asking, None).await, Ok(Relayed::Again)));
    let answered = client.call_tool_raw("asks", (), CallOptions::default()).await.unwrap();
    assert!(answered.get().contains("Accept"), "{}", answered.get());
    client.close().await;
    // A legacy session.
    let legacy = self::client(&url, EraPreference::Legacy).await;
    legacy.all_tools().await.unwrap();
    assert!(!legacy.can_relay("echo"));
    assert!(matches!(legacy.relay_tool_call("echo", None, &none, None).await, Ok(Relayed::Again)));
    legacy.close().await;
}
