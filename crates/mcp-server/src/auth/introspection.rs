//! Opaque access tokens, asked about at the issuer's introspection endpoint (RFC 7662).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::cache::TokenCache;
use super::jwt::{check_claims, http_client, issuer_metadata};
use super::{TokenVerifier, VerifyError};
use crate::principal::VerifiedToken;

/// Verifies tokens by asking the authorization server (RFC 7662), authenticating as the
/// resource server's own client (`client_secret_basic`).
///
/// The endpoint is the issuer metadata's `introspection_endpoint` (or the one given). A token
/// must be `active`, issued by the issuer (`iss`, when the answer names one) and for this
/// resource (`aud` must contain it: RFC 8707; see [`allow_missing_audience`](Self::allow_missing_audience)).
/// The [`ResourceServer`](super::ResourceServer) reuses an answer for at most
/// [`cache_for`](Self::cache_for), never beyond the token's `exp`. A token the endpoint called
/// inactive is refused again without asking for [`inactive_cache`](Self::inactive_cache)
/// (30 s), remembered by its hash, so that junk tokens repeated cost one call each.
pub struct IntrospectionVerifier {
    issuer: String,
    audience: String,
    endpoint: Option<String>,
    client_id: String,
    client_secret: String,
    cache_for: Duration,
    missing_audience: bool,
    http: reqwest::Client,
    discovered: tokio::sync::OnceCell<String>,
    inactive: InactiveTokens,
}

/// Tokens the endpoint called inactive, by hash, each until when it is not asked about again.
struct InactiveTokens {
    ttl: Duration,
    capacity: usize,
    until: Mutex<HashMap<[u8; 32], Instant>>,
}

impl InactiveTokens {
    fn known(&self, digest: &[u8; 32]) -> bool {
        let until = self.until.lock().expect("not poisoned");
        until.get(digest).is_some_and(|until| Instant::now() < *until)
    }

    fn remember(&self, digest: [u8; 32]) {
        if self.ttl.is_zero() || self.capacity == 0 {
            return;
        }
        let now = Instant::now();
        let mut until = self.until.lock().expect("not poisoned");
        if until.len() >= self.capacity {
            until.retain(|_, until| *until > now);
            if until.len() >= self.capacity {
                // Still full: forget one; that token is asked about again when it comes back.
                if let Some(first) = until.keys().next().copied() {
                    until.remove(&first);
                }
            }
        }
        until.insert(digest, now + self.ttl);
    }
}

impl IntrospectionVerifier {
    /// Tokens of `issuer` for `audience` (this server's canonical URI), introspected as the
    /// client `client_id` with `client_secret`.
    pub fn new(
        issuer: impl Into<String>,
        audience: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        IntrospectionVerifier {
            issuer: issuer.into(),
            audience: audience.into(),
            endpoint: None,
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            cache_for: Duration::from_secs(60),
            missing_audience: false,
            http: http_client(),
            discovered: tokio::sync::OnceCell::new(),
            inactive: InactiveTokens { ttl: Duration::from_secs(30), capacity: 10_000, until: Mutex::default() },
        }
    }

    /// The introspection endpoint, instead of the one in the issuer's metadata.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// The longest an answer is reused (default 60 s; zero: every request asks). A revoked
    /// token keeps working at most this long.
    pub fn cache_for(mut self, duration: Duration) -> Self {
        self.cache_for = duration;
        self
    }

    /// How long a token called inactive is refused without asking again, and how many such
    /// tokens are remembered (default 30 s, 10,000; zero: every request asks). A token becomes
    /// active only when issued, and a new token is another hash, so this delays nothing.
    pub fn inactive_cache(mut self, ttl: Duration, tokens: usize) -> Self {
        self.inactive.ttl = ttl;
        self.inactive.capacity = tokens;
        self
    }

    /// Accept active tokens whose answer names no `aud` (for authorization servers that do not
    /// tell; default: refused, since nothing then says the token is for this server).
    pub fn allow_missing_audience(mut self) -> Self {
        self.missing_audience = true;
        self
    }

    /// The HTTP client for the issuer (default: rustls, 10 s timeout, no redirects).
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = client;
        self
    }

    async fn endpoint_url(&self) -> Result<&str, VerifyError> {
        if let Some(endpoint) = &self.endpoint {
            return Ok(endpoint);
        }
        self.discovered
            .get_or_try_init(|| async {
                let metadata = issuer_metadata(&self.http, &self.issuer).await?;
                metadata.get("introspection_endpoint").and_then(Value::as_str).map(str::to_owned).ok_or_else(|| {
                    VerifyError::Misconfigured(format!("the metadata of {} has no introspection_endpoint", self.issuer))
                })
            })
            .await
            .map(String::as_str)
    }

    async fn introspect(&self, token: &str) -> Result<VerifiedToken, VerifyError> {
        let inactive = || VerifyError::Invalid("the token is not active".to_owned());
        let digest = TokenCache::digest(token.as_bytes());
        if self.inactive.known(&digest) {
            return Err(inactive());
        }
        let endpoint = self.endpoint_url().await?;
        let unavailable = |why: String| VerifyError::Unavailable(format!("introspection at {endpoint}: {why}"));
        let response = self
            .http
            .post(endpoint)
            .basic_auth(&self.client_id, Some(&self.client_secret))
            .header("accept", "application/json")
            .form(&[("token", token), ("token_type_hint", "access_token")])
            .send()
            .await
            .map_err(|e| unavailable(e.to_string()))?;
        if !response.status().is_success() {
            return Err(unavailable(format!("HTTP {}", response.status())));
        }
        let answer: Map<String, Value> =
            response.json().await.map_err(|e| unavailable(format!("not a JSON object: {e}")))?;
        if answer.get("active") != Some(&Value::Bool(true)) {
            self.inactive.remember(digest);
            return Err(inactive());
        }
        check_claims(&answer, None)?;
        if let Some(iss) = answer.get("iss").and_then(Value::as_str)
            && iss != self.issuer
        {
            return Err(VerifyError::Invalid("the token was issued by another issuer".to_owned()));
        }
        let for_us = match answer.get("aud") {
            Some(Value::String(aud)) => *aud == self.audience,
            Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(&self.audience)),
            None => self.missing_audience,
            Some(_) => false,
        };
        if !for_us {
            return Err(VerifyError::Invalid("the token was issued for another resource (aud)".to_owned()));
        }
        let verified = VerifiedToken::from_claims(answer);
        if verified.expires_at.is_some_and(|exp| exp <= std::time::SystemTime::now()) {
            return Err(VerifyError::Invalid("the token has expired".to_owned()));
        }
        Ok(verified)
    }
}

impl TokenVerifier for IntrospectionVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, VerifyError>> {
        Box::pin(self.introspect(token))
    }

    /// Finds the introspection endpoint (in the issuer's metadata, unless configured).
    fn check(&self) -> BoxFuture<'_, Result<(), VerifyError>> {
        Box::pin(async move { self.endpoint_url().await.map(drop) })
    }

    fn reuse_for(&self) -> Duration {
        self.cache_for
    }
}
