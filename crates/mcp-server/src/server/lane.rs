//! The lane of a `tools/call`: the request is read only as far as the server's checks need (the
//! envelope, the tool's name and `_meta`, borrowed from the body in one pass), and its arguments
//! stay text. It is checked as the typed path checks it (the same functions). Then:
//! - a call the tool source relays ([`Server::relaying_source`]) goes to [`Server::relayed`] (`relay.rs`);
//! - any other is served the typed path's way (the same dispatch, span, context and handler),
//!   with its arguments still text: a tool route's handler is lent them and decodes them straight
//!   into its type, so no `Value` is built for them; middleware, a schema check with the
//!   `validation` feature, a call that may become a task and a tool source have them read into
//!   the params first, as the typed decode would have.
//!
//! A request the lane does not take is served by the typed path, which refuses what the lane's
//! checks refused, in its own words.

use mcp_types::{JsonObject, LoggingLevel, ProgressToken};
use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::*;
use crate::server::caller_meta::{CallerMeta, client_parts};
use crate::server::raw_results::Name;
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

/// The params of a `tools/call` the lane takes: nothing but these three (no `inputResponses`, no
/// `requestState`, no task). `_meta` is the request's own in the 2026-07-28 era; on a legacy
/// session, an object of members no revision defines, or none.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params<'a, M> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    /// `null` too is kept, as text: only an object is taken.
    #[serde(borrow, default, deserialize_with = "present")]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta")]
    meta: M,
}

fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(Some)
}

/// A modern `_meta`, in one pass: the client's capabilities and identity kept as text (decoded
/// once a client, `caller_meta`), the other members the 2026-07-28 revision defines read, and
/// every member it does not define (a trace context, say) read as the generated decode reads it,
/// numbers exact. A defined member given twice or a required one missing is an error, and then the
/// generated decode reads the `_meta` (and refuses it in its own words).
struct ModernMeta<'a> {
    version: Cow<'a, str>,
    capabilities: &'a RawValue,
    /// `null` too is kept, as text (the generated decode refuses it).
    info: Option<&'a RawValue>,
    log_level: Option<LoggingLevel>,
    progress_token: Option<ProgressToken>,
    extra: JsonObject,
}

impl<'de> Deserialize<'de> for ModernMeta<'de> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ModernMetaVisitor)
    }
}

struct ModernMetaVisitor;

impl<'de> Visitor<'de> for ModernMetaVisitor {
    type Value = ModernMeta<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a `RequestMetaObject` object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        const VERSION: &str = "io.modelcontextprotocol/protocolVersion";
        const CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
        let (mut version, mut capabilities, mut info, mut log_level, mut progress_token) =
            (None, None, None, None, None);
        let mut extra = JsonObject::new();
        while let Some(Name(key)) = map.next_key()? {
            // A member that is present is read as its type: a `null` as the type reads it (as the
            // generated decode does), not as absent.
            match &*key {
                VERSION => once(&mut version, map.next_value::<Name<'de>>()?.0, VERSION)?,
                CAPABILITIES => once(&mut capabilities, map.next_value()?, CAPABILITIES)?,
                "io.modelcontextprotocol/clientInfo" => once(&mut info, map.next_value()?, "clientInfo")?,
                "io.modelcontextprotocol/logLevel" => once(&mut log_level, map.next_value()?, "logLevel")?,
                "progressToken" => once(&mut progress_token, map.next_value()?, "progressToken")?,
                _ => {
                    let text: &RawValue = map.next_value()?;
                    let value = mcp_types::free_form_from_str::<Value>(text.get()).map_err(de::Error::custom)?;
                    extra.insert(key.into_owned(), value);
                }
            }
        }
        Ok(ModernMeta {
            version: version.ok_or_else(|| de::Error::missing_field(VERSION))?,
            capabilities: capabilities.ok_or_else(|| de::Error::missing_field(CAPABILITIES))?,
            info,
            log_level,
            progress_token,
            extra,
        })
    }
}

fn once<T, E: de::Error>(slot: &mut Option<T>, value: T, name: &'static str) -> Result<(), E> {
    if slot.replace(value).is_some() { Err(E::duplicate_field(name)) } else { Ok(()) }
}

impl<'a> ModernMeta<'a> {
    /// The version and the [`CallerMeta`]; `None` where the generated decode would refuse the
    /// client's capabilities or identity.
    fn read(self) -> Option<(Cow<'a, str>, CallerMeta)> {
        let (client_capabilities, client_info) = client_parts(self.capabilities, self.info)?;
        let (log_level, progress_token, extra) = (self.log_level, self.progress_token, self.extra);
        let meta = CallerMeta { client_capabilities, client_info, log_level, progress_token, extra };
        Some((self.version, meta))
    }
}

/// A checked `tools/call`, as the lane read it.
pub(super) struct LaneCall<'a> {
    pub(super) id: RequestId,
    pub(super) name: Cow<'a, str>,
    pub(super) arguments: Option<&'a RawValue>,
    /// The request's `_meta`; a legacy session's is built from what its handshake declared.
    pub(super) meta: CallerMeta,
    pub(super) version: Cow<'static, str>,
    /// A legacy session has set a log level (`logging/setLevel`).
    pub(super) logs: bool,
}

impl Server {
    /// The reply to a `tools/call` the lane takes; `None` for a request it leaves to the typed
    /// path. A legacy request is taken only on a session its handshake opened.
    pub(super) fn lane(
        &self,
        session: &Arc<Session>,
        text: &str,
        mirrors: Option<&Mirrors>,
        era: Era,
    ) -> Option<Reply> {
        #[cfg(test)]
        if tests::CLOSED.with(std::cell::Cell::get) {
            return None;
        }
        if !self.has_tools() {
            return None;
        }
        // Any other method is not read twice: a `prompts/get` has the same params, a list's fail
        // late. (A method name written with escapes is left to the typed path.)
        if !text.contains("\"tools/call\"") {
            return None;
        }
        let call = self.lane_call(session, text, mirrors, era)?;
        if let Some(source) = self.relaying_source(session, &call, mirrors, era) {
            return Some(self.relayed(session, source, call, era));
        }
        self.served_from_text(session, call, mirrors, era)
    }

    fn lane_call<'a>(
        &self,
        session: &Session,
        text: &'a str,
        mirrors: Option<&Mirrors>,
        era: Era,
    ) -> Option<LaneCall<'a>> {
        let is_call = |jsonrpc: &str, method: &str| jsonrpc == "2.0" && method == "tools/call";
        match era {
            Era::Modern => {
                // A `_meta` with other members (or none that fit) is read again, whole.
                let (id, name, arguments, version, meta) = match serde_json::from_str(text) {
                    Ok(Envelope::<'_, Params<'_, ModernMeta<'_>>> { jsonrpc, id, method, params }) => {
                        if !is_call(&jsonrpc, &method) {
                            return None;
                        }
                        let Params { name, arguments, meta } = params;
                        let (version, meta) = meta.read()?;
                        (id, name, arguments, version, meta)
                    }
                    Err(_) => {
                        #[cfg(test)]
                        tests::REREAD.with(|reread| reread.set(reread.get() + 1));
                        let envelope: Envelope<'_, Params<'_, RequestMetaObject>> = serde_json::from_str(text).ok()?;
                        if !is_call(&envelope.jsonrpc, &envelope.method) {
                            return None;
                        }
                        let Params { name, arguments, mut meta } = envelope.params;
                        let version = Cow::Owned(std::mem::take(&mut meta.protocol_version));
                        (envelope.id, name, arguments, version, CallerMeta::from(meta))
                    }
                };
                let view = ModernView {
                    method: "tools/call",
                    meta: Some(MetaView { version: Some(&version), capabilities: true }),
                    name: Some(&name),
                };
                let version = Cow::Borrowed(self.check_modern(&view, mirrors).ok()?);
                Some(LaneCall { id, name, arguments, meta, version, logs: false })
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
                    let version = super::settled_version(legacy.version.as_deref()?);
                    let logs = legacy.log_level.is_some();
                    Some((version, Arc::clone(&legacy.client_capabilities), legacy.client_info.clone(), logs))
                })?;
                let (version, client_capabilities, client_info, logs) = handshake;
                let meta =
                    CallerMeta { client_capabilities, client_info, log_level: None, progress_token: None, extra };
                let (id, name, arguments) = (envelope.id, params.name, params.arguments);
                Some(LaneCall { id, name, arguments, meta, version, logs })
            }
        }
    }

    /// A call served as the typed path serves it, with its arguments as text; `None` when they are
    /// not text that serde_json reads as the typed decode does ([`reads_as_decoded`]). Where the
    /// text is not lent to a route's handler, `run` reads it into the params first.
    fn served_from_text(
        &self,
        session: &Arc<Session>,
        call: LaneCall<'_>,
        mirrors: Option<&Mirrors>,
        era: Era,
    ) -> Option<Reply> {
        if !call.arguments.is_none_or(|arguments| reads_as_decoded(arguments.get())) {
            return None;
        }
        #[cfg(test)]
        tests::TAKEN.with(|taken| taken.set(taken.get() + 1));
        // The params' `_meta` is filled by `dispatch` where something sees the params whole.
        let params = CallToolRequestParams::new(Default::default(), call.name.into_owned());
        let decoded = Decoded::CallTool(params, call.arguments.map(RawValue::to_owned));
        let meta = Some(call.meta);
        Some(match era {
            Era::Modern => match self.serve_modern(session, &call.id, call.version, decoded, meta, mirrors) {
                Ok(reply) => reply,
                Err(Rejection(error, disposition)) => {
                    crate::telemetry::refused_with(&error);
                    Reply::ready(Outgoing::error_as(Some(&call.id), &error, disposition))
                }
            },
            Era::Legacy => self.dispatch(session, call.id, Era::Legacy, call.version, decoded, meta),
        })
    }
}

/// Whether `text` (one JSON value, already read as JSON) is an object that serde_json reads into
/// the same value as the generated decode of a free-form member does (`mcp_types`' `FreeForm`),
/// so that a handler may decode it straight into its type. That decode reads a number by its
/// literal where serde_json's `f64` is ambiguous; so none is taken with an exponent, more than 18
/// integer digits or a negative zero. serde_json checks a `\u` escape of a surrogate only when it
/// reads the string, and nesting only when it builds a value: none of those either.
pub(super) fn reads_as_decoded(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.first() != Some(&b'{') {
        return false;
    }
    let (mut at, mut depth) = (0, 0u32);
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'"' => {
                // To the closing quote, from escape to escape (a long string costs a search, not a
                // look at each byte).
                at += 1;
                while let Some(found) = bytes.get(at..).and_then(|rest| memchr::memchr2(b'"', b'\\', rest)) {
                    at += found;
                    if bytes[at] == b'"' {
                        break;
                    }
                    let escape = bytes.get(at + 1..at + 4).unwrap_or_default();
                    if matches!(escape, [b'u', b'd' | b'D', b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F']) {
                        return false;
                    }
                    at += 2;
                }
            }
            b'{' | b'[' => {
                depth += 1;
                if depth > 64 {
                    return false;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'-' | b'0'..=b'9' => {
                let start = at;
                at += usize::from(byte == b'-');
                let digits = bytes[at..].iter().take_while(|b| b.is_ascii_digit()).count();
                if digits > 18 {
                    return false;
                }
                at += digits;
                if bytes.get(at) == Some(&b'.') {
                    at += 1 + bytes[at + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
                }
                let negative_zero = byte == b'-' && bytes[start + 1..at].iter().all(|b| matches!(b, b'0' | b'.'));
                if negative_zero || matches!(bytes.get(at), Some(b'e' | b'E')) {
                    return false;
                }
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    true
}
