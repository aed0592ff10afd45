//! Pinned upstream schema files: `schema/pins.toml` names every file by revision, path and sha256;
//! the working copies under `schema/<rev>/` are ignored by git and filled by [`sync`].

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Every revision, oldest first. `draft` tracks the next revision.
pub const REVISIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", "draft"];

#[derive(Serialize, Deserialize)]
pub struct Pins {
    /// GitHub `owner/name` of the upstream repository.
    pub repository: String,
    /// Upstream commit every file is pinned at.
    pub commit: String,
    /// Per revision: path inside `schema/<rev>/` → sha256 (hex).
    pub revisions: BTreeMap<String, BTreeMap<String, String>>,
    /// Schemas of the official extensions, each from its own upstream (kept by `schema pin`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, ExtensionPin>,
}

/// One extension schema: where it comes from and what it must hash to. The working copy is
/// `schema/extensions/<path>`; a local source directory holds it at `extensions/<path>`.
#[derive(Serialize, Deserialize)]
pub struct ExtensionPin {
    /// Path of the file below `extensions/`, e.g. `ext-tasks/draft/schema.json`.
    pub path: String,
    /// The upstream it was taken from: repository and commit, or package and version.
    pub upstream: String,
    /// Where `schema sync` downloads it when no local copy is at hand.
    pub url: String,
    pub sha256: String,
}

impl Pins {
    pub fn load(root: &Path) -> anyhow::Result<Self> {
        let path = root.join("schema/pins.toml");
        let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))
    }

    pub fn url(&self, revision: &str, file: &str) -> String {
        format!("https://raw.githubusercontent.com/{}/{}/schema/{revision}/{file}", self.repository, self.commit)
    }

    pub fn schema_sha256(&self, revision: &str) -> &str {
        &self.revisions[revision]["schema.json"]
    }

    /// The pin of extension `name`, or an error naming `schema/pins.toml`.
    pub fn extension(&self, name: &str) -> anyhow::Result<&ExtensionPin> {
        self.extensions.get(name).with_context(|| format!("schema/pins.toml pins no extension `{name}`"))
    }
}

/// The working copy of an extension's schema.
pub fn extension_path(root: &Path, pin: &ExtensionPin) -> PathBuf {
    root.join("schema/extensions").join(&pin.path)
}

#[derive(Clone, Copy, PartialEq)]
pub enum Quiet {
    Yes,
    No,
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where files come from when the working copy is missing or stale.
enum Source {
    Dir(PathBuf),
    Download,
}

fn choose_source(root: &Path, from: Option<&Path>) -> Source {
    if let Some(dir) = from {
        return Source::Dir(dir.to_path_buf());
    }
    if let Some(dir) = std::env::var_os("MCP_SCHEMA_DIR") {
        return Source::Dir(PathBuf::from(dir));
    }
    let shared = root.join("../shared/mcp-schema");
    if shared.is_dir() {
        return Source::Dir(shared);
    }
    Source::Download
}

/// Makes `schema/<rev>/<file>` match its pin for every pinned file, copying or downloading what is
/// missing or different. Nothing is written unless its sha256 matches.
pub fn sync(root: &Path, from: Option<&Path>, quiet: Quiet) -> anyhow::Result<()> {
    let pins = Pins::load(root)?;
    let source = choose_source(root, from);
    let mut fetched = 0usize;
    let mut total = 0usize;
    for (revision, files) in &pins.revisions {
        for (file, want) in files {
            total += 1;
            let dest = root.join("schema").join(revision).join(file);
            if fs::read(&dest).is_ok_and(|bytes| sha256_hex(&bytes) == *want) {
                continue;
            }
            let bytes = match &source {
                Source::Dir(dir) => {
                    let src = dir.join(revision).join(file);
                    fs::read(&src).with_context(|| {
                        format!(
                            "schema file {} is missing; pass `--from DIR` or set MCP_SCHEMA_DIR to a \
                             directory laid out as <rev>/schema.json, <rev>/examples/...",
                            src.display()
                        )
                    })?
                }
                Source::Download => download(&pins.url(revision, file)).with_context(|| {
                    format!(
                        "no local schema directory (tried --from, MCP_SCHEMA_DIR, ../shared/mcp-schema) \
                         and downloading {revision}/{file} failed"
                    )
                })?,
            };
            let got = sha256_hex(&bytes);
            if got != *want {
                bail!(
                    "sha256 mismatch for {revision}/{file}: pinned {want}, got {got} (from {}). \
                     Use the upstream files of commit {}, or re-pin deliberately with \
                     `cargo xtask schema pin --from DIR --commit SHA`",
                    match &source {
                        Source::Dir(dir) => dir.join(revision).join(file).display().to_string(),
                        Source::Download => pins.url(revision, file),
                    },
                    pins.commit
                );
            }
            fs::create_dir_all(dest.parent().unwrap())?;
            fs::write(&dest, &bytes).with_context(|| format!("writing {}", dest.display()))?;
            fetched += 1;
        }
    }
    for (name, pin) in &pins.extensions {
        total += 1;
        let dest = extension_path(root, pin);
        if fs::read(&dest).is_ok_and(|bytes| sha256_hex(&bytes) == pin.sha256) {
            continue;
        }
        let (bytes, from) = match &source {
            Source::Dir(dir) => {
                let src = dir.join("extensions").join(&pin.path);
                let bytes = fs::read(&src)
                    .with_context(|| format!("extension schema {} is missing (extension `{name}`)", src.display()))?;
                (bytes, src.display().to_string())
            }
            Source::Download => (
                download(&pin.url).with_context(|| format!("downloading the schema of extension `{name}`"))?,
                pin.url.clone(),
            ),
        };
        let got = sha256_hex(&bytes);
        if got != pin.sha256 {
            bail!(
                "sha256 mismatch for extension `{name}`: pinned {}, got {got} (from {from}, upstream {})",
                pin.sha256,
                pin.upstream
            );
        }
        fs::create_dir_all(dest.parent().unwrap())?;
        fs::write(&dest, &bytes).with_context(|| format!("writing {}", dest.display()))?;
        fetched += 1;
    }
    if quiet == Quiet::No || fetched > 0 {
        eprintln!("schema sync: {total} pinned files verified, {fetched} updated");
    }
    Ok(())
}

fn download(url: &str) -> anyhow::Result<Vec<u8>> {
    let output = Command::new("curl")
        .args(["--fail", "--silent", "--show-error", "--location", "--max-time", "60", url])
        .output()
        .context("running curl (needed to download pinned schema files)")?;
    if !output.status.success() {
        bail!("curl {url}: {}", String::from_utf8_lossy(&output.stderr).trim());
    }
    Ok(output.stdout)
}

/// Rewrites `schema/pins.toml` from `dir`: `schema.json` of every revision plus every example file.
pub fn pin(root: &Path, dir: &Path, commit: &str) -> anyhow::Result<()> {
    let mut revisions = BTreeMap::new();
    for revision in REVISIONS {
        let base = dir.join(revision);
        let mut files = BTreeMap::new();
        let schema =
            fs::read(base.join("schema.json")).with_context(|| format!("reading {}/schema.json", base.display()))?;
        files.insert("schema.json".to_string(), sha256_hex(&schema));
        let examples = base.join("examples");
        if examples.is_dir() {
            for path in walk(&examples)? {
                let rel = path.strip_prefix(&base).unwrap().to_string_lossy().replace('\\', "/");
                files.insert(rel, sha256_hex(&fs::read(&path)?));
            }
        }
        revisions.insert(revision.to_string(), files);
    }
    // Extensions come from their own upstreams: kept as pinned.
    let extensions = Pins::load(root).map(|old| old.extensions).unwrap_or_default();
    let pins = Pins {
        repository: "modelcontextprotocol/modelcontextprotocol".into(),
        commit: commit.into(),
        revisions,
        extensions,
    };
    let text = format!(
        "# Upstream MCP schema files, pinned by sha256. Working copies live in schema/<rev>/ (ignored by git);\n\
         # `cargo xtask schema sync` fills them. Regenerate this file with `cargo xtask schema pin`.\n{}",
        toml::to_string(&pins)?
    );
    fs::write(root.join("schema/pins.toml"), text)?;
    Ok(())
}

fn walk(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace with one pinned revision whose schema.json must hash to `sha256("{}")`.
    fn workspace(dir: &Path) {
        fs::create_dir_all(dir.join("schema")).unwrap();
        let pins = Pins {
            repository: "o/r".into(),
            commit: "c".into(),
            revisions: [("r1".to_string(), [("schema.json".to_string(), sha256_hex(b"{}"))].into_iter().collect())]
                .into_iter()
                .collect(),
            extensions: [(
                "ext-x".to_string(),
                ExtensionPin {
                    path: "ext-x/schema.json".into(),
                    upstream: "o/ext-x c".into(),
                    url: "http://127.0.0.1:9/unused".into(),
                    sha256: sha256_hex(b"[]"),
                },
            )]
            .into_iter()
            .collect(),
        };
        fs::write(dir.join("schema/pins.toml"), toml::to_string(&pins).unwrap()).unwrap();
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-sync-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn sync_copies_verified_files_and_names_bad_ones() {
        let root = temp("root");
        workspace(&root);
        let source = temp("source");
        fs::create_dir_all(source.join("r1")).unwrap();

        let missing = sync(&root, Some(&source), Quiet::Yes).unwrap_err().to_string();
        assert!(missing.contains("r1/schema.json") && missing.contains("--from"), "{missing}");

        fs::write(source.join("r1/schema.json"), b"{ }").unwrap();
        let mismatch = sync(&root, Some(&source), Quiet::Yes).unwrap_err().to_string();
        assert!(mismatch.contains("sha256 mismatch for r1/schema.json"), "{mismatch}");
        assert!(!root.join("schema/r1/schema.json").exists(), "nothing is written unless it matches");

        fs::write(source.join("r1/schema.json"), b"{}").unwrap();
        let no_extension = sync(&root, Some(&source), Quiet::Yes).unwrap_err().to_string();
        assert!(
            no_extension.contains("extensions/ext-x/schema.json") && no_extension.contains("`ext-x`"),
            "{no_extension}"
        );
        fs::create_dir_all(source.join("extensions/ext-x")).unwrap();
        fs::write(source.join("extensions/ext-x/schema.json"), b"[ ]").unwrap();
        let mismatch = sync(&root, Some(&source), Quiet::Yes).unwrap_err().to_string();
        assert!(mismatch.contains("sha256 mismatch for extension `ext-x`"), "{mismatch}");
        fs::write(source.join("extensions/ext-x/schema.json"), b"[]").unwrap();
        sync(&root, Some(&source), Quiet::Yes).unwrap();
        assert_eq!(fs::read(root.join("schema/r1/schema.json")).unwrap(), b"{}");
        assert_eq!(fs::read(root.join("schema/extensions/ext-x/schema.json")).unwrap(), b"[]");
        // A verified working copy is kept even when the source disappears.
        fs::remove_dir_all(&source).unwrap();
        sync(&root, Some(&source), Quiet::Yes).unwrap();
    }
}
