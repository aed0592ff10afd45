//! A client on mcp-client (default features: stdio, HTTP, HTTPS): `client URL` or
//! `client -- COMMAND ARGS...` connects to the server, calls `add` with 1 and 2 and prints the
//! result's content.

use mcp_client::{Client, StdioCommand};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let builder = Client::builder("footprint-client", "1.0.0");
    let client = match args.as_slice() {
        [url] if url.starts_with("http://") || url.starts_with("https://") => builder.connect_http(url).await?,
        [dashes, command, rest @ ..] if dashes == "--" => {
            builder.connect_stdio(StdioCommand::new(command).args(rest)).await?
        }
        _ => return Err("usage: client URL | client -- COMMAND ARGS...".into()),
    };
    let result = client.call_tool("add", serde_json::json!({ "a": 1, "b": 2 })).await?;
    println!("{}", serde_json::to_string(&result.content)?);
    client.close().await;
    Ok(())
}
