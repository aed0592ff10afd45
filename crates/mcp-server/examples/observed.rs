//! An HTTP server with OpenTelemetry: `mcp_server::otel::init()` first, then three small tools
//! whose calls become spans and `mcp.server.operation.duration` measurements, behind a
//! per-principal rate limit and an audit log (tower layers; the `slow` tool also has a timeout of
//! its own). What is exported
//! where is set by the standard `OTEL_*` variables (see `mcp_server::otel`).
//!
//! ```text
//! cargo run -p mcp-server --features otel --example observed -- --listen 127.0.0.1:8003
//! # Spans to stderr, metrics at http://127.0.0.1:9464/metrics for Prometheus to scrape:
//! OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=prometheus OTEL_EXPORTER_PROMETHEUS_HOST=127.0.0.1 \
//!   cargo run -p mcp-server --features otel --example observed
//! ```
//!
//! Its stdout's first line is the MCP endpoint's URL (`http://ADDR/mcp`, also for port 0); with
//! the Prometheus exporter, the second is the URL of the exposition (`http://ADDR/metrics`).

use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;
use mcp_server::middleware::{self, McpRequest, tower::ServiceBuilder};
use mcp_server::{BuildError, Context, Error, Server, Structured, ToolRoute};

#[derive(Parser)]
struct Args {
    /// Serve Streamable HTTP at http://ADDR/mcp (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:8003")]
    listen: SocketAddr,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    /// The text to send back.
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    sum: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Slow {
    /// How long to take, in milliseconds (at most 60,000).
    ms: u64,
}

async fn echo(_ctx: Context, Echo { text }: Echo) -> Result<String, Error> {
    Ok(text)
}

async fn add(_ctx: Context, Add { a, b }: Add) -> Result<Structured<Sum>, Error> {
    let sum = a.checked_add(b).ok_or_else(|| Error::failed("the sum overflows a 64-bit integer"))?;
    Ok(Structured(Sum { sum }))
}

/// Fills the duration histogram's higher buckets.
async fn slow(_ctx: Context, Slow { ms }: Slow) -> Result<String, Error> {
    if ms > 60_000 {
        return Err(Error::failed("ms is at most 60000"));
    }
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(format!("slept {ms} ms"))
}

fn server() -> Result<Server, BuildError> {
    Server::builder("observed", env!("CARGO_PKG_VERSION"))
        .tool(ToolRoute::new("echo", echo).description("Returns the text it was given"))
        .tool(ToolRoute::new("add", add).description("Adds two integers"))
        .tool(
            ToolRoute::new("slow", slow)
                .description("Answers after the given number of milliseconds")
                .layer(middleware::timeout(Duration::from_secs(30))),
        )
        // Middleware around every request that reaches a handler: at most 600 requests a minute
        // per principal, and an audit event (inside the request's span) for each one let through.
        .layer(middleware::PrincipalRateLimit::new(600, Duration::from_secs(60)))
        .layer(ServiceBuilder::new().map_request(|request: McpRequest| {
            tracing::info!(
                principal = request.principal().as_str(),
                method = request.method(),
                target = request.call.target(),
                "audit"
            );
            request
        }))
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    // Before the server serves: its instruments come from the global meter provider this installs.
    let telemetry = mcp_server::otel::init()?;
    let server = server()?;
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    println!("{url}");
    if let Some(metrics) = telemetry.prometheus_addr() {
        println!("http://{metrics}/metrics");
    }
    tracing::info!("listening on {url}");
    mcp_server::http::serve(listener, server, mcp_server::http::HttpConfig::default()).await?;
    telemetry.shutdown()?;
    Ok(())
}
