//! The README's Quick start compiles as written: its dependency list and its code, in a crate of
//! their own (issue 44: the list once omitted `serde_json`, which the code uses).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The first fenced block of `language` after `heading` in `text`.
fn block<'a>(text: &'a str, heading: &str, language: &str) -> &'a str {
    let section = &text[text.find(heading).unwrap_or_else(|| panic!("no {heading:?}"))..];
    let fence = format!("```{language}\n");
    let start = section.find(&fence).unwrap_or_else(|| panic!("no {language} block under {heading:?}")) + fence.len();
    let end = start + section[start..].find("```").expect("a closed block");
    &section[start..end]
}

#[test]
fn the_readme_quick_start_compiles_with_exactly_its_dependency_list() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let readme = std::fs::read_to_string(workspace.join("README.md")).unwrap();
    let dependencies = block(&readme, "## Quick start", "toml");
    let code = block(&readme, "## Quick start", "rust");
    assert!(dependencies.starts_with("[dependencies]\n"), "{dependencies}");
    // The README's paths are relative to a project beside the checkout: point them at it.
    let crates = workspace.join("crates");
    let dependencies = dependencies.replace("../mcp/crates", crates.to_str().unwrap());
    let project: PathBuf = workspace.join("target/quick-start/project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"quick-start\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         {dependencies}\n[workspace]\n"
    );
    std::fs::write(project.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(project.join("src/main.rs"), code).unwrap();
    // The workspace's versions, so that the check needs nothing the registry cache lacks.
    std::fs::copy(workspace.join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["check", "--offline", "--quiet", "--manifest-path"])
        .arg(project.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", workspace.join("target/quick-start/target"))
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the Quick start does not compile as written:\n{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
}
