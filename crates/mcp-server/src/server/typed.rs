//! The typed path of [`Server::handle_bytes`] and [`Server::handle`]: the message goes in one
//! pass into the generated `ClientMessage` of the era it belongs to, and is served by matching
//! on the generated variants.
//!
//! The era is known before the body is read: from the `MCP-Protocol-Version` header when a
//! transport carries one, otherwise from the session (a session that negotiated a legacy
//! revision through `initialize` sends legacy messages; any other sends modern ones, with their
//! version in `_meta`). The decoded message then confirms it by the same rule as the `Value`
//! walk (`Server::request`): a body with modern `_meta` is modern whatever the header says, and
//! without a header `initialize` and `ping` open the legacy era. A wrong guess costs one more
//! decode, in the other era's types (the handshake of a legacy session without a header).
//!
//! What the generated types refuse (a member of the wrong type, a missing `_meta`, an envelope
//! that is not JSON-RPC, a member given twice) and what is rare and served the same way in both
//! eras (JSON-RPC responses to the server's requests, legacy `completion/complete` and extension
//! methods) goes to the `Value` walk, which words each refusal exactly as before.

use std::borrow::Cow;
use std::sync::Arc;

use mcp_types::v2025_11_25 as legacy;
use mcp_types::{ClientMessage, ClientNotification, ClientRequest, ErrorObject, JsonObject, RequestMetaObject};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{
    CLIENT_CAPABILITIES, Decoded, LEGACY_VERSIONS, Listing, MetaView, ModernView, PROTOCOL_VERSION, Rejection, unknown,
};
use crate::headers::Mirrors;
use crate::message::{Disposition, Outgoing, Reply};
use crate::{era::Era, server::Server, session::Session};

/// Where a message comes from: its bytes, or a `Value` a caller already has.
#[derive(Clone, Copy)]
pub(crate) enum Source<'a> {
    /// A message's text (checked as UTF-8 once, whole, by whoever had its bytes).
    Text(&'a str),
    Value(&'a Value),
}

impl Source<'_> {
    fn decode<T: DeserializeOwned>(self) -> Option<T> {
        match self {
            Source::Text(text) => serde_json::from_str(text).ok(),
            Source::Value(value) => T::deserialize(value).ok(),
        }
    }
}

/// The outcome of the typed path.
pub(crate) enum Typed {
    /// Served: the reply of a request, `None` for a notification.
    Done(Option<Reply>),
    /// Not decoded, or not placed in an era: for the `Value` walk.
    Fallback,
}

/// Members of `_meta` that the modern wire defines; a legacy message carrying one is read by the
/// `Value` walk (modern `_meta` makes it modern; a legacy `logLevel` is honoured there).
const RESERVED_META: &str = "io.modelcontextprotocol/";

/// Members the modern params of `tools/call`, `prompts/get` and `resources/read` type, which the
/// legacy params do not know (the `Value` walk checks their type as the modern params do).
const MODERN_ONLY_PARAMS: [&str; 2] = ["inputResponses", "requestState"];

#[cfg(test)]
pub(super) mod differential;

impl Server {
    pub(crate) fn typed(&self, session: &Arc<Session>, source: Source<'_>, mirrors: Option<&Mirrors>) -> Typed {
        let legacy_guess = match mirrors {
            Some(Mirrors { protocol_version: Some(version), .. }) => LEGACY_VERSIONS.contains(&&**version),
            // HTTP without the version header: the legacy wire (`initialize` opens a session).
            Some(_) => true,
            None => session.is_initialized_legacy(),
        };
        if legacy_guess {
            self.typed_legacy(session, source, mirrors)
        } else {
            self.typed_modern(session, source, mirrors)
        }
    }

    // ---------------------------------------------------------------- modern (2026-07-28)

    fn typed_modern(&self, session: &Arc<Session>, source: Source<'_>, mirrors: Option<&Mirrors>) -> Typed {
        if let Source::Text(text) = source
            && let Some(reply) = self.lane(session, text, mirrors, Era::Modern)
        {
            return Typed::Done(Some(reply));
        }
        let Some(message) = source.decode::<ClientMessage>() else { return Typed::Fallback };
        let request = match message {
            ClientMessage::Request(request) => request,
            // A known notification method with an `id` is a request of an unknown method: the
            // union keeps the `id` among the unknown members.
            ClientMessage::Notification(ClientNotification::Cancelled(cancelled)) => {
                if cancelled.extra.contains_key("id") {
                    return Typed::Fallback;
                }
                session.cancel(&cancelled.params.request_id);
                return Typed::Done(None);
            }
            ClientMessage::Notification(ClientNotification::Other(notification)) => {
                self.notification(session, &notification.method, notification.params.map(Value::Object));
                return Typed::Done(None);
            }
            _ => return Typed::Fallback,
        };
        let view = modern_view(&request);
        let has_modern_meta = view.meta.as_ref().is_some_and(|m| m.version_present);
        let legacy = match mirrors.and_then(|m| m.protocol_version.as_deref()) {
            Some(version) => LEGACY_VERSIONS.contains(&version) && !has_modern_meta,
            None => {
                !has_modern_meta
                    && (matches!(view.view.method, legacy::InitializeRequest::METHOD | legacy::PingRequest::METHOD)
                        || session.is_initialized_legacy())
            }
        };
        if legacy {
            // `initialize` or `ping` opening a legacy session: read again in the legacy types.
            return self.typed_legacy(session, source, mirrors);
        }
        let id = request.id().clone();
        let served = self.check_modern(&view.view, mirrors).and_then(|version| {
            let call = self.modern_call(request)?;
            self.serve_modern(session, &id, Cow::Borrowed(version), call, None, mirrors)
        });
        Typed::Done(Some(match served {
            Ok(reply) => reply,
            Err(Rejection(error, disposition)) => {
                crate::telemetry::refused_with(&error);
                Reply::ready(Outgoing::error_as(Some(&id), &error, disposition))
            }
        }))
    }

    /// The handler call of a checked modern request, by its generated variant.
    pub(super) fn modern_call(&self, request: ClientRequest) -> Result<Decoded, Rejection> {
        if !self.serves(request.method()) {
            return Err(unknown(request.method()));
        }
        Ok(match request {
            ClientRequest::Discover(_) => Decoded::Discover,
            ClientRequest::ListTools(r) => Decoded::ListTools(Listing { cursor: r.params.cursor, meta: r.params.meta }),
            ClientRequest::CallTool(r) => Decoded::CallTool(r.params, None),
            ClientRequest::ListResources(r) => {
                Decoded::ListResources(Listing { cursor: r.params.cursor, meta: r.params.meta })
            }
            ClientRequest::ListResourceTemplates(r) => {
                Decoded::ListTemplates(Listing { cursor: r.params.cursor, meta: r.params.meta })
            }
            ClientRequest::ReadResource(r) => Decoded::Read(r.params),
            ClientRequest::ListPrompts(r) => {
                Decoded::ListPrompts(Listing { cursor: r.params.cursor, meta: r.params.meta })
            }
            ClientRequest::GetPrompt(r) => Decoded::GetPrompt(r.params),
            ClientRequest::Complete(r) => Decoded::Complete(r.params),
            ClientRequest::SubscriptionsListen(r) => Decoded::Listen(r.params),
            // Extension methods: only their params are read, from the object the union kept.
            ClientRequest::Other(r) => {
                return self.decode_extension(&r.method, r.params.map(Value::Object).unwrap_or_default());
            }
            other => return Err(unknown(other.method())),
        })
    }

    // ---------------------------------------------------------------- legacy (2024-11-05 … 2025-11-25)

    fn typed_legacy(&self, session: &Arc<Session>, source: Source<'_>, mirrors: Option<&Mirrors>) -> Typed {
        if let Source::Text(text) = source
            && session.is_initialized_legacy()
            && let Some(reply) = self.lane(session, text, mirrors, Era::Legacy)
        {
            return Typed::Done(Some(reply));
        }
        let Some(message) = source.decode::<legacy::ClientMessage>() else { return Typed::Fallback };
        let request = match message {
            legacy::ClientMessage::Request(request) => request,
            legacy::ClientMessage::Notification(notification) => {
                use legacy::ClientNotification as N;
                let extra = match &notification {
                    N::Cancelled(n) => Some(&n.extra),
                    N::Initialized(n) => Some(&n.extra),
                    N::Progress(n) => Some(&n.extra),
                    N::TaskStatus(n) => Some(&n.extra),
                    N::RootsListChanged(n) => Some(&n.extra),
                    _ => None,
                };
                // As above: with an `id`, a request.
                if extra.is_some_and(|extra| extra.contains_key("id")) {
                    return Typed::Fallback;
                }
                match notification {
                    legacy::ClientNotification::Cancelled(cancelled) => {
                        if let Some(id) = &cancelled.params.request_id {
                            session.cancel(id);
                        }
                    }
                    legacy::ClientNotification::Initialized(_) => session.update(|legacy| legacy.initialized = true),
                    other => tracing::debug!(method = other.method(), "notification ignored"),
                }
                return Typed::Done(None);
            }
            // Answers to the server's requests, and anything newer.
            _ => return Typed::Fallback,
        };
        let Some(meta) = legacy_meta(&request) else { return Typed::Fallback };
        if meta.is_some_and(|extra| extra.keys().any(|key| key.starts_with(RESERVED_META))) {
            return Typed::Fallback;
        }
        // Guessed from a missing version header: only `initialize` and `ping` open the legacy
        // era on a new session (anything else is a modern request that lacks the header).
        let opening = matches!(request, legacy::ClientRequest::Initialize(_) | legacy::ClientRequest::Ping(_));
        if !opening && !session.is_initialized_legacy() && source_has_no_version(mirrors) {
            return Typed::Fallback;
        }
        let id = request.id().clone();
        let error = |error: &ErrorObject| Typed::Done(Some(Reply::ready(Outgoing::error(Some(&id), error))));
        let empty = || Typed::Done(Some(Reply::ready(Outgoing::result(&id, &json!({})))));
        let request = match request {
            legacy::ClientRequest::Initialize(r) => {
                return Typed::Done(Some(Reply::ready(self.initialize_with(session, &id, r.params))));
            }
            legacy::ClientRequest::Ping(_) => return empty(),
            request => request,
        };
        let state = session
            .read_legacy(|l| l.version.clone().map(|v| (v, l.client_capabilities.clone(), l.client_info.clone())));
        let Some((version, client_capabilities, client_info)) = state else {
            // Legacy HTTP: a request without a session SHOULD be a 400.
            let error =
                ErrorObject::invalid_request(format!("{} before initialize: send initialize first", request.method()));
            return Typed::Done(Some(Reply::ready(Outgoing::error_as(Some(&id), &error, Disposition::BadRequest))));
        };
        // Moved into the one request's `_meta` that a branch below builds: not cloned again.
        let settled = super::settled_version(&version);
        let handshake = Handshake { version, client_capabilities, client_info };
        if !self.serves(request.method()) {
            return error(&unknown(request.method()).0);
        }
        let call = match request {
            legacy::ClientRequest::SetLevel(r) => {
                let Ok(level) = r.params.level.to_string().parse() else { return Typed::Fallback };
                session.update(|legacy| legacy.log_level = Some(level));
                return empty();
            }
            legacy::ClientRequest::Subscribe(_) | legacy::ClientRequest::Unsubscribe(_) if self.has_resources() => {
                let (subscribe, uri) = match request {
                    legacy::ClientRequest::Subscribe(r) => (true, r.params.uri),
                    legacy::ClientRequest::Unsubscribe(r) => (false, r.params.uri),
                    _ => unreachable!("matched above"),
                };
                if let Some(refusal) = self.subscribe_refused(session, &id, &uri, subscribe) {
                    return Typed::Done(Some(Reply::ready(refusal)));
                }
                session.update(|legacy| {
                    if subscribe {
                        legacy.subscriptions.insert(uri);
                    } else {
                        legacy.subscriptions.remove(&uri);
                    }
                });
                return empty();
            }
            legacy::ClientRequest::CallTool(r) => {
                let p = r.params;
                if has_modern_only(&p.extra) {
                    return Typed::Fallback;
                }
                let (token, extra) = p.meta.map(|m| (m.progress_token, m.extra)).unwrap_or_default();
                let mut params = mcp_types::CallToolRequestParams::new(handshake.meta(token, extra), p.name);
                params.arguments = p.arguments;
                params.extra = p.extra;
                Decoded::CallTool(params, None)
            }
            legacy::ClientRequest::ReadResource(r) => {
                let p = r.params;
                if has_modern_only(&p.extra) {
                    return Typed::Fallback;
                }
                let (token, extra) = p.meta.map(|m| (m.progress_token, m.extra)).unwrap_or_default();
                let mut params = mcp_types::ReadResourceRequestParams::new(handshake.meta(token, extra), p.uri);
                params.extra = p.extra;
                Decoded::Read(params)
            }
            legacy::ClientRequest::GetPrompt(r) => {
                let p = r.params;
                if has_modern_only(&p.extra) {
                    return Typed::Fallback;
                }
                let (token, extra) = p.meta.map(|m| (m.progress_token, m.extra)).unwrap_or_default();
                let mut params = mcp_types::GetPromptRequestParams::new(handshake.meta(token, extra), p.name);
                params.arguments = p.arguments;
                params.extra = p.extra;
                Decoded::GetPrompt(params)
            }
            legacy::ClientRequest::ListTools(r) => Decoded::ListTools(handshake.listing(r.params)),
            legacy::ClientRequest::ListResources(r) => Decoded::ListResources(handshake.listing(r.params)),
            legacy::ClientRequest::ListResourceTemplates(r) => Decoded::ListTemplates(handshake.listing(r.params)),
            legacy::ClientRequest::ListPrompts(r) => Decoded::ListPrompts(handshake.listing(r.params)),
            // Not reached: `legacy_meta` sent these to the `Value` walk.
            legacy::ClientRequest::Complete(_) | legacy::ClientRequest::Other(_) => return Typed::Fallback,
            other => return error(&unknown(other.method()).0),
        };
        Typed::Done(Some(self.dispatch(session, id, Era::Legacy, settled, call, None)))
    }
}

/// What a legacy session's handshake settled, given to each of its requests as the `_meta` a
/// modern request carries.
struct Handshake {
    version: String,
    client_capabilities: Arc<mcp_types::ClientCapabilities>,
    client_info: Option<Arc<mcp_types::Implementation>>,
}

impl Handshake {
    fn meta(self, progress_token: Option<mcp_types::ProgressToken>, extra: JsonObject) -> RequestMetaObject {
        RequestMetaObject {
            client_capabilities: Box::new(Arc::unwrap_or_clone(self.client_capabilities)),
            client_info: self.client_info.map(|info| Box::new(Arc::unwrap_or_clone(info))),
            log_level: None,
            protocol_version: self.version,
            progress_token,
            extra,
        }
    }

    fn listing(self, params: Option<legacy::PaginatedRequestParams>) -> Listing {
        let (cursor, (token, extra)) = params
            .map(|p| (p.cursor, p.meta.map(|m| (m.progress_token, m.extra)).unwrap_or_default()))
            .unwrap_or_default();
        Listing { cursor, meta: self.meta(token, extra) }
    }
}

/// A modern request as the checks see it, and whether its `_meta` has `protocolVersion`.
struct Viewed<'a> {
    view: ModernView<'a>,
    meta: Option<MetaPresence>,
}

struct MetaPresence {
    version_present: bool,
}

fn modern_view(request: &ClientRequest) -> Viewed<'_> {
    let (version, name) = match request {
        ClientRequest::Discover(r) => typed(&r.params.meta, None),
        ClientRequest::ListResources(r) => typed(&r.params.meta, None),
        ClientRequest::ListResourceTemplates(r) => typed(&r.params.meta, None),
        ClientRequest::ReadResource(r) => typed(&r.params.meta, Some(&r.params.uri)),
        ClientRequest::SubscriptionsListen(r) => typed(&r.params.meta, None),
        ClientRequest::ListPrompts(r) => typed(&r.params.meta, None),
        ClientRequest::GetPrompt(r) => typed(&r.params.meta, Some(&r.params.name)),
        ClientRequest::ListTools(r) => typed(&r.params.meta, None),
        ClientRequest::CallTool(r) => typed(&r.params.meta, Some(&r.params.name)),
        ClientRequest::Complete(r) => typed(&r.params.meta, None),
        other => return untyped_view(other.method(), other_params(other)),
    };
    Viewed {
        view: ModernView { method: request.method(), meta: Some(MetaView { version, capabilities: true }), name },
        meta: Some(MetaPresence { version_present: true }),
    }
}

fn other_params(request: &ClientRequest) -> Option<&JsonObject> {
    match request {
        ClientRequest::Other(r) => r.params.as_ref(),
        _ => None,
    }
}

fn typed<'a>(meta: &'a RequestMetaObject, name: Option<&'a str>) -> (Option<&'a str>, Option<&'a str>) {
    (Some(meta.protocol_version.as_str()), name)
}

/// The view of a request whose params the union kept as an object.
fn untyped_view<'a>(method: &'a str, params: Option<&'a JsonObject>) -> Viewed<'a> {
    let meta = params.and_then(|p| p.get("_meta"));
    Viewed {
        view: ModernView {
            method,
            meta: meta.map(|meta| MetaView {
                version: meta.get(PROTOCOL_VERSION).and_then(Value::as_str),
                capabilities: meta.get(CLIENT_CAPABILITIES).is_some(),
            }),
            name: mcp_types::http_headers::name_member(method).and_then(|member| params?.get(member)?.as_str()),
        },
        meta: meta.map(|meta| MetaPresence { version_present: meta.get(PROTOCOL_VERSION).is_some() }),
    }
}

/// The members of a legacy request's `_meta` that its type does not define: `Some(None)` when it
/// has no `_meta`; `None` for a request the typed path leaves to the `Value` walk: the tasks of
/// 2025-11-25 (refused there as unknown), `completion/complete` (its params differ between the
/// eras) and methods the revision does not define (`health`, and the modern-only methods,
/// refused there).
fn legacy_meta(request: &legacy::ClientRequest) -> Option<Option<&JsonObject>> {
    use legacy::ClientRequest as R;
    Some(match request {
        R::Initialize(r) => r.params.meta.as_ref().map(|m| &m.extra),
        R::Ping(r) => r.params.as_ref().and_then(|p| p.meta.as_ref()).map(|m| &m.extra),
        R::ListResources(r) => r.params.as_ref().and_then(|p| p.meta.as_ref()).map(|m| &m.extra),
        R::ListResourceTemplates(r) => r.params.as_ref().and_then(|p| p.meta.as_ref()).map(|m| &m.extra),
        R::ListPrompts(r) => r.params.as_ref().and_then(|p| p.meta.as_ref()).map(|m| &m.extra),
        R::ListTools(r) => r.params.as_ref().and_then(|p| p.meta.as_ref()).map(|m| &m.extra),
        R::ReadResource(r) => r.params.meta.as_ref().map(|m| &m.extra),
        R::Subscribe(r) => r.params.meta.as_ref().map(|m| &m.extra),
        R::Unsubscribe(r) => r.params.meta.as_ref().map(|m| &m.extra),
        R::GetPrompt(r) => r.params.meta.as_ref().map(|m| &m.extra),
        R::CallTool(r) => r.params.meta.as_ref().map(|m| &m.extra),
        R::SetLevel(r) => r.params.meta.as_ref().map(|m| &m.extra),
        _ => return None,
    })
}

/// Whether the request came with mirrors (HTTP) but no `MCP-Protocol-Version` among them.
fn source_has_no_version(mirrors: Option<&Mirrors>) -> bool {
    mirrors.is_some_and(|m| m.protocol_version.is_none())
}

fn has_modern_only(extra: &JsonObject) -> bool {
    MODERN_ONLY_PARAMS.iter().any(|member| extra.contains_key(*member))
}
