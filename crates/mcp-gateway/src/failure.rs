//! What a caller is told of an upstream's failure, and what the log keeps of it: an upstream's
//! error text (an HTTP error page may echo the gateway's request headers) never reaches a caller;
//! the caller gets the kind of failure and a request id, the log the whole text under that id,
//! with credentials redacted.

use std::sync::atomic::{AtomicU64, Ordering};

/// A new id for one failure, unique in this process (the log line carries it too).
pub(crate) fn request_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("gw-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The kind of failure, without anything the upstream wrote: the HTTP status, a timeout, a
/// refused connection, a protocol error.
pub(crate) fn kind(error: &mcp_client::Error) -> String {
    use mcp_client::Error;
    match error {
        Error::HttpStatus { status, .. } => format!("HTTP status {status}"),
        Error::Timeout { after, .. } => format!("timeout after {after:?}"),
        Error::Transport { .. } => {
            let text = error_chain(error).to_ascii_lowercase();
            if text.contains("refused") {
                "connection refused".to_owned()
            } else if text.contains("timed out") {
                "timeout".to_owned()
            } else {
                "connection failed".to_owned()
            }
        }
        Error::Rpc { error, .. } => format!("JSON-RPC error {}", error.code),
        Error::Protocol(_) => "protocol error".to_owned(),
        Error::VersionMismatch { .. } => "no protocol version in common".to_owned(),
        Error::NotSupported { method, .. } => format!("`{method}` not supported"),
        Error::LimitExceeded { limit, .. } => format!("over the limit {limit}"),
        Error::Closed => "connection closed".to_owned(),
        Error::TaskCancelled { .. } => "task cancelled".to_owned(),
        Error::Auth(mcp_client::auth::AuthError::UntrustedAuthorizationServer { trusted, listed }) => format!(
            "authorization refused: its metadata names the authorization server(s) {}, not the configured issuer {trusted}",
            listed.join(", ")
        ),
        Error::Auth(mcp_client::auth::AuthError::TokenEndpoint { status, .. }) => {
            format!("authorization failed (token endpoint HTTP status {status})")
        }
        Error::Auth(_) => "authorization failed".to_owned(),
        _ => "failure".to_owned(),
    }
}

/// The error and its sources, `: `-joined (reqwest's `error sending request` says why only there).
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

const REDACTED: &str = "[redacted]";

/// `text` with every `secret` (of at least 4 bytes) and every credential that follows an
/// authorization scheme (`Bearer`, `Basic`, `DPoP`) or an `Authorization` header name replaced.
pub(crate) fn redact(text: &str, secrets: &[String]) -> String {
    let mut text = text.to_owned();
    for secret in secrets.iter().filter(|s| s.len() >= 4) {
        text = text.replace(secret.as_str(), REDACTED);
    }
    for scheme in ["bearer", "basic", "dpop", "authorization"] {
        text = redact_after(&text, scheme);
    }
    text
}

/// Replaces the credential that follows each (case-insensitive) `word`: after the separators
/// that may come between (spaces, `:`, `=`, quotes), the run up to the next space, quote, comma,
/// `<` or line end.
fn redact_after(text: &str, word: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(found) = lower[at..].find(word) {
        let start = at + found + word.len();
        out.push_str(&text[at..start]);
        let rest = &text[start..];
        let separators = rest.len() - rest.trim_start_matches([' ', ':', '=', '"', '\'', '\\']).len();
        out.push_str(&rest[..separators]);
        let value = &rest[separators..];
        let end = value.find([' ', '"', '\'', ',', '<', '\r', '\n', '\\']).unwrap_or(value.len());
        if end > 0 {
            // Another scheme name is not a credential: `Authorization: Bearer x` redacts `x`.
            let taken = &value[..end];
            if ["bearer", "basic", "dpop"].contains(&taken.to_ascii_lowercase().as_str()) {
                out.push_str(taken);
            } else {
                out.push_str(REDACTED);
            }
        }
        at = start + separators + end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_configured_secrets_are_redacted() {
        let page = "<pre>authorization: Bearer eyJ.abc.def\nx-api-key: k3y-value\nAuthorization=\"Basic Z3c6cw==\"\n\
                    {\"authorization\":\"DPoP tok\"} ok</pre>";
        let redacted = redact(page, &["k3y-value".to_owned()]);
        for secret in ["eyJ.abc.def", "k3y-value", "Z3c6cw==", "tok\""] {
            assert!(!redacted.contains(secret), "{secret} in {redacted}");
        }
        assert!(redacted.contains("authorization: Bearer [redacted]"), "{redacted}");
        assert!(redacted.ends_with("ok</pre>"), "{redacted}");
        assert_eq!(redact("nothing secret here", &[]), "nothing secret here");
    }

    #[test]
    fn the_kind_of_a_failure_holds_nothing_the_upstream_wrote() {
        use mcp_client::Error;
        let page = Error::HttpStatus { status: 502, body: "Authorization: Bearer leaked".into() };
        assert_eq!(kind(&page), "HTTP status 502");
        let timeout = Error::Timeout { method: "tools/call".into(), after: std::time::Duration::from_secs(2) };
        assert_eq!(kind(&timeout), "timeout after 2s");
        let refused = Error::Transport { message: "connect: Connection refused (os error 111)".into(), source: None };
        assert_eq!(kind(&refused), "connection refused");
        assert_eq!(kind(&Error::Protocol("leaked".into())), "protocol error");
    }
}
