//! The `add` tool on this repository's mcp-server: `ours http [--max-sessions N]` serves
//! Streamable HTTP on 127.0.0.1 (an ephemeral port, printed as the first line of stdout);
//! `ours stdio` serves stdin and stdout.

use mcp_server::{Context, Error, Server, ToolRoute};

/// Two integers to add.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

fn server() -> Server {
    Server::builder("peer-bench", "1.0.0")
        .tool(
            ToolRoute::new("add", |_: Context, Add { a, b }: Add| async move { Ok::<_, Error>((a + b).to_string()) })
                .description("Adds two integers"),
        )
        .build()
        .expect("valid tool definitions")
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("stdio") => mcp_server::stdio::serve_stdio(server()).await,
        Some("http") => {
            let mut config = mcp_server::http::HttpConfig::default();
            // The session benchmark holds more sessions open than the default caps, all from one
            // address (loopback); without this it would measure eviction or refusal, not holding.
            if let Some(at) = args.iter().position(|a| a == "--max-sessions") {
                config.max_sessions = args[at + 1].parse().expect("--max-sessions N");
                config.max_sessions_per_client = config.max_sessions;
            }
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            println!("http://{}/mcp", listener.local_addr()?);
            mcp_server::http::serve(listener, server(), config).await
        }
        _ => panic!("usage: ours http [--max-sessions N] | ours stdio"),
    }
}
