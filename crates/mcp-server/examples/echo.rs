//! Echoes a tool call's arguments back as structured content, numbers exactly as they arrived:
//! the peer of the numbers interop test (`tests/interop/numbers.sh`), where the official
//! TypeScript and Python SDK clients send the floats their serializers write.
//!
//! ```text
//! cargo run -p mcp-server --example echo                    # stdio
//! cargo run -p mcp-server --example echo -- 127.0.0.1:8000  # Streamable HTTP at /mcp
//! ```

use mcp_server::types::{JsonObject, ObjectSchema, Tool};
use mcp_server::{Context, Error, Server, Structured, ToolRoute};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let any_object = ObjectSchema::from_value(serde_json::json!({ "type": "object" })).expect("an object schema");
    let mut echo = Tool::new(any_object, "echo");
    echo.description = Some("Returns its arguments as structured content".into());
    let server = Server::builder("echo", env!("CARGO_PKG_VERSION"))
        .tool(ToolRoute::raw(
            echo,
            |_: Context, arguments: JsonObject| async move { Ok::<_, Error>(Structured(arguments)) },
        ))
        .build()
        .expect("the echo tool is well-formed");
    match std::env::args().nth(1) {
        Some(address) => {
            let listener = tokio::net::TcpListener::bind(&address).await?;
            eprintln!("echo: serving http://{}/mcp", listener.local_addr()?);
            mcp_server::http::serve(listener, server, mcp_server::http::HttpConfig::default()).await
        }
        None => mcp_server::stdio::serve_stdio(server).await,
    }
}
