//! A real OAuth 2.1 authorization server for the tests: `tests/auth/provider.mjs` (oidc-provider)
//! run by Node. `cargo xtask test` installs both and sets `MCP_TEST_NODE` and
//! `MCP_TEST_OIDC_MODULES`; see that script's header for what the server offers (dynamic client
//! registration, headless login and consent, JWT and opaque access tokens per resource,
//! introspection, client credentials, refresh tokens, DPoP).
//!
//! ```no_run
//! let provider = mcp_tests::oidc::OidcProvider::start();
//! // provider.issuer is `http://127.0.0.1:PORT`, the base of every endpoint and of the discovery
//! // documents; provider.key_pem signs tokens as the issuer does (ES256, kid "test-key-1").
//! ```

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// The key id of the issuer's only signing key (ES256).
pub const KEY_ID: &str = "test-key-1";

/// How long the provider may take to print its `listening on` line.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A running `tests/auth/provider.mjs`, stopped when dropped.
pub struct OidcProvider {
    /// `http://127.0.0.1:PORT`: the issuer, and the base URL of its endpoints.
    pub issuer: String,
    /// The issuer's private signing key, PKCS#8 PEM (ES256, kid [`KEY_ID`]), to mint tokens it
    /// would have signed (expired, not yet valid, other audiences...).
    pub key_pem: String,
    child: Child,
    temp_dir: PathBuf,
    stopped: bool,
}

impl OidcProvider {
    /// Starts a provider on a free loopback port. Panics, naming `cargo xtask test`, when
    /// `MCP_TEST_NODE` or `MCP_TEST_OIDC_MODULES` is unset, or when the provider does not report
    /// its address within 20 seconds.
    pub fn start() -> OidcProvider {
        Self::start_with_env(&[])
    }

    /// [`start`](Self::start) with extra environment variables for the provider, e.g.
    /// `("MCP_TEST_OIDC_TOKEN_TTL", "5")` for short-lived access tokens.
    pub fn start_with_env(vars: &[(&str, &str)]) -> OidcProvider {
        let node = required_env("MCP_TEST_NODE");
        let modules = required_env("MCP_TEST_OIDC_MODULES");
        let script = crate::workspace::workspace_root().join("tests/auth/provider.mjs");

        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let temp_dir = std::env::temp_dir().join(format!(
            "mcp-tests-oidc-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&temp_dir).unwrap_or_else(|e| panic!("creating {}: {e}", temp_dir.display()));
        let key_path = temp_dir.join("issuer-key.pem");

        let mut child = Command::new(&node)
            .arg(&script)
            .args(["--port", "0", "--exit-with-stdin"])
            .env("MCP_TEST_OIDC_MODULES", &modules)
            .env("MCP_TEST_OIDC_KEY_PEM", &key_path)
            .envs(vars.iter().copied())
            // Held open by `child` until it is killed; if this process dies first, the provider
            // sees its stdin close and exits.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("starting {node} {}: {e} (MCP_TEST_NODE comes from `cargo xtask test`)", script.display())
            });

        // Read stdout on a thread, so that the wait for the ready line has a deadline; the thread
        // keeps draining stdout afterwards (the provider writes nothing more there).
        let stdout = child.stdout.take().expect("piped stdout");
        let (ready_tx, ready_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut ready = Some(ready_tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(issuer) = line.strip_prefix("listening on ")
                    && let Some(tx) = ready.take()
                {
                    let _ = tx.send(issuer.trim().to_string());
                }
            }
        });
        let issuer = match ready_rx.recv_timeout(START_TIMEOUT) {
            Ok(issuer) => issuer,
            Err(_) => {
                let _ = child.kill();
                let status = child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                let _ = std::fs::remove_dir_all(&temp_dir);
                panic!(
                    "{} did not print `listening on` within {}s (exit: {status}; its stderr is above); \
                     run the tests with `cargo xtask test`, which installs Node.js and oidc-provider",
                    script.display(),
                    START_TIMEOUT.as_secs()
                );
            }
        };
        let key_pem = std::fs::read_to_string(&key_path)
            .unwrap_or_else(|e| panic!("reading the issuer key {}: {e}", key_path.display()));
        OidcProvider { issuer, key_pem, child, temp_dir, stopped: false }
    }

    /// Stops the provider (e.g. to test a JWKS endpoint that is down). Idempotent.
    pub fn kill(&mut self) {
        if !self.stopped {
            self.stopped = true;
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.temp_dir);
    }
}

fn required_env(name: &str) -> String {
    match std::env::var(name) {
        Ok(value) if !value.is_empty() => value,
        _ => panic!(
            "{name} is not set: run the tests with `cargo xtask test`, which installs Node.js and oidc-provider \
             and sets MCP_TEST_NODE and MCP_TEST_OIDC_MODULES"
        ),
    }
}
