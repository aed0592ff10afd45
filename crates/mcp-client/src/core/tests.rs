//! The core's tests: routing, and the one-pass delivery of results.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn routes_responses_progress_subscriptions_and_requests() {
    let core = Core::new(Handlers::new(), Limits::default());
    let id = core.next_id();
    let mut rx = core.expect(id.clone(), Wants::Raw);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    core.watch_progress("\"t\"".into(), Arc::new(move |p| sink.lock().unwrap().push(p.progress)));
    assert!(
        core.dispatch(
            &json!({"jsonrpc":"2.0","method":"notifications/progress",
        "params":{"progressToken":"t","progress":0.5}})
            .to_string(),
            None
        )
        .is_none()
    );
    assert_eq!(*seen.lock().unwrap(), vec![0.5]);
    let sub_id = core.next_id();
    let mut sub = core.subscribe(sub_id.clone());
    core.dispatch(
        &json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed",
        "params":{"_meta":{"io.modelcontextprotocol/subscriptionId": sub_id}}})
        .to_string(),
        None,
    );
    assert!(sub.try_recv().is_ok());
    let request = core.dispatch(&json!({"jsonrpc":"2.0","id":"s1","method":"ping"}).to_string(), None).unwrap();
    assert_eq!(request.method, "ping");
    // Garbage is ignored, not fatal.
    assert!(core.dispatch(&json!([1, 2]).to_string(), None).is_none());
    assert!(core.dispatch(&json!({"jsonrpc":"2.0","id":id,"result":7}).to_string(), None).is_none());
    assert!(rx.try_recv().unwrap().is_err(), "a non-object result is a protocol violation");
    let id = core.next_id();
    let mut rx = core.expect(id.clone(), Wants::Raw);
    core.dispatch(&json!({"jsonrpc":"2.0","id":id,"result":{"ok":true}}).to_string(), None);
    assert_eq!(rx.try_recv().unwrap().unwrap().unwrap().into_raw().get(), r#"{"ok":true}"#);
}

mod one_pass {
    use super::*;

    /// What a request wanting `wants` receives when the server sends `text` (`ID` its id).
    fn delivered(text: &str, wants: Wants) -> Answer {
        let core = Core::new(Handlers::new(), Limits::default());
        let mut rx = core.expect(RequestId::Integer(7), wants);
        assert!(core.dispatch(text, None).is_none());
        rx.try_recv().expect("delivered").expect("a response").expect("a result")
    }

    const CONTENT: &str = r#"[{"type":"text","text":"a \"quoted\" line\n"}]"#;

    #[test]
    fn a_complete_tool_result_is_decoded_as_it_arrives() {
        for text in [
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":{CONTENT},"resultType":"complete"}}}}"#),
            // Older servers write no resultType; whitespace anywhere.
            format!("{{ \"id\" : 7 ,\n \"jsonrpc\":\"2.0\", \"result\": {{\"content\":{CONTENT}}} }}\n"),
        ] {
            let Answer::ToolResult(result) = delivered(&text, Wants::ToolResult) else {
                panic!("not one pass: {text}")
            };
            let general = delivered(&text, Wants::Raw).into_raw();
            assert_eq!(*result, serde_json::from_str::<CallToolResult>(general.get()).unwrap());
            assert_eq!(result.content.len(), 1);
        }
    }

    /// Over stdio and SSE too, a result wanted as text is the text the message holds.
    #[test]
    fn a_result_wanted_as_text_is_delivered_as_written() {
        let result = r#"{"content":[],"n":1e+21,"s":"a\u00e9"}"#;
        for text in [
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{result}}}"#),
            format!("{{ \"id\" : 7 ,\n \"result\" :\t{result} }}\r\n"),
            format!(r#"{{"result":{result},"id":7,"jsonrpc":"2.0"}}"#),
        ] {
            assert_eq!(delivered(&text, Wants::Raw).into_raw().get(), result, "{text}");
        }
    }

    #[test]
    fn anything_but_a_complete_result_written_as_usual_is_delivered_raw() {
        for text in [
            // Not complete: the caller follows the task or answers the input requests.
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"task","task":{"taskId":"t"}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{}}}"#,
            // Unknown or malformed: the caller's checks name it.
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"weird","content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":7,"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":"no list"}}"#,
            // Another member order, or a member after the result.
            r#"{"result":{"content":[]},"jsonrpc":"2.0","id":7}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]},"extra":1}"#,
        ] {
            let answer = delivered(text, Wants::ToolResult);
            let Answer::Raw(raw) = answer else { panic!("decoded on arrival: {text}") };
            assert_eq!(raw.get(), delivered(text, Wants::Raw).into_raw().get(), "{text}");
        }
        // Only a tools/call wants its result decoded.
        let text = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;
        assert!(matches!(delivered(text, Wants::Raw), Answer::Raw(_)));
    }

    #[test]
    fn a_complete_resource_read_is_decoded_as_it_arrives() {
        let text = r#"{"jsonrpc":"2.0","id":7,"result":{"contents":[{"uri":"file:///a","text":"x"}],"ttlMs":5}}"#;
        let Answer::ReadResult(result) = delivered(text, Wants::ReadResult) else { panic!("not one pass") };
        let general = delivered(text, Wants::Raw).into_raw();
        assert_eq!(*result, serde_json::from_str::<ReadResourceResult>(general.get()).unwrap());
        assert!(!Answer::ReadResult(result).is_tool_error("resources/read"));
        let more = r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","requestState":"s"}}"#;
        assert!(matches!(delivered(more, Wants::ReadResult), Answer::Raw(_)));
        assert_eq!(Wants::for_method("resources/read"), Wants::ReadResult);
        assert_eq!(Wants::for_method("prompts/get"), Wants::Raw);
    }

    #[test]
    fn a_one_pass_result_for_no_one_is_dropped_and_an_error_is_an_error() {
        let core = Core::new(Handlers::new(), Limits::default());
        let mut rx = core.expect(RequestId::Integer(7), Wants::ToolResult);
        core.dispatch(r#"{"jsonrpc":"2.0","id":8,"result":{"content":[]}}"#, None);
        assert!(rx.try_recv().is_err(), "nothing for request 7 yet");
        core.dispatch(r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"no such tool"}}"#, None);
        let error = rx.try_recv().unwrap().unwrap().unwrap_err();
        assert_eq!(error.code, -32602);
        assert_eq!(core.records_in_flight(), 0);
    }

    #[cfg(feature = "http")]
    #[test]
    fn an_http_response_body_is_read_the_same_way() {
        let id = RequestId::Integer(7);
        let text = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":true}}"#;
        let Some(Ok(Ok(Answer::ToolResult(result)))) = as_reply_to(text, &id, Wants::ToolResult) else { panic!() };
        assert_eq!(result.is_error, Some(true));
        assert!(Answer::ToolResult(result).is_tool_error("tools/call"));
        // The body of another request's exchange answers nothing.
        assert!(as_reply_to(text, &RequestId::Integer(8), Wants::ToolResult).is_none());
        let Some(Ok(Ok(Answer::Raw(raw)))) = as_reply_to(text, &id, Wants::Raw) else { panic!() };
        assert!(Answer::Raw(raw).is_tool_error("tools/call"));
    }

    /// A result read in one pass is the text the envelope reads: without the whitespace around
    /// it, its own spelled as it came.
    #[cfg(feature = "http")]
    #[test]
    fn a_result_read_in_one_pass_is_the_text_the_envelope_gives() {
        let id = RequestId::Integer(7);
        for text in [
            r#"{"jsonrpc":"2.0","id":7,"result":{"a":[1, 2.50],"b":1e+21}}"#,
            // A number beyond f64's range is passed on as written (a `Value` would refuse it).
            r#"{"jsonrpc":"2.0","id":7,"result":{"c":-2e601}}"#,
            " {\"id\" : 7 ,\t\"result\" : { \"a\" : \"}\" } }\r\n",
            // Not one pass (a member after the result): the envelope reads it.
            r#"{"id":7,"result":{"a":-0.0},"jsonrpc":"2.0"}"#,
        ] {
            let envelope: Envelope<'_> = serde_json::from_str(text).unwrap();
            for wants in [Wants::Raw, Wants::ToolResult] {
                let Some(Ok(Ok(Answer::Raw(raw)))) = as_reply_to(text, &id, wants) else { panic!("{text}") };
                assert_eq!(raw.get(), envelope.result.unwrap().get(), "{text}");
            }
            assert!(as_reply_to(text, &RequestId::Integer(8), Wants::Raw).is_none(), "{text}");
        }
        // A result that is no object is malformed, as before.
        let malformed = as_reply_to(r#"{"jsonrpc":"2.0","id":7,"result":7}"#, &id, Wants::Raw);
        assert!(matches!(malformed, Some(Err(message)) if message.starts_with("malformed JSON-RPC response")));
    }
}

#[cfg(all(test, feature = "otel"))]
mod answer_spans {
    use opentelemetry::trace::SpanKind;
    use serde_json::{Value, json};

    use super::{Core, Handlers, Limits, ServerRequest};
    use crate::telemetry::recorded;

    const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const PARENT_ID: &str = "00f067aa0ba902b7";

    #[test]
    fn a_server_request_is_answered_in_a_child_of_the_context_in_its_meta() {
        let spans = recorded(|| {
            let core = Core::new(Handlers::new().roots(|| async { Ok(vec![]) }), Limits::default());
            let request = ServerRequest {
                id: json!("s-1"),
                method: "roots/list".into(),
                params: json!({"_meta": {"traceparent": format!("00-{TRACE_ID}-{PARENT_ID}-01")}}),
                related: None,
            };
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let answer = runtime.block_on(core.answer(&request));
            assert_eq!(answer["result"], json!({"roots": []}));
        });
        let span = spans.iter().find(|s| s.name == "roots/list").expect("a roots/list span");
        assert_eq!(span.span_kind, SpanKind::Server);
        assert_eq!(span.span_context.trace_id().to_string(), TRACE_ID);
        assert_eq!(span.parent_span_id.to_string(), PARENT_ID);
        let id = span.attributes.iter().find(|kv| kv.key.as_str() == "jsonrpc.request.id");
        assert_eq!(id.map(|kv| kv.value.to_string()).as_deref(), Some("s-1"));
    }

    #[test]
    fn a_failed_answer_names_its_code() {
        let spans = recorded(|| {
            let core = Core::new(Handlers::new(), Limits::default());
            let request =
                ServerRequest { id: json!(3), method: "roots/list".into(), params: Value::Null, related: None };
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let answer = runtime.block_on(core.answer(&request));
            assert_eq!(answer["error"]["code"], -32600);
        });
        let span = spans.iter().find(|s| s.name == "roots/list").expect("a roots/list span");
        let attribute =
            |key: &str| span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string());
        assert_eq!(attribute("error.type").as_deref(), Some("-32600"));
        assert_eq!(attribute("rpc.response.status_code").as_deref(), Some("-32600"));
    }
}

/// `_meta` holds the caller's members and then the prepared ones, a caller's member of a
/// prepared name giving way; with neither, no `_meta` is written.
#[test]
fn a_request_writes_the_prepared_meta_after_the_callers() {
    let id = RequestId::Integer(3);
    let params = serde_json::json!({"name": "add", "_meta": {"ignored": true}});
    let params = params.as_object().unwrap();
    let caps = serde_json::value::to_raw_value(&serde_json::json!({"roots": {}})).unwrap();
    let meta = serde_json::json!({"traceparent": "t", "io.modelcontextprotocol/protocolVersion": "old"});
    let fixed = [
        Some(("io.modelcontextprotocol/clientCapabilities", MetaText::Json(&caps))),
        None,
        Some(("io.modelcontextprotocol/protocolVersion", MetaText::Str("2026-07-28"))),
    ];
    let message = request_message(&id, "tools/call", params, meta.as_object().unwrap(), &fixed);
    assert_eq!(
        message,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","_meta":{"traceparent":"t","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#
    );
    let bare = request_message(&id, "ping", &serde_json::Map::new(), &serde_json::Map::new(), &[None, None, None]);
    assert_eq!(bare, r#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{}}"#);
}

/// A `roots/list` that no response stream relates to a call (stdio) is the session's: the
/// client's handlers answer it even while exactly one call with an input hook is in flight, for
/// a caller's roots would otherwise become the session's (a gateway's upstream serves every
/// caller). An elicitation asked the same way still goes to that call, and a `roots/list` its own
/// stream carried does too.
#[test]
fn roots_asked_outside_a_calls_stream_are_answered_for_the_session() {
    use crate::handlers::InputHook;
    let declared = Handlers::new()
        .roots(|| async { Ok(vec![]) })
        .elicitation(crate::handlers::ElicitationModes::FORM, |_| async {
            Err(crate::error::HandlerError("the session's".into()))
        });
    let core = Core::new(declared, Limits::default());
    let from_the_call = || async { Err(crate::error::HandlerError("the call's hook".into())) };
    let input = InputHook::new(mcp_types::ClientCapabilities::default(), move |_| from_the_call());
    core.watch_call(RequestId::Integer(1), CallHooks { input: Some(input), ..Default::default() });
    let ask = |method: &str, params: Value, related: Option<RequestId>| ServerRequest {
        id: json!(9),
        method: method.into(),
        params,
        related,
    };
    let elicit = json!({"message": "Your name?", "requestedSchema": {"type": "object", "properties": {}}});
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let answer = |request| runtime.block_on(core.answer(&request));
    assert_eq!(answer(ask("roots/list", Value::Null, None))["result"], json!({"roots": []}));
    let guessed = answer(ask("elicitation/create", elicit, None));
    assert_eq!(guessed["error"]["message"], "the call's hook", "{guessed}");
    let carried = answer(ask("roots/list", Value::Null, Some(RequestId::Integer(1))));
    assert_eq!(carried["error"]["message"], "the call's hook", "{carried}");
}

/// A legacy session is asked only what its handshake declared: a call's hook that could answer
/// roots is not consulted for a session that declared none, even for a request its own stream
/// carried (a gateway's upstream session shared by its callers declares no roots, so that one
/// caller's never become the session's).
#[test]
fn a_calls_hook_answers_only_what_the_session_declared() {
    use crate::handlers::InputHook;
    let core = Core::new(Handlers::new(), Limits::default());
    let asked = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&asked);
    let capabilities = mcp_types::ClientCapabilities { roots: Some(Default::default()), ..Default::default() };
    let input = InputHook::new(capabilities, move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Err(crate::error::HandlerError("the call's hook".into())) }
    });
    core.watch_call(RequestId::Integer(1), CallHooks { input: Some(input), ..Default::default() });
    let request = ServerRequest {
        id: json!(9),
        method: "roots/list".into(),
        params: Value::Null,
        related: Some(RequestId::Integer(1)),
    };
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let refused = runtime.block_on(core.answer(&request));
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(refused["error"]["message"], "no roots handler is configured", "{refused}");
    assert_eq!(asked.load(Ordering::SeqCst), 0, "the call's hook was asked");
}
