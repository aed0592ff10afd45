//! Both protocol eras through the in-memory connection (`Connection::memory()` + `Server::serve`):
//! the protocol core's results and every error path that does not need HTTP headers.

use crate::common;

use common::*;
use std::sync::Arc;

use mcp_server::{InMemoryUsedStates, NoArguments, Options, Server, StateKeyring, ToolRoute, UsedStateStore};
use mcp_types::error_codes;
use serde_json::{Value, json};

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

#[test]
fn the_error_codes_are_the_2026_07_28_numbers() {
    assert_eq!(error_codes::HEADER_MISMATCH, -32020);
    assert_eq!(error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY, -32021);
    assert_eq!(error_codes::UNSUPPORTED_PROTOCOL_VERSION, -32022);
    assert_eq!(error_codes::INVALID_PARAMS, INVALID_PARAMS);
    assert_eq!(error_codes::METHOD_NOT_FOUND, METHOD_NOT_FOUND);
}

// ------------------------------------------------------------------ modern: discovery and _meta

#[tokio::test]
async fn discover_reports_versions_capabilities_cache_hints_and_server_info() {
    let mut client = MemoryClient::start(&server());
    let response = client.ask(modern("d-1", "server/discover", json!({}))).await;
    assert_eq!(response["id"], "d-1");
    let result = &response["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["supportedVersions"],
        json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])
    );
    assert_eq!(result["ttlMs"], 60_000);
    assert_eq!(result["cacheScope"], "public");
    assert_eq!(result["instructions"], "A fixture server for the integration tests.");
    assert_eq!(result["_meta"][SERVER_INFO], json!({ "name": "fixture", "version": "1.2.3" }));
    let capabilities = &result["capabilities"];
    assert_eq!(capabilities["tools"], json!({ "listChanged": true }));
    assert_eq!(capabilities["resources"], json!({ "listChanged": true, "subscribe": true }));
    assert_eq!(capabilities["prompts"], json!({ "listChanged": true }));
    assert_eq!(capabilities["logging"], json!({}));
    assert!(capabilities.get("completions").is_none(), "no completion handler was registered: {capabilities}");
}

#[tokio::test]
async fn capabilities_follow_registration_and_unadvertised_methods_are_unknown() {
    let server = Server::builder("tools-only", "0.1.0")
        .tool(ToolRoute::new("echo", |_, args: Echo| async move { Ok::<_, mcp_server::Error>(args.text) }))
        .build()
        .unwrap();
    assert!(server.capabilities().tools.is_some());
    assert!(server.capabilities().resources.is_none());
    assert!(server.capabilities().prompts.is_none());
    let mut client = MemoryClient::start(&server);
    let response = client.ask(modern(1, "server/discover", json!({}))).await;
    let capabilities = response["result"]["capabilities"].as_object().unwrap();
    let mut keys: Vec<&str> = capabilities.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["logging", "tools"]);
    for (id, method) in
        [(2, "prompts/list"), (3, "resources/list"), (4, "resources/templates/list"), (5, "completion/complete")]
    {
        let response = client.ask(modern(id, method, json!({}))).await;
        assert_error(&response, id, METHOD_NOT_FOUND);
    }
}

#[tokio::test]
async fn missing_meta_members_are_invalid_params() {
    let mut client = MemoryClient::start(&server());
    // No `_meta` at all.
    let response = client.ask(request(1, "tools/list", json!({}))).await;
    assert_error(&response, 1, INVALID_PARAMS);
    assert!(message(&response).contains("_meta"), "{response}");
    // No params at all.
    let response = client.ask(json!({ "jsonrpc": "2.0", "id": 2, "method": "server/discover" })).await;
    assert_error(&response, 2, INVALID_PARAMS);
    // `_meta` without the protocol version.
    let params = json!({ "_meta": { CLIENT_CAPABILITIES: {} } });
    let response = client.ask(request("three", "server/discover", params)).await;
    assert_error(&response, "three", INVALID_PARAMS);
    assert!(message(&response).contains(PROTOCOL_VERSION), "{response}");
    // `_meta` without the client capabilities.
    let params = json!({ "name": "echo", "arguments": { "text": "x" }, "_meta": { PROTOCOL_VERSION: MODERN } });
    let response = client.ask(request(4, "tools/call", params)).await;
    assert_error(&response, 4, INVALID_PARAMS);
    assert!(message(&response).contains(CLIENT_CAPABILITIES), "{response}");
}

#[tokio::test]
async fn unsupported_versions_list_what_is_supported() {
    let mut client = MemoryClient::start(&server());
    for (id, version) in [(1, "2099-01-01"), (2, "2025-11-25"), (3, "not-a-version")] {
        let params = json!({ "_meta": { PROTOCOL_VERSION: version, CLIENT_CAPABILITIES: {} } });
        let response = client.ask(request(id, "server/discover", params)).await;
        assert_error(&response, id, -32022);
        let data = &response["error"]["data"];
        assert_eq!(data["requested"], version);
        let supported = data["supported"].as_array().unwrap();
        assert!(supported.contains(&json!("2026-07-28")), "{response}");
        assert!(supported.contains(&json!("2024-11-05")), "{response}");
    }
}

#[tokio::test]
async fn a_tool_needing_an_undeclared_capability_is_refused_with_the_capabilities_it_needs() {
    let mut client = MemoryClient::start(&server());
    let response = client.ask(modern(7, "tools/call", json!({ "name": "needs_sampling" }))).await;
    assert_error(&response, 7, -32021);
    assert_eq!(response["error"]["data"]["requiredCapabilities"], json!({ "sampling": {} }));

    // Declared: the handler runs and asks the client's model through an input request.
    let params = json!({ "name": "needs_sampling", "_meta": meta_with(json!({ "sampling": {} })) });
    let response = client.ask(request(8, "tools/call", params)).await;
    assert_eq!(response["result"]["resultType"], "input_required", "{response}");
    assert_eq!(response["result"]["inputRequests"]["question"]["method"], "sampling/createMessage");

    // A handler that elicits without the elicitation capability: also -32021.
    let response = client.ask(modern(9, "tools/call", json!({ "name": "ask_name" }))).await;
    assert_error(&response, 9, -32021);
    assert!(response["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(), "{response}");
}

// ------------------------------------------------------------------ modern: methods and params

#[tokio::test]
async fn removed_and_unknown_methods_are_not_found() {
    let mut client = MemoryClient::start(&server());
    let removed = ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"];
    for (id, method) in removed.into_iter().enumerate() {
        let params = json!({ "uri": "test://static", "level": "info", "protocolVersion": MODERN });
        let response = client.ask(modern(id, method, params)).await;
        assert_error(&response, id, METHOD_NOT_FOUND);
        assert!(message(&response).contains("removed"), "{response}");
    }
    let response = client.ask(modern("x", "tools/frobnicate", json!({}))).await;
    assert_error(&response, "x", METHOD_NOT_FOUND);
    assert!(message(&response).contains("tools/frobnicate"), "{response}");
}

#[tokio::test]
async fn a_known_method_with_bad_params_names_the_method_and_the_field() {
    let mut client = MemoryClient::start(&server());
    // A missing member is named; a member of the wrong type is described (serde does not name it).
    let cases = [
        ("tools/call", json!({ "arguments": {} }), "missing field `name`"),
        ("resources/read", json!({}), "missing field `uri`"),
        ("prompts/get", json!({ "arguments": {} }), "missing field `name`"),
        ("subscriptions/listen", json!({}), "missing field `notifications`"),
        ("tools/call", json!({ "name": 42 }), "invalid type: integer `42`"),
        ("tools/list", json!({ "cursor": 5 }), "invalid type: integer `5`"),
        ("resources/read", json!({ "uri": ["a"] }), "invalid type: sequence"),
    ];
    for (id, (method, params, expected)) in cases.into_iter().enumerate() {
        let response = client.ask(modern(id, method, params)).await;
        assert_error(&response, id, INVALID_PARAMS);
        let text = message(&response);
        assert!(text.starts_with(&format!("Invalid params for {method}: ")), "{method}: {text}");
        assert!(text.contains(expected), "{method}: {text}");
    }
}

#[tokio::test]
async fn tool_calls_unknown_tools_invalid_arguments_and_failures() {
    let mut client = MemoryClient::start(&server());
    let response = client.ask(modern(1, "tools/call", json!({ "name": "echo", "arguments": { "text": "hi" } }))).await;
    assert_eq!(response["id"], 1);
    assert_eq!(text(&response), "echo: hi");
    assert_eq!(response["result"]["resultType"], "complete");
    assert_eq!(response["result"]["_meta"][SERVER_INFO]["name"], "fixture");
    assert!(response["result"].get("isError").is_none(), "{response}");

    let response = client.ask(modern(2, "tools/call", json!({ "name": "nope", "arguments": {} }))).await;
    assert_error(&response, 2, INVALID_PARAMS);
    assert!(message(&response).contains("nope"), "{response}");

    // Arguments that fail the schema: a tool result the model can read, not a protocol error.
    for (id, arguments) in [(3, json!({})), (4, json!({ "text": 5 }))] {
        let response = client.ask(modern(id, "tools/call", json!({ "name": "echo", "arguments": arguments }))).await;
        assert_eq!(response["id"], id);
        assert_eq!(response["result"]["isError"], true, "{response}");
        assert!(text(&response).contains("Invalid arguments for tool echo"), "{response}");
    }
    // With the whole schema checked, a problem with the arguments as a whole names no (empty)
    // location and one inside names it; without, serde says what does not fit the Rust type.
    let response = client.ask(modern(3, "tools/call", json!({ "name": "echo", "arguments": {} }))).await;
    #[cfg(feature = "validation")]
    assert_eq!(text(&response), "Invalid arguments for tool echo: \"text\" is a required property", "{response}");
    #[cfg(not(feature = "validation"))]
    assert_eq!(text(&response), "Invalid arguments for tool echo: missing field `text`", "{response}");
    let response = client.ask(modern(4, "tools/call", json!({ "name": "echo", "arguments": { "text": 5 } }))).await;
    #[cfg(feature = "validation")]
    assert!(text(&response).starts_with("Invalid arguments for tool echo: /text: 5 is not"), "{response}");
    #[cfg(not(feature = "validation"))]
    assert!(text(&response).starts_with("Invalid arguments for tool echo: invalid type: integer `5`"), "{response}");

    let response = client.ask(modern(5, "tools/call", json!({ "name": "fail" }))).await;
    assert_eq!(response["result"]["isError"], true, "{response}");
    assert_eq!(text(&response), "the fixture tool failed on purpose");
}

async fn collect_pages(client: &mut MemoryClient, method: &str, key: &str, field: &str) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    for round in 0.. {
        assert!(round < 20, "pagination does not end");
        let params = match &cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        let response = client.ask(modern(format!("{method}-{round}"), method, params)).await;
        let result = &response["result"];
        assert_eq!(result["resultType"], "complete", "{response}");
        assert!(result["ttlMs"].is_u64() && result["cacheScope"].is_string(), "{response}");
        let names =
            result[key].as_array().unwrap().iter().map(|item| item[field].as_str().unwrap().to_owned()).collect();
        pages.push(names);
        match result.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    pages
}

#[tokio::test]
async fn every_list_paginates_with_opaque_cursors() {
    let mut options = Options::default();
    options.page_size = 2;
    let server = builder().options(options).build().unwrap();
    let mut client = MemoryClient::start(&server);

    let pages = collect_pages(&mut client, "tools/list", "tools", "name").await;
    assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2, 2, 1]);
    assert_eq!(pages.concat(), TOOL_NAMES);
    let pages = collect_pages(&mut client, "resources/list", "resources", "uri").await;
    assert_eq!(pages, [vec!["test://static", "test://watched"]]);
    let pages = collect_pages(&mut client, "prompts/list", "prompts", "name").await;
    assert_eq!(pages, [vec!["plain", "greeting"]]);
    let pages = collect_pages(&mut client, "resources/templates/list", "resourceTemplates", "uriTemplate").await;
    assert_eq!(pages, [vec!["test://items/{id}"]]);

    for (id, cursor) in [(1, "garbage!"), (2, "b2Zmc2V0Ojk5"), (3, "")] {
        // "b2Zmc2V0Ojk5" is base64 of "offset:99", past the end.
        let response = client.ask(modern(id, "tools/list", json!({ "cursor": cursor }))).await;
        assert_error(&response, id, INVALID_PARAMS);
        assert!(message(&response).contains("cursor"), "{response}");
    }
}

#[tokio::test]
async fn tool_definitions_carry_derived_and_hand_written_schemas() {
    let mut client = MemoryClient::start(&server());
    let response = client.ask(modern(1, "tools/list", json!({}))).await;
    let tools = response["result"]["tools"].as_array().unwrap();
    let echo = tools.iter().find(|t| t["name"] == "echo").unwrap();
    assert_eq!(echo["description"], "Echoes its text");
    assert_eq!(echo["inputSchema"]["type"], "object");
    assert_eq!(echo["inputSchema"]["properties"]["text"]["type"], "string");
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]));
    let regional = tools.iter().find(|t| t["name"] == "regional").unwrap();
    assert_eq!(regional["inputSchema"]["properties"]["region"]["x-mcp-header"], "Region");
}

#[tokio::test]
async fn resources_read_by_uri_and_template_and_refuse_unknown_uris() {
    let mut client = MemoryClient::start(&server());
    let response = client.ask(modern(1, "resources/read", json!({ "uri": "test://static" }))).await;
    let result = &response["result"];
    assert_eq!(result["contents"][0]["text"], "static content");
    assert_eq!(result["contents"][0]["uri"], "test://static");
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["ttlMs"], 0);
    assert_eq!(result["cacheScope"], "private");

    let response = client.ask(modern(2, "resources/read", json!({ "uri": "test://items/42" }))).await;
    assert_eq!(response["result"]["contents"][0]["text"], "item 42");
    assert_eq!(response["result"]["contents"][0]["uri"], "test://items/42");

    for (id, uri) in [(3, "test://missing"), (4, "test://items/1/2"), (5, "test://items/")] {
        let response = client.ask(modern(id, "resources/read", json!({ "uri": uri }))).await;
        assert_error(&response, id, INVALID_PARAMS);
        assert_eq!(response["error"]["data"]["uri"], uri, "{response}");
    }
}

#[tokio::test]
async fn prompts_check_their_required_arguments() {
    let mut client = MemoryClient::start(&server());
    let params = json!({ "name": "greeting", "arguments": { "name": "Ada" } });
    let response = client.ask(modern(1, "prompts/get", params)).await;
    assert_eq!(response["result"]["messages"][0]["content"]["text"], "Greet Ada");
    assert_eq!(response["result"]["resultType"], "complete");

    let response = client.ask(modern(2, "prompts/get", json!({ "name": "greeting", "arguments": {} }))).await;
    assert_error(&response, 2, INVALID_PARAMS);
    assert!(message(&response).contains("`name`"), "{response}");
    let response = client.ask(modern(3, "prompts/get", json!({ "name": "greeting" }))).await;
    assert_error(&response, 3, INVALID_PARAMS);
    let response = client.ask(modern(4, "prompts/get", json!({ "name": "nope" }))).await;
    assert_error(&response, 4, INVALID_PARAMS);
    assert!(message(&response).contains("nope"), "{response}");
}

#[tokio::test]
async fn health_answers_with_the_request_version() {
    let mut client = MemoryClient::start(&server());
    let response = client.ask(modern("h", "health", json!({}))).await;
    assert_eq!(response["id"], "h");
    assert_eq!(response["result"]["protocolVersion"], MODERN);
    assert_eq!(response["result"]["resultType"], "complete");
    // It still needs a valid `_meta`.
    let response = client.ask(request("h2", "health", json!({}))).await;
    assert_error(&response, "h2", INVALID_PARAMS);

    let mut options = Options::default();
    options.health = false;
    let mut client = MemoryClient::start(&builder().options(options).build().unwrap());
    let response = client.ask(modern("h3", "health", json!({}))).await;
    assert_error(&response, "h3", METHOD_NOT_FOUND);
}

// ------------------------------------------------------------------ modern: InputRequiredResult

const ELICITATION: &str = r#"{"elicitation":{"form":{}}}"#;

fn elicit_call(id: i64, tool: &str, extra: Value) -> Value {
    let capabilities: Value = serde_json::from_str(ELICITATION).unwrap();
    let mut params = json!({ "name": tool, "arguments": {}, "_meta": meta_with(capabilities) });
    for (key, value) in extra.as_object().unwrap() {
        params[key] = value.clone();
    }
    request(id, "tools/call", params)
}

fn accept(property: &str, value: &str) -> Value {
    json!({ "action": "accept", "content": { property: value } })
}

#[tokio::test]
async fn input_required_round_trip_completes_with_the_answers() {
    let mut client = MemoryClient::start(&server());
    let response = client.ask(elicit_call(1, "ask_name", json!({}))).await;
    assert_eq!(response["id"], 1);
    let result = &response["result"];
    assert_eq!(result["resultType"], "input_required", "{response}");
    let question = &result["inputRequests"]["name"];
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(question["params"]["mode"], "form");
    assert_eq!(question["params"]["message"], "What is your name?");
    let state = result["requestState"].as_str().expect("a requestState").to_owned();

    // The retry is a new request (new id) with the answers and the state.
    let extra = json!({ "inputResponses": { "name": accept("name", "Ada") }, "requestState": state });
    let response = client.ask(elicit_call(2, "ask_name", extra)).await;
    assert_eq!(response["id"], 2);
    assert_eq!(response["result"]["resultType"], "complete", "{response}");
    assert_eq!(text(&response), "Hello, Ada!");
}

#[tokio::test]
async fn multi_round_requests_accumulate_answers_in_the_state() {
    let mut client = MemoryClient::start(&server());
    let response = client.ask(elicit_call(1, "two_questions", json!({}))).await;
    let result = &response["result"];
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(result["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["step1"]);
    let state1 = result["requestState"].as_str().unwrap().to_owned();

    let extra = json!({ "inputResponses": { "step1": accept("name", "Ada") }, "requestState": state1 });
    let response = client.ask(elicit_call(2, "two_questions", extra)).await;
    let result = &response["result"];
    assert_eq!(result["resultType"], "input_required", "{response}");
    assert_eq!(result["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["step2"]);
    let state2 = result["requestState"].as_str().unwrap().to_owned();
    assert_ne!(state1, state2);

    // Only the new answer is sent; the first comes back from the sealed state.
    let extra = json!({ "inputResponses": { "step2": accept("color", "green") }, "requestState": state2 });
    let response = client.ask(elicit_call(3, "two_questions", extra)).await;
    assert_eq!(response["result"]["resultType"], "complete", "{response}");
    assert_eq!(text(&response), "Ada likes green");

    // The first round's state alone does not carry the second answer: the server asks again.
    let extra = json!({ "inputResponses": {}, "requestState": state1 });
    let response = client.ask(elicit_call(4, "two_questions", extra)).await;
    assert_eq!(response["result"]["resultType"], "input_required", "{response}");
}

#[tokio::test]
async fn tampered_or_replayed_request_state_is_refused() {
    let mut client = MemoryClient::start(&server());
    let response = client.ask(elicit_call(1, "ask_name", json!({}))).await;
    let state = response["result"]["requestState"].as_str().unwrap().to_owned();

    let mut tampered: Vec<char> = state.chars().collect();
    tampered[3] = if tampered[3] == 'A' { 'B' } else { 'A' };
    let tampered: String = tampered.into_iter().collect();
    for (id, bad) in [(2, tampered), (3, format!("{state}x")), (4, "not a state".to_owned())] {
        let extra = json!({ "inputResponses": { "name": accept("name", "Eve") }, "requestState": bad });
        let response = client.ask(elicit_call(id, "ask_name", extra)).await;
        assert_error(&response, id, INVALID_PARAMS);
        assert!(message(&response).contains("requestState"), "{response}");
    }

    // The state of one call replayed onto another tool, or onto other arguments.
    let extra = json!({ "inputResponses": { "step1": accept("name", "Eve") }, "requestState": state });
    let response = client.ask(elicit_call(5, "two_questions", extra)).await;
    assert_error(&response, 5, INVALID_PARAMS);
    assert!(message(&response).contains("different request"), "{response}");
    let capabilities: Value = serde_json::from_str(ELICITATION).unwrap();
    let params = json!({
        "name": "ask_name",
        "arguments": { "extra": 1 },
        "inputResponses": { "name": accept("name", "Eve") },
        "requestState": state,
        "_meta": meta_with(capabilities),
    });
    let response = client.ask(request(6, "tools/call", params)).await;
    assert_error(&response, 6, INVALID_PARAMS);
    assert!(message(&response).contains("different request"), "{response}");
}

#[tokio::test]
async fn single_use_request_state_is_refused_when_replayed() {
    let mut options = mcp_server::Options::default();
    options.state_single_use = true;
    let mut client = MemoryClient::start(&builder().options(options).build().unwrap());
    let response = client.ask(elicit_call(1, "two_questions", json!({}))).await;
    let state = response["result"]["requestState"].as_str().unwrap().to_owned();
    let extra = json!({ "inputResponses": { "step1": accept("name", "Ada") }, "requestState": state });
    let response = client.ask(elicit_call(2, "two_questions", extra.clone())).await;
    assert_eq!(response["result"]["resultType"], "input_required", "{response}");

    let response = client.ask(elicit_call(3, "two_questions", extra)).await;
    assert_error(&response, 3, INVALID_PARAMS);
    assert!(
        message(&response).contains("already used") && message(&response).contains("state_single_use"),
        "{response}"
    );
}

/// Two instances of one deployment: each with its own ring, holding keys from the same secrets.
fn instance(keyring: mcp_server::StateKeyring, options: Options) -> Server {
    builder().state_keyring(keyring).options(options).build().unwrap()
}

fn key(secret: &str) -> mcp_server::StateKey {
    mcp_server::StateKey::from_secret(secret.as_bytes())
}

#[tokio::test]
async fn a_key_rotated_in_the_middle_of_a_multi_round_exchange_refuses_nothing_until_removed() {
    let (ring_a, ring_b) = (StateKeyring::new("k1", key("one")), StateKeyring::new("k1", key("one")));
    let (a, b) = (instance(ring_a, Options::default()), instance(ring_b, Options::default()));
    let (mut on_a, mut on_b) = (MemoryClient::start(&a), MemoryClient::start(&b));
    let response = on_a.ask(elicit_call(1, "two_questions", json!({}))).await;
    let state1 = response["result"]["requestState"].as_str().unwrap().to_owned();

    // The rotation: the new key reaches every instance, then becomes the one that seals.
    b.state_keyring().insert("k2", key("two"));
    a.state_keyring().rotate("k2", key("two"));
    b.state_keyring().rotate("k2", key("two"));

    let extra = json!({ "inputResponses": { "step1": accept("name", "Ada") }, "requestState": state1 });
    let response = on_b.ask(elicit_call(2, "two_questions", extra)).await;
    assert_eq!(
        response["result"]["resultType"], "input_required",
        "sealed by k1, opened after the rotation: {response}"
    );
    let state2 = response["result"]["requestState"].as_str().unwrap().to_owned();

    // Once the old key is removed, only states sealed before the rotation are refused.
    assert!(a.state_keyring().remove("k1"));
    assert_eq!(a.state_keyring().ids(), ["k2"]);
    let extra = json!({ "inputResponses": { "step2": accept("color", "green") }, "requestState": state2 });
    let response = on_a.ask(elicit_call(3, "two_questions", extra)).await;
    assert_eq!(text(&response), "Ada likes green", "{response}");

    let extra = json!({ "inputResponses": { "step1": accept("name", "Ada") }, "requestState": state1 });
    let response = on_a.ask(elicit_call(4, "two_questions", extra)).await;
    assert_error(&response, 4, INVALID_PARAMS);
    assert!(
        message(&response).contains("requestState was sealed with a key this server no longer accepts"),
        "{response}"
    );
    // An instance that still holds the old key accepts it.
    let extra = json!({ "inputResponses": { "step1": accept("name", "Ada") }, "requestState": state1 });
    let response = on_b.ask(elicit_call(5, "two_questions", extra)).await;
    assert_eq!(response["result"]["resultType"], "input_required", "{response}");
}

#[tokio::test]
async fn the_current_key_cannot_be_removed() {
    let ring = StateKeyring::new("only", key("one"));
    assert!(!ring.remove("only"));
    assert!(!ring.remove("absent"));
    assert_eq!(ring.current_id(), "only");
}

#[tokio::test]
async fn a_single_use_state_used_on_one_instance_is_refused_on_another_sharing_the_store() {
    let mut options = Options::default();
    options.state_single_use = true;
    let used: Arc<dyn UsedStateStore> = Arc::new(InMemoryUsedStates::with_capacity(100));
    let shared = |options: Options| {
        builder()
            .state_keyring(StateKeyring::new("k", key("shared")))
            .used_state_store(Arc::clone(&used))
            .options(options)
            .build()
            .unwrap()
    };
    let (a, b) = (shared(options.clone()), shared(options));
    let (mut on_a, mut on_b) = (MemoryClient::start(&a), MemoryClient::start(&b));
    let response = on_a.ask(elicit_call(1, "two_questions", json!({}))).await;
    let state = response["result"]["requestState"].as_str().unwrap().to_owned();
    let extra = json!({ "inputResponses": { "step1": accept("name", "Ada") }, "requestState": state });
    let response = on_a.ask(elicit_call(2, "two_questions", extra.clone())).await;
    assert_eq!(response["result"]["resultType"], "input_required", "{response}");
    let response = on_b.ask(elicit_call(3, "two_questions", extra)).await;
    assert_error(&response, 3, INVALID_PARAMS);
    assert!(message(&response).contains("already used"), "{response}");
}

// ------------------------------------------------------------------ modern: notifications

#[tokio::test]
async fn log_notifications_only_when_meta_asks_and_at_or_above_the_level() {
    let mut client = MemoryClient::start(&server());
    let (before, response) = client.call(modern(1, "tools/call", json!({ "name": "progress_logger" }))).await;
    assert!(before.is_empty(), "no logLevel, no progressToken: nothing but the response: {before:?}");
    assert_eq!(text(&response), "progress done");

    let mut m = meta();
    m[LOG_LEVEL] = json!("info");
    let (before, response) =
        client.call(request(2, "tools/call", json!({ "name": "progress_logger", "_meta": m }))).await;
    assert_eq!(text(&response), "progress done");
    let levels: Vec<&Value> = before
        .iter()
        .inspect(|m| assert_eq!(m["method"], "notifications/message", "{m}"))
        .map(|m| &m["params"]["level"])
        .collect();
    assert_eq!(levels, [&json!("info"), &json!("warning")]);
    assert_eq!(before[0]["params"]["data"], "info line");
    assert_eq!(before[0]["params"]["logger"], "fixture");

    let mut m = meta();
    m[LOG_LEVEL] = json!("debug");
    let (before, _) = client.call(request(3, "tools/call", json!({ "name": "progress_logger", "_meta": m }))).await;
    assert_eq!(before.len(), 3);
}

#[tokio::test]
async fn progress_notifications_echo_the_token_before_the_response() {
    let mut client = MemoryClient::start(&server());
    let mut m = meta();
    m["progressToken"] = json!("tok-1");
    let (before, response) =
        client.call(request(1, "tools/call", json!({ "name": "progress_logger", "_meta": m }))).await;
    assert_eq!(text(&response), "progress done");
    assert_eq!(before.len(), 3, "{before:?}");
    for (index, notification) in before.iter().enumerate() {
        assert_eq!(notification["method"], "notifications/progress");
        assert!(notification.get("id").is_none());
        assert_eq!(notification["params"]["progressToken"], "tok-1");
        assert_eq!(notification["params"]["progress"], json!((index + 1) as f64));
        assert_eq!(notification["params"]["total"], json!(3.0));
    }

    let mut m = meta();
    m["progressToken"] = json!(99);
    let (before, _) = client.call(request(2, "tools/call", json!({ "name": "progress_logger", "_meta": m }))).await;
    assert!(before.iter().all(|n| n["params"]["progressToken"] == 99), "{before:?}");
}

#[tokio::test]
async fn listen_acknowledges_then_forwards_only_the_requested_changes() {
    let server = server();
    let mut client = MemoryClient::start(&server);
    let params = json!({ "notifications": { "toolsListChanged": true, "resourceSubscriptions": ["test://watched"] } });
    client.send(modern("listen-1", "subscriptions/listen", params)).await;
    let ack = client.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert!(ack.get("id").is_none());
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], "listen-1");
    assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true);
    assert_eq!(ack["params"]["notifications"]["resourceSubscriptions"], json!(["test://watched"]));
    assert!(ack["params"]["notifications"].get("promptsListChanged").is_none(), "{ack}");

    // Not requested: prompts, resource list, another resource. Requested: tools, the watched one.
    server.notify_prompts_list_changed();
    server.notify_resources_list_changed();
    server.notify_resource_updated("test://static");
    server.notify_tools_list_changed();
    let next = client.recv().await;
    assert_eq!(next["method"], "notifications/tools/list_changed", "{next}");
    assert_eq!(next["params"]["_meta"][SUBSCRIPTION_ID], "listen-1");
    server.notify_resource_updated("test://watched");
    let next = client.recv().await;
    assert_eq!(next["method"], "notifications/resources/updated", "{next}");
    assert_eq!(next["params"]["uri"], "test://watched");
    assert_eq!(next["params"]["_meta"][SUBSCRIPTION_ID], "listen-1");

    // The connection keeps serving requests while the subscription is open.
    let response = client.ask(modern(2, "tools/list", json!({}))).await;
    assert_eq!(response["id"], 2);

    // Cancelling the subscription ends it.
    client.send(notification("notifications/cancelled", json!({ "requestId": "listen-1" }))).await;
    let response = client.ask(modern(3, "server/discover", json!({}))).await;
    assert_eq!(response["id"], 3);
    server.notify_tools_list_changed();
    assert!(client.quiet().await, "a cancelled subscription must not deliver");
}

#[tokio::test]
async fn listen_needs_valid_meta_too() {
    let mut client = MemoryClient::start(&server());
    let response = client.ask(request(1, "subscriptions/listen", json!({ "notifications": {} }))).await;
    assert_error(&response, 1, INVALID_PARAMS);
}

#[tokio::test]
async fn cancelled_requests_stop_their_handler_and_send_nothing() {
    let (server, mut probe) = server_with_slow_tool();
    let mut client = MemoryClient::start(&server);
    client.send(modern(41, "tools/call", json!({ "name": "slow" }))).await;
    tokio::time::timeout(PATIENCE, probe.started.recv()).await.expect("the slow tool starts");
    client.send(notification("notifications/cancelled", json!({ "requestId": 41, "reason": "test" }))).await;
    tokio::time::timeout(PATIENCE, probe.dropped.recv()).await.expect("the handler is dropped");
    // The next message is the answer to the next request, not a late one for 41.
    let response = client.recv_after(modern(42, "server/discover", json!({}))).await;
    assert_eq!(response["id"], 42, "{response}");
    assert!(client.quiet().await, "nothing may arrive for a cancelled request");
}

// ------------------------------------------------------------------ malformed messages

#[tokio::test]
async fn malformed_messages_get_json_rpc_errors() {
    let mut client = MemoryClient::start(&server());
    client.send_raw("{ not json").await;
    let response = client.recv().await;
    assert_eq!(code(&response), PARSE_ERROR);
    assert!(response.get("id").is_none_or(Value::is_null), "the id could not be read: {response}");

    client.send(json!({ "jsonrpc": "1.0", "id": 5, "method": "server/discover", "params": { "_meta": meta() } })).await;
    let response = client.recv().await;
    assert_error(&response, 5, INVALID_REQUEST);
    client.send(json!({ "id": 6, "method": "server/discover", "params": { "_meta": meta() } })).await;
    assert_error(&client.recv().await, 6, INVALID_REQUEST);

    client.send(json!([modern(7, "server/discover", json!({})), modern(8, "server/discover", json!({}))])).await;
    let response = client.recv().await;
    assert_eq!(code(&response), INVALID_REQUEST);
    assert!(message(&response).contains("batches"), "{response}");

    client.send(json!({ "jsonrpc": "2.0", "id": 9, "method": "server/discover", "params": [1, 2] })).await;
    assert_error(&client.recv().await, 9, INVALID_REQUEST);
    client.send(json!({ "jsonrpc": "2.0", "id": 10, "method": 3 })).await;
    assert_error(&client.recv().await, 10, INVALID_REQUEST);
    client.send(json!({ "jsonrpc": "2.0", "id": null, "method": "server/discover" })).await;
    assert_eq!(code(&client.recv().await), INVALID_REQUEST);
    client.send(json!("just a string")).await;
    assert_eq!(code(&client.recv().await), INVALID_REQUEST);

    // Unknown notifications and stray responses get no answer; the connection keeps serving.
    client.send(notification("notifications/whatever", json!({}))).await;
    client.send(json!({ "jsonrpc": "2.0", "id": 999, "result": {} })).await;
    let response = client.ask(modern(11, "server/discover", json!({}))).await;
    assert_eq!(response["id"], 11);
}

/// Found by the `server_session` fuzz target. A message without `method` answers one of the
/// server's own requests, so its id is in the server's numbering: an error about it must not
/// carry that id, or the client takes it for the answer to its own request with the same id.
#[tokio::test]
async fn a_malformed_response_is_refused_without_its_id() {
    let mut client = MemoryClient::start(&server());
    for malformed in [
        json!({ "jsonrpc": "1.0", "id": 1, "result": {} }),
        json!({ "id": 1, "result": {} }),
        json!({ "jsonrpc": "2.0", "id": 1, "result": {}, "error": { "code": 1, "message": "both" } }),
        json!({ "jsonrpc": "2.0", "id": 1 }),
        json!({ "jsonrpc": "2.0", "id": 1, "result": {}, "params": 7 }),
    ] {
        let response = client.recv_after(malformed.clone()).await;
        assert_eq!(code(&response), INVALID_REQUEST, "{malformed}: {response}");
        assert!(response.get("id").is_none_or(Value::is_null), "{malformed} was answered with its id: {response}");
    }
    // A malformed request still gets its id back.
    client.send(json!({ "jsonrpc": "1.0", "id": 2, "method": "ping" })).await;
    assert_error(&client.recv().await, 2, INVALID_REQUEST);
    // So does a request that lost its method (it has `params`, and no `result` or `error`).
    client.send(json!({ "jsonrpc": "2.0", "id": 3, "params": {} })).await;
    let response = client.recv().await;
    assert_error(&response, 3, INVALID_REQUEST);
    assert!(message(&response).contains("`method`"), "{response}");
}

// ------------------------------------------------------------------ legacy era

async fn legacy_client(server: &Server, capabilities: Value) -> MemoryClient {
    let mut client = MemoryClient::start(server);
    let response = client.ask(initialize(0, LEGACY, capabilities)).await;
    assert_eq!(response["result"]["protocolVersion"], LEGACY, "{response}");
    client.send(notification("notifications/initialized", json!({}))).await;
    client
}

#[tokio::test]
async fn initialize_negotiates_the_version() {
    for (requested, expected) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2024-11-05", "2024-11-05"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let mut client = MemoryClient::start(&server());
        let response = client.ask(initialize("init", requested, json!({}))).await;
        assert_eq!(response["id"], "init");
        let result = &response["result"];
        assert_eq!(result["protocolVersion"], expected, "{requested}");
        assert_eq!(result["serverInfo"], json!({ "name": "fixture", "version": "1.2.3" }));
        assert_eq!(result["instructions"], "A fixture server for the integration tests.");
        assert_eq!(result["capabilities"]["tools"], json!({ "listChanged": true }));
        assert_eq!(result["capabilities"]["resources"]["subscribe"], true);
        assert!(result.get("resultType").is_none(), "{response}");
    }
}

/// A handler reads the version its request was served in: the request's own on the modern wire,
/// the one its session negotiated (not the newest) on a legacy one.
#[tokio::test]
async fn a_handler_sees_the_version_of_its_request() {
    let server = Server::builder("versions", "0.1.0")
        .tool(ToolRoute::new("version", |ctx: mcp_server::Context, _: NoArguments| async move {
            Ok::<_, mcp_server::Error>(ctx.protocol_version().to_owned())
        }))
        .build()
        .unwrap();
    let call = json!({ "name": "version", "arguments": {} });
    let mut client = MemoryClient::start(&server);
    assert_eq!(text(&client.ask(modern(1, "tools/call", call.clone())).await), "2026-07-28");
    for negotiated in ["2025-11-25", "2025-06-18", "2024-11-05"] {
        let mut client = MemoryClient::start(&server);
        let response = client.ask(initialize(0, negotiated, json!({}))).await;
        assert_eq!(response["result"]["protocolVersion"], negotiated, "{response}");
        client.send(notification("notifications/initialized", json!({}))).await;
        assert_eq!(text(&client.ask(request(1, "tools/call", call.clone())).await), negotiated);
    }
}

#[tokio::test]
async fn initialize_with_bad_params_and_twice_is_refused() {
    let mut client = MemoryClient::start(&server());
    let response = client.ask(request(1, "initialize", json!({ "protocolVersion": LEGACY }))).await;
    assert_error(&response, 1, INVALID_PARAMS);
    assert!(message(&response).contains("initialize"), "{response}");

    let response = client.ask(initialize(2, LEGACY, json!({}))).await;
    assert_eq!(response["result"]["protocolVersion"], LEGACY);
    let response = client.ask(initialize(3, LEGACY, json!({}))).await;
    assert_error(&response, 3, INVALID_REQUEST);
}

#[tokio::test]
async fn requests_before_initialize_are_refused_but_ping_is_answered() {
    let mut client = MemoryClient::start(&server());
    // Without `_meta` and without a handshake, a request is neither era's valid request.
    let response = client.ask(request(1, "tools/list", json!({}))).await;
    assert_error(&response, 1, INVALID_PARAMS);
    let response =
        client.ask(json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "echo" } })).await;
    assert_error(&response, 2, INVALID_PARAMS);
    // A legacy client may ping before initializing.
    let response = client.ask(json!({ "jsonrpc": "2.0", "id": 3, "method": "ping" })).await;
    assert_eq!(response["result"], json!({}), "{response}");
}

#[tokio::test]
async fn legacy_results_have_no_modern_members() {
    let mut client = legacy_client(&server(), json!({})).await;
    let response = client.ask(json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" })).await;
    assert_eq!(response, json!({ "jsonrpc": "2.0", "id": 1, "result": {} }));

    for (id, method, params) in [
        (2, "tools/list", json!({})),
        (3, "resources/list", json!({})),
        (4, "resources/read", json!({ "uri": "test://items/7" })),
        (5, "tools/call", json!({ "name": "echo", "arguments": { "text": "old" } })),
        (6, "prompts/get", json!({ "name": "plain" })),
    ] {
        let response = client.ask(request(id, method, params)).await;
        let result = response["result"].as_object().unwrap_or_else(|| panic!("{method}: {response}"));
        for member in ["resultType", "ttlMs", "cacheScope", "_meta"] {
            assert!(!result.contains_key(member), "{method} has {member}: {response}");
        }
    }
    let response =
        client.ask(request(7, "tools/call", json!({ "name": "echo", "arguments": { "text": "old" } }))).await;
    assert_eq!(text(&response), "echo: old");

    let response = client.ask(request("h", "health", json!({}))).await;
    assert_eq!(response["result"], json!({ "protocolVersion": LEGACY }));

    // Modern-only methods are unknown on a legacy session; errors are the usual ones.
    let response = client.ask(request(8, "server/discover", json!({}))).await;
    assert_error(&response, 8, METHOD_NOT_FOUND);
    let response = client.ask(request(9, "tools/call", json!({ "name": "nope" }))).await;
    assert_error(&response, 9, INVALID_PARAMS);
    let response = client.ask(request(10, "resources/read", json!({ "uri": "test://missing" }))).await;
    assert_error(&response, 10, INVALID_PARAMS);
    assert_eq!(response["error"]["data"]["uri"], "test://missing");
    let response = client.ask(request(11, "tools/list", json!({ "cursor": "garbage!" }))).await;
    assert_error(&response, 11, INVALID_PARAMS);
    let response = client.ask(request(12, "no/such/method", json!({}))).await;
    assert_error(&response, 12, METHOD_NOT_FOUND);
}

#[tokio::test]
async fn set_level_filters_the_session_logs() {
    let mut client = legacy_client(&server(), json!({})).await;
    let response = client.ask(request(1, "logging/setLevel", json!({ "level": "info" }))).await;
    assert_eq!(response["result"], json!({}));
    let (before, response) = client.call(request(2, "tools/call", json!({ "name": "progress_logger" }))).await;
    assert_eq!(text(&response), "progress done");
    let logs: Vec<&Value> = before.iter().map(|m| &m["params"]["data"]).collect();
    assert_eq!(logs, [&json!("info line"), &json!("warning line")]);
    assert!(before.iter().all(|m| m["method"] == "notifications/message"), "{before:?}");

    let response = client.ask(request(3, "logging/setLevel", json!({ "level": "warning" }))).await;
    assert_eq!(response["result"], json!({}));
    let (before, _) = client.call(request(4, "tools/call", json!({ "name": "progress_logger" }))).await;
    assert_eq!(before.len(), 1);
    assert_eq!(before[0]["params"]["level"], "warning");

    let response = client.ask(request(5, "logging/setLevel", json!({ "level": "loud" }))).await;
    assert_error(&response, 5, INVALID_PARAMS);
    let response = client.ask(request(6, "logging/setLevel", json!({}))).await;
    assert_error(&response, 6, INVALID_PARAMS);
}

#[tokio::test]
async fn legacy_progress_uses_the_meta_token() {
    let mut client = legacy_client(&server(), json!({})).await;
    let params = json!({ "name": "progress_logger", "_meta": { "progressToken": "p" } });
    let (before, _) = client.call(request(1, "tools/call", params)).await;
    let progress: Vec<&Value> = before.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert_eq!(progress.len(), 3);
    assert!(progress.iter().all(|m| m["params"]["progressToken"] == "p"));
}

#[tokio::test]
async fn resource_subscriptions_deliver_updates_on_the_session() {
    let server = server();
    let mut client = legacy_client(&server, json!({})).await;
    let response = client.ask(request(1, "resources/subscribe", json!({ "uri": "test://watched" }))).await;
    assert_eq!(response["result"], json!({}));
    server.notify_resource_updated("test://static");
    server.notify_resource_updated("test://watched");
    let update = client.recv().await;
    assert_eq!(
        update,
        json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": { "uri": "test://watched" } })
    );
    // List changes go to every legacy session.
    server.notify_tools_list_changed();
    let changed = client.recv().await;
    assert_eq!(changed["method"], "notifications/tools/list_changed");

    let response = client.ask(request(2, "resources/unsubscribe", json!({ "uri": "test://watched" }))).await;
    assert_eq!(response["result"], json!({}));
    server.notify_resource_updated("test://watched");
    assert!(client.quiet().await, "no updates after unsubscribing");

    let response = client.ask(request(3, "resources/subscribe", json!({ "uri": "test://missing" }))).await;
    assert_error(&response, 3, INVALID_PARAMS);
    assert_eq!(response["error"]["data"]["uri"], "test://missing");
    let response = client.ask(request(4, "resources/subscribe", json!({}))).await;
    assert_error(&response, 4, INVALID_PARAMS);
}

#[tokio::test]
async fn a_legacy_elicitation_is_a_server_request_the_client_answers() {
    let mut client = legacy_client(&server(), json!({ "elicitation": {} })).await;
    client.send(request(1, "tools/call", json!({ "name": "ask_name", "arguments": {} }))).await;
    let question = client.recv().await;
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert_eq!(question["params"]["message"], "What is your name?");
    assert_eq!(question["params"]["requestedSchema"]["required"], json!(["name"]));
    let question_id = question["id"].clone();
    assert!(!question_id.is_null());
    client.send(json!({ "jsonrpc": "2.0", "id": question_id, "result": accept("name", "Grace") })).await;
    let response = client.recv().await;
    assert_eq!(response["id"], 1);
    assert_eq!(text(&response), "Hello, Grace!");
    assert!(response["result"].get("resultType").is_none(), "{response}");

    // Two questions are two server requests, one after the other.
    client.send(request(2, "tools/call", json!({ "name": "two_questions" }))).await;
    let first = client.recv().await;
    assert_eq!(first["method"], "elicitation/create");
    client.send(json!({ "jsonrpc": "2.0", "id": first["id"], "result": accept("name", "Ada") })).await;
    let second = client.recv().await;
    assert_eq!(second["method"], "elicitation/create");
    assert_ne!(first["id"], second["id"]);
    client.send(json!({ "jsonrpc": "2.0", "id": second["id"], "result": accept("color", "blue") })).await;
    let response = client.recv().await;
    assert_eq!(text(&response), "Ada likes blue");

    // An error answer fails the tool (the model sees it), it does not hang it.
    client.send(request(3, "tools/call", json!({ "name": "ask_name" }))).await;
    let question = client.recv().await;
    let error = json!({ "code": -1, "message": "user went away" });
    client.send(json!({ "jsonrpc": "2.0", "id": question["id"], "error": error })).await;
    let response = client.recv().await;
    assert_eq!(response["id"], 3);
    assert_eq!(response["result"]["isError"], true, "{response}");
}

#[tokio::test]
async fn legacy_requests_needing_undeclared_capabilities_are_invalid_params() {
    let mut client = legacy_client(&server(), json!({})).await;
    let response = client.ask(request(1, "tools/call", json!({ "name": "needs_sampling" }))).await;
    assert_error(&response, 1, INVALID_PARAMS);
    assert!(message(&response).contains("sampling"), "{response}");
    let response = client.ask(request(2, "tools/call", json!({ "name": "ask_name" }))).await;
    assert_error(&response, 2, INVALID_PARAMS);
}

#[tokio::test]
async fn a_legacy_session_still_serves_modern_requests() {
    let mut client = legacy_client(&server(), json!({})).await;
    let response = client.ask(modern(1, "server/discover", json!({}))).await;
    assert_eq!(response["result"]["resultType"], "complete");
    let response = client.ask(modern(2, "tools/call", json!({ "name": "echo", "arguments": { "text": "x" } }))).await;
    assert_eq!(response["result"]["resultType"], "complete");
}

#[tokio::test]
async fn legacy_cancellation_stops_the_handler() {
    let (server, mut probe) = server_with_slow_tool();
    let mut client = legacy_client(&server, json!({})).await;
    client.send(request("slow-1", "tools/call", json!({ "name": "slow" }))).await;
    tokio::time::timeout(PATIENCE, probe.started.recv()).await.expect("the slow tool starts");
    client.send(notification("notifications/cancelled", json!({ "requestId": "slow-1" }))).await;
    tokio::time::timeout(PATIENCE, probe.dropped.recv()).await.expect("the handler is dropped");
    let response = client.recv_after(json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" })).await;
    assert_eq!(response["id"], 2, "{response}");
    assert!(client.quiet().await);
}

// ------------------------------------------------------------------ batches (2025-03-26 only)

#[tokio::test]
async fn a_2025_03_26_batch_is_answered_with_one_array() {
    let mut client = MemoryClient::batching(&server()).await;
    let batch = client.recv_after(two_requests_and_a_notification()).await;
    let responses = by_id(&batch);
    assert_eq!(responses.len(), 2, "{batch}");
    assert_eq!(responses[0], json!({ "jsonrpc": "2.0", "id": 1, "result": {} }));
    assert_eq!(text(&responses[1]), "echo: batched");
    assert!(client.quiet().await);

    // Only notifications and responses: no answer at all.
    client.send(json!([notification("notifications/roots/list_changed", json!({}))])).await;
    assert!(client.quiet().await);

    // What a handler sends while it runs still goes out as its own messages, before the array.
    let call = request(4, "tools/call", json!({ "name": "progress_logger", "_meta": { "progressToken": "t" } }));
    client.send(json!([call, request(5, "ping", json!({}))])).await;
    let mut before = Vec::new();
    let batch = loop {
        let message = client.recv().await;
        if message.is_array() {
            break message;
        }
        before.push(message);
    };
    assert_eq!(before.iter().filter(|m| m["method"] == "notifications/progress").count(), 3, "{before:?}");
    let responses = by_id(&batch);
    assert_eq!(text(&responses[0]), "progress done");
    assert_eq!(responses[1]["id"], 5);
}

#[tokio::test]
async fn invalid_batch_elements_get_their_own_errors() {
    let mut client = MemoryClient::batching(&server()).await;
    let batch = client.recv_after(one_bad_element()).await;
    let responses = by_id(&batch);
    assert_eq!(responses.len(), 2, "{batch}");
    assert_eq!(responses[0], json!({ "jsonrpc": "2.0", "id": 3, "result": {} }));
    assert_error(&responses[1], "bad", INVALID_REQUEST);

    // An element that is not an object has no id to answer with; an unknown method is -32601.
    let batch = client.recv_after(json!([7, request(6, "no/such", json!({}))])).await;
    let responses = by_id(&batch);
    assert_error(&responses[0], 6, METHOD_NOT_FOUND);
    assert_eq!(code(&responses[1]), INVALID_REQUEST);
    assert!(responses[1].get("id").is_none(), "{batch}");

    // initialize must not be part of a batch, even on a session that batches.
    let batch =
        client.recv_after(json!([initialize(8, BATCH_VERSION, json!({})), request(9, "ping", json!({}))])).await;
    let responses = by_id(&batch);
    assert_error(&responses[0], 8, INVALID_REQUEST);
    assert!(message(&responses[0]).contains("initialize"), "{batch}");
    assert_eq!(responses[1]["result"], json!({}));
}

#[tokio::test]
async fn an_empty_batch_is_one_invalid_request_error() {
    let mut client = MemoryClient::batching(&server()).await;
    let response = client.recv_after(json!([])).await;
    assert_eq!(code(&response), INVALID_REQUEST, "{response}");
    assert!(response.get("id").is_none(), "{response}");
    assert!(message(&response).contains("empty"), "{response}");
}

#[tokio::test]
async fn batches_are_refused_outside_2025_03_26_naming_why() {
    let mut client = legacy_client(&server(), json!({})).await;
    let response = client.recv_after(two_requests_and_a_notification()).await;
    assert_eq!(code(&response), INVALID_REQUEST, "{response}");
    assert!(message(&response).contains("only part of protocol revision 2025-03-26"), "{response}");
    assert!(message(&response).contains("this session uses 2025-11-25"), "{response}");
    assert!(client.quiet().await, "no element was served");

    let mut client = MemoryClient::start(&server());
    let response = client.recv_after(json!([modern(1, "server/discover", json!({}))])).await;
    assert_eq!(code(&response), INVALID_REQUEST, "{response}");
    assert!(message(&response).contains("2026-07-28 has none"), "{response}");

    // Before initialize, and with initialize inside the batch.
    let response = client.recv_after(two_requests_and_a_notification()).await;
    assert_eq!(code(&response), INVALID_REQUEST, "{response}");
    assert!(message(&response).contains("after initialize"), "{response}");
    let batch = json!([initialize(2, BATCH_VERSION, json!({})), notification("notifications/initialized", json!({}))]);
    let response = client.recv_after(batch).await;
    assert_eq!(code(&response), INVALID_REQUEST, "{response}");
    assert!(message(&response).contains("initialize request must not be part of a JSON-RPC batch"), "{response}");
    // The refused batch negotiated nothing: initialize on its own still works.
    let response = client.ask(initialize(3, BATCH_VERSION, json!({}))).await;
    assert_eq!(response["result"]["protocolVersion"], BATCH_VERSION, "{response}");
}

#[test]
fn build_refuses_resource_templates_that_cannot_match() {
    use mcp_server::{ResourceTemplateRoute, Server};
    use mcp_types::ResourceTemplate;
    let build = |uri_template: &str| {
        Server::builder("t", "1")
            .resource_template(ResourceTemplateRoute::new(
                ResourceTemplate { uri_template: uri_template.into(), name: "t".into(), ..Default::default() },
                |_, _, _| async { Ok(Vec::new()) },
            ))
            .build()
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    for (template, why) in [
        ("notes://{title", "has an unclosed `{`"),
        ("notes://title}", "has a `}` that closes no expression"),
        ("notes://{}", "has an empty expression `{}`"),
        ("notes://{a{b}", "has an unclosed `{` before `a{b`"),
        ("notes://all", "has no `{variable}`"),
    ] {
        let error = build(template).expect_err(template);
        assert!(error.contains(&format!("resource template `{template}` {why}")), "{template}: {error}");
    }
    assert_eq!(build("notes://{title}/v{version}"), Ok(()));
}

/// A tool that asks one question per round until its third, keeping its round number with
/// `Context::save`; it returns what `Context::saved` held in each round it ran.
fn round_counter() -> Server {
    use mcp_server::{Context, Error};
    Server::builder("rounds", "1.0.0")
        .tool(ToolRoute::new("rounds", |ctx: Context, _: NoArguments| async move {
            let saved = ctx.saved();
            let round = saved.as_ref().and_then(|saved| saved["round"].as_u64()).unwrap_or(1);
            if round < 3 {
                ctx.save(json!({ "round": round + 1 }));
                let question = serde_json::from_value(json!({
                    "mode": "form",
                    "message": format!("Round {round}?"),
                    "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
                }))
                .unwrap();
                ctx.elicit_with(&format!("q{round}"), question).await?;
            }
            Ok::<_, Error>(format!("done in round {round}, saved {}", json!(saved)))
        }))
        .build()
        .unwrap()
}

#[tokio::test]
async fn what_a_handler_saves_comes_back_sealed_in_its_next_round() {
    let mut client = MemoryClient::start(&round_counter());
    let response = client.ask(elicit_call(1, "rounds", json!({}))).await;
    assert_eq!(response["result"]["inputRequests"]["q1"]["params"]["message"], "Round 1?", "{response}");
    let state1 = response["result"]["requestState"].as_str().unwrap().to_owned();
    let yes = json!({ "action": "accept", "content": { "ok": true } });
    let extra = json!({ "inputResponses": { "q1": yes }, "requestState": state1 });
    let response = client.ask(elicit_call(2, "rounds", extra.clone())).await;
    assert_eq!(response["result"]["inputRequests"]["q2"]["params"]["message"], "Round 2?", "{response}");
    let state2 = response["result"]["requestState"].as_str().unwrap().to_owned();
    // The same state gives the same round again: what was saved is in the state, not the server.
    let again = client.ask(elicit_call(3, "rounds", extra)).await;
    assert_eq!(again["result"]["inputRequests"]["q2"]["params"]["message"], "Round 2?", "{again}");
    let extra = json!({ "inputResponses": { "q2": yes }, "requestState": state2 });
    let response = client.ask(elicit_call(4, "rounds", extra)).await;
    assert_eq!(text(&response), r#"done in round 3, saved {"round":3}"#, "{response}");
    // A legacy session has no rounds: nothing is saved, the question goes to the client.
    let mut legacy = MemoryClient::start(&round_counter());
    legacy.ask(initialize(0, "2025-11-25", json!({"elicitation": {}}))).await;
    legacy.send(notification("notifications/initialized", json!({}))).await;
    legacy.send(request(5, "tools/call", json!({"name": "rounds", "arguments": {}}))).await;
    let question = legacy.recv().await;
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert_eq!(question["params"]["message"], "Round 1?");
}
