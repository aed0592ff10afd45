//! Streamable HTTP request headers of 2026-07-28: the value encoding shared by `Mcp-Name` and
//! `Mcp-Param-*`, and the `x-mcp-header` tool-schema annotation (validity and extraction).

use base64::Engine as _;
use serde_json::Value;

/// Encodes a header value as the spec says: plain when it is visible ASCII, space or tab without
/// edge whitespace (and does not itself look like the sentinel), otherwise
/// `=?base64?{base64 of the UTF-8 bytes}?=`.
pub fn encode_header_value(value: &str) -> String {
    let plain_chars = value.chars().all(|c| c == ' ' || c == '\t' || ('\x21'..='\x7e').contains(&c));
    let edge_space = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let looks_encoded = value.starts_with("=?base64?") && value.ends_with("?=");
    if plain_chars && !edge_space && !looks_encoded {
        value.to_owned()
    } else {
        format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(value.as_bytes()))
    }
}

/// One `x-mcp-header` annotation of a tool: the header suffix and the property path from the
/// root of `inputSchema` (a chain of `properties` keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    pub name: String,
    pub path: Vec<String>,
}

/// Why a tool's `x-mcp-header` annotations make its definition invalid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidHeaderAnnotation(pub String);

impl std::fmt::Display for InvalidHeaderAnnotation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// Data-valued keywords: their contents are instances, not schemas, so a key named
/// `x-mcp-header` inside them is not an annotation.
const DATA_KEYWORDS: &[&str] = &["const", "default", "enum", "examples"];

/// Collects and validates the `x-mcp-header` annotations of a tool input schema.
pub fn header_params(schema: &Value) -> Result<Vec<HeaderParam>, InvalidHeaderAnnotation> {
    let mut found = Vec::new();
    walk(schema, true, &mut Vec::new(), &mut found)?;
    let mut seen = std::collections::HashSet::new();
    for param in &found {
        if !seen.insert(param.name.to_ascii_lowercase()) {
            return Err(InvalidHeaderAnnotation(format!(
                "x-mcp-header {:?} is used more than once (names compare case-insensitively)",
                param.name
            )));
        }
    }
    Ok(found)
}

fn walk(
    value: &Value,
    reachable: bool,
    path: &mut Vec<String>,
    found: &mut Vec<HeaderParam>,
) -> Result<(), InvalidHeaderAnnotation> {
    match value {
        Value::Object(map) => {
            if let Some(annotation) = map.get("x-mcp-header") {
                let at =
                    if path.is_empty() { "the schema root".to_owned() } else { format!("property {}", path.join(".")) };
                if !reachable || path.is_empty() {
                    return Err(InvalidHeaderAnnotation(format!(
                        "x-mcp-header on {at} is not on a property reachable through `properties` alone"
                    )));
                }
                let Some(name) = annotation.as_str() else {
                    return Err(InvalidHeaderAnnotation(format!("x-mcp-header on {at} is not a string")));
                };
                if name.is_empty() {
                    return Err(InvalidHeaderAnnotation(format!("x-mcp-header on {at} is empty")));
                }
                if let Some(bad) = name.chars().find(|c| !is_tchar(*c)) {
                    return Err(InvalidHeaderAnnotation(format!(
                        "x-mcp-header {name:?} on {at} contains {bad:?}, which is not allowed in a header name"
                    )));
                }
                match map.get("type").and_then(Value::as_str) {
                    Some("string" | "integer" | "boolean") => {}
                    other => {
                        return Err(InvalidHeaderAnnotation(format!(
                            "x-mcp-header {name:?} on {at} whose type is {}, not string, integer or boolean",
                            other.map_or_else(|| "not a single primitive".to_owned(), |t| format!("{t:?}"))
                        )));
                    }
                }
                found.push(HeaderParam { name: name.to_owned(), path: path.clone() });
            }
            for (key, child) in map {
                if DATA_KEYWORDS.contains(&key.as_str()) || key == "x-mcp-header" {
                    continue;
                }
                if key == "properties"
                    && let Value::Object(props) = child
                {
                    for (prop, sub) in props {
                        path.push(prop.clone());
                        let result = walk(sub, reachable, path, found);
                        path.pop();
                        result?;
                    }
                    continue;
                }
                walk(child, false, path, found)?;
            }
            Ok(())
        }
        Value::Array(items) => items.iter().try_for_each(|item| walk(item, false, path, found)),
        _ => Ok(()),
    }
}

/// The `Mcp-Param-*` headers for one call: `(header name, encoded value)`; absent and `null`
/// arguments produce no header.
pub fn param_headers(
    params: &[HeaderParam],
    arguments: Option<&serde_json::Map<String, Value>>,
) -> Vec<(String, String)> {
    let Some(arguments) = arguments else { return Vec::new() };
    let mut headers = Vec::new();
    for param in params {
        let mut value = arguments.get(&param.path[0]);
        for key in &param.path[1..] {
            value = value.and_then(|v| v.get(key));
        }
        let text = match value {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            Some(Value::Bool(b)) => b.to_string(),
            _ => continue,
        };
        headers.push((format!("Mcp-Param-{}", param.name), encode_header_value(&text)));
    }
    headers
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn encodes_like_the_spec_examples() {
        assert_eq!(encode_header_value("us-west1"), "us-west1");
        assert_eq!(encode_header_value(""), "");
        assert_eq!(encode_header_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encode_header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_header_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(encode_header_value("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
        assert_eq!(encode_header_value("a\tb"), "a\tb");
        assert_eq!(encode_header_value("\tb"), "=?base64?CWI=?=");
    }

    #[test]
    fn collects_nested_properties_and_extracts_values() {
        let schema = json!({"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "opts":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"}}},
            "flag":{"type":"boolean","x-mcp-header":"Method"},
            "plain":{"type":"string","default":{"x-mcp-header":"ignored"}}}});
        let params = header_params(&schema).unwrap();
        assert_eq!(params.len(), 3);
        let args = json!({"region":"é","opts":{"n":42},"flag":false,"plain":"x"});
        let mut headers = param_headers(&params, args.as_object());
        headers.sort();
        assert_eq!(
            headers,
            vec![
                ("Mcp-Param-Method".to_owned(), "false".to_owned()),
                ("Mcp-Param-N".to_owned(), "42".to_owned()),
                ("Mcp-Param-Region".to_owned(), "=?base64?w6k=?=".to_owned()),
            ]
        );
        assert!(param_headers(&params, json!({"region":null}).as_object()).is_empty());
    }

    #[test]
    fn rejects_every_invalid_annotation() {
        let cases = [
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}),
            json!({"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}),
            json!({"type":"object","properties":{"a":{"type":"array","x-mcp-header":"A"}}}),
            json!({"type":"object","properties":{"a":{"type":"null","x-mcp-header":"A"}}}),
            json!({"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}}),
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A B"}}}),
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A:B"}}}),
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Ä"}}}),
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A\r\n"}}}),
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X"},
                                                 "b":{"type":"string","x-mcp-header":"x"}}}),
            json!({"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}),
            json!({"type":"object","oneOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}),
            json!({"type":"object","$defs":{"d":{"type":"string","x-mcp-header":"A"}}}),
        ];
        for case in cases {
            assert!(header_params(&case).is_err(), "accepted {case}");
        }
    }
}
