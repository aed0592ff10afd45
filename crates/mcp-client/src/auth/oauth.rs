//! [`OAuth`] and its builder: the configuration, the token store and authorizer, and what the
//! client learned about the server's authorization ([`Session`]). What it does with them is in
//! [`flow`](super::flow), [`grants`](super::grants) and [`service`](super::service).

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::authorizer::Authorizer;
use super::discovery::ServerMetadata;
use super::jose::{Dpop, Es256Key};
use super::store::{InMemoryTokenStore, Secret, StoredTokens, TokenEndpointAuthMethod, TokenStore};

/// What the client knows about the authorization of the server: the resource, the issuer
/// chosen from its metadata, and that issuer's metadata.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub resource: String,
    pub issuer: String,
    pub metadata: Arc<ServerMetadata>,
    pub resource_scopes: Option<Vec<String>>,
}

#[derive(Debug, Clone)]
pub(super) struct Config {
    pub(super) client_name: String,
    pub(super) redirect_uri: Option<String>,
    pub(super) client_id: Option<String>,
    pub(super) client_secret: Option<Secret>,
    pub(super) client_auth_method: Option<TokenEndpointAuthMethod>,
    pub(super) client_key: Option<Arc<Es256Key>>,
    pub(super) client_issuer: Option<String>,
    /// The only authorization server used (`OAuthBuilder::authorization_server`).
    pub(super) trusted_issuer: Option<String>,
    pub(super) client_metadata_url: Option<String>,
    pub(super) scopes: Vec<String>,
    pub(super) protocol_version: String,
    /// A grant used instead of the authorization code flow.
    pub(super) unattended: Option<Unattended>,
}

pub(super) struct Inner {
    pub(super) config: Config,
    pub(super) store: Arc<dyn TokenStore>,
    pub(super) authorizer: Option<Arc<dyn Authorizer>>,
    /// Built on first use: loading the platform's root certificates costs milliseconds, and
    /// most requests never meet a challenge.
    http: std::sync::OnceLock<reqwest::Client>,
    /// The DPoP key and the nonces servers handed out, once DPoP is on: from the start when
    /// configured, else from the first metadata that requires DPoP-bound tokens.
    pub(super) dpop: std::sync::OnceLock<Dpop>,
    /// Whether DPoP follows the resource's metadata (neither `dpop(true)` nor `dpop(false)`).
    pub(super) dpop_auto: bool,
    pub(super) session: Mutex<Option<Session>>,
    /// One flow at a time: concurrent requests that hit a challenge wait and reuse its token.
    pub(super) flow: tokio::sync::Mutex<()>,
}

/// OAuth authorization for one protected MCP server; cheap to clone (clones share state).
#[derive(Clone)]
pub struct OAuth {
    pub(super) inner: Arc<Inner>,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("config", &self.inner.config)
            .field("authorizer", &self.inner.authorizer.is_some())
            .field("dpop", &self.inner.dpop)
            .finish_non_exhaustive()
    }
}

/// Builds an [`OAuth`].
pub struct OAuthBuilder {
    config: Config,
    store: Arc<dyn TokenStore>,
    authorizer: Option<Arc<dyn Authorizer>>,
    http: Option<reqwest::Client>,
    dpop: DpopChoice,
}

/// What [`OAuthBuilder::dpop`] chose.
#[derive(Debug)]
enum DpopChoice {
    /// On when the Protected Resource Metadata says `dpop_bound_access_tokens_required`.
    FromMetadata,
    Off,
    On(Option<Es256Key>),
}

impl fmt::Debug for OAuthBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthBuilder").field("config", &self.config).field("dpop", &self.dpop).finish_non_exhaustive()
    }
}

impl OAuthBuilder {
    /// The name shown to users and sent in Dynamic Client Registration.
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.config.client_name = name.into();
        self
    }

    /// Where the authorization server sends the user back (default: the authorizer's own).
    pub fn redirect_uri(mut self, uri: impl AsRef<str>) -> Self {
        self.config.redirect_uri = Some(uri.as_ref().to_owned());
        self
    }

    /// A pre-registered client id (used before any other way of getting one).
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.config.client_id = Some(client_id.into());
        self
    }

    /// The pre-registered client's secret.
    pub fn client_secret(mut self, secret: impl Into<Secret>) -> Self {
        self.config.client_secret = Some(secret.into());
        self
    }

    /// How the pre-registered client sends its secret (default: Basic when the server supports
    /// it, else in the body).
    pub fn client_auth_method(mut self, method: TokenEndpointAuthMethod) -> Self {
        self.config.client_auth_method = Some(method);
        self
    }

    /// Authenticates the pre-registered client with `private_key_jwt` (RFC 7523 §2.2): a
    /// fresh ES256 assertion signed with `key` on every token request, `iss` and `sub` the
    /// client id, `aud` the authorization server's issuer. Used instead of a client secret.
    /// Read a PEM key with [`Es256Key::from_pem`].
    pub fn client_key(mut self, key: Es256Key) -> Self {
        self.config.client_key = Some(Arc::new(key));
        self
    }

    /// Gets tokens with the client credentials grant (SEP-1046) instead of asking a user:
    /// the pre-registered [`client_id`](Self::client_id) with its
    /// [`client_secret`](Self::client_secret) or [`client_key`](Self::client_key).
    pub fn client_credentials(mut self) -> Self {
        self.config.unattended = Some(Unattended::ClientCredentials);
        self
    }

    /// Enterprise-managed authorization (SEP-990) instead of asking a user: the user's
    /// `id_token` from the enterprise IdP is exchanged at `idp_token_endpoint`, as the public
    /// client `idp_client_id`, for an Identity Assertion JWT Authorization Grant (RFC 8693,
    /// `audience` the authorization server's issuer, `resource` the protected resource), which
    /// is then presented with the JWT bearer grant (RFC 7523) as the pre-registered
    /// [`client_id`](Self::client_id) with its secret or key.
    pub fn enterprise_managed(
        mut self,
        idp_token_endpoint: impl Into<String>,
        idp_client_id: impl Into<String>,
        id_token: impl Into<Secret>,
    ) -> Self {
        self.config.unattended = Some(Unattended::EnterpriseManaged {
            idp_token_endpoint: idp_token_endpoint.into(),
            idp_client_id: idp_client_id.into(),
            id_token: id_token.into(),
        });
        self
    }

    /// Acts as another party, whose access token `subject` holds, instead of asking a user:
    /// OAuth 2.0 Token Exchange (RFC 8693). On a challenge, the subject token is exchanged at
    /// the authorization server's token endpoint, as the pre-registered
    /// [`client_id`](Self::client_id) with its secret or key, for an access token of this server
    /// (`audience` and `resource` the resource its metadata names, `requested_token_type` an
    /// access token, the scopes the challenge or the metadata name plus the configured ones; a
    /// DPoP proof with [`dpop`](Self::dpop)). The subject token goes nowhere else. The token
    /// issued is used until it is about to expire, then the subject's current token is
    /// exchanged again; one the server refuses (401) is exchanged again once per request. A
    /// refresh token in the response is dropped, so that what the token grants never outlives
    /// the subject's own.
    pub fn token_exchange(mut self, subject: SubjectToken) -> Self {
        self.config.unattended = Some(Unattended::TokenExchange { subject });
        self
    }

    /// The JWT bearer grant (RFC 7523 §2.1) with `assertion`, e.g. a workload identity token
    /// whose audience is the authorization server's issuer (SEP-1933), instead of asking a
    /// user. The [`client_id`](Self::client_id), if set, is sent along. One token request per
    /// challenge: an error is returned, never retried nor followed by another grant.
    pub fn jwt_bearer(mut self, assertion: impl Into<Secret>) -> Self {
        self.config.unattended = Some(Unattended::JwtBearer { assertion: assertion.into() });
        self
    }

    /// DPoP (RFC 9449) always (`true`, a key generated when the [`OAuth`] is built) or never
    /// (`false`): every token request carries a proof, and a DPoP-bound token goes out as
    /// `Authorization: DPoP …` with a fresh proof on every request. Unset, DPoP follows the
    /// server: it is turned on (with a key generated then) when the Protected Resource Metadata
    /// says `dpop_bound_access_tokens_required` (RFC 9728); with `dpop(false)` such a server is
    /// an [`AuthError::DpopRequired`](super::AuthError::DpopRequired).
    pub fn dpop(mut self, enabled: bool) -> Self {
        self.dpop = if enabled { DpopChoice::On(None) } else { DpopChoice::Off };
        self
    }

    /// DPoP (RFC 9449) always, with this key.
    pub fn dpop_key(mut self, key: Es256Key) -> Self {
        self.dpop = DpopChoice::On(Some(key));
        self
    }

    /// Restricts the pre-registered credentials to this issuer: they are never sent to
    /// another authorization server.
    pub fn client_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.config.client_issuer = Some(issuer.into());
        self
    }

    /// Trusts only the authorization server `issuer` (its issuer identifier, compared byte for
    /// byte): a server whose Protected Resource Metadata does not list it is refused with
    /// [`AuthError::UntrustedAuthorizationServer`](super::AuthError::UntrustedAuthorizationServer) before any request to the servers it lists,
    /// so that metadata, token requests and credentials go to `issuer` alone. Without it, the
    /// first authorization server the metadata lists is used.
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.config.trusted_issuer = Some(issuer.into());
        self
    }

    /// The HTTPS URL of this client's Client ID Metadata Document, used as `client_id` by
    /// authorization servers that support them.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.config.client_metadata_url = Some(url.into());
        self
    }

    /// Scopes to ask for in addition to those the server names.
    pub fn scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.config.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Who takes the user through authorization.
    pub fn authorizer(mut self, authorizer: impl Authorizer) -> Self {
        self.authorizer = Some(Arc::new(authorizer));
        self
    }

    /// Where tokens and registrations are kept (default: in memory).
    pub fn token_store(mut self, store: impl TokenStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// The MCP revision spoken (default 2026-07-28); from 2026-07-28 on, Dynamic Client
    /// Registration sends `application_type`.
    pub fn protocol_version(mut self, version: impl Into<String>) -> Self {
        self.config.protocol_version = version.into();
        self
    }

    /// The HTTP client for the authorization server (default: one that follows no redirects).
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// # Panics
    ///
    /// With [`dpop(true)`](Self::dpop), if the operating system has no randomness for the key.
    pub fn build(self) -> OAuth {
        let http = std::sync::OnceLock::new();
        if let Some(client) = self.http {
            let _ = http.set(client);
        }
        let dpop_auto = matches!(self.dpop, DpopChoice::FromMetadata);
        let dpop = std::sync::OnceLock::new();
        if let DpopChoice::On(key) = self.dpop {
            let key = key.unwrap_or_else(|| {
                Es256Key::generate().expect("the operating system's random number generator failed")
            });
            let _ = dpop.set(Dpop::with_key(key));
        }
        OAuth {
            inner: Arc::new(Inner {
                config: self.config,
                store: self.store,
                authorizer: self.authorizer,
                http,
                dpop,
                dpop_auto,
                session: Mutex::new(None),
                flow: tokio::sync::Mutex::new(()),
            }),
        }
    }
}

/// A grant that needs no user, used instead of the authorization code flow.
#[derive(Debug, Clone)]
pub(crate) enum Unattended {
    ClientCredentials,
    EnterpriseManaged { idp_token_endpoint: String, idp_client_id: String, id_token: Secret },
    JwtBearer { assertion: Secret },
    TokenExchange { subject: SubjectToken },
}

impl Unattended {
    /// Authorizations one request may make: a token exchange gets one (a fresh exchange of the
    /// same subject token after a refusal would be refused the same way); the others three.
    pub(crate) fn max_authorizations(unattended: Option<&Unattended>) -> u32 {
        match unattended {
            Some(Unattended::TokenExchange { .. }) => 1,
            _ => 3,
        }
    }
}

/// The access token an [`OAuthBuilder::token_exchange`] trades (RFC 8693 `subject_token`): the
/// one the party acted for presented. Cheap to clone (clones share it); [`set`](Self::set) it
/// when that party presents a newer one. `Debug` never shows it.
#[derive(Clone)]
pub struct SubjectToken(Arc<Mutex<Secret>>);

impl SubjectToken {
    /// Holds `token`.
    pub fn new(token: impl Into<Secret>) -> Self {
        SubjectToken(Arc::new(Mutex::new(token.into())))
    }

    /// Replaces the token: the next exchange trades this one.
    pub fn set(&self, token: impl Into<Secret>) {
        *self.0.lock().unwrap() = token.into();
    }

    /// The token now.
    pub fn get(&self) -> Secret {
        self.0.lock().unwrap().clone()
    }
}

impl fmt::Debug for SubjectToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SubjectToken(***)")
    }
}

impl OAuth {
    /// A builder with the defaults: no authorizer, an [`InMemoryTokenStore`], no pre-registered client.
    pub fn builder() -> OAuthBuilder {
        OAuthBuilder {
            config: Config {
                client_name: "mcp-client".into(),
                redirect_uri: None,
                client_id: None,
                client_secret: None,
                client_auth_method: None,
                client_key: None,
                client_issuer: None,
                trusted_issuer: None,
                client_metadata_url: None,
                scopes: Vec::new(),
                protocol_version: "2026-07-28".into(),
                unattended: None,
            },
            store: Arc::new(InMemoryTokenStore::new()),
            authorizer: None,
            http: None,
            dpop: DpopChoice::FromMetadata,
        }
    }

    /// The tokens currently used, if any.
    pub fn tokens(&self) -> Option<StoredTokens> {
        let session = self.session()?;
        self.inner.store.tokens(&session.resource, &session.issuer)
    }

    /// The HTTP client for the authorization server and metadata documents.
    pub(super) fn http(&self) -> &reqwest::Client {
        self.inner.http.get_or_init(|| {
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(Duration::from_secs(30))
                .build()
                .expect("a reqwest client without TLS options")
        })
    }

    /// The DPoP key and nonces, when DPoP is on.
    pub(super) fn dpop(&self) -> Option<&Dpop> {
        self.inner.dpop.get()
    }

    pub(super) fn session(&self) -> Option<Session> {
        self.inner.session.lock().unwrap().clone()
    }
}
