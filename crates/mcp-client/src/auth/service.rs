//! [`OAuth`] as a tower layer: each request gets the access token (and DPoP proof), and a
//! challenge is answered by discovery, a refresh or a new authorization, then the request is sent
//! again.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use reqwest::header::{AUTHORIZATION, HeaderValue, WWW_AUTHENTICATE};
use tower::{Layer, Service, ServiceExt as _};
use url::Url;

use super::discovery::{self, Challenge, ResourceMetadata, ServerMetadata};
use super::error::AuthError;
use super::fetch::fetch_json;
use super::jose;
use super::oauth::{OAuth, Session, Unattended};
use super::store::{Secret, StoredTokens};
use crate::layer::BoxError;

/// Challenges handled for one request, whatever was done about them (refreshes, tokens
/// obtained concurrently): a bound against servers that never accept.
const MAX_CHALLENGES: u32 = 6;
/// How long before expiry an access token is refreshed.
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);

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
            if let (Some(dpop), Some(StoredTokens { dpop: true, .. })) = (self.dpop(), &used) {
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
        let authorization = match (self.dpop(), tokens.dpop) {
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

    /// The tokens to send, renewed first when the access token is about to expire: refreshed,
    /// or (a token exchange) exchanged again.
    async fn bearer(&self) -> Option<StoredTokens> {
        let session = self.session()?;
        let tokens = self.inner.store.tokens(&session.resource, &session.issuer)?;
        let exchange = match &self.inner.config.unattended {
            Some(exchange @ Unattended::TokenExchange { .. }) => Some(exchange),
            _ => None,
        };
        let renewable = |tokens: &StoredTokens| tokens.refresh_token.is_some() || exchange.is_some();
        if !(tokens.expires_within(EXPIRY_MARGIN) && renewable(&tokens)) {
            return Some(tokens);
        }
        let _flow = self.inner.flow.lock().await;
        // Another request may have renewed it while this one waited.
        let tokens = self.inner.store.tokens(&session.resource, &session.issuer)?;
        if tokens.expires_within(EXPIRY_MARGIN) && renewable(&tokens) {
            let renewed = match exchange {
                Some(exchange) => self.obtain_unattended(&session, exchange, &tokens.scopes).await,
                None => self.refresh(&session, &tokens).await,
            };
            if let Err(e) = renewed {
                tracing::debug!(error = %e, "renewing the expiring token failed");
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
        if operation.authorizations >= Unattended::max_authorizations(self.inner.config.unattended.as_ref()) {
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
    /// only get the request refused; an exchanged token is renewed by exchanging again).
    fn select_scopes(&self, session: &Session, challenge: &Challenge, granted: &[String]) -> Vec<String> {
        let named: Vec<String> = match &challenge.scope {
            Some(scope) => scope.split_whitespace().map(str::to_owned).collect(),
            None => session.resource_scopes.clone().unwrap_or_default(),
        };
        let offline = !matches!(
            self.inner.config.unattended,
            Some(Unattended::ClientCredentials | Unattended::TokenExchange { .. })
        ) && session.metadata.scopes_supported.iter().flatten().any(|s| s == "offline_access");
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
            match fetch_json(self.http(), url).await.and_then(|v| {
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
        if prm.dpop_bound_access_tokens_required {
            self.require_dpop(&prm.resource)?;
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

    /// Turns DPoP on for a resource that accepts only DPoP-bound tokens, unless it was turned
    /// off (`dpop(false)`): then the resource cannot be used, and the error says why.
    fn require_dpop(&self, resource: &str) -> Result<(), AuthError> {
        if self.dpop().is_some() {
            return Ok(());
        }
        if !self.inner.dpop_auto {
            return Err(AuthError::DpopRequired { resource: resource.to_owned() });
        }
        let dpop = jose::Dpop::generate().map_err(|e| AuthError::Internal(format!("a DPoP key: {e}")))?;
        if self.inner.dpop.set(dpop).is_ok() {
            tracing::debug!(resource, "the resource requires DPoP-bound tokens: DPoP is on");
        }
        Ok(())
    }

    /// The first metadata document, in discovery order, whose `issuer` is exactly `issuer`.
    async fn server_metadata(&self, issuer: &str) -> Result<ServerMetadata, AuthError> {
        let issuer_url = Url::parse(issuer)
            .map_err(|e| AuthError::InvalidMetadata(format!("the issuer {issuer:?} is not a URL: {e}")))?;
        let urls = discovery::server_metadata_urls(&issuer_url);
        let mut mismatch = None;
        for url in &urls {
            let Ok(document) = fetch_json(self.http(), url).await else { continue };
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
