//! Serves every skill under a directory (SEP-2640 skills extension): each folder holding a
//! `SKILL.md` is one skill, its other files are listed in its entry and readable as resources.
//!
//! ```text
//! skills-server [DIR]                   # stdio
//! skills-server [DIR] --http 127.0.0.1:3001
//! ```
//! `DIR` defaults to this crate's `examples/skills`.

use std::path::PathBuf;

use mcp_server::{Server, SkillRoute};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills"));
    let mut http = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => http = Some(args.next().ok_or("--http needs an address")?),
            _ => dir = PathBuf::from(arg),
        }
    }
    let skills = SkillRoute::scan(&dir)?;
    if skills.is_empty() {
        return Err(format!("no SKILL.md under {}", dir.display()).into());
    }
    let server = Server::builder("skills-server", env!("CARGO_PKG_VERSION"))
        .instructions("Skills to load on demand: list them with skills/list, read a SKILL.md with resources/read.")
        .skills(skills)
        .skill_directory_read(true)
        .build()?;
    match http {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(&addr).await?;
            eprintln!("skills-server: listening on http://{}/mcp", listener.local_addr()?);
            mcp_server::http::serve(listener, server, Default::default()).await?;
        }
        None => mcp_server::stdio::serve_stdio(server).await?,
    }
    Ok(())
}
