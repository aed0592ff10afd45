//! A call as an HTTP request (path parameters percent-encoded into the path, query parameters
//! serialized as their `style` says, headers, the JSON body), and the response as the tool's
//! result (bounded; an HTTP error a tool error with its status and the start of its body).

use mcp_types::{CallToolResult, ContentBlock, TextContent};
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Map, Value};

use super::document::{BODY, Location, Operation, Parameter, is_json};

/// The bytes of an error response's body a tool error quotes.
const EXCERPT: usize = 1024;

/// A tool error saying `text`.
pub(crate) fn tool_error(text: impl Into<String>) -> CallToolResult {
    let mut result = CallToolResult::new(vec![ContentBlock::Text(TextContent::new(text.into()))]);
    result.is_error = Some(true);
    result
}

/// The request of a call of `operation` with `arguments`, its URL under `base`; `Err` says what
/// is wrong with the arguments.
pub(crate) fn build(
    operation: &Operation,
    base: &reqwest::Url,
    http: &reqwest::Client,
    mut arguments: Map<String, Value>,
) -> Result<reqwest::Request, String> {
    // What the tool does not take is refused (its schema says `additionalProperties: false`).
    let known = |name: &str| {
        (operation.body.is_some() && name == BODY) || operation.parameters.iter().any(|p| p.argument == name)
    };
    if let Some(unknown) = arguments.keys().find(|name| !known(name)) {
        let mut takes: Vec<&str> = operation.parameters.iter().map(|p| p.argument.as_str()).collect();
        if operation.body.is_some() {
            takes.push(BODY);
        }
        return Err(format!("unknown argument `{unknown}` (the tool takes: {})", takes.join(", ")));
    }
    // An argument given as null is one not given.
    arguments.retain(|_, value| !value.is_null());
    for parameter in operation.parameters.iter().filter(|p| p.required) {
        if !arguments.contains_key(&parameter.argument) {
            return Err(format!("missing required argument `{}`", parameter.argument));
        }
    }
    if operation.body_required && !arguments.contains_key(BODY) {
        return Err(format!("missing required argument `{BODY}`"));
    }
    let mut path = String::with_capacity(operation.path.len());
    let mut rest = operation.path.as_str();
    while let Some(start) = rest.find('{') {
        let Some(end) = rest[start..].find('}').map(|end| start + end) else { break };
        path.push_str(&rest[..start]);
        let name = &rest[start + 1..end];
        let parameter = operation.parameters.iter().find(|p| p.location == Location::Path && p.name == name);
        let value =
            parameter.and_then(|p| arguments.get(&p.argument)).ok_or_else(|| format!("no value for `{name}`"))?;
        let value = flat(value, false, ",");
        // An empty segment, `.` or `..` would take the request to another path.
        if matches!(value.as_str(), "" | "." | "..") {
            return Err(format!("the path parameter `{name}` cannot be {value:?}"));
        }
        path.push_str(&percent_encode(&value));
        rest = &rest[end + 1..];
    }
    path.push_str(rest);
    let url = format!("{}{path}", base.as_str().trim_end_matches('/'));
    let mut url = reqwest::Url::parse(&url).map_err(|e| format!("the URL {url} is not valid: {e}"))?;
    let mut query: Vec<(String, String)> = Vec::new();
    let mut headers = reqwest::header::HeaderMap::new();
    let mut cookies: Vec<String> = Vec::new();
    for parameter in &operation.parameters {
        let Some(value) = arguments.get(&parameter.argument) else { continue };
        match parameter.location {
            Location::Path => {}
            Location::Query => query.extend(query_pairs(parameter, value)),
            Location::Header => {
                let name = HeaderName::from_bytes(parameter.name.as_bytes())
                    .map_err(|_| format!("`{}` is not a valid header name", parameter.name))?;
                let value = HeaderValue::from_str(&flat(value, parameter.explode, ","))
                    .map_err(|_| format!("argument `{}` is not a valid header value", parameter.argument))?;
                headers.append(name, value);
            }
            Location::Cookie => {
                cookies.push(format!("{}={}", parameter.name, percent_encode(&flat(value, false, ","))))
            }
        }
    }
    if !query.is_empty() {
        url.query_pairs_mut().extend_pairs(&query);
    }
    if !cookies.is_empty() {
        let cookies = HeaderValue::from_str(&cookies.join("; ")).map_err(|e| e.to_string())?;
        headers.insert(reqwest::header::COOKIE, cookies);
    }
    headers.insert(reqwest::header::ACCEPT, HeaderValue::from_static("application/json, */*;q=0.5"));
    let mut request = http.request(operation.method.clone(), url).headers(headers);
    if let (Some(media_type), Some(body)) = (&operation.body, arguments.get(BODY)) {
        let bytes = serde_json::to_vec(body).map_err(|e| e.to_string())?;
        request = request.header(reqwest::header::CONTENT_TYPE, media_type.as_str()).body(bytes);
    }
    let request = request.build().map_err(|e| format!("the request could not be built: {e}"))?;
    Ok(request)
}

/// A query parameter's pairs, as its `style` and `explode` say (`form` by default).
fn query_pairs(parameter: &Parameter, value: &Value) -> Vec<(String, String)> {
    let name = &parameter.name;
    let delimiter = match parameter.style.as_str() {
        "spaceDelimited" => " ",
        "pipeDelimited" => "|",
        _ => ",",
    };
    match value {
        Value::Array(items) if parameter.explode => items.iter().map(|item| (name.clone(), scalar(item))).collect(),
        Value::Object(fields) if parameter.style == "deepObject" => {
            fields.iter().map(|(key, field)| (format!("{name}[{key}]"), scalar(field))).collect()
        }
        Value::Object(fields) if parameter.explode => {
            fields.iter().map(|(key, field)| (key.clone(), scalar(field))).collect()
        }
        _ => vec![(name.clone(), flat(value, false, delimiter))],
    }
}

/// A value as text: a string as it is, a number or boolean as JSON writes it; an array's items
/// (an object's keys and values, `key=value` when exploded) joined with `delimiter`.
fn flat(value: &Value, explode: bool, delimiter: &str) -> String {
    match value {
        Value::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join(delimiter),
        Value::Object(fields) if explode => {
            fields.iter().map(|(key, field)| format!("{key}={}", scalar(field))).collect::<Vec<_>>().join(delimiter)
        }
        Value::Object(fields) => {
            fields.iter().flat_map(|(key, field)| [key.clone(), scalar(field)]).collect::<Vec<_>>().join(delimiter)
        }
        other => scalar(other),
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Every byte but the unreserved ones (`A-Z a-z 0-9 - . _ ~`) as `%XX`: a value cannot add a
/// segment to the path (`/`), a query or a fragment.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The response as the tool's result: a JSON answer in text (and as `structuredContent` when the
/// tool has an `outputSchema`), another as its text; a status other than 2xx a tool error with
/// the status and the start of the body (`redact` takes the upstream's credentials out of it).
/// A body over `max` bytes is a tool error naming the limit.
pub(crate) async fn answer(
    operation: &Operation,
    response: reqwest::Response,
    max: usize,
    redact: impl Fn(&str) -> String,
) -> Result<CallToolResult, reqwest::Error> {
    let status = response.status();
    let content_type = response.headers().get(reqwest::header::CONTENT_TYPE).map(|v| v.to_str().unwrap_or_default());
    // JSON as its type says; with no type said, as it looks.
    let json = content_type.map(is_json);
    if !status.is_success() {
        // Redacted before it is cut, so that no credential is cut where it would not be seen.
        let (body, _) = read(response, 4 * EXCERPT).await?;
        let quoted = excerpt(&redact(String::from_utf8_lossy(&body).trim()));
        let status = format!("{} {}", status.as_u16(), status.canonical_reason().unwrap_or_default());
        return Ok(tool_error(match quoted.is_empty() {
            true => format!("HTTP {}", status.trim_end()),
            false => format!("HTTP {}: {quoted}", status.trim_end()),
        }));
    }
    let too_long = response.content_length().is_some_and(|length| length > max as u64);
    let (body, cut) = if too_long { (Vec::new(), true) } else { read(response, max).await? };
    if cut {
        return Ok(tool_error(format!(
            "the API's response is larger than {max} bytes (`max_response_bytes`): not returned"
        )));
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(CallToolResult::new(vec![ContentBlock::Text(TextContent::new(format!(
            "HTTP {} (no content)",
            status.as_u16()
        )))]));
    }
    let looks_json = || body.iter().find(|b| !b.is_ascii_whitespace()).is_some_and(|b| matches!(b, b'{' | b'['));
    let parsed = json.unwrap_or_else(looks_json).then(|| serde_json::from_slice::<Value>(&body).ok()).flatten();
    let Some(value) = parsed else {
        let text = String::from_utf8_lossy(&body).into_owned();
        if operation.structured {
            return Ok(tool_error(format!(
                "the API answered HTTP {} without the JSON object its outputSchema describes: {}",
                status.as_u16(),
                excerpt(&text)
            )));
        }
        return Ok(CallToolResult::new(vec![ContentBlock::Text(TextContent::new(text))]));
    };
    let text = value.to_string();
    if operation.structured && !value.is_object() {
        return Ok(tool_error(format!(
            "the API answered HTTP {} with JSON that is not the object its outputSchema describes: {}",
            status.as_u16(),
            excerpt(&text)
        )));
    }
    let mut result = CallToolResult::new(vec![ContentBlock::Text(TextContent::new(text))]);
    if operation.structured {
        result.structured_content = Some(value);
    }
    Ok(result)
}

/// The start of `text` (at most [`EXCERPT`] bytes, cut at a character, `…` where it is cut).
fn excerpt(text: &str) -> String {
    if text.len() <= EXCERPT {
        return text.to_owned();
    }
    let mut end = EXCERPT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Up to `max` bytes of the body, and whether there was more (then the rest is not read).
pub(crate) async fn read(mut response: reqwest::Response, max: usize) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > max {
            body.extend_from_slice(&chunk[..max - body.len()]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_encoded_so_that_they_cannot_leave_their_place() {
        assert_eq!(percent_encode("a b/c?d#e%f"), "a%20b%2Fc%3Fd%23e%25f");
        assert_eq!(percent_encode("ümlaut-._~"), "%C3%BCmlaut-._~");
        assert_eq!(flat(&serde_json::json!([1, "x", true]), false, ","), "1,x,true");
        assert_eq!(flat(&serde_json::json!({ "a": 1, "b": "c" }), true, ","), "a=1,b=c");
        assert_eq!(flat(&serde_json::json!({ "a": 1, "b": "c" }), false, ","), "a,1,b,c");
    }

    #[test]
    fn query_parameters_follow_their_style() {
        let parameter = |style: &str, explode: bool| Parameter {
            name: "tag".into(),
            argument: "tag".into(),
            location: Location::Query,
            required: false,
            style: style.into(),
            explode,
        };
        let tags = serde_json::json!(["a", "b"]);
        let pairs = |style, explode, value: &Value| query_pairs(&parameter(style, explode), value);
        assert_eq!(pairs("form", true, &tags), [("tag".into(), "a".into()), ("tag".into(), "b".into())]);
        assert_eq!(pairs("form", false, &tags), [("tag".to_owned(), "a,b".to_owned())]);
        assert_eq!(pairs("pipeDelimited", false, &tags), [("tag".to_owned(), "a|b".to_owned())]);
        let filter = serde_json::json!({ "color": "red" });
        assert_eq!(pairs("deepObject", true, &filter), [("tag[color]".to_owned(), "red".to_owned())]);
        assert_eq!(pairs("form", true, &filter), [("color".to_owned(), "red".to_owned())]);
        assert_eq!(pairs("form", true, &serde_json::json!(3)), [("tag".to_owned(), "3".to_owned())]);
    }
}
