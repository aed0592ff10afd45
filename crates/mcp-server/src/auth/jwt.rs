//! JWT access tokens (RFC 9068) verified against the issuer's published keys, and what the
//! verifiers share: issuer discovery (RFC 8414, OpenID Connect Discovery) and a bounded cache of
//! verified tokens.

use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use futures::future::BoxFuture;
use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::{TokenVerifier, VerifyError};
use crate::principal::VerifiedToken;

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

/// The longest metadata document read (its body is streamed and refused past this).
const MAX_METADATA_BYTES: usize = 1024 * 1024;

type Keys = HashMap<String, (DecodingKey, Option<String>)>;

/// The keys last fetched, and until when they may be used without fetching again.
#[derive(Default)]
struct KeySet {
    keys: Keys,
    /// `None`: never fetched.
    fresh_until: Option<Instant>,
}

/// When the keys were fetched.
#[derive(Default)]
struct Fetches {
    /// The last fetch, successful or not.
    attempted: Option<Instant>,
    /// The last fetch for a key id the keys did not name.
    refreshed: Option<Instant>,
    /// Why the last fetch failed, for the requests that waited on it.
    failure: Option<VerifyError>,
}

/// Uses the RustCrypto backend of `jsonwebtoken` unless the application installed one.
pub(super) fn install_crypto() {
    let _ = jsonwebtoken::crypto::CryptoProvider::install_default(&jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER);
}

/// Verifies JWT access tokens (RFC 9068) of one issuer for one resource.
///
/// The issuer's keys are found through its metadata only (RFC 8414
/// `/.well-known/oauth-authorization-server`, else OpenID Connect Discovery), whose `issuer` must
/// be exactly the configured one; the JWKS is fetched at the first token and kept for its
/// `Cache-Control: max-age`, bounded by [`jwks_max_age`](Self::jwks_max_age) (default between
/// 30 s and 5 min; 5 min without the header), then fetched again, so that a key the issuer
/// removed stops verifying within that time. One fetch at a time: requests that arrive while
/// one runs share its outcome. The JWKS body is refused past
/// [`max_jwks_bytes`](Self::max_jwks_bytes) (1 MiB) without reading further. A token signed
/// with a key id the cache does not know makes it fetch the keys again, at most once per
/// [`refresh_interval`](Self::refresh_interval); when the issuer cannot be reached, the cached
/// keys keep working. Checks: an asymmetric `alg` matching the key, no `crit` header, `typ`
/// `at+jwt` (RFC 9068 §2.1; see [`any_typ`](Self::any_typ)), `iss` (a string), `aud`
/// containing the resource, `exp`, `nbf` and `iat` (not in the future) with
/// [`leeway`](Self::leeway), and a `sub` that is not empty and does not start with `client:`
/// (see [`Principal`](crate::Principal)). The [`ResourceServer`](super::ResourceServer)
/// remembers a verified token until the keys are due to be fetched again (never past its
/// expiry), so that a client's next request costs a hash, not a signature check.
pub struct JwtVerifier {
    issuer: String,
    audience: String,
    leeway: Duration,
    refresh_interval: Duration,
    min_max_age: Duration,
    max_max_age: Duration,
    max_jwks_bytes: usize,
    any_typ: bool,
    http: reqwest::Client,
    keys: RwLock<KeySet>,
    /// Serializes fetches; holds when they were tried.
    fetch: tokio::sync::Mutex<Fetches>,
    /// Fetches completed: a request that waited for `fetch` while one ran uses its outcome.
    fetches_done: AtomicU64,
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
            min_max_age: Duration::from_secs(30),
            max_max_age: Duration::from_secs(300),
            max_jwks_bytes: 1024 * 1024,
            any_typ: false,
            http: http_client(),
            keys: RwLock::new(KeySet::default()),
            fetch: tokio::sync::Mutex::new(Fetches::default()),
            fetches_done: AtomicU64::new(0),
            jwks_uri: tokio::sync::OnceCell::new(),
        }
    }

    /// Clock skew allowed on `exp`, `nbf` and `iat` (default 30 s).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The least time between two fetches of the keys for unknown key ids (default 60 s).
    pub fn refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh_interval = interval;
        self
    }

    /// How long fetched keys are used before they are fetched again: the JWKS response's
    /// `Cache-Control: max-age`, raised to `min` and lowered to `max` (default 30 s and 5 min);
    /// `max` when it says nothing. A key the issuer removed stops verifying within this time
    /// (tokens already verified too: they are reused only until then).
    pub fn jwks_max_age(mut self, min: Duration, max: Duration) -> Self {
        self.min_max_age = min.min(max);
        self.max_max_age = max;
        self
    }

    /// The longest JWKS read (default 1 MiB): a longer body is refused (the token cannot be
    /// verified now, 503) after reading at most this much.
    pub fn max_jwks_bytes(mut self, bytes: usize) -> Self {
        self.max_jwks_bytes = bytes;
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
        check_claims(&data.claims, Some(self.leeway))?;
        Ok(VerifiedToken::from_claims(data.claims))
    }

    /// The key named `kid` (or the only key, for a token without one), fetching the JWKS when
    /// the keys are due for a refresh, or do not name `kid` and the last such fetch is old
    /// enough. One fetch at a time; requests waiting meanwhile share its outcome.
    async fn key(&self, kid: &str) -> Result<(DecodingKey, Option<String>), VerifyError> {
        if let (Some(key), true) = (self.cached_key(kid), self.keys_fresh()) {
            return Ok(key);
        }
        let done = self.fetches_done.load(Ordering::Acquire);
        let mut fetches = self.fetch.lock().await;
        let no_key = || VerifyError::Invalid(format!("the issuer has no key `{kid}`"));
        if self.fetches_done.load(Ordering::Acquire) != done {
            // A fetch ended while this request waited: its outcome is this request's too.
            return self.cached_key(kid).ok_or_else(|| fetches.failure.clone().unwrap_or_else(no_key));
        }
        let recently = |at: Option<Instant>, interval: Duration| at.is_some_and(|at| at.elapsed() < interval);
        let loaded = self.keys.read().expect("not poisoned").fresh_until.is_some();
        match self.cached_key(kid) {
            Some(key) if self.keys_fresh() => return Ok(key),
            // Due for a refresh, but the last attempt failed a moment ago: keep the old keys.
            Some(key) if recently(fetches.attempted, FAILED_FETCH_PAUSE) => return Ok(key),
            Some(_) => {}
            None if loaded => {
                // A key id the keys fetched do not name: perhaps a rotation, so fetch again,
                // but at most once per interval whatever tokens arrive.
                if self.keys_fresh() && recently(fetches.refreshed, self.refresh_interval) {
                    return Err(no_key());
                }
                fetches.refreshed = Some(Instant::now());
            }
            None if recently(fetches.attempted, FAILED_FETCH_PAUSE) => {
                return Err(VerifyError::Unavailable(format!("the keys of {} could not be fetched", self.issuer)));
            }
            None => {}
        }
        if loaded {
            // A refresh serves key ids not known yet as well: none fetches again before the
            // interval.
            fetches.refreshed = Some(Instant::now());
        }
        fetches.attempted = Some(Instant::now());
        let fetched = self.fetch_keys().await;
        fetches.failure = fetched.as_ref().err().cloned();
        if let Ok((keys, max_age)) = fetched {
            let max_age = max_age.unwrap_or(self.max_max_age).clamp(self.min_max_age, self.max_max_age);
            let fresh_until = Instant::now().checked_add(max_age);
            *self.keys.write().expect("not poisoned") = KeySet { keys, fresh_until };
        }
        self.fetches_done.fetch_add(1, Ordering::Release);
        self.cached_key(kid).ok_or_else(|| fetches.failure.clone().unwrap_or_else(no_key))
    }

    /// Whether the keys were fetched and are not due for a refresh.
    fn keys_fresh(&self) -> bool {
        let keys = self.keys.read().expect("not poisoned");
        keys.fresh_until.is_some_and(|until| Instant::now() < until)
    }

    fn cached_key(&self, kid: &str) -> Option<(DecodingKey, Option<String>)> {
        let keys = &self.keys.read().expect("not poisoned").keys;
        if kid.is_empty() && keys.len() == 1 {
            return keys.values().next().cloned();
        }
        keys.get(kid).cloned()
    }

    /// The issuer's keys, and the JWKS response's `max-age`.
    async fn fetch_keys(&self) -> Result<(Keys, Option<Duration>), VerifyError> {
        let jwks_uri = self
            .jwks_uri
            .get_or_try_init(|| async {
                let metadata = issuer_metadata(&self.http, &self.issuer).await?;
                metadata.get("jwks_uri").and_then(Value::as_str).map(str::to_owned).ok_or_else(|| {
                    VerifyError::Misconfigured(format!("the metadata of {} has no jwks_uri", self.issuer))
                })
            })
            .await?;
        let (set, max_age): (JwkSet, _) = get_json_capped(&self.http, jwks_uri, self.max_jwks_bytes).await?;
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
        Ok((keys, max_age))
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, VerifyError>> {
        Box::pin(self.verify_uncached(token))
    }

    /// Finds the issuer's metadata and fetches its keys (kept for the first tokens).
    fn check(&self) -> BoxFuture<'_, Result<(), VerifyError>> {
        Box::pin(async move {
            let (keys, max_age) = self.fetch_keys().await?;
            let max_age = max_age.unwrap_or(self.max_max_age).clamp(self.min_max_age, self.max_max_age);
            let fresh_until = Instant::now().checked_add(max_age);
            *self.keys.write().expect("not poisoned") = KeySet { keys, fresh_until };
            Ok(())
        })
    }

    /// A signed token says the same until it expires, but its key may be removed: reused
    /// only until the keys are due to be fetched again.
    fn reuse_for(&self) -> Duration {
        let keys = self.keys.read().expect("not poisoned");
        keys.fresh_until.map_or(Duration::ZERO, |until| until.saturating_duration_since(Instant::now()))
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
    let header: Map<String, Value> = serde_json::from_slice(&bytes)
        .map_err(|_| VerifyError::Invalid("the token's header is not a JSON object".to_owned()))?;
    // No extension is understood here, so a header that says one is critical is refused
    // (RFC 7515 §4.1.11).
    if header.contains_key("crit") {
        return Err(VerifyError::Invalid(
            "the token's header lists critical extensions (crit) not understood".to_owned(),
        ));
    }
    Ok(header)
}

/// The claims `jsonwebtoken` reads leniently, checked strictly: `iss` only as a string, `sub`
/// (when present) a non-empty string outside the `client:` namespace of client principals, and
/// `iat` not beyond `leeway` in the future (`None`: not checked).
pub(super) fn check_claims(claims: &Map<String, Value>, iat_leeway: Option<Duration>) -> Result<(), VerifyError> {
    let invalid = |why: &str| Err(VerifyError::Invalid(why.to_owned()));
    if claims.get("iss").is_some_and(|iss| !iss.is_string()) {
        return invalid("the token's `iss` claim is not a string");
    }
    match claims.get("sub") {
        None => {}
        Some(Value::String(sub)) if sub.is_empty() => return invalid("the token's `sub` claim is empty"),
        Some(Value::String(sub)) if sub.starts_with(crate::principal::Principal::CLIENT_PREFIX) => {
            return invalid("the token's `sub` claim starts with `client:`, the namespace of client principals");
        }
        Some(Value::String(_)) => {}
        Some(_) => return invalid("the token's `sub` claim is not a string"),
    }
    if let (Some(leeway), Some(iat)) = (iat_leeway, claims.get("iat")) {
        let Some(iat) = iat.as_f64() else { return invalid("the token's `iat` claim is not a number") };
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64();
        if iat > now + leeway.as_secs_f64() {
            return invalid("the token's `iat` is in the future");
        }
    }
    Ok(())
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

/// GETs a JSON document of at most 1 MiB; an unreachable server or a non-2xx answer is
/// `Unavailable`.
pub(super) async fn get_json<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
) -> Result<T, VerifyError> {
    get_json_capped(http, url, MAX_METADATA_BYTES).await.map(|(document, _)| document)
}

/// GETs a JSON document, reading at most `cap` bytes of it, and its `Cache-Control: max-age`.
async fn get_json_capped<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
    cap: usize,
) -> Result<(T, Option<Duration>), VerifyError> {
    let unavailable = |why: String| VerifyError::Unavailable(format!("{url}: {why}"));
    let mut response =
        http.get(url).header("accept", "application/json").send().await.map_err(|e| unavailable(e.to_string()))?;
    if !response.status().is_success() {
        return Err(unavailable(format!("HTTP {}", response.status())));
    }
    let too_long = || unavailable(format!("the document exceeds {cap} bytes"));
    if response.content_length().is_some_and(|length| length > cap as u64) {
        return Err(too_long());
    }
    let max_age = response
        .headers()
        .get_all(reqwest::header::CACHE_CONTROL)
        .iter()
        .find_map(|value| max_age(value.to_str().ok()?));
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| unavailable(e.to_string()))? {
        if bytes.len() + chunk.len() > cap {
            return Err(too_long());
        }
        bytes.extend_from_slice(&chunk);
    }
    let document = serde_json::from_slice(&bytes).map_err(|e| unavailable(format!("not the expected JSON: {e}")))?;
    Ok((document, max_age))
}

/// The freshness a `Cache-Control` value gives: its `max-age`, or zero for `no-cache` and
/// `no-store`.
fn max_age(cache_control: &str) -> Option<Duration> {
    cache_control.split(',').map(str::trim).find_map(|directive| {
        let lower = directive.to_ascii_lowercase();
        if lower == "no-cache" || lower == "no-store" {
            return Some(Duration::ZERO);
        }
        let seconds = lower.strip_prefix("max-age=")?.trim_matches('"');
        seconds.parse::<u64>().ok().map(Duration::from_secs)
    })
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
            Ok(document) => {
                let named = document.get("issuer").map_or_else(|| "no issuer".to_owned(), Value::to_string);
                last = Some(VerifyError::Misconfigured(format!(
                    "the metadata at {url} names the issuer {named}, not {issuer:?} as configured{}",
                    issuer_fix(issuer, document.get("issuer").and_then(Value::as_str))
                )));
            }
            // A document naming another issuer says more than the other candidate's absence.
            Err(_) if matches!(last, Some(VerifyError::Misconfigured(_))) => {}
            Err(error) => last = Some(error),
        }
    }
    Err(last.expect("two candidates were tried"))
}

/// The one-character fix for an issuer configured with or without the trailing slash its
/// metadata has (RFC 8414 compares issuer identifiers exactly).
fn issuer_fix(configured: &str, named: Option<&str>) -> &'static str {
    match named {
        Some(named) if configured.strip_suffix('/') == Some(named) => ": drop the trailing `/`",
        Some(named) if named.strip_suffix('/') == Some(configured) => ": add the trailing `/`",
        _ => ": configure the issuer exactly as its metadata writes it",
    }
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
        let crit = jose_header(&header(r#"{"alg":"ES256","crit":["exp"],"exp":1}"#)).unwrap_err();
        assert!(crit.to_string().contains("crit"), "{crit}");
    }

    #[test]
    fn cache_control_gives_the_max_age() {
        assert_eq!(max_age("public, max-age=120"), Some(Duration::from_secs(120)));
        assert_eq!(max_age("Max-Age=\"7\""), Some(Duration::from_secs(7)));
        assert_eq!(max_age("no-store"), Some(Duration::ZERO));
        assert_eq!(max_age("public"), None);
        assert_eq!(max_age("max-age=-1"), None);
    }

    #[test]
    fn lenient_claims_are_refused() {
        let claims = |value: Value| value.as_object().unwrap().clone();
        let leeway = Some(Duration::from_secs(30));
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        for (bad, why) in [
            (serde_json::json!({"iss": ["a", "b"]}), "not a string"),
            (serde_json::json!({"sub": ""}), "empty"),
            (serde_json::json!({"sub": 7}), "not a string"),
            (serde_json::json!({"sub": "client:alice"}), "client:"),
            (serde_json::json!({"iat": now + 3600}), "future"),
        ] {
            let error = check_claims(&claims(bad.clone()), leeway).unwrap_err();
            assert!(error.to_string().contains(why), "{bad}: {error}");
        }
        let good = serde_json::json!({"iss": "https://as", "sub": "alice", "iat": now + 20});
        assert_eq!(check_claims(&claims(good), leeway), Ok(()));
    }
}
