//! A response's result decoded in one pass over the message, when the response is written as
//! peers write it.

use serde::de::DeserializeOwned;

use crate::common::RequestId;
use crate::json_scan::WHITESPACE as JSON_WHITESPACE;
use crate::raw_result::RawResult;

/// A JSON-RPC response whose `result` is its last member, after `jsonrpc` and `id` (what the
/// official SDKs, and this workspace's servers, write): its result can then be decoded as the
/// request's type straight from the message text, without first finding where the result ends
/// (which [`ServerMessage`](crate::ServerMessage) and [`RawResult`](crate::RawResult) must do,
/// reading the result twice).
///
/// Only the members before `result` are read by [`OnePassResponse::read`]; what follows it is
/// checked by [`OnePassResponse::decode`], which succeeds only when the result is one object
/// that closes the message. Anything else (another member order, a member after the result, an
/// escaped member name, an `error`) reads as `None`: decode such a message the general way,
/// which also gives the precise error for a malformed one.
///
/// ```
/// use mcp_types::{CallToolResult, OnePassResponse, RequestId};
///
/// let text = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}"#;
/// let response = OnePassResponse::read(text).unwrap();
/// assert_eq!(response.id(), &RequestId::Integer(7));
/// let result: CallToolResult = response.decode().unwrap();
/// assert_eq!(result.content.len(), 1);
///
/// // A member after the result: not one pass; the general decode takes it.
/// let later = r#"{"id":7,"result":{"content":[]},"jsonrpc":"2.0"}"#;
/// assert!(OnePassResponse::read(later).unwrap().decode::<CallToolResult>().is_none());
/// ```
#[derive(Debug, Clone)]
pub struct OnePassResponse<'a> {
    id: RequestId,
    /// The text after `"result":`: the result, then the message's closing brace.
    rest: &'a str,
}

impl<'a> OnePassResponse<'a> {
    /// The members before `result` (`jsonrpc` being `"2.0"`, and `id`, once each), if `text`
    /// starts as a response written this way does.
    pub fn read(text: &'a str) -> Option<Self> {
        let mut rest = skip_whitespace(text).strip_prefix('{')?;
        let (mut id, mut jsonrpc) = (None, false);
        loop {
            let (name, after) = plain_string(skip_whitespace(rest))?;
            rest = skip_whitespace(skip_whitespace(after).strip_prefix(':')?);
            match name {
                "result" => break,
                "jsonrpc" if !jsonrpc => {
                    rest = rest.strip_prefix("\"2.0\"")?;
                    jsonrpc = true;
                }
                "id" if id.is_none() => {
                    let (token, after) = scalar(rest)?;
                    id = Some(match plain_integer(token) {
                        Some(n) => RequestId::from(n),
                        None => serde_json::from_str::<RequestId>(token).ok()?,
                    });
                    rest = after;
                }
                _ => return None,
            }
            rest = skip_whitespace(rest).strip_prefix(',')?;
        }
        Some(OnePassResponse { id: id?, rest })
    }

    /// The id of the request this answers.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The result as `T`, if it is one object that ends the message and decodes as `T`.
    pub fn decode<T: DeserializeOwned>(&self) -> Option<T> {
        // `from_str` reads the result to its end and fails on anything after it.
        serde_json::from_str(self.object_text()?).ok()
    }

    /// The result as a [`RawResult`] made by [`RawResult::scan`], if it is one object that ends
    /// the message and the scan takes it.
    pub fn scan(&self) -> Option<RawResult> {
        RawResult::scan(self.object_text()?)
    }

    /// The text between `"result":` and the message's closing brace, if it starts as an object.
    /// Whether it is one object is for its reader to find.
    fn object_text(&self) -> Option<&'a str> {
        let result = self.rest.trim_end_matches(JSON_WHITESPACE).strip_suffix('}')?;
        let result = result.trim_end_matches(JSON_WHITESPACE);
        result.starts_with('{').then_some(result)
    }
}

fn skip_whitespace(text: &str) -> &str {
    text.trim_start_matches(JSON_WHITESPACE)
}

/// A string without escapes at the start of `text`: its content and what follows it.
fn plain_string(text: &str) -> Option<(&str, &str)> {
    let body = text.strip_prefix('"')?;
    let end = body.find(['"', '\\'])?;
    (body.as_bytes()[end] == b'"').then(|| (&body[..end], &body[end + 1..]))
}

/// The token as an `i64`, if it is one written plainly (no leading zero, no sign but `-`): what
/// the id's decode reads it as, without setting up a parse.
fn plain_integer(token: &str) -> Option<i64> {
    let digits = token.strip_prefix('-').unwrap_or(token);
    let plain = matches!(digits.as_bytes(), [b'0'] | [b'1'..=b'9', ..]) && digits.bytes().all(|b| b.is_ascii_digit());
    plain.then(|| token.parse().ok()).flatten()
}

/// A number, or a string without escapes, at the start of `text`: its JSON text and what follows.
fn scalar(text: &str) -> Option<(&str, &str)> {
    if text.starts_with('"') {
        let (content, _) = plain_string(text)?;
        return Some(text.split_at(content.len() + 2));
    }
    let end = text.find(|c: char| !matches!(c, '0'..='9' | '-' | '+' | '.' | 'e' | 'E')).unwrap_or(text.len());
    (end > 0).then(|| text.split_at(end))
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn one_pass(text: &str) -> Option<(RequestId, Value)> {
        let response = OnePassResponse::read(text)?;
        Some((response.id().clone(), response.decode()?))
    }

    #[test]
    fn reads_the_usual_member_orders() {
        let expected = Some((RequestId::Integer(3), serde_json::json!({"a": [1, "}"]})));
        assert_eq!(one_pass(r#"{"jsonrpc":"2.0","id":3,"result":{"a":[1,"}"]}}"#), expected);
        assert_eq!(one_pass(r#"{"id":3,"jsonrpc":"2.0","result":{"a":[1,"}"]}}"#), expected);
        assert_eq!(one_pass(" {\n \"id\" : 3 ,\t\"result\" :{\"a\":[1,\"}\"]} }\r\n"), expected);
        let named = one_pass(r#"{"jsonrpc":"2.0","id":"req-1","result":{}}"#);
        assert_eq!(named, Some((RequestId::String("req-1".into()), serde_json::json!({}))));
    }

    /// An integer id read without a parse is the id the decode reads, and a token it does not
    /// take plainly is decoded as before.
    #[test]
    fn a_plain_integer_id_is_the_decoded_id() {
        for token in ["0", "7", "-3", "-0", "10", "9223372036854775807", "-9223372036854775808"] {
            assert_eq!(
                plain_integer(token).map(RequestId::from),
                serde_json::from_str::<RequestId>(token).ok(),
                "{token}"
            );
        }
        for token in ["", "-", "01", "-01", "+1", "1.0", "1e3", "9223372036854775808", "-9223372036854775809", "\"1\""]
        {
            assert_eq!(plain_integer(token), None, "{token}");
        }
        let big = r#"{"jsonrpc":"2.0","id":9223372036854775808,"result":{}}"#;
        let decoded = serde_json::from_str::<RequestId>("9223372036854775808").unwrap();
        assert_eq!(OnePassResponse::read(big).unwrap().id(), &decoded);
    }

    #[test]
    fn anything_else_is_left_to_the_general_decode() {
        for text in [
            // No id before the result, or one after it.
            r#"{"jsonrpc":"2.0","result":{}}"#,
            r#"{"result":{},"id":1}"#,
            // A member after the result, or two results.
            r#"{"id":1,"result":{},"jsonrpc":"2.0"}"#,
            r#"{"id":1,"result":{},"result":{}}"#,
            // An error, a request, an unknown member, a duplicate id.
            r#"{"id":1,"error":{"code":1,"message":"m"}}"#,
            r#"{"id":1,"method":"ping","result":{}}"#,
            r#"{"id":1,"x":0,"result":{}}"#,
            r#"{"id":1,"id":2,"result":{}}"#,
            // Another version, an escaped name, an id that is no id.
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            r#"{"\u0069d":1,"result":{}}"#,
            r#"{"id":1.5,"result":{}}"#,
            r#"{"id":null,"result":{}}"#,
            // A result that is no object, or not closed, or text after the message.
            r#"{"id":1,"result":[]}"#,
            r#"{"id":1,"result":7}"#,
            r#"{"id":1,"result":{"a":1}"#,
            r#"{"id":1,"result":{}} x"#,
            r#"{"id":1,"result":{}}}"#,
        ] {
            assert_eq!(one_pass(text), None, "{text}");
        }
    }

    /// A scanned result is the result's text, whatever the member order, and nothing else.
    #[test]
    fn a_result_is_scanned_as_it_ends_the_message() {
        let text = r#"{"id":"a","jsonrpc":"2.0","result":{"content":[{"text":"}"}],"isError":false} }"#;
        let result = OnePassResponse::read(text).unwrap().scan().unwrap();
        assert_eq!(result.get(), r#"{"content":[{"text":"}"}],"isError":false}"#);
        assert_eq!(result.members().unwrap().len(), 2);
        for text in
            [r#"{"id":1,"result":{"a":1}"#, r#"{"id":1,"result":{"a":1}}}"#, r#"{"id":1,"result":{"a":1},"x":2}"#]
        {
            assert!(OnePassResponse::read(text).and_then(|r| r.scan()).is_none(), "{text}");
        }
    }

    #[cfg(feature = "v2026_07_28")]
    #[test]
    fn a_result_that_does_not_decode_as_the_type_is_none() {
        use crate::generated::v2026_07_28::CallToolResult;
        let response = OnePassResponse::read(r#"{"id":1,"result":{"content":7}}"#).unwrap();
        assert!(response.decode::<CallToolResult>().is_none());
        let response = OnePassResponse::read(r#"{"id":1,"result":{"content":[]}}"#).unwrap();
        assert!(response.decode::<CallToolResult>().is_some());
    }
}
