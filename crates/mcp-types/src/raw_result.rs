//! The `result` of a JSON-RPC response read without the request it answers.

use std::fmt;

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::json_scan::Member;
use crate::private;

/// The `result` member of a response decoded on its own (`ServerMessage::Response`,
/// `JsonRpcResultResponse`): which type it has depends on the request it answers, which the
/// message does not say, so it is kept as its exact JSON text (an object) and decoded by that
/// request's method with [`RawResult::decode`]. Nothing is built until then, and nothing is lost:
/// re-encoding writes the text as received.
///
/// ```
/// use mcp_types::{ListToolsRequest, Request, ServerMessage};
///
/// let text = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[],"ttlMs":0,"cacheScope":"public"}}"#;
/// let ServerMessage::Response(response) = serde_json::from_str(text).unwrap() else { panic!() };
/// let result: <ListToolsRequest as Request>::Result = response.result.decode().unwrap();
/// assert!(result.tools.is_empty());
/// assert_eq!(serde_json::to_string(&ServerMessage::Response(response)).unwrap(), text);
/// ```
#[derive(Clone)]
pub struct RawResult {
    text: Text,
    /// Where each member lies in the text, when [`RawResult::scan`] read it.
    members: Option<Box<[Member]>>,
}

/// A result's text, known to be one JSON object.
#[derive(Clone)]
enum Text {
    /// Read by serde_json.
    Read(Box<RawValue>),
    /// Checked by [`RawResult::scan`].
    Scanned(Box<str>),
}

impl RawResult {
    /// A result from anything that encodes as a JSON object (a typed result, a `JsonObject`).
    pub fn new<T: Serialize + ?Sized>(result: &T) -> serde_json::Result<Self> {
        Self::from_text(serde_json::to_string(result)?)
    }

    /// A result from its JSON text, which must be one object.
    pub fn from_text(text: String) -> serde_json::Result<Self> {
        Self::from_raw(RawValue::from_string(text)?)
    }

    /// A result from JSON text already read as one value (by a message's decode), which must be
    /// an object; it is not read again.
    pub fn from_raw(raw: Box<RawValue>) -> serde_json::Result<Self> {
        if !raw.get().starts_with('{') {
            return Err(de::Error::custom(format_args!(
                "a result must be a JSON object, found `{}`",
                excerpt(raw.get())
            )));
        }
        Ok(RawResult { text: Text::Read(raw), members: None })
    }

    /// A result from the text of one JSON object, checked by a scan of its bytes that also notes
    /// where each member lies ([`RawResult::members`]), without building anything. `None` when
    /// the scan does not take the text: not one valid JSON object, a member name written with an
    /// escape, or nesting more than 128 levels deep. Such text may still be a result:
    /// [`RawResult::from_text`] reads it.
    ///
    /// ```
    /// use mcp_types::RawResult;
    ///
    /// let result = RawResult::scan(r#"{"content":[],"isError":true}"#).unwrap();
    /// let members: Vec<_> = result.members().unwrap().collect();
    /// assert_eq!(members, [("content", "[]"), ("isError", "true")]);
    /// assert!(RawResult::scan(r#"{"content":[],}"#).is_none());
    /// ```
    pub fn scan(text: &str) -> Option<RawResult> {
        // Kept as serde_json keeps a value: without the whitespace around it.
        let text = text.trim_matches(crate::json_scan::WHITESPACE);
        let members = crate::json_scan::object_members(text)?;
        Some(RawResult { text: Text::Scanned(text.into()), members: Some(members.into_boxed_slice()) })
    }

    /// Gives each member of `text` (one JSON object) to `each`, its name and its value's text as
    /// spelled, in order, checked by the scan [`RawResult::scan`] makes, without a copy. `None` when
    /// the scan does not take the text (the members given until then are then no answer): read it
    /// with serde_json.
    pub fn scan_members<'a>(text: &'a str, mut each: impl FnMut(&'a str, &'a str)) -> Option<()> {
        crate::json_scan::for_each_member(text, |name, value| each(&text[name], &text[value]))
    }

    /// Each member's name and its value's text, in order, as spelled, when the result was made by
    /// [`RawResult::scan`] (`None` otherwise: split the text to find them).
    pub fn members(&self) -> Option<impl ExactSizeIterator<Item = (&str, &str)> + '_> {
        let text = self.get();
        let at = |range: &std::ops::Range<u32>| &text[range.start as usize..range.end as usize];
        Some(self.members.as_deref()?.iter().map(move |member| (at(&member.name), at(&member.value))))
    }

    /// The JSON text, as received.
    pub fn get(&self) -> &str {
        match &self.text {
            Text::Read(raw) => raw.get(),
            Text::Scanned(text) => text,
        }
    }

    /// The result as the type the request's method gives it (`<R as Request>::Result`, or
    /// `ResultBase`, `JsonObject`), from its text: numbers exactly as the types decode them.
    pub fn decode<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_str(self.get())
    }
}

fn excerpt(text: &str) -> &str {
    let end = text.char_indices().nth(40).map_or(text.len(), |(at, _)| at);
    &text[..end]
}

impl Default for RawResult {
    /// `{}`: a result with no members.
    fn default() -> Self {
        RawResult::from_raw(RawValue::from_string("{}".to_owned()).expect("`{}` is JSON")).expect("`{}` is an object")
    }
}

impl Eq for RawResult {}

/// The same JSON object, however written (member order, whitespace, escapes, a number's
/// spelling): results read from text and from a `Value` compare equal.
impl PartialEq for RawResult {
    fn eq(&self, other: &Self) -> bool {
        if self.get() == other.get() {
            return true;
        }
        let value = |raw: &RawResult| {
            crate::free_form::free_form_from_str::<serde_json::Value>(raw.get())
                .or_else(|_| serde_json::from_str::<serde_json::Value>(raw.get()))
        };
        matches!((value(self), value(other)), (Ok(a), Ok(b)) if a == b)
    }
}

impl fmt::Debug for RawResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RawResult").field(&self.get()).finish()
    }
}

impl Serialize for RawResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.text {
            Text::Read(raw) => raw.serialize(s),
            // Written as it is: serde_json's serializer takes text as is only from a `RawValue`,
            // which is made by reading the text again (a scanned result is written out by
            // servers as text, not through here).
            Text::Scanned(text) => {
                let raw: &RawValue = serde_json::from_str(text).map_err(serde::ser::Error::custom)?;
                raw.serialize(s)
            }
        }
    }
}

impl<'de> Deserialize<'de> for RawResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // serde_json hands over the text (from a `Value`, its encoding): one scan, one copy.
        let raw = Box::<RawValue>::deserialize(d)?;
        if !raw.get().starts_with('{') {
            return Err(de::Error::invalid_type(de::Unexpected::Other(excerpt(raw.get())), &"a result object"));
        }
        Ok(RawResult { text: Text::Read(raw), members: None })
    }
}

impl private::MatchScore for RawResult {
    fn match_score(value: &serde_json::Value) -> Option<usize> {
        value.is_object().then_some(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_compare_as_json_and_only_objects_decode() {
        let text: RawResult = serde_json::from_str(r#"{"b":[1,2.5],"a":{"x":"\u0041"}}"#).unwrap();
        let reordered: RawResult = serde_json::from_str(r#"{ "a" : {"x":"A"}, "b" : [1, 2.50] }"#).unwrap();
        assert_eq!(text, reordered);
        let from_value: RawResult =
            serde_json::from_value(serde_json::json!({"a": {"x": "A"}, "b": [1, 2.5]})).unwrap();
        assert_eq!(text, from_value);
        assert_ne!(text, RawResult::default());
        // Kept as written, whatever compares equal.
        assert_eq!(serde_json::to_string(&text).unwrap(), r#"{"b":[1,2.5],"a":{"x":"\u0041"}}"#);
        let refused = serde_json::from_str::<RawResult>("[1]").unwrap_err().to_string();
        assert!(refused.contains("a result object"), "{refused}");
        assert!(RawResult::from_text("\"x\"".into()).is_err());
        let raw = |text: &str| RawValue::from_string(text.to_owned()).unwrap();
        assert_eq!(RawResult::from_raw(raw(r#"{"a":1}"#)).unwrap().get(), r#"{"a":1}"#);
        assert!(RawResult::from_raw(raw("[1]")).is_err());
    }

    /// A scanned result is the same result as one serde_json read: it compares, decodes and
    /// encodes the same, and only it knows its members.
    #[test]
    fn a_scanned_result_is_the_result_serde_json_reads() {
        let text = r#"{"content":[{"type":"text","text":"a\"b"}], "isError" :true,"n":1.50}"#;
        let scanned = RawResult::scan(text).unwrap();
        let read = RawResult::from_text(text.to_owned()).unwrap();
        assert_eq!(scanned, read);
        assert_eq!(scanned.get(), read.get());
        assert_eq!(serde_json::to_string(&scanned).unwrap(), serde_json::to_string(&read).unwrap());
        assert_eq!(scanned.decode::<serde_json::Value>().unwrap(), read.decode::<serde_json::Value>().unwrap());
        let members: Vec<_> = scanned.members().unwrap().collect();
        assert_eq!(members, [("content", r#"[{"type":"text","text":"a\"b"}]"#), ("isError", "true"), ("n", "1.50")]);
        assert!(read.members().is_none());
        assert!(scanned.clone().members().is_some());
    }
}
