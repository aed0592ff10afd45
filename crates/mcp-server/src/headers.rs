//! Values a transport mirrors beside the body (the HTTP headers `MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*`), and the checks that tie them to the body. The
//! rules themselves (the `=?base64?…?=` encoding, the `x-mcp-header` annotation) are
//! [`mcp_types::http_headers`].

use std::borrow::Cow;

use mcp_types::http_headers::{HeaderParam, ParamType, decode_value_borrowed as decode_value, render_argument};
use serde_json::Value;

/// The mirrored values of one request, as received (still encoded): borrowed from the request's
/// headers by the HTTP transport, so that checking them copies nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mirrors<'a> {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<Cow<'a, str>>,
    /// `Mcp-Method`.
    pub method: Option<Cow<'a, str>>,
    /// `Mcp-Name`: the tool, resource or prompt the request names.
    pub name: Option<Cow<'a, str>>,
    /// `Mcp-Param-{Name}` headers: the `{Name}` part (any case) and the value.
    pub params: Vec<(Cow<'a, str>, Cow<'a, str>)>,
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

/// Every annotated argument present in the body must be mirrored, with the same value; integers
/// compare numerically (`42.0` matches `42`).
pub(crate) fn check_params(mirrors: &Mirrors, params: &[HeaderParam], arguments: &Value) -> Result<(), String> {
    let Some(arguments) = arguments.as_object() else { return Ok(()) };
    for param in params {
        let Some(value) = param.argument(arguments) else { continue };
        let header = param.header_name();
        let Some((_, raw)) = mirrors.params.iter().find(|(name, _)| name.eq_ignore_ascii_case(&param.name)) else {
            return Err(format!("The {header} header is missing"));
        };
        let decoded = decode_value(raw).map_err(|e| format!("{header}: {e}"))?;
        let equal = match (param.kind, value) {
            (ParamType::String, Value::String(_)) | (ParamType::Boolean, Value::Bool(_)) => {
                render_argument(value).is_some_and(|body| body == decoded)
            }
            (ParamType::Integer, Value::Number(body)) => {
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

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_types::http_headers::header_params;
    use serde_json::json;

    #[test]
    fn mirrored_arguments_must_match_the_body() {
        let schema = json!({"properties":{
            "s":{"type":"string","x-mcp-header":"S"},
            "i":{"type":"integer","x-mcp-header":"I"},
            "b":{"type":"boolean","x-mcp-header":"B"}}});
        let found = header_params(&schema).unwrap();
        let mirrors = |pairs: &[(&str, &str)]| Mirrors {
            params: pairs.iter().map(|(n, v)| (n.to_string().into(), v.to_string().into())).collect(),
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
