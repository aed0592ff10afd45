//! `catalogue = "search"`: over a catalogue of more than a thousand tools the gateway lists only
//! `search_tools` and `call_tool`; natural queries find the right tool in the top three; a
//! principal never finds nor calls (through `call_tool`) what it may not see, and gets the errors
//! a direct call would; the index follows the upstreams' list changes; plain mode lists every
//! tool and knows no `search_tools`.

use mcp_client::{Client, EraPreference};
use mcp_gateway::Gateway;
use mcp_server::{Principal, VerifiedToken};
use serde_json::{Value, json};

use crate::common;
use common::catalogue::{self, KNOWN};
use common::shifting::Shifting;
use common::{Upstream, client, config, eventually, serve, text};

/// Four upstreams (prefix "": the tools keep their names) listing the catalogue between them.
fn upstreams(count: usize) -> Vec<Upstream> {
    let lists = catalogue::split(catalogue::tools(count), 4);
    lists
        .into_iter()
        .enumerate()
        .map(|(at, tools)| Upstream::start(catalogue::server(&format!("u{at}"), tools), 0))
        .collect()
}

fn toml(upstreams: &[Upstream], catalogue: Option<&str>) -> String {
    let mut toml = catalogue.map(|mode| format!("catalogue = \"{mode}\"\n")).unwrap_or_default();
    for (at, upstream) in upstreams.iter().enumerate() {
        toml.push_str(&format!("[[upstream]]\nname = \"u{at}\"\nurl = \"{}\"\nprefix = \"\"\n", upstream.url));
    }
    toml
}

async fn names(client: &Client) -> Vec<String> {
    client.clear_cache();
    client.all_tools().await.unwrap().into_iter().map(|tool| tool.name).collect()
}

/// The tools `search_tools` returns for `query`: their definitions, best first.
async fn search(client: &Client, query: &str, limit: Option<u64>) -> Vec<Value> {
    let mut arguments = json!({ "query": query });
    if let Some(limit) = limit {
        arguments["limit"] = limit.into();
    }
    let result = client.call_tool("search_tools", arguments).await.unwrap_or_else(|e| panic!("{query}: {e}"));
    let structured = result.structured_content.unwrap_or_else(|| panic!("{query}: no structuredContent"));
    structured["tools"].as_array().unwrap_or_else(|| panic!("{query}: {structured}")).clone()
}

fn found_names(found: &[Value]) -> Vec<&str> {
    found.iter().map(|tool| tool["name"].as_str().unwrap()).collect()
}

/// A call's JSON-RPC error (code and message).
fn rpc_error(outcome: Result<mcp_types::CallToolResult, mcp_client::Error>) -> (i64, String) {
    match outcome {
        Err(mcp_client::Error::Rpc { error, .. }) => (error.code.as_i64().unwrap(), error.message),
        other => panic!("not a JSON-RPC error: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_tools_finds_the_right_tool_in_the_top_3_of_over_1000_for_natural_queries() {
    let upstreams = upstreams(1_000);
    let gateway = Gateway::start(&config(&toml(&upstreams, Some("search")))).await.unwrap();
    let client = client(&serve(&gateway).await, EraPreference::Auto).await;

    // Only the two tools are listed, search_tools with an outputSchema.
    client.clear_cache();
    let listed = client.all_tools().await.unwrap();
    let listed_names: Vec<&str> = listed.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(listed_names, ["search_tools", "call_tool"]);
    assert!(listed[0].output_schema.is_some());
    // All the catalogue is there to be found: the words of a generated tool find it.
    let found = search(&client, "archive in crm", Some(20)).await;
    let names = found_names(&found);
    assert!(names.len() == 20 && names[..4].iter().all(|name| name.starts_with("crm_archive_")), "{names:?}");

    let mut misses = Vec::new();
    for known in KNOWN {
        let found = search(&client, known.query, Some(3)).await;
        assert!(found.len() <= 3, "{}: {found:?}", known.query);
        if !found_names(&found).contains(&known.name) {
            misses.push(format!("{:?} → {:?}, not {}", known.query, found_names(&found), known.name));
        }
    }
    assert!(misses.is_empty(), "{} of {} queries missed:\n{}", misses.len(), KNOWN.len(), misses.join("\n"));

    // A full definition: under the gateway's name, with its description and input schema.
    let found = search(&client, "weather forecast for a city", None).await;
    assert!(found.len() <= 5);
    let forecast = &found[0];
    assert_eq!(forecast["name"], "weather_get_forecast");
    assert_eq!(forecast["description"], KNOWN[1].description);
    assert_eq!(forecast["inputSchema"]["properties"]["city"]["type"], "string");
    assert_eq!(forecast["inputSchema"]["required"], json!(["city", "days"]));
    // The text content names what was found.
    let result = client.call_tool("search_tools", json!({ "query": "convert currency" })).await.unwrap();
    let mcp_types::ContentBlock::Text(summary) = &result.content[0] else { panic!("{result:?}") };
    assert!(summary.text.contains("money_convert: Convert an amount"), "{}", summary.text);
    // Over the maximum is the maximum; no match is an empty list.
    assert_eq!(search(&client, "delete", Some(50)).await.len(), 20);
    assert!(search(&client, "zzyzx", None).await.is_empty());
    // A query that is not a string is refused.
    let (code, _) = rpc_error(client.call_tool("search_tools", json!({ "query": 3 })).await);
    assert_eq!(code, -32602);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_tool_calls_as_a_direct_call_would_and_fails_alike_for_unknown_names() {
    let upstreams = upstreams(200);
    let gateway = Gateway::start(&config(&toml(&upstreams, Some("search")))).await.unwrap();
    let client = client(&serve(&gateway).await, EraPreference::Modern).await;

    let arguments = json!({ "city": "Paris", "days": "2" });
    let direct = text(&client, "weather_get_forecast", arguments.clone()).await;
    assert!(direct.ends_with(r#"weather_get_forecast {"city":"Paris","days":"2"}"#), "{direct}");
    let through = text(&client, "call_tool", json!({ "name": "weather_get_forecast", "arguments": arguments })).await;
    assert_eq!(through, direct);

    // An unknown name: the error a direct call gets.
    let direct = rpc_error(client.call_tool("no_such_tool", json!({})).await);
    let through = rpc_error(client.call_tool("call_tool", json!({ "name": "no_such_tool", "arguments": {} })).await);
    assert_eq!(through, direct);
    assert_eq!(direct, (-32602, "Unknown tool: no_such_tool".to_owned()));
    // call_tool calls the catalogue's tools, not itself.
    let nested = json!({ "name": "call_tool", "arguments": { "name": "weather_get_forecast" } });
    let (_, message) = rpc_error(client.call_tool("call_tool", nested).await);
    assert_eq!(message, "Unknown tool: call_tool");
    let (code, message) = rpc_error(client.call_tool("call_tool", json!({ "arguments": {} })).await);
    assert_eq!((code, message.contains("`name`")), (-32602, true), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_mode_lists_every_tool_and_has_no_search_tools() {
    let upstreams = upstreams(1_000);
    let gateway = Gateway::start(&config(&toml(&upstreams, None))).await.unwrap();
    let client = client(&serve(&gateway).await, EraPreference::Auto).await;
    let listed = names(&client).await;
    assert_eq!(listed.len(), catalogue::tools(1_000).len());
    assert!(listed.len() >= 1_000);
    assert!(!listed.iter().any(|name| name == "search_tools" || name == "call_tool"));
    let (_, message) = rpc_error(client.call_tool("search_tools", json!({ "query": "delete a file" })).await);
    assert_eq!(message, "Unknown tool: search_tools");
    let (_, message) = rpc_error(client.call_tool("call_tool", json!({ "name": "files_delete_file" })).await);
    assert_eq!(message, "Unknown tool: call_tool");
    assert!(text(&client, "files_delete_file", json!({ "path": "/x" })).await.contains("files_delete_file"));
    // And the configuration says which.
    assert_eq!(config(&toml(&upstreams, None)).catalogue, mcp_gateway::CatalogueMode::Plain);
    assert_eq!(config(&toml(&upstreams, Some("search"))).catalogue, mcp_gateway::CatalogueMode::Search);
    assert!(mcp_gateway::Config::from_toml("catalogue = \"fuzzy\"\n").unwrap_err().contains("unknown variant"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_search_index_follows_an_upstreams_list_changes() {
    let shifting = Shifting::new("s", &["alpha"], &[], &[]);
    let server = shifting.server();
    let upstream = Upstream::start(server.clone(), 0);
    let toml = format!(
        "catalogue = \"search\"\n[[upstream]]\nname = \"s\"\nurl = \"{}\"\nrelist_delay_secs = 0\n",
        upstream.url
    );
    let gateway = Gateway::start(&config(&toml)).await.unwrap();
    let client = client(&serve(&gateway).await, EraPreference::Modern).await;
    assert_eq!(found_names(&search(&client, "alpha", None).await), ["s_alpha"]);
    shifting.tools.lock().unwrap().push("zebraFeeder".to_owned());
    server.notify_tools_list_changed();
    eventually("the new tool is found", async || {
        let found = search(&client, "feed the zebra", None).await;
        found_names(&found) == ["s_zebraFeeder"]
    })
    .await;
    // The listed tools stay the two.
    assert_eq!(names(&client).await, ["search_tools", "call_tool"]);
}

/// A modern `tools/call` of `name` by the principal `who` (none: anonymous); the JSON-RPC
/// response.
async fn call_as(url: &str, who: &str, name: &str, arguments: Value) -> Value {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": name, "arguments": arguments, "_meta": meta } });
    let response = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .header("x-test-principal", who)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    let json = text.lines().find_map(|line| line.strip_prefix("data: ")).unwrap_or(&text).to_owned();
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The names `search_tools` returns to `who`.
async fn search_as(url: &str, who: &str, query: &str) -> Vec<String> {
    let response = call_as(url, who, "search_tools", json!({ "query": query, "limit": 20 })).await;
    let tools = response["result"]["structuredContent"]["tools"].as_array().unwrap_or_else(|| panic!("{response}"));
    tools.iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect()
}

/// Attack: bob, who is not among the `principals` of the upstream serving `payroll_export_salaries`,
/// searches for it by its very name and words, asks for the most results, and calls it through
/// `call_tool` and directly. He never gets it, and his errors are those of a tool that does not
/// exist; alice, who may, finds it first and calls it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_a_principal_who_may_not_see_a_tool_never_finds_it_nor_calls_it_through_call_tool() {
    let public = Upstream::start(catalogue::server("public", catalogue::tools(1_000)), 0);
    let secret_tools = vec![
        catalogue::tool(
            "payroll_export_salaries",
            "Export every employee's salary and bank account.",
            &[("year", "The year")],
        ),
        catalogue::tool("payroll_delete_file", "Delete a payroll file.", &[("path", "Its path")]),
    ];
    let secret = Upstream::start(catalogue::server("secret", secret_tools), 0);
    // The issuer is never asked: the test's layer below says who calls.
    let toml = format!(
        "catalogue = \"search\"\n[authorization]\nresource = \"http://gw.test/mcp\"\nissuer = \"http://127.0.0.1:9\"\n\
         [[upstream]]\nname = \"public\"\nurl = \"{}\"\nprefix = \"\"\n\
         [[upstream]]\nname = \"secret\"\nurl = \"{}\"\nprefix = \"\"\nprincipals = [\"alice\"]\n",
        public.url, secret.url
    );
    let gateway = Gateway::start(&config(&toml)).await.unwrap();
    // Each request's principal from `x-test-principal`, with a token, as a verifier would make it.
    let router = mcp_server::http::router(gateway.server().clone(), Default::default()).layer(
        axum::middleware::from_fn(|mut request: axum::extract::Request, next: axum::middleware::Next| async move {
            let who = request.headers().get("x-test-principal").map(|v| v.to_str().unwrap().to_owned());
            if let Some(who) = who {
                let claims = json!({ "sub": who, "scope": "mcp" }).as_object().unwrap().clone();
                request.extensions_mut().insert(Principal::from_token(VerifiedToken::from_claims(claims)));
            }
            next.run(request).await
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let limits = mcp_server::http::ConnectionLimits::from(&mcp_server::http::HttpConfig::default());
    tokio::spawn(mcp_server::http::serve_router(listener, router, limits, std::future::pending()));

    let target = "payroll_export_salaries";
    let secrets = [target, "payroll_delete_file"];
    let queries =
        [target, "export employee salaries", "salary bank account", "export", "payroll", "delete a payroll file"];
    for query in queries {
        let found = search_as(&url, "bob", query).await;
        assert!(!found.iter().any(|name| secrets.contains(&name.as_str())), "bob found {found:?} for {query:?}");
    }
    // What he may see is still found.
    assert!(search_as(&url, "bob", "delete a file").await.iter().any(|name| name == "files_delete_file"));
    let direct = call_as(&url, "bob", target, json!({ "year": "2026" })).await;
    let through = call_as(&url, "bob", "call_tool", json!({ "name": target, "arguments": { "year": "2026" } })).await;
    assert_eq!(through["error"], direct["error"], "{through} {direct}");
    let unknown = call_as(&url, "bob", "no_such_tool", json!({})).await;
    assert_eq!(direct["error"]["code"], unknown["error"]["code"]);
    assert_eq!(direct["error"]["message"], format!("Unknown tool: {target}"));
    assert!(through.get("result").is_none(), "{through}");

    // Alice may.
    assert_eq!(search_as(&url, "alice", "export employee salaries").await.first().map(String::as_str), Some(target));
    let called = call_as(&url, "alice", "call_tool", json!({ "name": target, "arguments": { "year": "2026" } })).await;
    let text = called["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{called}"));
    assert_eq!(text, r#"secret payroll_export_salaries {"year":"2026"}"#);
}
