//! MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865) on the wire, over the in-memory connection:
//! the UI resource listed and read with its MIME type and `_meta.ui`, the tool's `_meta.ui`, the
//! extension declared in both eras, the HTML read from a file at each read, and the links and URIs
//! that `build` refuses.

use crate::common;

use common::*;
use mcp_server::apps::UiResource;
use mcp_server::{NoArguments, Server, ToolRoute};
use mcp_types::ext::APPS;
use mcp_types::ext::apps::{McpUiResourceCsp, McpUiResourcePermissions, McpUiToolVisibility};
use serde_json::{Value, json};

const MIME: &str = "text/html;profile=mcp-app";

fn clock() -> ToolRoute {
    ToolRoute::new("get_time", |_ctx, _: NoArguments| async { Ok("12:00") })
}

fn server() -> Server {
    Server::builder("clock", "1.0.0")
        .ui_resource(
            UiResource::html("ui://clock/app.html", "<!doctype html><p id=time></p>")
                .title("Clock")
                .csp(McpUiResourceCsp {
                    connect_domains: Some(vec!["https://time.example".into()]),
                    ..Default::default()
                })
                .permissions(McpUiResourcePermissions {
                    clipboard_write: Some(Default::default()),
                    ..Default::default()
                })
                .prefers_border(true),
        )
        .tool(clock().ui("ui://clock/app.html"))
        .tool(
            ToolRoute::new("refresh", |_ctx, _: NoArguments| async { Ok("refreshed") })
                .ui("ui://clock/app.html")
                .ui_visibility([McpUiToolVisibility::App]),
        )
        .tool(ToolRoute::new("plain", |_ctx, _: NoArguments| async { Ok("no interface") }))
        .build()
        .unwrap()
}

fn tool<'a>(listed: &'a Value, name: &str) -> &'a Value {
    listed["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap()
}

#[tokio::test]
async fn tools_name_their_interface_and_the_interface_is_served_with_its_metadata() {
    let mut client = MemoryClient::start(&server());
    let discovered = client.ask(modern(1, "server/discover", json!({}))).await;
    assert_eq!(discovered["result"]["capabilities"]["extensions"][APPS], json!({}));

    let listed = client.ask(modern(2, "tools/list", json!({}))).await;
    assert_eq!(tool(&listed, "get_time")["_meta"], json!({"ui": {"resourceUri": "ui://clock/app.html"}}));
    assert_eq!(
        tool(&listed, "refresh")["_meta"],
        json!({"ui": {"resourceUri": "ui://clock/app.html", "visibility": ["app"]}})
    );
    assert!(tool(&listed, "plain").get("_meta").is_none());

    let ui = json!({
        "csp": {"connectDomains": ["https://time.example"]},
        "permissions": {"clipboardWrite": {}},
        "prefersBorder": true,
    });
    let resources = client.ask(modern(3, "resources/list", json!({}))).await;
    let listing = &resources["result"]["resources"][0];
    assert_eq!(listing["uri"], "ui://clock/app.html");
    assert_eq!(listing["name"], "app.html");
    assert_eq!(listing["title"], "Clock");
    assert_eq!(listing["mimeType"], MIME);
    assert_eq!(listing["_meta"]["ui"], ui);

    let read = client.ask(modern(4, "resources/read", json!({"uri": "ui://clock/app.html"}))).await;
    let contents = &read["result"]["contents"][0];
    assert_eq!(contents["mimeType"], MIME);
    assert_eq!(contents["text"], "<!doctype html><p id=time></p>");
    assert_eq!(contents["_meta"]["ui"], ui);
}

#[tokio::test]
async fn legacy_hosts_see_the_extension_and_the_same_interface() {
    let mut legacy = MemoryClient::start(&server());
    let init = legacy.ask(initialize(1, "2025-11-25", json!({"extensions": {APPS: {"mimeTypes": [MIME]}}}))).await;
    // Only MCP Apps: the tasks extension and others stay on 2026-07-28.
    assert_eq!(init["result"]["capabilities"]["extensions"], json!({APPS: {}}), "{init}");
    legacy.send(notification("notifications/initialized", json!({}))).await;
    let listed = legacy.ask(request(2, "tools/list", json!({}))).await;
    assert_eq!(tool(&listed, "get_time")["_meta"]["ui"]["resourceUri"], "ui://clock/app.html");
    let read = legacy.ask(request(3, "resources/read", json!({"uri": "ui://clock/app.html"}))).await;
    assert_eq!(read["result"]["contents"][0]["mimeType"], MIME);

    // A server without UI resources declares nothing in either era.
    let plain = Server::builder("plain", "1.0").tool(clock()).build().unwrap();
    let mut client = MemoryClient::start(&plain);
    let discovered = client.ask(modern(1, "server/discover", json!({}))).await;
    assert!(discovered["result"]["capabilities"].get("extensions").is_none(), "{discovered}");
    let mut legacy = MemoryClient::start(&plain);
    let init = legacy.ask(initialize(1, "2025-11-25", json!({}))).await;
    assert!(init["result"]["capabilities"].get("extensions").is_none(), "{init}");
}

#[tokio::test]
async fn an_interface_from_a_file_is_read_at_each_read() {
    let dir = std::env::temp_dir().join(format!("mcp-apps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("app.html");
    std::fs::write(&path, "<p>one</p>").unwrap();
    let server = Server::builder("files", "1.0")
        .ui_resource(UiResource::file("ui://files/app.html", &path).name("files-app"))
        .build()
        .unwrap();
    let mut client = MemoryClient::start(&server);
    let read = client.ask(modern(1, "resources/read", json!({"uri": "ui://files/app.html"}))).await;
    assert_eq!(read["result"]["contents"][0]["text"], "<p>one</p>");
    assert!(read["result"]["contents"][0].get("_meta").is_none(), "no `_meta.ui` without settings");
    std::fs::write(&path, "<p>two</p>").unwrap();
    let read = client.ask(modern(2, "resources/read", json!({"uri": "ui://files/app.html"}))).await;
    assert_eq!(read["result"]["contents"][0]["text"], "<p>two</p>");

    std::fs::remove_file(&path).unwrap();
    let read = client.ask(modern(3, "resources/read", json!({"uri": "ui://files/app.html"}))).await;
    assert_eq!(code(&read), -32603);
    assert!(message(&read).contains("ui://files/app.html") && message(&read).contains("app.html"), "{read}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn build_refuses_unregistered_interfaces_and_other_schemes() {
    let refusal = |built: Result<Server, mcp_server::BuildError>| built.err().expect("refused").to_string();
    let unlinked = refusal(Server::builder("s", "1").tool(clock().ui("ui://clock/missing.html")).build());
    assert!(unlinked.contains("get_time") && unlinked.contains("ui://clock/missing.html"), "{unlinked}");

    let scheme =
        refusal(Server::builder("s", "1").ui_resource(UiResource::html("https://clock/app.html", "<p>")).build());
    assert!(scheme.contains("https://clock/app.html") && scheme.contains("ui://"), "{scheme}");

    let twice = refusal(
        Server::builder("s", "1")
            .ui_resource(UiResource::html("ui://a/app.html", "<p>"))
            .ui_resource(UiResource::html("ui://a/app.html", "<p>"))
            .build(),
    );
    assert!(twice.contains("ui://a/app.html"), "{twice}");
}
