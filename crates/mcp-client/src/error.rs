//! The one error type of the crate: every failure says what happened and where.

use std::fmt;
use std::time::Duration;

use mcp_types::ErrorObject;

/// A client failure.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The transport failed: the process could not be spawned or died, a connection broke, an
    /// HTTP request could not be sent.
    Transport {
        /// What failed.
        message: String,
        /// The underlying error, if any.
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The server answered with an HTTP status this client cannot act on.
    HttpStatus {
        /// The HTTP status.
        status: u16,
        /// The response body (possibly truncated).
        body: String,
    },
    /// No answer within the configured time.
    Timeout {
        /// The method called.
        method: String,
        /// The time waited.
        after: Duration,
    },
    /// The server answered the request with a JSON-RPC error (on HTTP, `http_status` is set
    /// when the error came with a non-2xx status).
    Rpc {
        /// The method called.
        method: String,
        /// The server's error object.
        error: ErrorObject,
        /// The HTTP status of a non-2xx error response.
        http_status: Option<u16>,
    },
    /// The server broke the protocol: malformed JSON-RPC, a result of the wrong shape, an
    /// unknown `resultType`, a pagination loop.
    Protocol(String),
    /// No protocol version both sides speak.
    VersionMismatch {
        /// The version the client asked for.
        requested: String,
        /// The versions the server offered.
        offered: Vec<String>,
    },
    /// The server does not implement a method this client was asked to call.
    NotSupported {
        /// The method.
        method: String,
        /// How the server said so.
        detail: String,
    },
    /// A handler supplied by the application failed, or none was supplied for what the server
    /// asked for.
    Handler(String),
    /// A limit of this client was reached; `limit` names the setting that sets it (for
    /// example `ClientBuilder::max_list_pages`).
    LimitExceeded {
        /// The setting that sets the limit.
        limit: &'static str,
        /// What exceeded it.
        message: String,
    },
    /// The task a call became (tasks extension) was cancelled before it completed.
    TaskCancelled {
        /// The task's id.
        task_id: String,
        /// The task's `statusMessage`, if any.
        message: Option<String>,
    },
    /// The arguments given for a tool call or prompt are not a JSON object (of strings, for a
    /// prompt); nothing was sent.
    InvalidArguments {
        /// The tool's or prompt's name.
        tool: String,
        /// Why the arguments were refused.
        message: String,
    },
    /// The connection is closed (the client was shut down, or the server went away).
    Closed,
    /// A skill file did not match its entry (size, digest, frontmatter, or not listed): the
    /// content was not used (skills extension).
    SkillVerification {
        /// The file's URI.
        uri: String,
        /// What did not match.
        detail: String,
    },
    /// OAuth authorization failed (feature `auth`).
    #[cfg(feature = "auth")]
    Auth(crate::auth::AuthError),
}

impl Error {
    pub(crate) fn transport(message: impl Into<String>) -> Self {
        Error::Transport { message: message.into(), source: None }
    }

    pub(crate) fn transport_with(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::Transport { message: message.into(), source: Some(Box::new(source)) }
    }

    pub(crate) fn protocol(message: impl Into<String>) -> Self {
        Error::Protocol(message.into())
    }

    pub(crate) fn limit(limit: &'static str, message: impl Into<String>) -> Self {
        Error::LimitExceeded { limit, message: message.into() }
    }

    /// The JSON-RPC error object, when the server answered with one.
    pub fn rpc_error(&self) -> Option<&ErrorObject> {
        match self {
            Error::Rpc { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The authorization failure, when authorization failed.
    #[cfg(feature = "auth")]
    pub fn auth_error(&self) -> Option<&crate::auth::AuthError> {
        match self {
            Error::Auth(error) => Some(error),
            _ => None,
        }
    }

    /// The JSON-RPC error code, when the server answered with an error.
    pub fn code(&self) -> Option<i64> {
        self.rpc_error().and_then(|e| e.code.as_i64())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Transport { message, source: Some(source) } => write!(f, "transport error: {message}: {source}"),
            Error::Transport { message, source: None } => write!(f, "transport error: {message}"),
            Error::HttpStatus { status, body } if body.is_empty() => write!(f, "HTTP status {status}"),
            Error::HttpStatus { status, body } => write!(f, "HTTP status {status}: {body}"),
            Error::Timeout { method, after } => write!(f, "{method} timed out after {after:?}"),
            Error::Rpc { method, error, .. } => {
                write!(f, "{method} failed: {} (code {})", error.message, error.code)?;
                if let Some(data) = &error.data {
                    write!(f, ", data: {data}")?;
                }
                Ok(())
            }
            Error::Protocol(message) => write!(f, "protocol violation by the server: {message}"),
            Error::VersionMismatch { requested, offered } => write!(
                f,
                "no common protocol version: the client asked for {requested}, the server offers [{}]",
                offered.join(", ")
            ),
            Error::NotSupported { method, detail } => write!(f, "the server does not support {method}: {detail}"),
            Error::Handler(message) => write!(f, "client handler: {message}"),
            Error::LimitExceeded { limit, message } => write!(f, "{message} (limit: {limit})"),
            Error::TaskCancelled { task_id, message: Some(message) } => {
                write!(f, "task {task_id} was cancelled: {message}")
            }
            Error::TaskCancelled { task_id, message: None } => write!(f, "task {task_id} was cancelled"),
            Error::InvalidArguments { tool, message } => write!(f, "invalid arguments for {tool:?}: {message}"),
            Error::Closed => f.write_str("the connection is closed"),
            Error::SkillVerification { uri, detail } => write!(f, "skill file {uri} failed verification: {detail}"),
            #[cfg(feature = "auth")]
            Error::Auth(error) => write!(f, "authorization failed: {error}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Transport { source: Some(source), .. } => Some(source.as_ref()),
            Error::Rpc { error, .. } => Some(error),
            #[cfg(feature = "auth")]
            Error::Auth(error) => Some(error),
            _ => None,
        }
    }
}

/// What a handler returns when it cannot answer: the message is shown to the server (legacy
/// era) or surfaced to the caller (modern era, where there is no channel back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandlerError(pub String);

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HandlerError {}

impl From<String> for HandlerError {
    fn from(message: String) -> Self {
        HandlerError(message)
    }
}

impl From<&str> for HandlerError {
    fn from(message: &str) -> Self {
        HandlerError(message.to_owned())
    }
}
