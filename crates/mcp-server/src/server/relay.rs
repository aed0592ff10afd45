//! The relay lane: a `tools/call` that the tool source passes on as it came
//! ([`ToolSource::relay`](crate::dynamic::ToolSource::relay)), as a proxy does. The request is read
//! only as far as the server's checks need: the envelope, the tool's name and `_meta`, borrowed
//! from the body; its arguments stay text. It is checked as the typed path checks it (the same
//! functions), and it has the request's span and metrics; what it skips is the call's context
//! and the decode of its arguments. A 2026-07-28 request carries what the call needs in its
//! `_meta`; a legacy one is relayed on its open session, with what the handshake declared. A
//! request the lane does not take, or one the source gives back ([`Relayed::Again`]), is served
//! the usual way.

use mcp_types::JsonObject;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::*;
use crate::dynamic::{RelayCall, Relayed};
use crate::server::refusals::{MetaView, ModernView};

#[cfg(test)]
mod tests;

/// The envelope of a request, read in the same pass as its params (which a method other than
/// `tools/call` seldom has the shape of). Any other member, or one given twice, and the lane
/// leaves the request to the typed path.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<'a, P> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
    params: P,
}

/// The params of a relayed `tools/call`: nothing but these three (no `inputResponses`, no
/// `requestState`, no task). `_meta` is the request's own in the 2026-07-28 era; on a legacy
/// session, an object of members no revision defines, or none.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params<'a, M> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    /// `null` too is kept, as text: only an object is relayed.
    #[serde(borrow, default, deserialize_with = "present")]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta")]
    meta: M,
}

fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(Some)
}

impl Server {
    /// The reply to a request the relay lane takes; `None` for one it leaves to the typed path
    /// (which then refuses what the lane's checks refused, in its own words).
    pub(super) fn relayed(
        &self,
        session: &Arc<Session>,
        bytes: &[u8],
        mirrors: Option<&Mirrors>,
        era: Era,
    ) -> Option<Reply> {
        let source = self.inner.tool_source.as_ref().filter(|source| source.relays())?;
        if self.inner.layer.is_some() {
            return None;
        }
        let text = std::str::from_utf8(bytes).ok()?;
        // Any other method is not read twice: a `prompts/get` has the same params, a list's fail
        // late. (A method name written with escapes is left to the typed path.)
        if !text.contains("\"tools/call\"") {
            return None;
        }
        let is_call = |jsonrpc: &str, method: &str| jsonrpc == "2.0" && method == "tools/call";
        let (id, name, arguments, meta, version) = match era {
            Era::Modern => {
                let envelope: Envelope<'_, Params<'_, RequestMetaObject>> = serde_json::from_str(text).ok()?;
                if !is_call(&envelope.jsonrpc, &envelope.method) {
                    return None;
                }
                let params = envelope.params;
                let view = ModernView {
                    method: "tools/call",
                    meta: Some(MetaView { version: Some(&params.meta.protocol_version), capabilities: true }),
                    name: Some(&params.name),
                };
                let version: Cow<'static, str> = Cow::Borrowed(self.check_modern(&view, mirrors).ok()?);
                (envelope.id, params.name, params.arguments, params.meta, version)
            }
            Era::Legacy => {
                let envelope: Envelope<'_, Params<'_, Option<JsonObject>>> = serde_json::from_str(text).ok()?;
                if !is_call(&envelope.jsonrpc, &envelope.method) {
                    return None;
                }
                let params = envelope.params;
                let extra = params.meta.unwrap_or_default();
                // Members a revision defines: the typed path reads (or refuses) them.
                if extra.keys().any(|key| key.starts_with("io.modelcontextprotocol/") || key == "progressToken") {
                    return None;
                }
                let handshake = session.read_legacy(|legacy| {
                    let version = legacy.version.clone()?;
                    legacy
                        .log_level
                        .is_none()
                        .then(|| (version, legacy.client_capabilities.clone(), legacy.client_info.clone()))
                })?;
                let (version, capabilities, info) = handshake;
                let meta = RequestMetaObject {
                    client_capabilities: Box::new(capabilities),
                    client_info: info.map(Box::new),
                    log_level: None,
                    protocol_version: version,
                    progress_token: None,
                    extra,
                };
                let version: Cow<'static, str> = super::settled_version(&meta.protocol_version);
                (envelope.id, params.name, params.arguments, meta, version)
            }
        };
        let capabilities = &meta.client_capabilities;
        // Nothing the call's context would carry while it runs: no progress, no log messages, no
        // task. A question for the caller comes back as an input round, before the call ran: the
        // source gives the call back, and the usual way asks it.
        let relayable = meta.progress_token.is_none()
            && meta.log_level.is_none()
            && !mcp_types::ext::declares(capabilities, mcp_types::ext::TASKS)
            && arguments.is_none_or(|arguments| arguments.get().starts_with('{'))
            && self.tool(&name).is_none()
            && self.task_support(&name) != TaskSupport::Required
            && !(era == Era::Modern && mirrors.is_some() && self.mirrored_params(&name, session).is_some());
        if !relayable {
            return None;
        }
        let labels = RequestLabels {
            method: "tools/call",
            id: &id,
            version: &version,
            target: Some(if source.lists_tool(&name, session.principal()) { &name } else { crate::telemetry::OTHER }),
            meta: Some(&meta.extra),
            transport: session.transport(),
            session_id: session.http_id().filter(|_| era == Era::Legacy),
        };
        let operation = Operation::start(&labels);
        let span = operation.span().clone();
        // As a handler's context has it: with the token of the session's latest request.
        let principal = session.request_principal();
        let call = RelayCall { principal: &principal, name: &name, arguments, client_capabilities: capabilities };
        let relaying = span.in_scope(|| run::handler(source.relay(call)));
        // What the usual way needs, should the source give the call back.
        let arguments = arguments.map(RawValue::to_owned);
        let again = CallToolRequestParams::new(meta, name.into_owned());
        let (sink, rx) = crate::message::sink();
        let open = sink.clone();
        let (server, run_session, run_id) = (self.clone(), Arc::clone(session), id.clone());
        let running = Box::pin(async move {
            match relaying.await {
                Ok(Relayed::Result(raw)) => server.respond_raw_tool(&run_id, era, raw),
                Ok(Relayed::Again) => {
                    let mut again = again;
                    if let Some(arguments) = arguments {
                        match serde_json::from_str(arguments.get()) {
                            Ok(arguments) => again.arguments = Some(arguments),
                            Err(e) => {
                                let error = ErrorObject::invalid_params(format!("Invalid params: at `arguments`: {e}"));
                                return Outgoing::error(Some(&run_id), &error);
                            }
                        }
                    }
                    let mut call = Decoded::CallTool(again);
                    let meta = server.request_meta(&mut call);
                    server.run(&run_session, &run_id, era, version, meta, call, sink).await
                }
                Err(Error::InputRequired(_)) => {
                    let error = Error::internal("a relayed call cannot ask its caller for input");
                    server.respond_error(&run_id, era, true, error)
                }
                Err(error) => server.respond_error(&run_id, era, true, error),
            }
        });
        Some(span.in_scope(|| self.drive(session, id, rx, Some(open), running, Some(operation))))
    }
}
