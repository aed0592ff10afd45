//! A `tools/call` relayed as it came: its arguments sent as the JSON text the caller gave, and the
//! result returned as the text the server answered. A proxy (the gateway) passes a caller's call
//! on this way without decoding its arguments or building the pipeline's `Call`; what the relay
//! cannot give (an input round, another protocol version, the `Mcp-Param-*` headers of a tool
//! whose annotations are not known yet) is left to the usual call, sent again from the start.

use std::cell::RefCell;
use std::sync::Arc;

use mcp_types::{ClientCapabilities, JsonObject, RawResult, RequestId, error_codes};
use serde::Serialize;
use serde_json::value::RawValue;
use tracing::Instrument as _;

use super::era::Era;
use super::options::CallOptions;
use super::results::{check_result_type, result_type_is};
use super::{Client, META_CAPS, META_INFO, META_VERSION, declared, raw_json};
use crate::core::{Answer, MetaText, Wants};
use crate::error::Error;
use crate::telemetry;
use crate::transport::TransportKind;
use crate::transport::request::{CancelNotice, Outgoing};
use mcp_types::http_headers::encode_value as encode_header_value;

/// What became of a relayed call.
#[derive(Debug)]
pub enum Relayed {
    /// The server's complete result, as it wrote it.
    Result(RawResult),
    /// Not relayed, or answered with what only the usual call can follow (an input round,
    /// `-32022` with the versions the server speaks): the server did not run the call, so the
    /// caller sends it again with [`Client::call_tool_raw`].
    Again,
}

/// The call as the wire carries it.
struct Message<'a> {
    id: &'a RequestId,
    name: &'a str,
    arguments: Option<&'a RawValue>,
    meta: &'a JsonObject,
    fixed: [Option<(&'static str, MetaText<'a>)>; 3],
}

impl Message<'_> {
    /// The request's text: what [`crate::core::request_message`] writes for the same call, the
    /// same members with the same values (`name` first). Written piece by piece: its constant
    /// names go out as they are, not escape-checked byte by byte, and the arguments and the
    /// prepared `_meta` members are text already.
    fn text(&self) -> String {
        let arguments = self.arguments.map_or(0, |arguments| arguments.get().len());
        let fixed = self.fixed.iter().flatten();
        let text_len = |value: &MetaText<'_>| match value {
            MetaText::Str(text) => text.len() + 2,
            MetaText::Json(json) => json.get().len(),
        };
        let fixed_len: usize = fixed.clone().map(|(name, value)| name.len() + text_len(value) + 4).sum();
        let mut out = Vec::with_capacity(96 + self.name.len() + arguments + fixed_len);
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        write_json(&mut out, self.id);
        out.extend_from_slice(br#","method":"tools/call","params":{"name":"#);
        write_json(&mut out, self.name);
        if let Some(arguments) = self.arguments {
            out.extend_from_slice(br#","arguments":"#);
            out.extend_from_slice(arguments.get().as_bytes());
        }
        out.extend_from_slice(br#","_meta":{"#);
        let mut first = true;
        let mut separate = |out: &mut Vec<u8>| {
            if !std::mem::take(&mut first) {
                out.push(b',');
            }
        };
        for (name, value) in self.meta.iter().filter(|(name, _)| !fixed.clone().any(|(fixed, _)| fixed == name)) {
            separate(&mut out);
            write_json(&mut out, name);
            out.push(b':');
            write_json(&mut out, value);
        }
        for (name, value) in fixed {
            separate(&mut out);
            // The fixed names are the revision's own, with nothing to escape.
            out.push(b'"');
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
            match value {
                MetaText::Str(text) => write_json(&mut out, text),
                MetaText::Json(json) => out.extend_from_slice(json.get().as_bytes()),
            }
        }
        out.extend_from_slice(b"}}}");
        String::from_utf8(out).expect("each piece is UTF-8")
    }
}

/// Whether a scanned result is complete: it says so once, or has no `resultType` (an older
/// server's). Its member names have no escapes, so the scan's names are the names.
fn says_complete(result: &RawResult) -> bool {
    let Some(members) = result.members() else { return false };
    let mut types = members.filter(|(name, _)| *name == "resultType").map(|(_, value)| value);
    match (types.next(), types.next()) {
        (None, _) => true,
        (Some(value), None) => value == "\"complete\"",
        _ => false,
    }
}

fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    serde_json::to_writer(out, value).expect("names, ids and JSON values always serialize");
}

/// The capabilities a relayed call declares, as text: the last ones this thread wrote. A proxy
/// relays the calls of callers that declare the same capabilities call after call, so they are
/// encoded once, not cloned, encoded and dropped per call. The text is the value's encoding and
/// nothing else, whoever declared it.
fn declared_text(capabilities: &ClientCapabilities, tasks: bool) -> Arc<RawValue> {
    thread_local! {
        static LAST: RefCell<Option<(ClientCapabilities, bool, Arc<RawValue>)>> = const { RefCell::new(None) };
    }
    LAST.with_borrow_mut(|last| {
        if let Some((kept, kept_tasks, text)) = last
            && *kept_tasks == tasks
            && kept == capabilities
        {
            return Arc::clone(text);
        }
        let text: Arc<RawValue> = Arc::from(raw_json(&declared(capabilities.clone(), tasks)));
        *last = Some((capabilities.clone(), tasks, Arc::clone(&text)));
        text
    })
}

impl Client {
    /// Calls the tool `name` with `arguments` (a JSON object's text, sent as it is) for a caller
    /// that declared `capabilities`, and returns the result's text, in the 2026-07-28 era. The
    /// request is the one [`call_tool_raw`](Self::call_tool_raw) would send for a call with no hooks (`_meta` with `capabilities` and this client's identity; the same
    /// headers, span and metrics), without decoding the arguments.
    ///
    /// A task the server makes of the call is followed to its result, as `call_tool_raw` follows
    /// it. [`Relayed::Again`] when it was not sent (the legacy era, a caller with the tasks
    /// extension, a tool whose `Mcp-Param-*` headers need its arguments or a listing), or when the
    /// server answered with an input round or `-32022`: none of them ran the call. A child process
    /// that ended before it answered is started again and sent the call once more, as the usual
    /// call does, when the client restarts it (`restart_on_exit`); else the call fails `Closed`.
    pub async fn relay_tool_call(
        &self,
        name: &str,
        arguments: Option<&RawValue>,
        capabilities: &ClientCapabilities,
        timeout: Option<std::time::Duration>,
    ) -> Result<Relayed, Error> {
        let asks_tasks = capabilities.extensions.as_ref().is_some_and(|e| e.contains_key(mcp_types::ext::TASKS));
        if asks_tasks || !self.can_relay(name) || arguments.is_some_and(|arguments| !arguments.get().starts_with('{')) {
            return Ok(Relayed::Again);
        }
        let version = self.version();
        let id = self.inner.core.next_id();
        let target = telemetry::Target::Tool(name);
        let labels = telemetry::RequestLabels { method: "tools/call", id: &id, version: &version, target };
        let operation = telemetry::Operation::start(&self.inner.peer, &labels, || None);
        let mut meta = JsonObject::new();
        operation.inject(&mut meta);
        let tasks = self.inner.config.tasks;
        let capabilities = declared_text(capabilities, tasks);
        let info = self.inner.client_info_json.as_deref();
        let timeout = timeout.unwrap_or(self.inner.config.request_timeout);
        let exchange = |id: RequestId| {
            let message = Message {
                id: &id,
                name,
                arguments,
                meta: &meta,
                fixed: [
                    Some((META_CAPS, MetaText::Json(&capabilities))),
                    info.map(|info| (META_INFO, MetaText::Json(info))),
                    Some((META_VERSION, MetaText::Str(&version))),
                ],
            };
            let message = message.text();
            let headers = vec![
                ("MCP-Protocol-Version".into(), version.clone()),
                ("Mcp-Method".into(), "tools/call".into()),
                ("Mcp-Name".into(), encode_header_value(name).into()),
            ];
            let cancel_notice = CancelNotice {
                peer: self.inner.peer.clone(),
                version: version.clone(),
                request_span: operation.span().clone(),
            };
            let out = Outgoing {
                id,
                method: "tools/call",
                message,
                headers,
                cancel_on_drop: true,
                cancel_notice,
                wants: Wants::Scan,
            };
            let transport = self.transport();
            async move {
                let reply = tokio::time::timeout(timeout, transport.request(&self.inner.core, out))
                    .await
                    .map_err(|_| Error::Timeout { method: "tools/call".to_owned(), after: timeout })??;
                match reply.map_err(|error| Error::Rpc { method: "tools/call".to_owned(), error, http_status: None })? {
                    Answer::Raw(raw) | Answer::Complete(raw) => Ok(Answer::Complete(raw)),
                    Answer::Scanned(result) if says_complete(&result) => Ok(Answer::Scanned(result)),
                    // A task or an input round (or a `resultType` given twice): checked as text.
                    scanned @ Answer::Scanned(_) => Ok(Answer::Complete(scanned.into_raw())),
                    _ => unreachable!("a raw or scanned answer was asked for"),
                }
            }
        };
        let exchange = async {
            let first = exchange(id).await;
            // A child process that ended: started again and the call sent once more on the new one,
            // as `Client::answer` does for a call of its own. Not left to the caller: a proxy's
            // usual call may choose another connection (a pool's other process), and a call the
            // ended process may have run would then run twice.
            if matches!(first, Err(Error::Closed)) && Box::pin(self.revive()).await? {
                return exchange(self.inner.core.next_id()).await;
            }
            first
        };
        let answer = exchange.instrument(operation.span().clone()).await;
        self.inner.session_clock.observe(&answer);
        // `false`: an input round, which the usual call answers before it sends the call again,
        // or a task, followed here as the usual call follows it.
        let complete = match &answer {
            Ok(Answer::Complete(raw)) => check_result_type("tools/call", raw, tasks).map(Some),
            Ok(Answer::Scanned(_)) => Ok(Some(true)),
            _ => Ok(None),
        };
        operation.finish(answer.as_ref().map(|answer| answer.is_tool_error("tools/call")));
        match (answer, complete?) {
            (Ok(Answer::Scanned(result)), Some(true)) => Ok(Relayed::Result(result)),
            (Ok(Answer::Complete(raw)), Some(true)) => RawResult::from_raw(raw)
                .map(Relayed::Result)
                .map_err(|e| Error::protocol(format!("tools/call result: {e}"))),
            (Ok(Answer::Complete(raw)), Some(false))
                if result_type_is(&raw, mcp_types::ext::tasks::RESULT_TYPE_TASK) =>
            {
                let result = Box::pin(self.follow_task(&raw, CallOptions::default())).await?;
                RawResult::new(&result)
                    .map(Relayed::Result)
                    .map_err(|e| Error::protocol(format!("tools/call result: {e}")))
            }
            (Ok(_), _) => Ok(Relayed::Again),
            (Err(Error::Rpc { error, .. }), _) if error.code == error_codes::UNSUPPORTED_PROTOCOL_VERSION => {
                Ok(Relayed::Again)
            }
            (Err(error), _) => Err(error),
        }
    }

    /// Whether [`relay_tool_call`](Self::relay_tool_call) would send a call of `name`: in the
    /// 2026-07-28 era, and over HTTP to a tool listed with no `Mcp-Param-*` headers to mirror.
    pub fn can_relay(&self, name: &str) -> bool {
        if self.era() != Era::Modern {
            return false;
        }
        if self.transport().kind() != TransportKind::StreamableHttp {
            return true;
        }
        if !self.inner.tools_listed.load(std::sync::atomic::Ordering::SeqCst) {
            return false;
        }
        let annotations = self.inner.tool_annotations.lock().unwrap();
        !annotations.may_be_missing(name) && annotations.invalid(name).is_none() && annotations.headers(name).is_none()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// The relayed request is the request the usual call writes for the same call, whatever its
    /// id, name, arguments and `_meta` (a member of the caller's `_meta` that a prepared one
    /// names is left out, as there).
    #[test]
    fn a_relayed_request_is_the_usual_calls_request() {
        let capabilities = RawValue::from_string(r#"{"elicitation":{}}"#.to_owned()).unwrap();
        let info = RawValue::from_string(r#"{"name":"gw","version":"1"}"#.to_owned()).unwrap();
        let arguments = RawValue::from_string(r#"{"a":1,"b":[2.5,"x\"y"],"c":{"d":null}}"#.to_owned()).unwrap();
        let mut traced = JsonObject::new();
        traced.insert("traceparent".into(), json!("00-1-2-01"));
        traced.insert("w\"eird".into(), json!({"n": [1, -2]}));
        let mut shadowing = JsonObject::new();
        shadowing.insert(META_VERSION.into(), json!("1999-01-01"));
        shadowing.insert("z".into(), json!(true));
        let ids = [RequestId::from(7), RequestId::from("ab\"c".to_owned())];
        for id in &ids {
            for name in ["add", "na\u{e9}me \"quoted\"\n"] {
                for arguments in [None, Some(&*arguments)] {
                    for meta in [&JsonObject::new(), &traced, &shadowing] {
                        for info in [None, Some(&*info)] {
                            let fixed = [
                                Some((META_CAPS, MetaText::Json(&capabilities))),
                                info.map(|info| (META_INFO, MetaText::Json(info))),
                                Some((META_VERSION, MetaText::Str("2026-07-28"))),
                            ];
                            let text = Message { id, name, arguments, meta, fixed }.text();
                            let mut params = JsonObject::new();
                            params.insert("name".into(), name.into());
                            if let Some(arguments) = arguments {
                                params.insert("arguments".into(), serde_json::from_str(arguments.get()).unwrap());
                            }
                            let usual = crate::core::request_message(id, "tools/call", &params, meta, &fixed);
                            let parsed = |text: &str| serde_json::from_str::<Value>(text).unwrap();
                            assert_eq!(parsed(&text), parsed(&usual), "{text}\n{usual}");
                        }
                    }
                }
            }
        }
        let fixed =
            [Some((META_CAPS, MetaText::Json(&capabilities))), None, Some((META_VERSION, MetaText::Str("2026-07-28")))];
        let text = Message { id: &ids[0], name: "add", arguments: Some(&arguments), meta: &shadowing, fixed }.text();
        assert_eq!(
            text,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":[2.5,"x\"y"],"c":{"d":null}},"_meta":{"z":true,"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#
        );
    }

    /// A scanned result is complete when it says so once or not at all, whatever its content
    /// holds; a task, an input round, or a `resultType` given twice is checked as text.
    #[test]
    fn a_scanned_result_is_complete_only_when_it_says_so_once() {
        let complete = [
            r#"{"content":[]}"#,
            r#"{"resultType":"complete","content":[]}"#,
            r#"{"content":[{"type":"text","text":"x","resultType":"task"}],"resultType" : "complete"}"#,
        ];
        let not = [
            r#"{"resultType":"task","task":{}}"#,
            r#"{"resultType":"input_required","inputRequests":{}}"#,
            r#"{"resultType":"complete","resultType":"task"}"#,
            r#"{"resultType":"complete ","content":[]}"#,
        ];
        for (texts, want) in [(&complete[..], true), (&not[..], false)] {
            for text in texts {
                assert_eq!(says_complete(&RawResult::scan(text).unwrap()), want, "{text}");
            }
        }
        // Not made by a scan: not known to be complete here.
        assert!(!says_complete(&RawResult::from_text(complete[0].to_owned()).unwrap()));
    }

    /// The capabilities' text is the encoding of what each call declares, when they change from
    /// call to call too.
    #[test]
    fn declared_capabilities_are_each_calls_own() {
        let none = ClientCapabilities::default();
        let asking = ClientCapabilities { elicitation: Some(Default::default()), ..Default::default() };
        for (capabilities, tasks) in [(&none, false), (&none, false), (&asking, false), (&none, true), (&asking, true)]
        {
            let expected = raw_json(&declared(capabilities.clone(), tasks));
            assert_eq!(declared_text(capabilities, tasks).get(), expected.get());
        }
    }
}
