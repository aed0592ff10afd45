//! Rust names for schema names: type names, member idents, and the definitions that become
//! hand-written or plain-JSON types instead.

use super::super::ty::Ty;

/// Definitions replaced by hand-written types shared by every revision.
pub(super) fn replacement(def: &str) -> Option<(Ty, &'static str)> {
    Some(match def {
        "RequestId" => (Ty::Path("crate::RequestId"), "crate::RequestId"),
        "ProgressToken" => (Ty::Path("crate::ProgressToken"), "crate::ProgressToken"),
        "Error" => (Ty::Path("crate::ErrorObject"), "crate::ErrorObject"),
        "ResultType" => (Ty::Path("crate::ResultType"), "crate::ResultType"),
        _ => return None,
    })
}

/// Definitions whose schema form is worse than plain JSON (the schema's `JSONValue` rejects
/// fractions and `null`, which the TypeScript source allows).
pub(super) fn json_alias(def: &str) -> Option<Ty> {
    Some(match def {
        "JSONValue" => Ty::Value,
        "JSONObject" => Ty::Object,
        "JSONArray" => Ty::Vec(Box::new(Ty::Value)),
        _ => return None,
    })
}

pub fn rust_type_name(def: &str) -> String {
    match def {
        "Result" => "ResultBase".into(),
        "Request" => "RequestBase".into(),
        "Notification" => "NotificationBase".into(),
        _ => def.replace("JSONRPC", "JsonRpc").replace("JSON", "Json").replace("URL", "Url"),
    }
}

pub fn pascal(s: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            if upper {
                out.extend(c.to_uppercase());
            } else {
                out.push(c);
            }
            upper = false;
        } else {
            upper = true;
        }
    }
    out
}

/// `io.modelcontextprotocol/protocolVersion` → `protocol_version`, `_meta` → `meta`, `isError` → `is_error`.
pub fn field_ident(json: &str) -> String {
    let base = json.rsplit('/').next().unwrap_or(json);
    let mut out = String::new();
    for (i, c) in base.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_matches('_').to_string()
}
