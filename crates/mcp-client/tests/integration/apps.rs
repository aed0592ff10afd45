//! MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865) end to end: `mcp-client` declares the
//! extension with the MIME types it renders, finds a tool's interface and reads it from an
//! `mcp-server` over Streamable HTTP on 127.0.0.1, in both eras; a resource that is not an MCP
//! App's interface is refused naming its MIME type.
#![cfg(feature = "http")]

use std::time::Duration;

use mcp_client::types::ext::APPS;
use mcp_client::types::ext::apps::{MIME_TYPE, McpUiResourceCsp, McpUiToolVisibility};
use mcp_client::types::{Resource, TextResourceContents};
use mcp_client::{Client, EraPreference, Error, Handlers};
use mcp_server::apps::UiResource;
use mcp_server::{Context, NoArguments, ResourceRoute, Server, Structured, ToolRoute};

async fn serve(server: Server) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { mcp_server::http::serve(listener, server, Default::default()).await });
    url
}

fn server() -> Server {
    let csp = McpUiResourceCsp { resource_domains: Some(vec!["https://cdn.example".into()]), ..Default::default() };
    Server::builder("apps", "1.0")
        .ui_resource(UiResource::html("ui://dice/app.html", "<!doctype html><p id=roll></p>").csp(csp))
        .tool(ToolRoute::new("roll", |_ctx, _: NoArguments| async { Ok("4") }).ui("ui://dice/app.html"))
        .tool(
            ToolRoute::new("reroll", |_ctx, _: NoArguments| async { Ok("2") })
                .ui("ui://dice/app.html")
                .ui_visibility([McpUiToolVisibility::App]),
        )
        // What the client declared, as the server saw it.
        .tool(ToolRoute::new("declared", |ctx: Context, _: NoArguments| async move {
            Ok(Structured(ctx.client_capabilities().extensions.clone().unwrap_or_default()))
        }))
        .resource(ResourceRoute::new(
            Resource { name: "notes".into(), uri: "ui://dice/notes.txt".into(), ..Default::default() },
            |_ctx, uri| async move {
                Ok(vec![TextResourceContents { uri, text: "plain".into(), ..Default::default() }.into()])
            },
        ))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_host_finds_and_reads_a_tools_interface_in_both_eras() {
    let url = serve(server()).await;
    for era in [EraPreference::Modern, EraPreference::Legacy] {
        let client = Client::builder("apps-host", "1.0")
            .era(era)
            .request_timeout(Duration::from_secs(20))
            .handlers(Handlers::new().apps([MIME_TYPE]))
            .connect_http(&url)
            .await
            .unwrap();
        let settings = serde_json::json!({ "mimeTypes": [MIME_TYPE] });
        assert_eq!(client.client_capabilities().extensions.as_ref().unwrap()[APPS], *settings.as_object().unwrap());
        assert!(client.server_capabilities().extensions.as_ref().unwrap().contains_key(APPS), "{era:?}");
        let seen = client.call_tool("declared", serde_json::json!({})).await.unwrap();
        assert_eq!(seen.structured_content.unwrap()[APPS], settings, "{era:?}: the server saw the declaration");

        let tools = client.all_tools().await.unwrap();
        let roll = tools.iter().find(|t| t.name == "roll").unwrap();
        let ui = Client::tool_ui(roll).unwrap().unwrap();
        assert_eq!(ui.resource_uri.as_deref(), Some("ui://dice/app.html"));
        assert_eq!(ui.visibility, None);
        let reroll = Client::tool_ui(tools.iter().find(|t| t.name == "reroll").unwrap()).unwrap().unwrap();
        assert_eq!(reroll.visibility, Some(vec![McpUiToolVisibility::App]));
        assert!(Client::tool_ui(tools.iter().find(|t| t.name == "declared").unwrap()).is_none());

        let app = client.read_ui_resource("ui://dice/app.html").await.unwrap();
        assert_eq!(app.html, "<!doctype html><p id=roll></p>");
        assert_eq!(app.meta.csp.unwrap().resource_domains.unwrap(), ["https://cdn.example"]);

        match client.read_ui_resource("ui://dice/notes.txt").await {
            Err(Error::Protocol(message)) => {
                assert!(message.contains("ui://dice/notes.txt") && message.contains(MIME_TYPE), "{message}")
            }
            other => panic!("{era:?}: a text/plain resource is not an interface: {other:?}"),
        }
        client.close().await;
    }
}
