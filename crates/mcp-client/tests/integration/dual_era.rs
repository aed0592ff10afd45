//! Both eras against one dual-era server built with `mcp-server` (Streamable HTTP on 127.0.0.1):
//! the same client code, negotiated modern or pinned legacy, gets the same answers; the server's
//! questions arrive as an `InputRequiredResult` on the modern wire and as an `elicitation/create`
//! request on a legacy session, and the same handler answers both.
#![cfg(feature = "http")]

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt as _;
use mcp_client::types::{
    CompleteRequestParams, CompleteRequestParamsRef, CompleteResultCompletion, ContentBlock, ElicitRequestFormParams,
    ElicitRequestFormParamsRequestedSchema, ElicitRequestParams, GetPromptResult, JsonObject,
    PrimitiveSchemaDefinition, Prompt, PromptMessage, PromptReference, Role, ServerNotification, StringSchema,
    SubscriptionFilter, TextContent, Tool,
};
use mcp_client::{Client, ElicitationModes, ElicitationResponse, Era, EraPreference, Handlers};
use mcp_server::{Context, PromptRoute, Server, ToolRoute};
use serde_json::{Value, json};

fn server() -> Server {
    let echo = Tool::new(
        mcp_client::types::ObjectSchema::from_value(
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        )
        .unwrap(),
        "echo",
    );
    let greet = Tool::new(mcp_client::types::ObjectSchema::default(), "greet");
    Server::builder("dual", "3.0")
        .tool(ToolRoute::raw(echo, |_: Context, args: JsonObject| async move {
            Ok::<_, mcp_server::Error>(args.get("text").and_then(Value::as_str).unwrap_or("").to_owned())
        }))
        .tool(ToolRoute::raw(greet, |ctx: Context, _: JsonObject| async move {
            let mut properties = std::collections::BTreeMap::new();
            let name = StringSchema { default: Some("World".into()), ..Default::default() };
            properties.insert("name".to_owned(), PrimitiveSchemaDefinition::StringSchema(name));
            let schema = ElicitRequestFormParamsRequestedSchema::new(properties);
            let answer = ctx
                .elicit_with("name", ElicitRequestParams::Form(ElicitRequestFormParams::new("Name?", schema)))
                .await?;
            let content = serde_json::to_value(&answer.content).unwrap_or_default();
            Ok::<_, mcp_server::Error>(format!("Hello, {}!", content["name"].as_str().unwrap_or("?")))
        }))
        .prompt(PromptRoute::raw(Prompt::new("hello"), |_: Context, args: BTreeMap<String, String>| async move {
            let who = args.get("who").cloned().unwrap_or_default();
            let message =
                PromptMessage::new(ContentBlock::Text(TextContent::new(format!("Say hello to {who}"))), Role::User);
            Ok::<_, mcp_server::Error>(GetPromptResult::new(vec![message]))
        }))
        .completion(|_: Context, params: CompleteRequestParams| async move {
            let prefix = params.argument.value.clone();
            let values =
                ["alice", "bob", "albert"].iter().filter(|v| v.starts_with(&prefix)).map(|v| v.to_string()).collect();
            Ok::<_, mcp_server::Error>(CompleteResultCompletion::new(values))
        })
        .build()
        .unwrap()
}

async fn start() -> (String, Server) {
    let server = server();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let serving = server.clone();
    tokio::spawn(async move { mcp_server::http::serve(listener, serving, Default::default()).await });
    (url, server)
}

fn client(era: EraPreference) -> mcp_client::ClientBuilder {
    // Accept with nothing filled in: the schema default ("World") is applied by the client.
    let handlers = Handlers::new()
        .elicitation(ElicitationModes::FORM, |_| async { Ok(ElicitationResponse::accept(JsonObject::new())) });
    Client::builder("dual-test", "1.0").era(era).handlers(handlers).request_timeout(Duration::from_secs(20))
}

fn text(result: &mcp_client::types::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn auto_negotiates_modern_and_pinned_legacy_gets_the_same_answers() {
    let (url, _server) = start().await;
    for (preference, era) in [(EraPreference::Auto, Era::Modern), (EraPreference::Legacy, Era::Legacy)] {
        let client = client(preference).connect_http(&url).await.unwrap();
        assert_eq!(client.era(), era);
        assert_eq!(client.server_info().unwrap().name, "dual");
        assert!(client.server_capabilities().tools.is_some());
        let names: Vec<String> = client.all_tools().await.unwrap().into_iter().map(|t| t.name).collect();
        assert_eq!(names, vec!["echo", "greet"], "{era:?}");
        let args = json!({"text": "hi"}).as_object().cloned();
        assert_eq!(text(&client.call_tool("echo", args).await.unwrap()), "hi", "{era:?}");
        assert_eq!(text(&client.call_tool("greet", ()).await.unwrap()), "Hello, World!", "{era:?}");
        client.health().await.unwrap();
        let prompts = client.all_prompts().await.unwrap();
        assert_eq!(prompts[0].name, "hello", "{era:?}");
        let args = BTreeMap::from([("who".to_owned(), "Ann".to_owned())]);
        let prompt = client.get_prompt("hello", args).await.unwrap();
        let said = serde_json::to_value(&prompt.messages).unwrap();
        assert_eq!(said[0]["content"]["text"], "Say hello to Ann", "{era:?}");
        let reference = CompleteRequestParamsRef::RefPrompt(PromptReference::new("hello"));
        let completion = client.complete(reference, "who", "al", BTreeMap::new()).await.unwrap();
        assert_eq!(completion.completion.values, vec!["alice", "albert"], "{era:?}");
        client.close().await;
    }
}

/// A raw call answers the server's question the same way (an input round, or an elicitation
/// request on a legacy session) and gives the final result's text.
#[tokio::test]
async fn a_raw_tool_call_gets_the_final_results_text_in_each_era() {
    let (url, _server) = start().await;
    for (preference, era) in [(EraPreference::Auto, Era::Modern), (EraPreference::Legacy, Era::Legacy)] {
        let client = client(preference).connect_http(&url).await.unwrap();
        let raw = client.call_tool_raw("greet", (), mcp_client::CallOptions::default()).await.unwrap();
        let result: mcp_client::types::CallToolResult = raw.decode().unwrap();
        assert_eq!(text(&result), "Hello, World!", "{era:?}");
        assert_eq!(raw.get().contains(r#""resultType":"complete""#), era == Era::Modern, "{}", raw.get());
        client.close().await;
    }
}

#[tokio::test]
async fn modern_subscription_sees_list_changes() {
    let (url, server) = start().await;
    let client = client(EraPreference::Auto).connect_http(&url).await.unwrap();
    let filter = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
    let mut subscription = client.listen(filter).await.unwrap();
    let ack = subscription.next().await.unwrap().unwrap();
    assert!(matches!(ack, ServerNotification::SubscriptionsAcknowledged(_)), "{ack:?}");
    server.notify_tools_list_changed();
    let changed = tokio::time::timeout(Duration::from_secs(5), subscription.next()).await.unwrap().unwrap().unwrap();
    assert!(matches!(changed, ServerNotification::ToolListChanged(_)), "{changed:?}");
}

/// Every call's records end with it (issue 47): 1,000 calls in each era, answered as JSON, as
/// an elicitation round (greet) and as errors, leave no record behind. Before, each call answered
/// in an HTTP body kept its awaited-response entry for good: 2,000 records after these calls.
#[tokio::test]
async fn a_thousand_calls_in_each_era_leave_no_record_behind() {
    let (url, _server) = start().await;
    for preference in [EraPreference::Auto, EraPreference::Legacy] {
        let client = client(preference).connect_http(&url).await.unwrap();
        for call in 0..1_000 {
            let args = json!({"text": call.to_string()}).as_object().cloned();
            assert_eq!(text(&client.call_tool("echo", args).await.unwrap()), call.to_string());
        }
        assert_eq!(text(&client.call_tool("greet", ()).await.unwrap()), "Hello, World!");
        assert!(client.call_tool("no_such_tool", ()).await.is_err());
        assert_eq!(client.records_in_flight(), 0, "{preference:?}: 1,002 calls left records behind");
        client.close().await;
    }
}
