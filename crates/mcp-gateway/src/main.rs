//! `mcp-gateway --config gateway.toml [--stdio]`: serves the configuration's upstreams as one MCP
//! endpoint, over HTTP at `http://<listen>/mcp` (with `GET /healthz` and `GET /readyz`) and, with
//! `--stdio`, on stdin and stdout. SIGINT or SIGTERM stops accepting connections and lets the
//! open ones finish. SIGHUP, or a change to the configuration file (looked at every two seconds
//! unless `--no-watch`), reloads it without dropping a session or a call in flight
//! (`Gateway::reload`); a configuration that does not load is refused, logged, and the running
//! one kept. Logs go to stderr (`RUST_LOG`, default `info`). With the `otel` feature (the
//! default), setting `OTEL_TRACES_EXPORTER`, `OTEL_METRICS_EXPORTER` or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` exports traces and metrics as `mcp_server::otel` describes
//! (OTLP, Prometheus on `OTEL_EXPORTER_PROMETHEUS_PORT`, console).
//! With the `mimalloc` feature (the default), it allocates with mimalloc.

use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// Reload only on SIGHUP, not when the configuration file changes.
    #[arg(long)]
    no_watch: bool,
}

/// How often the configuration file is looked at for a change.
const WATCH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mcp_gateway::Mimalloc = mcp_gateway::Mimalloc;

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

/// The configuration in `path`, read and checked.
fn load(path: &Path) -> Result<Config, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    Config::from_toml(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Reloads the configuration at SIGHUP and, with `watch`, when the file's contents change. The
/// file is read, not watched through inotify: editors and Kubernetes ConfigMaps replace it by
/// renames and symlink swaps, which a read sees like any other change.
async fn reload_on_change(gateway: Arc<Gateway>, path: PathBuf, watch: bool) {
    #[cfg(unix)]
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
    let mut seen = std::fs::read(&path).ok();
    let mut ticks = tokio::time::interval(WATCH_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        #[cfg(unix)]
        let hung_up = async {
            match hangup.as_mut() {
                Some(signal) => drop(signal.recv().await),
                None => std::future::pending().await,
            }
        };
        #[cfg(not(unix))]
        let hung_up = std::future::pending::<()>();
        let why = tokio::select! {
            _ = hung_up => "SIGHUP",
            _ = ticks.tick(), if watch => {
                let now = std::fs::read(&path).ok();
                if now == seen {
                    continue;
                }
                seen = now;
                "the file changed"
            }
        };
        match load(&path) {
            Ok(config) => match gateway.reload(&config).await {
                Ok(reloaded) => tracing::info!(why, %reloaded, "configuration reloaded"),
                Err(error) => tracing::error!(why, %error, "reload refused; the running configuration is kept"),
            },
            Err(error) => tracing::error!(why, %error, "reload refused; the running configuration is kept"),
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let config = load(&args.config)?;
    if config.listen.is_none() && !args.stdio {
        return Err("nothing to serve: give `listen` in the configuration or --stdio".into());
    }
    let gateway = Arc::new(Gateway::start(&config).await?);
    tokio::spawn(reload_on_change(Arc::clone(&gateway), args.config.clone(), !args.no_watch));
    let http = match &config.listen {
        Some(address) => {
            let listener = tokio::net::TcpListener::bind(address.as_str())
                .await
                .map_err(|e| format!("listening on {address}: {e}"))?;
            // The first line on stderr says where, for scripts and tests.
            eprintln!("mcp-gateway: listening on http://{}/mcp", listener.local_addr()?);
            let (server, http_config, health) =
                (gateway.server().clone(), gateway.http_config(), gateway.health_routes());
            Some(tokio::spawn(mcp_server::http::serve_with_routes(
                listener,
                server,
                http_config,
                health,
                stop_signal(),
            )))
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
