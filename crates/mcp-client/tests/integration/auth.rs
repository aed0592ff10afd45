//! OAuth authorization against a mock protected MCP server and mock authorization servers on
//! 127.0.0.1: each test asserts what the mocks saw.
#![cfg(feature = "auth")]

use crate::oauth_mock;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD as B64URL};
use mcp_client::auth::{
    AuthError, Authorizer, Es256Key, HeadlessAuthorizer, LoopbackAuthorizer, OAuth, OAuthBuilder, Secret, StoredTokens,
    TokenEndpointAuthMethod,
};
use mcp_client::{Client, EraPreference, Error};
use oauth_mock::{AsConfig, AuthServer, Iss, Issued, McpServer, RsConfig, Seen};
use serde_json::Value;

const REDIRECT: &str = "http://localhost:3000/callback";

fn oauth() -> OAuthBuilder {
    OAuth::builder().client_name("auth-test").redirect_uri(REDIRECT).authorizer(HeadlessAuthorizer::new())
}

async fn connect(server: &McpServer, oauth: OAuth) -> Result<Client, Error> {
    Client::builder("auth-test", "1.0.0")
        .protocol_versions(["2026-07-28"])
        .era(EraPreference::Modern)
        .oauth(oauth)
        .connect_http(&server.url)
        .await
}

/// Connects, lists the tools and calls the tool: three authorized requests.
async fn use_server(server: &McpServer, oauth: OAuth) -> Result<(), Error> {
    let client = connect(server, oauth).await?;
    client.all_tools().await?;
    client.call_tool("test-tool", ()).await?;
    Ok(())
}

/// An authorization server with `config` and a protected server changed by `rs`.
async fn setup(config: AsConfig, rs: impl FnOnce(&mut RsConfig)) -> (AuthServer, McpServer) {
    let issued = Issued::default();
    let auth = AuthServer::start(config, &issued).await;
    let mut rs_config = RsConfig::new(&auth.issuer);
    rs(&mut rs_config);
    let server = McpServer::start(rs_config, &issued).await;
    (auth, server)
}

fn auth_error(error: &Error) -> &AuthError {
    error.auth_error().unwrap_or_else(|| panic!("not an authorization error: {error}"))
}

#[tokio::test]
async fn full_flow_sends_pkce_state_and_the_exact_resource() {
    let (auth, server) = setup(AsConfig::default(), |_| {}).await;
    use_server(&server, oauth().build()).await.unwrap();

    let authorize = &auth.requests("/authorize")[0];
    assert_eq!(authorize.param("response_type"), Some("code"));
    assert_eq!(authorize.param("code_challenge_method"), Some("S256"));
    assert_eq!(authorize.param("redirect_uri"), Some(REDIRECT));
    assert_eq!(authorize.param("resource"), Some(server.url.as_str()));
    assert!(authorize.param("state").is_some_and(|s| s.len() >= 16));
    let token = &auth.requests("/token")[0];
    assert_eq!(token.param("grant_type"), Some("authorization_code"));
    assert_eq!(token.param("resource"), Some(server.url.as_str()));
    assert_eq!(token.param("redirect_uri"), Some(REDIRECT));
    let verifier = token.param("code_verifier").unwrap();
    let challenge = {
        use base64::Engine as _;
        use sha2::Digest as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()))
    };
    assert_eq!(authorize.param("code_challenge"), Some(challenge.as_str()));
    // One authorization served the connection, the listing and the call.
    assert_eq!(auth.requests("/authorize").len(), 1);
    let bearers = server.bearer_tokens();
    assert_eq!(bearers.len(), 3, "{bearers:?}");
    assert!(bearers.iter().all(|b| b == "Bearer access-2"));
}

#[tokio::test]
async fn prm_comes_from_the_challenge_url_only_when_given() {
    let (_auth, server) = setup(AsConfig::default(), |rs| {
        rs.prm_path = Some("/custom/metadata/location.json".into());
    })
    .await;
    use_server(&server, oauth().build()).await.unwrap();
    let gets: Vec<String> = server.paths().into_iter().filter(|p| p != "/mcp").collect();
    assert_eq!(gets, ["/custom/metadata/location.json"]);
}

#[tokio::test]
async fn prm_is_probed_path_based_then_root() {
    // Path-based, not named in the challenge: the root URL is never asked.
    let (_auth, server) = setup(AsConfig::default(), |rs| rs.prm_in_challenge = false).await;
    use_server(&server, oauth().build()).await.unwrap();
    let gets: Vec<String> = server.paths().into_iter().filter(|p| p != "/mcp").collect();
    assert_eq!(gets, ["/.well-known/oauth-protected-resource/mcp"]);

    // Only at the root: path-based first, then root.
    let (auth, server) = setup(AsConfig::default(), |rs| {
        rs.prm_in_challenge = false;
        rs.prm_path = Some("/.well-known/oauth-protected-resource".into());
        rs.origin_resource = true;
    })
    .await;
    use_server(&server, oauth().build()).await.unwrap();
    let gets: Vec<String> = server.paths().into_iter().filter(|p| p != "/mcp").collect();
    assert_eq!(gets[..2], ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]);
    assert_eq!(auth.requests("/authorize").len(), 1);
}

#[tokio::test]
async fn a_bare_origin_resource_is_sent_byte_for_byte() {
    let (auth, server) = setup(AsConfig::default(), |rs| rs.origin_resource = true).await;
    use_server(&server, oauth().build()).await.unwrap();
    let origin = server.url.trim_end_matches("/mcp");
    assert!(!origin.ends_with('/'));
    assert_eq!(auth.requests("/authorize")[0].param("resource"), Some(origin));
    assert_eq!(auth.requests("/token")[0].param("resource"), Some(origin));
}

#[tokio::test]
async fn server_metadata_order_for_an_issuer_without_path() {
    let config = AsConfig { metadata_path: "/.well-known/openid-configuration".into(), ..AsConfig::default() };
    let (auth, server) = setup(config, |_| {}).await;
    use_server(&server, oauth().build()).await.unwrap();
    let paths = auth.paths();
    assert_eq!(paths[..2], ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]);
}

#[tokio::test]
async fn server_metadata_order_for_an_issuer_with_path() {
    let config = AsConfig {
        issuer_path: "/tenant1".into(),
        metadata_path: "/tenant1/.well-known/openid-configuration".into(),
        ..AsConfig::default()
    };
    let (auth, server) = setup(config, |_| {}).await;
    use_server(&server, oauth().build()).await.unwrap();
    let paths = auth.paths();
    assert_eq!(
        paths[..3],
        [
            "/.well-known/oauth-authorization-server/tenant1",
            "/.well-known/openid-configuration/tenant1",
            "/tenant1/.well-known/openid-configuration",
        ]
    );
    assert!(!paths.iter().any(|p| p == "/.well-known/oauth-authorization-server"));
    assert!(!paths.iter().any(|p| p == "/.well-known/openid-configuration"));
    assert_eq!(auth.requests("/tenant1/authorize").len(), 1);
}

#[tokio::test]
async fn metadata_of_another_issuer_is_not_used() {
    let config = AsConfig { metadata_issuer: Some("https://attacker.example.com".into()), ..AsConfig::default() };
    let (auth, server) = setup(config, |_| {}).await;
    let error = use_server(&server, oauth().build()).await.unwrap_err();
    match auth_error(&error) {
        AuthError::IssuerMismatch { expected, found } => {
            assert_eq!(expected, &auth.issuer);
            assert_eq!(found, "https://attacker.example.com");
        }
        other => panic!("{other}"),
    }
    for endpoint in ["/register", "/authorize", "/token"] {
        assert!(auth.requests(endpoint).is_empty(), "{endpoint} was used");
    }
}

#[tokio::test]
async fn a_resource_mismatch_stops_before_authorization() {
    let (auth, server) =
        setup(AsConfig::default(), |rs| rs.resource = Some("https://evil.example.com/mcp".into())).await;
    let error = use_server(&server, oauth().build()).await.unwrap_err();
    match auth_error(&error) {
        AuthError::ResourceMismatch { resource, server: url } => {
            assert_eq!(resource, "https://evil.example.com/mcp");
            assert_eq!(url, &server.url);
        }
        other => panic!("{other}"),
    }
    assert!(error.to_string().contains("https://evil.example.com/mcp"));
    assert!(auth.requests("/authorize").is_empty());
    assert!(auth.requests("/.well-known/oauth-authorization-server").is_empty());
}

/// Runs the flow with an `iss` behaviour; returns the outcome and whether a token was asked.
async fn iss_case(supported: Option<bool>, iss: Iss) -> (Result<(), Error>, bool) {
    let config = AsConfig { iss_supported: supported, iss, ..AsConfig::default() };
    let (auth, server) = setup(config, |_| {}).await;
    let outcome = use_server(&server, oauth().build()).await;
    assert_eq!(auth.requests("/authorize").len(), 1);
    (outcome, !auth.requests("/token").is_empty())
}

#[tokio::test]
async fn iss_is_checked_by_plain_string_equality_before_the_token_request() {
    let (outcome, token) = iss_case(Some(true), Iss::Correct).await;
    assert!(outcome.is_ok() && token);
    let (outcome, token) = iss_case(None, Iss::Omit).await;
    assert!(outcome.is_ok() && token);
    let (outcome, token) = iss_case(Some(false), Iss::Omit).await;
    assert!(outcome.is_ok() && token);

    let (outcome, token) = iss_case(Some(true), Iss::Omit).await;
    let error = outcome.unwrap_err();
    assert!(matches!(auth_error(&error), AuthError::IssMismatch { found: None, .. }), "{error}");
    assert!(!token);
    for (supported, iss) in [(Some(true), Iss::Wrong), (None, Iss::Wrong), (Some(true), Iss::TrailingSlash)] {
        let (outcome, token) = iss_case(supported, iss).await;
        let error = outcome.unwrap_err();
        assert!(matches!(auth_error(&error), AuthError::IssMismatch { found: Some(_), .. }), "{error}");
        assert!(!token, "{iss:?}: the code was exchanged");
    }
}

#[tokio::test]
async fn a_forged_state_is_rejected() {
    let config = AsConfig { wrong_state: true, ..AsConfig::default() };
    let (auth, server) = setup(config, |_| {}).await;
    let error = use_server(&server, oauth().build()).await.unwrap_err();
    assert!(matches!(auth_error(&error), AuthError::StateMismatch), "{error}");
    assert!(auth.requests("/token").is_empty());
}

#[tokio::test]
async fn scope_comes_from_the_challenge_then_scopes_supported_then_nowhere() {
    let (auth, server) = setup(AsConfig::default(), |rs| {
        rs.challenge_scope = Some("mcp:basic".into());
        rs.prm_scopes = Some(vec!["mcp:profile".into()]);
    })
    .await;
    use_server(&server, oauth().build()).await.unwrap();
    assert_eq!(auth.requests("/authorize")[0].param("scope"), Some("mcp:basic"));

    let (auth, server) =
        setup(AsConfig::default(), |rs| rs.prm_scopes = Some(vec!["mcp:basic".into(), "mcp:read".into()])).await;
    use_server(&server, oauth().build()).await.unwrap();
    assert_eq!(auth.requests("/authorize")[0].param("scope"), Some("mcp:basic mcp:read"));

    let (auth, server) = setup(AsConfig::default(), |_| {}).await;
    use_server(&server, oauth().build()).await.unwrap();
    assert_eq!(auth.requests("/authorize")[0].param("scope"), None);
}

#[tokio::test]
async fn step_up_keeps_the_granted_scopes() {
    let (auth, server) = setup(AsConfig::default(), |rs| {
        rs.challenge_scope = Some("mcp:basic".into());
        rs.required = vec![
            ("server/discover".into(), "mcp:basic".into()),
            ("tools/list".into(), "mcp:basic".into()),
            ("tools/call".into(), "mcp:write".into()),
        ];
    })
    .await;
    use_server(&server, oauth().build()).await.unwrap();
    let scopes: Vec<Option<String>> =
        auth.requests("/authorize").iter().map(|r| r.param("scope").map(str::to_owned)).collect();
    assert_eq!(scopes, [Some("mcp:basic".to_owned()), Some("mcp:basic mcp:write".to_owned())]);
}

#[tokio::test]
async fn at_most_three_authorizations_per_request() {
    let (auth, server) = setup(AsConfig::default(), |rs| {
        rs.challenge_scope = Some("mcp:admin".into());
        rs.always_forbidden = Some("mcp:admin".into());
    })
    .await;
    let error = use_server(&server, oauth().build()).await.unwrap_err();
    assert!(matches!(auth_error(&error), AuthError::TooManyAuthorizationAttempts { attempts: 3 }), "{error}");
    assert_eq!(auth.requests("/authorize").len(), 3);
    assert!(auth.requests("/authorize").iter().all(|r| r.param("scope") == Some("mcp:admin")));
}

/// The token request's client authentication when the server supports only `method`.
async fn token_auth(method: &str, secret: Option<&str>) -> oauth_mock::Seen {
    let config = AsConfig {
        auth_methods: vec![method.into()],
        registered_client_id: "client-7".into(),
        registered_secret: secret.map(str::to_owned),
        registered_method: Some(method.into()),
        ..AsConfig::default()
    };
    let (auth, server) = setup(config, |_| {}).await;
    use_server(&server, oauth().build()).await.unwrap();
    let registration = &auth.requests("/register")[0];
    assert_eq!(registration.json["token_endpoint_auth_method"], method);
    auth.requests("/token")[0].clone()
}

#[tokio::test]
async fn token_endpoint_authentication_follows_the_server() {
    use base64::Engine as _;
    let basic = token_auth("client_secret_basic", Some("s3cret")).await;
    let expected = base64::engine::general_purpose::STANDARD.encode("client-7:s3cret");
    assert_eq!(basic.header("authorization"), Some(format!("Basic {expected}").as_str()));
    assert_eq!(basic.param("client_secret"), None);

    let post = token_auth("client_secret_post", Some("s3cret")).await;
    assert_eq!(post.header("authorization"), None);
    assert_eq!(post.param("client_id"), Some("client-7"));
    assert_eq!(post.param("client_secret"), Some("s3cret"));

    let none = token_auth("none", None).await;
    assert_eq!(none.header("authorization"), None);
    assert_eq!(none.param("client_id"), Some("client-7"));
    assert_eq!(none.param("client_secret"), None);
}

#[tokio::test]
async fn pre_registered_credentials_are_used_without_registration() {
    let config =
        AsConfig { registration: false, auth_methods: vec!["client_secret_basic".into()], ..AsConfig::default() };
    let (auth, server) = setup(config, |_| {}).await;
    let oauth = oauth().client_id("pre-registered").client_secret("pre-secret").client_issuer(&auth.issuer).build();
    use_server(&server, oauth).await.unwrap();
    assert!(auth.requests("/register").is_empty());
    assert_eq!(auth.requests("/authorize")[0].param("client_id"), Some("pre-registered"));
    use base64::Engine as _;
    let expected = base64::engine::general_purpose::STANDARD.encode("pre-registered:pre-secret");
    assert_eq!(auth.requests("/token")[0].header("authorization"), Some(format!("Basic {expected}").as_str()));
}

#[tokio::test]
async fn a_client_id_metadata_document_replaces_registration_when_supported() {
    const CIMD: &str = "https://app.example.com/client-metadata.json";
    let (auth, server) = setup(AsConfig { cimd: true, ..AsConfig::default() }, |_| {}).await;
    use_server(&server, oauth().client_metadata_url(CIMD).build()).await.unwrap();
    assert!(auth.requests("/register").is_empty());
    assert_eq!(auth.requests("/authorize")[0].param("client_id"), Some(CIMD));
    assert_eq!(auth.requests("/token")[0].param("client_id"), Some(CIMD));

    // Not supported: registration as usual.
    let (auth, server) = setup(AsConfig::default(), |_| {}).await;
    use_server(&server, oauth().client_metadata_url(CIMD).build()).await.unwrap();
    assert_eq!(auth.requests("/register").len(), 1);
    assert_eq!(auth.requests("/authorize")[0].param("client_id"), Some("dcr-client"));
}

#[tokio::test]
async fn dynamic_registration_says_application_type_from_2026_on() {
    let (auth, server) = setup(AsConfig::default(), |_| {}).await;
    use_server(&server, oauth().build()).await.unwrap();
    let registration = &auth.requests("/register")[0].json;
    assert_eq!(registration["application_type"], "native");
    assert_eq!(registration["client_name"], "auth-test");
    assert_eq!(registration["redirect_uris"], serde_json::json!([REDIRECT]));
    assert_eq!(registration["grant_types"], serde_json::json!(["authorization_code", "refresh_token"]));

    let (auth, server) = setup(AsConfig::default(), |_| {}).await;
    use_server(&server, oauth().protocol_version("2025-11-25").build()).await.unwrap();
    assert!(auth.requests("/register")[0].json.get("application_type").is_none());
}

#[tokio::test]
async fn a_new_authorization_server_gets_a_new_registration() {
    let issued = Issued::default();
    let as_config = |name: &str| AsConfig {
        registered_client_id: format!("{name}-client"),
        token_prefix: name.into(),
        ..AsConfig::default()
    };
    let first = AuthServer::start(as_config("as1"), &issued).await;
    let second = AuthServer::start(as_config("as2"), &issued).await;
    let mut config = RsConfig::new(&first.issuer);
    config.migrate_to = Some(second.issuer.clone());
    let server = McpServer::start(config, &issued).await;
    use_server(&server, oauth().build()).await.unwrap();

    assert_eq!(first.requests("/register").len(), 1);
    assert_eq!(second.requests("/register").len(), 1);
    let at_second: Vec<_> = second.requests("/authorize").into_iter().chain(second.requests("/token")).collect();
    assert_eq!(at_second.len(), 2);
    for request in &at_second {
        assert_eq!(request.param("client_id"), Some("as2-client"), "{}", request.path);
    }
    // The first server's token went out until the switch, then only the second's.
    let bearers = server.bearer_tokens();
    let switch = bearers.iter().position(|b| b == "Bearer as2-2").expect("the second server's token was used");
    assert!(bearers[..switch].iter().all(|b| b == "Bearer as1-2"), "{bearers:?}");
    assert!(bearers[switch..].iter().all(|b| b == "Bearer as2-2"), "{bearers:?}");
}

#[tokio::test]
async fn a_refresh_token_is_used_before_authorizing_again() {
    let config = AsConfig { refresh_tokens: true, ..AsConfig::default() };
    let (auth, server) = setup(config, |rs| rs.single_use_tokens = true).await;
    use_server(&server, oauth().build()).await.unwrap();
    assert_eq!(auth.requests("/authorize").len(), 1);
    let refreshes: Vec<_> =
        auth.requests("/token").into_iter().filter(|r| r.param("grant_type") == Some("refresh_token")).collect();
    assert_eq!(refreshes.len(), 2, "the listing and the call each needed a fresh token");
    assert_eq!(refreshes[0].param("refresh_token"), Some("refresh-2"));
    assert_eq!(refreshes[0].param("resource"), Some(server.url.as_str()));
    assert_eq!(refreshes[0].param("client_id"), Some("dcr-client"));
}

#[tokio::test]
async fn offline_access_only_when_the_server_lists_it() {
    let config =
        AsConfig { scopes_supported: Some(vec!["mcp:basic".into(), "offline_access".into()]), ..AsConfig::default() };
    let (auth, server) = setup(config, |rs| rs.prm_scopes = Some(vec!["mcp:basic".into()])).await;
    use_server(&server, oauth().build()).await.unwrap();
    assert_eq!(auth.requests("/authorize")[0].param("scope"), Some("mcp:basic offline_access"));

    let config = AsConfig { scopes_supported: Some(vec!["mcp:basic".into()]), ..AsConfig::default() };
    let (auth, server) = setup(config, |rs| rs.prm_scopes = Some(vec!["mcp:basic".into()])).await;
    // Even asked for explicitly, it is left out.
    use_server(&server, oauth().scopes(["offline_access"]).build()).await.unwrap();
    assert_eq!(auth.requests("/authorize")[0].param("scope"), Some("mcp:basic"));
}

#[tokio::test]
async fn without_an_authorizer_the_error_says_so() {
    let (auth, server) = setup(AsConfig::default(), |_| {}).await;
    let oauth = OAuth::builder().redirect_uri(REDIRECT).build();
    let error = use_server(&server, oauth).await.unwrap_err();
    assert!(matches!(auth_error(&error), AuthError::NoAuthorizer), "{error}");
    assert!(auth.requests("/authorize").is_empty());
}

#[tokio::test]
async fn the_loopback_authorizer_receives_the_browser_redirect() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    // The "browser": follows the authorization server's redirect to the loopback listener.
    let authorizer = LoopbackAuthorizer::new(port, |url| {
        let url = url.clone();
        tokio::spawn(async move {
            let page = reqwest::get(url).await.unwrap().text().await.unwrap();
            assert!(page.contains("Authorization complete"));
        });
        Ok(())
    });
    assert_eq!(authorizer.redirect_uri().unwrap().as_str(), format!("http://127.0.0.1:{port}/callback"));
    let (auth, server) = setup(AsConfig::default(), |_| {}).await;
    let oauth = OAuth::builder().authorizer(authorizer).build();
    use_server(&server, oauth).await.unwrap();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    assert_eq!(auth.requests("/authorize")[0].param("redirect_uri"), Some(redirect.as_str()));
    assert_eq!(auth.requests("/token")[0].param("redirect_uri"), Some(redirect.as_str()));
}

#[test]
fn secrets_never_show_in_debug_output() {
    let oauth = OAuth::builder().client_id("public-id").client_secret("very-secret-value").build();
    let debug = format!("{oauth:?}");
    assert!(debug.contains("public-id") && !debug.contains("very-secret-value"), "{debug}");
    let tokens = StoredTokens {
        access_token: Secret::new("access-token-value"),
        refresh_token: Some(Secret::new("refresh-token-value")),
        expires_at: None,
        scopes: vec!["mcp:basic".into()],
        dpop: false,
    };
    let debug = format!("{tokens:?}");
    assert!(!debug.contains("access-token-value") && !debug.contains("refresh-token-value"), "{debug}");
    assert_eq!(Secret::new("x").to_string(), "***");
    assert_eq!(Secret::new("x").expose(), "x");
}

// Extensions: grants without a user, and DPoP.

/// A P-256 key in PKCS#8 PEM (as the conformance suite hands them out) and its RFC 7638
/// thumbprint, both from the `jose` npm package.
const CLIENT_KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgR+yTyTSaYEjnrsQs
37AP1Nj61OQ3vueUYDRYyNYmej+hRANCAASy6g8LoJTx89z/O/C96osH1y8ytLyM
T9m3ev5g/OjAUy3tPKIR4FzSVTQpd0EyiTkI+VNUHBzOnXNub3APrVXY
-----END PRIVATE KEY-----
";
const CLIENT_KEY_JKT: &str = "6_xdkQT5PsBy7BSQuaKT_RRRjfHg3hVqeyjx0wUAlLo";

/// An authorization server without registration for a pre-registered client.
fn unattended_as(auth_methods: &[&str]) -> AsConfig {
    AsConfig {
        registration: false,
        auth_methods: auth_methods.iter().map(|m| m.to_string()).collect(),
        ..AsConfig::default()
    }
}

fn claims(jwt: &str) -> Value {
    serde_json::from_slice(&B64URL.decode(jwt.split('.').nth(1).unwrap()).unwrap()).unwrap()
}

fn assert_no_user(auth: &AuthServer) {
    assert!(auth.requests("/authorize").is_empty(), "a user was asked");
    assert!(auth.requests("/register").is_empty(), "the client registered");
}

#[tokio::test]
async fn client_credentials_with_a_secret_in_basic_or_in_the_body() {
    let mut config = unattended_as(&["client_secret_basic"]);
    config.basic = Some(("cc-client".into(), "cc-secret".into()));
    let (auth, server) = setup(config, |_| {}).await;
    let built = oauth().client_id("cc-client").client_secret("cc-secret").client_credentials().build();
    use_server(&server, built).await.unwrap();
    assert_no_user(&auth);
    let tokens = auth.requests("/token");
    assert_eq!(tokens.len(), 1);
    let token = &tokens[0];
    assert_eq!(token.param("grant_type"), Some("client_credentials"));
    assert_eq!(token.param("resource"), Some(server.url.as_str()));
    let basic = STANDARD.encode("cc-client:cc-secret");
    assert_eq!(token.header("authorization"), Some(format!("Basic {basic}").as_str()));
    assert_eq!(token.param("client_secret"), None);
    assert!(server.bearer_tokens().iter().all(|b| b == "Bearer access-1"), "{:?}", server.bearer_tokens());

    let (auth, server) = setup(unattended_as(&["client_secret_basic", "client_secret_post"]), |_| {}).await;
    let oauth = oauth()
        .client_id("cc-client")
        .client_secret("cc-secret")
        .client_auth_method(TokenEndpointAuthMethod::ClientSecretPost)
        .client_credentials()
        .build();
    use_server(&server, oauth).await.unwrap();
    let token = &auth.requests("/token")[0];
    assert_eq!(token.header("authorization"), None);
    assert_eq!(token.param("client_id"), Some("cc-client"));
    assert_eq!(token.param("client_secret"), Some("cc-secret"));
}

#[tokio::test]
async fn client_credentials_with_a_private_key_jwt_for_the_issuer() {
    let key = Es256Key::from_pem(CLIENT_KEY_PEM).unwrap();
    assert_eq!(key.thumbprint(), CLIENT_KEY_JKT);
    let mut config = unattended_as(&["private_key_jwt"]);
    // The mock verifies every assertion's signature, iss, sub, aud (the issuer), exp and jti.
    config.client_key = Some(oauth_mock::jwk_key(&key.public_jwk()).unwrap());
    let (auth, server) = setup(config, |rs| rs.single_use_tokens = true).await;
    let built = oauth().client_id("jwt-client").client_secret("unused").client_key(key).client_credentials().build();
    use_server(&server, built).await.unwrap();
    assert_no_user(&auth);
    // Single-use tokens: one grant per request, each with a fresh assertion.
    let tokens = auth.requests("/token");
    assert_eq!(tokens.len(), 3);
    let mut jtis = Vec::new();
    for token in &tokens {
        assert_eq!(token.param("grant_type"), Some("client_credentials"));
        assert_eq!(token.param("client_secret"), None);
        assert_eq!(token.header("authorization"), None);
        let claims = claims(token.param("client_assertion").unwrap());
        assert_eq!(claims["aud"], auth.issuer.as_str());
        assert_eq!(claims["iss"], "jwt-client");
        jtis.push(claims["jti"].as_str().unwrap().to_owned());
    }
    jtis.dedup();
    assert_eq!(jtis.len(), 3, "a fresh jti per assertion");

    // A key the server does not know: invalid_client, returned as is.
    let mut config = unattended_as(&["private_key_jwt"]);
    config.client_key = Some(oauth_mock::jwk_key(&Es256Key::generate().unwrap().public_jwk()).unwrap());
    let (auth, server) = setup(config, |_| {}).await;
    let oauth = oauth().client_id("jwt-client").client_key(Es256Key::from_pem(CLIENT_KEY_PEM).unwrap());
    let error = use_server(&server, oauth.client_credentials().build()).await.unwrap_err();
    assert!(
        matches!(auth_error(&error), AuthError::TokenEndpoint { status: 401, error: Some(e), .. } if e == "invalid_client"),
        "{error}"
    );
    assert_eq!(auth.requests("/token").len(), 1);
}

#[tokio::test]
async fn enterprise_managed_authorization_exchanges_the_id_token_then_presents_the_id_jag() {
    let issued = Issued::default();
    let idp = AuthServer::start(AsConfig::default(), &issued).await;
    let mut config = unattended_as(&["client_secret_basic"]);
    config.basic = Some(("xaa-client".into(), "xaa-secret".into()));
    let auth = AuthServer::start(config, &issued).await;
    let server = McpServer::start(RsConfig::new(&auth.issuer), &issued).await;
    let oauth = oauth()
        .client_id("xaa-client")
        .client_secret("xaa-secret")
        .enterprise_managed(format!("{}/token", idp.issuer), "idp-client", "the-id-token")
        .build();
    use_server(&server, oauth).await.unwrap();
    assert_no_user(&auth);
    // The IdP: only the token exchange (no metadata, no proof).
    assert_eq!(idp.paths(), ["/token"]);
    let exchange = &idp.requests("/token")[0];
    assert_eq!(exchange.param("grant_type"), Some("urn:ietf:params:oauth:grant-type:token-exchange"));
    assert_eq!(exchange.param("subject_token"), Some("the-id-token"));
    assert_eq!(exchange.param("subject_token_type"), Some("urn:ietf:params:oauth:token-type:id_token"));
    assert_eq!(exchange.param("requested_token_type"), Some("urn:ietf:params:oauth:token-type:id-jag"));
    assert_eq!(exchange.param("audience"), Some(auth.issuer.as_str()));
    assert_eq!(exchange.param("resource"), Some(server.url.as_str()));
    assert_eq!(exchange.param("client_id"), Some("idp-client"));
    assert_eq!(exchange.header("authorization"), None);
    // The authorization server: the JWT bearer grant with the ID-JAG, as the MCP client.
    let tokens = auth.requests("/token");
    assert_eq!(tokens.len(), 1);
    assert_eq!(tokens[0].param("grant_type"), Some("urn:ietf:params:oauth:grant-type:jwt-bearer"));
    assert_eq!(tokens[0].param("assertion"), Some("id-jag-1"));
    assert_eq!(tokens[0].param("resource"), Some(server.url.as_str()));
    assert!(server.bearer_tokens().iter().all(|b| b == "Bearer access-1"));
}

#[tokio::test]
async fn workload_identity_jwt_bearer_is_one_request_without_retry_or_fallback() {
    let (auth, server) = setup(unattended_as(&["none"]), |_| {}).await;
    use_server(&server, oauth().client_id("workload").jwt_bearer("workload-jwt").build()).await.unwrap();
    assert_no_user(&auth);
    let tokens = auth.requests("/token");
    assert_eq!(tokens.len(), 1);
    assert_eq!(tokens[0].param("grant_type"), Some("urn:ietf:params:oauth:grant-type:jwt-bearer"));
    assert_eq!(tokens[0].param("assertion"), Some("workload-jwt"));
    assert_eq!(tokens[0].param("client_id"), Some("workload"));
    assert_eq!(tokens[0].param("resource"), Some(server.url.as_str()));

    let config = AsConfig { refuse_jwt_bearer: true, ..unattended_as(&["none"]) };
    let (auth, server) = setup(config, |_| {}).await;
    let error = use_server(&server, oauth().jwt_bearer("workload-jwt").build()).await.unwrap_err();
    match auth_error(&error) {
        AuthError::TokenEndpoint { status: 400, error: Some(code), .. } => assert_eq!(code, "invalid_grant"),
        other => panic!("{other}"),
    }
    assert_eq!(auth.requests("/token").len(), 1, "retried after an error");
    assert_no_user(&auth);
    assert_eq!(auth.requests("/token")[0].param("client_id"), None);
}

/// The DPoP proof of a request, checked (signature with its own key, `htm`, `htu`, `ath`).
fn proof(seen: &Seen, method: &str, url: &str, token: Option<&str>) -> (String, Value) {
    oauth_mock::verify_dpop(seen.header("dpop").expect("a DPoP proof"), method, url, token).unwrap()
}

fn dpop_setup(nonces: bool) -> (AsConfig, impl FnOnce(&mut RsConfig)) {
    let config = AsConfig { dpop: true, dpop_nonce: nonces.then(|| "as-nonce".to_owned()), ..AsConfig::default() };
    (config, move |rs: &mut RsConfig| {
        rs.dpop = true;
        rs.dpop_nonce = nonces.then(|| "rs-nonce".to_owned());
    })
}

/// The authorized MCP requests and their proofs' claims.
fn dpop_requests(server: &McpServer, jkt: &str) -> Vec<Value> {
    let log = server.log.lock().unwrap();
    let authorized: Vec<&Seen> = log.iter().filter(|s| s.header("authorization").is_some()).collect();
    assert!(!authorized.is_empty());
    authorized
        .iter()
        .map(|seen| {
            let token = seen.header("authorization").unwrap().strip_prefix("DPoP ").expect("the DPoP scheme");
            let (thumbprint, claims) = proof(seen, "POST", &server.url, Some(token));
            assert_eq!(thumbprint, jkt, "the token's key signs the resource proofs");
            claims
        })
        .collect()
}

#[tokio::test]
async fn dpop_binds_the_code_flow_token_and_proves_every_request() {
    let (config, rs) = dpop_setup(false);
    let (auth, server) = setup(config, rs).await;
    let key = Es256Key::from_pem(CLIENT_KEY_PEM).unwrap();
    use_server(&server, oauth().dpop_key(key).build()).await.unwrap();
    assert!(server.dpop_errors.lock().unwrap().is_empty(), "{:?}", server.dpop_errors);
    assert_eq!(auth.requests("/authorize").len(), 1);
    let tokens = auth.requests("/token");
    assert_eq!(tokens.len(), 1);
    let token_url = format!("{}/token", auth.issuer);
    let (jkt, claims) = proof(&tokens[0], "POST", &token_url, None);
    assert_eq!(jkt, CLIENT_KEY_JKT);
    assert!(claims.get("nonce").is_none());
    let proofs = dpop_requests(&server, &jkt);
    assert_eq!(proofs.len(), 3);
    assert!(proofs.iter().all(|c| c.get("nonce").is_none()));

    // dpop(true): a generated key, the same for token and resource proofs.
    let (config, rs) = dpop_setup(false);
    let (auth, server) = setup(config, rs).await;
    use_server(&server, oauth().dpop(true).build()).await.unwrap();
    let (jkt, _) = proof(&auth.requests("/token")[0], "POST", &format!("{}/token", auth.issuer), None);
    assert_ne!(jkt, CLIENT_KEY_JKT);
    assert_eq!(dpop_requests(&server, &jkt).len(), 3);
    assert!(server.dpop_errors.lock().unwrap().is_empty(), "{:?}", server.dpop_errors);
}

#[tokio::test]
async fn dpop_nonces_of_both_servers_are_sent_once_demanded_without_authorizing_again() {
    let (config, rs) = dpop_setup(true);
    let (auth, server) = setup(config, rs).await;
    use_server(&server, oauth().dpop(true).build()).await.unwrap();
    assert!(server.dpop_errors.lock().unwrap().is_empty(), "{:?}", server.dpop_errors);
    assert_eq!(auth.requests("/authorize").len(), 1, "a nonce demand is not a reason to authorize");
    // The authorization server: a valid proof without nonce, then the same request with it.
    let tokens = auth.requests("/token");
    assert_eq!(tokens.len(), 2);
    let token_url = format!("{}/token", auth.issuer);
    let (jkt, first) = proof(&tokens[0], "POST", &token_url, None);
    let (_, second) = proof(&tokens[1], "POST", &token_url, None);
    assert!(first.get("nonce").is_none());
    assert_eq!(second["nonce"], "as-nonce");
    assert_ne!(first["jti"], second["jti"]);
    assert_eq!(tokens[0].param("code"), tokens[1].param("code"));
    // The MCP server: the first authorized request is resent with its nonce, later ones carry it.
    let nonces: Vec<Option<String>> =
        dpop_requests(&server, &jkt).iter().map(|c| c["nonce"].as_str().map(str::to_owned)).collect();
    assert_eq!(nonces.len(), 4);
    assert_eq!(nonces[0], None);
    assert!(nonces[1..].iter().all(|n| n.as_deref() == Some("rs-nonce")), "{nonces:?}");
}

#[tokio::test]
async fn dpop_proofs_on_the_session_get_stream_and_delete() {
    let (config, rs) = dpop_setup(true);
    let (_auth, server) = setup(config, rs).await;
    let client = Client::builder("auth-test", "1.0.0")
        .protocol_versions(["2025-11-25"])
        .era(EraPreference::Legacy)
        .oauth(oauth().protocol_version("2025-11-25").dpop(true).build())
        .connect_http(&server.url)
        .await
        .unwrap();
    client.all_tools().await.unwrap();
    client.close().await;
    assert!(server.dpop_errors.lock().unwrap().is_empty(), "{:?}", server.dpop_errors);
    let log = server.log.lock().unwrap();
    for method in ["GET", "DELETE"] {
        let seen =
            log.iter().find(|s| s.method == method && s.path == "/mcp").unwrap_or_else(|| panic!("no {method} /mcp"));
        let token = seen.header("authorization").unwrap().strip_prefix("DPoP ").unwrap();
        let (_, claims) = proof(seen, method, &server.url, Some(token));
        assert_eq!(claims["nonce"], "rs-nonce");
    }
}

#[test]
fn extension_secrets_never_show_in_debug_output() {
    let oauth = OAuth::builder()
        .client_id("public-id")
        .client_secret("client-secret-value")
        .client_key(Es256Key::from_pem(CLIENT_KEY_PEM).unwrap())
        .enterprise_managed("http://127.0.0.1:1/token", "idp-client", "id-token-value")
        .dpop_key(Es256Key::from_pem(CLIENT_KEY_PEM).unwrap());
    let builder = format!("{oauth:?}");
    let built = format!("{:?}", oauth.build());
    let workload = format!("{:?}", OAuth::builder().jwt_bearer("workload-assertion-value").build());
    let private_scalar = "R+yTyTSaYEjnrsQs";
    for debug in [&builder, &built, &workload] {
        for secret in ["client-secret-value", "id-token-value", "workload-assertion-value", private_scalar] {
            assert!(!debug.contains(secret), "{secret} in {debug}");
        }
    }
    assert!(built.contains("public-id") && built.contains(CLIENT_KEY_JKT), "{built}");
}

#[tokio::test]
async fn a_pinned_authorization_server_is_the_only_one_asked() {
    // The protected server's metadata names `auth`; the client trusts only another issuer.
    let mut config = unattended_as(&["client_secret_basic"]);
    config.basic = Some(("cc-client".into(), "cc-secret".into()));
    let (auth, server) = setup(config, |_| {}).await;
    let pinned = |issuer: &str| {
        oauth().client_id("cc-client").client_secret("cc-secret").client_credentials().authorization_server(issuer)
    };
    let error = use_server(&server, pinned("https://trusted.example").build()).await.unwrap_err();
    match auth_error(&error) {
        AuthError::UntrustedAuthorizationServer { trusted, listed } => {
            assert_eq!(
                (trusted.as_str(), listed.as_slice()),
                ("https://trusted.example", [auth.issuer.clone()].as_slice())
            );
        }
        other => panic!("{other}"),
    }
    // Figure: 0 requests of any kind reached the server the metadata named.
    assert_eq!(auth.log.lock().unwrap().len(), 0, "{:?}", auth.log.lock().unwrap());
    // Pinned to the issuer it names, the same client gets its token there.
    use_server(&server, pinned(&auth.issuer).build()).await.unwrap();
    assert_eq!(auth.requests("/token").len(), 1);
}
