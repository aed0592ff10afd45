//! Reading what a server answered: the result's `resultType`, its typed decoding, the server's
//! `serverInfo`, and the versions a `-32022` error offers.

use mcp_types::{CallToolResult, ErrorObject, Implementation, ReadResourceResult};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::core::Answer;
use crate::error::Error;

/// The versions an unsupported-version error (`-32022`) lists in `data.supported`.
pub(super) fn supported_versions(error: &ErrorObject) -> Vec<String> {
    error
        .data
        .as_ref()
        .and_then(|d| d.get("supported"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

pub(crate) fn result_type(result: &RawValue) -> Option<String> {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "resultType")]
        result_type: Option<Value>,
    }
    if !crate::json_text::may_hold(result.get(), crate::json_text::needle!(r#""resultType""#)) {
        return None;
    }
    serde_json::from_str::<Probe>(result.get())
        .ok()
        .and_then(|p| p.result_type)
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
}

/// Whether the result's `resultType` is `wanted`. Most results say `complete`: a plain search for
/// `wanted` answers those without a parse.
pub(crate) fn result_type_is(result: &RawValue, wanted: &str) -> bool {
    crate::json_text::may_hold(result.get(), &memchr::memmem::Finder::new(wanted))
        && result_type(result).as_deref() == Some(wanted)
}

/// Absent `resultType` means complete; only the three multi round-trip methods may answer
/// `input_required`, and only `tools/call` may answer `task`, when the client declared the tasks
/// extension; any other value is invalid. `true`: complete.
pub(super) fn check_result_type(method: &str, result: &RawValue, tasks: bool) -> Result<bool, Error> {
    if says_only_complete(result.get()) {
        return Ok(true);
    }
    match result_type(result).as_deref() {
        None | Some("complete") => Ok(true),
        Some("input_required") if matches!(method, "tools/call" | "prompts/get" | "resources/read") => Ok(false),
        Some(mcp_types::ext::tasks::RESULT_TYPE_TASK) if tasks && method == "tools/call" => Ok(false),
        Some(other) => Err(Error::protocol(format!("{method} returned the unrecognized resultType {other:?}"))),
    }
}

/// Whether `text`, with no `\u00` escape (the only other way to write `resultType` or
/// `complete`, see [`crate::json_text::may_hold`]), holds `"resultType"` exactly once, as
/// `"resultType": "complete"`: the result's own member (complete), or one nested in its content
/// while the result has none (complete too). Most results, multi-line text included, are
/// answered by this search, without a parse.
fn says_only_complete(text: &str) -> bool {
    const NAME: &str = "\"resultType\"";
    if crate::json_text::may_escape_ascii(text) {
        return false;
    }
    let finder = crate::json_text::needle!(NAME);
    let Some(at) = finder.find(text.as_bytes()) else { return false };
    let rest = &text[at + NAME.len()..];
    if finder.find(rest.as_bytes()).is_some() {
        return false;
    }
    rest.trim_start().strip_prefix(':').is_some_and(|value| value.trim_start().starts_with("\"complete\""))
}

/// Decodes a result. Caching hints need no help: the types accept an absent or negative `ttlMs`
/// and an absent `cacheScope` (older servers), as the caching rules tell clients to.
pub(crate) fn decode<T: DeserializeOwned>(method: &str, raw: &RawValue) -> Result<T, Error> {
    serde_json::from_str(raw.get()).map_err(|e| Error::protocol(format!("malformed {method} result: {e}")))
}

/// A `tools/call` result: decoded on arrival, or now.
pub(crate) fn tool_result(answer: Answer) -> Result<CallToolResult, Error> {
    match answer {
        Answer::ToolResult(result) => Ok(*result),
        other => decode("tools/call", &other.into_raw()),
    }
}

/// A `resources/read` result: decoded on arrival, or now.
pub(crate) fn read_result(answer: Answer) -> Result<ReadResourceResult, Error> {
    match answer {
        Answer::ReadResult(result) => Ok(*result),
        other => decode("resources/read", &other.into_raw()),
    }
}

/// `_meta.io.modelcontextprotocol/serverInfo`, or (leniently) a top-level `serverInfo`.
pub(super) fn server_info_of(raw: &RawValue) -> Option<Implementation> {
    let value: Value = serde_json::from_str(raw.get()).ok()?;
    let info = value.pointer("/_meta/io.modelcontextprotocol~1serverInfo").or_else(|| value.get("serverInfo"))?.clone();
    serde_json::from_value(info).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn result_types_are_checked_per_method() {
        // `true`: complete; `false`: a round or a task the caller goes on with.
        assert!(check_result_type("tools/list", &raw(r#"{"tools":[]}"#), false).unwrap());
        assert!(check_result_type("tools/call", &raw(r#"{"content":[{"resultType":"x"}]}"#), false).unwrap());
        assert!(check_result_type("tools/call", &raw(r#"{"content":[],"resultType":"complete"}"#), false).unwrap());
        assert!(!check_result_type("tools/call", &raw(r#"{"resultType":"input_required"}"#), false).unwrap());
        assert!(check_result_type("tools/list", &raw(r#"{"resultType":"input_required"}"#), false).is_err());
        assert!(check_result_type("tools/call", &raw(r#"{"resultType":"weird"}"#), false).is_err());
        assert!(check_result_type("tools/call", &raw(r#"{"resultType":7}"#), false).is_err());
        // A task only for a client that declared the extension, and only from tools/call.
        assert!(!check_result_type("tools/call", &raw(r#"{"resultType":"task"}"#), true).unwrap());
        assert!(check_result_type("tools/call", &raw(r#"{"resultType":"task"}"#), false).is_err());
        assert!(check_result_type("prompts/get", &raw(r#"{"resultType":"task"}"#), true).is_err());
    }

    #[test]
    fn a_result_that_says_complete_once_is_complete_without_a_parse() {
        assert!(says_only_complete(r#"{"content":[],"resultType":"complete"}"#));
        assert!(says_only_complete(r#"{"resultType" : "complete","content":[]}"#));
        // Nested, with none at the top: complete as well.
        assert!(says_only_complete(r#"{"structuredContent":{"resultType":"complete"}}"#));
        // Anything else is left to the parse.
        assert!(!says_only_complete(r#"{"content":[]}"#));
        assert!(!says_only_complete(r#"{"resultType":"task"}"#));
        assert!(!says_only_complete(r#"{"resultType":"completed"}"#));
        assert!(!says_only_complete(r#"{"x":{"resultType":"complete"},"resultType":"task"}"#));
        assert!(!says_only_complete(r#"{"resultType":"complete","x":"\u0041"}"#));
        // Other escapes (a multi-line text, quotes, a path, CJK) leave the search exact.
        assert!(says_only_complete(r#"{"resultType":"complete","content":[{"text":"a\n\"b\"\t C:\\x \u4e2d"}]}"#));
        // `\"resultType"` ends a member name (`x"resultType`), no member of its own: the result
        // has no `resultType` (complete), or has it written again.
        assert!(says_only_complete(r#"{"content":[],"x\"resultType":"complete"}"#));
        assert!(!says_only_complete(r#"{"x\"resultType":"complete","resultType":"task"}"#));
        // Each of these is still judged right by check_result_type.
        assert!(
            check_result_type("tools/list", &raw(r#"{"x":{"resultType":"complete"},"resultType":"task"}"#), true)
                .is_err()
        );
        assert!(
            check_result_type("tools/call", &raw(r#"{"structuredContent":{"resultType":"complete"}}"#), false).is_ok()
        );
    }

    #[test]
    fn result_type_is_read_whether_or_not_its_name_is_escaped() {
        assert_eq!(result_type(&raw(r#"{"content":[]}"#)), None);
        assert_eq!(result_type(&raw(r#"{"resultType":"input_required"}"#)).as_deref(), Some("input_required"));
        // An escaped member name cannot be found by a plain search: the text is parsed instead.
        assert_eq!(result_type(&raw(r#"{"result\u0054ype":"task"}"#)).as_deref(), Some("task"));
        assert_eq!(result_type(&raw(r#"{"text":"a \"quote\"","resultType":"complete"}"#)).as_deref(), Some("complete"));
        // The same answers through the shortcut of `result_type_is`.
        assert!(result_type_is(&raw(r#"{"resultType":"input_required"}"#), "input_required"));
        assert!(result_type_is(&raw(r#"{"result\u0054ype":"task"}"#), "task"));
        assert!(!result_type_is(&raw(r#"{"content":[{"type":"text","text":"task"}]}"#), "task"));
        assert!(!result_type_is(&raw(r#"{"content":[]}"#), "task"));
    }
}
