//! The same small protected server on rmcp: `protected ISSUER URL [ADDR]` serves the `add` tool
//! over Streamable HTTP at ADDR (default 127.0.0.1:8080) as URL, taking JWT access tokens of
//! ISSUER (keys from its JWKS, found through its metadata) for URL with the scope `mcp:tools`,
//! and sends its spans and metrics over OTLP/HTTP (the `OTEL_*` variables set where).
//!
//! rmcp's own `auth` feature is the client's side of OAuth; a resource server is the
//! application's to write. Here: an axum middleware with `jsonwebtoken` (RustCrypto, as
//! mcp-server's `auth` uses) and the issuer's metadata and JWKS fetched with `reqwest`, the
//! Protected Resource Metadata (RFC 9728) and 401/403 challenges; OpenTelemetry through
//! `opentelemetry-otlp` and `tracing-opentelemetry` under rmcp's `tracing` spans.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, jwk::JwkSet};
use opentelemetry::trace::TracerProvider as _;
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use tracing_subscriber::{EnvFilter, layer::SubscriberExt as _, util::SubscriberInitExt as _};

const SCOPE: &str = "mcp:tools";

/// Two integers to add.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[derive(Clone)]
struct Adder {
    #[allow(dead_code, reason = "read by the code #[tool_handler] generates")]
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Adder {
    fn new() -> Self {
        Adder { tool_router: Self::tool_router() }
    }

    #[tool(description = "Adds two integers")]
    async fn add(&self, Parameters(Add { a, b }): Parameters<Add>) -> String {
        (a + b).to_string()
    }
}

#[tool_handler]
impl ServerHandler for Adder {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// The resource server: the issuer, this resource's URL, and the issuer's keys once fetched.
struct Auth {
    issuer: String,
    resource: String,
    metadata_url: String,
    http: reqwest::Client,
    keys: tokio::sync::RwLock<Option<(JwkSet, Instant)>>,
}

#[derive(serde::Deserialize)]
struct IssuerMetadata {
    issuer: String,
    jwks_uri: String,
}

/// `iss`, `aud`, `exp` and `nbf` are checked by `Validation`; the scope here.
#[derive(serde::Deserialize)]
struct Claims {
    #[serde(default)]
    scope: String,
}

impl Auth {
    async fn fetch_keys(&self) -> Result<JwkSet, Box<dyn std::error::Error + Send + Sync>> {
        let at = format!("{}/.well-known/oauth-authorization-server", self.issuer.trim_end_matches('/'));
        let metadata: IssuerMetadata = self.http.get(at).send().await?.error_for_status()?.json().await?;
        if metadata.issuer != self.issuer {
            return Err(format!("the issuer's metadata names {:?}, not {:?}", metadata.issuer, self.issuer).into());
        }
        Ok(self.http.get(metadata.jwks_uri).send().await?.error_for_status()?.json().await?)
    }

    /// The key `kid`: from the keys fetched, or fetched again (at most once a minute) when unknown.
    async fn key(&self, kid: &str) -> Option<DecodingKey> {
        if let Some((keys, fetched)) = &*self.keys.read().await {
            if let Some(jwk) = keys.find(kid) {
                return DecodingKey::from_jwk(jwk).ok();
            }
            if fetched.elapsed() < Duration::from_secs(60) {
                return None;
            }
        }
        let mut cached = self.keys.write().await;
        let keys = match self.fetch_keys().await {
            Ok(keys) => keys,
            Err(error) => {
                tracing::warn!("the issuer's keys: {error}");
                return None;
            }
        };
        let key = keys.find(kid).and_then(|jwk| DecodingKey::from_jwk(jwk).ok());
        *cached = Some((keys, Instant::now()));
        key
    }

    async fn verify(&self, token: &str) -> Option<Claims> {
        use Algorithm::*;
        let header = jsonwebtoken::decode_header(token).ok()?;
        if !matches!(header.alg, RS256 | RS384 | RS512 | PS256 | PS384 | PS512 | ES256 | ES384 | EdDSA) {
            return None;
        }
        let key = self.key(header.kid.as_deref()?).await?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.resource]);
        validation.leeway = 30;
        validation.validate_nbf = true;
        jsonwebtoken::decode::<Claims>(token, &key, &validation).ok().map(|data| data.claims)
    }

    fn challenge(&self, status: StatusCode, error: &str) -> Response {
        let value = format!(r#"Bearer error="{error}", resource_metadata="{}", scope="{SCOPE}""#, self.metadata_url);
        (status, [(header::WWW_AUTHENTICATE, value)]).into_response()
    }
}

async fn authorize(State(auth): State<Arc<Auth>>, request: Request, next: Next) -> Response {
    let token = request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let claims = match token.and_then(|v| v.strip_prefix("Bearer ")) {
        Some(token) => auth.verify(token).await,
        None => None,
    };
    match claims {
        None => auth.challenge(StatusCode::UNAUTHORIZED, "invalid_token"),
        Some(claims) if !claims.scope.split(' ').any(|s| s == SCOPE) => {
            auth.challenge(StatusCode::FORBIDDEN, "insufficient_scope")
        }
        Some(_) => next.run(request).await,
    }
}

/// Spans (rmcp's `tracing` spans among them) and metrics over OTLP/HTTP, logs to stderr.
fn telemetry() -> Result<
    (opentelemetry_sdk::trace::SdkTracerProvider, opentelemetry_sdk::metrics::SdkMeterProvider),
    Box<dyn std::error::Error>,
> {
    let spans = opentelemetry_otlp::SpanExporter::builder().with_http().build()?;
    let tracer = opentelemetry_sdk::trace::SdkTracerProvider::builder().with_batch_exporter(spans).build();
    let metrics = opentelemetry_otlp::MetricExporter::builder().with_http().build()?;
    let meter = opentelemetry_sdk::metrics::SdkMeterProvider::builder().with_periodic_exporter(metrics).build();
    opentelemetry::global::set_tracer_provider(tracer.clone());
    opentelemetry::global::set_meter_provider(meter.clone());
    opentelemetry::global::set_text_map_propagator(opentelemetry_sdk::propagation::TraceContextPropagator::new());
    tracing_subscriber::registry()
        .with(EnvFilter::from_default_env())
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(tracing_opentelemetry::layer().with_tracer(tracer.tracer("protected")))
        .with(tracing_opentelemetry::MetricsLayer::new(meter.clone()))
        .try_init()?;
    Ok((tracer, meter))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [issuer, url, rest @ ..] = args.as_slice() else {
        return Err("usage: protected ISSUER URL [ADDR]".into());
    };
    let addr = rest.first().map_or("127.0.0.1:8080", String::as_str);

    let (tracer, meter) = telemetry()?;
    let parsed = reqwest::Url::parse(url)?;
    let metadata_path = format!("/.well-known/oauth-protected-resource{}", parsed.path());
    let auth = Arc::new(Auth {
        issuer: issuer.clone(),
        resource: url.clone(),
        metadata_url: format!("{}{metadata_path}", parsed.origin().ascii_serialization()),
        http: reqwest::Client::builder().timeout(Duration::from_secs(10)).build()?,
        keys: tokio::sync::RwLock::new(None),
    });
    match auth.fetch_keys().await {
        Ok(keys) => *auth.keys.write().await = Some((keys, Instant::now())),
        Err(error) => tracing::warn!("the issuer's keys: {error}"),
    }
    let metadata = serde_json::json!({
        "resource": url,
        "authorization_servers": [issuer],
        "scopes_supported": [SCOPE],
        "bearer_methods_supported": ["header"],
    });

    let service = StreamableHttpService::new(
        || Ok(Adder::new()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new()
        .nest_service(parsed.path(), service)
        .layer(from_fn_with_state(auth, authorize))
        .route(&metadata_path, axum::routing::get(move || std::future::ready(axum::Json(metadata))));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    axum::serve(listener, router).await?;
    tracer.shutdown()?;
    meter.shutdown()?;
    Ok(())
}
