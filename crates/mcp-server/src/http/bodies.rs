//! Reading a request's body, and the responses the transport writes itself (refusals, JSON
//! bodies).

use super::*;

/// The `id` and whether the method is `initialize`, read from a JSON object without building it;
/// `None` when it cannot be read so (not an object, not JSON, a member given twice, a `method`
/// that is not a string): the caller then reads it as a `Value`, which words the parse error.
pub(super) fn probe(bytes: &[u8]) -> Option<(Option<mcp_types::RequestId>, bool)> {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(default)]
        id: Option<Value>,
        #[serde(default, borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    if !bytes.trim_ascii_start().starts_with(b"{") {
        return None;
    }
    let probe: Probe<'_> = serde_json::from_slice(bytes).ok()?;
    let id = probe.id.and_then(|id| serde_json::from_value(id).ok());
    Some((id, probe.method.as_deref() == Some("initialize")))
}

pub(super) fn json_response(status: StatusCode, message: &Outgoing) -> Response {
    let mut response = json_body(status, message.json.clone());
    if let crate::message::Outcome::Error(code) = message.outcome {
        response.extensions_mut().insert(RefusedWith(code));
    }
    response
}

/// The `method` of a message, for the span of one no handler served (a notification, a legacy
/// `initialize`).
pub(super) fn method_of(bytes: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Method {
        method: Option<String>,
    }
    serde_json::from_slice::<Method>(bytes).ok()?.method
}

/// Why a request's body was not read.
pub(super) enum BodyError {
    /// It is, or says it is, longer than the limit.
    TooLarge,
    /// It broke off or was malformed (a bad chunk, a connection that failed mid-body).
    Unreadable(String),
}

impl BodyError {
    /// A body's read error: over a limit if a body limit layered onto the router (tower-http's,
    /// with `http-body-util`'s error) said so, else unreadable.
    fn of(error: axum::Error) -> BodyError {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&error);
        while let Some(cause) = source {
            if cause.is::<http_body_util::LengthLimitError>() {
                return BodyError::TooLarge;
            }
            source = cause.source();
        }
        BodyError::Unreadable(error.to_string())
    }
}

/// A request's whole body, refused past `limit` bytes. A body that arrived in one piece (the usual
/// request) is taken as it came, without being collected into a list and copied out of it.
pub(super) async fn read_body(mut body: Body, limit: usize) -> Result<axum::body::Bytes, BodyError> {
    use axum::body::HttpBody as _;
    if body.size_hint().lower() > limit as u64 {
        return Err(BodyError::TooLarge);
    }
    let mut collected = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await {
        let frame = frame.map_err(BodyError::of)?;
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        if collected.len() + data.len() > limit {
            return Err(BodyError::TooLarge);
        }
        if collected.is_empty() && body.is_end_stream() {
            return Ok(data);
        }
        collected.extend_from_slice(&data);
    }
    Ok(collected.into())
}

pub(super) fn json_body(status: StatusCode, json: String) -> Response {
    // Built directly: a `String`'s `into_response` would first insert `text/plain`, which the
    // content type would then replace. A static header value: no check and no copy per response.
    let mut response = Response::new(Body::from(json));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A refusal by the transport: recorded by its HTTP status, the body's JSON-RPC error aside.
pub(super) fn error(status: StatusCode, id: Option<&mcp_types::RequestId>, message: &str) -> Response {
    let error = ErrorObject::invalid_request(message);
    json_body(status, Outgoing::error_as(id, &error, Disposition::BadRequest).json)
}
