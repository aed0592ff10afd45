//! `codegen`: typed Rust bindings of a server's tools, prompts and templates
//! ([`mcp_cli::bindings`]); `--check` compares a file with the server, entry by entry.

use std::path::Path;

use mcp_cli::bindings::{self, CheckError, Options};
use mcp_cli::contract::Contract;

use super::super::failure::{Failure, Kind, Outcome};
use super::super::render::dim;
use super::Session;

pub async fn codegen(session: Session, out: &Path, check: bool) -> Outcome {
    let contract = Contract::fetch(&session.client).await.map_err(|e| session.failed(e))?;
    if check {
        let text = std::fs::read_to_string(out)
            .map_err(|e| Failure::usage(format!("{}: {e}; generate it first (without --check)", out.display())))?;
        return match bindings::check(&text, &contract) {
            Ok(()) => {
                if session.human() {
                    anstream::println!("{} matches the server's contract", out.display());
                }
                Ok(())
            }
            Err(error @ CheckError::Changed(_)) => {
                Err(Failure::new(Kind::ToolError, format!("{}: {error}", out.display())))
            }
            Err(error) => Err(Failure::usage(format!("{}: {error}", out.display()))),
        };
    }
    let text = bindings::generate(&contract, &Options::default().regenerate_with(regenerate_command()))
        .map_err(|e| Failure::new(Kind::Protocol, format!("the server's contract cannot become Rust: {e}")))?;
    let written = bindings::write_if_changed(out, &text)
        .map_err(|e| Failure::usage(format!("could not write {}: {e}", out.display())))?;
    if session.human() {
        let count = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        let counts = format!(
            "{}, {}, {}",
            count(contract.tools.len(), "tool"),
            count(contract.prompts.len(), "prompt"),
            count(contract.templates.len(), "template")
        );
        let what = if written { "wrote" } else { "unchanged:" };
        anstream::println!("{what} {} {}", out.display(), dim(&format!("({counts})")));
    }
    Ok(())
}

/// This very command line, as the file's header and `--check` repeat it.
fn regenerate_command() -> String {
    let words: Vec<String> = std::env::args().skip(1).filter(|w| w != "--check").collect();
    let quoted: Vec<String> = words
        .iter()
        .map(|w| if w.is_empty() || w.contains(char::is_whitespace) { format!("'{w}'") } else { w.clone() })
        .collect();
    format!("mcp {}", quoted.join(" "))
}
