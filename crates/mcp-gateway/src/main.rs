//! `mcp-gateway --config gateway.toml [--stdio]`: serves the configuration's upstreams as one MCP
//! endpoint, over HTTP at `http://<listen>/mcp` and, with `--stdio`, on stdin and stdout.
//! Logs go to stderr (`RUST_LOG`, default `info`).

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

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    match run(Args::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp-gateway: {error}");
            std::process::ExitCode::FAILURE
        }
    }
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
            let config = mcp_server::http::HttpConfig::default();
            Some(tokio::spawn(mcp_server::http::serve(listener, gateway.server().clone(), config)))
        }
        None => None,
    };
    if args.stdio {
        mcp_server::stdio::serve_stdio(gateway.server().clone()).await?;
        return Ok(());
    }
    tokio::select! {
        served = async { http.expect("listening").await } => served??,
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted; stopping"),
    }
    Ok(())
}
