//! Where tokens and client registrations live between requests (and, with a persistent
//! [`TokenStore`], between runs).

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// A string that must never be shown: `Debug` and `Display` print `***`. Read it with
/// [`expose`](Secret::expose) only where it is sent.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret value itself.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

/// The tokens one authorization server issued for one protected resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredTokens {
    /// The access token.
    pub access_token: Secret,
    /// The refresh token, if the server issued one.
    pub refresh_token: Option<Secret>,
    /// When the access token expires, if the server said.
    pub expires_at: Option<SystemTime>,
    /// The scopes granted (the token response's `scope`, else the scopes requested).
    pub scopes: Vec<String>,
    /// The access token is DPoP-bound (`token_type` `DPoP`, RFC 9449): it is sent as
    /// `Authorization: DPoP …` with a proof of the key it is bound to.
    #[serde(default)]
    pub dpop: bool,
}

impl StoredTokens {
    /// Whether the access token has expired (or will within `margin`).
    pub fn expires_within(&self, margin: std::time::Duration) -> bool {
        self.expires_at.is_some_and(|at| at <= SystemTime::now() + margin)
    }
}

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TokenEndpointAuthMethod {
    /// HTTP Basic with the form-encoded client id and secret.
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the request body.
    ClientSecretPost,
    /// A public client: only `client_id` in the body.
    None,
}

impl TokenEndpointAuthMethod {
    /// The registered name (`"client_secret_basic"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            TokenEndpointAuthMethod::ClientSecretBasic => "client_secret_basic",
            TokenEndpointAuthMethod::ClientSecretPost => "client_secret_post",
            TokenEndpointAuthMethod::None => "none",
        }
    }

    /// The method of a registered name; `None` for a name this client does not support.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "client_secret_basic" => Some(TokenEndpointAuthMethod::ClientSecretBasic),
            "client_secret_post" => Some(TokenEndpointAuthMethod::ClientSecretPost),
            "none" => Some(TokenEndpointAuthMethod::None),
            _ => None,
        }
    }
}

/// The client's identity at one authorization server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientRegistration {
    /// The client id the authorization server knows this client by.
    pub client_id: String,
    /// The client secret, for a confidential client.
    pub client_secret: Option<Secret>,
    /// How the client authenticates at the token endpoint.
    pub token_endpoint_auth_method: TokenEndpointAuthMethod,
}

/// Storage for tokens, keyed by protected resource and issuer, and for dynamic client
/// registrations, keyed by issuer: what one authorization server issued is never offered to
/// another. Calls are synchronous and should be quick (an in-memory map, a file, a keychain).
pub trait TokenStore: Send + Sync + 'static {
    /// The tokens stored for `resource` from `issuer`.
    fn tokens(&self, resource: &str, issuer: &str) -> Option<StoredTokens>;
    /// Stores `tokens` for `resource` from `issuer`, replacing any earlier ones.
    fn save_tokens(&self, resource: &str, issuer: &str, tokens: StoredTokens);
    /// Forgets the tokens for `resource` from `issuer` (they were refused).
    fn clear_tokens(&self, resource: &str, issuer: &str);
    /// The registration stored for `issuer`.
    fn registration(&self, issuer: &str) -> Option<ClientRegistration>;
    /// Stores the registration obtained from `issuer`.
    fn save_registration(&self, issuer: &str, registration: ClientRegistration);
}

/// The default [`TokenStore`]: everything is forgotten when the process ends.
#[derive(Debug, Default)]
pub struct InMemoryTokenStore {
    tokens: Mutex<HashMap<(String, String), StoredTokens>>,
    registrations: Mutex<HashMap<String, ClientRegistration>>,
}

impl InMemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl TokenStore for InMemoryTokenStore {
    fn tokens(&self, resource: &str, issuer: &str) -> Option<StoredTokens> {
        self.tokens.lock().unwrap().get(&(resource.to_owned(), issuer.to_owned())).cloned()
    }

    fn save_tokens(&self, resource: &str, issuer: &str, tokens: StoredTokens) {
        self.tokens.lock().unwrap().insert((resource.to_owned(), issuer.to_owned()), tokens);
    }

    fn clear_tokens(&self, resource: &str, issuer: &str) {
        self.tokens.lock().unwrap().remove(&(resource.to_owned(), issuer.to_owned()));
    }

    fn registration(&self, issuer: &str) -> Option<ClientRegistration> {
        self.registrations.lock().unwrap().get(issuer).cloned()
    }

    fn save_registration(&self, issuer: &str, registration: ClientRegistration) {
        self.registrations.lock().unwrap().insert(issuer.to_owned(), registration);
    }
}
