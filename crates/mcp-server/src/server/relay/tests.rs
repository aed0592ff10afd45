//! The relay lane against the usual way: the same messages for every request, whichever takes it,
//! and the lane takes only what it may.

use std::sync::Mutex;

use mcp_types::{RawResult, Tool};
use serde_json::{Value, json};

use super::*;
use crate::dynamic::{AnswerFuture, RelayFuture, ToolAnswer, ToolFuture, ToolSource};
use crate::routes::{ToolRoute, text_result};
use crate::server::typed::differential::{CallCase, call_tool_cases, drain, mirrors_of, session, tool_call as call};

/// A source that answers every tool with its name and arguments, the same text either way, and
/// records which way each call came.
#[derive(Default)]
struct Echo {
    relays: bool,
    ways: Mutex<Vec<String>>,
}

/// The answer to a call of `name` with `arguments`, as text.
fn echoed(name: &str, arguments: Value) -> RawResult {
    RawResult::new(&text_result(format!("{name} {arguments}"))).unwrap()
}

impl ToolSource for Echo {
    fn tools(&self, _: &Principal) -> Arc<[Tool]> {
        let schema = serde_json::from_value(json!({"type": "object"})).unwrap();
        vec![
            Tool::new(schema, "get_weather"),
            Tool::new(serde_json::from_value(json!({"type": "object"})).unwrap(), "again"),
        ]
        .into()
    }

    fn call(&self, _: Context, params: CallToolRequestParams) -> ToolFuture {
        self.ways.lock().unwrap().push(format!("call {}", params.name));
        let arguments = params.arguments.map(Value::Object).unwrap_or(Value::Null);
        let result = text_result(format!("{} {arguments}", params.name));
        Box::pin(std::future::ready(Ok(result)))
    }

    fn answer(&self, _: Context, params: CallToolRequestParams) -> AnswerFuture {
        self.ways.lock().unwrap().push(format!("answer {}", params.name));
        let arguments = params.arguments.map(Value::Object).unwrap_or(Value::Null);
        Box::pin(std::future::ready(Ok(ToolAnswer::Raw(echoed(&params.name, arguments)))))
    }

    fn relays(&self) -> bool {
        self.relays
    }

    fn relay(&self, call: RelayCall<'_>) -> RelayFuture {
        self.ways.lock().unwrap().push(format!("relay {}", call.name));
        if call.name == "again" {
            return Box::pin(std::future::ready(Ok(Relayed::Again)));
        }
        let arguments = call.arguments.map_or(Value::Null, |a| serde_json::from_str(a.get()).unwrap());
        Box::pin(std::future::ready(Ok(Relayed::Result(echoed(call.name, arguments)))))
    }
}

/// A source that relays every call, answering it with no content, and records what each carried:
/// its arguments' text and the scopes of its principal's token.
#[derive(Default)]
struct Seen(Mutex<Vec<(Option<String>, Vec<String>)>>);

impl ToolSource for Seen {
    fn tools(&self, _: &Principal) -> Arc<[Tool]> {
        Arc::new([])
    }

    fn call(&self, _: Context, _: CallToolRequestParams) -> ToolFuture {
        unreachable!("relayed")
    }

    fn relays(&self) -> bool {
        true
    }

    fn relay(&self, call: RelayCall<'_>) -> RelayFuture {
        let scopes = call.principal.token().map(|t| t.scopes.clone()).unwrap_or_default();
        self.0.lock().unwrap().push((call.arguments.map(|a| a.get().to_owned()), scopes));
        Box::pin(std::future::ready(Ok(Relayed::Result(RawResult::from_text("{\"content\":[]}".into()).unwrap()))))
    }
}

fn server(source: Arc<Echo>) -> Server {
    let route =
        ToolRoute::raw(Tool::new(serde_json::from_value(json!({"type": "object"})).unwrap(), "route"), |_, _| async {
            Ok::<_, Error>(text_result("route"))
        });
    Server::builder("relay", "0.0.0").tool(route).tool_source(source).build().unwrap()
}

/// The answers of a relaying server and of one that does not relay, and the ways the call came.
async fn both(text: &str, mirrors: Option<&Mirrors<'_>>, legacy: bool) -> (Vec<String>, Vec<String>, Vec<String>) {
    let relaying = Arc::new(Echo { relays: true, ..Echo::default() });
    let usual = Arc::new(Echo::default());
    let (with_relay, without) = (server(Arc::clone(&relaying)), server(Arc::clone(&usual)));
    let relayed = drain(with_relay.handle_bytes(&session(&with_relay, legacy), text.as_bytes(), mirrors)).await;
    let served = drain(without.handle_bytes(&session(&without, legacy), text.as_bytes(), mirrors)).await;
    let ways = relaying.ways.lock().unwrap().clone();
    (relayed, served, ways)
}

#[tokio::test]
async fn a_relayed_call_is_answered_as_the_usual_way_answers_it() {
    let (mut cases, mut relayed) = (0, [0, 0]);
    for CallCase { text, mirrors, legacy } in call_tool_cases() {
        cases += 1;
        let (answers, usual, ways) = both(&text, mirrors.as_ref(), legacy).await;
        assert_eq!(answers, usual, "{text} (mirrors {mirrors:?}, legacy session {legacy})");
        if ways.iter().any(|way| way.starts_with("relay")) {
            relayed[usize::from(legacy)] += 1;
        }
    }
    println!("{cases} cases, {relayed:?} relayed (modern, legacy)");
    // The example itself, with its mirrors and without, and the mutants that only change what
    // the relay passes on as it is (the arguments, the client's name), in each era.
    assert!(relayed[0] >= 4 && relayed[1] >= 4, "{relayed:?} of {cases} relayed");
}

#[tokio::test]
async fn the_lane_takes_only_what_it_may() {
    let eligible = call("get_weather", json!({"arguments": {"location": "Paris", "n": 1.5}}));
    let cases: Vec<(&str, Value, bool)> = vec![
        ("eligible", eligible.clone(), true),
        ("no arguments", call("get_weather", json!({})), true),
        ("null arguments", call("get_weather", json!({"arguments": null})), false),
        ("a progress token", call("get_weather", json!({"_meta": {"progressToken": 1}})), false),
        ("a log level", call("get_weather", json!({"_meta": {"io.modelcontextprotocol/logLevel": "info"}})), false),
        ("a route's tool", call("route", json!({})), false),
        ("requestState", call("get_weather", json!({"requestState": "x"})), false),
        ("inputResponses", call("get_weather", json!({"inputResponses": {}})), false),
        ("a task", call("get_weather", json!({"task": {"ttl": 1}})), false),
        ("arguments not an object", call("get_weather", json!({"arguments": [1]})), false),
        (
            "another member",
            {
                let mut message = eligible.clone();
                message["extra"] = json!(1);
                message
            },
            false,
        ),
        (
            "another version",
            {
                let mut message = eligible.clone();
                message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
                message
            },
            false,
        ),
    ];
    // Capabilities to answer input: relayed (an upstream that asks gets the call given back).
    let mut with_capabilities = Vec::new();
    for capability in ["elicitation", "sampling", "roots"] {
        let mut message = eligible.clone();
        message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({ capability: {} });
        with_capabilities.push((capability, message, true));
    }
    let mut tasks = eligible.clone();
    tasks["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    with_capabilities.push(("the tasks extension", tasks, false));
    for (what, message, taken) in cases.into_iter().chain(with_capabilities) {
        let text = message.to_string();
        for mirrors in [None, Some(mirrors_of(&message, "2026-07-28"))] {
            let (answers, usual, ways) = both(&text, mirrors.as_ref(), false).await;
            assert_eq!(answers, usual, "{what}: {text}");
            assert_eq!(ways.iter().any(|way| way.starts_with("relay")), taken, "{what}: {ways:?}");
            if taken {
                let answer: Value = serde_json::from_str(&answers[0]).unwrap();
                assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
            }
        }
    }
    // A header that does not match its member: refused as the usual way refuses it.
    let mut mirrors = mirrors_of(&eligible, "2026-07-28");
    mirrors.name = Some("other".into());
    let (answers, usual, ways) = both(&eligible.to_string(), Some(&mirrors), false).await;
    assert_eq!(answers, usual);
    assert!(ways.is_empty(), "{ways:?}");
    let answer: Value = serde_json::from_str(&answers[0]).unwrap();
    assert_eq!(answer["error"]["code"], mcp_types::error_codes::HEADER_MISMATCH, "{answer}");
}

/// On a legacy session, what the handshake declared and the session chose decides, as the
/// request's `_meta` does in the 2026-07-28 era.
#[tokio::test]
async fn a_legacy_session_relays_only_what_its_handshake_allows() {
    let call = |params: Value| {
        let mut params = params;
        params["name"] = json!("get_weather");
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}).to_string()
    };
    let initialize = |capabilities: Value| {
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":capabilities,"clientInfo":{"name":"t","version":"1"}}})
    };
    let set_level = json!({"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info"}});
    let cases = [
        ("plain", json!({}), None, call(json!({"arguments": {"a": 1}})), true),
        ("no arguments", json!({}), None, call(json!({})), true),
        ("a member of its own in _meta", json!({}), None, call(json!({"_meta": {"trace": "t"}})), true),
        ("a progress token", json!({}), None, call(json!({"_meta": {"progressToken": 1}})), false),
        (
            "a modern member",
            json!({}),
            None,
            call(json!({"_meta": {"io.modelcontextprotocol/logLevel": "info"}})),
            false,
        ),
        ("a log level", json!({}), Some(set_level.clone()), call(json!({})), false),
        ("elicitation", json!({"elicitation": {}}), None, call(json!({})), true),
        ("roots", json!({"roots": {}}), None, call(json!({})), true),
        ("a task", json!({}), None, call(json!({"task": {"ttl": 1}})), false),
    ];
    for (what, capabilities, before, text, taken) in cases {
        let mut answers = Vec::new();
        let mut ways = Vec::new();
        for relays in [true, false] {
            let source = Arc::new(Echo { relays, ..Echo::default() });
            let server = server(Arc::clone(&source));
            let session = Session::new();
            drain(server.handle_value(&session, initialize(capabilities.clone()), None)).await;
            if let Some(before) = &before {
                drain(server.handle_value(&session, before.clone(), None)).await;
            }
            answers.push(drain(server.handle_bytes(&session, text.as_bytes(), None)).await);
            ways.push(source.ways.lock().unwrap().clone());
        }
        assert_eq!(answers[0], answers[1], "{what}: {text}");
        assert_eq!(ways[0].iter().any(|way| way.starts_with("relay")), taken, "{what}: {:?}", ways[0]);
        if taken {
            let answer: Value = serde_json::from_str(&answers[0][0]).unwrap();
            assert!(answer["result"].get("resultType").is_none(), "{what}: {answer}");
        }
    }
}

#[tokio::test]
async fn the_arguments_reach_the_source_as_the_caller_wrote_them() {
    let source = Arc::new(Seen::default());
    let server = Server::builder("exact", "0.0.0").tool_source(source.clone()).build().unwrap();
    let arguments = r#"{"b": 1.50,  "a": 123456789012345678901234567890, "s": "\u00e9"}"#;
    let text = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"x","arguments":{arguments},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    );
    let answers = drain(server.handle_bytes(&Session::new(), text.as_bytes(), None)).await;
    assert_eq!(source.0.lock().unwrap()[0].0.as_deref(), Some(arguments));
    let answer: Value = serde_json::from_str(&answers[0]).unwrap();
    assert_eq!((&answer["result"]["resultType"], &answer["result"]["content"]), (&json!("complete"), &json!([])));
}

#[tokio::test]
async fn a_call_given_back_is_served_the_usual_way_once() {
    let message = call("again", json!({"arguments": {"a": 1}}));
    let (answers, usual, ways) = both(&message.to_string(), None, false).await;
    assert_eq!(answers, usual);
    assert_eq!(ways, ["relay again", "answer again"]);
}

#[tokio::test]
async fn a_server_with_middleware_does_not_relay() {
    let source = Arc::new(Echo { relays: true, ..Echo::default() });
    let server = Server::builder("layered", "0.0.0")
        .tool_source(source.clone())
        .layer(tower::layer::util::Identity::new())
        .build()
        .unwrap();
    let message = call("get_weather", json!({"arguments": {}}));
    let answers = drain(server.handle_bytes(&Session::new(), message.to_string().as_bytes(), None)).await;
    assert_eq!(answers.len(), 1);
    assert_eq!(*source.ways.lock().unwrap(), ["call get_weather"]);
}

/// A relayed call is made as a handler's context would have it: on a legacy session, with the
/// token of the session's latest request (a step-up's scopes), not the one it opened with.
#[cfg(feature = "http")]
#[tokio::test]
async fn a_relayed_call_carries_the_token_of_the_latest_request() {
    use crate::principal::VerifiedToken;
    let token = |scopes: &[&str]| VerifiedToken {
        subject: Some("alice".into()),
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    let source = Arc::new(Seen::default());
    let server = Server::builder("scopes", "0.0.0").tool_source(source.clone()).build().unwrap();
    let session = Session::with_principal(Principal::from_token(token(&["read"])));
    let initialize = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    drain(server.handle_value(&session, initialize, None)).await;
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}).to_string();
    drain(server.handle_bytes(&session, call.as_bytes(), None)).await;
    session.authorized(Some(&Arc::new(token(&["read", "write"]))));
    drain(server.handle_bytes(&session, call.as_bytes(), None)).await;
    let scopes: Vec<Vec<String>> = source.0.lock().unwrap().iter().map(|(_, scopes)| scopes.clone()).collect();
    assert_eq!(scopes, [vec!["read".to_owned()], vec!["read".to_owned(), "write".to_owned()]]);
}

/// A request of another method with the same params as a call (`prompts/get`) is not read by
/// the lane, and a call whose method is written with escapes is left to the typed path.
#[tokio::test]
async fn only_a_call_written_plainly_is_read_by_the_lane() {
    let mut prompt = call("get_weather", json!({"arguments": {}}));
    prompt["method"] = json!("prompts/get");
    let escaped = call("get_weather", json!({"arguments": {}})).to_string().replace("tools/call", "tools\\/call");
    for text in [prompt.to_string(), escaped] {
        let (answers, usual, ways) = both(&text, None, false).await;
        assert_eq!(answers, usual, "{text}");
        assert!(!ways.iter().any(|way| way.starts_with("relay")), "{text}: {ways:?}");
    }
}
