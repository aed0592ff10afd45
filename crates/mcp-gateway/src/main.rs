//! `mcp-gateway --config gateway.toml [--stdio]`: serves the configuration's upstreams as one MCP
//! endpoint, over HTTP at `http://<listen>/mcp` (with `GET /healthz` and `GET /readyz`) and, with
//! `--stdio`, on stdin and stdout. SIGINT or SIGTERM stops accepting connections and lets the
//! open ones finish. Logs go to stderr (`RUST_LOG`, default `info`). With the `otel` feature (the
//! default), setting `OTEL_TRACES_EXPORTER`, `OTEL_METRICS_EXPORTER` or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` exports traces and metrics as `mcp_server::otel` describes
//! (OTLP, Prometheus on `OTEL_EXPORTER_PROMETHEUS_PORT`, console).
//! With the `mimalloc` feature (the default), it allocates with mimalloc.

use std::path::PathBuf;

use clap::Parser;
use mcp_gateway::{Config, Gateway};

#[derive(Parser)]
#[command(version, about = "Many MCP servers behind one MCP endpoint")]
struct Args {
    /// The TOML configuration (see the crate's documentation).
    #[arg(long)]
    config: PathBuf,
    /// Serve on stdin and stdout (as well as HTTP, when the configuration has `listen`).
    #[arg(long)]
    stdio: bool,
}

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    // Traces and metrics go where the `OTEL_*` variables say, once one names an exporter;
    // otherwise the log alone.
    #[cfg(feature = "otel")]
    let _telemetry = match ["OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|value| !value.is_empty()))
    {
        true => match mcp_server::otel::init() {
            Ok(telemetry) => Some(telemetry),
            Err(error) => {
                eprintln!("mcp-gateway: OpenTelemetry: {error}");
                return std::process::ExitCode::FAILURE;
            }
        },
        false => {
            log_to_stderr();
            // Said once, so that an operator who expected telemetry sees why there is none.
            tracing::info!(
                "OpenTelemetry is off: set OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER or OTEL_EXPORTER_OTLP_ENDPOINT to export spans and metrics"
            );
            None
        }
    };
    #[cfg(not(feature = "otel"))]
    log_to_stderr();
    match run(args).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp-gateway: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn log_to_stderr() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
}

/// Completes at SIGINT or SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => drop(signal.recv().await),
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
    tracing::info!("stopping: no new connections; the open ones finish");
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(&args.config).map_err(|e| format!("reading {}: {e}", args.config.display()))?;
    let config = Config::from_toml(&text).map_err(|e| format!("{}: {e}", args.config.display()))?;
    if config.listen.is_none() && !args.stdio {
        return Err("nothing to serve: give `listen` in the configuration or --stdio".into());
    }
    let gateway = Gateway::start(&config).await?;
    let http = match &config.listen {
        Some(address) => {
            let listener = tokio::net::TcpListener::bind(address.as_str())
                .await
                .map_err(|e| format!("listening on {address}: {e}"))?;
            // The first line on stderr says where, for scripts and tests.
            eprintln!("mcp-gateway: listening on http://{}/mcp", listener.local_addr()?);
            let http_config = gateway.http_config();
            let limits = mcp_server::http::ConnectionLimits::from(&http_config);
            let app = gateway.router(http_config);
            Some(tokio::spawn(mcp_server::http::serve_router(listener, app, limits, stop_signal())))
        }
        None => None,
    };
    if args.stdio {
        mcp_server::stdio::serve_stdio(gateway.server().clone()).await?;
        return Ok(());
    }
    http.expect("listening").await??;
    Ok(())
}
