//! What a handler returns when it cannot produce its result.

use std::fmt;

use mcp_types::{ClientCapabilities, ErrorObject, InputRequest, InputRequests, error_codes};

/// The error of a tool, resource, prompt or completion handler.
///
/// Most handlers only ever build [`Error::Failed`] (an execution failure the model should see) or
/// one of the JSON-RPC constructors. The two other variants are produced by [`Context`](crate::Context)
/// and travel up through `?`: a handler that asks for input does not need to know which protocol
/// era it serves.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// The operation ran and failed. A tool answers with a result whose `isError` is `true` and
    /// whose text is this message (so the model can read it); other handlers answer `-32603`.
    Failed(String),
    /// A JSON-RPC error, sent as is (for instance `-32602` for an unknown resource).
    Rpc(ErrorObject),
    /// The request needs a client capability the client did not declare (`-32021` on the
    /// 2026-07-28 wire, with `data.requiredCapabilities`).
    MissingCapability(Box<ClientCapabilities>),
    /// The handler needs input from the client before it can finish. On the 2026-07-28 wire this
    /// becomes an `InputRequiredResult`; built only by [`Context`](crate::Context).
    InputRequired(InputRequests),
    /// The caller's token lacks some of these scopes, every scope the request needs (a route's
    /// [`scopes`](crate::ToolRoute::scopes) or a [`RequireScopes`](crate::middleware::RequireScopes)
    /// layer's). Over HTTP with authorization a `403` with an `insufficient_scope` challenge, so
    /// that the client can step up; elsewhere `-32600` with `data.requiredScopes`.
    InsufficientScope(Vec<String>),
}

impl Error {
    /// An execution failure, shown to the model.
    pub fn failed(message: impl Into<String>) -> Self {
        Error::Failed(message.into())
    }

    /// `-32602` Invalid params.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Error::Rpc(ErrorObject::invalid_params(message))
    }

    /// `-32603` Internal error.
    pub fn internal(message: impl Into<String>) -> Self {
        Error::Rpc(ErrorObject::internal_error(message))
    }

    /// `-32602` with `data.uri`, what the spec asks for an unknown resource.
    pub fn resource_not_found(uri: &str) -> Self {
        Error::Rpc(
            ErrorObject::invalid_params(format!("Resource not found: {uri}"))
                .with_data(serde_json::json!({ "uri": uri })),
        )
    }

    /// The JSON-RPC error object this error is sent as, for a request that is not a tool call.
    pub(crate) fn into_error_object(self) -> ErrorObject {
        match self {
            Error::Failed(message) => ErrorObject::internal_error(message),
            Error::Rpc(error) => error,
            Error::MissingCapability(required) => missing_capability(&required),
            Error::InputRequired(_) => ErrorObject::internal_error("input was required where none can be requested"),
            Error::InsufficientScope(needed) => insufficient_scope(&needed),
        }
    }
}

/// `-32600` naming the scopes a request needs, in `data.requiredScopes`.
pub(crate) fn insufficient_scope(needed: &[String]) -> ErrorObject {
    ErrorObject::invalid_request(format!("Forbidden: this request needs the scope(s) {}", needed.join(" ")))
        .with_data(serde_json::json!({ "requiredScopes": needed }))
}

/// `-32021` with `data.requiredCapabilities`.
pub(crate) fn missing_capability(required: &ClientCapabilities) -> ErrorObject {
    let names: Vec<&str> = capability_names(required);
    ErrorObject::new(
        error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("This request needs client capabilities the request did not declare: {}", names.join(", ")),
    )
    .with_data(serde_json::json!({ "requiredCapabilities": required }))
}

fn capability_names(caps: &ClientCapabilities) -> Vec<&'static str> {
    let mut names = Vec::new();
    if caps.sampling.is_some() {
        names.push("sampling");
    }
    if caps.elicitation.is_some() {
        names.push("elicitation");
    }
    if caps.roots.is_some() {
        names.push("roots");
    }
    if caps.extensions.is_some() {
        names.push("extensions");
    }
    names
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Failed(message) => f.write_str(message),
            Error::Rpc(error) => write!(f, "{error}"),
            Error::MissingCapability(caps) => {
                write!(f, "missing client capabilities: {}", capability_names(caps).join(", "))
            }
            Error::InputRequired(requests) => {
                let keys: Vec<&str> = requests.keys().map(String::as_str).collect();
                write!(f, "input required: {}", keys.join(", "))
            }
            Error::InsufficientScope(needed) => write!(f, "insufficient scope: needs {}", needed.join(" ")),
        }
    }
}

impl std::error::Error for Error {}

impl From<ErrorObject> for Error {
    fn from(error: ErrorObject) -> Self {
        Error::Rpc(error)
    }
}

/// The method of an input request, as it appears on the wire.
pub(crate) fn input_method(request: &InputRequest) -> &'static str {
    match request {
        InputRequest::CreateMessage(_) => "sampling/createMessage",
        InputRequest::ListRoots(_) => "roots/list",
        InputRequest::Elicit(_) => "elicitation/create",
        _ => "unknown",
    }
}
