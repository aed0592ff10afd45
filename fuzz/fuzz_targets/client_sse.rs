//! The client's SSE parser and its matching of responses to requests.
//!
//! Oracle: the parser yields the same events, last event id and retry delay however the bytes
//! are split (the first input byte picks the chunk size); a message answers a request only when
//! it carries that request's id (or, on HTTP, is an id-less error), and a waiting request gets
//! at most one delivery, from a message with its id. The same bytes are also routed as stdio
//! lines. A `tools/call`'s or a `resources/read`'s result decoded as it arrives (one pass) is the
//! result the general path delivers, decoded: the same value, and only a complete one.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_client::fuzzing::{Router, SseParser, reply_to, reply_to_method};
use mcp_types::{CallToolResult, ReadResourceResult, RequestId, ResultType};
use serde_json::Value;

fn ids() -> [RequestId; 4] {
    [RequestId::Integer(1), RequestId::Integer(2), RequestId::String("1".into()), RequestId::String("x".into())]
}

fn id_of(text: &str) -> Option<RequestId> {
    match serde_json::from_str::<Value>(text) {
        Ok(value) => serde_json::from_value(value.get("id")?.clone()).ok(),
        // A number beyond f64 elsewhere in the message (an error code of 80 digits, say), which
        // the client reads past: read the id alone, as it does.
        Err(_) => {
            #[derive(serde::Deserialize)]
            struct IdOnly {
                id: Option<RequestId>,
            }
            serde_json::from_str::<IdOnly>(text).ok()?.id
        }
    }
}

/// A message's `result`, as written.
#[derive(serde::Deserialize)]
struct ResultOnly<'a> {
    #[serde(borrow)]
    result: &'a serde_json::value::RawValue,
}

/// Routes `messages` to requests waiting for [`ids`], checking every delivery.
fn route<'a>(messages: impl Iterator<Item = &'a str>) {
    let router = Router::default();
    let mut waiting: Vec<_> = ids().into_iter().map(|id| (router.expect(id.clone()), id, false)).collect();
    let later = |id: RequestId| match id {
        RequestId::Integer(n) => RequestId::Integer(n + 100),
        RequestId::String(s) => RequestId::String(format!("{s}00")),
        other => other,
    };
    let mut tool_calls: Vec<_> =
        ids().into_iter().map(later).map(|id| (router.expect_answer_to(id.clone(), "tools/call"), id, false)).collect();
    for text in messages {
        for id in ids() {
            match reply_to(text, &id) {
                Some(Ok(Ok(result))) => {
                    assert_eq!(id_of(text).as_ref(), Some(&id), "a result matched another request: {text}");
                    // An object of valid JSON: its numbers as written, one beyond f64's range too
                    // (`-2e601`, which a `Value` refuses to hold).
                    let object =
                        serde_json::from_str::<std::collections::BTreeMap<String, &serde_json::value::RawValue>>;
                    assert!(object(&result).is_ok(), "{text}");
                    // Read in one pass or not, the text is the message's `result` as any JSON reader
                    // finds it.
                    if let Ok(message) = serde_json::from_str::<ResultOnly<'_>>(text) {
                        assert_eq!(message.result.get(), result, "{text}");
                    }
                }
                Some(_) => {
                    let answered = id_of(text);
                    assert!(answered.is_none() || answered.as_ref() == Some(&id), "matched another request: {text}");
                }
                None => {}
            }
            one_pass_agrees::<CallToolResult>(text, &id, "tools/call", |r| &r.result_type);
            one_pass_agrees::<ReadResourceResult>(text, &id, "resources/read", |r| &r.result_type);
        }
        let _ = router.dispatch(text);
        for (pending, id, done) in waiting.iter_mut().chain(&mut tool_calls).filter(|(_, _, done)| !done) {
            if pending.delivered().is_some() {
                *done = true;
                assert_eq!(id_of(text).as_ref(), Some(&*id), "delivered to another request: {text}");
            }
        }
    }
}

/// What a request of `method` receives equals what any other request receives, decoded as `T`.
fn one_pass_agrees<T: serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(
    text: &str,
    id: &RequestId,
    method: &str,
    result_type: impl Fn(&T) -> &ResultType,
) {
    let general = reply_to(text, id);
    let Some((delivered, one_pass)) = reply_to_method(text, id, method) else {
        assert!(general.is_none(), "only the general path answered: {text}");
        return;
    };
    if !one_pass {
        assert_eq!(Some(delivered), general, "{text}");
        return;
    }
    let decoded = |outcome: &str| serde_json::from_str::<T>(outcome).expect("the method's result");
    let Ok(Ok(one_pass)) = delivered else { panic!("a one-pass delivery is a result: {text}") };
    // The general path reads a result written this way in one pass too, as its text.
    let Some(Ok(Ok(general))) = general else { panic!("the general path has no result: {text}") };
    let (one_pass, general) = (decoded(&one_pass), decoded(&general));
    assert_eq!(*result_type(&one_pass), ResultType::Complete, "{text}");
    assert_eq!(one_pass, general, "{text}");
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, body)) = data.split_first() else { return };
    let mut whole = SseParser::default();
    let mut events = Vec::new();
    let whole_ok = whole.push(body, &mut events);
    let mut chunked = SseParser::default();
    let mut chunked_events = Vec::new();
    let step = usize::from(split % 16) + 1;
    let chunked_ok = body.chunks(step).try_for_each(|chunk| chunked.push(chunk, &mut chunked_events));
    assert_eq!(whole_ok.is_ok(), chunked_ok.is_ok());
    assert_eq!(events, chunked_events, "chunks of {step} bytes parse differently");
    assert_eq!(whole.last_event_id, chunked.last_event_id);
    assert_eq!(whole.retry, chunked.retry);

    route(events.iter().filter(|e| e.event == "message").map(|e| e.data.as_str()));
    let text = String::from_utf8_lossy(body);
    route(text.lines());
});
