//! mcp-gateway acting as its caller (`identity = "exchange"`), with a real authorization server
//! (`oidc-provider`, tests/auth/provider.mjs, its RFC 8693 token exchange): each caller's token is
//! exchanged for a token of the upstream, as the gateway's client, and the upstream (a protected
//! mcp-server) serves the call as that caller. The caller's own token never reaches an upstream.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::response::IntoResponse as _;
use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_gateway::{Config, Gateway};
use mcp_server::auth::{JwtVerifier, ResourceServer};
use mcp_server::http::HttpConfig;
use mcp_server::types::{CompleteResultCompletion, ContentBlock, Resource};
use mcp_server::{Context, Error, NoArguments, PromptRoute, ResourceRoute, Server, ToolRoute};
use mcp_tests::oidc::{KEY_ID, OidcProvider};
use serde_json::{Value, json};

/// One request as an upstream saw it, before anything of its own checked it.
#[derive(Debug, Clone)]
struct Request {
    /// The `Authorization` header, whole.
    authorization: Option<String>,
    /// The claims of its token (a JWT), read without checking it.
    claims: Value,
    /// `Mcp-Session-Id` (legacy era).
    session: Option<String>,
    status: u16,
}

/// What a protected upstream saw, and the tokens it refuses (401, as though revoked).
#[derive(Default)]
struct Upstream {
    requests: Mutex<Vec<Request>>,
    refused_ids: Mutex<HashSet<String>>,
    refused_subjects: Mutex<HashSet<String>>,
}

impl Upstream {
    fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// The requests made with `subject`'s tokens from the `from`th on.
    fn of(&self, subject: &str, from: usize) -> Vec<Request> {
        self.requests()[from..].iter().filter(|r| r.claims["sub"] == subject).cloned().collect()
    }
}

/// The claims of a JWT, unchecked (`Value::Null` for anything else).
fn claims_of(token: &str) -> Value {
    let payload = token.split('.').nth(1).unwrap_or_default();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

/// Records each request (and refuses those whose token was refused) before the server's own
/// resource server sees it.
async fn record(
    axum::extract::State(seen): axum::extract::State<Arc<Upstream>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    // Read in a scope of its own: the body, not `Sync`, is not borrowed across the await.
    let (authorization, session) = {
        let header = |name: &str| request.headers().get(name).map(|v| v.to_str().unwrap().to_owned());
        (header("authorization"), header("mcp-session-id"))
    };
    let token = authorization.as_deref().and_then(|a| a.split_once(' ')).map_or("", |(_, token)| token);
    let claims = claims_of(token);
    let refused = {
        let (ids, subjects) = (seen.refused_ids.lock().unwrap(), seen.refused_subjects.lock().unwrap());
        claims["jti"].as_str().is_some_and(|jti| ids.contains(jti))
            || claims["sub"].as_str().is_some_and(|sub| subjects.contains(sub))
    };
    let response = if refused {
        let challenge = [("www-authenticate", "Bearer error=\"invalid_token\", error_description=\"revoked\"")];
        (axum::http::StatusCode::UNAUTHORIZED, challenge).into_response()
    } else {
        next.run(request).await
    };
    let status = response.status().as_u16();
    seen.requests.lock().unwrap().push(Request { authorization, claims, session, status });
    response
}

/// What the token of the request `ctx` serves says, as JSON text.
fn token_said(ctx: &Context) -> Result<String, Error> {
    let token = ctx.token().ok_or_else(|| Error::internal("no token"))?;
    let claims = &token.claims;
    let said = json!({
        "sub": claims["sub"], "aud": claims["aud"], "scope": claims["scope"], "client_id": claims["client_id"],
        "act": claims.get("act"), "jti": claims["jti"], "dpop": token.dpop_jkt.is_some(),
    });
    Ok(said.to_string())
}

/// An upstream protected by `issuer`'s tokens (`notes:read` needed; DPoP-bound ones only when
/// `dpop`), whose tool `whoami`, prompt `whoami`, resource `whoami://{label}` and completions say
/// what the token they were asked with says; its URL, and what it sees.
async fn protected(issuer: &str, dpop: bool, label: &str) -> (String, Arc<Upstream>) {
    let whoami = ToolRoute::new("whoami", |ctx: Context, _: NoArguments| async move { token_said(&ctx) });
    // The roots of the session (legacy) or of the request (2026-07-28), when declared.
    let roots = ToolRoute::new("roots", |ctx: Context, _: NoArguments| async move {
        match ctx.list_roots("roots").await {
            Ok(listed) => Ok(listed.roots.into_iter().map(|root| root.uri).collect::<Vec<_>>().join(",")),
            Err(Error::MissingCapability(needed)) if needed.roots.is_some() => Ok("no roots".to_owned()),
            Err(error) => Err(error),
        }
    });
    let resource = Resource { uri: format!("whoami://{label}"), name: "whoami".into(), ..Default::default() };
    let server = Server::builder("protected", "1.0.0")
        .tool(whoami)
        .tool(roots)
        .prompt(PromptRoute::new("whoami", |ctx: Context, _: NoArguments| async move { token_said(&ctx) }))
        .resource(ResourceRoute::new(resource, |ctx: Context, _uri: String| async move { token_said(&ctx) }))
        .completion(|ctx: Context, _params| async move {
            Ok::<_, Error>(CompleteResultCompletion { values: vec![token_said(&ctx)?], ..Default::default() })
        })
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let mut config = HttpConfig::default();
    let resource = ResourceServer::builder(&url, JwtVerifier::new(issuer, &url))
        .authorization_server(issuer)
        .required_scopes(["notes:read"])
        .require_dpop(dpop)
        .build();
    config.authorization = Some(resource);
    let seen = Arc::new(Upstream::default());
    let app =
        mcp_server::http::router(server, config).layer(axum::middleware::from_fn_with_state(Arc::clone(&seen), record));
    let limits = mcp_server::http::ConnectionLimits::from(&HttpConfig::default());
    tokio::spawn(mcp_server::http::serve_router(listener, app, limits, std::future::pending()));
    (url, seen)
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// The gateway behind `[authorization]`, in front of four protected upstreams: `mail` (acts as
/// its caller), `legacy` (the same, legacy era), `signed` (the same; it requires DPoP, which the
/// gateway is not told about) and `notes` (the gateway's own identity).
struct Deployment {
    provider: OidcProvider,
    gateway: Gateway,
    /// The gateway's endpoint (the audience of its callers' tokens).
    url: String,
    mail: (String, Arc<Upstream>),
    legacy: (String, Arc<Upstream>),
    signed: (String, Arc<Upstream>),
    notes: (String, Arc<Upstream>),
}

impl Deployment {
    async fn start() -> Deployment {
        let provider = OidcProvider::start();
        let issuer = provider.issuer.clone();
        let (mail, legacy, signed, notes) = (
            protected(&issuer, false, "mail").await,
            protected(&issuer, false, "legacy").await,
            protected(&issuer, true, "signed").await,
            protected(&issuer, false, "notes").await,
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let exchange = format!(
            r#"identity = "exchange"
            oauth = {{ issuer = "{issuer}", client_id = "gateway", client_secret = "gateway-secret", scopes = ["notes:read"] }}"#
        );
        let config = Config::from_toml(&format!(
            r#"
            [authorization]
            resource = "{url}"
            issuer = "{issuer}"
            [[upstream]]
            name = "mail"
            url = "{}"
            {exchange}
            [[upstream]]
            name = "legacy"
            url = "{}"
            era = "legacy"
            {exchange}
            [[upstream]]
            name = "signed"
            url = "{}"
            {exchange}
            [[upstream]]
            name = "notes"
            url = "{}"
            oauth = {{ issuer = "{issuer}", client_id = "test-cc", client_secret = "test-cc-secret", scopes = ["notes:read"] }}
            "#,
            mail.0, legacy.0, signed.0, notes.0
        ))
        .unwrap();
        let gateway = Gateway::start(&config).await.unwrap();
        assert_eq!(gateway.connected(), ["mail", "legacy", "signed", "notes"], "listed as the gateway");
        let app = gateway.router(gateway.http_config());
        let limits = mcp_server::http::ConnectionLimits::from(&HttpConfig::default());
        tokio::spawn(mcp_server::http::serve_router(listener, app, limits, std::future::pending()));
        Deployment { provider, gateway, url, mail, legacy, signed, notes }
    }

    /// A token of the provider's key for the gateway, for `subject`.
    fn mint(&self, subject: &str, scope: &str) -> String {
        let claims = json!({
            "iss": self.provider.issuer, "aud": self.url, "sub": subject, "client_id": "agent", "scope": scope,
            "iat": now(), "exp": now() + 600, "jti": format!("{subject}-caller"),
        });
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(KEY_ID.to_owned());
        header.typ = Some("at+jwt".to_owned());
        let key = EncodingKey::from_ec_pem(self.provider.key_pem.as_bytes()).unwrap();
        jsonwebtoken::encode(&header, &claims, &key).unwrap()
    }

    /// A caller of the gateway presenting `token`.
    async fn caller(&self, token: &str) -> mcp_client::Client {
        self.caller_with(token, mcp_client::Handlers::new()).await
    }

    /// A caller of the gateway presenting `token`, answering with `handlers`.
    async fn caller_with(&self, token: &str, handlers: mcp_client::Handlers) -> mcp_client::Client {
        mcp_client::Client::builder("caller", "1.0.0")
            .http_header("Authorization", format!("Bearer {token}"))
            .handlers(handlers)
            .connect_http(&self.url)
            .await
            .unwrap()
    }

    fn upstreams(&self) -> [&(String, Arc<Upstream>); 4] {
        [&self.mail, &self.legacy, &self.signed, &self.notes]
    }
}

/// What `whoami` of `tool` said of the token the upstream was called with, or the error.
async fn whoami(caller: &mcp_client::Client, tool: &str) -> Result<Value, String> {
    let result = caller.call_tool(tool, json!({})).await.map_err(|e| e.to_string())?;
    match &result.content[..] {
        [ContentBlock::Text(text)] if result.is_error != Some(true) => Ok(serde_json::from_str(&text.text).unwrap()),
        _ => Err(format!("{result:?}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_caller_reaches_the_upstream_as_itself_with_a_token_exchanged_for_it() {
    let deployment = Deployment::start().await;
    let (mail_url, mail) = &deployment.mail;
    let alice = deployment.caller(&deployment.mint("alice", "notes:read notes:write")).await;
    let bob = deployment.caller(&deployment.mint("bob", "notes:read")).await;

    // Alice arrives as alice, with a token for the upstream (its audience), the scopes it needs
    // (not all of hers), issued to the gateway acting for her.
    let first = whoami(&alice, "mail_whoami").await.unwrap();
    assert_eq!(
        (&first["sub"], &first["aud"], &first["scope"], &first["client_id"], &first["act"]),
        (&json!("alice"), &json!(mail_url), &json!("notes:read"), &json!("gateway"), &json!({ "sub": "gateway" })),
        "{first}"
    );
    // Figure: two calls, one exchange (the same token, by its id, both times).
    let second = whoami(&alice, "mail_whoami").await.unwrap();
    assert_eq!(second["jti"], first["jti"], "alice's second call exchanged again");
    // Bob arrives as bob, with a token of his own: nothing of alice's is reused.
    let bobs = whoami(&bob, "mail_whoami").await.unwrap();
    assert_eq!((&bobs["sub"], &bobs["aud"]), (&json!("bob"), &json!(mail_url)), "{bobs}");
    assert_ne!(bobs["jti"], first["jti"]);

    // The upstream refuses alice's token (revoked): her next call gets one fresh exchange.
    let before = mail.requests().len();
    mail.refused_ids.lock().unwrap().insert(first["jti"].as_str().unwrap().to_owned());
    let renewed = whoami(&alice, "mail_whoami").await.unwrap();
    assert_eq!(renewed["sub"], "alice");
    assert_ne!(renewed["jti"], first["jti"], "the refused token was sent again");
    let refused: Vec<u16> =
        mail.of("alice", before).iter().filter(|r| r.claims["jti"] == first["jti"]).map(|r| r.status).collect();
    assert_eq!(refused, [401], "the refused token was sent once, then exchanged");

    // The upstream refuses every token of alice's: one fresh exchange, then the call fails
    // naming the upstream (no loop of exchanges).
    let before = mail.requests().len();
    mail.refused_subjects.lock().unwrap().insert("alice".to_owned());
    let failed = whoami(&alice, "mail_whoami").await.unwrap_err();
    assert!(failed.contains("upstream `mail`") && failed.contains("authorization failed"), "{failed}");
    let tried = mail.of("alice", before);
    let tokens: HashSet<&Value> = tried.iter().map(|r| &r.claims["jti"]).collect();
    let sent: Vec<(&Value, u16)> = tried.iter().map(|r| (&r.claims["jti"], r.status)).collect();
    assert_eq!((tried.len(), tokens.len()), (2, 2), "alice's tokens sent after all were refused: {sent:?}");
    assert!(tokens.contains(&renewed["jti"]));
    // Bob's own token was untouched by all this.
    assert_eq!(whoami(&bob, "mail_whoami").await.unwrap()["jti"], bobs["jti"]);

    // Legacy era: each caller has a session of its own (a session is bound to the principal
    // that opened it: another principal's token on it would be refused).
    let (legacy_url, legacy) = &deployment.legacy;
    for (caller, name) in [(&alice, "alice"), (&bob, "bob"), (&alice, "alice")] {
        let said = whoami(caller, "legacy_whoami").await.unwrap();
        assert_eq!((&said["sub"], &said["aud"]), (&json!(name), &json!(legacy_url)), "{said}");
    }
    let sessions =
        |subject: &str| -> HashSet<String> { legacy.of(subject, 0).into_iter().filter_map(|r| r.session).collect() };
    let (alices, bobs) = (sessions("alice"), sessions("bob"));
    assert_eq!((alices.len(), bobs.len()), (1, 1), "alice: {alices:?}, bob: {bobs:?}");
    assert!(alices.is_disjoint(&bobs));

    // Where the upstream's metadata requires DPoP: alice's token is bound to the gateway's key,
    // and sent with a proof.
    let signed = whoami(&alice, "signed_whoami").await.unwrap();
    assert_eq!((&signed["sub"], &signed["dpop"]), (&json!("alice"), &json!(true)), "{signed}");
    let schemes: HashSet<String> = deployment
        .signed
        .1
        .of("alice", 0)
        .iter()
        .filter_map(|r| r.authorization.as_deref()?.split_once(' ').map(|(scheme, _)| scheme.to_owned()))
        .collect();
    assert_eq!(schemes, HashSet::from(["DPoP".to_owned()]));
}

/// Roots are a legacy session's: the upstream keeps them and serves the session's later
/// requests under them. A caller's own session (`identity = "exchange"`) is asked for that
/// caller's roots; a 2026-07-28 upstream asks each request for its own, whatever the identity.
/// (A legacy session of the gateway's identity, every caller's, declares none: tests/integration/bridge.rs
/// of mcp-gateway.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_or_request_is_given_the_roots_of_its_own_caller_only() {
    let deployment = Deployment::start().await;
    let with_home = |home: &'static str| {
        mcp_client::Handlers::new().roots(move || async move {
            Ok(vec![mcp_server::types::Root { uri: home.to_owned(), ..Default::default() }])
        })
    };
    let alice = deployment.caller_with(&deployment.mint("alice", "notes:read"), with_home("file:///home/alice")).await;
    let bob = deployment.caller_with(&deployment.mint("bob", "notes:read"), with_home("file:///home/bob")).await;
    for (caller, home) in [(&alice, "file:///home/alice"), (&bob, "file:///home/bob"), (&alice, "file:///home/alice")] {
        for tool in ["legacy_roots", "mail_roots", "notes_roots"] {
            let result = caller.call_tool(tool, json!({})).await.unwrap();
            match &result.content[..] {
                [ContentBlock::Text(text)] => assert_eq!(text.text, home, "{tool}"),
                other => panic!("{tool}: {other:?}"),
            }
        }
    }
}

/// Not only calls: a caller's read, prompt and completion reach an upstream that acts as its
/// caller with a token exchanged for that caller, in both eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_prompts_and_completions_reach_the_upstream_as_their_caller() {
    let deployment = Deployment::start().await;
    let alice = deployment.caller(&deployment.mint("alice", "notes:read")).await;
    let bob = deployment.caller(&deployment.mint("bob", "notes:read")).await;
    for (caller, name) in [(&alice, "alice"), (&bob, "bob")] {
        for upstream in ["mail", "legacy"] {
            let read = caller.read_resource(&format!("whoami://{upstream}")).await.unwrap();
            let text = serde_json::to_value(&read.contents[0]).unwrap()["text"].as_str().unwrap().to_owned();
            let read: Value = serde_json::from_str(&text).unwrap();
            let prompt = caller.get_prompt(&format!("{upstream}_whoami"), json!({})).await.unwrap();
            let text = serde_json::to_value(&prompt.messages[0].content).unwrap()["text"].as_str().unwrap().to_owned();
            let prompted: Value = serde_json::from_str(&text).unwrap();
            let reference =
                serde_json::from_value(json!({"type": "ref/prompt", "name": format!("{upstream}_whoami")})).unwrap();
            let completed = caller.complete(reference, "x", "", Default::default()).await.unwrap();
            let completed: Value = serde_json::from_str(&completed.completion.values[0]).unwrap();
            for (what, said) in [("read", &read), ("prompt", &prompted), ("completion", &completed)] {
                assert_eq!(
                    (&said["sub"], &said["client_id"], &said["act"]),
                    (&json!(name), &json!("gateway"), &json!({ "sub": "gateway" })),
                    "{name}'s {what} on {upstream}: {said}"
                );
            }
        }
    }
}

/// Token passthrough (the MCP security guidance forbids it): whatever a caller does through the
/// gateway, no upstream ever gets the caller's token, not even one the gateway serves as itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_token_never_reaches_an_upstream() {
    let deployment = Deployment::start().await;
    let token = deployment.mint("alice", "notes:read notes:write");
    let alice = deployment.caller(&token).await;
    for tool in ["mail_whoami", "legacy_whoami", "signed_whoami", "notes_whoami", "mail_whoami"] {
        let said = whoami(&alice, tool).await.unwrap();
        assert_ne!(said["aud"], json!(deployment.url), "{tool} was called with a token for the gateway: {said}");
    }
    // The gateway's own identity where configured: its client's token, no one's else.
    let notes = whoami(&alice, "notes_whoami").await.unwrap();
    assert_eq!((&notes["sub"], &notes["client_id"]), (&json!("test-cc"), &json!("test-cc")), "{notes}");
    let mut requests = 0;
    for (name, upstream) in deployment.upstreams() {
        for request in upstream.requests() {
            requests += 1;
            let authorization = request.authorization.unwrap_or_default();
            assert!(!authorization.contains(&token), "{name} got alice's own token");
            assert_ne!(request.claims["aud"], json!(deployment.url), "{name} got a token for the gateway");
        }
    }
    assert!(requests >= 10, "the upstreams saw {requests} requests");
}

/// Without a caller's token (a caller the endpoint did not authenticate, as over stdio) a call to
/// an upstream that acts as its caller fails saying so: the gateway's identity never stands in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_callers_token_the_gateway_does_not_act_as_anyone() {
    let deployment = Deployment::start().await;
    // The same gateway served without `[authorization]`: its callers bring no token.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let open = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(mcp_server::http::serve(listener, deployment.gateway.server().clone(), HttpConfig::default()));
    let anonymous = mcp_client::Client::builder("anonymous", "1.0.0").connect_http(&open).await.unwrap();
    let (_, mail) = &deployment.mail;
    let before = mail.requests().len();
    let refused = whoami(&anonymous, "mail_whoami").await.unwrap_err();
    assert!(refused.contains("upstream `mail` serves each caller as itself"), "{refused}");
    assert!(refused.contains("carries no access token to exchange"), "{refused}");
    assert_eq!(mail.requests().len(), before, "the upstream was called without a caller");
    // An upstream of the gateway's own identity still serves.
    assert_eq!(whoami(&anonymous, "notes_whoami").await.unwrap()["sub"], "test-cc");

    // Acting as the caller where no caller's token can exist is refused at start, saying why.
    let stdio = "[authorization]\nresource = \"r\"\nissuer = \"https://as\"\n[[upstream]]\nname = \"files\"\n\
                 command = [\"files\"]\nidentity = \"exchange\"\n\
                 oauth = { issuer = \"https://as\", client_id = \"gateway\", client_secret = \"s\" }\n";
    let error = Config::from_toml(stdio).unwrap_err();
    assert!(error.contains("upstream `files`: `identity = \"exchange\"` is for HTTP upstreams"), "{error}");
    let anonymous_endpoint = "[[upstream]]\nname = \"mail\"\nurl = \"http://x\"\nidentity = \"exchange\"\n\
                              oauth = { issuer = \"https://as\", client_id = \"gateway\", client_secret = \"s\" }\n";
    let error = Config::from_toml(anonymous_endpoint).unwrap_err();
    assert!(error.contains("upstream `mail`: `identity = \"exchange\"` needs an `[authorization]` section"), "{error}");
}
