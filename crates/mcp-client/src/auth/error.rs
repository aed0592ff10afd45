//! [`AuthError`]: one variant for each way authorization fails, and the message it displays.

use std::fmt;

/// Why authorization failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum AuthError {
    /// No Protected Resource Metadata was found at any of the URLs tried.
    NoResourceMetadata {
        /// The metadata URLs tried, in order.
        tried: Vec<String>,
        /// Why the last one failed.
        reason: String,
    },
    /// The Protected Resource Metadata names another resource than the server.
    ResourceMismatch {
        /// The `resource` the metadata names.
        resource: String,
        /// The MCP server's URL.
        server: String,
    },
    /// No usable authorization server metadata was found for the issuer.
    NoServerMetadata {
        /// The authorization server's issuer.
        issuer: String,
        /// The metadata URLs tried, in order.
        tried: Vec<String>,
    },
    /// The authorization server metadata names another issuer than the one it was fetched
    /// for; its endpoints were not used.
    IssuerMismatch {
        /// The issuer the metadata was fetched for.
        expected: String,
        /// The issuer the metadata names.
        found: String,
    },
    /// The authorization server does not support PKCE with S256.
    PkceNotSupported {
        /// The authorization server's issuer.
        issuer: String,
    },
    /// The authorization response's `iss` (RFC 9207) is not the issuer, or is missing while
    /// the server said it sends one. No token was requested.
    IssMismatch {
        /// The issuer.
        expected: String,
        /// The `iss` received (`None`: absent).
        found: Option<String>,
    },
    /// The authorization response's `state` is not the one sent.
    StateMismatch,
    /// The authorization server refused (`error` in the authorization response).
    AuthorizationDenied {
        /// The OAuth `error` code.
        error: String,
        /// The `error_description`, if any.
        description: Option<String>,
    },
    /// The authorization response has no `code`.
    MissingCode,
    /// The server kept refusing after this many authorizations for one request.
    TooManyAuthorizationAttempts {
        /// How many authorizations were made.
        attempts: u32,
    },
    /// The resource accepts only DPoP-bound tokens (its metadata's
    /// `dpop_bound_access_tokens_required`) and DPoP was turned off (`dpop(false)`).
    DpopRequired {
        /// The resource its metadata names.
        resource: String,
    },
    /// The token endpoint refused.
    TokenEndpoint {
        /// The HTTP status.
        status: u16,
        /// The OAuth `error` code, if the body had one.
        error: Option<String>,
        /// The `error_description`, if any.
        description: Option<String>,
    },
    /// Dynamic Client Registration was refused.
    Registration {
        /// The HTTP status.
        status: u16,
        /// The registration `error` code, if the body had one.
        error: Option<String>,
        /// The `error_description`, if any.
        description: Option<String>,
    },
    /// The Protected Resource Metadata does not list the one authorization server this client
    /// trusts ([`OAuthBuilder::authorization_server`](super::OAuthBuilder::authorization_server)); no request was sent to any it lists.
    UntrustedAuthorizationServer {
        /// The authorization server this client trusts.
        trusted: String,
        /// The ones the metadata lists.
        listed: Vec<String>,
    },
    /// No client identity for this issuer: no pre-registered credentials, no Client ID
    /// Metadata Document support and no registration endpoint.
    NoClientIdentity {
        /// The authorization server's issuer.
        issuer: String,
    },
    /// Authorization is needed but no [`Authorizer`](super::Authorizer) was configured.
    NoAuthorizer,
    /// The [`Authorizer`](super::Authorizer) failed (no redirect in time, the user gave up, …).
    Authorizer(String),
    /// A metadata, registration or token document is malformed.
    InvalidMetadata(String),
    /// An HTTP request to the authorization server failed.
    Http(String),
    /// Anything else (no randomness, no redirect URI configured).
    Internal(String),
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let described = |error: &Option<String>, description: &Option<String>| {
            let mut text = error.clone().unwrap_or_else(|| "no OAuth error code".into());
            if let Some(description) = description {
                text.push_str(": ");
                text.push_str(description);
            }
            text
        };
        match self {
            AuthError::NoResourceMetadata { tried, reason } => {
                write!(f, "no protected resource metadata at {} ({reason})", tried.join(", "))
            }
            AuthError::ResourceMismatch { resource, server } => write!(
                f,
                "the protected resource metadata is for {resource}, not for the server {server}: not authorizing"
            ),
            AuthError::NoServerMetadata { issuer, tried } => {
                write!(f, "no authorization server metadata for {issuer} at {}", tried.join(", "))
            }
            AuthError::IssuerMismatch { expected, found } => {
                write!(f, "the authorization server metadata of {expected} names the issuer {found}; not used")
            }
            AuthError::PkceNotSupported { issuer } => {
                write!(f, "the authorization server {issuer} does not support PKCE with S256")
            }
            AuthError::IssMismatch { expected, found: Some(found) } => {
                write!(f, "the authorization response comes from issuer {found}, expected {expected}")
            }
            AuthError::IssMismatch { expected, found: None } => {
                write!(f, "the authorization response has no iss although {expected} advertises it")
            }
            AuthError::StateMismatch => f.write_str("the authorization response's state is not the one sent"),
            AuthError::AuthorizationDenied { error, description } => {
                write!(f, "authorization denied: {}", described(&Some(error.clone()), description))
            }
            AuthError::MissingCode => f.write_str("the authorization response has no code"),
            AuthError::TooManyAuthorizationAttempts { attempts } => {
                write!(f, "the server still refuses after {attempts} authorization attempts")
            }
            AuthError::DpopRequired { resource } => write!(
                f,
                "{resource} accepts only DPoP-bound tokens (dpop_bound_access_tokens_required) and DPoP is turned off: \
                 leave `dpop` unset or turn it on"
            ),
            AuthError::TokenEndpoint { status, error, description } => {
                write!(f, "the token endpoint refused (HTTP {status}): {}", described(error, description))
            }
            AuthError::Registration { status, error, description } => {
                write!(f, "client registration refused (HTTP {status}): {}", described(error, description))
            }
            AuthError::UntrustedAuthorizationServer { trusted, listed } => write!(
                f,
                "the protected resource names the authorization server(s) {}, not {trusted}, the only one trusted: \
                 not authorizing",
                listed.join(", ")
            ),
            AuthError::NoClientIdentity { issuer } => write!(
                f,
                "no client identity for {issuer}: no pre-registered client, no client ID metadata document support, \
                 no registration endpoint"
            ),
            AuthError::NoAuthorizer => f.write_str("authorization is needed but no authorizer is configured"),
            AuthError::Authorizer(message) => write!(f, "authorizer: {message}"),
            AuthError::InvalidMetadata(message) => write!(f, "invalid authorization metadata: {message}"),
            AuthError::Http(message) => write!(f, "authorization server request failed: {message}"),
            AuthError::Internal(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for AuthError {}
