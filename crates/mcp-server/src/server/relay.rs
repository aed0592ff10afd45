//! The relay lane: a `tools/call` that the tool source passes on as it came
//! ([`ToolSource::relay`](crate::dynamic::ToolSource::relay)), as a proxy does. The lane
//! (`lane.rs`) has read the request only as far as the server's checks need, and checked it;
//! what the relay skips is the call's context and the decode of its arguments. A 2026-07-28
//! request carries what the call needs in its `_meta`; a legacy one is relayed on its open
//! session, with what the handshake declared. A request the relay does not take, or one the
//! source gives back ([`Relayed::Again`]), is served the usual way.

use serde_json::value::RawValue;

use super::lane::LaneCall;
use super::*;
use crate::dynamic::{RelayCall, Relayed, ToolSource};

#[cfg(test)]
mod tests;

impl Server {
    /// The tool source, if it relays this call. Nothing the call's context would carry while it
    /// runs: no progress, no log messages, no task. A question for the caller comes back as an
    /// input round, before the call ran: the source gives the call back, and the usual way asks
    /// it. No middleware either.
    pub(super) fn relaying_source(
        &self,
        session: &Session,
        call: &LaneCall<'_>,
        mirrors: Option<&Mirrors>,
        era: Era,
    ) -> Option<&Arc<dyn ToolSource>> {
        let source = self.inner.tool_source.as_ref().filter(|source| source.relays())?;
        let relays = self.inner.layer.is_none()
            && !call.logs
            && call.meta.progress_token.is_none()
            && call.meta.log_level.is_none()
            && !mcp_types::ext::declares(&call.meta.client_capabilities, mcp_types::ext::TASKS)
            && call.arguments.is_none_or(|arguments| arguments.get().starts_with('{'))
            && self.tool(&call.name).is_none()
            && self.task_support(&call.name) != TaskSupport::Required
            && !(era == Era::Modern && mirrors.is_some() && self.mirrored_params(&call.name, session).is_some());
        relays.then_some(source)
    }

    /// The reply to a call `source` relays ([`Server::relaying_source`]).
    pub(super) fn relayed(
        &self,
        session: &Arc<Session>,
        source: &Arc<dyn ToolSource>,
        call: LaneCall<'_>,
        era: Era,
    ) -> Reply {
        let LaneCall { id, name, arguments, meta, version, logs: _ } = call;
        let capabilities = &meta.client_capabilities;
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
        let (name, arguments) = (name.into_owned(), arguments.map(RawValue::to_owned));
        let (sink, rx) = crate::message::sink();
        let open = sink.clone();
        let (server, run_session, run_id) = (self.clone(), Arc::clone(session), id.clone());
        let running = Box::pin(async move {
            match relaying.await {
                Ok(Relayed::Result(raw)) => server.respond_raw_tool(&run_id, era, raw),
                Ok(Relayed::Again) => {
                    let mut again = CallToolRequestParams::new(Default::default(), name);
                    if let Some(arguments) = arguments {
                        match serde_json::from_str(arguments.get()) {
                            Ok(arguments) => again.arguments = Some(arguments),
                            Err(e) => {
                                let error = ErrorObject::invalid_params(format!("Invalid params: at `arguments`: {e}"));
                                return Outgoing::error(Some(&run_id), &error);
                            }
                        }
                    }
                    let mut call = Decoded::CallTool(again, None);
                    let meta = server.request_meta(&mut call, &version, Some(meta));
                    // Boxed: the usual way's future is large, and this one is copied into its
                    // box on every relayed call.
                    Box::pin(server.run(&run_session, &run_id, era, version, meta, call, sink)).await
                }
                Err(Error::InputRequired(_)) => {
                    let error = Error::internal("a relayed call cannot ask its caller for input");
                    server.respond_error(&run_id, era, true, error)
                }
                Err(error) => server.respond_error(&run_id, era, true, error),
            }
        });
        span.in_scope(|| self.drive(session, id, rx, Some(open), running, Some(operation)))
    }
}
