//! The lane of a tool route's call against the typed path: the same messages for every request,
//! whichever takes it, and the lane takes only what it may.

use std::cell::Cell;

use mcp_types::{CallToolRequestParams, JsonObject, Tool};
use serde_json::{Value, json};

use super::*;
use crate::routes::{ToolRoute, text_result};
use crate::server::typed::differential::{
    CallCase, call_tool_cases, drain, mirrors_of, mutate, session, tool_call as call,
};
use crate::validation::ArgumentValidator;

thread_local! {
    /// How many calls of a tool route the lane took on this thread.
    pub(super) static TAKEN: Cell<usize> = const { Cell::new(0) };
    /// The lane is closed on this thread: every request goes the typed path's way.
    pub(super) static CLOSED: Cell<bool> = const { Cell::new(false) };
    /// How many modern `_meta`s the lane's first read refused and read again, whole.
    pub(super) static REREAD: Cell<usize> = const { Cell::new(0) };
}

/// The arguments of `get_weather`, decoded into a type of the handler's own.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Weather {
    #[schemars(extend("x-mcp-header" = "Location"))]
    location: String,
    #[serde(default)]
    days: Option<u8>,
    #[serde(default)]
    extra: Option<Value>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: f64,
}

/// The servers the lane is tested on: routes that check no schema (their handlers decode the text
/// themselves), routes as built (with the `validation` feature, their schemas are checked), and
/// routes behind middleware.
fn servers() -> [Server; 3] {
    [server(false, false), server(true, false), server(true, true)]
}

/// A typed route (with a mirrored header), a raw one, and one that may run as a task.
fn server(schemas: bool, layered: bool) -> Server {
    let any_object = || serde_json::from_value(json!({"type": "object"})).unwrap();
    let mut builder = Server::builder("lane", "0.0.0");
    if layered {
        builder = builder.layer(tower::layer::util::Identity::new());
    }
    let mut server = builder
        .tool(ToolRoute::new("get_weather", |_: Context, w: Weather| async move {
            Ok::<_, Error>(format!("weather at {} for {:?} days, {:?}", w.location, w.days, w.extra))
        }))
        .tool(ToolRoute::new("add", |_: Context, Add { a, b }: Add| async move {
            Ok::<_, Error>(format!("{}", a as f64 + b))
        }))
        .tool(ToolRoute::raw(Tool::new(any_object(), "echo"), |_: Context, args: JsonObject| async move {
            Ok::<_, Error>(text_result(Value::Object(args).to_string()))
        }))
        .tool(
            ToolRoute::raw(Tool::new(any_object(), "long"), |_: Context, _: JsonObject| async move {
                Ok::<_, Error>(text_result("done"))
            })
            .task_support(TaskSupport::Optional),
        )
        .build()
        .unwrap();
    if !schemas {
        let inner = Arc::get_mut(&mut server.inner).expect("not shared yet");
        for entry in &mut inner.tools {
            entry.validator = ArgumentValidator::new(&json!({"type": "object"})).unwrap();
        }
    }
    server
}

/// The answers with the lane open and closed, and whether it took the call.
async fn both(
    server: &Server,
    text: &str,
    mirrors: Option<&Mirrors<'_>>,
    legacy: bool,
) -> (Vec<String>, Vec<String>, bool) {
    let before = TAKEN.with(Cell::get);
    let through_lane = drain(server.handle_bytes(&session(server, legacy), text.as_bytes(), mirrors)).await;
    let taken = TAKEN.with(Cell::get) > before;
    CLOSED.with(|closed| closed.set(true));
    let typed = drain(server.handle_bytes(&session(server, legacy), text.as_bytes(), mirrors)).await;
    CLOSED.with(|closed| closed.set(false));
    (through_lane, typed, taken)
}

#[tokio::test]
async fn a_route_call_through_the_lane_is_answered_as_the_typed_path_answers_it() {
    let (mut cases, mut taken) = (0, [0, 0]);
    for CallCase { text, mirrors, legacy } in call_tool_cases() {
        for (which, server) in servers().iter().enumerate() {
            cases += 1;
            let (lane, typed, took) = both(server, &text, mirrors.as_ref(), legacy).await;
            assert_eq!(lane, typed, "{text} (server {which}, mirrors {mirrors:?}, legacy session {legacy})");
            taken[usize::from(legacy)] += usize::from(took);
        }
    }
    println!("{cases} cases, {taken:?} taken by the lane (modern, legacy)");
    // The example itself, with its mirrors and without, and the mutants that change only what the
    // handler decodes (the arguments) or the client's name, in each era.
    assert!(taken[0] >= 30 && taken[1] >= 12, "{taken:?} of {cases} taken");
}

/// A tool source that does not relay: its calls are served from the lane's read with their
/// arguments read into the params, as the typed decode gives them.
struct Source;

impl crate::dynamic::ToolSource for Source {
    fn tools(&self, _: &crate::principal::Principal) -> Arc<[Tool]> {
        let schema = serde_json::from_value(json!({"type": "object"})).unwrap();
        Arc::new([Tool::new(schema, "get_weather")])
    }

    fn call(&self, _: Context, params: CallToolRequestParams) -> crate::dynamic::ToolFuture {
        let arguments = params.arguments.map(Value::Object).unwrap_or(Value::Null);
        Box::pin(std::future::ready(Ok(text_result(format!("{} {arguments}", params.name)))))
    }
}

#[tokio::test]
async fn a_tool_source_call_through_the_lane_is_answered_as_the_typed_path_answers_it() {
    let server = Server::builder("lane", "0.0.0").tool_source(Arc::new(Source)).build().unwrap();
    let example = call("get_weather", json!({"arguments": {"location": "Paris", "n": [1, 2.5, {"deep": null}]}}));
    let mut legacy = example.clone();
    legacy["params"].as_object_mut().unwrap().remove("_meta");
    let mut taken = 0;
    for (message, legacy_session) in [(&example, false), (&legacy, true)] {
        let mut inputs = vec![message.to_string()];
        inputs.extend(mutate::mutants(message).into_iter().map(|m| m.text));
        for text in inputs {
            let (lane, typed, took) = both(&server, &text, None, legacy_session).await;
            assert_eq!(lane, typed, "{text} (legacy session {legacy_session})");
            taken += usize::from(took);
        }
    }
    assert!(taken >= 4, "{taken} taken");
    let (lane, _, taken) = both(&server, &example.to_string(), None, false).await;
    assert!(taken);
    assert!(lane[0].contains(r#"get_weather {\"location\":\"Paris\",\"n\":[1,2.5,{\"deep\":null}]}"#), "{lane:?}");
}

#[tokio::test]
async fn the_lane_takes_only_what_it_may() {
    let weather = |arguments: &str| {
        let text = call("get_weather", json!({})).to_string();
        text.replacen("\"params\":{", &format!("\"params\":{{\"arguments\":{arguments},"), 1)
    };
    let cases: Vec<(&str, String, bool)> = vec![
        ("plain", weather(r#"{"location":"Paris","days":3}"#), true),
        ("free-form member", weather(r#"{"location":"Paris","extra":{"n":[1,2.5,-3,"\u00e9"]}}"#), true),
        ("no arguments", call("echo", json!({})).to_string(), true),
        ("a member given twice", weather(r#"{"location":"Paris","location":"Rome"}"#), true),
        ("a member of the wrong type", weather(r#"{"location":5}"#), true),
        ("a missing member", weather(r#"{"days":1}"#), true),
        ("a float into an integer", call("add", json!({"arguments": {"a": 1.5, "b": 2}})).to_string(), true),
        ("a progress token", call("echo", json!({"_meta": {"progressToken": 1}})).to_string(), true),
        ("a log level", call("echo", json!({"_meta": {"io.modelcontextprotocol/logLevel": "info"}})).to_string(), true),
        ("null arguments", call("echo", json!({"arguments": null})).to_string(), false),
        ("arguments not an object", call("echo", json!({"arguments": [1]})).to_string(), false),
        ("an exponent", weather(r#"{"location":"Paris","extra":1e2}"#), false),
        ("a negative zero", weather(r#"{"location":"Paris","extra":-0}"#), false),
        ("an integer beyond 64 bits", weather(r#"{"location":"Paris","extra":123456789012345678901}"#), false),
        ("a lone surrogate", weather(r#"{"location":"\ud800"}"#), false),
        ("requestState", call("echo", json!({"requestState": "x"})).to_string(), false),
        ("inputResponses", call("echo", json!({"inputResponses": {}})).to_string(), false),
        ("a task", call("echo", json!({"task": {"ttl": 1}})).to_string(), false),
        ("an unknown tool", call("nothing", json!({})).to_string(), true),
    ];
    let mut tasks = call("long", json!({}));
    tasks["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let mut tasks_forbidden = tasks.clone();
    tasks_forbidden["params"]["name"] = json!("echo");
    let more = [
        ("a tool that may become a task", tasks.to_string(), true),
        ("the tasks extension, a tool that may not", tasks_forbidden.to_string(), true),
    ];
    for (what, text, expected) in cases.into_iter().chain(more) {
        let message: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        for mirrors in [None, Some(mirrors_of(&message, "2026-07-28"))] {
            for (which, server) in servers().iter().enumerate() {
                let (lane, typed, taken) = both(server, &text, mirrors.as_ref(), false).await;
                assert_eq!(lane, typed, "{what}: {text} (server {which})");
                assert_eq!(taken, expected, "{what}: {text} (server {which}, mirrors {mirrors:?})");
            }
        }
    }
    let server = server(false, false);
    // The typed decode's own words for what does not fit, through the lane.
    let (lane, _, taken) = both(&server, &weather(r#"{"location":5}"#), None, false).await;
    assert!(taken);
    assert!(
        lane[0].contains("Invalid arguments for tool get_weather: invalid type: integer `5`, expected a string"),
        "{lane:?}"
    );
    // A member given twice is the last one, as in the object the typed path builds.
    let (lane, _, _) = both(&server, &weather(r#"{"location":"Paris","location":"Rome"}"#), None, false).await;
    assert!(lane[0].contains("weather at Rome"), "{lane:?}");
}

#[tokio::test]
async fn a_legacy_session_takes_the_lane_with_its_handshake() {
    let server = server(false, false);
    let text = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "get_weather", "arguments": {"location": "Oslo"}}})
    .to_string();
    let (lane, typed, taken) = both(&server, &text, None, true).await;
    assert!(taken);
    assert_eq!(lane, typed);
    assert!(lane[0].contains("weather at Oslo"), "{lane:?}");
    // A session that never opened is refused the typed path's way, not by the lane.
    let (lane, typed, taken) = both(&server, &text, None, false).await;
    assert!(!taken);
    assert_eq!(lane, typed);
}

/// What the lane lends as text is read by serde_json exactly as the generated decode reads the
/// arguments; what it does not lend is what that decode reads by its literals (or refuses).
#[test]
fn text_the_lane_lends_reads_as_the_generated_decode_reads_it() {
    let lent = [
        r#"{}"#,
        r#"{"a":1,"b":-2,"c":1.5,"d":-0.25,"e":123456789012345678}"#,
        r#"{"a":[1,{"b":[true,false,null]}],"s":"q\"uo\\te\n","u":"\u00e9\u20ac"}"#,
        r#"{ "spaced" : [ 1 , 2 ] , "nested" : { "deep" : { } } }"#,
        r#"{"a":1,"a":2}"#,
        r#"{"f":0.1,"g":999999999999999999.5,"h":0}"#,
    ];
    let not_lent = [
        r#"[1]"#,
        r#"null"#,
        r#"{"a":1e3}"#,
        r#"{"a":1E-3}"#,
        r#"{"a":-0}"#,
        r#"{"a":-0.0}"#,
        r#"{"a":1234567890123456789}"#,
        r#"{"a":"\ud83d\ude00"}"#,
        r#"{"a":"\uDC00"}"#,
    ];
    let long = "é q\\\"uoted\\\\ ".repeat(2000);
    let long_lent = format!(r#"{{"text":"{long}","n":[1,{{"k":"{long}"}}],"after":-0.5}}"#);
    let long_surrogate = format!(r#"{{"text":"{long}\udbff\udc00"}}"#);
    let long_exponent = format!(r#"{{"text":"{long}","n":2E5}}"#);
    assert!(!reads_as_decoded(&long_surrogate) && !reads_as_decoded(&long_exponent));
    for text in lent.into_iter().chain([long_lent.as_str()]) {
        assert!(reads_as_decoded(text), "{text}");
        let params: CallToolRequestParams = serde_json::from_value(json!({
            "name": "t",
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}},
        }))
        .unwrap();
        let mut with_arguments = serde_json::to_string(&params).unwrap();
        with_arguments.insert_str(1, &format!("\"arguments\":{text},"));
        let decoded: CallToolRequestParams = serde_json::from_str(&with_arguments).unwrap();
        let read: JsonObject = serde_json::from_str(text).unwrap();
        assert_eq!(decoded.arguments, Some(read), "{text}");
    }
    for text in not_lent {
        assert!(!reads_as_decoded(text), "{text}");
    }
    let deep = format!("{}{}", "{\"a\":".repeat(65) + "1", "}".repeat(65));
    assert!(!reads_as_decoded(&deep));
    let shallow = format!("{}{}", "{\"a\":".repeat(64) + "1", "}".repeat(64));
    assert!(reads_as_decoded(&shallow));
}

/// A tool source that answers with the `_meta` of the params it is given whole.
struct MetaSource;

impl crate::dynamic::ToolSource for MetaSource {
    fn tools(&self, _: &crate::principal::Principal) -> Arc<[Tool]> {
        Arc::new([Tool::new(serde_json::from_value(json!({"type": "object"})).unwrap(), "seen")])
    }

    fn call(&self, _: Context, params: CallToolRequestParams) -> crate::dynamic::ToolFuture {
        Box::pin(std::future::ready(Ok(text_result(serde_json::to_string(&params.meta).unwrap()))))
    }
}

/// What a handler's context and a source's params hold of `_meta` through the lane is what the
/// typed path gives them: from the client's capabilities and identity (decoded once for text
/// the thread saw last) to members no revision defines, as a client changes them between calls.
#[tokio::test]
async fn the_meta_a_handler_sees_through_the_lane_is_the_typed_paths() {
    let who = |ctx: Context, _: JsonObject| async move {
        let seen = json!({
            "info": ctx.client_info(),
            "capabilities": ctx.client_capabilities(),
            "level": ctx.log_level(),
            "version": ctx.protocol_version(),
        });
        Ok::<_, Error>(text_result(seen.to_string()))
    };
    let any_object = || serde_json::from_value(json!({"type": "object"})).unwrap();
    let servers = [false, true].map(|layered| {
        let mut builder = Server::builder("lane", "0.0.0").tool_source(Arc::new(MetaSource));
        if layered {
            builder = builder.layer(tower::layer::util::Identity::new());
        }
        builder.tool(ToolRoute::raw(Tool::new(any_object(), "who"), who)).build().unwrap()
    });
    let version = r#""io.modelcontextprotocol/protocolVersion":"2026-07-28""#;
    let metas = [
        (
            format!(
                r#"{version},"io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"a","version":"1"}}"#
            ),
            (true, false),
        ),
        (
            format!(
                r#"{version},"io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"b","version":"2","title":"B"}}"#
            ),
            (true, false),
        ),
        (
            format!(
                r#"{version},"io.modelcontextprotocol/clientCapabilities":{{"elicitation":{{}}}},"io.modelcontextprotocol/logLevel":"debug""#
            ),
            (true, false),
        ),
        (
            format!(
                r#"{version},"io.modelcontextprotocol/clientCapabilities":{{}},"traceparent":"00-1-2-01","n":[1.5,-0]"#
            ),
            (true, false),
        ),
        (
            format!(
                r#"{version},"io.modelcontextprotocol\/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"c","version":"3"}}"#
            ),
            (true, false),
        ),
        (format!(r#"{version},"io.modelcontextprotocol/clientCapabilities":{{}},"progressToken":"p""#), (true, false)),
        (
            format!(
                r#""k":1,{version},"\u0074race":"t","io.modelcontextprotocol/clientCapabilities":{{}},"k":{{"deep":[true,null,1.0,-0.0]}}"#
            ),
            (true, false),
        ),
        (
            format!(
                r#"{version},"io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":null"#
            ),
            (false, false),
        ),
        (
            format!(
                r#"{version},"io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"d"}}"#
            ),
            (false, false),
        ),
        (format!(r#"{version},"io.modelcontextprotocol/clientCapabilities":[]"#), (false, false)),
        (
            format!(
                r#"{version},"io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/logLevel":null"#
            ),
            (false, true),
        ),
        (
            format!(
                r#"{version},"io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientCapabilities":{{}}"#
            ),
            (false, true),
        ),
    ];
    // Twice through, so that each text follows another one on this thread.
    for (meta, (expected, reread)) in metas.iter().chain(&metas) {
        for tool in ["who", "seen"] {
            let text = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{{}},"_meta":{{{meta}}}}}}}"#
            );
            for (layered, server) in servers.iter().enumerate() {
                let before = REREAD.with(Cell::get);
                let (lane, typed, taken) = both(server, &text, None, false).await;
                assert_eq!(lane, typed, "{text} (layered {layered})");
                assert_eq!(taken, *expected, "{text} (layered {layered})");
                // Only a `_meta` the lane's reader refuses is read twice.
                assert_eq!(REREAD.with(Cell::get) > before, *reread, "{text} (layered {layered})");
            }
        }
    }
    let text = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"who","_meta":{{{}}}}}}}"#,
        metas[1].0
    );
    let (lane, _, _) = both(&servers[0], &text, None, false).await;
    assert!(lane[0].contains(r#"\"name\":\"b\",\"title\":\"B\",\"version\":\"2\""#), "{lane:?}");
}
