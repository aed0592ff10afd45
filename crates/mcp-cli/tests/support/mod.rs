//! Running `mcp` against this workspace's conformance server (stdio or HTTP), in a scratch
//! directory with its own configuration and credentials directories.

#![allow(dead_code)]

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;

/// The `mcp` binary under test.
pub fn mcp_path() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mcp"))
}

/// An example of mcp-server (built with `cargo test --workspace --all-features`, else here).
pub fn example(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    let path = mcp_path().parent().unwrap().join("examples").join(name);
    BUILT.get_or_init(|| {
        if !path.is_file() {
            let status = Command::new(env!("CARGO"))
                .args(["build", "-q", "-p", "mcp-server", "--all-features", "--examples"])
                .status()
                .expect("cargo runs");
            assert!(status.success(), "building mcp-server's examples failed");
        }
    });
    assert!(path.is_file(), "{} is missing", path.display());
    path
}

/// The conformance server as a stdio command line (the words after `--`).
pub fn stdio_server() -> Vec<String> {
    vec![example("conformance-server").display().to_string(), "--stdio".into()]
}

/// A scratch home: `mcp` runs in it, finds no configuration but what a test writes, and keeps
/// credentials in it.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Self {
        Scratch { dir: tempfile::tempdir().unwrap() }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `mcp` with stdin empty.
    pub fn command(&self) -> Command {
        let mut command = self.terminal_command();
        command.stdin(Stdio::null());
        command
    }

    /// `mcp` with stdin left for a pseudo-terminal to set.
    pub fn terminal_command(&self) -> Command {
        let mut command = Command::new(mcp_path());
        command
            .current_dir(self.path())
            .env("HOME", self.path())
            .env("XDG_CONFIG_HOME", self.path().join("config"))
            .env_remove("MCP_CONFIG")
            .env_remove("MCP_CREDENTIALS_DIR")
            .env_remove("BROWSER")
            .env("NO_COLOR", "1");
        command
    }

    /// Runs `mcp ARGS` and waits.
    pub fn run(&self, args: &[&str]) -> Run {
        Run(self.command().args(args).output().expect("mcp runs"))
    }

    /// Runs `mcp ARGS -- <conformance server over stdio>`.
    pub fn run_stdio(&self, args: &[&str]) -> Run {
        let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        all.push("--".into());
        all.extend(stdio_server());
        Run(self.command().args(&all).output().expect("mcp runs"))
    }
}

/// A finished run of `mcp`.
pub struct Run(pub Output);

impl Run {
    pub fn code(&self) -> i32 {
        self.0.status.code().unwrap_or(-1)
    }

    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.0.stdout).into_owned()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }

    /// Asserts the exit code, showing both outputs if it differs.
    #[track_caller]
    pub fn expect(self, code: i32) -> Self {
        assert_eq!(self.code(), code, "exit code\n--- stdout\n{}\n--- stderr\n{}", self.stdout(), self.stderr());
        self
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout()).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout()))
    }

    /// The messages `--raw` printed in one direction (`->` or `<-`), parsed.
    pub fn raw(&self, arrow: &str) -> Vec<serde_json::Value> {
        self.stdout()
            .lines()
            .filter_map(|line| line.strip_prefix(arrow).map(str::trim))
            .map(|text| serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}")))
            .collect()
    }
}

/// The conformance server over HTTP on a loopback port; killed on drop.
pub struct HttpServer {
    child: Child,
    pub url: String,
}

impl HttpServer {
    pub fn start() -> Self {
        let mut child = Command::new(example("conformance-server"))
            .args(["--addr", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the conformance server starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let line = lines.next().expect("the server prints its URL").unwrap();
            if let Some(at) = line.find("http://") {
                break line[at..].trim().to_owned();
            }
        };
        // Keep reading its stderr so that the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        HttpServer { child, url }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends SIGINT to a child, as Ctrl-C in its terminal would.
pub fn interrupt(child: &Child) {
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().expect("kill runs");
    assert!(status.success());
}
