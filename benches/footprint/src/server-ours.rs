//! The one-tool server on mcp-server (default features): `add` over stdio (`server stdio`) or
//! Streamable HTTP on 127.0.0.1 (`server http`, an ephemeral port printed first). The peer
//! benchmark's `ours` before its realistic and `--auth` cells.

use mcp_server::{Context, Error, Server, ToolRoute};

/// Two integers to add.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

fn server() -> Server {
    Server::builder("footprint", "1.0.0")
        .tool(
            ToolRoute::new("add", |_: Context, Add { a, b }: Add| async move { Ok::<_, Error>((a + b).to_string()) })
                .description("Adds two integers"),
        )
        .build()
        .expect("valid tool definitions")
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    match std::env::args().nth(1).as_deref() {
        Some("stdio") => mcp_server::stdio::serve_stdio(server()).await,
        Some("http") => {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            println!("http://{}/mcp", listener.local_addr()?);
            mcp_server::http::serve(listener, server(), mcp_server::http::HttpConfig::default()).await
        }
        _ => panic!("usage: server http | server stdio"),
    }
}
