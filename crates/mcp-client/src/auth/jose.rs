//! JOSE primitives for the OAuth extensions: ES256 keys, compact JWS, RFC 7523 client assertions
//! (`private_key_jwt`) and RFC 9449 DPoP proofs.
//!
//! Crypto comes from RustCrypto `p256` 0.13 (ECDSA P-256 and PKCS#8/SEC1 PEM, on the `sha2` 0.10 and
//! `getrandom` 0.3 the crate already uses) rather than `jsonwebtoken`, which cannot export a public JWK
//! and brings a crypto backend of its own; the compact JWS serialisation (three base64url segments, raw
//! `r || s` signature) is a few lines here.
//!
//! Private keys, access tokens and client secrets never appear in `Debug` output: [`Es256Key`] prints
//! only its public thumbprint and [`Secret`] prints `***`.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::DecodePrivateKey as _;
use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use super::store::Secret;

/// `client_assertion_type` for a JWT client assertion (RFC 7523 §2.2).
pub(crate) const CLIENT_ASSERTION_TYPE_JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// The JWS `alg` of every token this module signs.
pub(crate) const ES256: &str = "ES256";

/// Header carrying a DPoP proof on requests, and a server nonce on responses (RFC 9449 §4.1, §8).
pub(crate) const DPOP_HEADER: &str = "DPoP";
pub(crate) const DPOP_NONCE_HEADER: &str = "DPoP-Nonce";

/// OAuth error code with which a server demands a DPoP nonce (RFC 9449 §8, §9).
pub(crate) const USE_DPOP_NONCE: &str = "use_dpop_nonce";

/// Lifetime of client assertions (RFC 7523 §3 wants a short `exp`).
const ASSERTION_LIFETIME_SECS: u64 = 300;

/// Failures of key handling and signing.
#[derive(Debug)]
#[non_exhaustive]
pub enum JoseError {
    /// The PEM text is not a PKCS#8 (or SEC1) EC P-256 private key.
    InvalidKey,
    /// The operating system's random number generator failed.
    Random,
    /// A URL (DPoP `htu`) could not be parsed or has no origin.
    InvalidUrl(String),
    /// Header or claims could not be serialised.
    Json(serde_json::Error),
}

impl fmt::Display for JoseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidKey => f.write_str("not a PEM-encoded EC P-256 private key (PKCS#8 or SEC1)"),
            Self::Random => f.write_str("the system random number generator failed"),
            Self::InvalidUrl(url) => write!(f, "invalid URL for a DPoP proof: {url}"),
            Self::Json(err) => write!(f, "JWT serialisation failed: {err}"),
        }
    }
}

impl std::error::Error for JoseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Json(err) => Some(err),
            _ => None,
        }
    }
}

impl From<serde_json::Error> for JoseError {
    fn from(err: serde_json::Error) -> Self {
        Self::Json(err)
    }
}

/// An ES256 (ECDSA P-256 with SHA-256) signing key with its public JWK coordinates.
pub struct Es256Key {
    signing: SigningKey,
    /// base64url of the affine x and y coordinates (32 bytes each).
    x: String,
    y: String,
}

impl Es256Key {
    fn from_signing_key(signing: SigningKey) -> Self {
        let point = signing.verifying_key().to_encoded_point(false);
        let x = B64URL.encode(point.x().expect("an uncompressed point has x"));
        let y = B64URL.encode(point.y().expect("an uncompressed point has y"));
        Self { signing, x, y }
    }

    /// A fresh random key (for DPoP, whose key need not be registered anywhere).
    pub fn generate() -> Result<Self, JoseError> {
        // Rejection sampling: 32 random bytes are a valid scalar unless zero or >= the group order
        // (probability about 2^-32), in which case draw again.
        loop {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes).map_err(|_| JoseError::Random)?;
            let key = SigningKey::from_slice(&bytes);
            bytes.fill(0);
            if let Ok(key) = key {
                return Ok(Self::from_signing_key(key));
            }
        }
    }

    /// Parses a PEM private key: PKCS#8 (`BEGIN PRIVATE KEY`, what the conformance suite hands out) or
    /// SEC1 (`BEGIN EC PRIVATE KEY`). Only P-256 keys are accepted.
    pub fn from_pem(pem: &str) -> Result<Self, JoseError> {
        let pem = pem.trim();
        if let Ok(key) = SigningKey::from_pkcs8_pem(pem) {
            return Ok(Self::from_signing_key(key));
        }
        p256::SecretKey::from_sec1_pem(pem)
            .map(|secret| Self::from_signing_key(SigningKey::from(secret)))
            .map_err(|_| JoseError::InvalidKey)
    }

    /// The public key as a JWK (`kty`, `crv`, `x`, `y`; never `d`).
    pub fn public_jwk(&self) -> Value {
        json!({ "kty": "EC", "crv": "P-256", "x": self.x, "y": self.y })
    }

    /// RFC 7638 JWK SHA-256 thumbprint (base64url), e.g. the `cnf.jkt` / `dpop_jkt` of a DPoP key.
    pub fn thumbprint(&self) -> String {
        // Required members only, in lexicographic order, no whitespace (RFC 7638 §3.2).
        let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#, self.x, self.y);
        B64URL.encode(Sha256::digest(canonical.as_bytes()))
    }

    /// Signs `claims` as a compact JWS. `alg` is always `ES256`; `header` adds members such as `typ`
    /// or `jwk` (an `alg` given there is overwritten).
    pub(crate) fn sign(&self, mut header: Map<String, Value>, claims: &Value) -> Result<String, JoseError> {
        header.insert("alg".to_owned(), Value::from(ES256));
        let header = B64URL.encode(serde_json::to_vec(&header)?);
        let claims = B64URL.encode(serde_json::to_vec(claims)?);
        let signing_input = format!("{header}.{claims}");
        let signature: Signature = self.signing.sign(signing_input.as_bytes());
        let signature = B64URL.encode(signature.to_bytes());
        Ok(format!("{signing_input}.{signature}"))
    }

    #[cfg(test)]
    pub(crate) fn verifying_key(&self) -> &p256::ecdsa::VerifyingKey {
        self.signing.verifying_key()
    }
}

impl fmt::Debug for Es256Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Es256Key").field("jkt", &self.thumbprint()).finish_non_exhaustive()
    }
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A random, URL-safe JWT ID (128 bits).
fn new_jti() -> Result<String, JoseError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|_| JoseError::Random)?;
    Ok(B64URL.encode(bytes))
}

/// A `private_key_jwt` client assertion (RFC 7523 §2.2, §3; OIDC Core §9): `iss` = `sub` = `client_id`,
/// `aud` = `audience`, `iat`, `exp` five minutes later, random `jti`.
///
/// `audience` should be the authorization server's issuer identifier (what RFC 7523bis recommends and
/// what the conformance suite verifies); the token endpoint URL alone is rejected there.
pub(crate) fn client_assertion(key: &Es256Key, client_id: &str, audience: &str) -> Result<String, JoseError> {
    let iat = now_secs();
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": iat,
        "exp": iat + ASSERTION_LIFETIME_SECS,
        "jti": new_jti()?,
    });
    let mut header = Map::new();
    header.insert("typ".to_owned(), Value::from("JWT"));
    key.sign(header, &claims)
}

/// base64url(SHA-256(access token)): the `ath` claim of a DPoP proof (RFC 9449 §4.2).
pub(crate) fn access_token_hash(access_token: &str) -> String {
    B64URL.encode(Sha256::digest(access_token.as_bytes()))
}

/// The `htu` of a request URL: the URL without query and fragment (RFC 9449 §4.2).
pub(crate) fn htu(url: &str) -> Result<String, JoseError> {
    let mut parsed = url::Url::parse(url).map_err(|_| JoseError::InvalidUrl(url.to_owned()))?;
    parsed.set_query(None);
    parsed.set_fragment(None);
    Ok(parsed.into())
}

/// The key under which a server's nonce is remembered: the URL's origin (`scheme://host:port`).
fn origin_of(url: &str) -> Result<String, JoseError> {
    let parsed = url::Url::parse(url).map_err(|_| JoseError::InvalidUrl(url.to_owned()))?;
    match parsed.origin() {
        origin @ url::Origin::Tuple(..) => Ok(origin.ascii_serialization()),
        url::Origin::Opaque(_) => Err(JoseError::InvalidUrl(url.to_owned())),
    }
}

/// A DPoP key plus the latest nonce each server (authorization server, resource server) handed out,
/// keyed by origin; should both share an origin, a stale nonce only costs the one `use_dpop_nonce`
/// retry.
///
/// One `Dpop` must be used for the token request *and* the resource requests: the access token is
/// bound to its key's thumbprint (`cnf.jkt`).
pub(crate) struct Dpop {
    key: Es256Key,
    /// origin → latest `DPoP-Nonce`.
    nonces: Mutex<HashMap<String, String>>,
}

impl Dpop {
    /// A DPoP signer with a fresh ephemeral key.
    pub fn generate() -> Result<Self, JoseError> {
        Ok(Self::with_key(Es256Key::generate()?))
    }

    pub fn with_key(key: Es256Key) -> Self {
        Self { key, nonces: Mutex::new(HashMap::new()) }
    }

    #[cfg(test)]
    pub fn key(&self) -> &Es256Key {
        &self.key
    }

    /// The last nonce remembered for `url`'s origin.
    pub fn nonce_for(&self, url: &str) -> Option<String> {
        let origin = origin_of(url).ok()?;
        self.nonces.lock().unwrap_or_else(|e| e.into_inner()).get(&origin).cloned()
    }

    /// Remembers `nonce` for `url`'s origin (replacing an older one).
    pub fn remember_nonce(&self, url: &str, nonce: &str) {
        if let Ok(origin) = origin_of(url) {
            self.nonces.lock().unwrap_or_else(|e| e.into_inner()).insert(origin, nonce.to_owned());
        }
    }

    /// Remembers the `DPoP-Nonce` of a response from `url`, if it has one (servers may send a fresh
    /// nonce on any response, RFC 9449 §8.2). Returns the nonce.
    pub fn remember_nonce_from(&self, url: &str, headers: &HeaderMap) -> Option<String> {
        let nonce = headers.get(DPOP_NONCE_HEADER)?.to_str().ok()?.trim();
        if nonce.is_empty() {
            return None;
        }
        self.remember_nonce(url, nonce);
        Some(nonce.to_owned())
    }

    /// A fresh proof for `method url`, carrying the nonce remembered for the URL's origin if any, and
    /// `ath` when `access_token` is given (resource requests; omit it at the token endpoint).
    pub fn proof(&self, method: &str, url: &str, access_token: Option<&str>) -> Result<String, JoseError> {
        let nonce = self.nonce_for(url);
        self.proof_with_nonce(method, url, access_token, nonce.as_deref())
    }

    /// A fresh proof with an explicit nonce (or none).
    pub fn proof_with_nonce(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, JoseError> {
        let mut claims = Map::new();
        claims.insert("jti".to_owned(), Value::from(new_jti()?));
        claims.insert("htm".to_owned(), Value::from(method.to_ascii_uppercase()));
        claims.insert("htu".to_owned(), Value::from(htu(url)?));
        claims.insert("iat".to_owned(), Value::from(now_secs()));
        if let Some(nonce) = nonce {
            claims.insert("nonce".to_owned(), Value::from(nonce));
        }
        if let Some(token) = access_token {
            claims.insert("ath".to_owned(), Value::from(access_token_hash(token)));
        }
        let mut header = Map::new();
        header.insert("typ".to_owned(), Value::from("dpop+jwt"));
        header.insert("jwk".to_owned(), self.key.public_jwk());
        self.key.sign(header, &Value::Object(claims))
    }

    /// The two headers of a request to a protected resource with a DPoP-bound token:
    /// (`Authorization` value `DPoP <token>`, `DPoP` proof value).
    pub fn resource_headers(
        &self,
        method: &str,
        url: &str,
        access_token: &Secret,
    ) -> Result<(Secret, String), JoseError> {
        let proof = self.proof(method, url, Some(access_token.expose()))?;
        Ok((Secret::new(format!("DPoP {}", access_token.expose())), proof))
    }
}

impl fmt::Debug for Dpop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let origins: Vec<String> = self.nonces.lock().unwrap_or_else(|e| e.into_inner()).keys().cloned().collect();
        f.debug_struct("Dpop").field("key", &self.key).field("nonce_origins", &origins).finish()
    }
}

/// If a resource server's response is a DPoP nonce challenge (RFC 9449 §9: 401,
/// `WWW-Authenticate: DPoP error="use_dpop_nonce"`, `DPoP-Nonce: …`), returns the demanded nonce.
///
/// The caller remembers it (via [`Dpop::remember_nonce`] or [`Dpop::remember_nonce_from`]) and retries
/// the request once with a fresh proof; this is not a reason to re-authorize.
pub(crate) fn resource_nonce_challenge(status: u16, headers: &HeaderMap) -> Option<String> {
    if status != 401 {
        return None;
    }
    let challenged = headers.get_all(reqwest::header::WWW_AUTHENTICATE).iter().any(|value| {
        // The `DPoP` challenge may share the header with a `Bearer` one; the error code is enough.
        value.to_str().is_ok_and(|v| v.contains(USE_DPOP_NONCE))
    });
    if !challenged {
        return None;
    }
    let nonce = headers.get(DPOP_NONCE_HEADER)?.to_str().ok()?.trim();
    (!nonce.is_empty()).then(|| nonce.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::VerifyingKey;
    use p256::ecdsa::signature::Verifier as _;

    /// A fixed P-256 key in PKCS#8 PEM with its public JWK and RFC 7638 thumbprint, produced by the
    /// `jose` npm package (the one the conformance suite uses): `generateKeyPair('ES256')`,
    /// `exportPKCS8`, `exportJWK`, `calculateJwkThumbprint`.
    const PKCS8_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgR+yTyTSaYEjnrsQs
37AP1Nj61OQ3vueUYDRYyNYmej+hRANCAASy6g8LoJTx89z/O/C96osH1y8ytLyM
T9m3ev5g/OjAUy3tPKIR4FzSVTQpd0EyiTkI+VNUHBzOnXNub3APrVXY
-----END PRIVATE KEY-----";
    const PEM_X: &str = "suoPC6CU8fPc_zvwveqLB9cvMrS8jE_Zt3r-YPzowFM";
    const PEM_Y: &str = "Le08ohHgXNJVNCl3QTKJOQj5U1QcHM6dc25vcA-tVdg";
    const PEM_JKT: &str = "6_xdkQT5PsBy7BSQuaKT_RRRjfHg3hVqeyjx0wUAlLo";
    /// The same key in SEC1 form (`openssl ec`).
    const SEC1_PEM: &str = "-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIEfsk8k0mmBI567ELN+wD9TY+tTkN77nlGA0WMjWJno/oAoGCCqGSM49
AwEHoUQDQgAEsuoPC6CU8fPc/zvwveqLB9cvMrS8jE/Zt3r+YPzowFMt7TyiEeBc
0lU0KXdBMok5CPlTVBwczp1zbm9wD61V2A==
-----END EC PRIVATE KEY-----
";

    fn decode_part(part: &str) -> Value {
        serde_json::from_slice(&B64URL.decode(part).expect("base64url")).expect("JSON")
    }

    /// Splits a compact JWS, checks the ES256 signature with `key`, returns (header, claims).
    fn verify(jws: &str, key: &VerifyingKey) -> (Value, Value) {
        let parts: Vec<&str> = jws.split('.').collect();
        assert_eq!(parts.len(), 3, "compact JWS has three parts");
        let signature = B64URL.decode(parts[2]).expect("signature base64url");
        assert_eq!(signature.len(), 64, "ES256 signature is raw r||s");
        let signature = Signature::from_slice(&signature).expect("signature");
        key.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature).expect("signature verifies");
        (decode_part(parts[0]), decode_part(parts[1]))
    }

    /// Verifies with the public key carried in the JWS's own `jwk` header, as DPoP verifiers do.
    fn verify_with_embedded_jwk(jws: &str) -> (Value, Value) {
        let header = decode_part(jws.split('.').next().unwrap());
        let jwk = &header["jwk"];
        let mut sec1 = vec![4u8];
        sec1.extend(B64URL.decode(jwk["x"].as_str().unwrap()).unwrap());
        sec1.extend(B64URL.decode(jwk["y"].as_str().unwrap()).unwrap());
        verify(jws, &VerifyingKey::from_sec1_bytes(&sec1).expect("jwk is a P-256 point"))
    }

    #[test]
    fn parses_pkcs8_pem_and_computes_the_rfc7638_thumbprint() {
        let key = Es256Key::from_pem(PKCS8_PEM).unwrap();
        assert_eq!(key.public_jwk(), json!({"kty": "EC", "crv": "P-256", "x": PEM_X, "y": PEM_Y}));
        assert_eq!(key.thumbprint(), PEM_JKT);
    }

    #[test]
    fn parses_sec1_pem_of_the_same_key() {
        let key = Es256Key::from_pem(SEC1_PEM).unwrap();
        assert_eq!(key.thumbprint(), PEM_JKT);
    }

    #[test]
    fn rejects_non_keys() {
        assert!(matches!(Es256Key::from_pem("not a key"), Err(JoseError::InvalidKey)));
        let truncated = PKCS8_PEM.replace("T9m3ev5g/OjAUy3tPKIR4FzSVTQpd0EyiTkI+VNUHBzOnXNub3APrVXY\n", "");
        assert!(Es256Key::from_pem(&truncated).is_err());
    }

    #[test]
    fn generated_keys_are_distinct_and_sign_verifiably() {
        let a = Es256Key::generate().unwrap();
        let b = Es256Key::generate().unwrap();
        assert_ne!(a.thumbprint(), b.thumbprint());
        let mut header = Map::new();
        header.insert("alg".to_owned(), Value::from("none"));
        header.insert("typ".to_owned(), Value::from("JWT"));
        let jws = a.sign(header, &json!({"hello": "world"})).unwrap();
        let (header, claims) = verify(&jws, a.verifying_key());
        assert_eq!(header, json!({"alg": "ES256", "typ": "JWT"}));
        assert_eq!(claims, json!({"hello": "world"}));
        let parts: Vec<&str> = jws.split('.').collect();
        let signature = Signature::from_slice(&B64URL.decode(parts[2]).unwrap()).unwrap();
        assert!(b.verifying_key().verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature).is_err());
    }

    #[test]
    fn client_assertion_has_the_rfc7523_claims() {
        let key = Es256Key::from_pem(PKCS8_PEM).unwrap();
        let jws = client_assertion(&key, "conformance-test-client", "http://localhost:4000").unwrap();
        let (header, claims) = verify(&jws, key.verifying_key());
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["typ"], "JWT");
        assert!(header.get("jwk").is_none());
        assert_eq!(claims["iss"], "conformance-test-client");
        assert_eq!(claims["sub"], "conformance-test-client");
        assert_eq!(claims["aud"], "http://localhost:4000");
        let iat = claims["iat"].as_u64().unwrap();
        assert!(iat.abs_diff(now_secs()) < 5);
        assert_eq!(claims["exp"].as_u64().unwrap(), iat + ASSERTION_LIFETIME_SECS);
        assert_eq!(claims["jti"].as_str().unwrap().len(), 22);
        let again = client_assertion(&key, "conformance-test-client", "http://localhost:4000").unwrap();
        assert_ne!(verify(&again, key.verifying_key()).1["jti"], claims["jti"]);
    }

    #[test]
    fn token_endpoint_proof_has_no_ath_and_strips_query() {
        let dpop = Dpop::generate().unwrap();
        let proof = dpop.proof("post", "http://localhost:4000/token?x=1#frag", None).unwrap();
        let (header, claims) = verify_with_embedded_jwk(&proof);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["jwk"], dpop.key().public_jwk());
        assert!(header["jwk"].get("d").is_none());
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "http://localhost:4000/token");
        assert!(claims["iat"].as_u64().unwrap().abs_diff(now_secs()) < 5);
        assert!(claims.get("ath").is_none());
        assert!(claims.get("nonce").is_none());
        assert!(claims["jti"].is_string());
    }

    #[test]
    fn resource_proof_binds_the_token_and_is_fresh() {
        let dpop = Dpop::generate().unwrap();
        let token = Secret::new("eyJhbGciOiJFUzI1NiJ9.e30.sig");
        let (authorization, proof) = dpop.resource_headers("POST", "http://localhost:5000/mcp", &token).unwrap();
        assert_eq!(authorization.expose(), "DPoP eyJhbGciOiJFUzI1NiJ9.e30.sig");
        let (_, claims) = verify_with_embedded_jwk(&proof);
        // base64url(SHA-256("eyJhbGciOiJFUzI1NiJ9.e30.sig")), computed independently.
        assert_eq!(claims["ath"], B64URL.encode(Sha256::digest(b"eyJhbGciOiJFUzI1NiJ9.e30.sig")));
        assert_eq!(claims["htu"], "http://localhost:5000/mcp");
        let (_, second) = dpop.resource_headers("POST", "http://localhost:5000/mcp", &token).unwrap();
        assert_ne!(verify_with_embedded_jwk(&second).1["jti"], claims["jti"]);
    }

    #[test]
    fn nonces_are_remembered_per_origin() {
        let dpop = Dpop::generate().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(DPOP_NONCE_HEADER, "as-nonce".parse().unwrap());
        assert_eq!(dpop.remember_nonce_from("http://localhost:4000/token", &headers).as_deref(), Some("as-nonce"));
        dpop.remember_nonce("http://localhost:5000/mcp", "rs-nonce");

        let as_proof = dpop.proof("POST", "http://localhost:4000/token", None).unwrap();
        assert_eq!(verify_with_embedded_jwk(&as_proof).1["nonce"], "as-nonce");
        let rs_proof = dpop.proof("POST", "http://localhost:5000/other/path", Some("t")).unwrap();
        assert_eq!(verify_with_embedded_jwk(&rs_proof).1["nonce"], "rs-nonce");
        let other = dpop.proof("POST", "http://localhost:6000/mcp", Some("t")).unwrap();
        assert!(verify_with_embedded_jwk(&other).1.get("nonce").is_none());

        dpop.remember_nonce("http://localhost:4000/", "newer");
        assert_eq!(dpop.nonce_for("http://localhost:4000/token").as_deref(), Some("newer"));
        assert!(dpop.remember_nonce_from("http://localhost:4000/token", &HeaderMap::new()).is_none());
    }

    #[test]
    fn recognises_resource_server_nonce_challenges() {
        let mut headers = HeaderMap::new();
        headers.insert(
            reqwest::header::WWW_AUTHENTICATE,
            r#"DPoP error="use_dpop_nonce", resource_metadata="http://x/.well-known/oauth-protected-resource/mcp""#
                .parse()
                .unwrap(),
        );
        headers.insert(DPOP_NONCE_HEADER, "rs-nonce".parse().unwrap());
        assert_eq!(resource_nonce_challenge(401, &headers).as_deref(), Some("rs-nonce"));
        assert_eq!(resource_nonce_challenge(403, &headers), None);

        let mut plain = HeaderMap::new();
        plain.insert(reqwest::header::WWW_AUTHENTICATE, r#"DPoP resource_metadata="http://x/prm""#.parse().unwrap());
        plain.insert(DPOP_NONCE_HEADER, "rs-nonce".parse().unwrap());
        assert_eq!(resource_nonce_challenge(401, &plain), None);
    }

    #[test]
    fn debug_output_hides_secrets() {
        let secret = Secret::new("super-secret-value");
        assert_eq!(format!("{secret:?}"), "Secret(***)");
        assert_eq!(format!("{secret}"), "***");
        let key = Es256Key::from_pem(PKCS8_PEM).unwrap();
        let debug = format!("{key:?}");
        assert!(debug.contains(PEM_JKT), "{debug}");
        let d = B64URL.encode(key.signing.to_bytes());
        assert!(!debug.contains(&d));
        let dpop = Dpop::with_key(key);
        let debug = format!("{dpop:?}");
        assert!(!debug.contains(&d), "{debug}");
    }
}
