//! A client for the notes server (`crates/mcp-server/examples/notes.rs`): typed arguments,
//! structured output, a resource, a template, a prompt, and a confirmation form answered with
//! the type the server asked for.
//!
//! ```text
//! notes-client stdio target/debug/examples/notes
//! notes-client http http://127.0.0.1:8002/mcp
//! notes-client http http://127.0.0.1:8002/mcp --legacy   # the 2025-11-25 handshake
//! ```

use mcp_client::types::{ContentBlock, ElicitRequestParams, ReadResourceResultContentsItem};
use mcp_client::{Client, ElicitationModes, ElicitationResponse, EraPreference, Handlers, StdioCommand};

#[derive(serde::Serialize)]
struct AddNote<'a> {
    title: &'a str,
    body: &'a str,
}

#[derive(serde::Serialize)]
struct NoteTitle<'a> {
    title: &'a str,
}

#[derive(serde::Deserialize)]
struct NoteList {
    titles: Vec<String>,
    count: usize,
}

/// The server's confirmation form, answered with the same shape.
#[derive(serde::Serialize)]
struct Confirm {
    confirm: bool,
}

fn text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|block| if let ContentBlock::Text(t) = block { Some(t.text.as_str()) } else { None })
        .collect()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let handlers = Handlers::new().elicitation(ElicitationModes::FORM, |request| async move {
        if let ElicitRequestParams::Form(form) = &request {
            println!("asked: {}", form.message);
        }
        ElicitationResponse::accept_value(&Confirm { confirm: true })
    });
    let era = if args.iter().any(|arg| arg == "--legacy") { EraPreference::Legacy } else { EraPreference::Auto };
    let builder = Client::builder("notes-client", env!("CARGO_PKG_VERSION")).handlers(handlers).era(era);
    let client = match (args.first().map(String::as_str), args.get(1)) {
        (Some("stdio"), Some(program)) => builder.connect_stdio(StdioCommand::new(program)).await?,
        (Some("http"), Some(url)) => builder.connect_http(url).await?,
        _ => return Err("usage: notes-client (stdio PROGRAM | http URL) [--legacy]".into()),
    };
    println!("era: {:?} {}", client.era(), client.protocol_version());

    let added = client.call_tool("add_note", &AddNote { title: "groceries", body: "milk, eggs" }).await?;
    println!("add_note: {}", text(&added.content));
    client.call_tool("add_note", &AddNote { title: "ideas", body: "an MCP server in Rust" }).await?;

    let listed = client.call_tool("list_notes", ()).await?;
    let list: NoteList = serde_json::from_value(listed.structured_content.ok_or("no structured content")?)?;
    println!("list_notes: {} {:?}", list.count, list.titles);

    for uri in ["notes://index", "notes://groceries"] {
        for item in client.read_resource(uri).await?.contents {
            if let ReadResourceResultContentsItem::TextResourceContents(contents) = item {
                println!("read {uri}: {:?}", contents.text);
            }
        }
    }

    let prompt = client.get_prompt("summarize", &NoteTitle { title: "ideas" }).await?;
    let first = prompt.messages.first().ok_or("an empty prompt")?;
    println!("prompt: {:?}", text(std::slice::from_ref(&first.content)));

    let deleted = client.call_tool("delete_note", &NoteTitle { title: "groceries" }).await?;
    println!("delete_note: {}", text(&deleted.content));
    let listed = client.call_tool("list_notes", ()).await?;
    println!("left: {}", serde_json::to_string(&listed.structured_content)?);
    client.close().await;
    Ok(())
}
