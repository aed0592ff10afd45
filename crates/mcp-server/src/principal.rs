//! Who is making a request, as far as the transport (or an auth layer in front of it) knows.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Map, Value};

/// The authenticated party behind a request: what a task is bound to, so that only the party
/// that created a task can read, answer or cancel it, and what a legacy HTTP session is bound to.
///
/// On HTTP, `HttpConfig::authorization` (feature
/// `auth`) verifies each request's access token and makes its subject the principal, with the
/// [`VerifiedToken`] attached; a layer of the application's own in front of the router may
/// instead insert one into the request's extensions
/// (`request.extensions_mut().insert(Principal::new(subject))`). On stdio and in-memory
/// connections the whole connection has one ([`Server::serve_as`](crate::Server::serve_as)).
///
/// Without one, a request is [`Principal::anonymous`]: every anonymous request is the same
/// party, so a task created anonymously is reachable by anyone who has its id. Task ids are
/// unguessable (128 random bits), which makes the id a bearer token, as the tasks extension
/// allows; set a principal where that is not enough.
///
/// Two principals are the same party when their ids are equal, whatever token each came with.
///
/// The principal of a verified token is its `sub` (a user, or whatever the issuer names as the
/// subject). A token without a string `sub` (a client credentials token naming only its
/// `client_id`) is the principal `client:<client_id>`, in a namespace of its own: a client
/// registered as `alice` is never the user `alice`. Configuration that lists principals (the
/// gateway's `principals = [...]`) writes such clients as `client:<client_id>`. The verifiers
/// refuse a `sub` that is empty or itself starts with `client:`, so the two never meet.
#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Principal {
    id: String,
    #[serde(skip)]
    token: Option<Arc<VerifiedToken>>,
}

impl Principal {
    /// The party named `id` (a subject, an account id, a key id). The empty id is anonymous.
    pub fn new(id: impl Into<String>) -> Self {
        Principal { id: id.into(), token: None }
    }

    /// The party a verified access token names: its subject, else `client:<client id>` (a
    /// client credentials token; see the type's documentation), with the token attached.
    pub fn from_token(token: VerifiedToken) -> Self {
        Principal { id: Self::id_of(&token), token: Some(Arc::new(token)) }
    }

    /// [`from_token`](Self::from_token) of a token already shared.
    #[cfg(feature = "auth")]
    pub(crate) fn from_shared_token(token: Arc<VerifiedToken>) -> Self {
        Principal { id: Self::id_of(&token), token: Some(token) }
    }

    /// The prefix of the principals of tokens that name a client but no subject.
    pub const CLIENT_PREFIX: &'static str = "client:";

    fn id_of(token: &VerifiedToken) -> String {
        match (&token.subject, &token.client_id) {
            (Some(subject), _) if !subject.is_empty() => subject.clone(),
            (_, Some(client)) if !client.is_empty() => format!("{}{client}", Self::CLIENT_PREFIX),
            _ => String::new(),
        }
    }

    /// The party of requests nobody authenticated.
    pub fn anonymous() -> Self {
        Principal::default()
    }

    /// Whether this is the anonymous party (the empty id).
    pub fn is_anonymous(&self) -> bool {
        self.id.is_empty()
    }

    /// The party's id.
    pub fn as_str(&self) -> &str {
        &self.id
    }

    /// The access token this request was authorized with, when the server verified one.
    pub fn token(&self) -> Option<&VerifiedToken> {
        self.token.as_deref()
    }

    #[cfg(feature = "http")]
    pub(crate) fn token_arc(&self) -> Option<&Arc<VerifiedToken>> {
        self.token.as_ref()
    }

    /// The same party with `token` attached instead.
    pub(crate) fn with_token(&self, token: Option<Arc<VerifiedToken>>) -> Self {
        Principal { id: self.id.clone(), token }
    }
}

impl PartialEq for Principal {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for Principal {}

impl Hash for Principal {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_anonymous() { f.write_str("Principal(anonymous)") } else { write!(f, "Principal({:?})", self.id) }
    }
}

/// What a verified access token says: the subject and client it was issued to, its scopes and
/// expiry, and every claim (of a JWT, or of the introspection answer). Holds the token itself
/// only where the resource server was told to keep it (`ResourceServerBuilder::keep_access_tokens`,
/// feature `auth`), for a token exchange; its `Debug` never shows it.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct VerifiedToken {
    /// `sub`: the resource owner (a user), or the client itself for a client credentials grant.
    pub subject: Option<String>,
    /// `client_id`: the OAuth client the token was issued to.
    pub client_id: Option<String>,
    /// The granted scopes (`scope`, space-separated on the wire).
    pub scopes: Vec<String>,
    /// `exp`, when the token has one.
    pub expires_at: Option<SystemTime>,
    /// `iss`.
    pub issuer: Option<String>,
    /// `cnf.jkt`: the thumbprint of the DPoP key the token is bound to (RFC 9449).
    pub dpop_jkt: Option<String>,
    /// Every claim, as issued.
    pub claims: Map<String, Value>,
    /// The token as the client sent it, when kept.
    pub(crate) raw: Option<RawToken>,
}

/// An access token as a client sent it: shown by `Debug` as `[redacted]`.
#[derive(Clone, PartialEq)]
pub(crate) struct RawToken(Arc<str>);

impl fmt::Debug for RawToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl VerifiedToken {
    /// A token of these claims: `sub`, `client_id`, `scope` (or `scp`), `exp`, `iss` and
    /// `cnf.jkt` are read from them.
    pub fn from_claims(claims: Map<String, Value>) -> Self {
        let string = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
        let scopes = match (claims.get("scope"), claims.get("scp")) {
            (Some(Value::String(scope)), _) => scope.split_ascii_whitespace().map(str::to_owned).collect(),
            (_, Some(Value::Array(scopes))) => scopes.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            (_, Some(Value::String(scope))) => scope.split_ascii_whitespace().map(str::to_owned).collect(),
            _ => Vec::new(),
        };
        let expires_at = claims
            .get("exp")
            .and_then(Value::as_u64)
            .map(|exp| SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(exp));
        let dpop_jkt = claims.get("cnf").and_then(|cnf| cnf.get("jkt")).and_then(Value::as_str).map(str::to_owned);
        VerifiedToken {
            subject: string("sub"),
            client_id: string("client_id").or_else(|| string("azp")),
            scopes,
            expires_at,
            issuer: string("iss"),
            dpop_jkt,
            claims,
            raw: None,
        }
    }

    /// The token itself, as the client sent it, when the resource server keeps it
    /// (`ResourceServerBuilder::keep_access_tokens`, feature `auth`): for a server that trades it at the authorization server for a token of its own (RFC 8693 token
    /// exchange). Never send it to another server: MCP forbids token passthrough.
    pub fn access_token(&self) -> Option<&str> {
        self.raw.as_ref().map(|raw| &*raw.0)
    }

    /// This token with `token`, the one the client sent, kept.
    #[cfg(feature = "auth")]
    pub(crate) fn keeping(mut self, token: &str) -> Self {
        self.raw = Some(RawToken(token.into()));
        self
    }

    /// Whether the token grants `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|granted| granted == scope)
    }
}

#[cfg(all(test, feature = "auth"))]
mod tests {
    use super::*;

    #[test]
    fn a_kept_token_is_read_only_through_access_token_and_never_shown() {
        let token = VerifiedToken::from_claims(Map::new());
        assert_eq!(token.access_token(), None);
        let kept = token.keeping("eyJ.secret.sig");
        assert_eq!(kept.access_token(), Some("eyJ.secret.sig"));
        assert!(!format!("{kept:?}").contains("secret"), "{kept:?}");
    }
}
