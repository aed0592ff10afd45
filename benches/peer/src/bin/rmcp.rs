//! The `add` tool on rmcp, the official Rust SDK: `rmcp http` serves Streamable HTTP on
//! 127.0.0.1 (an ephemeral port, printed as the first line of stdout) with legacy sessions and
//! JSON responses where rmcp offers them; `rmcp stdio` serves `rmcp::transport::stdio()`.
//! `rmcp http --realistic` serves the realistic cell's tools beside `add` (see `workload.rs`).

use std::sync::Arc;

use axum::serve::ListenerExt as _;
use peer_bench::workload::{self, BlobArgs, FibonacciArgs, RecordArgs, Store};
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ServerHandler, ServiceExt as _, tool, tool_handler, tool_router};

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

/// `add` and the realistic cell's three tools (`--realistic`), on the same functions as ours.
#[derive(Clone)]
struct Realistic {
    store: Store,
    #[allow(dead_code, reason = "read by the code #[tool_handler] generates")]
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Realistic {
    fn new(store: Store) -> Self {
        Realistic { store, tool_router: Self::tool_router() }
    }

    #[tool(description = "Adds two integers")]
    async fn add(&self, Parameters(Add { a, b }): Parameters<Add>) -> String {
        (a + b).to_string()
    }

    #[tool(description = "Adds a value to the caller's record in Redis")]
    async fn record(&self, Parameters(args): Parameters<RecordArgs>) -> Result<String, rmcp::ErrorData> {
        self.store.record(args).await.map_err(|e| rmcp::ErrorData::internal_error(e, None))
    }

    #[tool(description = "The n-th Fibonacci number, computed naively")]
    async fn fibonacci(&self, Parameters(FibonacciArgs { n }): Parameters<FibonacciArgs>) -> String {
        workload::fibonacci(n).to_string()
    }

    #[tool(description = "A large text")]
    async fn blob(&self, Parameters(args): Parameters<BlobArgs>) -> String {
        workload::blob(args)
    }
}

#[tool_handler]
impl ServerHandler for Realistic {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tool_handler]
impl ServerHandler for Adder {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    match std::env::args().nth(1).as_deref() {
        Some("stdio") => {
            let running = Adder::new().serve(rmcp::transport::stdio()).await.map_err(std::io::Error::other)?;
            running.waiting().await.map_err(std::io::Error::other)?;
            Ok(())
        }
        Some("http") if std::env::args().any(|a| a == "--realistic") => {
            let store = Store::connect().await.map_err(std::io::Error::other)?;
            let service = StreamableHttpService::new(
                move || Ok(Realistic::new(store.clone())),
                Arc::new(LocalSessionManager::default()),
                http_config(),
            );
            serve_http(axum::Router::new().nest_service("/mcp", service)).await
        }
        Some("http") => {
            let service = StreamableHttpService::new(
                || Ok(Adder::new()),
                Arc::new(LocalSessionManager::default()),
                http_config(),
            );
            serve_http(axum::Router::new().nest_service("/mcp", service)).await
        }
        _ => panic!("usage: rmcp http [--realistic] | rmcp stdio"),
    }
}

/// Legacy sessions on, JSON responses where rmcp offers them, no SSE keep-alive.
fn http_config() -> StreamableHttpServerConfig {
    StreamableHttpServerConfig::default()
        .with_legacy_session_mode(true)
        .with_json_response(true)
        .with_sse_keep_alive(None)
}

/// Serves `router` on 127.0.0.1 (an ephemeral port), printing its URL first.
async fn serve_http(router: axum::Router) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("http://{}/mcp", listener.local_addr()?);
    // As mcp-server does: without it an SSE answer written in pieces waits on delayed ACKs.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router).await
}
