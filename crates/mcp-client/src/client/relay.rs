//! A `tools/call` relayed as it came: its arguments sent as the JSON text the caller gave, and the
//! result returned as the text the server answered. A proxy (the gateway) passes a caller's call
//! on this way without decoding its arguments or building the pipeline's `Call`; what the relay
//! cannot give (an input round, another protocol version, the `Mcp-Param-*` headers of a tool
//! whose annotations are not known yet) is left to the usual call, sent again from the start.

use mcp_types::{ClientCapabilities, JsonObject, RawResult, RequestId, error_codes};
use serde::ser::{Serialize, SerializeMap as _, Serializer};
use serde_json::value::RawValue;
use tracing::Instrument as _;

use super::era::Era;
use super::options::CallOptions;
use super::results::{check_result_type, result_type_is};
use super::{Client, META_CAPS, META_INFO, META_VERSION, declared, raw_json};
use crate::core::{Answer, Meta, MetaText, Wants};
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

impl Serialize for Message<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Params<'a>(&'a Message<'a>);
        impl Serialize for Params<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("name", self.0.name)?;
                if let Some(arguments) = self.0.arguments {
                    map.serialize_entry("arguments", arguments)?;
                }
                map.serialize_entry("_meta", &Meta { meta: self.0.meta, fixed: &self.0.fixed })?;
                map.end()
            }
        }
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("jsonrpc", "2.0")?;
        map.serialize_entry("id", self.id)?;
        map.serialize_entry("method", "tools/call")?;
        map.serialize_entry("params", &Params(self))?;
        map.end()
    }
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
        let version = self.protocol_version();
        let id = self.inner.core.next_id();
        let mut target = JsonObject::new();
        target.insert("name".into(), name.into());
        let labels = telemetry::RequestLabels { method: "tools/call", id: &id, version: &version, params: &target };
        let operation = telemetry::Operation::start(&self.inner.peer, &labels, || None);
        let mut meta = JsonObject::new();
        operation.inject(&mut meta);
        let tasks = self.inner.config.tasks;
        let capabilities = raw_json(&declared(capabilities.clone(), tasks));
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
            let message = serde_json::to_string(&message).expect("names, ids and JSON text always serialize");
            let headers = vec![
                ("MCP-Protocol-Version".to_owned(), version.clone()),
                ("Mcp-Method".to_owned(), "tools/call".to_owned()),
                ("Mcp-Name".to_owned(), encode_header_value(name)),
            ];
            let cancel_notice = CancelNotice {
                peer: self.inner.peer.clone(),
                version: version.clone(),
                request_span: operation.span().clone(),
            };
            let out = Outgoing {
                id,
                method: "tools/call".to_owned(),
                message,
                headers,
                cancel_on_drop: true,
                cancel_notice,
                wants: Wants::Raw,
            };
            let transport = self.transport();
            async move {
                let reply = tokio::time::timeout(timeout, transport.request(&self.inner.core, out))
                    .await
                    .map_err(|_| Error::Timeout { method: "tools/call".to_owned(), after: timeout })??;
                match reply.map_err(|error| Error::Rpc { method: "tools/call".to_owned(), error, http_status: None })? {
                    Answer::Raw(raw) | Answer::Complete(raw) => Ok(Answer::Complete(raw)),
                    _ => unreachable!("a raw answer was asked for"),
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
            _ => Ok(None),
        };
        operation.finish(answer.as_ref().map(|answer| answer.is_tool_error("tools/call")));
        match (answer, complete?) {
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
