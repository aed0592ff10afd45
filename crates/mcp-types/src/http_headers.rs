//! The Streamable HTTP request headers of 2026-07-28 that mirror parts of the body, as rules both
//! ends share: the `=?base64?…?=` value encoding of `Mcp-Name` and `Mcp-Param-*`, and the
//! `x-mcp-header` tool-schema annotation that binds a tool argument to an `Mcp-Param-{Name}`
//! header (which properties may carry it, which names are valid, how argument values are
//! rendered).
//!
//! Behind the `http-headers` feature, which adds the `base64` dependency.
//!
//! ```
//! use mcp_types::http_headers::{decode_value, encode_value, header_params, param_headers};
//! use serde_json::json;
//!
//! assert_eq!(encode_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
//! assert_eq!(decode_value("=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(), "Hello, 世界");
//!
//! let schema = json!({"type": "object", "properties": {
//!     "region": {"type": "string", "x-mcp-header": "Region"},
//!     "days": {"type": "integer", "x-mcp-header": "Days"}}});
//! let params = header_params(&schema).unwrap();
//! let arguments = json!({"region": "eu-west", "days": 3});
//! let mut headers = param_headers(&params, arguments.as_object());
//! headers.sort();
//! assert_eq!(headers, [
//!     ("Mcp-Param-Days".to_owned(), "3".to_owned()),
//!     ("Mcp-Param-Region".to_owned(), "eu-west".to_owned()),
//! ]);
//! ```

use std::borrow::Cow;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

/// The tool-schema keyword that mirrors a property into an `Mcp-Param-{Name}` header.
pub const ANNOTATION: &str = "x-mcp-header";

/// The prefix of a mirrored argument's header name (`Mcp-Param-{Name}`).
pub const PARAM_HEADER_PREFIX: &str = "Mcp-Param-";

/// The request headers that mirror a part of the body (besides `Mcp-Param-*`). Each may appear
/// at most once: a gateway that reads another copy than the server would route or authorize a
/// different request than the one the server checked.
pub const MIRRORED_HEADERS: &[&str] = &["MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"];

/// Whether `name` (any case) is a mirrored header: one of [`MIRRORED_HEADERS`] or an
/// `Mcp-Param-{Name}`.
pub fn is_mirrored_header(name: &str) -> bool {
    MIRRORED_HEADERS.iter().any(|mirrored| mirrored.eq_ignore_ascii_case(name))
        || name.get(..PARAM_HEADER_PREFIX.len()).is_some_and(|prefix| prefix.eq_ignore_ascii_case(PARAM_HEADER_PREFIX))
}

const BASE64_PREFIX: &str = "=?base64?";
const BASE64_SUFFIX: &str = "?=";

/// Visible ASCII (0x21–0x7E), space or tab: what a value may hold without base64.
fn is_plain_char(c: char) -> bool {
    matches!(c, '\x21'..='\x7e' | ' ' | '\t')
}

/// An RFC 9110 `tchar`, the characters of a header name.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// The body member that `Mcp-Name` mirrors for `method`, if the method has one: `params.name` of
/// `tools/call` and `prompts/get`, `params.uri` of `resources/read`, and `params.taskId` of the
/// tasks extension's `tasks/get`, `tasks/update` and `tasks/cancel` (SEP-2663 § Routing Headers).
pub fn name_member(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

// ------------------------------------------------------------------ value encoding

/// Encodes a value for `Mcp-Name` or `Mcp-Param-*`: as-is when it is header-safe (visible ASCII,
/// space or tab, no leading or trailing whitespace, and not itself shaped like the sentinel),
/// otherwise `=?base64?{base64 of the UTF-8 bytes}?=`.
///
/// The empty string is header-safe and stays empty.
pub fn encode_value(value: &str) -> String {
    let edge_space = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let looks_encoded = value.starts_with(BASE64_PREFIX) && value.ends_with(BASE64_SUFFIX);
    if value.chars().all(is_plain_char) && !edge_space && !looks_encoded {
        value.to_owned()
    } else {
        format!("{BASE64_PREFIX}{}{BASE64_SUFFIX}", STANDARD.encode(value.as_bytes()))
    }
}

/// Decodes a received `Mcp-Name` or `Mcp-Param-*` value: plain visible ASCII (with inner spaces
/// or tabs), or the `=?base64?{UTF-8 bytes}?=` form. Surrounding spaces and tabs (HTTP optional
/// whitespace) are ignored.
pub fn decode_value(raw: &str) -> Result<String, InvalidHeaderValue> {
    decode_value_borrowed(raw).map(Cow::into_owned)
}

/// [`decode_value`] without a copy of a plain value: borrowed from `raw` unless it was
/// base64-encoded. A server comparing every request's mirrored headers with its body needs no
/// allocation for them.
pub fn decode_value_borrowed(raw: &str) -> Result<Cow<'_, str>, InvalidHeaderValue> {
    let raw = raw.trim_matches([' ', '\t']);
    if let Some(encoded) = raw.strip_prefix(BASE64_PREFIX).and_then(|rest| rest.strip_suffix(BASE64_SUFFIX)) {
        let bytes = STANDARD.decode(encoded).map_err(|_| InvalidHeaderValue::NotBase64(raw.to_owned()))?;
        return String::from_utf8(bytes).map(Cow::Owned).map_err(|_| InvalidHeaderValue::NotUtf8(raw.to_owned()));
    }
    if raw.chars().all(is_plain_char) { Ok(Cow::Borrowed(raw)) } else { Err(InvalidHeaderValue::NotHeaderSafe) }
}

/// Why a received header value cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidHeaderValue {
    /// The `=?base64?…?=` form with a payload that is not standard base64 (the raw value).
    NotBase64(String),
    /// The `=?base64?…?=` form whose bytes are not UTF-8 (the raw value).
    NotUtf8(String),
    /// A plain value with characters that must be base64-encoded.
    NotHeaderSafe,
}

impl fmt::Display for InvalidHeaderValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidHeaderValue::NotBase64(raw) => write!(f, "`{raw}` is not valid base64"),
            InvalidHeaderValue::NotUtf8(raw) => write!(f, "`{raw}` does not decode to UTF-8"),
            InvalidHeaderValue::NotHeaderSafe => {
                f.write_str("a header value has characters that must be base64-encoded")
            }
        }
    }
}

impl std::error::Error for InvalidHeaderValue {}

// ------------------------------------------------------------------ the annotation

/// The declared type of an annotated property: the primitives `x-mcp-header` may annotate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    /// `"string"`.
    String,
    /// `"integer"`.
    Integer,
    /// `"boolean"`.
    Boolean,
}

/// One valid `x-mcp-header` annotation of a tool's `inputSchema`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The `{Name}` of `Mcp-Param-{Name}`, as written in the schema.
    pub name: String,
    /// The property path from the root of `inputSchema` (a chain of `properties` keys).
    pub path: Vec<String>,
    /// The property's declared type.
    pub kind: ParamType,
}

impl HeaderParam {
    /// The full header name, `Mcp-Param-{Name}`.
    pub fn header_name(&self) -> String {
        format!("{PARAM_HEADER_PREFIX}{}", self.name)
    }

    /// The argument at this parameter's path; `None` when absent or `null` (no header then).
    pub fn argument<'a>(&self, arguments: &'a Map<String, Value>) -> Option<&'a Value> {
        let (first, rest) = self.path.split_first()?;
        let mut value = arguments.get(first)?;
        for key in rest {
            value = value.get(key)?;
        }
        (!value.is_null()).then_some(value)
    }
}

/// Why a tool's `x-mcp-header` annotations make its definition invalid: where the offending
/// annotation sits and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidHeaderAnnotation {
    /// JSON Pointer tokens from the root of `inputSchema` to the annotated schema; for a valid
    /// place, `["properties", "a", "properties", "b"]` (property `a.b`). Empty for the root.
    pub location: Vec<String>,
    /// What is wrong.
    pub problem: AnnotationProblem,
}

/// What is wrong with an `x-mcp-header` annotation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AnnotationProblem {
    /// It is on the root, or on a schema reached through something other than `properties`
    /// (`items`, `oneOf`/`anyOf`/`allOf`/`not`, `if`/`then`/`else`, `$defs`, …).
    NotOnAReachableProperty,
    /// Its value is not a string.
    NotAString,
    /// The header name is empty.
    Empty,
    /// The header name has a character outside RFC 9110 `tchar`.
    InvalidCharacter {
        /// The header name.
        name: String,
        /// The first character outside `tchar`.
        character: char,
    },
    /// The property's `type` is not exactly `"string"`, `"integer"` or `"boolean"` (`None`: no
    /// single type name).
    NotAPrimitive {
        /// The header name.
        name: String,
        /// The property's `type`, if it is a single type name.
        found: Option<String>,
    },
    /// An earlier property (`first`, its path) uses the same name, ignoring case.
    Duplicate {
        /// The header name.
        name: String,
        /// The path of the earlier property.
        first: Vec<String>,
    },
}

impl InvalidHeaderAnnotation {
    /// The property path of the annotated schema, when it is a property reached through
    /// `properties` alone.
    pub fn property(&self) -> Option<Vec<&str>> {
        if self.location.is_empty() || self.location.len() % 2 != 0 {
            return None;
        }
        let pairs = self.location.chunks(2);
        pairs.map(|pair| (pair[0] == "properties").then_some(pair[1].as_str())).collect()
    }
}

impl fmt::Display for InvalidHeaderAnnotation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{ANNOTATION} on ")?;
        match self.property() {
            _ if self.location.is_empty() => f.write_str("the schema root")?,
            Some(path) => write!(f, "property `{}`", path.join("."))?,
            None => {
                let pointer: String =
                    self.location.iter().map(|t| format!("/{}", t.replace('~', "~0").replace('/', "~1"))).collect();
                write!(f, "`{pointer}`")?
            }
        }
        f.write_str(": ")?;
        match &self.problem {
            AnnotationProblem::NotOnAReachableProperty => {
                f.write_str("only properties reachable from the root through `properties` alone may carry it")
            }
            AnnotationProblem::NotAString => f.write_str("the header name is not a string"),
            AnnotationProblem::Empty => f.write_str("the header name is empty"),
            AnnotationProblem::InvalidCharacter { name, character } => {
                write!(f, "the header name {name:?} contains {character:?}, which is not allowed in a header name")
            }
            AnnotationProblem::NotAPrimitive { name, found } => {
                let found = found.as_ref().map_or_else(|| "not a single primitive".to_owned(), |t| format!("{t:?}"));
                write!(f, "{name:?} needs a string, integer or boolean property; its type is {found}")
            }
            AnnotationProblem::Duplicate { name, first } => write!(
                f,
                "{name:?} is already used by property `{}` (header names compare case-insensitively)",
                first.join(".")
            ),
        }
    }
}

impl std::error::Error for InvalidHeaderAnnotation {}

/// Data-valued keywords: their contents are instances, not schemas, so a key named
/// `x-mcp-header` inside them is not an annotation.
const DATA_KEYWORDS: &[&str] = &["const", "default", "enum", "examples"];

/// Collects and validates the `x-mcp-header` annotations of a tool's `inputSchema`: each must be
/// a non-empty token (RFC 9110 `tchar`s), unique ignoring case, on a `string`, `integer` or
/// `boolean` property reachable from the root through `properties` alone. The first violation
/// makes the whole tool definition invalid.
pub fn header_params(schema: &Value) -> Result<Vec<HeaderParam>, InvalidHeaderAnnotation> {
    let mut found = Vec::new();
    walk(schema, true, &mut Vec::new(), &mut found)?;
    for (index, param) in found.iter().enumerate() {
        if let Some(first) = found[..index].iter().find(|other| other.name.eq_ignore_ascii_case(&param.name)) {
            return Err(InvalidHeaderAnnotation {
                location: param.path.iter().flat_map(|key| ["properties".to_owned(), key.clone()]).collect(),
                problem: AnnotationProblem::Duplicate { name: param.name.clone(), first: first.path.clone() },
            });
        }
    }
    Ok(found)
}

/// `location` holds JSON Pointer tokens; `reachable` says whether every step so far was a
/// `properties` key.
fn walk(
    value: &Value,
    reachable: bool,
    location: &mut Vec<String>,
    found: &mut Vec<HeaderParam>,
) -> Result<(), InvalidHeaderAnnotation> {
    match value {
        Value::Object(map) => {
            if let Some(annotation) = map.get(ANNOTATION) {
                found.push(annotated(map, annotation, reachable, location)?);
            }
            for (key, child) in map {
                if DATA_KEYWORDS.contains(&key.as_str()) || key == ANNOTATION {
                    continue;
                }
                location.push(key.clone());
                let result = match child {
                    Value::Object(properties) if key == "properties" => {
                        properties.iter().try_for_each(|(property, schema)| {
                            location.push(property.clone());
                            let result = walk(schema, reachable, location, found);
                            location.pop();
                            result
                        })
                    }
                    _ => walk(child, false, location, found),
                };
                location.pop();
                result?;
            }
            Ok(())
        }
        Value::Array(items) => items.iter().enumerate().try_for_each(|(index, item)| {
            location.push(index.to_string());
            let result = walk(item, false, location, found);
            location.pop();
            result
        }),
        _ => Ok(()),
    }
}

fn annotated(
    schema: &Map<String, Value>,
    annotation: &Value,
    reachable: bool,
    location: &[String],
) -> Result<HeaderParam, InvalidHeaderAnnotation> {
    let error = |problem| InvalidHeaderAnnotation { location: location.to_vec(), problem };
    if !reachable || location.is_empty() {
        return Err(error(AnnotationProblem::NotOnAReachableProperty));
    }
    let Some(name) = annotation.as_str() else { return Err(error(AnnotationProblem::NotAString)) };
    if name.is_empty() {
        return Err(error(AnnotationProblem::Empty));
    }
    if let Some(character) = name.chars().find(|c| !is_tchar(*c)) {
        return Err(error(AnnotationProblem::InvalidCharacter { name: name.to_owned(), character }));
    }
    let kind = match schema.get("type").and_then(Value::as_str) {
        Some("string") => ParamType::String,
        Some("integer") => ParamType::Integer,
        Some("boolean") => ParamType::Boolean,
        other => {
            let found = other.map(str::to_owned);
            return Err(error(AnnotationProblem::NotAPrimitive { name: name.to_owned(), found }));
        }
    };
    // Reachable: the location is `properties`/key pairs.
    let path = location.iter().skip(1).step_by(2).cloned().collect();
    Ok(HeaderParam { name: name.to_owned(), path, kind })
}

// ------------------------------------------------------------------ rendering

/// An argument's header text before encoding: a string as-is, a number in decimal, a boolean as
/// `true`/`false`. `None` for `null`, arrays and objects (no header).
pub fn render_argument(value: &Value) -> Option<Cow<'_, str>> {
    match value {
        Value::String(s) => Some(Cow::Borrowed(s)),
        Value::Number(n) => Some(Cow::Owned(n.to_string())),
        Value::Bool(b) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
        _ => None,
    }
}

/// The `Mcp-Param-*` headers of one `tools/call`: `(header name, encoded value)` for each
/// annotated argument that is present; absent and `null` arguments produce no header.
pub fn param_headers(params: &[HeaderParam], arguments: Option<&Map<String, Value>>) -> Vec<(String, String)> {
    let Some(arguments) = arguments else { return Vec::new() };
    params
        .iter()
        .filter_map(|param| {
            let text = render_argument(param.argument(arguments)?)?;
            Some((param.header_name(), encode_value(&text)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    // ---------------------------------------------------------------- value encoding (D.4)

    #[test]
    fn header_safe_values_are_sent_as_is() {
        for plain in ["us-west1", "plain-value 1", "a\tb", "x=?base64?", "!~"] {
            assert_eq!(encode_value(plain), plain);
        }
    }

    /// The servers' copy wrapped `""` in base64 (`=?base64??=`), the client's sent it as-is. The
    /// spec's rule only excludes non-visible characters and edge whitespace, so `""` is
    /// header-safe; both forms decode to `""`.
    #[test]
    fn the_empty_value_is_header_safe() {
        assert_eq!(encode_value(""), "");
        assert_eq!(decode_value("").as_deref(), Ok(""));
        assert_eq!(decode_value("=?base64??=").as_deref(), Ok(""));
    }

    #[test]
    fn non_ascii_and_control_characters_are_base64_encoded() {
        assert_eq!(encode_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(encode_value("é"), "=?base64?w6k=?=");
    }

    #[test]
    fn edge_whitespace_is_base64_encoded() {
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("\tb"), "=?base64?CWI=?=");
        assert_eq!(encode_value("b "), "=?base64?YiA=?=");
    }

    #[test]
    fn a_value_shaped_like_the_sentinel_is_base64_encoded() {
        assert_eq!(encode_value("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
    }

    #[test]
    fn decoding_inverts_encoding_and_rejects_what_must_be_encoded() {
        for value in ["Hello, 世界", " padded ", "line1\nline2", "=?base64?literal?=", "plain-value 1", "a\tb"] {
            assert_eq!(decode_value(&encode_value(value)).as_deref(), Ok(value));
        }
        // Optional whitespace around a field value is not part of it.
        assert_eq!(decode_value(" eu-west\t").as_deref(), Ok("eu-west"));
        assert_eq!(
            decode_value("=?base64?not base64!?="),
            Err(InvalidHeaderValue::NotBase64("=?base64?not base64!?=".into()))
        );
        assert_eq!(decode_value("=?base64?/w==?="), Err(InvalidHeaderValue::NotUtf8("=?base64?/w==?=".into())));
        assert_eq!(decode_value("caf\u{e9}"), Err(InvalidHeaderValue::NotHeaderSafe));
        assert_eq!(decode_value("a\nb"), Err(InvalidHeaderValue::NotHeaderSafe));
    }

    #[test]
    fn a_plain_value_decodes_without_a_copy() {
        assert!(matches!(decode_value_borrowed(" tools/call "), Ok(Cow::Borrowed("tools/call"))));
        let encoded = encode_value("Hello, 世界");
        assert!(matches!(decode_value_borrowed(&encoded), Ok(Cow::Owned(v)) if v == "Hello, 世界"));
        assert_eq!(decode_value_borrowed("a\nb"), Err(InvalidHeaderValue::NotHeaderSafe));
    }

    // ---------------------------------------------------------------- the annotation (D.5)

    #[test]
    fn annotations_on_reachable_primitive_properties_are_collected() {
        let schema = json!({"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "opts":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"}}},
            "flag":{"type":"boolean","x-mcp-header":"Method"},
            "plain":{"type":"string"}}});
        let params = header_params(&schema).unwrap();
        let param = |name: &str, path: &[&str], kind| HeaderParam {
            name: name.to_owned(),
            path: path.iter().map(|s| s.to_string()).collect(),
            kind,
        };
        assert_eq!(
            params,
            [
                param("Method", &["flag"], ParamType::Boolean),
                param("N", &["opts", "n"], ParamType::Integer),
                param("Region", &["region"], ParamType::String),
            ]
        );
        assert_eq!(params[1].header_name(), "Mcp-Param-N");
        assert_eq!(header_params(&json!({"type":"object"})), Ok(vec![]));
    }

    #[test]
    fn header_names_must_be_non_empty_tokens() {
        let problem = |annotation: Value| {
            let schema = json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":annotation}}});
            header_params(&schema).unwrap_err().problem
        };
        assert_eq!(problem(json!("")), AnnotationProblem::Empty);
        assert_eq!(problem(json!(7)), AnnotationProblem::NotAString);
        assert_eq!(problem(json!(null)), AnnotationProblem::NotAString);
        for (name, character) in
            [("A B", ' '), ("bad name", ' '), ("A:B", ':'), ("Ä", 'Ä'), ("A\r\n", '\r'), ("(x)", '(')]
        {
            assert_eq!(problem(json!(name)), AnnotationProblem::InvalidCharacter { name: name.into(), character });
        }
        assert!(
            header_params(&json!({"properties":{"a":{"type":"string","x-mcp-header":"!#$%&'*+-.^_`|~0aZ"}}})).is_ok()
        );
    }

    #[test]
    fn only_string_integer_and_boolean_properties_may_be_annotated() {
        for (kind, found) in [
            (json!("number"), Some("number")),
            (json!("object"), Some("object")),
            (json!("array"), Some("array")),
            (json!("null"), Some("null")),
            (json!(["string", "null"]), None),
            (Value::Null, None),
        ] {
            let mut property = json!({"x-mcp-header":"A"});
            if !kind.is_null() {
                property["type"] = kind;
            }
            let schema = json!({"type":"object","properties":{"a":property}});
            assert_eq!(
                header_params(&schema).unwrap_err().problem,
                AnnotationProblem::NotAPrimitive { name: "A".into(), found: found.map(str::to_owned) },
                "{schema}"
            );
        }
    }

    #[test]
    fn only_properties_reachable_through_properties_alone_may_be_annotated() {
        let cases = [
            json!({"type":"string","x-mcp-header":"A"}),
            json!({"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}),
            json!({"type":"object","oneOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}),
            json!({"anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}),
            json!({"type":"object","$defs":{"d":{"type":"string","x-mcp-header":"A"}}}),
            json!({"type":"object","if":{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}}),
            json!({"type":"object","properties":[{"type":"string","x-mcp-header":"A"}]}),
        ];
        for schema in cases {
            assert_eq!(
                header_params(&schema).map_err(|e| e.problem),
                Err(AnnotationProblem::NotOnAReachableProperty),
                "{schema}"
            );
        }
    }

    #[test]
    fn header_names_are_unique_ignoring_case() {
        let schema = json!({"type":"object","properties":{
            "a":{"type":"string","x-mcp-header":"X"},
            "b":{"type":"object","properties":{"c":{"type":"string","x-mcp-header":"x"}}}}});
        let error = header_params(&schema).unwrap_err();
        assert_eq!(error.problem, AnnotationProblem::Duplicate { name: "x".into(), first: vec!["a".into()] });
        assert_eq!(error.property(), Some(vec!["b", "c"]));
    }

    /// The servers' copy counted every `x-mcp-header` key anywhere in the schema, so it refused
    /// a tool whose `default`/`const`/`enum`/`examples` data (or whose property named
    /// `x-mcp-header`) contained that key; the client's copy only looked at schemas. Those are
    /// instance data and property names, not annotations: the tool is valid.
    #[test]
    fn data_values_and_property_names_are_not_annotations() {
        let schema = json!({"type":"object","properties":{
            "plain":{"type":"object","default":{"x-mcp-header":"ignored"}},
            "c":{"const":{"x-mcp-header":"ignored"}},
            "e":{"enum":[{"x-mcp-header":"ignored"}]},
            "x":{"type":"object","examples":[{"x-mcp-header":"ignored"}]},
            "x-mcp-header":{"type":"string"}},
            "default":{"x-mcp-header":"ignored"}});
        assert_eq!(header_params(&schema), Ok(vec![]));
    }

    #[test]
    fn the_error_names_the_property_and_the_problem() {
        let error = |schema: Value| header_params(&schema).unwrap_err().to_string();
        assert_eq!(
            error(json!({"properties":{"o":{"properties":{"n":{"type":"number","x-mcp-header":"N"}}}}})),
            "x-mcp-header on property `o.n`: \"N\" needs a string, integer or boolean property; its type is \"number\""
        );
        assert_eq!(
            error(json!({"properties":{"a":{"items":{"type":"string","x-mcp-header":"A"}}}})),
            "x-mcp-header on `/properties/a/items`: only properties reachable from the root through `properties` \
             alone may carry it"
        );
        assert_eq!(
            error(json!({"x-mcp-header":"A"})),
            "x-mcp-header on the schema root: only properties reachable from the root through `properties` alone \
             may carry it"
        );
        assert_eq!(
            error(
                json!({"properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}})
            ),
            "x-mcp-header on property `b`: \"a\" is already used by property `a` (header names compare \
             case-insensitively)"
        );
    }

    // ---------------------------------------------------------------- rendering (D.3)

    #[test]
    fn present_arguments_render_as_encoded_param_headers() {
        let schema = json!({"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "opts":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"}}},
            "flag":{"type":"boolean","x-mcp-header":"Flag"},
            "note":{"type":"string"}}});
        let params = header_params(&schema).unwrap();
        let headers = |arguments: Value| {
            let mut headers = param_headers(&params, arguments.as_object());
            headers.sort();
            headers
        };
        let pair = |name: &str, value: &str| (name.to_owned(), value.to_owned());
        assert_eq!(
            headers(json!({"region":"é","opts":{"n":42},"flag":false,"note":"x"})),
            [pair("Mcp-Param-Flag", "false"), pair("Mcp-Param-N", "42"), pair("Mcp-Param-Region", "=?base64?w6k=?=")]
        );
        assert_eq!(
            headers(json!({"region":" a","flag":true})),
            [pair("Mcp-Param-Flag", "true"), pair("Mcp-Param-Region", "=?base64?IGE=?=")]
        );
        // Null and absent arguments (and a missing parent object) produce no header.
        assert_eq!(headers(json!({"region":null,"opts":{"n":null}})), []);
        assert_eq!(headers(json!({"opts":"not an object"})), []);
        assert!(param_headers(&params, None).is_empty());
        assert_eq!(render_argument(&json!(-7)).as_deref(), Some("-7"));
        assert_eq!(render_argument(&json!(2.5)).as_deref(), Some("2.5"));
        assert_eq!(render_argument(&json!([1])), None);
    }
}
