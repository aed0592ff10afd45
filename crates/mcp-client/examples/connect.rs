//! Connects to any MCP server, prints the negotiated era and the server's tools, and calls one.
//!
//! ```text
//! connect [options] http://127.0.0.1:3001/mcp
//! connect [options] -- npx -y @modelcontextprotocol/server-everything stdio
//!
//! options:
//!   --era auto|modern|legacy   which era(s) to negotiate (default auto)
//!   --call TOOL                the tool to call (default: the first one needing no arguments)
//!   --args JSON                its arguments (a JSON object)
//!   --read URI                 also read this resource ("first": the first one listed)
//!   --prompt NAME              also get this prompt ("first": the first one listed)
//!   --prompt-args JSON         its arguments (an object of strings)
//! ```
//!
//! Exits non-zero when any step fails, so scripts can use it as a smoke test.

use std::collections::BTreeMap;
use std::process::ExitCode;

use mcp_client::{Client, EraPreference, Error, StderrMode, StdioCommand};
use serde_json::Value;

#[derive(Default)]
struct Options {
    era: EraPreference,
    call: Option<String>,
    args: Option<serde_json::Map<String, Value>>,
    read: Option<String>,
    prompt: Option<String>,
    prompt_args: BTreeMap<String, String>,
    target: Vec<String>,
}

fn parse() -> Result<Options, String> {
    let mut options = Options::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--era" => {
                options.era = match value("--era")?.as_str() {
                    "auto" => EraPreference::Auto,
                    "modern" => EraPreference::Modern,
                    "legacy" => EraPreference::Legacy,
                    other => return Err(format!("unknown era {other:?}")),
                }
            }
            "--call" => options.call = Some(value("--call")?),
            "--args" => {
                options.args = Some(serde_json::from_str(&value("--args")?).map_err(|e| format!("--args: {e}"))?)
            }
            "--read" => options.read = Some(value("--read")?),
            "--prompt" => options.prompt = Some(value("--prompt")?),
            "--prompt-args" => {
                options.prompt_args =
                    serde_json::from_str(&value("--prompt-args")?).map_err(|e| format!("--prompt-args: {e}"))?
            }
            "--" => {
                options.target.extend(args.by_ref());
            }
            _ => options.target.push(arg),
        }
    }
    if options.target.is_empty() {
        return Err("give a server URL, or -- and a command".into());
    }
    Ok(options)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let options = match parse() {
        Ok(options) => options,
        Err(e) => {
            eprintln!(
                "connect: {e}\nusage: connect [--era E] [--call TOOL --args JSON] [--read URI] [--prompt NAME] (URL | -- COMMAND ARGS...)"
            );
            return ExitCode::from(2);
        }
    };
    match run(options).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("connect: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(options: Options) -> Result<(), Error> {
    let builder = Client::builder("mcp-client-connect-example", env!("CARGO_PKG_VERSION")).era(options.era);
    let target = &options.target;
    let client = if target.len() == 1 && (target[0].starts_with("http://") || target[0].starts_with("https://")) {
        builder.connect_http(&target[0]).await?
    } else {
        let command = StdioCommand::new(&target[0]).args(&target[1..]).stderr(StderrMode::Capture);
        builder.connect_stdio(command).await?
    };
    let server = client.server();
    let name = server.server_info.as_ref().map_or("(unnamed)".to_owned(), |i| format!("{} {}", i.name, i.version));
    println!("server: {name}");
    println!("era: {:?}, protocol version {}, transport {:?}", server.era, server.protocol_version, server.transport);

    let tools = client.all_tools().await?;
    println!("tools ({}):", tools.len());
    for tool in &tools {
        println!("  {} - {}", tool.name, tool.description.as_deref().unwrap_or("").lines().next().unwrap_or(""));
    }
    let call = options.call.clone().or_else(|| {
        tools
            .iter()
            .find(|t| t.input_schema.to_value().get("required").and_then(Value::as_array).is_none_or(|r| r.is_empty()))
            .map(|t| t.name.clone())
    });
    if let Some(tool) = call {
        let result = client.call_tool(&tool, options.args.clone()).await?;
        println!("called {tool}: {}", serde_json::to_string(&result.content).unwrap_or_default());
        if result.is_error == Some(true) {
            return Err(Error::Handler(format!("tool {tool} reported an error")));
        }
    }
    if let Some(uri) = &options.read {
        let uri = if uri == "first" {
            client.all_resources().await?.first().map(|r| r.uri.clone()).unwrap_or_default()
        } else {
            uri.clone()
        };
        let read = client.read_resource(&uri).await?;
        println!("read {uri}: {} content item(s)", read.contents.len());
    }
    if let Some(prompt) = &options.prompt {
        let prompt = if prompt == "first" {
            client.all_prompts().await?.first().map(|p| p.name.clone()).unwrap_or_default()
        } else {
            prompt.clone()
        };
        let got = client.get_prompt(&prompt, options.prompt_args.clone()).await?;
        println!("prompt {prompt}: {} message(s)", got.messages.len());
    }
    client.close().await;
    Ok(())
}
