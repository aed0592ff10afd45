//! A request's `_meta` as the server holds it while serving: the client's capabilities and
//! identity shared, the rest the request's own. A client sends the same capabilities and identity
//! with each request of the modern wire, and a legacy session declared them once, so they are
//! decoded once and shared ([`Shared`]), not decoded, copied and dropped per request.

use std::cell::RefCell;

use mcp_types::{ClientCapabilities, Implementation, JsonObject, LoggingLevel, ProgressToken, RequestMetaObject};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::*;

pub(crate) struct CallerMeta {
    pub(crate) client_capabilities: Arc<ClientCapabilities>,
    pub(crate) client_info: Option<Arc<Implementation>>,
    pub(crate) log_level: Option<LoggingLevel>,
    pub(crate) progress_token: Option<ProgressToken>,
    /// Members no revision defines (a trace context, say).
    pub(crate) extra: JsonObject,
}

impl From<RequestMetaObject> for CallerMeta {
    fn from(meta: RequestMetaObject) -> Self {
        CallerMeta {
            client_capabilities: Arc::from(meta.client_capabilities),
            client_info: meta.client_info.map(Arc::from),
            log_level: meta.log_level,
            progress_token: meta.progress_token,
            extra: meta.extra,
        }
    }
}

impl CallerMeta {
    /// The `_meta` of a request's params, for what is given the params whole (layers, route
    /// middleware, tool sources).
    pub(crate) fn to_object(&self, protocol_version: &str) -> RequestMetaObject {
        RequestMetaObject {
            client_capabilities: Box::new(ClientCapabilities::clone(&self.client_capabilities)),
            client_info: self.client_info.as_deref().cloned().map(Box::new),
            log_level: self.log_level,
            protocol_version: protocol_version.to_owned(),
            progress_token: self.progress_token.clone(),
            extra: self.extra.clone(),
        }
    }
}

/// What the lane last decoded on this thread, by its text: the next request of the same client
/// gives the same text, and gets the same value without decoding it again. The value is the text's
/// decode and nothing else, so it is the same whoever sends that text.
#[derive(Default)]
struct Shared {
    capabilities: Option<(Box<str>, Arc<ClientCapabilities>)>,
    info: Option<(Box<str>, Arc<Implementation>)>,
}

/// Text longer than this is decoded each time, not kept.
const KEPT_TEXT: usize = 1024;

thread_local! {
    static SHARED: RefCell<Shared> = RefCell::default();
}

/// `text` decoded as the generated decode of `_meta` decodes the member; `None` where it does not
/// decode.
fn shared<T: DeserializeOwned>(slot: &mut Option<(Box<str>, Arc<T>)>, text: &RawValue) -> Option<Arc<T>> {
    let text = text.get();
    if let Some((last, value)) = slot
        && **last == *text
    {
        return Some(Arc::clone(value));
    }
    let value = Arc::new(serde_json::from_str::<T>(text).ok()?);
    if text.len() <= KEPT_TEXT {
        *slot = Some((text.into(), Arc::clone(&value)));
    }
    Some(value)
}

/// The client's capabilities and identity of a modern request's `_meta`, given as text.
pub(super) fn client_parts(
    capabilities: &RawValue,
    info: Option<&RawValue>,
) -> Option<(Arc<ClientCapabilities>, Option<Arc<Implementation>>)> {
    SHARED.with_borrow_mut(|shared| {
        let capabilities = self::shared(&mut shared.capabilities, capabilities)?;
        let info = match info {
            Some(info) => Some(self::shared(&mut shared.info, info)?),
            None => None,
        };
        Some((capabilities, info))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn the_same_text_gets_the_same_value_and_other_text_its_own() {
        let info = raw(r#"{"name":"a","version":"1"}"#);
        let (capabilities, first) = client_parts(&raw("{}"), Some(&info)).unwrap();
        let (_, again) = client_parts(&raw("{}"), Some(&info)).unwrap();
        let (first, again) = (first.unwrap(), again.unwrap());
        assert!(Arc::ptr_eq(&first, &again), "decoded once");
        assert_eq!((first.name.as_str(), first.version.as_str()), ("a", "1"));
        assert_eq!(*capabilities, ClientCapabilities::default());

        let (_, other) = client_parts(&raw("{}"), Some(&raw(r#"{"name":"b","version":"1"}"#))).unwrap();
        assert_eq!(other.unwrap().name, "b");
        let (elicits, none) = client_parts(&raw(r#"{"elicitation":{}}"#), None).unwrap();
        assert!(elicits.elicitation.is_some() && none.is_none());
    }

    #[test]
    fn text_that_does_not_decode_is_refused_every_time() {
        let info = raw(r#"{"name":"a"}"#);
        assert!(client_parts(&raw("{}"), Some(&info)).is_none(), "no version");
        assert!(client_parts(&raw("{}"), Some(&info)).is_none(), "and not kept");
        assert!(client_parts(&raw("[]"), None).is_none());
        assert!(client_parts(&raw("{}"), Some(&raw("null"))).is_none(), "the generated decode refuses null");
    }

    #[test]
    fn long_text_is_not_kept() {
        let long = format!(r#"{{"name":"{}","version":"1"}}"#, "x".repeat(KEPT_TEXT));
        let (_, first) = client_parts(&raw("{}"), Some(&raw(&long))).unwrap();
        let (_, again) = client_parts(&raw("{}"), Some(&raw(&long))).unwrap();
        assert!(!Arc::ptr_eq(&first.unwrap(), &again.unwrap()));
    }
}
