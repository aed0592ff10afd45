//! mcp-server as an OAuth 2.1 resource server (feature `auth`), against a real authorization
//! server: `oidc-provider` (tests/auth/provider.mjs), started by each test on a loopback port.
//! Tokens come from the provider (client credentials, authorization code with PKCE, DPoP), or
//! are minted with the provider's own signing key where a test needs claims it would not issue
//! (expired, not yet valid, another issuer). Every refusal is checked for its status,
//! `WWW-Authenticate` and `error_description`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use futures::future::BoxFuture;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_client::auth::{AuthError, Authorizer, OAuth};
use mcp_client::{Client, EraPreference};
use mcp_server::auth::{IntrospectionVerifier, JwtVerifier, ResourceServer, TokenVerifier};
use mcp_server::http::HttpConfig;
use mcp_server::{Context, Error, ResourceRoute, Server, Structured, ToolRoute};
use mcp_tests::oidc::{KEY_ID, OidcProvider};
use p256::pkcs8::EncodePrivateKey as _;
use reqwest::StatusCode;
use reqwest::header::WWW_AUTHENTICATE;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Note {
    title: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Identity {
    subject: Option<String>,
    client_id: Option<String>,
    scopes: Vec<String>,
}

async fn whoami(ctx: Context, _: mcp_server::NoArguments) -> Result<Structured<Identity>, Error> {
    let token = ctx.token().ok_or_else(|| Error::failed("no token"))?;
    Ok(Structured(Identity {
        subject: token.subject.clone(),
        client_id: token.client_id.clone(),
        scopes: token.scopes.clone(),
    }))
}

async fn add_note(_ctx: Context, Note { title }: Note) -> Result<String, Error> {
    Ok(format!("Added {title:?}"))
}

/// A server with an open tool, a tool needing `notes:write` and a resource needing `admin`,
/// protected by `verifier` at `url`; `notes:read` on every request.
fn server() -> Server {
    Server::builder("protected", "1.0.0")
        .tool(ToolRoute::new("whoami", whoami).description("Who the token names"))
        .tool(ToolRoute::new("add_note", add_note).description("Adds a note").scopes(["notes:write"]))
        .resource(
            ResourceRoute::new(
                mcp_server::types::Resource { uri: "notes://audit".into(), name: "audit".into(), ..Default::default() },
                |_ctx: Context, _uri: String| async move { Ok::<_, Error>("audit log".to_owned()) },
            )
            .scopes(["admin"]),
        )
        .build()
        .expect("a valid server")
}

struct Protected {
    url: String,
    provider: OidcProvider,
    http: reqwest::Client,
}

enum Verify {
    Jwt,
    Introspection,
}

async fn protected(verify: Verify) -> Protected {
    protected_at(OidcProvider::start(), verify, "/mcp").await
}

async fn protected_at(provider: OidcProvider, verify: Verify, path: &str) -> Protected {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}{path}", listener.local_addr().unwrap());
    let issuer = provider.issuer.clone();
    let builder = match verify {
        Verify::Jwt => ResourceServer::builder(&url, JwtVerifier::new(&issuer, &url)),
        Verify::Introspection => ResourceServer::builder(
            &url,
            IntrospectionVerifier::new(&issuer, &url, "rs-introspector", "introspector-secret"),
        ),
    };
    let authorization = builder
        .authorization_server(&issuer)
        .required_scopes(["notes:read"])
        .scopes_supported(["notes:read", "notes:write", "admin"])
        .resource_name("Protected notes")
        .build();
    let mut config = HttpConfig::default();
    config.path = path.to_owned();
    config.authorization = Some(authorization);
    tokio::spawn(mcp_server::http::serve(listener, server(), config));
    Protected {
        url,
        provider,
        http: reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap(),
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

impl Protected {
    /// A client credentials token of the provider's test client for `resource`.
    async fn token_for(&self, resource: &str, scope: &str) -> String {
        let response: Value = self
            .http
            .post(format!("{}/token", self.provider.issuer))
            .basic_auth("test-cc", Some("test-cc-secret"))
            .form(&[("grant_type", "client_credentials"), ("resource", resource), ("scope", scope)])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        response["access_token"].as_str().unwrap_or_else(|| panic!("no token: {response}")).to_owned()
    }

    async fn token(&self, scope: &str) -> String {
        self.token_for(&self.url.clone(), scope).await
    }

    /// A token signed with the issuer's key, with these claims over valid defaults.
    fn mint(&self, overrides: Value) -> String {
        let mut claims = json!({
            "iss": self.provider.issuer, "aud": self.url, "sub": "alice", "client_id": "test-cc",
            "scope": "notes:read notes:write", "iat": now(), "exp": now() + 600, "jti": format!("jti-{}", now()),
        });
        for (name, value) in overrides.as_object().unwrap() {
            if value.is_null() {
                claims.as_object_mut().unwrap().remove(name);
            } else {
                claims[name] = value.clone();
            }
        }
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(KEY_ID.to_owned());
        header.typ = Some("at+jwt".to_owned());
        let key = EncodingKey::from_ec_pem(self.provider.key_pem.as_bytes()).unwrap();
        jsonwebtoken::encode(&header, &claims, &key).unwrap()
    }

    /// POSTs a modern `tools/call` with `authorization` as the header value (if any).
    async fn call(&self, authorization: Option<&str>, tool: &str) -> reqwest::Response {
        let mut request = self.modern_call(tool);
        if let Some(authorization) = authorization {
            request = request.header("authorization", authorization);
        }
        request.send().await.unwrap()
    }

    /// A modern `tools/call` of `tool`, with its headers, without credentials.
    fn modern_call(&self, tool: &str) -> reqwest::RequestBuilder {
        modern_call_at(&self.http, &self.url, tool)
    }

    async fn initialize(&self, token: &str) -> String {
        self.initialize_at(token, LEGACY).await
    }

    async fn initialize_at(&self, token: &str, version: &str) -> String {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": version, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }
        });
        let response = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.headers()["mcp-session-id"].to_str().unwrap().to_owned()
    }
}

/// A modern `tools/call` of `tool` at `url`, with its headers, without credentials.
fn modern_call_at(http: &reqwest::Client, url: &str, tool: &str) -> reqwest::RequestBuilder {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": tool, "arguments": if tool == "add_note" { json!({"title": "t"}) } else { json!({}) },
            "_meta": { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } }
    });
    http.post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(&body)
}

/// Status, `WWW-Authenticate` and `error_description` of a refusal.
async fn refusal(response: reqwest::Response) -> (StatusCode, String, String) {
    let status = response.status();
    let challenge =
        response.headers().get(WWW_AUTHENTICATE).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    (status, challenge, body["error_description"].as_str().unwrap_or_default().to_owned())
}

async fn assert_invalid_token(response: reqwest::Response, why: &str) {
    let (status, challenge, description) = refusal(response).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{challenge} {description}");
    assert!(challenge.starts_with("Bearer resource_metadata=\""), "{challenge}");
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    assert!(description.contains(why), "{description:?} should say {why:?}");
}

fn structured(response: &Value) -> Value {
    response["result"]["structuredContent"].clone()
}

// ---------------------------------------------------------------------------------------------
// Metadata and challenges

#[tokio::test]
async fn protected_resource_metadata_names_the_resource_exactly() {
    let server = protected(Verify::Jwt).await;
    let origin = server.url.trim_end_matches("/mcp");
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let response = server.http.get(format!("{origin}{path}")).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert!(response.headers()["cache-control"].to_str().unwrap().contains("max-age="));
        let metadata: Value = response.json().await.unwrap();
        assert_eq!(metadata["resource"], server.url);
        assert_eq!(metadata["authorization_servers"], json!([server.provider.issuer]));
        assert_eq!(metadata["scopes_supported"], json!(["notes:read", "notes:write", "admin"]));
        assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
        assert_eq!(metadata["resource_name"], "Protected notes");
    }
}

#[tokio::test]
async fn no_token_gets_401_on_every_method_of_both_eras() {
    let server = protected(Verify::Jwt).await;
    let expected = format!(
        "Bearer resource_metadata=\"{}\", scope=\"notes:read\"",
        server.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    );
    let modern = server.call(None, "whoami").await;
    let legacy = server
        .http
        .post(&server.url)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        .send()
        .await
        .unwrap();
    let stream = server.http.get(&server.url).header("mcp-session-id", "x").send().await.unwrap();
    let delete = server.http.delete(&server.url).header("mcp-session-id", "x").send().await.unwrap();
    for response in [modern, legacy, stream, delete] {
        let (status, challenge, description) = refusal(response).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(challenge, expected);
        assert!(description.contains("no access token"), "{description}");
    }
}

#[tokio::test]
async fn a_malformed_authorization_header_is_refused() {
    let server = protected(Verify::Jwt).await;
    assert_invalid_token(server.call(Some("Bearer "), "whoami").await, "does not hold a token").await;
    assert_invalid_token(server.call(Some("Bearer a b"), "whoami").await, "does not hold a token").await;
    assert_invalid_token(server.call(Some("Bearer not-a-jwt"), "whoami").await, "not a JWT").await;
    // Another scheme is no token at all.
    let (status, challenge, _) = refusal(server.call(Some("Basic dXNlcjpwYXNz"), "whoami").await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(!challenge.contains("error="), "{challenge}");
}

#[tokio::test]
async fn a_token_in_the_query_string_is_ignored() {
    let server = protected(Verify::Jwt).await;
    let token = server.token("notes:read").await;
    let url = format!("{}?access_token={token}", server.url);
    let response = server
        .http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}))
        .send()
        .await
        .unwrap();
    let (status, _, description) = refusal(response).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(description.contains("no access token"), "{description}");
}

// ---------------------------------------------------------------------------------------------
// JWT access tokens

#[tokio::test]
async fn a_token_of_the_issuer_for_this_resource_is_served_with_its_identity() {
    let server = protected(Verify::Jwt).await;
    let token = server.token("notes:read").await;
    let response: Value = server.call(Some(&format!("Bearer {token}")), "whoami").await.json().await.unwrap();
    let identity = structured(&response);
    assert_eq!(identity["client_id"], "test-cc", "{response}");
    assert_eq!(identity["scopes"], json!(["notes:read"]));
}

#[tokio::test]
async fn an_expired_token_is_refused() {
    let server = protected(Verify::Jwt).await;
    let token = server.mint(json!({ "iat": now() - 3600, "exp": now() - 120 }));
    assert_invalid_token(server.call(Some(&format!("Bearer {token}")), "whoami").await, "expired").await;
}

#[tokio::test]
async fn a_token_not_yet_valid_is_refused() {
    let server = protected(Verify::Jwt).await;
    let token = server.mint(json!({ "nbf": now() + 600 }));
    assert_invalid_token(server.call(Some(&format!("Bearer {token}")), "whoami").await, "not valid yet").await;
}

#[tokio::test]
async fn a_token_of_another_issuer_is_refused() {
    let server = protected(Verify::Jwt).await;
    let token = server.mint(json!({ "iss": "http://127.0.0.1:1" }));
    assert_invalid_token(server.call(Some(&format!("Bearer {token}")), "whoami").await, "another issuer").await;
}

#[tokio::test]
async fn a_token_for_another_resource_is_refused() {
    let server = protected(Verify::Jwt).await;
    // Issued by the provider itself, for another server (RFC 8707 audience).
    let token = server.token_for("http://127.0.0.1:9/mcp", "notes:read").await;
    assert_invalid_token(server.call(Some(&format!("Bearer {token}")), "whoami").await, "another resource").await;
}

#[tokio::test]
async fn alg_none_is_refused() {
    let server = protected(Verify::Jwt).await;
    let header = B64URL.encode(json!({"alg": "none", "typ": "at+jwt", "kid": KEY_ID}).to_string());
    let claims = B64URL.encode(
        json!({"iss": server.provider.issuer, "aud": server.url, "sub": "mallory", "exp": now() + 600}).to_string(),
    );
    let token = format!("{header}.{claims}.");
    assert_invalid_token(server.call(Some(&format!("Bearer {token}")), "whoami").await, "`none` is not accepted").await;
}

#[tokio::test]
async fn hs256_signed_with_the_public_key_is_refused() {
    let server = protected(Verify::Jwt).await;
    // The attacker knows the issuer's public key (its JWKS) and uses it as an HMAC secret.
    let jwks: Value =
        server.http.get(format!("{}/jwks", server.provider.issuer)).send().await.unwrap().json().await.unwrap();
    let public = jwks["keys"][0].to_string();
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some(KEY_ID.to_owned());
    header.typ = Some("at+jwt".to_owned());
    let claims = json!({"iss": server.provider.issuer, "aud": server.url, "sub": "mallory", "scope": "notes:read", "exp": now() + 600});
    let token = jsonwebtoken::encode(&header, &claims, &EncodingKey::from_secret(public.as_bytes())).unwrap();
    assert_invalid_token(server.call(Some(&format!("Bearer {token}")), "whoami").await, "`HS256` is not accepted")
        .await;
}

#[tokio::test]
async fn a_token_signed_by_another_key_with_the_issuers_kid_is_refused() {
    let server = protected(Verify::Jwt).await;
    let forged = DpopKey::generate();
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(KEY_ID.to_owned());
    header.typ = Some("at+jwt".to_owned());
    let claims = json!({"iss": server.provider.issuer, "aud": server.url, "sub": "mallory", "scope": "notes:read", "exp": now() + 600});
    let token = jsonwebtoken::encode(&header, &claims, &forged.encoding).unwrap();
    assert_invalid_token(server.call(Some(&format!("Bearer {token}")), "whoami").await, "signature does not verify")
        .await;
}

/// Serves the provider's metadata and JWKS, counting JWKS fetches, and can be turned off.
struct CountingIssuer {
    issuer: String,
    fetches: Arc<AtomicUsize>,
    down: Arc<std::sync::atomic::AtomicBool>,
}

async fn counting_issuer(jwks: Value) -> CountingIssuer {
    counting_issuer_named(jwks, "").await
}

/// A counting issuer whose identifier ends with `suffix` (its metadata at the origin).
async fn counting_issuer_named(jwks: Value, suffix: &str) -> CountingIssuer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}{suffix}", listener.local_addr().unwrap());
    let fetches = Arc::new(AtomicUsize::new(0));
    let down = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let metadata = json!({ "issuer": issuer, "jwks_uri": format!("{issuer}/jwks") });
    let (count, off) = (Arc::clone(&fetches), Arc::clone(&down));
    let app = axum::Router::new()
        .route("/.well-known/oauth-authorization-server", axum::routing::get(move || async move { axum::Json(metadata) }))
        .route(
            "/jwks",
            axum::routing::get(move || {
                count.fetch_add(1, Ordering::SeqCst);
                let down = off.load(Ordering::SeqCst);
                let jwks = jwks.clone();
                async move {
                    if down { Err(axum::http::StatusCode::SERVICE_UNAVAILABLE) } else { Ok(axum::Json(jwks)) }
                }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    CountingIssuer { issuer, fetches, down }
}

/// A verifier of the counting issuer's tokens (the provider's keys) for `audience`.
async fn counting_verifier(provider: &OidcProvider, audience: &str) -> (CountingIssuer, JwtVerifier) {
    let jwks: Value = reqwest::get(format!("{}/jwks", provider.issuer)).await.unwrap().json().await.unwrap();
    let issuer = counting_issuer(jwks).await;
    let verifier = JwtVerifier::new(&issuer.issuer, audience).refresh_interval(Duration::from_secs(3600));
    (issuer, verifier)
}

fn mint_with(provider: &OidcProvider, kid: &str, claims: Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.to_owned());
    header.typ = Some("at+jwt".to_owned());
    jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ec_pem(provider.key_pem.as_bytes()).unwrap()).unwrap()
}

#[tokio::test]
async fn an_unknown_kid_refetches_the_keys_once_then_is_refused() {
    let provider = OidcProvider::start();
    let audience = "http://127.0.0.1:9/mcp";
    let (issuer, verifier) = counting_verifier(&provider, audience).await;
    let claims = json!({"iss": issuer.issuer, "aud": audience, "sub": "alice", "exp": now() + 600});
    verifier.verify(&mint_with(&provider, KEY_ID, claims.clone())).await.expect("a token of a known key");
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1);
    for attempt in 0..3 {
        let error = verifier.verify(&mint_with(&provider, "rotated-key", claims.clone())).await.unwrap_err();
        assert!(error.to_string().contains("has no key `rotated-key`"), "{error}");
        // One refetch for the first unknown kid, none within the refresh interval after it.
        assert_eq!(issuer.fetches.load(Ordering::SeqCst), 2, "attempt {attempt}");
    }
}

#[tokio::test]
async fn the_jwks_endpoint_down_keeps_cached_keys_working() {
    let provider = OidcProvider::start();
    let audience = "http://127.0.0.1:9/mcp";
    let (issuer, verifier) = counting_verifier(&provider, audience).await;
    let verifier = verifier.refresh_interval(Duration::ZERO);
    let claims = |sub: &str| json!({"iss": issuer.issuer, "aud": audience, "sub": sub, "exp": now() + 600});
    verifier.verify(&mint_with(&provider, KEY_ID, claims("alice"))).await.unwrap();
    issuer.down.store(true, Ordering::SeqCst);
    // A new token (not in the verified cache) of a cached key: still accepted.
    let token = verifier.verify(&mint_with(&provider, KEY_ID, claims("bob"))).await.unwrap();
    assert_eq!(token.subject.as_deref(), Some("bob"));
    // An unknown key cannot be fetched: a clear error, and not "invalid".
    let error = verifier.verify(&mint_with(&provider, "rotated-key", claims("carol"))).await.unwrap_err();
    assert!(matches!(error, mcp_server::auth::VerifyError::Unavailable(_)), "{error:?}");
    assert!(error.to_string().contains("/jwks: HTTP 503"), "{error}");
}

#[tokio::test]
async fn the_issuer_unreachable_gives_503_not_401() {
    let mut provider = OidcProvider::start();
    provider.kill();
    let server = protected_at(provider, Verify::Jwt, "/mcp").await;
    let token = server.mint(json!({}));
    let (status, challenge, description) = refusal(server.call(Some(&format!("Bearer {token}")), "whoami").await).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(challenge.is_empty());
    assert!(description.contains("cannot be verified now"), "{description}");
}

/// Figures (issue 44): an issuer configured as `http://host:port/` whose metadata says
/// `http://host:port` was answered 503 `temporarily_unavailable` forever, logged nowhere. Now
/// `check()` names both strings and the fix before serving, and a request gets 500.
#[tokio::test]
async fn an_issuer_configured_with_a_trailing_slash_is_named_with_the_fix() {
    let issuer = counting_issuer(json!({ "keys": [] })).await;
    let configured = format!("{}/", issuer.issuer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let authorization =
        ResourceServer::builder(&url, JwtVerifier::new(&configured, &url)).authorization_server(&configured).build();
    let error = authorization.check().await.unwrap_err();
    assert!(matches!(error, mcp_server::auth::VerifyError::Misconfigured(_)), "{error:?}");
    let text = error.to_string();
    let named =
        format!("names the issuer \"{}\", not \"{configured}\" as configured: drop the trailing `/`", issuer.issuer);
    assert!(text.contains(&named), "{text}");
    // The other way round: the metadata has the slash, the configuration not.
    let slashed = counting_issuer_named(json!({ "keys": [] }), "/").await;
    let bare = slashed.issuer.trim_end_matches('/').to_owned();
    let error = JwtVerifier::new(&bare, &url).check().await.unwrap_err().to_string();
    assert!(error.contains("add the trailing `/`"), "{error}");
    // Served anyway, every token is refused with 500 `server_error` naming the same.
    let mut config = HttpConfig::default();
    config.authorization = Some(authorization);
    tokio::spawn(mcp_server::http::serve(listener, server(), config));
    let http = reqwest::Client::new();
    let header = B64URL.encode(json!({"alg": "ES256", "typ": "at+jwt", "kid": "k"}).to_string());
    let token = format!("{header}.{}.c2ln", B64URL.encode("{}"));
    let response = modern_call_at(&http, &url, "whoami").bearer_auth(token).send().await.unwrap();
    let (status, _, description) = refusal(response).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(description.contains(&named), "{description}");
}

/// `scopes_supported` lists every scope a route needs after the configured ones, so that a
/// client registering with them can step up; `hide_scopes` leaves some out.
#[tokio::test]
async fn the_metadata_lists_the_scopes_every_route_needs_but_the_hidden_ones() {
    for (hidden, expected) in
        [(vec![], json!(["notes:read", "admin", "notes:write"])), (vec!["admin"], json!(["notes:read", "notes:write"]))]
    {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let issuer = "http://127.0.0.1:9";
        let authorization = ResourceServer::builder(&url, JwtVerifier::new(issuer, &url))
            .authorization_server(issuer)
            .required_scopes(["notes:read"])
            .hide_scopes(hidden)
            .build();
        let mut config = HttpConfig::default();
        config.authorization = Some(authorization);
        tokio::spawn(mcp_server::http::serve(listener, server(), config));
        let metadata_url = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
        let metadata: Value = reqwest::get(metadata_url).await.unwrap().json().await.unwrap();
        assert_eq!(metadata["scopes_supported"], expected);
    }
}

#[tokio::test]
async fn an_oversized_token_is_refused_before_parsing() {
    let server = protected(Verify::Jwt).await;
    let big = "a".repeat(64 * 1024);
    assert_invalid_token(server.call(Some(&format!("Bearer {big}")), "whoami").await, "exceeds 16384 bytes").await;
    // A 1 MiB header is refused by the HTTP layer before the resource server sees it.
    let huge = "a".repeat(1024 * 1024);
    let status = server.call(Some(&format!("Bearer {huge}")), "whoami").await.status();
    assert_eq!(status, StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
}

// ---------------------------------------------------------------------------------------------
// Scopes

#[tokio::test]
async fn a_tool_needing_a_scope_the_token_lacks_gets_403_naming_every_scope_it_needs() {
    let server = protected(Verify::Jwt).await;
    let read_only = server.token("notes:read").await;
    let (status, challenge, description) =
        refusal(server.call(Some(&format!("Bearer {read_only}")), "add_note").await).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        challenge.starts_with("Bearer error=\"insufficient_scope\", scope=\"notes:read notes:write\""),
        "{challenge}"
    );
    assert!(description.contains("notes:write"), "{description}");
    // The other tools still answer; with the scope, the tool does too.
    assert_eq!(server.call(Some(&format!("Bearer {read_only}")), "whoami").await.status(), StatusCode::OK);
    let writer = server.token("notes:read notes:write").await;
    let response: Value = server.call(Some(&format!("Bearer {writer}")), "add_note").await.json().await.unwrap();
    assert_eq!(response["result"]["content"][0]["text"], "Added \"t\"", "{response}");
}

#[tokio::test]
async fn the_servers_own_scope_is_needed_on_every_request() {
    let server = protected(Verify::Jwt).await;
    let token = server.token("notes:write").await;
    let (status, challenge, _) = refusal(server.call(Some(&format!("Bearer {token}")), "whoami").await).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(challenge.contains("scope=\"notes:read\""), "{challenge}");
}

#[tokio::test]
async fn a_scope_check_cannot_be_dodged_with_repeated_members_a_resource_uri_or_a_batch() {
    let server = protected(Verify::Jwt).await;
    let token = server.token("notes:read").await;
    let session = server.initialize(&token).await;
    let batch_session = server.initialize_at(&token, "2025-03-26").await;
    let post = |session: &str, version: &str, body: &'static str| {
        server
            .http
            .post(&server.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", version)
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    // Repeated members (the check sees what the server serves: the last one wins), a resource
    // by URI, and a subscription to it.
    for body in [
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","name":"add_note","arguments":{"title":"x"}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"notes://audit"}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"notes://audit"}}"#,
    ] {
        let response = post(&session, LEGACY, body).await.unwrap();
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{body}");
        let challenge = response.headers()["www-authenticate"].to_str().unwrap().to_owned();
        assert!(challenge.starts_with("Bearer error=\"insufficient_scope\", scope=\"notes:read "), "{challenge}");
    }
    // A batch (2025-03-26) is answered element by element: the element that needs the scope is
    // refused (its handler does not run), the others are served.
    let body = r#"[{"jsonrpc":"2.0","id":2,"method":"tools/list"},{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add_note","arguments":{"title":"x"}}}]"#;
    let response = post(&batch_session, "2025-03-26", body).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let responses: Vec<Value> = response.json().await.unwrap();
    let by_id = |id: i64| responses.iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("no {id}: {responses:?}"));
    assert!(by_id(2)["result"]["tools"].is_array(), "{responses:?}");
    assert_eq!(by_id(3)["error"]["code"], -32600, "{responses:?}");
    assert_eq!(by_id(3)["error"]["data"]["requiredScopes"], json!(["notes:write"]), "{responses:?}");
}

#[tokio::test]
async fn lists_can_hide_what_the_token_may_not_call() {
    let provider = OidcProvider::start();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let mut options = mcp_server::Options::default();
    options.list_only_permitted = true;
    let server = Server::builder("hiding", "1.0.0")
        .options(options)
        .tool(ToolRoute::new("whoami", whoami))
        .tool(ToolRoute::new("add_note", add_note).scopes(["notes:write"]))
        .build()
        .unwrap();
    let mut config = HttpConfig::default();
    config.authorization = Some(
        ResourceServer::builder(&url, JwtVerifier::new(&provider.issuer, &url))
            .authorization_server(&provider.issuer)
            .build(),
    );
    tokio::spawn(mcp_server::http::serve(listener, server, config));
    let protected = Protected { url: url.clone(), provider, http: reqwest::Client::new() };
    let list = |token: String| {
        let protected = &protected;
        async move {
            let response: Value = protected
                .http
                .post(&protected.url)
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", MODERN)
                .header("mcp-method", "tools/list")
                .bearer_auth(token)
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
                    "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}}}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            response["result"]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(list(protected.token("notes:read").await).await, ["whoami"]);
    assert_eq!(list(protected.token("notes:read notes:write").await).await, ["whoami", "add_note"]);
}

// ---------------------------------------------------------------------------------------------
// Legacy sessions and principals

#[tokio::test]
async fn a_legacy_session_is_refused_to_another_principal() {
    let server = protected(Verify::Jwt).await;
    let alice = server.mint(json!({ "sub": "alice" }));
    let bob = server.mint(json!({ "sub": "bob", "jti": "bob-token" }));
    let session = server.initialize(&alice).await;
    let request = |token: &str, method: reqwest::Method| {
        server
            .http
            .request(method, &server.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", LEGACY)
            .bearer_auth(token)
    };
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let response = request(&bob, reqwest::Method::POST).json(&ping).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let body: Value = response.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("another principal"), "{body}");
    assert_eq!(body["id"], 2);
    assert_eq!(request(&bob, reqwest::Method::GET).send().await.unwrap().status(), StatusCode::FORBIDDEN);
    assert_eq!(request(&bob, reqwest::Method::DELETE).send().await.unwrap().status(), StatusCode::FORBIDDEN);
    // Alice's session is still hers, and still open.
    assert_eq!(request(&alice, reqwest::Method::POST).json(&ping).send().await.unwrap().status(), StatusCode::OK);
    assert_eq!(request(&alice, reqwest::Method::DELETE).send().await.unwrap().status(), StatusCode::OK);
}

// ---------------------------------------------------------------------------------------------
// Introspection

#[tokio::test]
async fn opaque_tokens_are_introspected() {
    let provider = OidcProvider::start();
    let server = protected_at(provider, Verify::Introspection, "/opaque-mcp").await;
    let token = server.token("notes:read").await;
    assert!(!token.contains('.'), "an opaque token, not a JWT");
    let response: Value = server.call(Some(&format!("Bearer {token}")), "whoami").await.json().await.unwrap();
    assert_eq!(structured(&response)["scopes"], json!(["notes:read"]), "{response}");
    assert_invalid_token(server.call(Some("Bearer not-a-token-the-issuer-knows"), "whoami").await, "not active").await;
    // An opaque token for another resource is active, but not for this server.
    let other = server.token_for("http://127.0.0.1:9/opaque-other", "notes:read").await;
    assert_invalid_token(server.call(Some(&format!("Bearer {other}")), "whoami").await, "another resource").await;
}

// ---------------------------------------------------------------------------------------------
// DPoP

/// An ES256 key of the test's own, for DPoP proofs.
struct DpopKey {
    encoding: EncodingKey,
    jwk: Value,
}

impl DpopKey {
    fn generate() -> Self {
        let mut bytes = [0u8; 32];
        let secret = loop {
            getrandom::fill(&mut bytes).unwrap();
            if let Ok(secret) = p256::SecretKey::from_slice(&bytes) {
                break secret;
            }
        };
        let point = p256::elliptic_curve::sec1::ToEncodedPoint::to_encoded_point(&secret.public_key(), false);
        let jwk = json!({
            "kty": "EC", "crv": "P-256",
            "x": B64URL.encode(point.x().unwrap()), "y": B64URL.encode(point.y().unwrap()),
        });
        let der = secret.to_pkcs8_der().unwrap();
        DpopKey { encoding: EncodingKey::from_ec_der(der.as_bytes()), jwk }
    }

    fn proof(&self, method: &str, url: &str, token: Option<&str>, jti: &str) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".to_owned());
        header.jwk = Some(serde_json::from_value(self.jwk.clone()).unwrap());
        let mut claims = json!({ "htm": method, "htu": url, "iat": now(), "jti": jti });
        if let Some(token) = token {
            claims["ath"] = json!(B64URL.encode(Sha256::digest(token.as_bytes())));
        }
        jsonwebtoken::encode(&header, &claims, &self.encoding).unwrap()
    }
}

impl Protected {
    /// A DPoP-bound client credentials token for this server.
    async fn dpop_token(&self, key: &DpopKey) -> String {
        let token_endpoint = format!("{}/token", self.provider.issuer);
        let response: Value = self
            .http
            .post(&token_endpoint)
            .basic_auth("test-cc", Some("test-cc-secret"))
            .header("dpop", key.proof("POST", &token_endpoint, None, "token-request"))
            .form(&[("grant_type", "client_credentials"), ("resource", &self.url), ("scope", "notes:read")])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(response["token_type"], "DPoP", "{response}");
        response["access_token"].as_str().unwrap().to_owned()
    }

    async fn call_with_proof(&self, token: &str, proof: Option<String>) -> reqwest::Response {
        let mut request = self.modern_call("whoami").header("authorization", format!("DPoP {token}"));
        if let Some(proof) = proof {
            request = request.header("dpop", proof);
        }
        request.send().await.unwrap()
    }
}

async fn assert_bad_proof(response: reqwest::Response, why: &str) {
    let (status, challenge, description) = refusal(response).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(challenge.starts_with("DPoP algs=\""), "{challenge}");
    assert!(challenge.contains("error=\"invalid_dpop_proof\""), "{challenge}");
    assert!(description.contains(why), "{description:?} should say {why:?}");
}

#[tokio::test]
async fn a_dpop_bound_token_needs_its_proof() {
    let server = protected(Verify::Jwt).await;
    let key = DpopKey::generate();
    let token = server.dpop_token(&key).await;
    // With a fresh proof for this request: served.
    let proof = key.proof("POST", &server.url, Some(&token), "first");
    assert_eq!(server.call_with_proof(&token, Some(proof.clone())).await.status(), StatusCode::OK);
    // The same proof again: a replay.
    assert_bad_proof(server.call_with_proof(&token, Some(proof)).await, "already used").await;
    // No proof, a proof for another URL, another method, another key, or without `ath`.
    assert_bad_proof(server.call_with_proof(&token, None).await, "no DPoP proof").await;
    let elsewhere = key.proof("POST", "http://127.0.0.1:9/mcp", Some(&token), "elsewhere");
    assert_bad_proof(server.call_with_proof(&token, Some(elsewhere)).await, "another URL").await;
    let get = key.proof("GET", &server.url, Some(&token), "get");
    assert_bad_proof(server.call_with_proof(&token, Some(get)).await, "another method").await;
    let stolen = DpopKey::generate().proof("POST", &server.url, Some(&token), "stolen");
    assert_bad_proof(server.call_with_proof(&token, Some(stolen)).await, "another key").await;
    let no_ath = key.proof("POST", &server.url, None, "no-ath");
    assert_bad_proof(server.call_with_proof(&token, Some(no_ath)).await, "ath").await;
    // The bound token presented as a plain bearer token.
    assert_invalid_token(server.call(Some(&format!("Bearer {token}")), "whoami").await, "bound to a DPoP key").await;
}

// ---------------------------------------------------------------------------------------------
// End to end with this workspace's client: authorization code with PKCE, step-up, DPoP

/// Follows the authorization URL like a browser whose user is already logged in: redirects,
/// with cookies, until the provider sends it to the redirect URI.
struct Browser {
    http: reqwest::Client,
    redirect: String,
    login_hint: Option<String>,
    authorizations: Arc<AtomicUsize>,
}

impl Browser {
    fn new(redirect: &str, login_hint: Option<&str>) -> Self {
        let http =
            reqwest::Client::builder().cookie_store(true).redirect(reqwest::redirect::Policy::none()).build().unwrap();
        Browser {
            http,
            redirect: redirect.to_owned(),
            login_hint: login_hint.map(str::to_owned),
            authorizations: Arc::default(),
        }
    }
}

impl Authorizer for Browser {
    fn authorize(&self, authorization_url: reqwest::Url) -> BoxFuture<'_, Result<reqwest::Url, AuthError>> {
        Box::pin(async move {
            self.authorizations.fetch_add(1, Ordering::SeqCst);
            let mut url = authorization_url;
            if let Some(hint) = &self.login_hint {
                url.query_pairs_mut().append_pair("login_hint", hint);
            }
            for _ in 0..10 {
                let response =
                    self.http.get(url.clone()).send().await.map_err(|e| AuthError::Authorizer(e.to_string()))?;
                let location = response.headers().get("location").and_then(|l| l.to_str().ok()).ok_or_else(|| {
                    AuthError::Authorizer(format!("{} answered {} without a redirect", url, response.status()))
                })?;
                url = url.join(location).map_err(|e| AuthError::Authorizer(e.to_string()))?;
                if url.as_str().starts_with(&self.redirect) {
                    return Ok(url);
                }
            }
            Err(AuthError::Authorizer("too many redirects".to_owned()))
        })
    }

    fn redirect_uri(&self) -> Option<reqwest::Url> {
        Some(self.redirect.parse().unwrap())
    }
}

async fn oauth_client(
    server: &Protected,
    era: EraPreference,
    scopes: &[&str],
    dpop: bool,
) -> (Client, Arc<AtomicUsize>, OAuth) {
    let browser = Browser::new("http://127.0.0.1:34567/callback", Some("alice"));
    let authorizations = Arc::clone(&browser.authorizations);
    let oauth =
        OAuth::builder().client_name("e2e").authorizer(browser).scopes(scopes.iter().copied()).dpop(dpop).build();
    let client = Client::builder("e2e", "1.0.0").era(era).oauth(oauth.clone()).connect_http(&server.url).await.unwrap();
    (client, authorizations, oauth)
}

#[tokio::test]
async fn the_workspace_client_authorizes_with_pkce_and_steps_up_in_both_eras() {
    let server = protected(Verify::Jwt).await;
    for era in [EraPreference::Auto, EraPreference::Legacy] {
        let (client, authorizations, _) = oauth_client(&server, era, &[], false).await;
        let result = client.call_tool("whoami", &json!({})).await.unwrap();
        let identity = result.structured_content.unwrap();
        assert_eq!(identity["subject"], "alice", "{identity}");
        assert_eq!(identity["scopes"], json!(["notes:read"]));
        assert_eq!(authorizations.load(Ordering::SeqCst), 1);
        // add_note needs notes:write: 403, the client authorizes again with the union, retries.
        let added = client.call_tool("add_note", &json!({"title": "e2e"})).await.unwrap();
        assert_eq!(added.is_error, None, "{added:?}");
        assert_eq!(authorizations.load(Ordering::SeqCst), 2);
        let identity = client.call_tool("whoami", &json!({})).await.unwrap().structured_content.unwrap();
        assert_eq!(identity["scopes"], json!(["notes:read", "notes:write"]), "{identity}");
        client.close().await;
    }
}

#[tokio::test]
async fn the_workspace_client_uses_a_dpop_bound_token() {
    let server = protected(Verify::Jwt).await;
    let (client, _, oauth) = oauth_client(&server, EraPreference::Auto, &[], true).await;
    let identity = client.call_tool("whoami", &json!({})).await.unwrap().structured_content.unwrap();
    assert_eq!(identity["subject"], "alice");
    let token = oauth.tokens().expect("tokens").access_token;
    // The same token without its proof is refused.
    let (status, _, description) =
        refusal(server.call(Some(&format!("Bearer {}", token.expose())), "whoami").await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(description.contains("bound to a DPoP key"), "{description}");
    client.close().await;
}

/// A server that accepts only DPoP-bound tokens says so in its metadata; a client that was not
/// told about DPoP turns it on from there, and one told `dpop(false)` says why it cannot go on.
#[tokio::test]
async fn a_server_requiring_dpop_gets_dpop_from_a_client_not_told_to() {
    let provider = OidcProvider::start();
    let issuer = provider.issuer.clone();
    let url = serve_protected(server(), |url| {
        ResourceServer::builder(url, JwtVerifier::new(&issuer, url))
            .authorization_server(&issuer)
            .required_scopes(["notes:read"])
            .require_dpop(true)
            .build()
    })
    .await;
    let server = Protected {
        url,
        provider,
        http: reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap(),
    };
    let metadata: Value = server
        .http
        .get(server.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["dpop_bound_access_tokens_required"], true, "{metadata}");

    // A Bearer token, valid in every other way, is refused, naming why.
    let bearer = server.token("notes:read").await;
    let (status, _, description) = refusal(server.call(Some(&format!("Bearer {bearer}")), "whoami").await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(description.contains("only DPoP-bound tokens"), "{description}");

    // The workspace's client, DPoP left unset: a DPoP-bound token, sent with its proofs.
    let browser = Browser::new("http://127.0.0.1:34567/callback", Some("alice"));
    let oauth = OAuth::builder().client_name("e2e").authorizer(browser).build();
    let client =
        Client::builder("e2e", "1.0.0").oauth(oauth.clone()).connect_http(&server.url).await.expect("connects");
    let identity = client.call_tool("whoami", &json!({})).await.unwrap().structured_content.unwrap();
    assert_eq!(identity["subject"], "alice", "{identity}");
    assert!(oauth.tokens().expect("tokens").dpop, "the token is DPoP-bound");
    client.close().await;

    // Told never to use DPoP: the error names the requirement, nothing is authorized.
    let browser = Browser::new("http://127.0.0.1:34567/callback", Some("alice"));
    let authorizations = Arc::clone(&browser.authorizations);
    let oauth = OAuth::builder().client_name("e2e").authorizer(browser).dpop(false).build();
    let refused = Client::builder("e2e", "1.0.0").oauth(oauth).connect_http(&server.url).await.unwrap_err();
    let refused = refused.to_string();
    assert!(refused.contains("accepts only DPoP-bound tokens") && refused.contains(&server.url), "{refused}");
    assert_eq!(authorizations.load(Ordering::SeqCst), 0);
}

// ---------------------------------------------------------------------------------------------
// Reuse of verified tokens

/// Counts the tokens it is asked to verify; reuse as told.
struct Counting {
    inner: JwtVerifier,
    calls: Arc<AtomicUsize>,
    reuse: Duration,
}

impl TokenVerifier for Counting {
    fn verify<'a>(
        &'a self,
        token: &'a str,
    ) -> BoxFuture<'a, Result<mcp_server::VerifiedToken, mcp_server::auth::VerifyError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.verify(token)
    }

    fn reuse_for(&self) -> Duration {
        self.reuse
    }
}

#[tokio::test]
async fn a_verified_token_is_reused_only_as_long_as_its_verifier_allows() {
    for (reuse, expected) in [(Duration::MAX, 1), (Duration::ZERO, 3)] {
        let provider = OidcProvider::start();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let calls = Arc::new(AtomicUsize::new(0));
        let verifier = Counting { inner: JwtVerifier::new(&provider.issuer, &url), calls: Arc::clone(&calls), reuse };
        let mut config = HttpConfig::default();
        config.authorization = Some(ResourceServer::builder(&url, verifier).required_scopes(["notes:read"]).build());
        tokio::spawn(mcp_server::http::serve(listener, server(), config));
        let server = Protected { url, provider, http: reqwest::Client::new() };
        let token = server.token("notes:read").await;
        for _ in 0..3 {
            let response: Value = server.call(Some(&format!("Bearer {token}")), "whoami").await.json().await.unwrap();
            assert_eq!(structured(&response)["client_id"], "test-cc", "{response}");
        }
        assert_eq!(calls.load(Ordering::SeqCst), expected, "reuse_for {reuse:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Hardening (issue 42, items 5, 6 and 8)

/// Serves `app` at a fresh loopback URL, protected by what `authorization` makes for that URL.
async fn serve_protected(app: Server, authorization: impl FnOnce(&str) -> ResourceServer) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let mut config = HttpConfig::default();
    config.authorization = Some(authorization(&url));
    tokio::spawn(mcp_server::http::serve(listener, app, config));
    url
}

/// A JWS of these header and claims, signed with the provider's key (ES256) whatever they say.
fn sign_raw(provider: &OidcProvider, header: Value, claims: Value) -> String {
    use p256::ecdsa::signature::Signer as _;
    use p256::pkcs8::DecodePrivateKey as _;
    let key = p256::ecdsa::SigningKey::from_pkcs8_pem(&provider.key_pem).unwrap();
    let input = format!("{}.{}", B64URL.encode(header.to_string()), B64URL.encode(claims.to_string()));
    let signature: p256::ecdsa::Signature = key.sign(input.as_bytes());
    format!("{input}.{}", B64URL.encode(signature.to_bytes()))
}

/// Figures: before, each of these four tokens got 200; after, each gets 401 naming the claim.
#[tokio::test]
async fn lenient_claims_and_crit_headers_are_refused() {
    let without_sub = |mut claims: Value| {
        claims.as_object_mut().unwrap().remove("sub");
        claims
    };
    let server = protected(Verify::Jwt).await;
    let header = json!({"alg": "ES256", "typ": "at+jwt", "kid": KEY_ID});
    let claims = |overrides: Value| {
        let mut claims = json!({"iss": server.provider.issuer, "aud": server.url, "sub": "alice",
            "scope": "notes:read", "iat": now(), "exp": now() + 600});
        for (name, value) in overrides.as_object().unwrap() {
            claims[name] = value.clone();
        }
        claims
    };
    let good = sign_raw(&server.provider, header.clone(), claims(json!({})));
    assert_eq!(server.call(Some(&format!("Bearer {good}")), "whoami").await.status(), StatusCode::OK);
    let cases = [
        (header.clone(), claims(json!({"iss": [server.provider.issuer]})), "`iss` claim is not a string"),
        (header.clone(), claims(json!({"iat": now() + 3600})), "`iat` is in the future"),
        (header.clone(), claims(json!({"sub": ""})), "`sub` claim is empty"),
        (header.clone(), claims(json!({"sub": "client:test-cc"})), "namespace of client principals"),
        // Neither a user nor a client: it would be the anonymous principal.
        (header.clone(), without_sub(claims(json!({}))), "names no subject (sub) and no client (client_id)"),
        (
            json!({"alg": "ES256", "typ": "at+jwt", "kid": KEY_ID, "crit": ["urn:example:must-understand"],
                "urn:example:must-understand": true}),
            claims(json!({})),
            "critical extensions",
        ),
    ];
    for (header, claims, why) in cases {
        let token = sign_raw(&server.provider, header, claims);
        assert_invalid_token(server.call(Some(&format!("Bearer {token}")), "whoami").await, why).await;
    }
}

/// Figure: a legacy session opened by the user `alice` was served to the client `alice`
/// (a token without `sub`: same principal, 200); now that client is `client:alice` (403).
#[tokio::test]
async fn a_client_named_like_a_user_is_not_that_user() {
    let server = protected(Verify::Jwt).await;
    let user = server.mint(json!({ "sub": "alice", "client_id": "web" }));
    let client = server.mint(json!({ "sub": null, "client_id": "alice", "jti": "client-token" }));
    let session = server.initialize(&user).await;
    let ping = |token: &str| {
        server
            .http
            .post(&server.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", LEGACY)
            .bearer_auth(token)
            .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
    };
    assert_eq!(ping(&client).send().await.unwrap().status(), StatusCode::FORBIDDEN);
    assert_eq!(ping(&user).send().await.unwrap().status(), StatusCode::OK);
    // The client's own principal is in the `client:` namespace.
    let principal = mcp_server::Principal::from_token(mcp_server::VerifiedToken::from_claims(
        json!({"client_id": "alice"}).as_object().unwrap().clone(),
    ));
    assert_eq!(principal.as_str(), "client:alice");
}

/// Figures: a required scope with a quote, a space, a backslash or CR/LF made a resource server
/// (and its challenge carried it); now `try_build` refuses it, naming it. (A route's scope name
/// is refused by `Server::build`: mcp-server's `tests/integration/visibility.rs`.)
#[test]
fn scope_names_that_are_not_scope_tokens_are_refused_at_build() {
    for bad in ["notes\"read", "notes read", "notes\\read", "notes\r\nX-Injected: 1", ""] {
        let builder = ResourceServer::builder("http://127.0.0.1:9/mcp", JwtVerifier::new("http://127.0.0.1:9", "x"));
        let error = builder.required_scopes(["ok", bad]).try_build().unwrap_err();
        assert_eq!(error.scope, bad);
        assert!(error.to_string().contains("scope-token"), "{error}");
        let builder = ResourceServer::builder("http://127.0.0.1:9/mcp", JwtVerifier::new("http://127.0.0.1:9", "x"));
        assert!(builder.scopes_supported([bad]).try_build().is_err(), "scopes_supported {bad:?}");
    }
}

/// A small introspection endpoint calling every token inactive, counting the calls.
async fn counting_introspection() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/introspect", listener.local_addr().unwrap());
    let calls = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&calls);
    let app = axum::Router::new().route(
        "/introspect",
        axum::routing::post(move || {
            count.fetch_add(1, Ordering::SeqCst);
            async { axum::Json(json!({"active": false})) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, calls)
}

/// Figure: the same junk opaque token sent 3 times cost 3 introspection calls; now 1 (and a
/// different junk token one more).
#[tokio::test]
async fn a_junk_opaque_token_repeated_costs_one_introspection_call() {
    let (endpoint, calls) = counting_introspection().await;
    let url = serve_protected(server(), |url| {
        let verifier = IntrospectionVerifier::new("http://127.0.0.1:9", url, "rs", "secret").endpoint(&endpoint);
        ResourceServer::builder(url, verifier).try_build().unwrap()
    })
    .await;
    let http = reqwest::Client::new();
    let call = |token: &str| {
        http.post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", MODERN)
            .bearer_auth(token)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .send()
    };
    for _ in 0..3 {
        assert_invalid_token(call("junk-token").await.unwrap(), "not active").await;
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_invalid_token(call("other-junk").await.unwrap(), "not active").await;
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

/// Figures: 10 bad-signature tokens from one address cost 10 verifications; now 5 (the burst),
/// the other 5 get 429 with `Retry-After` unverified. A valid token verified before keeps
/// working (200); a new token, valid or not, waits like the rest (the choice: the limit is
/// on failures, but telling a new valid token apart costs the verification it saves).
#[tokio::test]
async fn failed_verifications_are_limited_per_address() {
    let provider = OidcProvider::start();
    let calls = Arc::new(AtomicUsize::new(0));
    let url = serve_protected(server(), |url| {
        let verifier = Counting {
            inner: JwtVerifier::new(&provider.issuer, url),
            calls: Arc::clone(&calls),
            reuse: Duration::MAX,
        };
        let builder = ResourceServer::builder(url, verifier).required_scopes(["notes:read"]);
        builder.failed_verification_limit(5, Duration::from_secs(3600)).try_build().unwrap()
    })
    .await;
    let server = Protected { url, provider, http: reqwest::Client::new() };
    let valid = server.token("notes:read").await;
    assert_eq!(server.call(Some(&format!("Bearer {valid}")), "whoami").await.status(), StatusCode::OK);
    let forged = DpopKey::generate();
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(KEY_ID.to_owned());
    header.typ = Some("at+jwt".to_owned());
    let mut statuses = Vec::new();
    for n in 0..10 {
        let claims = json!({"iss": server.provider.issuer, "aud": server.url, "sub": format!("mallory-{n}"), "exp": now() + 600});
        let token = jsonwebtoken::encode(&header, &claims, &forged.encoding).unwrap();
        let response = server.call(Some(&format!("Bearer {token}")), "whoami").await;
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            let retry_after: u64 = response.headers()["retry-after"].to_str().unwrap().parse().unwrap();
            assert!(retry_after > 0 && retry_after <= 3600, "{retry_after}");
        }
        statuses.push(response.status().as_u16());
    }
    assert_eq!(statuses, [401, 401, 401, 401, 401, 429, 429, 429, 429, 429]);
    assert_eq!(calls.load(Ordering::SeqCst), 1 + 5, "the valid token and the burst of bad ones");
    assert_eq!(server.call(Some(&format!("Bearer {valid}")), "whoami").await.status(), StatusCode::OK);
    let another = server.mint(json!({"jti": "another"}));
    assert_eq!(server.call(Some(&format!("Bearer {another}")), "whoami").await.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(calls.load(Ordering::SeqCst), 6);
}

/// An issuer of the provider's keys whose JWKS can change, be slow, carry `Cache-Control`, or
/// be huge; counting metadata and JWKS fetches, and the JWKS bytes it wrote.
#[derive(Clone, Default)]
struct HostileIssuer {
    issuer: String,
    jwks: Arc<std::sync::Mutex<Value>>,
    cache_control: Option<&'static str>,
    delay: Duration,
    /// Serve this many bytes of whitespace-padded JSON instead of the keys (0: the keys).
    huge: usize,
    metadata_fetches: Arc<AtomicUsize>,
    jwks_fetches: Arc<AtomicUsize>,
    jwks_bytes_written: Arc<AtomicUsize>,
    /// Set when a huge body stream was dropped (the client went away or it ended).
    huge_dropped: Arc<tokio::sync::Notify>,
}

/// Counts what a huge JWKS body wrote, and says when the server dropped it.
struct HugeBody {
    left: usize,
    written: Arc<AtomicUsize>,
    dropped: Arc<tokio::sync::Notify>,
}

impl Drop for HugeBody {
    fn drop(&mut self) {
        self.dropped.notify_one();
    }
}

impl HostileIssuer {
    async fn start(mut self, provider: &OidcProvider) -> HostileIssuer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        self.issuer = format!("http://{}", listener.local_addr().unwrap());
        let jwks: Value = reqwest::get(format!("{}/jwks", provider.issuer)).await.unwrap().json().await.unwrap();
        *self.jwks.lock().unwrap() = jwks;
        let metadata = json!({ "issuer": self.issuer, "jwks_uri": format!("{}/jwks", self.issuer) });
        let (meta, this) = (self.clone(), self.clone());
        let app = axum::Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                axum::routing::get(move || {
                    meta.metadata_fetches.fetch_add(1, Ordering::SeqCst);
                    std::future::ready(axum::Json(metadata.clone()))
                }),
            )
            .route("/jwks", axum::routing::get(move || this.clone().serve_jwks()));
        tokio::spawn(async move { axum::serve(listener, app).await });
        self
    }

    async fn serve_jwks(self) -> axum::response::Response {
        use axum::response::IntoResponse as _;
        self.jwks_fetches.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(self.delay).await;
        if self.huge > 0 {
            let body = HugeBody { left: self.huge, written: self.jwks_bytes_written, dropped: self.huge_dropped };
            let chunks = futures::stream::unfold(body, |mut body| async move {
                const CHUNK: usize = 64 * 1024;
                let size = CHUNK.min(body.left);
                if size == 0 {
                    return None;
                }
                body.left -= size;
                body.written.fetch_add(size, Ordering::SeqCst);
                Some((Ok::<_, std::io::Error>(axum::body::Bytes::from(vec![b' '; size])), body))
            });
            return axum::body::Body::from_stream(chunks).into_response();
        }
        let jwks = self.jwks.lock().unwrap().clone();
        let mut response = axum::Json(jwks).into_response();
        if let Some(cache_control) = self.cache_control {
            response.headers_mut().insert("cache-control", cache_control.parse().unwrap());
        }
        response
    }
}

/// Figures: a key removed from the JWKS kept verifying new tokens and the tokens already
/// verified (200 after the removal, one JWKS fetch in all); now, with the JWKS saying
/// `max-age=1`, both are refused once that second has passed (401), after a second fetch.
#[tokio::test]
async fn a_key_removed_from_the_jwks_stops_verifying_after_its_max_age() {
    let provider = OidcProvider::start();
    let issuer = HostileIssuer { cache_control: Some("public, max-age=1"), ..Default::default() };
    let issuer = issuer.start(&provider).await;
    let url = serve_protected(server(), |url| {
        // Bounds far from the header's 1 s: the header is what sets the interval.
        let verifier =
            JwtVerifier::new(&issuer.issuer, url).jwks_max_age(Duration::from_millis(100), Duration::from_secs(3600));
        ResourceServer::builder(url, verifier).try_build().unwrap()
    })
    .await;
    let server = Protected { url, provider, http: reqwest::Client::new() };
    let token = |sub: &str| {
        let claims =
            json!({"iss": issuer.issuer, "aud": server.url, "sub": sub, "scope": "notes:read", "exp": now() + 600});
        mint_with(&server.provider, KEY_ID, claims)
    };
    let (verified, fresh) = (token("alice"), token("bob"));
    assert_eq!(server.call(Some(&format!("Bearer {verified}")), "whoami").await.status(), StatusCode::OK);
    // One fetch or two so far: `serve`'s check at start may race the first request's.
    let fetched = issuer.jwks_fetches.load(Ordering::SeqCst);
    *issuer.jwks.lock().unwrap() = json!({"keys": []});
    // Past the max-age the JWKS gave (1 s).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_invalid_token(server.call(Some(&format!("Bearer {fresh}")), "whoami").await, "no key `test-key-1`").await;
    assert_invalid_token(server.call(Some(&format!("Bearer {verified}")), "whoami").await, "no key `test-key-1`").await;
    assert_eq!(issuer.jwks_fetches.load(Ordering::SeqCst), fetched + 1);
}

/// Figures: 8 requests waiting on a first JWKS load slower than the verifier's timeout each
/// fetched in turn (8 JWKS fetches, one after another); now they share one fetch (1 metadata
/// and 1 JWKS fetch) and all get its outcome, `Unavailable`.
#[tokio::test]
async fn a_slow_first_key_load_is_one_fetch_shared_by_every_waiting_request() {
    let provider = OidcProvider::start();
    let issuer = HostileIssuer { delay: Duration::from_secs(3), ..Default::default() }.start(&provider).await;
    let audience = "http://127.0.0.1:9/mcp";
    let http = reqwest::Client::builder().timeout(Duration::from_millis(1200)).build().unwrap();
    let verifier = Arc::new(JwtVerifier::new(&issuer.issuer, audience).http_client(http));
    let claims = json!({"iss": issuer.issuer, "aud": audience, "sub": "alice", "exp": now() + 600});
    let token = mint_with(&provider, KEY_ID, claims);
    let waiting = (0..8).map(|_| {
        let (verifier, token) = (Arc::clone(&verifier), token.clone());
        tokio::spawn(async move { verifier.verify(&token).await })
    });
    for outcome in futures::future::join_all(waiting).await {
        let error = outcome.unwrap().unwrap_err();
        assert!(matches!(error, mcp_server::auth::VerifyError::Unavailable(_)), "{error:?}");
    }
    assert_eq!(issuer.metadata_fetches.load(Ordering::SeqCst), 1);
    assert_eq!(issuer.jwks_fetches.load(Ordering::SeqCst), 1);
}

/// Figures: a 500 MB JWKS was read whole (534 MB peak); now the verifier refuses it
/// (`Unavailable`, naming the 1 MiB cap) and the issuer wrote less than 16 MiB of it before
/// the connection closed (the cap plus what the loopback socket buffers hold).
#[tokio::test]
async fn a_huge_jwks_is_refused_after_reading_at_most_the_cap() {
    let provider = OidcProvider::start();
    let issuer = HostileIssuer { huge: 500_000_000, ..Default::default() }.start(&provider).await;
    let audience = "http://127.0.0.1:9/mcp";
    let verifier = JwtVerifier::new(&issuer.issuer, audience);
    let claims = json!({"iss": issuer.issuer, "aud": audience, "sub": "alice", "exp": now() + 600});
    let error = verifier.verify(&mint_with(&provider, KEY_ID, claims)).await.unwrap_err();
    assert!(matches!(error, mcp_server::auth::VerifyError::Unavailable(_)), "{error:?}");
    assert!(error.to_string().contains("exceeds 1048576 bytes"), "{error}");
    tokio::time::timeout(Duration::from_secs(20), issuer.huge_dropped.notified())
        .await
        .expect("the issuer's body stream ends once the verifier hangs up");
    let written = issuer.jwks_bytes_written.load(Ordering::SeqCst);
    assert!(written < 16 * 1024 * 1024, "{written} bytes written");
}

use crate::redis_support;

/// Figures: a DPoP proof accepted by one instance was accepted again by a second instance of
/// the same deployment (2/2); with both recording proofs in one real Redis, the second refuses
/// it as replayed (1/2), and one DPoP key holds at most its share of Redis (`per_key` 3: its
/// fourth live proof is refused).
#[tokio::test]
async fn a_dpop_proof_used_on_one_instance_is_refused_on_another_sharing_redis() {
    let redis_server = redis_support::RedisServer::start();
    let redis = mcp_server_redis::Redis::open(&redis_server.url()).unwrap().with_prefix("replay-test:");
    let provider = OidcProvider::start();
    // Two instances of one deployment: one canonical URL (the proofs' htu), two listeners.
    let listeners = [
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
    ];
    let resource = format!("http://{}/mcp", listeners[0].local_addr().unwrap());
    let mut instances = Vec::new();
    for listener in listeners {
        instances.push(format!("http://{}/mcp", listener.local_addr().unwrap()));
        let authorization = ResourceServer::builder(&resource, JwtVerifier::new(&provider.issuer, &resource))
            .dpop_replay_store(Arc::new(redis.replay_store(3)))
            .try_build()
            .unwrap();
        let mut config = HttpConfig::default();
        config.authorization = Some(authorization);
        tokio::spawn(mcp_server::http::serve(listener, server(), config));
    }
    let server = Protected { url: resource.clone(), provider, http: reqwest::Client::new() };
    let key = DpopKey::generate();
    let token = server.dpop_token(&key).await;
    let call = |instance: &str, proof: String| {
        let request = modern_call_at(&server.http, instance, "whoami");
        request.header("authorization", format!("DPoP {token}")).header("dpop", proof).send()
    };
    let proof = key.proof("POST", &resource, Some(&token), "used-once");
    assert_eq!(call(&instances[0], proof.clone()).await.unwrap().status(), StatusCode::OK);
    assert_bad_proof(call(&instances[1], proof).await.unwrap(), "already used").await;
    // The key's share: two more proofs fit, the fourth does not.
    for jti in ["second", "third"] {
        let proof = key.proof("POST", &resource, Some(&token), jti);
        assert_eq!(call(&instances[1], proof).await.unwrap().status(), StatusCode::OK, "{jti}");
    }
    let fourth = key.proof("POST", &resource, Some(&token), "fourth");
    assert_bad_proof(call(&instances[0], fourth).await.unwrap(), "too many DPoP proofs of this key").await;
}
