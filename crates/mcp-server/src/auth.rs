//! OAuth 2.1 resource server for the HTTP transport (feature `auth`), as the MCP authorization
//! specification makes of a protected server.
//!
//! Set [`HttpConfig::authorization`](crate::http::HttpConfig::authorization) to a
//! [`ResourceServer`] and the transport:
//!
//! * serves Protected Resource Metadata (RFC 9728) at `/.well-known/oauth-protected-resource`
//!   and at the same path suffixed with the endpoint's path (`…/oauth-protected-resource/mcp`);
//! * answers every method of the endpoint (POST, GET streams, DELETE) of both eras that comes
//!   without a valid access token with 401 and `WWW-Authenticate: Bearer resource_metadata="…",
//!   scope="…"` (plus `error="invalid_token"` and a short `error_description` when a token was
//!   sent). Tokens are read only from the `Authorization` header, never from the query string,
//!   and are never echoed or logged;
//! * verifies the token with a [`TokenVerifier`]: [`JwtVerifier`] (RFC 9068 JWT access tokens
//!   against the issuer's JWKS) or [`IntrospectionVerifier`] (RFC 7662), or one of your own;
//! * checks the token's scopes: the server's [`required_scopes`](ResourceServerBuilder::required_scopes)
//!   on every request, and those of the tool, resource, template or prompt a request names
//!   ([`ToolRoute::scopes`](crate::ToolRoute::scopes)…) before its handler runs. A token that
//!   lacks one gets 403 `error="insufficient_scope", scope="<every scope the call needs>"`, so
//!   that the client can ask for more (step-up);
//! * verifies DPoP proofs (RFC 9449) for tokens bound to a key (`cnf.jkt`): method, URL,
//!   `iat` window, access token hash, and `jti` replay; a bound token sent as a plain bearer
//!   token is refused. Server-provided nonces are not used;
//! * makes the token's subject the request's [`Principal`], with the [`VerifiedToken`]
//!   attached: handlers read it through [`Context::principal`](crate::Context::principal). A
//!   token without a string `sub` (client credentials: only a `client_id`) is the principal
//!   `client:<client_id>`, a namespace of its own, so that a client registered as `alice` is
//!   never the user `alice`; a `sub` that is empty or starts with `client:` is refused. A legacy
//!   session is bound to the principal that opened it: a request on it with another
//!   principal's token gets 403, on every instance sharing the session store;
//! * refuses the leniencies a hostile issuer or caller could use: `iss` other than a string,
//!   a `crit` header (no extension is understood, RFC 7515 §4.1.11), `iat` in the future
//!   beyond the leeway; scope names that are not RFC 6749 scope-tokens are refused at
//!   [`try_build`](ResourceServerBuilder::try_build) and never written into a challenge;
//! * limits failed verifications per remote address
//!   ([`failed_verification_limit`](ResourceServerBuilder::failed_verification_limit)): over
//!   the limit, a token not already verified gets 429 without being verified, while tokens
//!   verified before keep working;
//! * records DPoP proofs' `jti` in a [`ReplayStore`]: in memory by default, or shared by every
//!   instance of a deployment ([`dpop_replay_store`](ResourceServerBuilder::dpop_replay_store),
//!   e.g. the Redis one of `mcp-server-redis`).
//!
//! Over stdio none of this applies: the process that spawned the server is its only client,
//! and the specification says stdio servers take credentials from their environment instead.

mod cache;
mod challenge;
mod dpop;
mod introspection;
mod jwt;
mod limit;
mod metadata;

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;

pub use crate::routes::is_scope_token;
pub use introspection::IntrospectionVerifier;
pub use jwt::JwtVerifier;

use crate::store::StoreError;
use crate::{principal::Principal, principal::VerifiedToken};
use cache::TokenCache;
use dpop::ReplayCache;
use limit::{FailureLimiter, LogLimit};
use metadata::Document;

pub(crate) use challenge::Challenge;
use challenge::{quoted, scope_list};

/// Where the `jti`s of the DPoP proofs already used are recorded, so that a proof is accepted
/// once: in memory by default (one instance), or in a store every instance of a deployment
/// shares ([`ResourceServerBuilder::dpop_replay_store`]).
pub trait ReplayStore: Send + Sync + 'static {
    /// Records the proof `jti` of the DPoP key whose thumbprint is `key`, until `until`
    /// (seconds since the Unix epoch; the proof is refused by its age after that): whether it
    /// is its first use. A store bounds what one key may hold, and answers
    /// [`ProofUse::TooMany`] rather than forget a proof early.
    fn record<'a>(&'a self, key: &'a str, jti: &'a str, until: u64) -> BoxFuture<'a, Result<ProofUse, StoreError>>;
}

/// What a [`ReplayStore`] says of a proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProofUse {
    /// Not seen before: now recorded.
    First,
    /// Recorded already: a replay.
    Replayed,
    /// The key (or the whole store) holds as many proofs as it may: refused until some age out.
    TooMany,
}

/// Verifies an access token for this resource: its signature or its issuer's word, its
/// audience (this server), its lifetime.
pub trait TokenVerifier: Send + Sync + 'static {
    /// What `token` grants, or why it is refused.
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, VerifyError>>;

    /// How long the [`ResourceServer`] may reuse a verified token's answer for the same token
    /// without asking again; never beyond the token's expiry. Default zero: every request is
    /// verified (right for a verifier that must see revocations at once). `Duration::MAX`:
    /// until it expires ([`JwtVerifier`]: a signature does not change).
    fn reuse_for(&self) -> Duration {
        Duration::ZERO
    }

    /// Whether tokens can be verified as configured: what [`ResourceServer::check`] reports
    /// before serving (for instance: the issuer's metadata found, naming that issuer, its keys
    /// fetched). Default: nothing to check.
    fn check(&self) -> BoxFuture<'_, Result<(), VerifyError>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// Why a token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VerifyError {
    /// The token is not valid for this server (401 `invalid_token`); says why, never quoting
    /// the token.
    Invalid(String),
    /// The token could not be checked now (the issuer's keys or introspection endpoint could
    /// not be reached): 503, the client may retry.
    Unavailable(String),
    /// No token can be checked until the configuration is fixed (the issuer's metadata names
    /// another issuer, or lacks the endpoint needed): 500 `server_error`, said in the log.
    Misconfigured(String),
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerifyError::Invalid(why) => write!(f, "invalid token: {why}"),
            VerifyError::Unavailable(why) => write!(f, "the token cannot be verified now: {why}"),
            VerifyError::Misconfigured(why) => write!(f, "no token can be verified as configured: {why}"),
        }
    }
}

impl std::error::Error for VerifyError {}

/// The settings of a protected server: its canonical URI, its authorization servers, the
/// scopes it needs and how it verifies tokens. Cheap to clone.
#[derive(Clone)]
pub struct ResourceServer {
    inner: Arc<Inner>,
    /// The Protected Resource Metadata document, encoded once (again with the scopes of the
    /// server it protects: [`with_route_scopes`](Self::with_route_scopes)).
    metadata: Arc<str>,
}

struct Inner {
    resource: String,
    authorization_servers: Vec<String>,
    required_scopes: Vec<String>,
    metadata_max_age: Duration,
    max_token_bytes: usize,
    verifier: Arc<dyn TokenVerifier>,
    dpop_iat_window: Duration,
    dpop_replay: Arc<dyn ReplayStore>,
    /// Failed verifications per remote address.
    failures: FailureLimiter,
    /// Verified tokens, by hash: a client's next request costs no verification.
    tokens: TokenCache,
    /// What the metadata document is made of.
    document: Document,
    /// Verifications that could not be made: logged at the first, then at most once a minute.
    failure_log: LogLimit,
    /// Whether a verified token keeps the token itself ([`VerifiedToken::access_token`]).
    keep_access_tokens: bool,
    /// Only DPoP-bound tokens are accepted.
    require_dpop: bool,
}

impl fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceServer")
            .field("resource", &self.inner.resource)
            .field("authorization_servers", &self.inner.authorization_servers)
            .field("required_scopes", &self.inner.required_scopes)
            .finish_non_exhaustive()
    }
}

/// Builds a [`ResourceServer`].
pub struct ResourceServerBuilder {
    resource: String,
    authorization_servers: Vec<String>,
    scopes_supported: Option<Vec<String>>,
    hidden_scopes: Vec<String>,
    required_scopes: Vec<String>,
    resource_name: Option<String>,
    metadata_max_age: Duration,
    max_token_bytes: usize,
    verifier: Arc<dyn TokenVerifier>,
    dpop_iat_window: Duration,
    dpop_replay_capacity: usize,
    dpop_replay_store: Option<Arc<dyn ReplayStore>>,
    failure_burst: u32,
    failure_refill: Duration,
    token_cache: usize,
    keep_access_tokens: bool,
    require_dpop: bool,
}

impl ResourceServer {
    /// A server whose canonical URI is `resource` (exactly what clients send as the RFC 8707
    /// `resource` and what tokens must be issued for: the MCP endpoint's public URL, for
    /// instance `https://mcp.example.com/mcp`), verifying tokens with `verifier`.
    pub fn builder(resource: impl Into<String>, verifier: impl TokenVerifier) -> ResourceServerBuilder {
        ResourceServerBuilder {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes_supported: None,
            hidden_scopes: Vec::new(),
            required_scopes: Vec::new(),
            resource_name: None,
            metadata_max_age: Duration::from_secs(3600),
            max_token_bytes: 16 * 1024,
            verifier: Arc::new(verifier),
            dpop_iat_window: Duration::from_secs(60),
            dpop_replay_capacity: 262_144,
            dpop_replay_store: None,
            failure_burst: 60,
            failure_refill: Duration::from_secs(1),
            token_cache: 10_000,
            keep_access_tokens: false,
            require_dpop: false,
        }
    }

    /// The canonical URI of this resource.
    pub fn resource(&self) -> &str {
        &self.inner.resource
    }

    /// The URL of the Protected Resource Metadata the challenges point at: the well-known path
    /// suffixed with the resource's path.
    pub fn metadata_url(&self) -> String {
        metadata::url_for(&self.inner.resource)
    }

    /// The well-known paths this server answers with its metadata.
    pub(crate) fn metadata_paths(&self) -> Vec<String> {
        metadata::paths_for(&self.inner.resource)
    }

    /// The Protected Resource Metadata response (JSON, cacheable).
    pub(crate) fn metadata_response(&self) -> Response {
        let cache = format!("public, max-age={}", self.inner.metadata_max_age.as_secs());
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json".to_owned()), (header::CACHE_CONTROL, cache)],
            self.metadata.to_string(),
        )
            .into_response()
    }

    /// Whether tokens can be verified as configured, asked of the verifier before any token
    /// arrives (a [`JwtVerifier`] finds the issuer's metadata and fetches its keys). Call it at
    /// start: [`VerifyError::Misconfigured`] will not pass by itself (an issuer configured as
    /// `https://auth.example/` whose metadata says `https://auth.example` is named, both strings
    /// and the fix); [`VerifyError::Unavailable`] may (the issuer is not up yet).
    /// [`http::serve`](crate::http::serve) logs its outcome.
    pub async fn check(&self) -> Result<(), VerifyError> {
        self.inner.verifier.check().await
    }

    /// This resource server with `scopes` (those a server's routes need) in its metadata's
    /// `scopes_supported` too, but for the hidden ones. [`http::router`](crate::http::router)
    /// adds those of the server it serves.
    pub fn with_route_scopes(&self, scopes: &[String]) -> ResourceServer {
        let metadata = self.inner.document.render(&self.inner.resource, scopes);
        ResourceServer { inner: Arc::clone(&self.inner), metadata }
    }

    /// The scopes every request needs.
    pub fn required_scopes(&self) -> &[String] {
        &self.inner.required_scopes
    }

    /// Verifies the request's token (and DPoP proof) from `remote` (when known): the principal
    /// it names, or the challenge to answer with.
    pub(crate) async fn authenticate(
        &self,
        method: &Method,
        headers: &HeaderMap,
        remote: Option<IpAddr>,
    ) -> Result<Principal, Challenge> {
        let mut values = headers.get_all(header::AUTHORIZATION).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return match headers.get_all(header::AUTHORIZATION).iter().count() {
                0 => Err(self.challenge(Refusal::NoToken)),
                _ => Err(self.invalid("the Authorization header appears more than once")),
            };
        };
        if value.len() > self.inner.max_token_bytes + 16 {
            return Err(self.invalid(&format!("the token exceeds {} bytes", self.inner.max_token_bytes)));
        }
        // Read as bytes, once: a token seen before is looked up by its hash before anything else.
        let value = value.as_bytes();
        let (scheme, token) = match value.iter().position(|&b| b == b' ') {
            Some(space) => (&value[..space], value[space + 1..].trim_ascii()),
            None => (value, &[][..]),
        };
        let dpop = if scheme.eq_ignore_ascii_case(b"bearer") {
            false
        } else if scheme.eq_ignore_ascii_case(b"dpop") {
            true
        } else {
            return Err(self.challenge(Refusal::NoToken));
        };
        let not_a_token = || self.invalid("the Authorization header does not hold a token");
        if token.is_empty() {
            return Err(not_a_token());
        }
        let digest = TokenCache::digest(token);
        let verified = match self.inner.tokens.get(&digest) {
            Some(verified) => verified,
            None => {
                if !token.iter().all(|&b| is_token68(b)) {
                    return Err(not_a_token());
                }
                let Ok(token) = std::str::from_utf8(token) else { return Err(not_a_token()) };
                if let Some(retry_after) = remote.and_then(|remote| self.inner.failures.exhausted(remote)) {
                    return Err(Challenge::too_many_failures(retry_after));
                }
                // A token that names neither a user nor a client would make its bearer the
                // anonymous principal, which every unauthenticated party shares.
                let named = |token: &VerifiedToken| {
                    token.subject.as_deref().is_some_and(|s| !s.is_empty())
                        || token.client_id.as_deref().is_some_and(|c| !c.is_empty())
                };
                let verified = match self.inner.verifier.verify(token).await {
                    Ok(verified) if named(&verified) && self.inner.keep_access_tokens => {
                        Arc::new(verified.keeping(token))
                    }
                    Ok(verified) if named(&verified) => Arc::new(verified),
                    Ok(_) => return Err(self.invalid("the token names no subject (sub) and no client (client_id)")),
                    Err(VerifyError::Invalid(why)) => {
                        if let Some(remote) = remote {
                            self.inner.failures.failed(remote);
                        }
                        return Err(self.invalid(&why));
                    }
                    Err(VerifyError::Unavailable(why)) => {
                        self.inner.failure_log.warn(|suppressed| {
                            tracing::warn!(%why, suppressed, "access tokens cannot be verified now: answered 503");
                        });
                        return Err(Challenge::unavailable(&why));
                    }
                    Err(VerifyError::Misconfigured(why)) => {
                        self.inner.failure_log.warn(|suppressed| {
                            tracing::error!(%why, suppressed, "no access token can be verified as configured: answered 500");
                        });
                        return Err(Challenge::misconfigured(&why));
                    }
                };
                let reuse = self.inner.verifier.reuse_for();
                if !reuse.is_zero() {
                    // `None` (a reuse beyond any instant): until the token expires.
                    self.inner.tokens.insert(digest, &verified, Instant::now().checked_add(reuse));
                }
                verified
            }
        };
        match (&verified.dpop_jkt, dpop) {
            (Some(_), false) => {
                return Err(self.invalid("the token is bound to a DPoP key: send it with the DPoP scheme and a proof"));
            }
            (None, true) => return Err(self.invalid("the token is not bound to a DPoP key: send it as a Bearer token")),
            (None, false) if self.inner.require_dpop => {
                return Err(self.invalid(
                    "this resource accepts only DPoP-bound tokens (its metadata's dpop_bound_access_tokens_required)",
                ));
            }
            (Some(jkt), true) => {
                let mut proofs = headers.get_all("dpop").iter();
                let proof = match (proofs.next(), proofs.next()) {
                    (Some(proof), None) => proof.to_str().unwrap_or_default(),
                    (None, _) => return Err(self.dpop_invalid("the request has no DPoP proof")),
                    (Some(_), Some(_)) => return Err(self.dpop_invalid("the DPoP header appears more than once")),
                };
                // Cached tokens were checked to be token68, so ASCII.
                let Ok(access_token) = std::str::from_utf8(token) else { return Err(not_a_token()) };
                let expected = dpop::Expected {
                    method: method.as_str(),
                    url: &self.inner.resource,
                    access_token,
                    jkt,
                    iat_window: self.inner.dpop_iat_window,
                };
                let proof = dpop::verify(proof, &expected).map_err(|why| self.dpop_invalid(&why))?;
                match self.inner.dpop_replay.record(&proof.key, &proof.jti, proof.until).await {
                    Ok(ProofUse::First) => {}
                    Ok(ProofUse::Replayed) => {
                        return Err(self.dpop_invalid("the DPoP proof was already used (jti replayed)"));
                    }
                    Ok(ProofUse::TooMany) => {
                        return Err(
                            self.dpop_invalid("too many DPoP proofs of this key in the replay window; retry shortly")
                        );
                    }
                    Err(error) => {
                        return Err(Challenge::unavailable(&format!("the DPoP replay store failed: {error}")));
                    }
                }
            }
            (None, false) => {}
        }
        let missing: Vec<&String> = self.inner.required_scopes.iter().filter(|s| !verified.has_scope(s)).collect();
        if !missing.is_empty() {
            return Err(self.insufficient(&self.inner.required_scopes, &missing));
        }
        Ok(Principal::from_shared_token(verified))
    }

    /// The 403 for a token that lacks some of `needed` (every scope the call needs).
    pub(crate) fn check_scopes(&self, token: Option<&VerifiedToken>, needed: &[String]) -> Result<(), Challenge> {
        let Some(token) = token else { return Ok(()) };
        let missing: Vec<&String> = needed.iter().filter(|scope| !token.has_scope(scope)).collect();
        if missing.is_empty() { Ok(()) } else { Err(self.insufficient(needed, &missing)) }
    }

    fn invalid(&self, why: &str) -> Challenge {
        self.challenge(Refusal::InvalidToken(why.to_owned()))
    }

    fn dpop_invalid(&self, why: &str) -> Challenge {
        self.challenge(Refusal::InvalidDpopProof(why.to_owned()))
    }

    fn insufficient(&self, needed: &[String], missing: &[&String]) -> Challenge {
        let description = format!("the token lacks the scope(s) {}", scope_list(missing));
        let challenge = format!(
            "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}\", error_description=\"{}\"",
            scope_list(needed),
            self.metadata_url(),
            quoted(&description)
        );
        Challenge {
            status: StatusCode::FORBIDDEN,
            www_authenticate: challenge,
            error: "insufficient_scope",
            description,
            retry_after: None,
        }
    }

    fn challenge(&self, refusal: Refusal) -> Challenge {
        let mut challenge = format!("Bearer resource_metadata=\"{}\"", self.metadata_url());
        let scope = scope_list(&self.inner.required_scopes);
        if !scope.is_empty() {
            challenge.push_str(&format!(", scope=\"{scope}\""));
        }
        let (error, description) = match refusal {
            Refusal::NoToken => ("invalid_request", "no access token in the Authorization header".to_owned()),
            Refusal::InvalidToken(why) => ("invalid_token", why),
            Refusal::InvalidDpopProof(why) => ("invalid_dpop_proof", why),
        };
        if error != "invalid_request" {
            challenge.push_str(&format!(", error=\"{error}\", error_description=\"{}\"", quoted(&description)));
        }
        if error == "invalid_dpop_proof" {
            challenge = format!(
                "DPoP algs=\"{}\", error=\"{error}\", error_description=\"{}\"",
                dpop::ALGORITHMS.join(" "),
                quoted(&description)
            );
        }
        Challenge {
            status: StatusCode::UNAUTHORIZED,
            www_authenticate: challenge,
            error,
            description,
            retry_after: None,
        }
    }
}

impl ResourceServerBuilder {
    /// An authorization server clients may get tokens from (its issuer URL), listed in the
    /// metadata's `authorization_servers`.
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// The scopes listed in the metadata's `scopes_supported` (default: the required scopes).
    /// Served by [`http::serve`](crate::http::serve), the list also has every scope a tool,
    /// resource, template or prompt needs ([`Server::route_scopes`](crate::Server::route_scopes)):
    /// a client that registers with the scopes it may be challenged for can then step up to
    /// them. [`hide_scopes`](Self::hide_scopes) leaves some out.
    pub fn scopes_supported<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.scopes_supported = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// Scopes never listed in `scopes_supported`, though a route needs them (a client learns
    /// of them from the 403 challenge of a call that needs them).
    pub fn hide_scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.hidden_scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Scopes every request needs, named in each 401 challenge's `scope`.
    pub fn required_scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// A name for people (`resource_name`).
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// How long clients may cache the metadata (default 1 hour).
    pub fn metadata_max_age(mut self, max_age: Duration) -> Self {
        self.metadata_max_age = max_age;
        self
    }

    /// Longer tokens are refused before anything parses them (default 16 KiB).
    pub fn max_token_bytes(mut self, bytes: usize) -> Self {
        self.max_token_bytes = bytes;
        self
    }

    /// How far a DPoP proof's `iat` may be from now (default 60 s), and how many proofs' `jti`
    /// are remembered against replay within twice that window (default 262,144, a sixteenth of
    /// them per DPoP key, so about 130 requests a second per client at the default window). When
    /// a key's share or the whole is full, its proofs are refused until the oldest age out, so a
    /// replay is never accepted.
    pub fn dpop_window(mut self, window: Duration, remembered: usize) -> Self {
        self.dpop_iat_window = window;
        self.dpop_replay_capacity = remembered.max(1);
        self
    }

    /// How many verified tokens are remembered for reuse (default 10,000; see
    /// [`TokenVerifier::reuse_for`]). When full, expired ones are forgotten first.
    pub fn token_cache(mut self, tokens: usize) -> Self {
        self.token_cache = tokens;
        self
    }

    /// Where DPoP proofs' `jti`s are recorded against replay (default: in this process,
    /// bounded as [`dpop_window`](Self::dpop_window) says). Instances serving one deployment
    /// share one store (`mcp_server_redis::Redis::replay_store`), so that a proof used on one
    /// is refused on all. A store that fails refuses the request with 503.
    pub fn dpop_replay_store(mut self, store: Arc<dyn ReplayStore>) -> Self {
        self.dpop_replay_store = Some(store);
        self
    }

    /// How many failed verifications one remote address may cause: `burst` at once, then one
    /// more per `refill` (default 60, then one a second). Over the limit, a token not verified
    /// before gets 429 with `Retry-After`, without being verified; tokens already verified
    /// (and reused, see [`TokenVerifier::reuse_for`]) keep working. Only refused tokens count.
    /// Behind a proxy every caller has the proxy's address: raise the limit there. `burst`
    /// zero: no limit.
    pub fn failed_verification_limit(mut self, burst: u32, refill: Duration) -> Self {
        self.failure_burst = burst;
        self.failure_refill = refill;
        self
    }

    /// Keeps each verified token itself beside its claims, for the handlers to read with
    /// [`VerifiedToken::access_token`] (default false: handlers see claims only). For a server
    /// that trades its callers' tokens at the authorization server for tokens of its own (RFC
    /// 8693 token exchange, as a gateway acting as its caller does); a handler must never send
    /// one on to another server. The token cache then holds the tokens too.
    pub fn keep_access_tokens(mut self, keep: bool) -> Self {
        self.keep_access_tokens = keep;
        self
    }

    /// Accepts only DPoP-bound tokens (RFC 9449), and says so in the metadata
    /// (`dpop_bound_access_tokens_required`, RFC 9728): a Bearer token is refused with 401
    /// `invalid_token` (default false: both are accepted, each with its own scheme).
    pub fn require_dpop(mut self, required: bool) -> Self {
        self.require_dpop = required;
        self
    }

    /// The resource server, or the first configured scope name that is not an RFC 6749
    /// scope-token (it would be written into `WWW-Authenticate` challenges).
    pub fn try_build(self) -> Result<ResourceServer, InvalidScope> {
        let supported = self.scopes_supported.iter().flatten();
        if let Some(scope) = self.required_scopes.iter().chain(supported).find(|scope| !is_scope_token(scope)) {
            return Err(InvalidScope { scope: scope.clone() });
        }
        Ok(self.build())
    }

    /// The resource server. Prefer [`try_build`](Self::try_build), which refuses invalid scope
    /// names: here they are logged, still required, and left out of every challenge.
    pub fn build(self) -> ResourceServer {
        for scope in self.required_scopes.iter().chain(self.scopes_supported.iter().flatten()) {
            if !is_scope_token(scope) {
                tracing::error!(scope = %scope.escape_debug(), "a configured scope name is not an RFC 6749 scope-token");
            }
        }
        let document = Document {
            authorization_servers: self.authorization_servers.clone(),
            scopes_supported: self.scopes_supported.unwrap_or_else(|| self.required_scopes.clone()),
            hidden_scopes: self.hidden_scopes,
            resource_name: self.resource_name,
            dpop_required: self.require_dpop,
        };
        let metadata = document.render(&self.resource, &[]);
        ResourceServer {
            metadata,
            inner: Arc::new(Inner {
                resource: self.resource,
                authorization_servers: self.authorization_servers,
                required_scopes: self.required_scopes,
                metadata_max_age: self.metadata_max_age,
                max_token_bytes: self.max_token_bytes,
                verifier: self.verifier,
                dpop_iat_window: self.dpop_iat_window,
                dpop_replay: self
                    .dpop_replay_store
                    .unwrap_or_else(|| Arc::new(ReplayCache::new(self.dpop_replay_capacity))),
                failures: FailureLimiter::new(self.failure_burst, self.failure_refill),
                tokens: TokenCache::new(self.token_cache),
                document,
                failure_log: LogLimit::new(Duration::from_secs(60)),
                keep_access_tokens: self.keep_access_tokens,
                require_dpop: self.require_dpop,
            }),
        }
    }
}

enum Refusal {
    NoToken,
    InvalidToken(String),
    InvalidDpopProof(String),
}

/// A configured scope name that is not an RFC 6749 scope-token (`%x21 / %x23-5B / %x5D-7E`:
/// no space, quote, backslash or control character).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidScope {
    /// The name, as configured.
    pub scope: String,
}

impl fmt::Display for InvalidScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the scope name {:?} is not an RFC 6749 scope-token (no space, quote, backslash or control character)",
            self.scope
        )
    }
}

impl std::error::Error for InvalidScope {}

/// The characters of an RFC 6750 `b64token` (token68).
fn is_token68(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}
