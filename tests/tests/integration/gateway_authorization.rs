//! mcp-gateway as an OAuth 2.1 resource server in front of three upstreams, with a real
//! authorization server (`oidc-provider`, tests/auth/provider.mjs): each caller sees and uses the
//! upstreams and tools its token's scopes and its principal allow (by the gateway's
//! configuration), a protected upstream gets the gateway's own token (client credentials),
//! never the caller's, and `[[policy]]` rules read the claims of the callers' JWTs (`groups`).

use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_gateway::{Config, Gateway};
use mcp_server::auth::{JwtVerifier, ResourceServer};
use mcp_server::http::HttpConfig;
use mcp_server::{Context, Error, NoArguments, Server, ToolRoute};
use mcp_tests::oidc::{KEY_ID, OidcProvider};
use reqwest::StatusCode;
use reqwest::header::WWW_AUTHENTICATE;
use serde_json::{Value, json};

fn server(name: &str, tools: &[&'static str]) -> Server {
    let mut builder = Server::builder(name, "1.0.0");
    for &tool in tools {
        builder = builder.tool(ToolRoute::new(tool, move |ctx: Context, _: NoArguments| async move {
            // What the upstream was called with: the gateway's token, if any.
            let token = ctx
                .token()
                .map(|token| format!("{} for {}", token.client_id.clone().unwrap_or_default(), token.claims["aud"]));
            Ok::<_, Error>(format!("{tool} ({})", token.unwrap_or_else(|| "no token".into())))
        }));
    }
    builder.build().unwrap()
}

/// Serves `server` on loopback (behind `authorization`, if given); its URL.
async fn serve(server: Server, protect: Option<&str>) -> String {
    serve_layered(server, protect, |router| router).await
}

/// [`serve`], with `layer` applied to the server's router.
async fn serve_layered(
    server: Server,
    protect: Option<&str>,
    layer: impl FnOnce(axum::Router) -> axum::Router,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let mut config = HttpConfig::default();
    if let Some(issuer) = protect {
        let resource = ResourceServer::builder(&url, JwtVerifier::new(issuer, &url))
            .authorization_server(issuer)
            .required_scopes(["notes:read"])
            .build();
        config.authorization = Some(resource);
    }
    let limits = mcp_server::http::ConnectionLimits::from(&config);
    let app = layer(mcp_server::http::router(server, config));
    tokio::spawn(mcp_server::http::serve_router(listener, app, limits, std::future::pending()));
    url
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

struct Caller<'a> {
    url: &'a str,
    token: Option<String>,
    http: reqwest::Client,
}

impl Caller<'_> {
    async fn post(&self, method: &str, name: Option<&str>, params: Value) -> reqwest::Response {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let mut request = self
            .http
            .post(self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .json(&body);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        request.send().await.unwrap()
    }

    async fn tools(&self) -> Vec<String> {
        let response: Value = self.post("tools/list", None, json!({})).await.json().await.unwrap();
        let tools = response["result"]["tools"].as_array().unwrap_or_else(|| panic!("{response}"));
        let mut names: Vec<String> = tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
        names.sort();
        names
    }

    async fn call(&self, tool: &str) -> reqwest::Response {
        self.post("tools/call", Some(tool), json!({ "name": tool, "arguments": {} })).await
    }

    async fn text(&self, tool: &str) -> String {
        let response: Value = self.call(tool).await.json().await.unwrap();
        response["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{tool}: {response}")).to_owned()
    }
}

/// The status and `WWW-Authenticate` of a refusal.
fn challenge(response: &reqwest::Response) -> (StatusCode, String) {
    let challenge = response.headers().get(WWW_AUTHENTICATE).map(|v| v.to_str().unwrap().to_owned());
    (response.status(), challenge.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_caller_sees_and_uses_what_its_scopes_and_principal_allow() {
    let provider = OidcProvider::start();
    let issuer = provider.issuer.clone();
    let open = serve(server("open", &["hello"]), None).await;
    let notes = serve(server("notes", &["list_notes", "add_note"]), Some(&issuer)).await;
    let admin = serve(server("admin", &["secret"]), None).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let config = Config::from_toml(&format!(
        r#"
        [authorization]
        resource = "{url}"
        issuer = "{issuer}"
        list_only_permitted = true
        [[upstream]]
        name = "open"
        url = "{open}"
        [[upstream]]
        name = "notes"
        url = "{notes}"
        scopes = ["notes:read"]
        entry_scopes = {{ add_note = ["notes:write"] }}
        oauth = {{ issuer = "{issuer}", client_id = "test-cc", client_secret = "test-cc-secret", scopes = ["notes:read"] }}
        [[upstream]]
        name = "admin"
        url = "{admin}"
        principals = ["alice"]
        "#
    ))
    .unwrap();
    let gateway = Gateway::start(&config).await.unwrap();
    assert_eq!(gateway.connected(), ["open", "notes", "admin"], "the gateway got its own token for notes");
    let app = gateway.router(gateway.http_config());
    let limits = mcp_server::http::ConnectionLimits::from(&HttpConfig::default());
    tokio::spawn(mcp_server::http::serve_router(listener, app, limits, std::future::pending()));

    // Tokens of the provider's key for the gateway, for two people.
    let mint = |subject: &str, scope: &str| {
        let claims = json!({
            "iss": issuer, "aud": url, "sub": subject, "client_id": "agent", "scope": scope,
            "iat": now(), "exp": now() + 600, "jti": format!("{subject}-{scope}"),
        });
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(KEY_ID.to_owned());
        header.typ = Some("at+jwt".to_owned());
        jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ec_pem(provider.key_pem.as_bytes()).unwrap()).unwrap()
    };
    let caller = |token: Option<String>| Caller { url: &url, token, http: reqwest::Client::new() };

    // (Without `list_only_permitted`, what needs more scopes would be listed, as a server's own
    // routes are, and its call refused with 403 all the same.)
    // No token: 401, naming the gateway's Protected Resource Metadata.
    let (status, header) = challenge(&caller(None).call("open_hello").await);
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(header.starts_with("Bearer resource_metadata=\""), "{header}");

    // Bob may read notes: he sees neither the tool that writes nor the upstream for Alice.
    let bob = caller(Some(mint("bob", "notes:read")));
    assert_eq!(bob.tools().await, ["notes_list_notes", "open_hello"]);
    // Lists that differ by caller are never for a shared cache (issue 42: they were "public").
    for method in ["tools/list", "prompts/list", "resources/list", "resources/templates/list"] {
        let list: Value = bob.post(method, None, json!({})).await.json().await.unwrap();
        assert_eq!(list["result"]["cacheScope"], "private", "{method}: {list}");
    }
    // The notes upstream was called with the gateway's token, issued for it, not with Bob's.
    assert_eq!(bob.text("notes_list_notes").await, format!("list_notes (test-cc for \"{notes}\")"));
    assert_eq!(bob.text("open_hello").await, "hello (no token)");
    // Writing needs a scope he may ask for (step-up); the upstream for Alice does not exist to him.
    let (status, header) = challenge(&bob.call("notes_add_note").await);
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(header.starts_with("Bearer error=\"insufficient_scope\", scope=\"notes:read notes:write\""), "{header}");
    let hidden: Value = bob.call("admin_secret").await.json().await.unwrap();
    assert_eq!(hidden["error"]["code"], -32602, "{hidden}");
    assert_eq!(hidden["error"]["message"], "Unknown tool: admin_secret");

    // Alice may write notes and use her upstream.
    let alice = caller(Some(mint("alice", "notes:read notes:write")));
    assert_eq!(alice.tools().await, ["admin_secret", "notes_add_note", "notes_list_notes", "open_hello"]);
    assert!(alice.text("notes_add_note").await.starts_with("add_note (test-cc for"));
    assert_eq!(alice.text("admin_secret").await, "secret (no token)");

    // A token without scopes: only the open upstream.
    let nobody = caller(Some(mint("carol", "")));
    assert_eq!(nobody.tools().await, ["open_hello"]);
    let (status, header) = challenge(&nobody.call("notes_list_notes").await);
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(header.contains("scope=\"notes:read\""), "{header}");
}

/// An authorization server that counts every request it gets and answers each with metadata
/// naming itself (so that a client that trusted it would go on to its token endpoint).
async fn counting_authorization_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let requests = std::sync::Arc::new(AtomicUsize::new(0));
    let (counted, named) = (std::sync::Arc::clone(&requests), issuer.clone());
    let app = axum::Router::new().fallback(move || {
        counted.fetch_add(1, Ordering::SeqCst);
        let metadata = json!({ "issuer": named, "token_endpoint": format!("{named}/token"),
                               "grant_types_supported": ["client_credentials"] });
        async move { axum::Json(metadata) }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (issuer, requests)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateways_credentials_go_only_to_its_configured_issuer_and_never_to_a_caller() {
    use std::sync::atomic::Ordering;
    let provider = OidcProvider::start();
    let issuer = provider.issuer.clone();
    let (hostile_issuer, hostile_requests) = counting_authorization_server().await;
    // An upstream whose metadata names the hostile authorization server.
    let lured = serve(server("lured", &["hello"]), Some(&hostile_issuer)).await;
    // One that names the real one, and one (also the real one's) whose error page for a call
    // echoes the request's headers, the gateway's token among them.
    let honest = serve(server("honest", &["hello"]), Some(&issuer)).await;
    let echo_headers = |request: axum::extract::Request, next: axum::middleware::Next| async move {
        use axum::response::IntoResponse as _;
        if request.headers().get("mcp-method").is_some_and(|m| m == "tools/call") {
            let headers: String = request
                .headers()
                .iter()
                .map(|(name, value)| format!("{name}: {}\n", value.to_str().unwrap()))
                .collect();
            return (axum::http::StatusCode::INTERNAL_SERVER_ERROR, headers).into_response();
        }
        next.run(request).await
    };
    let echoing = serve_layered(server("echoing", &["hello"]), Some(&issuer), |router| {
        router.layer(axum::middleware::from_fn(echo_headers))
    })
    .await;
    let oauth = format!(
        r#"oauth = {{ issuer = "{issuer}", client_id = "test-cc", client_secret = "test-cc-secret", scopes = ["notes:read"] }}"#
    );
    let config = Config::from_toml(&format!(
        "[[upstream]]\nname = \"lured\"\nurl = \"{lured}\"\n{oauth}\n\
         [[upstream]]\nname = \"honest\"\nurl = \"{honest}\"\n{oauth}\n\
         [[upstream]]\nname = \"echoing\"\nurl = \"{echoing}\"\nera = \"modern\"\n{oauth}\n"
    ))
    .unwrap();
    let gateway = Gateway::start(&config).await.unwrap();
    // Figure: the hostile authorization server got 0 requests (before: the metadata request and
    // the token request with `test-cc:test-cc-secret`); the lured upstream is down saying why.
    assert_eq!(hostile_requests.load(Ordering::SeqCst), 0, "requests to the hostile authorization server");
    let states = gateway.upstreams();
    let why = states[0].1.as_ref().expect_err("the lured upstream is refused");
    assert!(
        why.contains(&format!(
            "names the authorization server(s) {hostile_issuer}, not the configured issuer {issuer}"
        )),
        "{why}"
    );
    assert_eq!(states[1..], [("honest".to_owned(), Ok(())), ("echoing".to_owned(), Ok(()))]);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(mcp_server::http::serve(listener, gateway.server().clone(), HttpConfig::default()));
    let caller = Caller { url: &url, token: None, http: reqwest::Client::new() };
    // The real issuer's token was used for the honest upstream.
    assert_eq!(caller.text("honest_hello").await, format!("hello (test-cc for \"{honest}\")"));
    // Figure: the echoed page reaches the caller with 0 credentials: no token (a JWT starts
    // `eyJ`), no `Bearer`, no secret; the status and a request id do.
    let failed: Value = caller.call("echoing_hello").await.json().await.unwrap();
    let message = failed["error"]["message"].as_str().unwrap_or_else(|| panic!("{failed}"));
    for leak in ["eyJ", "Bearer", "test-cc-secret", "authorization"] {
        assert!(!message.contains(leak), "{leak} reached the caller: {message}");
    }
    assert!(
        message.contains("upstream `echoing` failed") && message.contains("HTTP status 500 (request id "),
        "{message}"
    );
}

/// A token of the provider's key for the gateway at `resource`.
fn mint(provider: &OidcProvider, resource: &str, subject: &str, scope: &str) -> String {
    let claims = json!({
        "iss": provider.issuer, "aud": resource, "sub": subject, "client_id": "agent", "scope": scope,
        "iat": now(), "exp": now() + 600, "jti": format!("{subject}-{scope}-{}", now()),
    });
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(KEY_ID.to_owned());
    header.typ = Some("at+jwt".to_owned());
    jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ec_pem(provider.key_pem.as_bytes()).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_takes_the_same_decision_as_a_read() {
    use mcp_server::types::{Resource, SubscriptionFilter};
    let provider = OidcProvider::start();
    let issuer = provider.issuer.clone();
    let notes = Server::builder("notes", "1.0.0")
        .resource(mcp_server::ResourceRoute::new(
            Resource { uri: "notes://today".into(), name: "today".into(), ..Default::default() },
            |_: Context, _uri: String| async move { Ok::<_, Error>("nothing yet".to_owned()) },
        ))
        .build()
        .unwrap();
    let notes = serve(notes, None).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let config = Config::from_toml(&format!(
        "[authorization]\nresource = \"{url}\"\nissuer = \"{issuer}\"\n\
         [[upstream]]\nname = \"notes\"\nurl = \"{notes}\"\nscopes = [\"notes:read\"]\n"
    ))
    .unwrap();
    let gateway = Gateway::start(&config).await.unwrap();
    let app = gateway.router(gateway.http_config());
    let limits = mcp_server::http::ConnectionLimits::from(&HttpConfig::default());
    tokio::spawn(mcp_server::http::serve_router(listener, app, limits, std::future::pending()));
    let connect = async |token: String| {
        mcp_client::Client::builder("subscriber", "1.0.0")
            .era(mcp_client::EraPreference::Legacy)
            .http_header("Authorization", format!("Bearer {token}"))
            .connect_http(&url)
            .await
            .unwrap()
    };
    let filter =
        SubscriptionFilter { resource_subscriptions: Some(vec!["notes://today".into()]), ..Default::default() };
    // Figure: a token without `notes:read` gets 0 of 2 (read refused, subscription refused;
    // before, the subscription was taken: the listing shows what needs more scopes).
    let carol = connect(mint(&provider, &url, "carol", "")).await;
    let read = carol.read_resource("notes://today").await.unwrap_err().to_string();
    assert!(read.contains("403") || read.contains("insufficient_scope"), "{read}");
    let subscribed = carol.listen(filter.clone()).await.err().expect("the subscription is refused").to_string();
    assert!(subscribed.contains("Resource not found: notes://today"), "{subscribed}");
    // With the scope, both.
    let bob = connect(mint(&provider, &url, "bob", "notes:read")).await;
    assert!(bob.read_resource("notes://today").await.is_ok());
    assert!(bob.listen(filter).await.is_ok());
}

/// Issue 44: an `[authorization]` issuer that differs from its own metadata's by a slash was a
/// gateway answering 503 to every caller; now it does not start, and says both and the fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_whose_metadata_names_another_is_a_start_error_naming_both() {
    let (issuer, _) = counting_authorization_server().await;
    let open = serve(server("open", &["hello"]), None).await;
    let config = Config::from_toml(&format!(
        "[authorization]\nresource = \"http://127.0.0.1:9/mcp\"\nissuer = \"{issuer}/\"\n\
         [[upstream]]\nname = \"open\"\nurl = \"{open}\"\n"
    ))
    .unwrap();
    let error = Gateway::start(&config).await.err().expect("refused").to_string();
    let named = format!("names the issuer \"{issuer}\", not \"{issuer}/\" as configured: drop the trailing `/`");
    assert!(error.starts_with("invalid configuration: [authorization] issuer: "), "{error}");
    assert!(error.contains(&named), "{error}");
}

/// A REST API (issue 46: an `openapi` upstream) protected by the provider: its document open at
/// `/openapi.json`, its one operation under `/v1` wanting a token issued for `/v1` (a 401 names
/// its Protected Resource Metadata); the operation answers with what the token says. Its base URL.
async fn protected_api(issuer: &str) -> String {
    use axum::http::HeaderMap;
    use axum::response::IntoResponse as _;
    use mcp_server::auth::TokenVerifier as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let base = format!("{origin}/v1");
    let verifier = std::sync::Arc::new(JwtVerifier::new(issuer, &base));
    let metadata = json!({ "resource": base, "authorization_servers": [issuer], "scopes_supported": ["notes:read"] });
    let document = json!({
        "openapi": "3.1.0",
        "info": { "title": "Who", "version": "1" },
        "servers": [{ "url": "/v1" }],
        "paths": { "/whoami": { "get": {
            "operationId": "whoami",
            "responses": { "200": { "description": "the token's client and audience", "content": {
                "application/json": { "schema": { "type": "object" } }
            } } }
        } } }
    });
    let challenge = format!("Bearer resource_metadata=\"{origin}/.well-known/oauth-protected-resource/v1\"");
    let whoami = move |headers: HeaderMap| {
        let (verifier, challenge) = (verifier.clone(), challenge.clone());
        async move {
            let bearer = headers.get("authorization").and_then(|v| v.to_str().ok()?.strip_prefix("Bearer "));
            let verified = match bearer {
                Some(token) => verifier.verify(token).await.ok(),
                None => None,
            };
            match verified {
                Some(token) => {
                    let mut said = json!({ "client_id": token.client_id, "aud": token.claims["aud"] });
                    // Said when the token has a subject of its own (one exchanged for a caller's).
                    if let Some(subject) = token.claims.get("sub").filter(|_| token.claims.contains_key("act")) {
                        said["sub"] = subject.clone();
                        said["token"] = json!(bearer);
                    }
                    axum::Json(said).into_response()
                }
                None => (StatusCode::UNAUTHORIZED, [(WWW_AUTHENTICATE, challenge)], "a token, please").into_response(),
            }
        }
    };
    let app = axum::Router::new()
        .route("/openapi.json", axum::routing::get(move || std::future::ready(axum::Json(document.clone()))))
        .route(
            "/.well-known/oauth-protected-resource/v1",
            axum::routing::get(move || std::future::ready(axum::Json(metadata.clone()))),
        )
        .route("/v1/whoami", axum::routing::get(whoami));
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openapi_upstream_calls_its_api_with_the_gateways_own_token() {
    let provider = OidcProvider::start();
    let issuer = provider.issuer.clone();
    let base = protected_api(&issuer).await;
    let origin = base.trim_end_matches("/v1");
    let config = Config::from_toml(&format!(
        r#"
        [[upstream]]
        name = "who"
        openapi = "{origin}/openapi.json"
        oauth = {{ issuer = "{issuer}", client_id = "test-cc", client_secret = "test-cc-secret", scopes = ["notes:read"] }}
        "#
    ))
    .unwrap();
    let gateway = Gateway::start(&config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let limits = mcp_server::http::ConnectionLimits::from(&HttpConfig::default());
    let app = gateway.router(gateway.http_config());
    tokio::spawn(mcp_server::http::serve_router(listener, app, limits, std::future::pending()));
    let caller = Caller { url: &url, token: None, http: reqwest::Client::new() };
    // The API's 401 got the gateway its own token (client credentials) for the API's resource.
    let answer: Value = caller.call("who_whoami").await.json().await.unwrap();
    let result = &answer["result"];
    assert_eq!(result["isError"], Value::Null, "{answer}");
    assert_eq!(result["structuredContent"], json!({ "client_id": "test-cc", "aud": base }), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openapi_upstream_acting_as_the_caller_gets_each_callers_exchanged_token() {
    let provider = OidcProvider::start();
    let issuer = provider.issuer.clone();
    let base = protected_api(&issuer).await;
    let origin = base.trim_end_matches("/v1");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let config = Config::from_toml(&format!(
        r#"
        [authorization]
        resource = "{url}"
        issuer = "{issuer}"
        [[upstream]]
        name = "who"
        openapi = "{origin}/openapi.json"
        identity = "exchange"
        oauth = {{ issuer = "{issuer}", client_id = "gateway", client_secret = "gateway-secret", scopes = ["notes:read"] }}
        "#
    ))
    .unwrap();
    let gateway = Gateway::start(&config).await.unwrap();
    let limits = mcp_server::http::ConnectionLimits::from(&HttpConfig::default());
    let app = gateway.router(gateway.http_config());
    tokio::spawn(mcp_server::http::serve_router(listener, app, limits, std::future::pending()));
    for subject in ["alice", "bob"] {
        let token = mint(&provider, &url, subject, "notes:read");
        let caller = Caller { url: &url, token: Some(token.clone()), http: reqwest::Client::new() };
        let answer: Value = caller.call("who_whoami").await.json().await.unwrap();
        let said = &answer["result"]["structuredContent"];
        // The API sees the caller, with a token issued for the API to the gateway, not the
        // caller's own.
        assert_eq!(
            (&said["sub"], &said["aud"], &said["client_id"]),
            (&json!(subject), &json!(base), &json!("gateway"))
        );
        assert_ne!(said["token"], json!(token), "the caller's own token reached the API");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_rules_read_the_groups_claim_of_jwt_access_tokens() {
    let provider = OidcProvider::start();
    let issuer = provider.issuer.clone();
    let files = serve(server("files", &["read", "purge_delete"]), None).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let config = Config::from_toml(&format!(
        r#"
        [authorization]
        resource = "{url}"
        issuer = "{issuer}"
        [[upstream]]
        name = "files"
        url = "{files}"
        [[policy]]
        name = "ops-delete"
        when = 'entry.name.endsWith("_delete")'
        allow = '"ops" in principal.claims.groups'
        "#
    ))
    .unwrap();
    let gateway = Gateway::start(&config).await.unwrap();
    let app = gateway.router(gateway.http_config());
    let limits = mcp_server::http::ConnectionLimits::from(&HttpConfig::default());
    tokio::spawn(mcp_server::http::serve_router(listener, app, limits, std::future::pending()));

    // JWTs of the provider's key (verified with its JWKS), with a `groups` claim or none.
    let mint = |subject: &str, groups: Option<Value>| {
        let mut claims = json!({
            "iss": issuer, "aud": url, "sub": subject, "client_id": "agent", "scope": "mcp",
            "iat": now(), "exp": now() + 600, "jti": format!("{subject}-groups"),
        });
        if let Some(groups) = groups {
            claims["groups"] = groups;
        }
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(KEY_ID.to_owned());
        header.typ = Some("at+jwt".to_owned());
        jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ec_pem(provider.key_pem.as_bytes()).unwrap()).unwrap()
    };
    let caller = |token: String| Caller { url: &url, token: Some(token), http: reqwest::Client::new() };
    let alice = caller(mint("alice", Some(json!(["ops", "dev"]))));
    let bob = caller(mint("bob", Some(json!(["dev"]))));
    let carol = caller(mint("carol", None));

    assert_eq!(alice.tools().await, ["files_purge_delete", "files_read"]);
    assert_eq!(alice.text("files_purge_delete").await, "purge_delete (no token)");
    for (who, refused) in [("bob", &bob), ("carol", &carol)] {
        assert_eq!(refused.tools().await, ["files_read"], "{who}");
        let answer: Value = refused.call("files_purge_delete").await.json().await.unwrap();
        assert_eq!(answer["error"]["code"], -32600, "{who}: {answer}");
        assert_eq!(answer["error"]["data"]["policy"], "ops-delete", "{who}: {answer}");
        assert_eq!(refused.text("files_read").await, "read (no token)", "{who}");
    }
}
