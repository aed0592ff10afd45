//! OAuth authorization against a mock protected MCP server and mock authorization servers on
//! 127.0.0.1: each test asserts what the mocks saw.
#![cfg(feature = "auth")]

#[path = "support/oauth_mock.rs"]
mod oauth_mock;

use mcp_client::auth::{
    AuthError, Authorizer, HeadlessAuthorizer, LoopbackAuthorizer, OAuth, OAuthBuilder, Secret, StoredTokens,
};
use mcp_client::{Client, EraPreference, Error};
use oauth_mock::{AsConfig, AuthServer, Iss, Issued, McpServer, RsConfig};

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
    client.call_tool("test-tool", None).await?;
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
    };
    let debug = format!("{tokens:?}");
    assert!(!debug.contains("access-token-value") && !debug.contains("refresh-token-value"), "{debug}");
    assert_eq!(Secret::new("x").to_string(), "***");
    assert_eq!(Secret::new("x").expose(), "x");
}
