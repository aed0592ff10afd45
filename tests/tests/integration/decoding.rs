//! Bad input is an error that names the problem; unknown members survive at every level; presence,
//! integers and const members are exact. Uses the 2026-07-28 types (the crate root) unless a test
//! names another revision.

use mcp_types::{
    CallToolResult, ClientCapabilities, ClientMessage, ClientRequest, ContentBlock, DiscoverResult, ErrorObject,
    Implementation, LoggingLevel, Request, ServerCapabilities, ServerMessage, UnsupportedProtocolVersionError,
    UnsupportedProtocolVersionErrorData, UnsupportedProtocolVersionErrorObject, error_codes,
};
use serde_json::{Value, json};

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

fn err<T: serde::de::DeserializeOwned + std::fmt::Debug>(text: &str) -> String {
    serde_json::from_str::<T>(text).expect_err("must not decode").to_string()
}

fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(value: Value) -> Value {
    let typed: T = serde_json::from_value(value).unwrap();
    serde_json::to_value(&typed).unwrap()
}

#[test]
fn wrong_jsonrpc_version_is_rejected() {
    let e = err::<ClientRequest>(&format!(r#"{{"jsonrpc":"1.0","id":1,"method":"tools/list","params":{{{META}}}}}"#));
    assert!(e.contains("`jsonrpc`") && e.contains(r#"expected "2.0", found "1.0""#), "{e}");
}

#[test]
fn unknown_method_stays_representable_and_re_encodes() {
    let text = format!(r#"{{"jsonrpc":"2.0","id":"x","method":"vendor/frobnicate","params":{{{META},"n":1}}}}"#);
    let request: ClientRequest = serde_json::from_str(&text).unwrap();
    let ClientRequest::Other(other) = &request else { panic!("{request:?}") };
    assert_eq!(request.method(), "vendor/frobnicate");
    assert_eq!(other.params.as_ref().unwrap()["n"], 1);
    assert_eq!(serde_json::to_value(&request).unwrap(), serde_json::from_str::<Value>(&text).unwrap());
    // Through the message type too, as a request (it has an id) and as a notification (none).
    assert!(matches!(
        serde_json::from_str::<ClientMessage>(&text).unwrap(),
        ClientMessage::Request(ClientRequest::Other(_))
    ));
    let notification = r#"{"jsonrpc":"2.0","method":"vendor/ping"}"#;
    assert!(matches!(serde_json::from_str::<ClientMessage>(notification).unwrap(), ClientMessage::Notification(_)));
}

/// Members before `method`/`result` are read ahead and replayed to the variant: the outcome must
/// not depend on member order, on escapes in strings, or on whether the input is text or a `Value`.
#[test]
fn envelope_members_decode_the_same_in_any_order() {
    let params = format!(r#"{{{META},"name":"t","arguments":{{"a":[1,"s"]}}}}"#);
    let orders = [
        format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{params}}}"#),
        format!(
            r#"{{"x":{{"a":[1,"s"]}},"params":{params},"id":"r\"1","jsonrpc":"2.0","y":"z","method":"tools/call"}}"#
        ),
        format!(r#"{{"method":"tools\/call","params":{params},"id":-3,"jsonrpc":"2\u002e0","x":null}}"#),
    ];
    for text in &orders {
        let json: Value = serde_json::from_str(text).unwrap();
        for message in
            [serde_json::from_str::<ClientMessage>(text).unwrap(), serde_json::from_value(json.clone()).unwrap()]
        {
            let ClientMessage::Request(ClientRequest::CallTool(call)) = &message else { panic!("{text}: {message:?}") };
            assert_eq!(call.params.name, "t");
            assert_eq!(serde_json::to_value(&message).unwrap(), json, "{text}");
        }
    }
    // A wrong `jsonrpc` is caught whether it comes before or after the method.
    for text in [
        format!(r#"{{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{params}}}"#),
        format!(r#"{{"id":1,"method":"tools/call","params":{params},"jsonrpc":"1.0"}}"#),
        r#"{"jsonrpc":"1.0","method":"vendor/ping"}"#.to_owned(),
        r#"{"method":"vendor/ping","id":1,"jsonrpc":"1.0"}"#.to_owned(),
    ] {
        let e = err::<ClientMessage>(&text);
        assert!(e.contains("`jsonrpc`") && e.contains(r#"expected "2.0", found "1.0""#), "{text}: {e}");
    }
    // A float id is rejected wherever it comes.
    for text in [
        format!(r#"{{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{params}}}"#),
        format!(r#"{{"jsonrpc":"2.0","method":"tools/call","params":{params},"id":1.5}}"#),
    ] {
        let e = err::<ClientMessage>(&text);
        assert!(e.contains("`id`") && e.contains("must be a string or an integer"), "{text}: {e}");
    }
}

#[test]
fn extension_methods_are_requests_exactly_when_they_have_an_id() {
    let cases = [
        (r#"{"jsonrpc":"2.0","id":1,"method":"vendor/x","params":{"a":1}}"#, true),
        (r#"{"jsonrpc":"2.0","method":"vendor/x","params":{"a":1},"id":"k","extra":[{}]}"#, true),
        (r#"{"method":"vendor\/x","jsonrpc":"2.0","params":{"a":1},"extra":{"id":1}}"#, false),
        (r#"{"jsonrpc":"2.0","method":"vendor/x"}"#, false),
    ];
    for (text, request) in cases {
        let json: Value = serde_json::from_str(text).unwrap();
        for message in
            [serde_json::from_str::<ClientMessage>(text).unwrap(), serde_json::from_value(json.clone()).unwrap()]
        {
            match (&message, request) {
                (ClientMessage::Request(r @ ClientRequest::Other(_)), true) => assert_eq!(r.method(), "vendor/x"),
                (ClientMessage::Notification(n @ mcp_types::ClientNotification::Other(_)), false) => {
                    assert_eq!(n.method(), "vendor/x")
                }
                _ => panic!("{text}: {message:?}"),
            }
            assert_eq!(serde_json::to_value(&message).unwrap(), json, "{text}");
        }
    }
    let e = err::<ClientMessage>(r#"{"jsonrpc":"2.0","method":"vendor/x","id":null}"#);
    assert!(e.contains("`id`") && e.contains("must be a string or an integer"), "{e}");
    let e = err::<ClientMessage>(r#"{"jsonrpc":"2.0","method":"vendor/x","id":1,"id":2}"#);
    assert!(e.contains("duplicate field `id`"), "{e}");
    // 2026-07-28 servers send no requests: an extension method with an id is an error.
    for text in [r#"{"jsonrpc":"2.0","id":1,"method":"vendor/x"}"#, r#"{"jsonrpc":"2.0","method":"vendor/x","id":1}"#] {
        let e = err::<ServerMessage>(text);
        assert!(e.contains("`vendor/x` is not a request method"), "{text}: {e}");
    }
}

#[test]
fn known_method_with_bad_params_names_method_and_field() {
    let e = err::<ClientRequest>(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{{META}}}}}"#));
    assert!(e.contains("`tools/call`") && e.contains("missing field `name`"), "{e}");
    let e = err::<ClientRequest>(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{{META},"name":5}}}}"#
    ));
    assert!(e.contains("`tools/call`") && e.contains("`params.name`") && e.contains("invalid type"), "{e}");
    let e = err::<ClientMessage>(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#);
    assert!(e.contains("`tools/list`") && e.contains("missing field `_meta`"), "{e}");
    let e = err::<ClientMessage>(
        r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}, "uri":"x"}}"#,
    );
    assert!(e.contains("`resources/read`") && e.contains("io.modelcontextprotocol/protocolVersion"), "{e}");
}

#[test]
fn unknown_content_type_is_an_error_listing_the_known_ones() {
    let e = err::<ContentBlock>(r#"{"type":"video","url":"x"}"#);
    assert!(e.contains("unknown type `video`") && e.contains("`text`") && e.contains("`resource_link`"), "{e}");
}

#[test]
fn float_or_null_request_id_is_rejected() {
    for id in ["1.5", "null"] {
        let e = err::<ClientRequest>(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{{META}}}}}"#
        ));
        assert!(e.contains("`id`") && e.contains("must be a string or an integer"), "{id}: {e}");
    }
}

#[test]
fn typed_error_with_wrong_code_is_rejected() {
    let text = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"no","data":{"supported":["2026-07-28"],"requested":"1999-01-01"}}}"#;
    let e = err::<UnsupportedProtocolVersionError>(text);
    assert!(e.contains("at `error`") && e.contains("at `code`: expected -32022, found -32000"), "{e}");
}

#[test]
fn typed_errors_build_with_codes_and_data() {
    let data = UnsupportedProtocolVersionErrorData::new("1999-01-01", vec!["2026-07-28".into(), "2025-11-25".into()]);
    let mut error = UnsupportedProtocolVersionError::new(UnsupportedProtocolVersionErrorObject::new(
        data,
        "Unsupported protocol version",
    ));
    error.id = Some(1.into());
    let value = serde_json::to_value(&error).unwrap();
    assert_eq!(value["error"]["code"], error_codes::UNSUPPORTED_PROTOCOL_VERSION);
    assert_eq!(UnsupportedProtocolVersionErrorObject::CODE, -32022);
    assert_eq!(value["error"]["data"]["supported"][1], "2025-11-25");
    // A generic error object's data decodes into the typed data.
    let generic: ErrorObject = serde_json::from_value(value["error"].clone()).unwrap();
    let typed: UnsupportedProtocolVersionErrorData = generic.data_as().unwrap();
    assert_eq!(typed.requested, "1999-01-01");
    assert_eq!(
        mcp_types::MissingRequiredClientCapabilityErrorObject::CODE,
        error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY
    );
    assert_eq!(mcp_types::HeaderMismatchErrorObject::CODE, error_codes::HEADER_MISMATCH);
    assert_eq!(ErrorObject::method_not_found("x/y").code, -32601);
}

#[test]
fn unknown_members_survive_at_every_level() {
    let text = json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call", "envelopeExtra": true,
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"roots": {}, "com.example/cap": {"x": 1}},
                "com.example/trace": "abc"
            },
            "name": "t", "arguments": {"a": [1, 2.5, null]}, "paramsExtra": {"n": 1}
        }
    });
    assert_eq!(round_trip::<ClientMessage>(text.clone()), text);
    let result = json!({
        "resultType": "complete", "resultExtra": 1,
        "content": [{"type": "text", "text": "hi", "blockExtra": {"deep": []}}],
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1", "infoExtra": 0}, "com.example/x": 1}
    });
    assert_eq!(round_trip::<CallToolResult>(result.clone()), result);
    let caps = json!({"tools": {"listChanged": true, "x": 1}, "logging": {}, "vendorCap": {}, "extensions": {"io.example/e": {}}});
    assert_eq!(round_trip::<ServerCapabilities>(caps.clone()), caps);
}

#[test]
fn empty_objects_and_arrays_stay_distinct_from_absent() {
    let caps = json!({"roots": {}, "elicitation": {}});
    let typed: ClientCapabilities = serde_json::from_value(caps.clone()).unwrap();
    assert!(typed.roots.is_some() && typed.sampling.is_none());
    assert_eq!(serde_json::to_value(&typed).unwrap(), caps);
    let with_empty_icons = json!({"name": "n", "version": "1", "icons": []});
    assert_eq!(round_trip::<Implementation>(with_empty_icons.clone()), with_empty_icons);
    let without = json!({"name": "n", "version": "1"});
    assert_eq!(round_trip::<Implementation>(without.clone()), without);
}

#[test]
fn integers_stay_integers_and_fractions_stay_fractions() {
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 50, "total": 100}});
    let encoded = serde_json::to_string(&serde_json::from_value::<ServerMessage>(progress).unwrap()).unwrap();
    assert!(encoded.contains(r#""progress":50"#) && encoded.contains(r#""total":100"#), "{encoded}");
    let half = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t", "progress": 0.5}});
    assert_eq!(round_trip::<ServerMessage>(half.clone()), half);
}

/// The `resultType` rule (generated-code conventions, `xtask/src/codegen/mod.rs`): a union over
/// `resultType` decodes by it, whichever member comes first; an unknown `resultType`, or members
/// that do not fit the variant it names, give `Other` with every member, never an error. Each case
/// is decoded from text in both member orders and from a `Value`, and re-encodes unchanged.
#[test]
fn result_type_unions_follow_the_schema_and_keep_unknown_result_types() {
    use mcp_types::CallToolOutcome as Outcome;
    type Typed = <mcp_types::CallToolRequest as Request>::Result;
    let cases: [(&str, &str, &str); 10] = [
        ("absent means complete", r#"{"content":[]}"#, "Complete"),
        ("input_required", r#"{"resultType":"input_required","requestState":"s"}"#, "InputRequired"),
        ("complete", r#"{"resultType":"complete","content":[],"isError":false}"#, "Complete"),
        // The tasks extension's result (SEP-2663): its client decodes it from the members.
        ("tasks extension", r#"{"resultType":"task","task":{"taskId":"t1","status":"working"}}"#, "Other"),
        ("vendor", r#"{"resultType":"com.example/later","content":[]}"#, "Other"),
        ("empty", r#"{"resultType":"","content":[]}"#, "Other"),
        // Contradictions: valid only as the schema's `InputRequiredResult` (its `resultType` is any
        // string), but `complete` promises a CallToolResult, which needs `content`.
        ("complete without content", r#"{"requestState":"","resultType":"complete"}"#, "Other"),
        ("complete alone", r#"{"resultType":"complete"}"#, "Other"),
        // `input_required` with a complete result's members: an InputRequiredResult keeping them.
        ("input_required with content", r#"{"content":[],"resultType":"input_required"}"#, "InputRequired"),
        ("complete with requestState", r#"{"requestState":"s","content":[],"resultType":"complete"}"#, "Complete"),
    ];
    for (name, text, want) in cases {
        let json: Value = serde_json::from_str(text).unwrap();
        let mut reversed: Vec<(&String, &Value)> = json.as_object().unwrap().iter().collect();
        reversed.reverse();
        let reversed = format!(
            "{{{}}}",
            reversed.iter().map(|(k, v)| format!("{}:{v}", Value::from(k.as_str()))).collect::<Vec<_>>().join(",")
        );
        for outcome in [
            serde_json::from_str::<Typed>(text).unwrap_or_else(|e| panic!("{name}: {e}")),
            serde_json::from_str::<Typed>(&reversed).unwrap_or_else(|e| panic!("{name} reversed: {e}")),
            serde_json::from_value::<Typed>(json.clone()).unwrap_or_else(|e| panic!("{name} from a Value: {e}")),
        ] {
            let got = match &outcome {
                Outcome::Complete(_) => "Complete",
                Outcome::InputRequired(_) => "InputRequired",
                Outcome::Other(_) => "Other",
                _ => "?",
            };
            assert_eq!(got, want, "{name}: {outcome:?}");
            // An absent `resultType` is written as what it means (`complete`), as servers must.
            let mut expected = json.clone();
            expected.as_object_mut().unwrap().entry("resultType").or_insert("complete".into());
            assert_eq!(serde_json::to_value(&outcome).unwrap(), expected, "{name}");
        }
    }
    // The tasks extension's client gets the whole member map.
    let task = r#"{"jsonrpc":"2.0","id":4,"result":{"resultType":"task","task":{"taskId":"t1"},"_meta":{"k":1}}}"#;
    let response: mcp_types::CallToolResultResponse = serde_json::from_str(task).unwrap();
    let Outcome::Other(members) = &response.result else { panic!("{response:?}") };
    assert_eq!(members["task"]["taskId"], "t1");
    assert_eq!(members["resultType"], "task");
    assert_eq!(members["_meta"]["k"], 1);
    // A member one variant declares must still have its type.
    let e = serde_json::from_str::<Typed>(r#"{"resultType":"complete","content":"x"}"#).unwrap_err().to_string();
    assert!(e.contains("content"), "{e}");
}

#[test]
fn discover_result_is_easy_to_build() {
    let mut result = DiscoverResult::new(
        mcp_types::CacheScope::Public,
        ServerCapabilities { tools: Some(Default::default()), ..Default::default() },
        vec!["2026-07-28".into()],
        60_000,
    );
    result.instructions = Some("Use the tools.".into());
    let value = serde_json::to_value(&result).unwrap();
    assert_eq!(value["resultType"], "complete");
    assert_eq!(value["capabilities"], json!({"tools": {}}));
    assert_eq!(value["ttlMs"], 60_000);
}

#[test]
fn logging_level_orders_by_severity() {
    use LoggingLevel::*;
    let mut levels = vec![Emergency, Debug, Error, Info, Alert, Warning, Critical, Notice];
    levels.sort();
    assert_eq!(levels, vec![Debug, Info, Notice, Warning, Error, Critical, Alert, Emergency]);
    assert!(Warning > Info);
    assert_eq!("warning".parse::<LoggingLevel>().unwrap(), Warning);
    assert!("loud".parse::<LoggingLevel>().unwrap_err().to_string().contains("LoggingLevel"));
}

#[test]
fn legacy_batch_of_2025_03_26_decodes_element_by_element() {
    use mcp_types::v2025_03_26::JsonRpcMessage;
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}
    ]);
    let message: JsonRpcMessage = serde_json::from_value(batch.clone()).unwrap();
    let JsonRpcMessage::BatchRequest(items) = &message else { panic!("{message:?}") };
    assert_eq!(items.len(), 2);
    assert_eq!(serde_json::to_value(&message).unwrap(), batch);
    let responses = json!([{"jsonrpc": "2.0", "id": 1, "result": {}}]);
    assert!(matches!(serde_json::from_value(responses).unwrap(), JsonRpcMessage::BatchResponse(_)));
}

#[test]
fn every_revision_has_typed_requests() {
    assert_eq!(<mcp_types::v2024_11_05::InitializeRequest as Request>::METHOD, "initialize");
    assert_eq!(<mcp_types::v2025_11_25::GetTaskRequest as Request>::METHOD, "tasks/get");
    assert_eq!(<mcp_types::draft::DiscoverRequest as Request>::METHOD, "server/discover");
    assert_eq!(<mcp_types::v2025_06_18::ElicitRequest as mcp_types::Request>::METHOD, "elicitation/create");
}

/// Upstream defect (spec-digest J.11): `schema.json` types elicitation answers as `integer` where
/// `schema.ts` says `number`, so a `NumberSchema` field (SEP-1034's `score: 95.5`) could not be
/// answered. The generator corrects it (`xtask/src/codegen/corrections.rs`) in every revision that
/// has elicitation; integers stay exact integers.
#[test]
fn elicitation_answers_may_be_fractional_numbers() {
    let answer = json!({ "action": "accept", "content": { "score": 95.5, "age": 30, "name": "Ada", "ok": true } });
    assert_eq!(round_trip::<mcp_types::ElicitResult>(answer.clone()), answer);
    assert_eq!(round_trip::<mcp_types::draft::ElicitResult>(answer.clone()), answer);
    assert_eq!(round_trip::<mcp_types::v2025_11_25::ElicitResult>(answer.clone()), answer);
    assert_eq!(round_trip::<mcp_types::v2025_06_18::ElicitResult>(answer.clone()), answer);
    let typed: mcp_types::ElicitResult = serde_json::from_value(answer).unwrap();
    let content = typed.content.unwrap();
    assert!(matches!(&content["score"], mcp_types::ElicitResultContentValue::Number(n) if n.as_f64() == Some(95.5)));
    assert!(matches!(&content["age"], mcp_types::ElicitResultContentValue::Number(n) if n.as_i64() == Some(30)));
    // Objects are still not answers.
    let e = err::<mcp_types::ElicitResult>(r#"{"action":"accept","content":{"x":{"nested":1}}}"#);
    assert!(e.contains("ElicitResultContentValue") || e.contains("content"), "{e}");
}

/// Upstream ambiguity (spec-digest E.13, J.4, J.25): `schema.json` requires `ttlMs` with
/// `minimum: 0` and `cacheScope` on every cacheable result, but the caching rules tell clients to
/// treat a negative `ttlMs` as 0 and an absent one as 0 (servers older than 2026-07-28 send
/// neither). The generator tolerates both (`xtask/src/codegen/corrections.rs`, `tolerance`) in
/// every revision that has them, keeping what was received exactly; constructors still take both,
/// since servers MUST send them.
#[test]
fn cache_hints_accept_what_clients_must_accept() {
    use mcp_types::{CacheScope, ListToolsResult};
    use std::time::Duration;

    // Negative: decodes, means "stale at once", re-encodes as received.
    let negative = json!({"tools": [], "ttlMs": -5, "cacheScope": "public", "resultType": "complete"});
    let list: ListToolsResult = serde_json::from_value(negative.clone()).unwrap();
    assert_eq!(list.ttl_ms.as_ref().and_then(|t| t.get().as_i64()), Some(-5));
    assert_eq!(list.ttl_ms.clone().unwrap_or_default().duration(), Duration::ZERO);
    assert_eq!(serde_json::to_value(&list).unwrap(), negative);
    assert_eq!(round_trip::<mcp_types::draft::ListToolsResult>(negative.clone()), negative);

    // Absent (an older server): both `None`, still absent after re-encoding.
    let legacy = json!({"tools": []});
    let list: ListToolsResult = serde_json::from_value(legacy.clone()).unwrap();
    assert_eq!((list.ttl_ms.clone(), list.cache_scope), (None, None));
    assert_eq!(list.ttl_ms.clone().unwrap_or_default().duration(), Duration::ZERO);
    assert_eq!(serde_json::to_value(&list).unwrap(), json!({"tools": [], "resultType": "complete"}));
    let discover: DiscoverResult =
        serde_json::from_value(json!({"capabilities": {}, "supportedVersions": ["2026-07-28"]})).unwrap();
    assert_eq!((discover.ttl_ms, discover.cache_scope), (None, None));

    // Positive values and every integer up to u64::MAX are exact.
    let long = json!({"tools": [], "ttlMs": u64::MAX, "cacheScope": "private"});
    assert_eq!(round_trip::<ListToolsResult>(long)["ttlMs"], u64::MAX);
    let fresh: ListToolsResult = serde_json::from_value(json!({"tools": [], "ttlMs": 1500})).unwrap();
    assert_eq!(fresh.ttl_ms.unwrap().duration(), Duration::from_millis(1500));

    // Senders: the constructor takes both, so a server cannot forget them.
    let built = serde_json::to_value(ListToolsResult::new(CacheScope::Private, vec![], 0)).unwrap();
    assert_eq!(built, json!({"resultType": "complete", "cacheScope": "private", "tools": [], "ttlMs": 0}));

    // Still not anything goes: a fractional `ttlMs` or an unknown scope names the problem.
    let e = err::<ListToolsResult>(r#"{"tools":[],"ttlMs":1.5}"#);
    assert!(e.contains("`ttlMs`") && e.contains("expected an integer, found the number 1.5"), "{e}");
    let e = err::<ListToolsResult>(r#"{"tools":[],"cacheScope":"shared"}"#);
    assert!(e.contains("cacheScope") && e.contains("shared"), "{e}");
}

/// Decodes `text` as `T`, re-encodes it, and checks the JSON text is the same, numbers compared
/// by literal (`mcp_tests::exact`).
fn exact_round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(text: &str) -> String {
    let typed: T = serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    let out = serde_json::to_string(&typed).unwrap();
    let diff = mcp_tests::exact::differences(text, &out).unwrap();
    assert!(diff.is_empty(), "{text} -> {out}: {diff:?}");
    out
}

/// 2025-03-26 transports: "an array batching one or more requests and/or notifications" — an
/// empty batch is not a valid message, but it is a valid `JSONRPCMessage` of the schema (both
/// batch arrays admit `[]`). It decodes as an empty `BatchRequest` (either list variant encodes
/// it the same) and re-encodes as `[]`; the server answers it with -32600 (mcp-server's
/// `batch::handle_batch`).
#[test]
fn empty_batch_of_2025_03_26_decodes_as_an_empty_batch_request() {
    use mcp_types::v2025_03_26::JsonRpcMessage;
    let message: JsonRpcMessage = serde_json::from_str("[]").unwrap();
    assert!(matches!(&message, JsonRpcMessage::BatchRequest(items) if items.is_empty()), "{message:?}");
    assert_eq!(serde_json::to_string(&message).unwrap(), "[]");
    assert_eq!(serde_json::from_str::<JsonRpcMessage>(" [ ] ").unwrap(), message);
}

/// Ids and progress tokens are `string | integer`, and JSON Schema integers have no bounds and
/// may be written `1.0`: every such id decodes, whether it is read before or after the member
/// that decides the message type, and the id a server answers with is the same text.
#[test]
fn request_ids_and_progress_tokens_keep_integers_beyond_64_bits() {
    let params = format!(r#"{{{META},"name":"t","progressToken":0}}"#).replace(r#","progressToken":0"#, "");
    for id in
        ["9223372036854775808", "-9223372036854775809", "1000000000000000000000000000000", "1.0", "1e3", "-0", "7"]
    {
        for text in [
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#),
            format!(r#"{{"method":"tools/call","params":{params},"jsonrpc":"2.0","id":{id}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"vendor/x"}}"#),
        ] {
            exact_round_trip::<ClientMessage>(&text);
            let message: ClientMessage = serde_json::from_str(&text).unwrap();
            let ClientMessage::Request(request) = &message else { panic!("{text}: {message:?}") };
            // The answer carries the same id.
            let result = mcp_types::RawResult::new(&serde_json::json!({"ok": true})).unwrap();
            let answer = mcp_types::JsonRpcResultResponse::new(request.id().clone(), result);
            let answer = serde_json::to_string(&answer).unwrap();
            let expected = if id == "-0" { "0" } else { id };
            assert!(answer.contains(&format!(r#""id":{expected}"#)), "{answer}");
        }
        // Older revisions, through their shape-scored `JSONRPCMessage` and in batches (whose
        // items are generic requests and notifications: their `params` are free-form).
        exact_round_trip::<mcp_types::v2025_03_26::JsonRpcMessage>(&format!(
            r#"[{{"jsonrpc":"2.0","id":{id},"method":"ping"}},{{"jsonrpc":"2.0","method":"notifications/initialized"}}]"#
        ));
        exact_round_trip::<mcp_types::v2025_03_26::ProgressNotification>(&format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{id},"progress":1}}}}"#
        ));
        exact_round_trip::<mcp_types::v2024_11_05::JsonRpcMessage>(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"no"}}}}"#
        ));
        exact_round_trip::<ServerMessage>(&format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{id},"progress":0.5}}}}"#
        ));
    }
    let big: mcp_types::RequestId = serde_json::from_str("18446744073709551616").unwrap();
    assert!(matches!(&big, mcp_types::RequestId::Number(n) if n.as_literal() == Some("18446744073709551616")));
    assert_eq!(big.to_string(), "18446744073709551616");
    let e = err::<mcp_types::RequestId>("1.5");
    assert!(e.contains("must be a string or an integer, found the number 1.5"), "{e}");
}

/// `integer` members (`size`, `maxTokens`, `total`, `ttl`, `minLength`, `error.code`, ...) are
/// `mcp_types::Integer`: any JSON Schema integer, kept as written.
#[test]
fn integer_members_beyond_i64_and_written_as_floats_are_kept() {
    for n in ["18446744073709551616", "-1000000000000000000000000000000", "1.0", "2.50e1", "9223372036854775807"] {
        exact_round_trip::<mcp_types::Resource>(&format!(r#"{{"name":"r","uri":"file:///r","size":{n}}}"#));
        exact_round_trip::<mcp_types::CompleteResult>(&format!(
            r#"{{"resultType":"complete","completion":{{"values":[],"total":{n}}}}}"#
        ));
        exact_round_trip::<mcp_types::v2025_11_25::Task>(&format!(
            r#"{{"taskId":"t","status":"working","createdAt":"2025-01-01T00:00:00Z","lastUpdatedAt":"2025-01-01T00:00:00Z","ttl":{n},"pollInterval":{n}}}"#
        ));
        exact_round_trip::<ErrorObject>(&format!(r#"{{"code":{n},"message":"m"}}"#));
        exact_round_trip::<mcp_types::StringSchema>(&format!(r#"{{"type":"string","minLength":{n},"maxLength":{n}}}"#));
    }
    let size: mcp_types::Resource = serde_json::from_str(r#"{"name":"r","uri":"u","size":1.0}"#).unwrap();
    assert_eq!(size.size.as_ref().and_then(mcp_types::Integer::as_u64), Some(1));
    let e = err::<mcp_types::Resource>(r#"{"name":"r","uri":"u","size":1.5}"#);
    assert!(e.contains("`size`") && e.contains("expected an integer, found the number 1.5"), "{e}");
    // Comparisons with plain integers keep working.
    let error: ErrorObject = serde_json::from_str(r#"{"code":-32602,"message":"m"}"#).unwrap();
    assert!(error.code == error_codes::INVALID_PARAMS);
}

/// `1.0` where the schema says `integer` is valid JSON Schema: it decodes and is written back as
/// `1.0`, never as `1`.
#[test]
fn integral_floats_where_the_schema_says_integer_keep_their_spelling() {
    let out = exact_round_trip::<mcp_types::v2025_11_25::TaskMetadata>(r#"{"ttl":1.0}"#);
    assert_eq!(out, r#"{"ttl":1.0}"#);
    let out = exact_round_trip::<ClientMessage>(r#"{"jsonrpc":"2.0","id":1.0,"method":"vendor/x"}"#);
    assert!(out.contains(r#""id":1.0"#), "{out}");
    let ttl: mcp_types::TtlMs = serde_json::from_str("60000.0").unwrap();
    assert_eq!((ttl.millis(), serde_json::to_string(&ttl).unwrap().as_str()), (60000, "60000.0"));
}

/// `ttlMs` beyond `u64` is an integer like any other (it was reported as "not an integer"): kept as
/// written, and fresh "forever" (`u64::MAX` milliseconds).
#[test]
fn ttl_ms_beyond_u64_is_kept_and_means_the_longest_freshness() {
    for ttl in ["18446744073709551616", "1e30", "-1000000000000000000000000000000"] {
        let text = format!(r#"{{"resultType":"complete","tools":[],"ttlMs":{ttl},"cacheScope":"public"}}"#);
        exact_round_trip::<mcp_types::ListToolsResult>(&text);
        let list: mcp_types::ListToolsResult = serde_json::from_str(&text).unwrap();
        let want = if ttl.starts_with('-') { 0 } else { u64::MAX };
        assert_eq!(list.ttl_ms.unwrap().millis(), want, "{ttl}");
    }
}

/// `number` members are `serde_json::Number`: integers within 64 bits and fractions (as the
/// nearest `f64`, parsed correctly) are kept; an integer beyond 64 bits is refused, naming the
/// member, rather than turned into a float.
#[test]
fn number_members_keep_fractions_and_refuse_integers_beyond_64_bits() {
    for n in [
        "0.30000000000000004",
        "1.0",
        "-0.0",
        "5e-324",
        "1.7976931348623157e308",
        "18446744073709551615",
        "2.2250738585072014e-308",
    ] {
        exact_round_trip::<ServerMessage>(&format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":1,"progress":{n}}}}}"#
        ));
    }
    let e = err::<ServerMessage>(
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":18446744073709551616}}"#,
    );
    assert!(e.contains("`params.progress`") && e.contains("beyond the 64-bit range"), "{e}");
}

/// A member name twice in one object of a union decoded by shape is refused, naming it: the
/// variants are scored on the object with the last value, so decoding it as the variant that
/// tolerates the duplicate (a notification keeping `id` among its extra members) would give a
/// message that encodes as another variant. Found by the `decode_messages` fuzz target.
#[test]
fn a_member_named_twice_in_a_union_is_refused_not_decoded_as_another_variant() {
    use mcp_types::v2024_11_05::JsonRpcMessage;
    for text in [
        r#"{"jsonrpc":"2.0","id":"a","method":"initialize","id":"a"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{},"_meta":{}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"a":1,"a":2}}"#,
    ] {
        let e = err::<JsonRpcMessage>(text);
        assert!(e.contains("member named twice"), "{text}: {e}");
    }
    // The same object without the second name decodes, as the variant it fits.
    let once = serde_json::from_str::<JsonRpcMessage>(r#"{"jsonrpc":"2.0","id":"a","method":"initialize"}"#).unwrap();
    assert!(matches!(once, JsonRpcMessage::Request(_)), "{once:?}");
}
