//! `mcp login` against the notes example protected by a real authorization server
//! (oidc-provider): the browser step is `curl` following the redirects to the loopback callback,
//! tokens are kept 0600 and reused, a larger scope is a new login, `mcp logout` forgets them.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use mcp_tests::oidc::OidcProvider;
use mcp_tests::workspace_root;

/// `target/debug` (or the profile directory this test was built into).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(Path::parent).unwrap().to_owned()
}

/// A binary of the workspace, built here when `cargo test` did not build it.
fn built(path: PathBuf, build: &[&str]) -> PathBuf {
    if !path.is_file() {
        let status = Command::new(env!("CARGO")).args(build).current_dir(workspace_root()).status().unwrap();
        assert!(status.success(), "cargo {build:?} failed");
    }
    path
}

struct Notes(Child, String);

impl Notes {
    fn start(issuer: &str) -> Notes {
        let notes = built(
            profile_dir().join("examples/notes"),
            &["build", "-q", "-p", "mcp-server", "--all-features", "--example", "notes"],
        );
        let mut child = Command::new(notes)
            .args(["--http", "127.0.0.1:0", "--issuer", issuer])
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let line = lines.next().expect("notes prints its URL").unwrap();
            if let Some(url) = line.strip_prefix("notes: listening on ") {
                break url.trim().to_owned();
            }
        };
        std::thread::spawn(move || lines.for_each(drop));
        Notes(child, url)
    }
}

impl Drop for Notes {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Mcp {
    binary: PathBuf,
    home: tempfile::TempDir,
    browser: PathBuf,
    port: u16,
}

impl Mcp {
    fn new() -> Mcp {
        let binary = built(profile_dir().join("mcp"), &["build", "-q", "-p", "mcp-cli"]);
        let home = tempfile::tempdir().unwrap();
        // The "browser": a user agent that follows redirects and keeps cookies, as the provider's
        // headless login expects, ending at mcp's loopback callback.
        let browser = home.path().join("browser.sh");
        std::fs::write(&browser, "#!/bin/sh\nexec curl -sS -L -c \"$0.jar\" -b \"$0.jar\" -o /dev/null \"$1\"\n")
            .unwrap();
        std::fs::set_permissions(&browser, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        Mcp { binary, home, browser, port }
    }

    fn run(&self, args: &[&str], with_browser: bool) -> Output {
        let mut command = Command::new(&self.binary);
        command
            .args(args)
            .args(["--callback-port", &self.port.to_string()])
            .current_dir(self.home.path())
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .env("NO_COLOR", "1")
            .env_remove("MCP_CREDENTIALS_DIR")
            .stdin(Stdio::null());
        if with_browser {
            command.env("BROWSER", &self.browser);
        } else {
            command.env_remove("BROWSER");
        }
        command.output().unwrap()
    }
}

#[track_caller]
fn expect(output: &Output, code: i32) -> String {
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(code), "--- stdout\n{stdout}\n--- stderr\n{stderr}");
    format!("{stdout}{stderr}")
}

#[test]
fn login_keeps_tokens_steps_up_and_logs_out() {
    let provider = OidcProvider::start();
    let notes = Notes::start(&provider.issuer);
    let mcp = Mcp::new();
    let url = notes.1.as_str();

    // Not logged in, no terminal: the command says what to do, and exits 4.
    let text = expect(&mcp.run(&["tools", url], false), 4);
    assert!(text.contains(&format!("run `mcp login {url}` first")), "{text}");

    let text = expect(&mcp.run(&["login", url], true), 0);
    assert!(text.contains(&format!("logged in to {url} (scopes: ")) && text.contains("notes:read"), "{text}");
    let credentials = mcp.home.path().join("config/mcp/credentials");
    let files: Vec<PathBuf> = std::fs::read_dir(&credentials).unwrap().map(|entry| entry.unwrap().path()).collect();
    assert!(files.iter().any(|f| f.file_name().unwrap().to_string_lossy().starts_with("server-")), "{files:?}");
    for file in &files {
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(file).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600, "{}", file.display());
    }

    // The kept token serves later commands, with no browser at all.
    let text = expect(&mcp.run(&["tools", url], false), 0);
    assert!(text.contains("add_note"), "{text}");

    // Adding a note needs notes:write: without a terminal the step-up cannot happen here…
    let text = expect(&mcp.run(&["call", url, "add_note", "title=t", "body=b"], false), 4);
    assert!(text.contains("mcp login"), "{text}");
    // …a login for the larger scope makes it work.
    expect(&mcp.run(&["login", url, "--scope", "notes:write"], true), 0);
    let text = expect(&mcp.run(&["call", url, "add_note", "title=t", "body=b"], false), 0);
    assert!(text.contains("Added \"t\""), "{text}");

    let text = expect(&mcp.run(&["logout", url], false), 0);
    assert!(text.contains(&format!("logged out of {url}")), "{text}");
    expect(&mcp.run(&["tools", url], false), 4);
    let text = expect(&mcp.run(&["logout", url], false), 0);
    assert!(text.contains("no tokens were kept"), "{text}");
}
