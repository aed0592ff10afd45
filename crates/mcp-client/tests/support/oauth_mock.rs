//! A mock protected MCP server (2026-07-28, stateless) and a mock OAuth authorization server on
//! 127.0.0.1, configurable per test and recording every request they see.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};

/// One request a mock saw.
#[derive(Debug, Clone)]
pub struct Seen {
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

/// Access tokens issued by any mock authorization server: token → (issuer, scopes).
pub type Issued = Arc<Mutex<HashMap<String, (String, Vec<String>)>>>;

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

fn record(log: &Log, uri: &Uri, headers: HeaderMap, body: &Bytes) -> Seen {
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
    let seen = Seen { path: uri.path().to_owned(), query, headers, form, json };
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
    let seen = record(&state.log, &uri, headers, &body);
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
            let scopes = match seen.param("grant_type") {
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
            state.issued.lock().unwrap().insert(token.clone(), (issuer.clone(), scopes.clone()));
            let mut answer = json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600});
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
}

pub struct McpServer {
    pub url: String,
    pub log: Log,
}

impl McpServer {
    pub async fn start(config: RsConfig, issued: &Issued) -> McpServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let url = format!("{base}/mcp");
        let log = Log::default();
        let state = RsState {
            url: url.clone(),
            base,
            config: Arc::new(Mutex::new(config)),
            log: log.clone(),
            issued: issued.clone(),
            used: Default::default(),
        };
        let app = axum::Router::new().fallback(rs_handle).with_state(state);
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        McpServer { url, log }
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
    let seen = record(&state.log, &uri, headers, &body);
    let config = state.config.lock().unwrap().clone();
    let prm_url = config.prm_path.as_ref().map(|p| format!("{}{p}", state.base));
    if method == Method::GET {
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
    let challenge = |error: &str, scope: Option<&str>| {
        let mut value = format!("Bearer error=\"{error}\"");
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
    let Some(token) = seen.header("authorization").and_then(|v| v.strip_prefix("Bearer ")) else {
        return unauthorized();
    };
    let Some((issuer, scopes)) = state.issued.lock().unwrap().get(token).cloned() else {
        return unauthorized();
    };
    if issuer != config.authorization_server {
        return unauthorized();
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
    let id = seen.json["id"].clone();
    let result = match seen.rpc() {
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
