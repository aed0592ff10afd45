//! JWT access tokens (RFC 9068) verified against the issuer's published keys, and what the
//! verifiers share: issuer discovery (RFC 8414, OpenID Connect Discovery) and a bounded cache of
//! verified tokens.

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use futures::future::BoxFuture;
use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::{TokenVerifier, VerifyError};
use crate::VerifiedToken;

/// The JWS algorithms accepted for access tokens: asymmetric ones only (never `none`, never an
/// HMAC, which a public key could be misused for).
const ACCEPTED: &[(&str, Algorithm)] = &[
    ("RS256", Algorithm::RS256),
    ("RS384", Algorithm::RS384),
    ("RS512", Algorithm::RS512),
    ("PS256", Algorithm::PS256),
    ("PS384", Algorithm::PS384),
    ("PS512", Algorithm::PS512),
    ("ES256", Algorithm::ES256),
    ("ES384", Algorithm::ES384),
    ("EdDSA", Algorithm::EdDSA),
];

pub(super) fn accepted_algorithm(name: &str) -> Option<Algorithm> {
    ACCEPTED.iter().find(|(n, _)| *n == name).map(|(_, alg)| *alg)
}

/// While no keys were ever fetched, the least time between two attempts (an issuer that is
/// down is not asked once per request).
const FAILED_FETCH_PAUSE: Duration = Duration::from_secs(1);

/// When the keys were fetched.
#[derive(Default)]
struct Fetches {
    /// The keys were fetched once.
    loaded: bool,
    /// The last fetch, successful or not.
    attempted: Option<Instant>,
    /// The last fetch for a key id the keys did not name.
    refreshed: Option<Instant>,
}

/// Uses the RustCrypto backend of `jsonwebtoken` unless the application installed one.
pub(super) fn install_crypto() {
    let _ = jsonwebtoken::crypto::CryptoProvider::install_default(&jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER);
}

/// Verifies JWT access tokens (RFC 9068) of one issuer for one resource.
///
/// The issuer's keys are found through its metadata only (RFC 8414
/// `/.well-known/oauth-authorization-server`, else OpenID Connect Discovery), whose `issuer` must
/// be exactly the configured one; the JWKS is fetched at the first token and cached. A token
/// signed with a key id the cache does not know makes it fetch the keys again, at most once per
/// [`refresh_interval`](Self::refresh_interval); when the issuer cannot be reached, the cached
/// keys keep working. Checks: an asymmetric `alg` matching the key, `typ` `at+jwt` (RFC 9068
/// §2.1; see [`any_typ`](Self::any_typ)), `iss`, `aud` containing the resource, `exp` and `nbf`
/// with [`leeway`](Self::leeway). The [`ResourceServer`](super::ResourceServer) remembers a
/// verified token until it expires, so that a client's next request costs a hash, not a
/// signature check.
pub struct JwtVerifier {
    issuer: String,
    audience: String,
    leeway: Duration,
    refresh_interval: Duration,
    any_typ: bool,
    http: reqwest::Client,
    keys: RwLock<HashMap<String, (DecodingKey, Option<String>)>>,
    /// Serializes fetches; holds when they were tried.
    fetch: tokio::sync::Mutex<Fetches>,
    jwks_uri: tokio::sync::OnceCell<String>,
}

impl JwtVerifier {
    /// Tokens of `issuer` (its issuer identifier, exactly as in its metadata) for `audience`
    /// (this server's canonical URI, the `resource` clients ask tokens for).
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        install_crypto();
        JwtVerifier {
            issuer: issuer.into(),
            audience: audience.into(),
            leeway: Duration::from_secs(30),
            refresh_interval: Duration::from_secs(60),
            any_typ: false,
            http: http_client(),
            keys: RwLock::new(HashMap::new()),
            fetch: tokio::sync::Mutex::new(Fetches::default()),
            jwks_uri: tokio::sync::OnceCell::new(),
        }
    }

    /// Clock skew allowed on `exp` and `nbf` (default 30 s).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The least time between two fetches of the keys for unknown key ids (default 60 s).
    pub fn refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh_interval = interval;
        self
    }

    /// Accept tokens whatever their `typ` header (default: only `at+jwt`, as RFC 9068 asks;
    /// some issuers write `JWT`).
    pub fn any_typ(mut self) -> Self {
        self.any_typ = true;
        self
    }

    /// The HTTP client for the issuer's metadata and keys (default: rustls, 10 s timeout, no
    /// redirects).
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = client;
        self
    }

    async fn verify_uncached(&self, token: &str) -> Result<VerifiedToken, VerifyError> {
        let header = jose_header(token)?;
        let alg_name = header.get("alg").and_then(Value::as_str).unwrap_or("(none given)");
        let Some(alg) = accepted_algorithm(alg_name) else {
            return Err(VerifyError::Invalid(format!(
                "the token's algorithm `{alg_name}` is not accepted (asymmetric algorithms only)"
            )));
        };
        if !self.any_typ {
            let typ = header.get("typ").and_then(Value::as_str).unwrap_or_default();
            if !typ.eq_ignore_ascii_case("at+jwt") && !typ.eq_ignore_ascii_case("application/at+jwt") {
                return Err(VerifyError::Invalid(format!("the token's typ `{typ}` is not at+jwt (RFC 9068)")));
            }
        }
        let kid = header.get("kid").and_then(Value::as_str).unwrap_or_default().to_owned();
        let key = self.key(&kid).await?;
        let (key, key_alg) = key;
        if key_alg.as_deref().is_some_and(|a| a != alg_name) || key.family() != alg.family() {
            return Err(VerifyError::Invalid(format!("the key `{kid}` is not for the algorithm {alg_name}")));
        }
        let mut validation = Validation::new(alg);
        validation.algorithms = vec![alg];
        validation.leeway = self.leeway.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation).map_err(|e| describe(&e))?;
        Ok(VerifiedToken::from_claims(data.claims))
    }

    /// The key named `kid` (or the only key, for a token without one), fetching the JWKS when
    /// it is not known and the last fetch is old enough.
    async fn key(&self, kid: &str) -> Result<(DecodingKey, Option<String>), VerifyError> {
        if let Some(key) = self.cached_key(kid) {
            return Ok(key);
        }
        let mut fetches = self.fetch.lock().await;
        // Another request may have fetched while this one waited.
        if let Some(key) = self.cached_key(kid) {
            return Ok(key);
        }
        let recently = |at: Option<Instant>, interval: Duration| at.is_some_and(|at| at.elapsed() < interval);
        if fetches.loaded {
            // A key id the keys fetched do not name: perhaps a rotation, so fetch again, but
            // at most once per interval whatever tokens arrive.
            if recently(fetches.refreshed, self.refresh_interval) {
                return Err(VerifyError::Invalid(format!("the issuer has no key `{kid}`")));
            }
            fetches.refreshed = Some(Instant::now());
        } else if recently(fetches.attempted, FAILED_FETCH_PAUSE) {
            return Err(VerifyError::Unavailable(format!("the keys of {} could not be fetched", self.issuer)));
        }
        fetches.attempted = Some(Instant::now());
        let keys = self.fetch_keys().await?;
        fetches.loaded = true;
        *self.keys.write().expect("not poisoned") = keys;
        self.cached_key(kid).ok_or_else(|| VerifyError::Invalid(format!("the issuer has no key `{kid}`")))
    }

    fn cached_key(&self, kid: &str) -> Option<(DecodingKey, Option<String>)> {
        let keys = self.keys.read().expect("not poisoned");
        if kid.is_empty() && keys.len() == 1 {
            return keys.values().next().cloned();
        }
        keys.get(kid).cloned()
    }

    async fn fetch_keys(&self) -> Result<HashMap<String, (DecodingKey, Option<String>)>, VerifyError> {
        let jwks_uri =
            self.jwks_uri
                .get_or_try_init(|| async {
                    let metadata = issuer_metadata(&self.http, &self.issuer).await?;
                    metadata.get("jwks_uri").and_then(Value::as_str).map(str::to_owned).ok_or_else(|| {
                        VerifyError::Unavailable(format!("the metadata of {} has no jwks_uri", self.issuer))
                    })
                })
                .await?;
        let set: JwkSet = get_json(&self.http, jwks_uri).await?;
        let mut keys = HashMap::new();
        for jwk in set.keys {
            // Symmetric keys are never published for verification: skip any.
            if matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
                continue;
            }
            if jwk.common.public_key_use.as_ref().is_some_and(|u| *u != jsonwebtoken::jwk::PublicKeyUse::Signature) {
                continue;
            }
            let Ok(key) = DecodingKey::from_jwk(&jwk) else { continue };
            let alg = jwk.common.key_algorithm.map(|a| a.to_string());
            keys.insert(jwk.common.key_id.clone().unwrap_or_default(), (key, alg));
        }
        Ok(keys)
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, VerifyError>> {
        Box::pin(self.verify_uncached(token))
    }

    /// A signed token says the same until it expires.
    fn reuse_for(&self) -> Duration {
        Duration::MAX
    }
}

/// The JOSE header of a compact JWS, read before anything else so that a refusal can name
/// what was wrong (`alg: none` included, which `jsonwebtoken` cannot even parse).
pub(super) fn jose_header(token: &str) -> Result<Map<String, Value>, VerifyError> {
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(VerifyError::Invalid("the token is not a JWT (three base64url parts)".to_owned()));
    };
    let bytes =
        B64URL.decode(header).map_err(|_| VerifyError::Invalid("the token's header is not base64url".to_owned()))?;
    serde_json::from_slice(&bytes)
        .map_err(|_| VerifyError::Invalid("the token's header is not a JSON object".to_owned()))
}

fn describe(error: &jsonwebtoken::errors::Error) -> VerifyError {
    use jsonwebtoken::errors::ErrorKind;
    let why = match error.kind() {
        ErrorKind::ExpiredSignature => "the token has expired".to_owned(),
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
        ErrorKind::InvalidIssuer => "the token was issued by another issuer".to_owned(),
        ErrorKind::InvalidAudience => "the token was issued for another resource (aud)".to_owned(),
        ErrorKind::InvalidSignature => "the token's signature does not verify".to_owned(),
        ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm => "the token's algorithm is not accepted".to_owned(),
        ErrorKind::MissingRequiredClaim(claim) => format!("the token has no `{claim}` claim"),
        ErrorKind::InvalidClaimFormat(claim) => format!("the token's `{claim}` claim is malformed"),
        _ => "the token is malformed".to_owned(),
    };
    VerifyError::Invalid(why)
}

pub(super) fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap_or_default()
}

/// GETs a JSON document; an unreachable server or a non-2xx answer is `Unavailable`.
pub(super) async fn get_json<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
) -> Result<T, VerifyError> {
    let unavailable = |why: String| VerifyError::Unavailable(format!("{url}: {why}"));
    let response =
        http.get(url).header("accept", "application/json").send().await.map_err(|e| unavailable(e.to_string()))?;
    if !response.status().is_success() {
        return Err(unavailable(format!("HTTP {}", response.status())));
    }
    let bytes = response.bytes().await.map_err(|e| unavailable(e.to_string()))?;
    serde_json::from_slice(&bytes).map_err(|e| unavailable(format!("not the expected JSON: {e}")))
}

/// The issuer's metadata: RFC 8414 first, then OpenID Connect Discovery; a document whose
/// `issuer` is not exactly `issuer` is not used (RFC 8414 §3.3).
pub(super) async fn issuer_metadata(http: &reqwest::Client, issuer: &str) -> Result<Map<String, Value>, VerifyError> {
    let trimmed = issuer.trim_end_matches('/');
    let after_scheme = trimmed.find("://").map_or(0, |i| i + 3);
    let path_start = trimmed[after_scheme..].find('/').map_or(trimmed.len(), |i| after_scheme + i);
    let (origin, path) = trimmed.split_at(path_start);
    let candidates = [
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{trimmed}/.well-known/openid-configuration"),
    ];
    let mut last = None;
    for url in candidates {
        match get_json::<Map<String, Value>>(http, &url).await {
            Ok(document) if document.get("issuer").and_then(Value::as_str) == Some(issuer) => return Ok(document),
            Ok(_) => last = Some(VerifyError::Unavailable(format!("{url} names another issuer than {issuer}"))),
            Err(error) => last = Some(error),
        }
    }
    Err(last.expect("two candidates were tried"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_read_before_verification() {
        let header = |json: &str| format!("{}.e30.c2ln", B64URL.encode(json));
        assert_eq!(jose_header(&header(r#"{"alg":"none"}"#)).unwrap()["alg"], "none");
        assert!(matches!(jose_header("a.b"), Err(VerifyError::Invalid(_))));
        assert!(matches!(jose_header("!!.e30.c2ln"), Err(VerifyError::Invalid(_))));
        assert!(accepted_algorithm("HS256").is_none());
        assert!(accepted_algorithm("none").is_none());
        assert!(accepted_algorithm("ES256").is_some());
    }
}
