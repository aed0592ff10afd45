//! A tool source's result written out as the source has its text ([`ToolAnswer::Raw`]): each
//! member copied as it is spelled, but for what the server writes for the caller's era:
//! `resultType` (added on the modern wire; left out on the legacy wire, with the caching hints)
//! and the server identity in `_meta` (its own, never the source's). One scan of the text, one
//! copy into the response; nothing decoded.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::*;
use crate::dynamic::ToolAnswer;

impl Server {
    /// The response carrying a tool's result as text. Text whose members cannot be written out
    /// as they are (a `_meta` that is no object, a member this writes twice) is decoded and
    /// written as a typed result, or refused as one would be.
    pub(super) fn respond_raw_tool(&self, id: &RequestId, era: Era, raw: mcp_types::RawResult) -> Outgoing {
        let server_info =
            (era == Era::Modern && self.inner.options.server_info_in_results).then_some(self.inner.info_json.as_str());
        if let Some((json, is_error)) = write_out(id, era, &raw, server_info) {
            let message = Outgoing::response(json);
            return if is_error { message.tool_error() } else { message };
        }
        match ToolAnswer::Raw(raw).decode() {
            Ok(mut result) => {
                if let Some(meta) = &mut result.meta {
                    meta.server_info = None;
                }
                self.respond_tool(id, era, result)
            }
            Err(error) => Outgoing::error(Some(id), &error.into_error_object()),
        }
    }
}

/// The response to `id` carrying `raw` for `era`, with `server_info` (the identity's JSON) in
/// `_meta`, and whether it says `isError: true`; `None` when the members cannot be written out as
/// they are. The members are those a scan found ([`mcp_types::RawResult::members`]), or are found
/// here.
fn write_out(
    id: &RequestId,
    era: Era,
    raw: &mcp_types::RawResult,
    server_info: Option<&str>,
) -> Option<(String, bool)> {
    let result = raw.get();
    let mut members = MemberList::new();
    match raw.members() {
        Some(scanned) => members.extend(scanned.map(|(name, value)| (Cow::Borrowed(name), value))),
        None => split_into(result, &mut members)?,
    }
    let named = |name: &str| members.iter().filter(|(key, _)| key == name).count();
    if named("resultType") > 1 || named("_meta") > 1 || named("isError") > 1 {
        return None;
    }
    // Written as text: each piece is already UTF-8, so the whole is not checked again.
    let mut json = String::with_capacity(result.len() + server_info.map_or(0, str::len) + 128);
    json.push_str("{\"jsonrpc\":\"2.0\",\"id\":");
    match id {
        RequestId::Integer(n) => json.push_str(itoa::Buffer::new().format(*n)),
        id => json.push_str(&serde_json::to_string(id).ok()?),
    }
    json.push_str(",\"result\":{");
    let mut object = Object::new();
    if era == Era::Modern && named("resultType") == 0 {
        object.plain_member(&mut json, "resultType", "\"complete\"");
    }
    let mut is_error = false;
    for (key, value) in &members {
        match &**key {
            "resultType" | "ttlMs" | "cacheScope" if era == Era::Legacy => {}
            "_meta" => write_meta(&mut json, &mut object, value, server_info)?,
            name => {
                is_error |= name == "isError" && *value == "true";
                object.member(&mut json, key, value);
            }
        }
    }
    if named("_meta") == 0 {
        write_meta(&mut json, &mut object, "{}", server_info)?;
    }
    json.push_str("}}");
    Some((json, is_error))
}

/// `_meta` without the source's identity, with `server_info` if given; left out if empty.
fn write_meta(json: &mut String, object: &mut Object, meta: &str, server_info: Option<&str>) -> Option<()> {
    let mut members = MemberList::new();
    split_into(meta, &mut members)?;
    // Written in place, and taken back if it has no member.
    let (start, before) = (json.len(), *object);
    object.plain_member(json, "_meta", "{");
    let mut written = Object::new();
    for (key, value) in &members {
        if key != SERVER_INFO {
            written.member(json, key, value);
        }
    }
    if let Some(info) = server_info {
        written.plain_member(json, SERVER_INFO, info);
    }
    json.push('}');
    if written.is_empty() {
        json.truncate(start);
        *object = before;
    }
    Some(())
}

/// Whether an object being written has members yet: a comma goes before each but the first.
#[derive(Clone, Copy)]
struct Object {
    empty: bool,
}

impl Object {
    fn new() -> Object {
        Object { empty: true }
    }

    fn is_empty(&self) -> bool {
        self.empty
    }

    /// Writes `"name":value`, `value` being JSON text and `name` a member's name as [`split_into`]
    /// gives it: borrowed, it is written as it was (with nothing to escape); owned, it was
    /// unescaped, and is escaped again.
    #[expect(clippy::ptr_arg, reason = "whether the name is borrowed is what tells how to write it")]
    fn member(&mut self, json: &mut String, name: &Cow<'_, str>, value: &str) {
        match name {
            Cow::Borrowed(name) => self.plain_member(json, name, value),
            Cow::Owned(name) => {
                self.separate(json);
                json.push_str(&serde_json::to_string(name).expect("a string encodes"));
                json.push(':');
                json.push_str(value);
            }
        }
    }

    /// Writes `"name":value` for a `name` with no character that needs an escape.
    fn plain_member(&mut self, json: &mut String, name: &str, value: &str) {
        self.separate(json);
        json.push('"');
        json.push_str(name);
        json.push_str("\":");
        json.push_str(value);
    }

    fn separate(&mut self, json: &mut String) {
        if !std::mem::replace(&mut self.empty, false) {
            json.push(',');
        }
    }
}

/// Puts the members of an object's text into `members`, in order: each name (unescaped) and its
/// value's text as it is spelled; `None` if it is no object. Found by the scan `RawResult` makes
/// ([`mcp_types::RawResult::scan_members`]); what it leaves (a name written with escapes) is read
/// by serde_json, which unescapes it.
fn split_into<'a>(object: &'a str, members: &mut MemberList<'a>) -> Option<()> {
    if mcp_types::RawResult::scan_members(object, |name, value| members.push((Cow::Borrowed(name), value))).is_some() {
        return Some(());
    }
    members.clear();
    let Members(read) = serde_json::from_str(object).ok()?;
    members.extend(read.into_iter().map(|(name, value)| (name, value.get())));
    Some(())
}

/// An object's members: as many as a result usually has are kept without an allocation, filled
/// in place (a list returned would be copied on its way out).
type MemberList<'a> = smallvec::SmallVec<[(Cow<'a, str>, &'a str); 8]>;

/// An object's members in order, each value's text as it is spelled.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MembersVisitor)
    }
}

struct MembersVisitor;

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = Members<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members = Vec::with_capacity(map.size_hint().unwrap_or(8));
        while let Some(Name(name)) = map.next_key()? {
            members.push((name, map.next_value()?));
        }
        Ok(Members(members))
    }
}

/// A member's name, borrowed from the text unless it has escapes.
pub(super) struct Name<'a>(pub(super) Cow<'a, str>);

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NameVisitor;
        impl<'de> Visitor<'de> for NameVisitor {
            type Value = Name<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }

            fn visit_borrowed_str<E: de::Error>(self, name: &'de str) -> Result<Self::Value, E> {
                Ok(Name(Cow::Borrowed(name)))
            }

            fn visit_str<E: de::Error>(self, name: &str) -> Result<Self::Value, E> {
                Ok(Name(Cow::Owned(name.to_owned())))
            }
        }
        deserializer.deserialize_str(NameVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Results the typed path accepts, written every way this file handles.
    const RESULTS: &[&str] = &[
        r#"{"content":[]}"#,
        r#"{"content":[{"type":"text","text":"a \"quoted\"\nline"}],"isError":true}"#,
        r#"{"resultType":"complete","content":[],"structuredContent":{"n":[1,2.5,-0.0]}}"#,
        r#"{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}}}"#,
        r#"{"content":[],"_meta":{"trace":"t","io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}}}"#,
        r#"{"content":[],"_meta":{}}"#,
        r#"{ "content" : [ ] , "vendor" : { "k" : null } , "isError" : false }"#,
        r#"{"content":[],"\u0076endor":"v","ttlMs":5,"cacheScope":"public"}"#,
    ];

    /// The split of a valid object is serde_json's reading of it: the same names, each value's
    /// text the same value.
    #[test]
    fn an_object_is_split_where_serde_json_reads_its_members() {
        let objects = [
            "{}",
            " { } ",
            r#"{"a":1}"#,
            "{\r\n \"a\" :\t[ 1 , { \"b\" : \"}]\" } ] ,\"c\":\"x\\\\\",\"d\":{\"e\":[[],{}]},\"f\":-0.5e3 }",
            r#"{"s":"a \"quoted\" } ], { [ string","t":"\\","u":"\u00e9\n","v":null,"w":true,"x":false}"#,
            r#"{"deep":[[[{"k":[{"k":"}"}]}]]],"last":{}}"#,
            r#"{"n\u0061me":1,"name":2}"#,
            r#"{"a\"b":1}"#,
            r#"{"é":"ü","ключ":[1]}"#,
        ];
        // An escape and a quote at each place in a word of eight bytes, and names of each length.
        let shifted = (0..20).flat_map(|n| {
            let pad = "é".repeat(n / 2) + &"x".repeat(n % 2);
            [
                format!(r#"{{"{pad}":"{pad}\"}}{pad}","l":[1]}}"#),
                format!(r#"{{"k":"{pad}\\","{pad}":{{"{pad}":"\\\"{pad}"}}}}"#),
            ]
        });
        let objects: Vec<String> = objects.into_iter().map(str::to_owned).chain(shifted).collect();
        for text in objects.iter().map(String::as_str) {
            let Members(want) = serde_json::from_str(text).unwrap();
            let mut got = MemberList::new();
            split_into(text, &mut got).unwrap();
            assert_eq!(got.len(), want.len(), "{text}");
            for ((name, value), (want_name, want_value)) in got.iter().zip(&want) {
                assert_eq!(name, want_name, "{text}");
                assert_eq!(
                    serde_json::from_str::<Value>(value).unwrap(),
                    serde_json::from_str::<Value>(want_value.get()).unwrap(),
                    "{text}: {value}"
                );
            }
            // A name written with escapes is left to serde_json.
            let escaped = text.contains("\\u0061") || text.contains("a\\\"b");
            assert_eq!(mcp_types::RawResult::scan_members(text, |_, _| {}).is_none(), escaped, "{text}");
            assert_eq!(got.iter().any(|(name, _)| matches!(name, Cow::Owned(_))), escaped, "{text}");
        }
        for text in ["[]", "1", r#""{}""#, "", "{", r#"{"a""#, r#"{"a":"#, r#"{"a":1"#, r#"{"a":"1}"#, "{}}", "{} x"] {
            assert!(split_into(text, &mut MemberList::new()).is_none(), "{text}");
        }
    }

    fn parsed(message: &Outgoing) -> Value {
        serde_json::from_str(&message.json).unwrap_or_else(|e| panic!("{e}: {}", message.json))
    }

    #[test]
    fn a_raw_result_goes_out_as_its_decoded_value_would() {
        for info_in_results in [true, false] {
            let options = Options { server_info_in_results: info_in_results, ..Default::default() };
            let server = Server::builder("t", "1").options(options).build().unwrap();
            for text in RESULTS {
                let ids =
                    [RequestId::Integer(7.into()), RequestId::Integer(-12_345_678_901_234), RequestId::from("a\"b")];
                for (era, id) in [Era::Modern, Era::Legacy].into_iter().flat_map(|era| ids.clone().map(|id| (era, id)))
                {
                    let raw = mcp_types::RawResult::from_text((*text).to_owned()).unwrap();
                    let mut typed: mcp_types::CallToolResult = raw.decode().unwrap();
                    let written = server.respond_raw_tool(&id, era, raw);
                    // The same result scanned (its members found by the scan, not here) is
                    // written the same; only a name with an escape is left to serde_json.
                    match mcp_types::RawResult::scan(text) {
                        Some(scanned) => {
                            let again = server.respond_raw_tool(&id, era, scanned);
                            assert_eq!(again.json, written.json, "{text}");
                            assert_eq!(again.outcome, written.outcome, "{text}");
                        }
                        None => assert!(text.contains("\\u0076"), "the scan refused {text}"),
                    }
                    if let Some(meta) = &mut typed.meta {
                        meta.server_info = None;
                    }
                    let expected = server.respond_tool(&id, era, typed);
                    let mut got = parsed(&written);
                    let mut want = parsed(&expected);
                    // The typed path keeps an empty `_meta`; the raw one leaves it out.
                    for message in [&mut got, &mut want] {
                        let result = message["result"].as_object_mut().unwrap();
                        if result.get("_meta").is_some_and(|meta| meta.as_object().is_some_and(|m| m.is_empty())) {
                            result.remove("_meta");
                        }
                    }
                    assert_eq!(got, want, "{era:?}, serverInfo {info_in_results}: {text}\n{}", written.json);
                    assert_eq!(written.outcome, expected.outcome, "{text}");
                }
            }
        }
    }
}
