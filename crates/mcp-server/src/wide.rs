//! Bounded decode: a message is measured before any value is built from it. A decoded
//! `serde_json::Value` costs far more than its text for small containers (`{"a":[]}`, 8 bytes,
//! becomes a map node of about 650 bytes), so a body of many tiny objects would take 80× its
//! size, more where it is decoded twice. Counting the objects and arrays first (a scan for
//! `{`, `[` and string bounds, no allocation) refuses such a body for what its text costs.
//! Scalars are at most 16× their text (a 32-byte `Value` for `0,`); strings keep their length.

use memchr::{memchr2, memchr3};
use serde_json::value::RawValue;

use crate::message::{Disposition, Outgoing, Reply};
use mcp_types::{ErrorObject, RequestId};

/// How many objects and arrays `text` holds outside its strings, counting up to `limit + 1`.
/// The text need not be valid JSON: this bounds what a parser would build from it.
pub(crate) fn containers(text: &[u8], limit: usize) -> usize {
    let (mut count, mut at) = (0, 0);
    while let Some(offset) = text.get(at..).and_then(|rest| memchr3(b'"', b'{', b'[', rest)) {
        at += offset + 1;
        if text[at - 1] != b'"' {
            count += 1;
            if count > limit {
                break;
            }
            continue;
        }
        // Inside a string: skip to its closing quote, stepping over escapes.
        loop {
            let Some(offset) = text.get(at..).and_then(|rest| memchr2(b'"', b'\\', rest)) else {
                return count;
            };
            at += offset + 1;
            if text[at - 1] == b'"' {
                break;
            }
            at += 1;
        }
    }
    count
}

/// The refusal of a message with more than `limit` objects and arrays, or `None` when it has
/// at most that many. A text shorter than the limit cannot exceed it and is not scanned.
pub(crate) fn too_wide(text: &[u8], limit: usize) -> Option<Reply> {
    if text.len() <= limit || containers(text, limit) <= limit {
        return None;
    }
    let message = format!(
        "Invalid Request: the message holds more than {limit} JSON objects and arrays \
         (Options::max_json_containers); send it in smaller parts"
    );
    let id = request_id(text);
    Some(Reply::ready(Outgoing::error_as(id.as_ref(), &ErrorObject::invalid_request(message), Disposition::BadRequest)))
}

/// The `id` of a request object, read without building any other member.
fn request_id(text: &[u8]) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    struct IdOnly<'a> {
        #[serde(default, borrow)]
        id: Option<&'a RawValue>,
    }
    let probe: IdOnly<'_> = serde_json::from_slice(text).ok()?;
    serde_json::from_str(probe.id?.get()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_objects_and_arrays_outside_strings() {
        assert_eq!(containers(br#"{"a":[{"b":[]}],"c":"{[\"[{"}"#, 100), 4);
        assert_eq!(containers(br#"["\\", {}]"#, 100), 2);
        assert_eq!(containers(br#""unterminated \"{["#, 100), 0);
        assert_eq!(containers(br#"[[[[[[[[[["#, 3), 4, "stops counting past the limit");
        assert_eq!(containers(br#"["\"#, 100), 1, "an escape at the end does not read past it");
    }

    #[test]
    fn a_wide_message_is_refused_with_its_id_and_the_limit_named() {
        let wide = format!(r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{{"x":[{}]}}}}"#, ["{}"; 50].join(","));
        assert!(too_wide(wide.as_bytes(), 60).is_none());
        let reply = too_wide(wide.as_bytes(), 40).expect("refused");
        let text = &reply.known_response().expect("a ready response").json;
        assert!(text.contains(r#""id":7"#), "{text}");
        assert!(text.contains("-32600") && text.contains("Options::max_json_containers"), "{text}");
    }
}
