//! Lists a server's skills (SEP-2640 skills extension), loads each one's `SKILL.md` verified
//! against its entry (size, SHA-256 digest, frontmatter) and reads every file it lists.
//!
//! ```text
//! skills http://127.0.0.1:3001/mcp
//! skills -- cargo run -q -p mcp-server --example skills-server
//! ```
//! Exits non-zero when any step fails, so scripts can use it as a smoke test.

use std::process::ExitCode;

use mcp_client::types::JsonObject;
use mcp_client::types::ext::SKILLS;
use mcp_client::types::ext::skills::SkillResources;
use mcp_client::{Client, Error, Handlers, StderrMode, StdioCommand};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let target: Vec<String> = std::env::args().skip(1).filter(|a| a != "--").collect();
    if target.is_empty() {
        eprintln!("usage: skills (URL | -- COMMAND ARGS...)");
        return ExitCode::from(2);
    }
    match run(&target).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("skills: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(target: &[String]) -> Result<(), Error> {
    // Opting in declares the extension on every request (modern) or in `initialize` (legacy).
    let handlers = Handlers::new().extension(SKILLS, JsonObject::new());
    let builder = Client::builder("mcp-client-skills-example", env!("CARGO_PKG_VERSION")).handlers(handlers);
    let client = if target.len() == 1 && target[0].starts_with("http") {
        builder.connect_http(&target[0]).await?
    } else {
        let command = StdioCommand::new(&target[0]).args(&target[1..]).stderr(StderrMode::Inherit);
        builder.connect_stdio(command).await?
    };
    let skills = client.all_skills().await?;
    println!("{} skill(s), era {:?}", skills.len(), client.server().era);
    for entry in &skills {
        let loaded = client.load_skill(entry).await?;
        let name = entry.frontmatter.get("name").and_then(|n| n.as_str()).unwrap_or("(unnamed)");
        let heading = loaded.instructions.lines().find(|l| l.starts_with('#')).unwrap_or("");
        println!("{name}: {} ({} bytes of instructions) {heading}", entry.uri, loaded.instructions.len());
        if let SkillResources::Files(files) = &entry.resources {
            for file in files.iter().filter(|f| f.uri != entry.uri) {
                let bytes = client.read_skill_file(entry, &file.uri).await?;
                println!("  {} ({} bytes, verified)", file.uri, bytes.len());
            }
        }
    }
    client.close().await;
    Ok(())
}
