//! Free-form JSON: the object type the schema leaves open, and decoding such JSON on its own
//! exactly as the generated types decode their free-form members.

/// A JSON object with arbitrary members (`_meta` values, tool arguments, capability settings).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// Decodes free-form JSON on its own (a `JSONValue`, `JSONObject` or `JSONArray`, a `_meta`
/// object, tool arguments) as the generated types decode their free-form members: every number
/// kept by its value or refused, never silently changed. `serde_json::from_str::<Value>` would
/// turn the integer `18446744073709551616` into the float `1.8446744073709552e19`; this refuses
/// it, and keeps `1e+21`, `-0.0` and every other number a `Value` holds exactly.
///
/// `T` is `serde_json::Value`, [`JsonObject`], or a `Vec` or `BTreeMap` of them.
///
/// ```
/// let value: serde_json::Value = mcp_types::free_form_from_str(r#"{"big":1e+21,"zero":-0.0}"#).unwrap();
/// assert_eq!(value.to_string(), r#"{"big":1e+21,"zero":-0.0}"#);
/// let refused = mcp_types::free_form_from_str::<serde_json::Value>("[18446744073709551616]").unwrap_err();
/// assert!(refused.to_string().contains("18446744073709551616"));
/// ```
pub fn free_form_from_str<T: crate::private::FreeFormType>(text: &str) -> serde_json::Result<T> {
    crate::private::free_form_from_text(text)
}
