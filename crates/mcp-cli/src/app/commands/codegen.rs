//! `codegen`: typed Rust bindings of a server's tools, prompts and templates.

use std::path::Path;

use mcp_cli::target::Target;

use super::super::failure::{Failure, Outcome};
use super::Session;

pub async fn codegen(_session: Session, _target: &Target, _out: &Path, _check: bool) -> Outcome {
    Err(Failure::usage("codegen is being built"))
}
