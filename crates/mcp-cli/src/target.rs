//! Which server to talk to: a URL, a command line, or a name from a configuration file in the
//! ecosystem's common format.
//!
//! A configuration file is JSON with the servers under `mcpServers` (Claude Desktop, Cursor,
//! Claude Code's `.mcp.json`) or `servers` (VS Code's `mcp.json`):
//!
//! ```json
//! { "mcpServers": {
//!     "files": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"],
//!                "env": { "LOG": "debug" } },
//!     "notes": { "type": "http", "url": "https://notes.example/mcp",
//!                "headers": { "X-Team": "${TEAM}" } } } }
//! ```
//!
//! `${NAME}` and `${env:NAME}` in strings are replaced by environment variables; a variable that
//! is not set is an error naming it. Without `--config`, the first of [`search_order`] that
//! exists and names the server is used.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A server to connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A Streamable HTTP (or legacy HTTP+SSE) endpoint.
    Url {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
    },
    /// A program speaking MCP over its stdin and stdout.
    Command {
        /// The program, looked up in `PATH`.
        program: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to its environment.
        env: BTreeMap<String, String>,
        /// Its working directory, if not this process's.
        cwd: Option<PathBuf>,
    },
}

impl Target {
    /// A URL (`http://` or `https://`) target without headers.
    pub fn url(url: impl Into<String>) -> Self {
        Target::Url { url: url.into(), headers: BTreeMap::new() }
    }

    /// A command line target: the first word is the program.
    pub fn command<I: IntoIterator<Item = S>, S: Into<String>>(words: I) -> Result<Self, TargetError> {
        let mut words = words.into_iter().map(Into::into);
        let program = words.next().ok_or(TargetError::EmptyCommand)?;
        Ok(Target::Command { program, args: words.collect(), env: BTreeMap::new(), cwd: None })
    }

    /// Whether a word names a URL rather than a configured server.
    pub fn is_url(word: &str) -> bool {
        word.starts_with("http://") || word.starts_with("https://")
    }

    /// Connects `builder`'s client to this server: HTTP with the headers, or the command as a
    /// child process (its stderr inherited) with its environment and working directory.
    pub async fn connect(
        &self,
        mut builder: mcp_client::ClientBuilder,
    ) -> Result<mcp_client::Client, mcp_client::Error> {
        match self {
            Target::Url { url, headers } => {
                for (name, value) in headers {
                    builder = builder.http_header(name.clone(), value.clone());
                }
                builder.connect_http(url).await
            }
            Target::Command { program, args, env, cwd } => {
                let mut command = mcp_client::StdioCommand::new(program).args(args);
                for (key, value) in env {
                    command = command.env(key, value);
                }
                if let Some(cwd) = cwd {
                    command = command.current_dir(cwd.clone());
                }
                builder.connect_stdio(command).await
            }
        }
    }

    /// A short description for messages: the URL, or the command line.
    pub fn describe(&self) -> String {
        match self {
            Target::Url { url, .. } => url.clone(),
            Target::Command { program, args, .. } => {
                std::iter::once(program.as_str()).chain(args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
            }
        }
    }
}

/// Why a target could not be resolved.
#[derive(Debug)]
#[non_exhaustive]
pub enum TargetError {
    /// `--` was given with nothing after it.
    EmptyCommand,
    /// No configuration file names this server.
    UnknownServer {
        /// The name asked for.
        name: String,
        /// The files read, with the names each defines.
        searched: Vec<(PathBuf, Vec<String>)>,
    },
    /// A configuration file could not be read or parsed.
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the server's name where it concerns one entry.
        message: String,
    },
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::EmptyCommand => f.write_str("`--` must be followed by the server's command line"),
            TargetError::UnknownServer { name, searched } if searched.is_empty() => write!(
                f,
                "no server named {name:?}: no configuration file was found (looked for {}); \
                 give a URL, `-- COMMAND ARGS…`, or `--config PATH`",
                search_order().iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            ),
            TargetError::UnknownServer { name, searched } => {
                write!(f, "no server named {name:?} in ")?;
                let files: Vec<String> = searched
                    .iter()
                    .map(|(path, names)| format!("{} (servers: {})", path.display(), names.join(", ")))
                    .collect();
                write!(f, "{}", files.join("; "))
            }
            TargetError::Config { path, message } => write!(f, "{}: {message}", path.display()),
        }
    }
}

impl std::error::Error for TargetError {}

/// One server entry of a configuration file (the fields the common format uses).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct File {
    mcp_servers: Option<BTreeMap<String, serde_json::Value>>,
    servers: Option<BTreeMap<String, serde_json::Value>>,
}

/// The files read, in order, when no `--config` is given: the project's own (`.mcp.json`,
/// `.vscode/mcp.json`, `.cursor/mcp.json` in the current directory), then the user's
/// (`$XDG_CONFIG_HOME/mcp/mcp.json`, `~/.cursor/mcp.json`, Claude Desktop's configuration).
pub fn search_order() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> =
        [".mcp.json", ".vscode/mcp.json", ".cursor/mcp.json"].iter().map(PathBuf::from).collect();
    if let Some(config) = user_config_dir() {
        files.push(config.join("mcp/mcp.json"));
    }
    if let Some(home) = std::env::home_dir() {
        files.push(home.join(".cursor/mcp.json"));
        if cfg!(target_os = "macos") {
            files.push(home.join("Library/Application Support/Claude/claude_desktop_config.json"));
        }
    }
    if let Some(config) = user_config_dir() {
        files.push(config.join("Claude/claude_desktop_config.json"));
    }
    files
}

/// The user's configuration directory: `$XDG_CONFIG_HOME`, `%APPDATA%`, else `~/.config`.
pub fn user_config_dir() -> Option<PathBuf> {
    let from_env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if cfg!(windows) {
        return from_env("APPDATA");
    }
    from_env("XDG_CONFIG_HOME").or_else(|| std::env::home_dir().map(|home| home.join(".config")))
}

/// The server named `name`: from `config` if given, else from the first file of
/// [`search_order`] that defines it.
pub fn resolve(name: &str, config: Option<&Path>) -> Result<Target, TargetError> {
    let files = match config {
        Some(path) => vec![path.to_owned()],
        None => search_order().into_iter().filter(|path| path.is_file()).collect(),
    };
    let mut searched = Vec::new();
    for path in files {
        let servers = read_servers(&path)?;
        if let Some(entry) = servers.get(name) {
            return entry_target(&path, name, entry.clone());
        }
        searched.push((path, servers.keys().cloned().collect()));
    }
    Err(TargetError::UnknownServer { name: name.to_owned(), searched })
}

/// Every server a configuration file defines, by name.
pub fn list(path: &Path) -> Result<BTreeMap<String, Target>, TargetError> {
    read_servers(path)?.into_iter().map(|(name, entry)| Ok((name.clone(), entry_target(path, &name, entry)?))).collect()
}

fn read_servers(path: &Path) -> Result<BTreeMap<String, serde_json::Value>, TargetError> {
    let config_error = |message: String| TargetError::Config { path: path.to_owned(), message };
    let text = std::fs::read_to_string(path).map_err(|e| config_error(format!("cannot read: {e}")))?;
    let file: File = serde_json::from_str(&text).map_err(|e| config_error(format!("not valid JSON: {e}")))?;
    match (file.mcp_servers, file.servers) {
        (Some(mut a), Some(b)) => {
            a.extend(b);
            Ok(a)
        }
        (Some(servers), None) | (None, Some(servers)) => Ok(servers),
        (None, None) => Err(config_error("has neither `mcpServers` nor `servers`".into())),
    }
}

fn entry_target(path: &Path, name: &str, entry: serde_json::Value) -> Result<Target, TargetError> {
    let config_error = |message: String| TargetError::Config { path: path.to_owned(), message };
    let entry: Entry =
        serde_json::from_value(entry).map_err(|e| config_error(format!("server {name:?} is malformed: {e}")))?;
    let expand = |text: &str| expand_variables(text).map_err(|e| config_error(format!("server {name:?}: {e}")));
    let expand_map = |map: BTreeMap<String, String>| -> Result<BTreeMap<String, String>, TargetError> {
        map.into_iter().map(|(k, v)| Ok((k, expand(&v)?))).collect()
    };
    match (entry.command, entry.url) {
        (Some(command), None) => {
            if let Some(kind) = entry.kind.as_deref().filter(|kind| *kind != "stdio") {
                return Err(config_error(format!("server {name:?} has a command but type {kind:?}")));
            }
            Ok(Target::Command {
                program: expand(&command)?,
                args: entry.args.iter().map(|arg| expand(arg)).collect::<Result<_, _>>()?,
                env: expand_map(entry.env)?,
                cwd: entry.cwd,
            })
        }
        (None, Some(url)) => {
            let url = expand(&url)?;
            if !Target::is_url(&url) {
                return Err(config_error(format!("server {name:?}: url {url:?} is not http:// or https://")));
            }
            Ok(Target::Url { url, headers: expand_map(entry.headers)? })
        }
        (Some(_), Some(_)) => Err(config_error(format!("server {name:?} has both `command` and `url`"))),
        (None, None) => Err(config_error(format!("server {name:?} has neither `command` nor `url`"))),
    }
}

/// Replaces `${NAME}` and `${env:NAME}` with the environment's values.
fn expand_variables(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| format!("unclosed `${{` in {text:?}"))?;
        let name = after[..end].strip_prefix("env:").unwrap_or(&after[..end]);
        let value = std::env::var(name).map_err(|_| format!("the variable {name} is not set (used in {text:?})"))?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn reads_both_keys_and_both_kinds() {
        let (_dir, path) = write(
            r#"{"mcpServers": {"a": {"command": "srv", "args": ["--x"], "env": {"K": "v"}}},
                "servers": {"b": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"X": "y"}}}}"#,
        );
        let servers = list(&path).unwrap();
        assert_eq!(
            servers["a"],
            Target::Command {
                program: "srv".into(),
                args: vec!["--x".into()],
                env: [("K".to_owned(), "v".to_owned())].into(),
                cwd: None
            }
        );
        assert_eq!(
            servers["b"],
            Target::Url { url: "http://127.0.0.1:1/mcp".into(), headers: [("X".to_owned(), "y".to_owned())].into() }
        );
    }

    #[test]
    fn an_unknown_name_lists_what_the_file_has() {
        let (_dir, path) = write(r#"{"mcpServers": {"a": {"command": "srv"}, "b": {"command": "srv"}}}"#);
        let error = resolve("c", Some(&path)).unwrap_err().to_string();
        assert!(error.contains("no server named \"c\"") && error.contains("servers: a, b"), "{error}");
    }

    #[test]
    fn variables_are_expanded_and_a_missing_one_is_named() {
        assert_eq!(expand_variables("${PATH}").unwrap(), std::env::var("PATH").unwrap());
        assert_eq!(expand_variables("a${env:PATH}b").unwrap(), format!("a{}b", std::env::var("PATH").unwrap()));
        let error = expand_variables("Bearer ${MCP_CLI_TEST_UNSET_VARIABLE}").unwrap_err();
        assert!(error.contains("MCP_CLI_TEST_UNSET_VARIABLE is not set"), "{error}");
        assert!(expand_variables("${oops").unwrap_err().contains("unclosed"));
    }

    #[test]
    fn malformed_entries_are_refused_with_the_servers_name() {
        for (text, expected) in [
            (r#"{"mcpServers": {"x": {}}}"#, "neither `command` nor `url`"),
            (r#"{"mcpServers": {"x": {"command": "a", "url": "http://h"}}}"#, "both"),
            (r#"{"mcpServers": {"x": {"url": "ftp://h"}}}"#, "not http"),
            (r#"{"mcpServers": {"x": {"command": "a", "type": "http"}}}"#, "type \"http\""),
            (r#"{"other": {}}"#, "neither `mcpServers` nor `servers`"),
            ("{", "not valid JSON"),
        ] {
            let (_dir, path) = write(text);
            let error = resolve("x", Some(&path)).unwrap_err().to_string();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }
}
