//! The `serde_json::Value` walk: what the typed decode refused or could not place (to word each
//! refusal as before), batch elements and answers to the server's own requests. It checks the
//! envelope member by member, then serves a request by its era like the typed path does.

use super::*;

impl Server {
    /// A batch, or what the typed decode refused or could not place: the `Value` walk, which
    /// words every refusal.
    pub(super) fn walk_bytes(&self, session: &Arc<Session>, bytes: &[u8], mirrors: Option<&Mirrors>) -> Option<Reply> {
        // Numbers read exactly, as the typed decode reads them.
        let text = std::str::from_utf8(bytes).map_err(|e| e.to_string());
        match text.and_then(|text| mcp_types::free_form_from_str::<Value>(text).map_err(|e| e.to_string())) {
            Ok(message) => self.handle_value(session, message, mirrors),
            Err(problem) => {
                // Valid JSON with a number no `Value` holds exactly (an integer beyond 64 bits).
                if let Ok(message) = serde_json::from_slice::<Value>(bytes) {
                    if message.is_object() && message.get("method").is_none() {
                        tracing::warn!(%problem, "a response from the client was dropped: a number in it cannot be kept");
                        return None;
                    }
                    let id = message.get("id").cloned().and_then(|id| serde_json::from_value::<RequestId>(id).ok());
                    if message.is_object() && id.is_none() {
                        return None;
                    }
                    let at = refusals::unkept_number_at(bytes).unwrap_or_default();
                    let error = ErrorObject::invalid_params(format!("Invalid params: at `{at}`: {problem}"));
                    return Some(Reply::ready(Outgoing::error_as(id.as_ref(), &error, Disposition::BadRequest)));
                }
                let error = ErrorObject::parse_error(format!("Parse error: {problem}"));
                Some(Reply::ready(Outgoing::error_as(None, &error, Disposition::BadRequest)))
            }
        }
    }

    /// [`Server::handle`] on a message the typed decode refused or could not place: walks the
    /// `Value` to find what is wrong with it (or serves it, as a batch element or one that only
    /// `serde_json::Value` reads, e.g. with a member given twice).
    pub(super) fn handle_value(
        &self,
        session: &Arc<Session>,
        message: Value,
        mirrors: Option<&Mirrors>,
    ) -> Option<Reply> {
        let mut message = match message {
            Value::Object(message) => message,
            Value::Array(batch) => return self.handle_batch(session, batch, mirrors),
            _ => return Some(invalid(None, "A JSON-RPC message must be an object")),
        };
        let id = match message.get("id") {
            None => None,
            Some(id) => match serde_json::from_value::<RequestId>(id.clone()) {
                Ok(id) => Some(id),
                Err(_) => return Some(invalid(None, "`id` must be a string or an integer")),
            },
        };
        // A message with `method`, or with `params` and neither `result` nor `error` (a request
        // that lost its method), is a request: an error about it carries its id. Any other
        // message answers one of the server's requests, so its id is in the server's numbering:
        // an error about it carries no id, or the client would take it for the answer to its
        // own request with that id.
        let request_like = is_request_like(&message);
        let reply_id = if request_like { id.as_ref() } else { None };
        if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Some(invalid(reply_id, "`jsonrpc` must be \"2.0\""));
        }
        let params = message.remove("params");
        if params.as_ref().is_some_and(|p| !p.is_object()) {
            return Some(invalid(reply_id, "`params` must be an object"));
        }
        let method = match message.remove("method") {
            None => None,
            Some(Value::String(method)) => Some(method),
            Some(_) => return Some(invalid(id.as_ref(), "`method` must be a string")),
        };
        match (method, id) {
            (Some(method), Some(id)) => Some(self.request(session, id, &method, params, mirrors)),
            (Some(method), None) => {
                self.notification(session, &method, params);
                None
            }
            (None, Some(id)) => {
                let outcome = match (message.remove("result"), message.remove("error")) {
                    (Some(result), None) => Ok(result),
                    (None, Some(error)) => Err(serde_json::from_value(error)
                        .unwrap_or_else(|e| ErrorObject::internal_error(format!("unreadable error: {e}")))),
                    _ if request_like => return Some(invalid(Some(&id), "a request needs a `method`")),
                    _ => return Some(invalid(None, "a response needs exactly one of `result` and `error`")),
                };
                if !session.resolve(&id, outcome) {
                    tracing::debug!(%id, "response to no pending request ignored");
                }
                None
            }
            (None, None) => Some(invalid(None, "a message needs a `method` or an `id`")),
        }
    }

    fn request(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        method: &str,
        params: Option<Value>,
        mirrors: Option<&Mirrors>,
    ) -> Reply {
        let has_modern_meta =
            params.as_ref().and_then(|p| p.get("_meta")).is_some_and(|m| m.get(PROTOCOL_VERSION).is_some());
        let header = mirrors.and_then(|m| m.protocol_version.as_deref());
        let legacy = match header {
            // A body with modern `_meta` is modern whatever the header says (a mismatch is -32020).
            Some(version) => LEGACY_VERSIONS.contains(&version) && !has_modern_meta,
            // A legacy client may `ping` before `initialize`; a modern request always has `_meta`.
            None => !has_modern_meta && (matches!(method, "initialize" | "ping") || session.is_initialized_legacy()),
        };
        if legacy {
            return self.legacy(session, id, method, params);
        }
        match self.modern(session, &id, method, params, mirrors) {
            Ok(reply) => reply,
            Err(Rejection(error, disposition)) => {
                crate::telemetry::refused_with(&error);
                Reply::ready(Outgoing::error_as(Some(&id), &error, disposition))
            }
        }
    }

    fn modern(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        method: &str,
        params: Option<Value>,
        mirrors: Option<&Mirrors>,
    ) -> Result<Reply, Rejection> {
        let meta = params.as_ref().and_then(|p| p.get("_meta"));
        let view = ModernView {
            method,
            meta: meta.map(|meta| MetaView {
                version: meta.get(PROTOCOL_VERSION).and_then(Value::as_str),
                capabilities: meta.get(CLIENT_CAPABILITIES).is_some(),
            }),
            name: name_member(method).and_then(|member| params.as_ref()?.get(member)?.as_str()),
        };
        let version = self.check_modern(&view, mirrors)?;
        let call = self.decode(id, method, params)?;
        self.serve_modern(session, id, Cow::Borrowed(version), call, None, mirrors)
    }

    /// Decodes a request the typed path left to the `Value` walk through the same generated
    /// `ClientRequest`: its handler call, or the refusal of its params (naming the method and the
    /// member), or of a method this server does not serve.
    fn decode(&self, id: &RequestId, method: &str, params: Option<Value>) -> Result<Decoded, Rejection> {
        let mut message = Map::new();
        message.insert("jsonrpc".to_owned(), Value::from("2.0"));
        message.insert("id".to_owned(), to_value(id));
        message.insert("method".to_owned(), Value::from(method));
        if let Some(params) = params {
            message.insert("params".to_owned(), params);
        }
        match <mcp_types::ClientRequest as serde::Deserialize>::deserialize(Value::Object(message)) {
            Ok(request) => self.modern_call(request),
            Err(_) if !self.serves(method) => Err(unknown(method)),
            Err(error) => Err(params_refused(method, &error)),
        }
    }

    fn legacy(&self, session: &Arc<Session>, id: RequestId, method: &str, params: Option<Value>) -> Reply {
        let state = session.legacy();
        let reply = |result: Value| Reply::ready(Outgoing::result(&id, &result));
        match method {
            "initialize" => return Reply::ready(self.initialize(session, &id, params)),
            "ping" => return reply(json!({})),
            _ => {}
        }
        let Some(version) = state.version else {
            // Legacy HTTP: a request without a session SHOULD be a 400.
            let error = ErrorObject::invalid_request(format!("{method} before initialize: send initialize first"));
            return Reply::ready(Outgoing::error_as(Some(&id), &error, Disposition::BadRequest));
        };
        let params = params.unwrap_or_else(|| json!({}));
        match method {
            "logging/setLevel" => {
                return match params.get("level").cloned().map(serde_json::from_value) {
                    Some(Ok(level)) => {
                        session.update(|legacy| legacy.log_level = Some(level));
                        reply(json!({}))
                    }
                    _ => Reply::ready(Outgoing::error(
                        Some(&id),
                        &ErrorObject::invalid_params(
                            "Invalid params for logging/setLevel: `level` must be a logging level",
                        ),
                    )),
                };
            }
            "resources/subscribe" | "resources/unsubscribe" if self.has_resources() => {
                let Some(uri) = params.get("uri").and_then(Value::as_str).map(str::to_owned) else {
                    let error =
                        ErrorObject::invalid_params(format!("Invalid params for {method}: missing field `uri`"));
                    return Reply::ready(Outgoing::error(Some(&id), &error));
                };
                let subscribe = method == "resources/subscribe";
                if let Some(refusal) = self.subscribe_refused(session, &id, &uri, subscribe) {
                    return Reply::ready(refusal);
                }
                session.update(|legacy| {
                    if subscribe {
                        legacy.subscriptions.insert(uri);
                    } else {
                        legacy.subscriptions.remove(&uri);
                    }
                });
                return reply(json!({}));
            }
            // The tasks extension does not exist before 2026-07-28.
            // Nor does the skills extension.
            "server/discover"
            | "subscriptions/listen"
            | "tasks/get"
            | "tasks/update"
            | "tasks/cancel"
            | "skills/list"
            | "skills/get"
            | "resources/directory/read" => {
                return Reply::ready(Outgoing::error(Some(&id), &ErrorObject::method_not_found(method)));
            }
            _ => {}
        }
        // The remaining methods mean the same in both eras: give the params the `_meta` a
        // modern request would carry, and serve them the same way.
        let Value::Object(mut params) = params else { unreachable!("checked in handle") };
        let mut meta = match params.remove("_meta") {
            Some(Value::Object(meta)) => meta,
            _ => Map::new(),
        };
        meta.insert(PROTOCOL_VERSION.into(), json!(version));
        meta.insert(CLIENT_CAPABILITIES.into(), serde_json::to_value(&*state.client_capabilities).unwrap_or_default());
        if let Some(info) = &state.client_info {
            meta.insert("io.modelcontextprotocol/clientInfo".into(), serde_json::to_value(&**info).unwrap_or_default());
        }
        params.insert("_meta".into(), Value::Object(meta));
        let call = match self.decode(&id, method, Some(Value::Object(params))) {
            Ok(Decoded::Discover | Decoded::Listen(_) | Decoded::Task(..)) => unreachable!("answered above"),
            Ok(call) => call,
            Err(Rejection(error, _)) => {
                crate::telemetry::refused_with(&error);
                return Reply::ready(Outgoing::error(Some(&id), &error));
            }
        };
        self.dispatch(session, id, Era::Legacy, super::settled_version(&version), call, None)
    }

    fn initialize(&self, session: &Arc<Session>, id: &RequestId, params: Option<Value>) -> Outgoing {
        if session.is_initialized_legacy() {
            return Outgoing::error(Some(id), &ErrorObject::invalid_request("This session is already initialized"));
        }
        match serde_json::from_value(params.unwrap_or_default()) {
            Ok(params) => self.initialize_with(session, id, params),
            Err(error) => {
                let error = ErrorObject::invalid_params(format!("Invalid params for initialize: {error}"));
                Outgoing::error(Some(id), &error)
            }
        }
    }
}
