//! The `add` tool on this repository's mcp-server: `ours http [--max-sessions N] [--auth]` serves
//! Streamable HTTP on 127.0.0.1 (an ephemeral port, printed as the first line of stdout);
//! `ours stdio` serves stdin and stdout. With `--realistic` it also serves the realistic cell's
//! tools (`record` on the Redis at `$PEER_REDIS_URL`, `fibonacci`, `blob`; see `workload.rs`).
//!
//! With `--auth` the endpoint is an OAuth 2.1 resource server (mcp-server's feature `auth`): the
//! process also serves, on another ephemeral port, a tiny issuer (its RFC 8414 metadata and a
//! JWKS holding one ES256 key), verifies tokens with `JwtVerifier` of that issuer for its own URL
//! and requires the scope `mcp:tools`. It mints one access token for that URL (RFC 9068: `typ`
//! `at+jwt`, a `kid`, valid for a day) and prints it as the second line of stdout, for the
//! driver to send as `Authorization: Bearer <token>`. The issuer is asked for its keys once, at
//! the first request; after that every request costs what a cached token costs.

use mcp_server::{Context, Error, Server, ToolRoute};
use peer_bench::workload::{self, BlobArgs, FibonacciArgs, RecordArgs, Store};

/// Two integers to add.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

/// `add`, and with a store the realistic cell's three tools (`--realistic`).
fn server(store: Option<Store>) -> Server {
    let mut builder = Server::builder("peer-bench", "1.0.0").tool(
        ToolRoute::new("add", |_: Context, Add { a, b }: Add| async move { Ok::<_, Error>((a + b).to_string()) })
            .description("Adds two integers"),
    );
    if let Some(store) = store {
        builder = builder
            .tool(
                ToolRoute::new("record", move |_: Context, args: RecordArgs| {
                    let store = store.clone();
                    async move { store.record(args).await.map_err(Error::failed) }
                })
                .description("Adds a value to the caller's record in Redis"),
            )
            .tool(
                ToolRoute::new("fibonacci", |_: Context, FibonacciArgs { n }: FibonacciArgs| async move {
                    Ok::<_, Error>(workload::fibonacci(n).to_string())
                })
                .description("The n-th Fibonacci number, computed naively"),
            )
            .tool(
                ToolRoute::new(
                    "blob",
                    |_: Context, args: BlobArgs| async move { Ok::<_, Error>(workload::blob(args)) },
                )
                .description("A large text"),
            );
    }
    builder.build().expect("valid tool definitions")
}

/// The store of the realistic cell's `record`, with `--realistic`.
async fn store(args: &[String]) -> std::io::Result<Option<Store>> {
    if !args.iter().any(|a| a == "--realistic") {
        return Ok(None);
    }
    Store::connect().await.map(Some).map_err(std::io::Error::other)
}

/// The issuer's signing key: a fixed P-256 test key (PKCS#8), used for nothing but this benchmark.
const ISSUER_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgRSDxCH6H4KIoW/oX
0SKeQLSsFwLlzCM3ujHA92VklV+hRANCAAQN+aXazAQADXtvWRfB8tdTSMS70YQ9
les55nMzN7EGu74ua8pWX3NNXVlqpCMVkboxzYbfWfosOBj1wz9pguKc
-----END PRIVATE KEY-----
";
const KEY_ID: &str = "peer-bench-es256";
const SCOPE: &str = "mcp:tools";

/// Serves the issuer's metadata and keys on 127.0.0.1 (an ephemeral port); returns its issuer
/// identifier and a token it issued for `resource`.
async fn issuer(resource: &str) -> std::io::Result<(String, String)> {
    use jsonwebtoken::{Algorithm, EncodingKey, Header, jwk};
    let _ = jsonwebtoken::crypto::CryptoProvider::install_default(&jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER);
    let key = EncodingKey::from_ec_pem(ISSUER_KEY.as_bytes()).expect("a P-256 PKCS#8 key");
    let mut public = jwk::Jwk::from_encoding_key(&key, Algorithm::ES256).expect("the public key");
    public.common.key_id = Some(KEY_ID.to_owned());
    public.common.public_key_use = Some(jwk::PublicKeyUse::Signature);
    let jwks = serde_json::json!({ "keys": [public] }).to_string();

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let issuer = format!("http://{}", listener.local_addr()?);
    let metadata = serde_json::json!({
        "issuer": issuer,
        "jwks_uri": format!("{issuer}/jwks"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["client_credentials"],
        "token_endpoint": format!("{issuer}/token"),
    })
    .to_string();
    let json = |body: String| move || std::future::ready(([("content-type", "application/json")], body));
    let router = axum::Router::new()
        .route("/.well-known/oauth-authorization-server", axum::routing::get(json(metadata)))
        .route("/jwks", axum::routing::get(json(jwks)));
    tokio::spawn(async move { axum::serve(listener, router).await });

    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_secs();
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some("at+jwt".to_owned());
    header.kid = Some(KEY_ID.to_owned());
    let claims = serde_json::json!({
        "iss": issuer,
        "sub": "peer-bench-user",
        "aud": resource,
        "client_id": "peer-bench-driver",
        "scope": SCOPE,
        "iat": now,
        "exp": now + 86_400,
        "jti": "peer-bench-token-1",
    });
    let token = jsonwebtoken::encode(&header, &claims, &key).expect("a signed token");
    Ok((issuer, token))
}

/// With `--features otel`: every span and metric to the OpenTelemetry SDK's in-memory exporters,
/// kept for the process's life (the cost of telemetry with a listener).
#[cfg(feature = "otel")]
fn listen_in_memory() -> (opentelemetry_sdk::trace::SdkTracerProvider, opentelemetry_sdk::metrics::SdkMeterProvider) {
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    let spans = opentelemetry_sdk::trace::InMemorySpanExporter::default();
    let tracer = opentelemetry_sdk::trace::SdkTracerProvider::builder().with_simple_exporter(spans).build();
    let metrics = opentelemetry_sdk::metrics::InMemoryMetricExporter::default();
    let reader = opentelemetry_sdk::metrics::PeriodicReader::builder(metrics).build();
    let meter = opentelemetry_sdk::metrics::SdkMeterProvider::builder().with_reader(reader).build();
    opentelemetry::global::set_meter_provider(meter.clone());
    opentelemetry::global::set_text_map_propagator(opentelemetry_sdk::propagation::TraceContextPropagator::new());
    let layer = tracing_opentelemetry::layer().with_tracer(tracer.tracer("ours"));
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)).expect("one subscriber");
    (tracer, meter)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    #[cfg(feature = "otel")]
    let _telemetry = listen_in_memory();
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("stdio") => mcp_server::stdio::serve_stdio(server(store(&args).await?)).await,
        Some("http") => {
            let mut config = mcp_server::http::HttpConfig::default();
            // The session benchmark holds more sessions open than the default caps, all from one
            // address (loopback); without this it would measure eviction or refusal, not holding.
            if let Some(at) = args.iter().position(|a| a == "--max-sessions") {
                config.max_sessions = args[at + 1].parse().expect("--max-sessions N");
                config.max_sessions_per_client = config.max_sessions;
            }
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let url = format!("http://{}/mcp", listener.local_addr()?);
            println!("{url}");
            if args.iter().any(|a| a == "--auth") {
                use mcp_server::auth::{JwtVerifier, ResourceServer};
                let (issuer, token) = issuer(&url).await?;
                config.authorization = Some(
                    ResourceServer::builder(url.clone(), JwtVerifier::new(issuer.clone(), url.clone()))
                        .authorization_server(issuer)
                        .required_scopes([SCOPE])
                        .build(),
                );
                println!("{token}");
            }
            mcp_server::http::serve(listener, server(store(&args).await?), config).await
        }
        _ => panic!("usage: ours http [--max-sessions N] [--auth] [--realistic] | ours stdio [--realistic]"),
    }
}
