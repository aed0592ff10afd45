//! A mock protected MCP server (2026-07-28 stateless, or a 2025-11-25 session) and a mock OAuth
//! authorization server on 127.0.0.1, configurable per test and recording every request they
//! see. Both verify DPoP proofs and the authorization server verifies `private_key_jwt` client
//! assertions (ES256, with `p256`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD as B64URL};
use p256::ecdsa::signature::Verifier as _;
use p256::ecdsa::{Signature, VerifyingKey};
use serde_json::{Value, json};
use sha2::Digest as _;

/// One request a mock saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: Method,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub headers: HeaderMap,
    /// Form fields (token requests) or JSON members as strings.
    pub form: Vec<(String, String)>,
    pub json: Value,
}

impl Seen {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().chain(&self.form).find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    pub fn rpc(&self) -> &str {
        self.json["method"].as_str().unwrap_or("")
    }
}

pub type Log = Arc<Mutex<Vec<Seen>>>;

/// Access tokens issued by any mock authorization server.
pub type Issued = Arc<Mutex<HashMap<String, IssuedToken>>>;

#[derive(Debug, Clone)]
pub struct IssuedToken {
    pub issuer: String,
    pub scopes: Vec<String>,
    /// The thumbprint of the DPoP key the token is bound to.
    pub jkt: Option<String>,
}

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

fn decode_part(part: &str) -> Result<Value, String> {
    let bytes = B64URL.decode(part).map_err(|e| format!("base64url: {e}"))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("JSON: {e}"))
}

/// Checks a compact ES256 JWS with `key`; returns (header, claims).
pub fn verify_jws(jws: &str, key: &VerifyingKey) -> Result<(Value, Value), String> {
    let parts: Vec<&str> = jws.split('.').collect();
    let [header, claims, signature] = parts[..] else { return Err("not a compact JWS".into()) };
    let signature = B64URL.decode(signature).map_err(|e| format!("signature: {e}"))?;
    let signature = Signature::from_slice(&signature).map_err(|e| format!("signature: {e}"))?;
    key.verify(format!("{header}.{claims}").as_bytes(), &signature).map_err(|_| "bad signature".to_owned())?;
    let header = decode_part(header)?;
    if header["alg"] != "ES256" {
        return Err(format!("alg {}", header["alg"]));
    }
    Ok((header, decode_part(claims)?))
}

/// The P-256 public key of a JWK.
pub fn jwk_key(jwk: &Value) -> Result<VerifyingKey, String> {
    if jwk["kty"] != "EC" || jwk["crv"] != "P-256" || jwk.get("d").is_some() {
        return Err(format!("not a public P-256 JWK: {jwk}"));
    }
    let mut sec1 = vec![4u8];
    for c in ["x", "y"] {
        sec1.extend(B64URL.decode(jwk[c].as_str().unwrap_or_default()).map_err(|e| format!("{c}: {e}"))?);
    }
    VerifyingKey::from_sec1_bytes(&sec1).map_err(|e| format!("jwk: {e}"))
}

/// RFC 7638 thumbprint of an EC JWK.
pub fn thumbprint(jwk: &Value) -> String {
    let canonical = format!(
        r#"{{"crv":"{}","kty":"EC","x":"{}","y":"{}"}}"#,
        jwk["crv"].as_str().unwrap(),
        jwk["x"].as_str().unwrap(),
        jwk["y"].as_str().unwrap()
    );
    B64URL.encode(sha2::Sha256::digest(canonical.as_bytes()))
}

/// Validates a DPoP proof (RFC 9449 §4.3) for `method url`, with `ath` for `access_token`;
/// returns the key's thumbprint and the claims.
pub fn verify_dpop(
    proof: &str,
    method: &str,
    url: &str,
    access_token: Option<&str>,
) -> Result<(String, Value), String> {
    let header = decode_part(proof.split('.').next().unwrap_or_default())?;
    if header["typ"] != "dpop+jwt" {
        return Err(format!("typ {}", header["typ"]));
    }
    let (_, claims) = verify_jws(proof, &jwk_key(&header["jwk"])?)?;
    if claims["htm"] != method {
        return Err(format!("htm {} for {method}", claims["htm"]));
    }
    if claims["htu"] != url {
        return Err(format!("htu {} for {url}", claims["htu"]));
    }
    if !claims["jti"].is_string() {
        return Err("no jti".into());
    }
    if claims["iat"].as_i64().is_none_or(|iat| (iat - now()).abs() > 60) {
        return Err(format!("iat {}", claims["iat"]));
    }
    let ath = access_token.map(|t| B64URL.encode(sha2::Sha256::digest(t.as_bytes())));
    if claims.get("ath").and_then(Value::as_str) != ath.as_deref() {
        return Err(format!("ath {:?}, expected {ath:?}", claims.get("ath")));
    }
    Ok((thumbprint(&header["jwk"]), claims))
}

fn with_header(mut response: Response, name: &'static str, value: &str) -> Response {
    response.headers_mut().insert(name, value.parse().unwrap());
    response
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Iss {
    Correct,
    Omit,
    Wrong,
    TrailingSlash,
}

#[derive(Debug, Clone)]
pub struct AsConfig {
    /// `""` or e.g. `"/tenant1"`: the issuer is the origin plus this path.
    pub issuer_path: String,
    /// Where the metadata document is served.
    pub metadata_path: String,
    /// An `issuer` other than the real one in the document.
    pub metadata_issuer: Option<String>,
    pub auth_methods: Vec<String>,
    pub registration: bool,
    pub cimd: bool,
    pub iss_supported: Option<bool>,
    pub iss: Iss,
    pub scopes_supported: Option<Vec<String>>,
    pub refresh_tokens: bool,
    /// The dynamic registration answer.
    pub registered_client_id: String,
    pub registered_secret: Option<String>,
    pub registered_method: Option<String>,
    pub wrong_state: bool,
    /// Access tokens are `<prefix>-<n>`.
    pub token_prefix: String,
    /// Client authentication every token request must carry: HTTP Basic with these.
    pub basic: Option<(String, String)>,
    /// Client authentication every token request must carry: a `private_key_jwt` assertion
    /// signed with this key (`iss` = `sub` = `client_id`, `aud` = the issuer).
    pub client_key: Option<VerifyingKey>,
    /// Advertise DPoP and bind tokens to the key of a valid proof.
    pub dpop: bool,
    /// Demand this nonce in DPoP proofs (400 `use_dpop_nonce` without it).
    pub dpop_nonce: Option<String>,
    /// Refuse the JWT bearer grant (400 `invalid_grant`).
    pub refuse_jwt_bearer: bool,
}

impl Default for AsConfig {
    fn default() -> Self {
        AsConfig {
            issuer_path: String::new(),
            metadata_path: "/.well-known/oauth-authorization-server".into(),
            metadata_issuer: None,
            auth_methods: vec!["none".into()],
            registration: true,
            cimd: false,
            iss_supported: Some(true),
            iss: Iss::Correct,
            scopes_supported: None,
            refresh_tokens: false,
            registered_client_id: "dcr-client".into(),
            registered_secret: None,
            registered_method: None,
            wrong_state: false,
            token_prefix: "access".into(),
            basic: None,
            client_key: None,
            dpop: false,
            dpop_nonce: None,
            refuse_jwt_bearer: false,
        }
    }
}

#[derive(Clone)]
struct AsState {
    base: String,
    config: AsConfig,
    log: Log,
    issued: Issued,
    /// code → requested scope; refresh token → scopes.
    codes: Arc<Mutex<HashMap<String, Vec<String>>>>,
    refresh: Arc<Mutex<HashMap<String, Vec<String>>>>,
    counter: Arc<Mutex<u32>>,
}

pub struct AuthServer {
    pub issuer: String,
    pub log: Log,
}

impl AuthServer {
    pub async fn start(config: AsConfig, issued: &Issued) -> AuthServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let log = Log::default();
        let issuer = format!("{base}{}", config.issuer_path);
        let state = AsState {
            base: base.clone(),
            config,
            log: log.clone(),
            issued: issued.clone(),
            codes: Default::default(),
            refresh: Default::default(),
            counter: Default::default(),
        };
        let app = axum::Router::new().fallback(as_handle).with_state(state);
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        AuthServer { issuer, log }
    }

    pub fn requests(&self, path_suffix: &str) -> Vec<Seen> {
        self.log.lock().unwrap().iter().filter(|s| s.path.ends_with(path_suffix)).cloned().collect()
    }

    pub fn paths(&self) -> Vec<String> {
        self.log.lock().unwrap().iter().map(|s| s.path.clone()).collect()
    }
}

fn record(log: &Log, method: &Method, uri: &Uri, headers: HeaderMap, body: &Bytes) -> Seen {
    let query =
        uri.query().map(|q| url::form_urlencoded::parse(q.as_bytes()).into_owned().collect()).unwrap_or_default();
    let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let form = if json.is_null() {
        url::form_urlencoded::parse(body).into_owned().collect()
    } else {
        json.as_object()
            .map(|o| {
                o.iter().map(|(k, v)| (k.clone(), v.as_str().map(str::to_owned).unwrap_or(v.to_string()))).collect()
            })
            .unwrap_or_default()
    };
    let seen = Seen { method: method.clone(), path: uri.path().to_owned(), query, headers, form, json };
    log.lock().unwrap().push(seen.clone());
    seen
}

fn json_response(status: StatusCode, body: Value) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

fn not_found() -> Response {
    Response::builder().status(StatusCode::NOT_FOUND).body(Body::empty()).unwrap()
}

async fn as_handle(
    State(state): State<AsState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let seen = record(&state.log, &method, &uri, headers, &body);
    let config = &state.config;
    let prefix = format!("{}{}", state.base, config.issuer_path);
    let issuer = prefix.clone();
    let next = || {
        let mut counter = state.counter.lock().unwrap();
        *counter += 1;
        *counter
    };
    match (method, seen.path.strip_prefix(&config.issuer_path).unwrap_or("")) {
        (Method::GET, _) if seen.path == config.metadata_path => {
            let mut doc = json!({
                "issuer": config.metadata_issuer.clone().unwrap_or(issuer),
                "authorization_endpoint": format!("{prefix}/authorize"),
                "token_endpoint": format!("{prefix}/token"),
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": config.auth_methods,
            });
            if config.registration {
                doc["registration_endpoint"] = json!(format!("{prefix}/register"));
            }
            if config.cimd {
                doc["client_id_metadata_document_supported"] = json!(true);
            }
            if let Some(iss) = config.iss_supported {
                doc["authorization_response_iss_parameter_supported"] = json!(iss);
            }
            if let Some(scopes) = &config.scopes_supported {
                doc["scopes_supported"] = json!(scopes);
            }
            if config.dpop {
                doc["dpop_signing_alg_values_supported"] = json!(["ES256"]);
            }
            json_response(StatusCode::OK, doc)
        }
        (Method::GET, "/authorize") => {
            let code = format!("code-{}", next());
            let scopes: Vec<String> = seen.param("scope").unwrap_or("").split_whitespace().map(str::to_owned).collect();
            state.codes.lock().unwrap().insert(code.clone(), scopes);
            let mut redirect = url::Url::parse(seen.param("redirect_uri").unwrap()).unwrap();
            {
                let mut q = redirect.query_pairs_mut();
                q.append_pair("code", &code);
                let sent_state = seen.param("state").unwrap_or("");
                q.append_pair("state", if config.wrong_state { "forged" } else { sent_state });
                match config.iss {
                    Iss::Correct => drop(q.append_pair("iss", &issuer)),
                    Iss::Omit => {}
                    Iss::Wrong => drop(q.append_pair("iss", "https://evil.example.com")),
                    Iss::TrailingSlash => drop(q.append_pair("iss", &format!("{issuer}/"))),
                }
            }
            Response::builder()
                .status(StatusCode::FOUND)
                .header("location", redirect.as_str())
                .body(Body::empty())
                .unwrap()
        }
        (Method::POST, "/token") => {
            let refuse = |status: StatusCode, error: &str, description: String| {
                json_response(status, json!({"error": error, "error_description": description}))
            };
            if let Some((id, secret)) = &config.basic {
                let expected = format!("Basic {}", STANDARD.encode(format!("{id}:{secret}")));
                if seen.header("authorization") != Some(expected.as_str()) {
                    return refuse(StatusCode::UNAUTHORIZED, "invalid_client", "bad Basic credentials".into());
                }
            }
            if let Some(key) = &config.client_key
                && let Err(e) = check_client_assertion(&seen, key, &issuer)
            {
                return refuse(StatusCode::UNAUTHORIZED, "invalid_client", e);
            }
            let mut jkt = None;
            if let Some(proof) = seen.header("dpop") {
                let (thumbprint, claims) = match verify_dpop(proof, "POST", &format!("{prefix}/token"), None) {
                    Ok(verified) => verified,
                    Err(e) => return refuse(StatusCode::BAD_REQUEST, "invalid_dpop_proof", e),
                };
                if let Some(nonce) = &config.dpop_nonce
                    && claims["nonce"] != nonce.as_str()
                {
                    let response = refuse(StatusCode::BAD_REQUEST, "use_dpop_nonce", "nonce required".into());
                    return with_header(response, "dpop-nonce", nonce);
                }
                jkt = config.dpop.then_some(thumbprint);
            }
            let requested = || seen.param("scope").unwrap_or("").split_whitespace().map(str::to_owned).collect();
            let scopes = match seen.param("grant_type") {
                Some("client_credentials") => Some(requested()),
                Some(JWT_BEARER) if config.refuse_jwt_bearer => {
                    return refuse(StatusCode::BAD_REQUEST, "invalid_grant", "assertion refused".into());
                }
                Some(JWT_BEARER) => Some(requested()),
                Some(TOKEN_EXCHANGE) => {
                    let id_jag = format!("id-jag-{}", next());
                    return json_response(
                        StatusCode::OK,
                        json!({"access_token": id_jag, "issued_token_type": ID_JAG, "token_type": "N_A"}),
                    );
                }
                Some("authorization_code") => {
                    state.codes.lock().unwrap().get(seen.param("code").unwrap_or("")).cloned()
                }
                Some("refresh_token") => {
                    state.refresh.lock().unwrap().get(seen.param("refresh_token").unwrap_or("")).cloned()
                }
                _ => None,
            };
            let Some(scopes) = scopes else {
                return json_response(
                    StatusCode::BAD_REQUEST,
                    json!({"error": "invalid_grant", "error_description": "unknown code"}),
                );
            };
            let n = next();
            let token = format!("{}-{n}", config.token_prefix);
            let token_type = if jkt.is_some() { "DPoP" } else { "Bearer" };
            let issued = IssuedToken { issuer: issuer.clone(), scopes: scopes.clone(), jkt };
            state.issued.lock().unwrap().insert(token.clone(), issued);
            let mut answer = json!({"access_token": token, "token_type": token_type, "expires_in": 3600});
            if !scopes.is_empty() {
                answer["scope"] = json!(scopes.join(" "));
            }
            if config.refresh_tokens {
                let refresh = format!("refresh-{n}");
                state.refresh.lock().unwrap().insert(refresh.clone(), scopes);
                answer["refresh_token"] = json!(refresh);
            }
            json_response(StatusCode::OK, answer)
        }
        (Method::POST, "/register") if config.registration => {
            let mut answer =
                json!({"client_id": config.registered_client_id, "redirect_uris": seen.json["redirect_uris"]});
            if let Some(secret) = &config.registered_secret {
                answer["client_secret"] = json!(secret);
            }
            if let Some(method) = &config.registered_method {
                answer["token_endpoint_auth_method"] = json!(method);
            }
            json_response(StatusCode::CREATED, answer)
        }
        _ => not_found(),
    }
}

/// A `private_key_jwt` client assertion (RFC 7523 §2.2, §3) for the issuer.
fn check_client_assertion(seen: &Seen, key: &VerifyingKey, issuer: &str) -> Result<(), String> {
    if seen.param("client_assertion_type") != Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer") {
        return Err("client_assertion_type".into());
    }
    let (_, claims) = verify_jws(seen.param("client_assertion").ok_or("no client_assertion")?, key)?;
    let client_id = seen.param("client_id").ok_or("no client_id")?;
    if claims["iss"] != client_id || claims["sub"] != client_id {
        return Err(format!("iss {} sub {}", claims["iss"], claims["sub"]));
    }
    if claims["aud"] != issuer {
        return Err(format!("aud {} is not the issuer {issuer}", claims["aud"]));
    }
    if claims["exp"].as_i64().is_none_or(|exp| exp < now()) || !claims["jti"].is_string() {
        return Err("exp or jti".into());
    }
    Ok(())
}

#[derive(Debug, Clone)]
pub struct RsConfig {
    /// Where the protected resource metadata is served (`None`: nowhere).
    pub prm_path: Option<String>,
    pub prm_in_challenge: bool,
    pub challenge_scope: Option<String>,
    /// The PRM `resource` (default: the server URL).
    pub resource: Option<String>,
    /// Publish the bare origin (no path, no trailing slash) as `resource`.
    pub origin_resource: bool,
    pub prm_scopes: Option<Vec<String>>,
    pub authorization_server: String,
    /// JSON-RPC method → the scope it needs (403 insufficient_scope without it).
    pub required: Vec<(String, String)>,
    /// Every authorized request gets 403 insufficient_scope for this scope.
    pub always_forbidden: Option<String>,
    /// Each access token is accepted once, then answered with 401 (as if revoked).
    pub single_use_tokens: bool,
    /// After the first authorized request, the PRM names this issuer and only its tokens pass.
    pub migrate_to: Option<String>,
    /// Accept only DPoP-bound tokens with valid proofs (`DPoP` challenges).
    pub dpop: bool,
    /// Demand this nonce in DPoP proofs (401 `use_dpop_nonce` without it).
    pub dpop_nonce: Option<String>,
}

impl RsConfig {
    pub fn new(authorization_server: &str) -> Self {
        RsConfig {
            prm_path: Some("/.well-known/oauth-protected-resource/mcp".into()),
            prm_in_challenge: true,
            challenge_scope: None,
            resource: None,
            origin_resource: false,
            prm_scopes: None,
            authorization_server: authorization_server.to_owned(),
            required: Vec::new(),
            always_forbidden: None,
            single_use_tokens: false,
            migrate_to: None,
            dpop: false,
            dpop_nonce: None,
        }
    }
}

#[derive(Clone)]
struct RsState {
    url: String,
    base: String,
    config: Arc<Mutex<RsConfig>>,
    log: Log,
    issued: Issued,
    used: Arc<Mutex<Vec<String>>>,
    jtis: Arc<Mutex<Vec<String>>>,
    dpop_errors: Arc<Mutex<Vec<String>>>,
}

pub struct McpServer {
    pub url: String,
    pub log: Log,
    /// Why DPoP proofs were rejected.
    pub dpop_errors: Arc<Mutex<Vec<String>>>,
}

impl McpServer {
    pub async fn start(config: RsConfig, issued: &Issued) -> McpServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let url = format!("{base}/mcp");
        let log = Log::default();
        let dpop_errors: Arc<Mutex<Vec<String>>> = Default::default();
        let state = RsState {
            url: url.clone(),
            base,
            config: Arc::new(Mutex::new(config)),
            log: log.clone(),
            issued: issued.clone(),
            used: Default::default(),
            jtis: Default::default(),
            dpop_errors: dpop_errors.clone(),
        };
        let app = axum::Router::new().fallback(rs_handle).with_state(state);
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        McpServer { url, log, dpop_errors }
    }

    pub fn paths(&self) -> Vec<String> {
        self.log.lock().unwrap().iter().map(|s| s.path.clone()).collect()
    }

    /// The JSON-RPC methods that were answered (authorized).
    pub fn bearer_tokens(&self) -> Vec<String> {
        let log = self.log.lock().unwrap();
        log.iter().filter_map(|s| s.header("authorization").map(str::to_owned)).collect()
    }
}

async fn rs_handle(
    State(state): State<RsState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let seen = record(&state.log, &method, &uri, headers, &body);
    let config = state.config.lock().unwrap().clone();
    let prm_url = config.prm_path.as_ref().map(|p| format!("{}{p}", state.base));
    if method == Method::GET && seen.path != "/mcp" {
        if config.prm_path.as_deref() == Some(seen.path.as_str()) {
            let mut doc = json!({
                "resource": match (&config.resource, config.origin_resource) {
                    (Some(resource), _) => resource.clone(),
                    (None, true) => state.base.clone(),
                    (None, false) => state.url.clone(),
                },
                "authorization_servers": [config.authorization_server],
            });
            if let Some(scopes) = &config.prm_scopes {
                doc["scopes_supported"] = json!(scopes);
            }
            return json_response(StatusCode::OK, doc);
        }
        return not_found();
    }
    if seen.path != "/mcp" {
        return not_found();
    }
    let scheme = if config.dpop { "DPoP" } else { "Bearer" };
    let challenge = |error: &str, scope: Option<&str>| {
        let mut value = format!("{scheme} error=\"{error}\"");
        if let Some(scope) = scope {
            value.push_str(&format!(", scope=\"{scope}\""));
        }
        if let (true, Some(url)) = (config.prm_in_challenge, &prm_url) {
            value.push_str(&format!(", resource_metadata=\"{url}\""));
        }
        value
    };
    let unauthorized = || {
        Response::builder()
            .status(StatusCode::UNAUTHORIZED)
            .header("www-authenticate", challenge("invalid_token", config.challenge_scope.as_deref()))
            .body(Body::from(r#"{"error":"invalid_token"}"#))
            .unwrap()
    };
    let forbidden = |scope: &str| {
        Response::builder()
            .status(StatusCode::FORBIDDEN)
            .header("www-authenticate", challenge("insufficient_scope", Some(scope)))
            .body(Body::from(r#"{"error":"insufficient_scope"}"#))
            .unwrap()
    };
    let Some(token) = seen.header("authorization").and_then(|v| v.strip_prefix(&format!("{scheme} "))) else {
        return unauthorized();
    };
    let Some(IssuedToken { issuer, scopes, jkt }) = state.issued.lock().unwrap().get(token).cloned() else {
        return unauthorized();
    };
    if issuer != config.authorization_server {
        return unauthorized();
    }
    if config.dpop {
        let proof = seen.header("dpop").unwrap_or_default();
        let verified = verify_dpop(proof, method.as_str(), &state.url, Some(token)).and_then(|(thumbprint, claims)| {
            if Some(&thumbprint) != jkt.as_ref() {
                return Err(format!("proof key {thumbprint} is not the token's {jkt:?}"));
            }
            let jti = claims["jti"].as_str().unwrap().to_owned();
            let mut jtis = state.jtis.lock().unwrap();
            if jtis.contains(&jti) {
                return Err(format!("jti {jti} replayed"));
            }
            jtis.push(jti);
            Ok(claims)
        });
        let claims = match verified {
            Ok(claims) => claims,
            Err(e) => {
                state.dpop_errors.lock().unwrap().push(e);
                return unauthorized();
            }
        };
        if let Some(nonce) = &config.dpop_nonce
            && claims["nonce"] != nonce.as_str()
        {
            let response = Response::builder()
                .status(StatusCode::UNAUTHORIZED)
                .header("www-authenticate", challenge("use_dpop_nonce", None))
                .header("dpop-nonce", nonce)
                .body(Body::from(r#"{"error":"use_dpop_nonce"}"#))
                .unwrap();
            return response;
        }
    }
    if config.single_use_tokens {
        let mut used = state.used.lock().unwrap();
        if used.iter().any(|t| t == token) {
            return unauthorized();
        }
        used.push(token.to_owned());
    }
    if let Some(scope) = &config.always_forbidden {
        return forbidden(scope);
    }
    if let Some((_, scope)) = config.required.iter().find(|(m, _)| m == seen.rpc())
        && !scopes.contains(scope)
    {
        return forbidden(scope);
    }
    if let Some(next) = &config.migrate_to {
        let mut live = state.config.lock().unwrap();
        live.authorization_server = next.clone();
        live.migrate_to = None;
    }
    // The 2025-11-25 session: no standalone stream, DELETE ends the session.
    match method {
        Method::GET => return Response::builder().status(StatusCode::METHOD_NOT_ALLOWED).body(Body::empty()).unwrap(),
        Method::DELETE => return Response::builder().status(StatusCode::OK).body(Body::empty()).unwrap(),
        _ => {}
    }
    let id = seen.json["id"].clone();
    if id.is_null() {
        return Response::builder().status(StatusCode::ACCEPTED).body(Body::empty()).unwrap();
    }
    let result = match seen.rpc() {
        "initialize" => {
            let result = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "protected", "version": "1"}});
            let response = json_response(StatusCode::OK, json!({"jsonrpc": "2.0", "id": id, "result": result}));
            return with_header(response, "mcp-session-id", "session-1");
        }
        "server/discover" => json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "protected", "version": "1"}}}),
        "tools/list" => json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private",
            "tools": [{"name": "test-tool", "inputSchema": {"type": "object"}}]}),
        "tools/call" => json!({"resultType": "complete", "content": [{"type": "text", "text": "done"}]}),
        _ => {
            return json_response(
                StatusCode::NOT_FOUND,
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}),
            );
        }
    };
    json_response(StatusCode::OK, json!({"jsonrpc": "2.0", "id": id, "result": result}))
}
