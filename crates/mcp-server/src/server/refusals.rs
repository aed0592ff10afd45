//! How a request is refused before it is served: [`Rejection`] and the errors that word each
//! refusal (a bad envelope, missing `_meta`, params the generated types did not accept, an
//! unknown or removed method, too many requests in flight), and the view of a modern request
//! that its checks read.

use super::*;

/// A request refused before it was served.
pub(crate) struct Rejection(pub(crate) ErrorObject, pub(crate) Disposition);

pub(super) fn bad_request(code: i64, message: impl Into<String>) -> Rejection {
    Rejection(ErrorObject::new(code, message), Disposition::BadRequest)
}

/// Whether an error about `message` answers it as a request (with its id): it has a `method`,
/// or `params` and neither `result` nor `error`.
pub(super) fn is_request_like(message: &serde_json::Map<String, Value>) -> bool {
    message.contains_key("method")
        || (message.contains_key("params") && !message.contains_key("result") && !message.contains_key("error"))
}

/// The refusal of a request beyond [`Options::max_in_flight`].
pub(crate) fn busy(limit: usize) -> ErrorObject {
    ErrorObject::internal_error(format!(
        "Server busy: {limit} requests are already in flight on this session (Options::max_in_flight); \
         retry when one of them has finished"
    ))
}

pub(super) fn invalid(id: Option<&RequestId>, message: &str) -> Reply {
    Reply::ready(Outgoing::error_as(id, &ErrorObject::invalid_request(message), Disposition::BadRequest))
}

pub(super) fn missing_meta(has_meta: bool, key: &str) -> Rejection {
    let message = match has_meta {
        false => "Invalid params: params._meta is required (with protocolVersion and clientCapabilities)".to_owned(),
        true => format!("Invalid params: params._meta is missing `{key}`"),
    };
    bad_request(error_codes::INVALID_PARAMS, message)
}

/// A modern request as its checks see it, whichever way it was decoded.
pub(crate) struct ModernView<'a> {
    pub(crate) method: &'a str,
    /// `params._meta`, if present.
    pub(crate) meta: Option<MetaView<'a>>,
    /// The member `Mcp-Name` mirrors (`name`, `uri`, `taskId`), when a string.
    pub(crate) name: Option<&'a str>,
}

pub(crate) struct MetaView<'a> {
    /// `protocolVersion`, when a string.
    pub(crate) version: Option<&'a str>,
    /// Whether `clientCapabilities` is present.
    pub(crate) capabilities: bool,
}

/// The refusal of a request whose params the generated `ClientRequest` did not accept: the
/// union's error without its own prefix (`` `ClientRequest` `tools/call`: at `params.name` ``), so
/// that it reads as the params type's (`` at `name` ``).
pub(super) fn params_refused(method: &str, error: &serde_json::Error) -> Rejection {
    let text = error.to_string();
    let inner = text
        .strip_prefix("`ClientRequest` `")
        .and_then(|rest| rest.strip_prefix(method))
        .and_then(|rest| rest.strip_prefix("`: "))
        .map(|rest| match (rest.strip_prefix("at `params`: "), rest.strip_prefix("at `params.")) {
            (Some(inner), _) => inner.to_owned(),
            (None, Some(inner)) => format!("at `{inner}"),
            (None, None) => rest.to_owned(),
        })
        .unwrap_or(text);
    Rejection(ErrorObject::invalid_params(format!("Invalid params for {method}: {inner}")), Disposition::Ok)
}

/// Decodes params into the typed form a method defines; the refusal names the method.
pub(super) fn typed<T: DeserializeOwned>(method: &str, params: Value) -> Result<T, Rejection> {
    serde_json::from_value(params).map_err(|e| {
        Rejection(ErrorObject::invalid_params(format!("Invalid params for {method}: {e}")), Disposition::Ok)
    })
}

/// The refusal of a method this server does not serve (on the modern wire: a 404).
pub(crate) fn unknown(method: &str) -> Rejection {
    let error = if REMOVED_METHODS.contains(&method) {
        ErrorObject::new(
            error_codes::METHOD_NOT_FOUND,
            format!("Method not found: {method} was removed in 2026-07-28 (no handshake; send _meta on every request)"),
        )
    } else {
        ErrorObject::method_not_found(method)
    };
    Rejection(error, Disposition::NotFound)
}

/// Where in a message (valid JSON) the first number is that no `Value` keeps exactly: the path of
/// its innermost member (`params.arguments.n`, `0.params` in a batch).
pub(crate) fn unkept_number_at(text: &[u8]) -> Option<String> {
    use serde_json::value::RawValue;
    let kept = |raw: &RawValue| mcp_types::free_form_from_str::<Value>(raw.get()).is_ok();
    let mut raw: &RawValue = serde_json::from_slice(text).ok()?;
    let mut path: Vec<String> = Vec::new();
    loop {
        let inner: Option<(String, &RawValue)> = match raw.get().as_bytes().first() {
            Some(b'{') => serde_json::from_str::<BTreeMap<String, &RawValue>>(raw.get())
                .ok()?
                .into_iter()
                .find(|(_, value)| !kept(value)),
            Some(b'[') => serde_json::from_str::<Vec<&RawValue>>(raw.get())
                .ok()?
                .into_iter()
                .enumerate()
                .find(|(_, value)| !kept(value))
                .map(|(i, value)| (i.to_string(), value)),
            _ => None,
        };
        match inner {
            Some((key, value)) => {
                path.push(key);
                raw = value;
            }
            None => return Some(path.join(".")),
        }
    }
}

/// The `_meta` of a `tasks/get` or `tasks/cancel` request. The extension's schema leaves `_meta`
/// out of their params (ext-tasks e4345978; every 2026-07-28 request carries one), so the
/// generated params keep it with the members they do not know.
pub(super) fn task_request_meta(
    method: &str,
    extra: &mut serde_json::Map<String, Value>,
) -> Result<mcp_types::RequestMetaObject, Rejection> {
    let Some(meta) = extra.remove("_meta") else { return Ok(Default::default()) };
    serde_json::from_value(meta).map_err(|e| {
        Rejection(ErrorObject::invalid_params(format!("Invalid params for {method}: `_meta`: {e}")), Disposition::Ok)
    })
}

/// The part of `required` that `declared` lacks, if any.
pub(super) fn missing_capabilities(
    required: &ClientCapabilities,
    declared: &ClientCapabilities,
) -> Option<ClientCapabilities> {
    let mut missing = ClientCapabilities::default();
    if required.sampling.is_some() && declared.sampling.is_none() {
        missing.sampling = required.sampling.clone();
    }
    if required.elicitation.is_some() && declared.elicitation.is_none() {
        missing.elicitation = required.elicitation.clone();
    }
    if required.roots.is_some() && declared.roots.is_none() {
        missing.roots = required.roots.clone();
    }
    for (name, settings) in required.extensions.iter().flatten() {
        if !declared.extensions.as_ref().is_some_and(|e| e.contains_key(name)) {
            missing.extensions.get_or_insert_with(Default::default).insert(name.clone(), settings.clone());
        }
    }
    (missing != ClientCapabilities::default()).then_some(missing)
}
