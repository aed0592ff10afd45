//! The typed API end to end, over Streamable HTTP on 127.0.0.1 in both eras: shared state,
//! typed tool and prompt arguments, an `outputSchema` inferred from `Structured<T>`, and a
//! typed elicitation answered by the client with the same shape.
#![cfg(feature = "http")]

use std::sync::Mutex;
use std::time::Duration;

use mcp_client::{Client, ElicitationModes, ElicitationResponse, Era, EraPreference, Error, Handlers};
use mcp_server::schemars;
use mcp_server::{Context, Elicited, NoArguments, PromptRoute, Server, Structured, ToolRoute};
use serde::{Deserialize, Serialize};

#[derive(Default)]
struct Counter(Mutex<i64>);

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
struct Step {
    by: i64,
}

#[derive(Serialize, Deserialize, schemars::JsonSchema, PartialEq, Debug)]
struct Total {
    total: i64,
}

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
struct Reset {
    /// Set the counter back to zero?
    confirm: bool,
    /// Why (kept in the answer).
    reason: Option<String>,
}

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
struct Greeting {
    /// Whom to greet.
    name: String,
}

/// A form schema cannot hold a nested object.
#[derive(Deserialize, schemars::JsonSchema)]
struct Nested {
    #[allow(dead_code)]
    inner: Step,
}

fn server() -> Server {
    Server::builder("typed", "1.0")
        .state(Counter::default())
        .tool(ToolRoute::new("add", |ctx: Context, step: Step| async move {
            let mut total = ctx.state::<Counter>()?.0.lock().unwrap();
            *total += step.by;
            Ok(Structured(Total { total: *total }))
        }))
        .tool(ToolRoute::new("reset", |ctx: Context, _: NoArguments| async move {
            match ctx.elicit::<Reset>("Reset the counter?").await? {
                Elicited::Accept(Reset { confirm: true, reason }) => {
                    *ctx.state::<Counter>()?.0.lock().unwrap() = 0;
                    Ok(format!("reset: {}", reason.unwrap_or_default()))
                }
                Elicited::Accept(_) => Ok("kept".to_owned()),
                Elicited::Decline | Elicited::Cancel => Ok("declined".to_owned()),
            }
        }))
        .tool(ToolRoute::new("nested", |ctx: Context, _: NoArguments| async move {
            ctx.elicit::<Nested>("?").await.map(|_| "asked")
        }))
        .tool(ToolRoute::new("missing_state", |ctx: Context, _: NoArguments| async move {
            ctx.state::<String>().map(|s| s.to_owned())
        }))
        .prompt(PromptRoute::new(
            "greet",
            |_: Context, args: Greeting| async move { Ok(format!("Hello, {}!", args.name)) },
        ))
        .build()
        .unwrap()
}

async fn connect(url: &str, era: EraPreference, confirm: Option<bool>) -> Client {
    let handlers = Handlers::new().elicitation(ElicitationModes::FORM, move |_| async move {
        match confirm {
            Some(confirm) => ElicitationResponse::accept_value(&Reset { confirm, reason: Some("test".into()) }),
            None => Ok(ElicitationResponse::decline()),
        }
    });
    let builder = Client::builder("typed-test", "1.0").era(era).handlers(handlers);
    builder.request_timeout(Duration::from_secs(20)).connect_http(url).await.unwrap()
}

fn text(result: &mcp_client::types::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn typed_tools_prompts_state_and_elicitation_work_in_both_eras() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { mcp_server::http::serve(listener, server(), Default::default()).await });

    for (preference, era) in [(EraPreference::Auto, Era::Modern), (EraPreference::Legacy, Era::Legacy)] {
        let client = connect(&url, preference, Some(true)).await;
        assert_eq!(client.era(), era);

        // outputSchema comes from `Structured<Total>` without being declared.
        let tools = client.all_tools().await.unwrap();
        let add = tools.iter().find(|tool| tool.name == "add").unwrap();
        let output = add.output_schema.as_ref().expect("an outputSchema").to_value();
        assert_eq!(output["properties"]["total"]["type"], "integer", "{era:?}");
        assert!(output.get("title").is_none(), "no type name at the root: {output}");

        // Typed arguments in, structured output back; the state is shared across calls.
        let first = client.call_tool("add", &Step { by: 2 }).await.unwrap();
        let second = client.call_tool("add", &Step { by: 3 }).await.unwrap();
        let total = |result: mcp_client::types::CallToolResult| -> Total {
            serde_json::from_value(result.structured_content.unwrap()).unwrap()
        };
        assert_eq!(total(second).total - total(first).total, 3, "{era:?}");

        // The server's typed question, answered with the same shape.
        let reset = client.call_tool("reset", ()).await.unwrap();
        assert_eq!(text(&reset), "reset: test", "{era:?}");
        let after = client.call_tool("add", &Step { by: 0 }).await.unwrap();
        assert_eq!(total(after), Total { total: 0 }, "{era:?}");
        let declining = connect(&url, preference, None).await;
        assert_eq!(text(&declining.call_tool("reset", ()).await.unwrap()), "declined", "{era:?}");

        // A typed prompt: arguments declared from the type, a String is one user message.
        let prompts = client.all_prompts().await.unwrap();
        let arguments = serde_json::to_value(&prompts[0].arguments).unwrap();
        assert_eq!(arguments, serde_json::json!([{"name": "name", "description": "Whom to greet.", "required": true}]));
        let got = client.get_prompt("greet", &Greeting { name: "Ada".into() }).await.unwrap();
        assert_eq!(serde_json::to_value(&got.messages).unwrap()[0]["content"]["text"], "Hello, Ada!");
        let err = client.get_prompt("greet", ()).await.unwrap_err();
        assert_eq!(err.rpc_error().and_then(|e| e.code.as_i64()), Some(-32602), "{era:?}: {err}");
        assert!(err.to_string().contains("name"), "{err}");

        // Bad input gets clear errors, on either side.
        let err = client.call_tool("add", &[1, 2]).await.unwrap_err();
        assert!(matches!(&err, Error::InvalidArguments { tool, .. } if tool == "add"), "{err}");
        let err = client.get_prompt("greet", &Step { by: 1 }).await.unwrap_err();
        assert!(err.to_string().contains("prompt argument `by` must be a string"), "{err}");
        let err = client.call_tool("nested", ()).await.unwrap_err();
        assert_eq!(err.rpc_error().and_then(|e| e.code.as_i64()), Some(-32603), "{era:?}: {err}");
        assert!(err.to_string().contains("field `inner`"), "{err}");
        let err = client.call_tool("missing_state", ()).await.unwrap_err();
        assert!(err.to_string().contains("no state of type `alloc::string::String`"), "{err}");
    }
}
