//! OAuth 2.1 authorization for the HTTP transports (feature `auth`), as the MCP authorization
//! specification describes it.
//!
//! Attach an [`OAuth`] with [`ClientBuilder::oauth`](crate::ClientBuilder::oauth): every HTTP
//! request then carries `Authorization: Bearer …`, and a 401, or a 403 with
//! `error="insufficient_scope"`, turns into a token and a retry of the same request,
//! transparently to the caller. It does so as a tower layer over the client's HTTP service
//! ([`OAuth::layer`], the innermost of the [`layer`](crate::layer) stack), and depends on
//! neither the transports nor the protocol core:
//!
//! 1. Protected Resource Metadata (RFC 9728): the challenge's `resource_metadata`, else the
//!    path-based well-known URL, then the root one. Its `resource` must name the server (same
//!    origin, path prefix), or the client stops ([`AuthError::ResourceMismatch`]).
//! 2. Authorization server metadata (RFC 8414, OpenID discovery) in the specification's order;
//!    a document whose `issuer` is not exactly the issuer is not used. The issuer is the first
//!    the PRM lists, or the one pinned with [`OAuthBuilder::authorization_server`] (a PRM that
//!    does not list it is refused before any request to another server).
//! 3. Client identity: pre-registered credentials, else a Client ID Metadata Document URL when
//!    the server supports them, else Dynamic Client Registration (per issuer, so a new
//!    authorization server means a new registration).
//! 4. Authorization code with PKCE S256, `state`, and `resource` (the PRM string, byte for
//!    byte); the `iss` response parameter (RFC 9207) is compared by plain string equality
//!    before the code is exchanged.
//! 5. Scopes: the challenge's, else the PRM `scopes_supported`, else none, plus those already
//!    granted (step-up) and `offline_access` when the authorization server lists it. At most
//!    three authorizations per request, then [`AuthError::TooManyAuthorizationAttempts`].
//!    Refresh tokens are used before asking the user again.
//!
//! Extensions (each replaces step 4 after the same discovery, and runs on a 401 the same way):
//!
//! * [`OAuthBuilder::client_credentials`]: the client credentials grant (SEP-1046) as the
//!   pre-registered client, with its secret (Basic or in the body) or, with
//!   [`OAuthBuilder::client_key`], an ES256 `private_key_jwt` assertion whose audience is the
//!   issuer (RFC 7523).
//! * [`OAuthBuilder::enterprise_managed`]: enterprise-managed authorization (SEP-990), the
//!   user's ID token exchanged at the enterprise IdP (RFC 8693) for an ID-JAG, presented with
//!   the JWT bearer grant.
//! * [`OAuthBuilder::jwt_bearer`]: the JWT bearer grant with a workload identity token
//!   (SEP-1933); one request, an error is returned, never retried with another grant.
//! * [`OAuthBuilder::dpop`] / [`OAuthBuilder::dpop_key`]: DPoP (RFC 9449, SEP-1932) with any
//!   grant. Token requests carry a proof; a DPoP-bound token is sent as
//!   `Authorization: DPoP …` with a fresh proof (`htm`, `htu`, `ath`) on every request (POST,
//!   GET streams, DELETE). A server's `use_dpop_nonce` demand, at the authorization server or
//!   the MCP server, is answered by resending once with its nonce, which is then kept for that
//!   origin.
//!
//! The `oauth2` crate was not used: it has no RFC 9728/8414 discovery or RFC 9207 `iss` check,
//! and it is built on another reqwest major version.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcp_client::Error> {
//! use mcp_client::Client;
//! use mcp_client::auth::{LoopbackAuthorizer, OAuth};
//!
//! let authorizer = LoopbackAuthorizer::new(8976, |url| {
//!     println!("Open {url} in your browser to authorize.");
//!     Ok(())
//! });
//! let oauth = OAuth::builder().client_name("my-app").authorizer(authorizer).build();
//! let client = Client::builder("my-app", "1.0.0").oauth(oauth).connect_http("https://example.com/mcp").await?;
//! # Ok(()) }
//! ```

mod authorizer;
mod discovery;
mod error;
mod flow;
mod grants;
mod jose;
mod store;

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use reqwest::header::{AUTHORIZATION, HeaderValue, WWW_AUTHENTICATE};
use tower::{Layer, Service, ServiceExt as _};
use url::Url;

pub use authorizer::{Authorizer, HeadlessAuthorizer, LoopbackAuthorizer};
pub use error::AuthError;
pub use jose::{Es256Key, JoseError};
pub use store::{ClientRegistration, InMemoryTokenStore, Secret, StoredTokens, TokenEndpointAuthMethod, TokenStore};

use crate::layer::BoxError;
use discovery::{Challenge, ResourceMetadata, ServerMetadata};
use grants::Unattended;
use jose::Dpop;

/// Authorization attempts allowed for one request.
const MAX_AUTHORIZATIONS: u32 = 3;
/// Challenges handled for one request, whatever was done about them (refreshes, tokens
/// obtained concurrently): a bound against servers that never accept.
const MAX_CHALLENGES: u32 = 6;
/// How long before expiry an access token is refreshed.
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);

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
struct Config {
    client_name: String,
    redirect_uri: Option<String>,
    client_id: Option<String>,
    client_secret: Option<Secret>,
    client_auth_method: Option<TokenEndpointAuthMethod>,
    client_key: Option<Arc<Es256Key>>,
    client_issuer: Option<String>,
    /// The only authorization server used (`OAuthBuilder::authorization_server`).
    trusted_issuer: Option<String>,
    client_metadata_url: Option<String>,
    scopes: Vec<String>,
    protocol_version: String,
    /// A grant used instead of the authorization code flow.
    unattended: Option<Unattended>,
}

struct Inner {
    config: Config,
    store: Arc<dyn TokenStore>,
    authorizer: Option<Arc<dyn Authorizer>>,
    http: reqwest::Client,
    /// The DPoP key and the nonces servers handed out, when DPoP is on.
    dpop: Option<Dpop>,
    session: Mutex<Option<Session>>,
    /// One flow at a time: concurrent requests that hit a challenge wait and reuse its token.
    flow: tokio::sync::Mutex<()>,
}

/// OAuth authorization for one protected MCP server; cheap to clone (clones share state).
#[derive(Clone)]
pub struct OAuth {
    inner: Arc<Inner>,
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
    dpop: Option<Option<Es256Key>>,
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

    /// The JWT bearer grant (RFC 7523 §2.1) with `assertion`, e.g. a workload identity token
    /// whose audience is the authorization server's issuer (SEP-1933), instead of asking a
    /// user. The [`client_id`](Self::client_id), if set, is sent along. One token request per
    /// challenge: an error is returned, never retried nor followed by another grant.
    pub fn jwt_bearer(mut self, assertion: impl Into<Secret>) -> Self {
        self.config.unattended = Some(Unattended::JwtBearer { assertion: assertion.into() });
        self
    }

    /// DPoP (RFC 9449) with a key generated when the [`OAuth`] is built: every token request
    /// carries a proof, and a DPoP-bound token goes out as `Authorization: DPoP …` with a
    /// fresh proof on every request.
    pub fn dpop(mut self, enabled: bool) -> Self {
        self.dpop = enabled.then_some(None);
        self
    }

    /// DPoP (RFC 9449) with this key.
    pub fn dpop_key(mut self, key: Es256Key) -> Self {
        self.dpop = Some(Some(key));
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
    /// [`AuthError::UntrustedAuthorizationServer`] before any request to the servers it lists,
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
        let http = self.http.unwrap_or_else(|| {
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(Duration::from_secs(30))
                .build()
                .expect("a reqwest client without TLS options")
        });
        OAuth {
            inner: Arc::new(Inner {
                config: self.config,
                store: self.store,
                authorizer: self.authorizer,
                http,
                dpop: self.dpop.map(|key| {
                    Dpop::with_key(key.unwrap_or_else(|| {
                        Es256Key::generate().expect("the operating system's random number generator failed")
                    }))
                }),
                session: Mutex::new(None),
                flow: tokio::sync::Mutex::new(()),
            }),
        }
    }
}

/// What one request has been through.
#[derive(Default)]
struct Operation {
    challenges: u32,
    authorizations: u32,
    refreshed: bool,
    /// A `use_dpop_nonce` challenge of the MCP server was answered.
    nonce_resent: bool,
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
            dpop: None,
        }
    }

    /// The tokens currently used, if any.
    pub fn tokens(&self) -> Option<StoredTokens> {
        let session = self.session()?;
        self.inner.store.tokens(&session.resource, &session.issuer)
    }

    fn session(&self) -> Option<Session> {
        self.inner.session.lock().unwrap().clone()
    }

    /// This authorization as a tower layer over the HTTP service of the MCP server at `server`
    /// (the URL the client connects to: what the protected resource metadata must name).
    /// [`ClientBuilder::oauth`](crate::ClientBuilder::oauth) puts it innermost in the client's
    /// HTTP stack; use it directly to put it elsewhere with
    /// [`ClientBuilder::http_layer`](crate::ClientBuilder::http_layer).
    pub fn layer(&self, server: Url) -> OAuthLayer {
        OAuthLayer { oauth: self.clone(), server: Arc::new(server) }
    }

    /// Sends `request` through `inner` with the current access token; on a challenge, gets a
    /// token and sends it again.
    async fn send<S>(&self, server: &Url, inner: S, request: reqwest::Request) -> Result<reqwest::Response, BoxError>
    where
        S: Service<reqwest::Request, Response = reqwest::Response> + Clone,
        S::Error: Into<BoxError>,
    {
        let mut operation = Operation::default();
        loop {
            let mut attempt = request.try_clone().ok_or_else(|| {
                AuthError::Internal("a request with a streaming body cannot be sent again after a challenge".into())
            })?;
            let used = self.bearer().await;
            if let Some(tokens) = &used {
                self.add_headers(&mut attempt, tokens)?;
            }
            let response = inner.clone().oneshot(attempt).await.map_err(Into::into)?;
            let status = response.status().as_u16();
            if let (Some(dpop), Some(StoredTokens { dpop: true, .. })) = (&self.inner.dpop, &used) {
                dpop.remember_nonce_from(request.url().as_str(), response.headers());
                // A nonce demand is not a reason to authorize again: resend once with it.
                if !operation.nonce_resent && jose::resource_nonce_challenge(status, response.headers()).is_some() {
                    tracing::debug!("the server wants a DPoP nonce; sending it");
                    operation.nonce_resent = true;
                    continue;
                }
            }
            if status != 401 && status != 403 {
                return Ok(response);
            }
            let challenge = Challenge::from_headers(
                response.headers().get_all(WWW_AUTHENTICATE).iter().filter_map(|v| v.to_str().ok()),
            );
            if status == 403 && !challenge.insufficient_scope() {
                return Ok(response);
            }
            tracing::debug!(status, scope = ?challenge.scope, "authorization challenge");
            let used = used.map(|tokens| tokens.access_token);
            self.on_challenge(server, &challenge, used.as_ref(), &mut operation).await?;
        }
    }

    /// The one place per-request authorization headers are added: `Bearer`, or for a
    /// DPoP-bound token `DPoP` with a fresh proof for this method and URL.
    fn add_headers(&self, request: &mut reqwest::Request, tokens: &StoredTokens) -> Result<(), AuthError> {
        let invalid = || AuthError::InvalidMetadata("the access token is not a valid header value".into());
        let authorization = match (&self.inner.dpop, tokens.dpop) {
            (Some(dpop), true) => {
                let (authorization, proof) = dpop
                    .resource_headers(request.method().as_str(), request.url().as_str(), &tokens.access_token)
                    .map_err(|e| AuthError::Internal(format!("DPoP proof: {e}")))?;
                let proof = HeaderValue::try_from(proof).map_err(|_| invalid())?;
                request.headers_mut().insert(jose::DPOP_HEADER, proof);
                authorization
            }
            _ => Secret::new(format!("Bearer {}", tokens.access_token.expose())),
        };
        let mut value = HeaderValue::try_from(authorization.expose()).map_err(|_| invalid())?;
        value.set_sensitive(true);
        request.headers_mut().insert(AUTHORIZATION, value);
        Ok(())
    }

    /// The tokens to send, refreshed first when the access token is about to expire.
    async fn bearer(&self) -> Option<StoredTokens> {
        let session = self.session()?;
        let tokens = self.inner.store.tokens(&session.resource, &session.issuer)?;
        if !(tokens.expires_within(EXPIRY_MARGIN) && tokens.refresh_token.is_some()) {
            return Some(tokens);
        }
        let _flow = self.inner.flow.lock().await;
        // Another request may have refreshed while this one waited.
        let tokens = self.inner.store.tokens(&session.resource, &session.issuer)?;
        if tokens.expires_within(EXPIRY_MARGIN) && tokens.refresh_token.is_some() {
            if let Err(e) = self.refresh(&session, &tokens).await {
                tracing::debug!(error = %e, "refreshing the expiring token failed");
                return Some(tokens);
            }
            return self.inner.store.tokens(&session.resource, &session.issuer);
        }
        Some(tokens)
    }

    /// Does what a challenge asks: rediscovers the authorization server (it may have
    /// changed), then uses a token obtained meanwhile, a refresh, or a new authorization.
    async fn on_challenge(
        &self,
        server: &Url,
        challenge: &Challenge,
        used: Option<&Secret>,
        operation: &mut Operation,
    ) -> Result<(), AuthError> {
        operation.challenges += 1;
        if operation.challenges > MAX_CHALLENGES {
            return Err(AuthError::TooManyAuthorizationAttempts { attempts: operation.authorizations });
        }
        let _flow = self.inner.flow.lock().await;
        let session = self.discover(server, challenge).await?;
        *self.inner.session.lock().unwrap() = Some(session.clone());
        let stored = self.inner.store.tokens(&session.resource, &session.issuer);
        if let Some(tokens) = &stored {
            // A token this request did not try yet (obtained concurrently, or stored earlier).
            if Some(&tokens.access_token) != used && !tokens.expires_within(Duration::ZERO) {
                return Ok(());
            }
            if !challenge.insufficient_scope() && tokens.refresh_token.is_some() && !operation.refreshed {
                operation.refreshed = true;
                match self.refresh(&session, tokens).await {
                    Ok(()) => return Ok(()),
                    Err(e) => tracing::debug!(error = %e, "refresh failed; authorizing again"),
                }
            }
        }
        if operation.authorizations == MAX_AUTHORIZATIONS {
            return Err(AuthError::TooManyAuthorizationAttempts { attempts: operation.authorizations });
        }
        operation.authorizations += 1;
        let granted = stored.map(|t| t.scopes).unwrap_or_default();
        let scopes = self.select_scopes(&session, challenge, &granted);
        match &self.inner.config.unattended {
            Some(unattended) => self.obtain_unattended(&session, unattended, &scopes).await,
            None => self.authorize(&session, &scopes).await,
        }
    }

    /// The scopes to ask for: the challenge's, else the PRM `scopes_supported`, else none;
    /// plus the scopes already granted (step-up keeps them) and the configured ones;
    /// `offline_access` exactly when the authorization server lists it and a user authorizes
    /// (a client credentials grant gets no refresh token, RFC 6749 §4.4.3: asking for one can
    /// only get the request refused).
    fn select_scopes(&self, session: &Session, challenge: &Challenge, granted: &[String]) -> Vec<String> {
        let named: Vec<String> = match &challenge.scope {
            Some(scope) => scope.split_whitespace().map(str::to_owned).collect(),
            None => session.resource_scopes.clone().unwrap_or_default(),
        };
        let offline = !matches!(self.inner.config.unattended, Some(Unattended::ClientCredentials))
            && session.metadata.scopes_supported.iter().flatten().any(|s| s == "offline_access");
        let mut scopes: Vec<String> = Vec::new();
        for scope in granted.iter().chain(&named).chain(&self.inner.config.scopes) {
            if scope != "offline_access" && !scopes.contains(scope) {
                scopes.push(scope.clone());
            }
        }
        if offline {
            scopes.push("offline_access".into());
        }
        scopes
    }

    /// Protected Resource Metadata, then the metadata of its (first) authorization server.
    async fn discover(&self, server: &Url, challenge: &Challenge) -> Result<Session, AuthError> {
        let urls = discovery::resource_metadata_urls(server, challenge)?;
        let mut reason = String::new();
        let mut found = None;
        for url in &urls {
            match flow::fetch_json(&self.inner.http, url).await.and_then(|v| {
                serde_json::from_value::<ResourceMetadata>(v).map_err(|e| format!("{url}: not resource metadata: {e}"))
            }) {
                Ok(metadata) => {
                    found = Some(metadata);
                    break;
                }
                Err(e) => reason = e,
            }
        }
        let Some(prm) = found else {
            return Err(AuthError::NoResourceMetadata { tried: urls.iter().map(Url::to_string).collect(), reason });
        };
        if !discovery::resource_matches(&prm.resource, server) {
            return Err(AuthError::ResourceMismatch { resource: prm.resource, server: server.to_string() });
        }
        let issuer = match &self.inner.config.trusted_issuer {
            Some(trusted) if prm.authorization_servers.contains(trusted) => trusted.clone(),
            Some(trusted) => {
                return Err(AuthError::UntrustedAuthorizationServer {
                    trusted: trusted.clone(),
                    listed: prm.authorization_servers,
                });
            }
            None => prm
                .authorization_servers
                .first()
                .ok_or_else(|| {
                    AuthError::InvalidMetadata("the protected resource metadata names no authorization server".into())
                })?
                .clone(),
        };
        let metadata = self.server_metadata(&issuer).await?;
        Ok(Session {
            resource: prm.resource,
            issuer,
            metadata: Arc::new(metadata),
            resource_scopes: prm.scopes_supported,
        })
    }

    /// The first metadata document, in discovery order, whose `issuer` is exactly `issuer`.
    async fn server_metadata(&self, issuer: &str) -> Result<ServerMetadata, AuthError> {
        let issuer_url = Url::parse(issuer)
            .map_err(|e| AuthError::InvalidMetadata(format!("the issuer {issuer:?} is not a URL: {e}")))?;
        let urls = discovery::server_metadata_urls(&issuer_url);
        let mut mismatch = None;
        for url in &urls {
            let Ok(document) = flow::fetch_json(&self.inner.http, url).await else { continue };
            let Ok(metadata) = serde_json::from_value::<ServerMetadata>(document) else { continue };
            if metadata.issuer == issuer {
                return Ok(metadata);
            }
            tracing::warn!(%url, expected = issuer, found = %metadata.issuer, "ignoring metadata of another issuer");
            mismatch = Some(metadata.issuer);
        }
        match mismatch {
            Some(found) => Err(AuthError::IssuerMismatch { expected: issuer.to_owned(), found }),
            None => Err(AuthError::NoServerMetadata {
                issuer: issuer.to_owned(),
                tried: urls.iter().map(Url::to_string).collect(),
            }),
        }
    }
}

/// [`OAuth`] as a tower layer ([`OAuth::layer`]): each request gets the access token (and DPoP
/// proof), and a 401, or a 403 `insufficient_scope`, is answered by authorizing and sending the
/// request again. Fails with an [`AuthError`] (boxed) when authorization fails.
#[derive(Clone, Debug)]
pub struct OAuthLayer {
    oauth: OAuth,
    server: Arc<Url>,
}

impl<S> Layer<S> for OAuthLayer {
    type Service = OAuthService<S>;

    fn layer(&self, inner: S) -> OAuthService<S> {
        OAuthService { oauth: self.oauth.clone(), server: self.server.clone(), inner }
    }
}

/// The service of an [`OAuthLayer`].
#[derive(Clone, Debug)]
pub struct OAuthService<S> {
    oauth: OAuth,
    server: Arc<Url>,
    inner: S,
}

impl<S> Service<reqwest::Request> for OAuthService<S>
where
    S: Service<reqwest::Request, Response = reqwest::Response> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send,
{
    type Response = reqwest::Response;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<reqwest::Response, BoxError>>;

    fn poll_ready(&mut self, _cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), BoxError>> {
        // Each attempt readies its own clone of `inner` (a request may be sent several times).
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: reqwest::Request) -> Self::Future {
        let (oauth, server, inner) = (self.oauth.clone(), self.server.clone(), self.inner.clone());
        Box::pin(async move { oauth.send(&server, inner, request).await })
    }
}
