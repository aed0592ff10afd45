//! Values a transport mirrors beside the body (the HTTP headers `MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*`), and the rules that tie them to the body: the
//! `=?base64?…?=` encoding and the `x-mcp-header` tool-schema annotation.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// The mirrored values of one request, as received (still encoded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mirrors {
    pub protocol_version: Option<String>,
    pub method: Option<String>,
    pub name: Option<String>,
    /// `Mcp-Param-{Name}` headers: the `{Name}` part (any case) and the value.
    pub params: Vec<(String, String)>,
}

/// A tool argument mirrored into a header by an `x-mcp-header` annotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeaderBinding {
    pub name: String,
    pub path: Vec<String>,
    pub kind: Primitive,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Primitive {
    String,
    Integer,
    Boolean,
}

/// Decodes a mirrored value: plain visible ASCII (with inner spaces or tabs), or the
/// `=?base64?{UTF-8 bytes}?=` form.
pub fn decode_value(raw: &str) -> Result<String, String> {
    let raw = raw.trim_matches([' ', '\t']);
    if let Some(encoded) = raw.strip_prefix("=?base64?").and_then(|rest| rest.strip_suffix("?=")) {
        let bytes = STANDARD.decode(encoded).map_err(|_| format!("`{raw}` is not valid base64"))?;
        return String::from_utf8(bytes).map_err(|_| format!("`{raw}` does not decode to UTF-8"));
    }
    if raw.chars().all(|c| matches!(c, '\x21'..='\x7e' | ' ' | '\t')) {
        Ok(raw.to_owned())
    } else {
        Err("a header value has characters that must be base64-encoded".to_owned())
    }
}

/// Encodes a value for a header, base64 when it is not plain visible ASCII.
pub fn encode_value(value: &str) -> String {
    let edge_space = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let looks_encoded = value.starts_with("=?base64?") && value.ends_with("?=");
    let visible = value.chars().all(|c| matches!(c, '\x21'..='\x7e' | ' ' | '\t'));
    let plain = !value.is_empty() && visible && !edge_space && !looks_encoded;
    if plain { value.to_owned() } else { format!("=?base64?{}?=", STANDARD.encode(value)) }
}

pub(crate) fn check_method(mirrors: &Mirrors, method: &str) -> Result<(), String> {
    match &mirrors.method {
        None => Err("The Mcp-Method header is missing".to_owned()),
        Some(raw) => {
            let header = decode_value(raw).map_err(|e| format!("Mcp-Method: {e}"))?;
            if header == method {
                Ok(())
            } else {
                Err(format!("The Mcp-Method header ({header}) does not match the method ({method})"))
            }
        }
    }
}

pub(crate) fn check_name(mirrors: &Mirrors, body: Option<&str>) -> Result<(), String> {
    let Some(raw) = &mirrors.name else { return Err("The Mcp-Name header is missing".to_owned()) };
    let header = decode_value(raw).map_err(|e| format!("Mcp-Name: {e}"))?;
    match body {
        Some(body) if body == header => Ok(()),
        _ => Err(format!("The Mcp-Name header ({header}) does not match the request")),
    }
}

/// Every annotated argument present in the body must be mirrored, with the same value.
pub(crate) fn check_params(mirrors: &Mirrors, bindings: &[HeaderBinding], arguments: &Value) -> Result<(), String> {
    for binding in bindings {
        let mut value = arguments;
        for key in &binding.path {
            value = value.get(key).unwrap_or(&Value::Null);
        }
        if value.is_null() {
            continue;
        }
        let header = format!("Mcp-Param-{}", binding.name);
        let Some((_, raw)) = mirrors.params.iter().find(|(name, _)| name.eq_ignore_ascii_case(&binding.name)) else {
            return Err(format!("The {header} header is missing"));
        };
        let decoded = decode_value(raw).map_err(|e| format!("{header}: {e}"))?;
        let equal = match (binding.kind, value) {
            (Primitive::String, Value::String(body)) => *body == decoded,
            (Primitive::Boolean, Value::Bool(body)) => decoded == if *body { "true" } else { "false" },
            (Primitive::Integer, Value::Number(body)) => {
                decoded.parse::<f64>().ok().zip(body.as_f64()).is_some_and(|(header, body)| header == body)
            }
            // The body has the wrong type; schema validation reports that.
            _ => true,
        };
        if !equal {
            return Err(format!("The {header} header ({decoded}) does not match the argument"));
        }
    }
    Ok(())
}

/// Finds the `x-mcp-header` annotations of an input schema and checks the spec's rules: a token
/// name, unique ignoring case, on a `string`, `integer` or `boolean` property reachable from the
/// root through `properties` alone.
pub(crate) fn bindings(schema: &Value) -> Result<Vec<HeaderBinding>, String> {
    let mut found = Vec::new();
    collect(schema, &mut Vec::new(), &mut found)?;
    let total = count_annotations(schema);
    if total != found.len() {
        return Err("x-mcp-header may only annotate properties reachable through `properties` from the root".into());
    }
    for (index, binding) in found.iter().enumerate() {
        if found[..index].iter().any(|other| other.name.eq_ignore_ascii_case(&binding.name)) {
            return Err(format!("x-mcp-header `{}` is used twice", binding.name));
        }
    }
    Ok(found)
}

fn collect(schema: &Value, path: &mut Vec<String>, found: &mut Vec<HeaderBinding>) -> Result<(), String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return Ok(()) };
    for (key, property) in properties {
        path.push(key.clone());
        if let Some(annotation) = property.get("x-mcp-header") {
            let name = annotation.as_str().unwrap_or_default();
            let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
            if name.is_empty() || !name.chars().all(token) {
                return Err(format!("x-mcp-header `{name}` on `{}` is not a valid header name", path.join(".")));
            }
            let kind = match property.get("type").and_then(Value::as_str) {
                Some("string") => Primitive::String,
                Some("integer") => Primitive::Integer,
                Some("boolean") => Primitive::Boolean,
                _ => return Err(format!("x-mcp-header on `{}` needs a string, integer or boolean", path.join("."))),
            };
            found.push(HeaderBinding { name: name.to_owned(), path: path.clone(), kind });
        }
        collect(property, path, found)?;
        path.pop();
    }
    Ok(())
}

fn count_annotations(value: &Value) -> usize {
    match value {
        Value::Object(map) => {
            usize::from(map.contains_key("x-mcp-header")) + map.values().map(count_annotations).sum::<usize>()
        }
        Value::Array(items) => items.iter().map(count_annotations).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_spec_examples_encode_and_decode() {
        for (plain, encoded) in [
            ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            (" padded ", "=?base64?IHBhZGRlZCA=?="),
            ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
            ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
            ("plain-value 1", "plain-value 1"),
        ] {
            assert_eq!(encode_value(plain), encoded);
            assert_eq!(decode_value(encoded).as_deref(), Ok(plain));
        }
        assert!(decode_value("=?base64?not base64!?=").is_err());
        assert!(decode_value("caf\u{e9}").is_err());
    }

    #[test]
    fn annotations_must_be_reachable_unique_tokens_on_primitives() {
        let ok = json!({"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "nested":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"}}}}});
        let found = bindings(&ok).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].path, ["nested", "n"]);
        let cases = [
            json!({"properties":{"a":{"type":"number","x-mcp-header":"A"}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":"bad name"}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}),
            json!({"properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}),
            json!({"anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}),
        ];
        for schema in cases {
            assert!(bindings(&schema).is_err(), "{schema}");
        }
    }

    #[test]
    fn mirrored_arguments_must_match_the_body() {
        let schema = json!({"properties":{
            "s":{"type":"string","x-mcp-header":"S"},
            "i":{"type":"integer","x-mcp-header":"I"},
            "b":{"type":"boolean","x-mcp-header":"B"}}});
        let found = bindings(&schema).unwrap();
        let mirrors = |pairs: &[(&str, &str)]| Mirrors {
            params: pairs.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
            ..Default::default()
        };
        let args = json!({"s":"héllo","i":42,"b":true});
        let good = mirrors(&[("s", "=?base64?aMOpbGxv?="), ("I", "42.0"), ("b", "true")]);
        assert_eq!(check_params(&good, &found, &args), Ok(()));
        assert!(check_params(&mirrors(&[("S", "=?base64?aMOpbGxv?="), ("I", "42")]), &found, &args).is_err());
        assert!(
            check_params(&mirrors(&[("S", "=?base64?aMOpbGxv?="), ("I", "41"), ("B", "true")]), &found, &args).is_err()
        );
        // Absent or null arguments need no header.
        assert_eq!(check_params(&mirrors(&[]), &found, &json!({"s": null})), Ok(()));
    }
}
