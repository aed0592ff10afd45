//! The same client on rmcp (`client`, `transport-streamable-http-client-reqwest`, `reqwest`,
//! `transport-child-process`): `client URL` or `client -- COMMAND ARGS...` connects to the
//! server, calls `add` with 1 and 2 and prints the result's content.

use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let client = match args.as_slice() {
        [url] if url.starts_with("http://") || url.starts_with("https://") => {
            ().serve(StreamableHttpClientTransport::from_uri(url.as_str())).await?
        }
        [dashes, command, rest @ ..] if dashes == "--" => {
            let mut command = tokio::process::Command::new(command);
            command.args(rest);
            ().serve(TokioChildProcess::new(command)?).await?
        }
        _ => return Err("usage: client URL | client -- COMMAND ARGS...".into()),
    };
    let arguments = serde_json::json!({ "a": 1, "b": 2 }).as_object().cloned().unwrap_or_default();
    let result = client.call_tool(CallToolRequestParams::new("add").with_arguments(arguments)).await?;
    println!("{}", serde_json::to_string(&result.content)?);
    client.cancel().await?;
    Ok(())
}
