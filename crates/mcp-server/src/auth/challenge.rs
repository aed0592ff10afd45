//! What a refused request is answered with: its status, `WWW-Authenticate` challenge and OAuth
//! error body, and the quoting a challenge's parameters need.

use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::routes::is_scope_token;

/// A refused request: its status, `WWW-Authenticate` and OAuth error body.
#[derive(Debug)]
pub(crate) struct Challenge {
    pub(super) status: StatusCode,
    pub(super) www_authenticate: String,
    pub(super) error: &'static str,
    pub(super) description: String,
    pub(super) retry_after: Option<Duration>,
}

impl Challenge {
    /// The HTTP status the caller gets.
    pub(crate) fn status(&self) -> u16 {
        self.status.as_u16()
    }

    /// The OAuth error and its description, for a span's status (never the token).
    pub(crate) fn summary(&self) -> String {
        format!("{}: {}", self.error, self.description)
    }

    /// A refusal that is no challenge to authenticate: the request cannot be checked now.
    fn plain(status: StatusCode, error: &'static str, description: String) -> Challenge {
        Challenge { status, www_authenticate: String::new(), error, description, retry_after: None }
    }

    pub(super) fn unavailable(why: &str) -> Challenge {
        let description = format!("the access token cannot be verified now: {why}");
        Challenge::plain(StatusCode::SERVICE_UNAVAILABLE, "temporarily_unavailable", description)
    }

    pub(super) fn misconfigured(why: &str) -> Challenge {
        let description = format!("the server cannot verify access tokens as configured: {why}");
        Challenge::plain(StatusCode::INTERNAL_SERVER_ERROR, "server_error", description)
    }

    pub(super) fn too_many_failures(retry_after: Duration) -> Challenge {
        let description = "too many refused tokens from this address; retry later".to_owned();
        let refusal = Challenge::plain(StatusCode::TOO_MANY_REQUESTS, "too_many_failed_verifications", description);
        Challenge { retry_after: Some(retry_after), ..refusal }
    }
}

impl IntoResponse for Challenge {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.error, "error_description": self.description }).to_string();
        let mut response = (self.status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
        if let Some(retry_after) = self.retry_after {
            // Whole seconds, rounded up: never an invitation to retry too early.
            let seconds = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if let Ok(value) = HeaderValue::from_str(&self.www_authenticate)
            && !self.www_authenticate.is_empty()
        {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// The scope-tokens of `scopes`, space-separated, for a challenge's `scope`. `try_build` and
/// `Server::build` refuse any other name; one that got past `build` is left out here rather
/// than break out of the quoted string.
pub(super) fn scope_list<S: AsRef<str>>(scopes: &[S]) -> String {
    let valid = scopes.iter().map(AsRef::as_ref).filter(|scope| is_scope_token(scope));
    valid.collect::<Vec<&str>>().join(" ")
}

/// `text` made safe inside a quoted-string of a header.
pub(super) fn quoted(text: &str) -> String {
    text.chars().filter(|c| *c != '"' && *c != '\\' && (' '..='~').contains(c)).collect()
}
