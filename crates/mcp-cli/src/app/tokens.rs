//! The tokens `mcp login` obtains, kept per server in the user's configuration directory
//! (`<config>/mcp/credentials/`), each file readable by its owner only (0600).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use mcp_client::auth::{ClientRegistration, StoredTokens, TokenStore};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// One file per server (by its URL) for tokens, one shared file for client registrations (they
/// belong to an authorization server, not to one MCP server).
#[derive(Debug)]
pub struct FileTokenStore {
    dir: PathBuf,
    server: String,
    /// Serializes read-modify-write of the files within this process.
    lock: Mutex<()>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ServerFile {
    server: String,
    /// Tokens by `resource` then issuer.
    tokens: BTreeMap<String, BTreeMap<String, StoredTokens>>,
}

impl FileTokenStore {
    pub fn new(dir: PathBuf, server: &str) -> Self {
        FileTokenStore { dir, server: server.to_owned(), lock: Mutex::new(()) }
    }

    /// `<config>/mcp/credentials`, or `MCP_CREDENTIALS_DIR`.
    pub fn default_dir() -> Option<PathBuf> {
        if let Some(dir) = std::env::var_os("MCP_CREDENTIALS_DIR").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(dir));
        }
        mcp_cli::target::user_config_dir().map(|config| config.join("mcp/credentials"))
    }

    fn server_path(&self) -> PathBuf {
        let digest = Sha256::digest(self.server.as_bytes());
        let name: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("server-{name}.json"))
    }

    fn registrations_path(&self) -> PathBuf {
        self.dir.join("registrations.json")
    }

    /// Whether tokens are kept for this server.
    #[cfg(test)]
    fn has_tokens(&self) -> bool {
        self.server_path().is_file()
    }

    /// Forgets this server's tokens; false if there were none.
    pub fn forget(&self) -> std::io::Result<bool> {
        match std::fs::remove_file(self.server_path()) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn load_server(&self) -> ServerFile {
        read_json(&self.server_path())
            .unwrap_or_else(|| ServerFile { server: self.server.clone(), ..Default::default() })
    }

    fn update_server(&self, change: impl FnOnce(&mut ServerFile)) {
        let _guard = self.lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut file = self.load_server();
        change(&mut file);
        let result = if file.tokens.values().all(BTreeMap::is_empty) {
            self.forget().map(drop)
        } else {
            write_private(&self.dir, &self.server_path(), &file)
        };
        if let Err(error) = result {
            eprintln!("mcp: could not keep the tokens in {}: {error}", self.dir.display());
        }
    }
}

impl TokenStore for FileTokenStore {
    fn tokens(&self, resource: &str, issuer: &str) -> Option<StoredTokens> {
        self.load_server().tokens.get(resource)?.get(issuer).cloned()
    }

    fn save_tokens(&self, resource: &str, issuer: &str, tokens: StoredTokens) {
        self.update_server(|file| {
            file.tokens.entry(resource.to_owned()).or_default().insert(issuer.to_owned(), tokens);
        });
    }

    fn clear_tokens(&self, resource: &str, issuer: &str) {
        self.update_server(|file| {
            if let Some(by_issuer) = file.tokens.get_mut(resource) {
                by_issuer.remove(issuer);
            }
        });
    }

    fn registration(&self, issuer: &str) -> Option<ClientRegistration> {
        read_json::<BTreeMap<String, ClientRegistration>>(&self.registrations_path())?.remove(issuer)
    }

    fn save_registration(&self, issuer: &str, registration: ClientRegistration) {
        let _guard = self.lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let path = self.registrations_path();
        let mut all: BTreeMap<String, ClientRegistration> = read_json(&path).unwrap_or_default();
        all.insert(issuer.to_owned(), registration);
        if let Err(error) = write_private(&self.dir, &path, &all) {
            eprintln!("mcp: could not keep the client registration in {}: {error}", self.dir.display());
        }
    }
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    let text = std::fs::read_to_string(path).ok()?;
    match serde_json::from_str(&text) {
        Ok(value) => Some(value),
        Err(error) => {
            eprintln!("mcp: ignoring {} (unreadable: {error})", path.display());
            None
        }
    }
}

/// Writes through a temporary file created 0600 in a 0700 directory, then renames: the tokens
/// are never readable by others, not even for a moment, and a crash leaves the old file.
fn write_private(dir: &Path, path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)?;
    let text = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    let temporary = path.with_extension("tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    std::io::Write::write_all(&mut options.open(&temporary)?, &text)?;
    std::fs::rename(&temporary, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_client::auth::{Secret, TokenEndpointAuthMethod};

    fn tokens(access: &str) -> StoredTokens {
        StoredTokens {
            access_token: Secret::new(access),
            refresh_token: Some(Secret::new("r")),
            expires_at: None,
            scopes: vec!["a".into()],
            dpop: false,
        }
    }

    #[test]
    fn tokens_survive_a_new_store_and_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let credentials = dir.path().join("credentials");
        let store = FileTokenStore::new(credentials.clone(), "http://127.0.0.1:1/mcp");
        assert!(store.tokens("r", "i").is_none());
        store.save_tokens("r", "i", tokens("t1"));
        store.save_registration(
            "i",
            ClientRegistration {
                client_id: "c".into(),
                client_secret: None,
                token_endpoint_auth_method: TokenEndpointAuthMethod::None,
            },
        );
        let again = FileTokenStore::new(credentials.clone(), "http://127.0.0.1:1/mcp");
        assert_eq!(again.tokens("r", "i"), Some(tokens("t1")));
        assert_eq!(again.registration("i").unwrap().client_id, "c");
        // Another server's store sees none of them.
        assert!(FileTokenStore::new(credentials.clone(), "http://127.0.0.1:2/mcp").tokens("r", "i").is_none());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&credentials), 0o700);
            assert_eq!(mode(&again.server_path()), 0o600);
            assert_eq!(mode(&again.registrations_path()), 0o600);
        }
        again.clear_tokens("r", "i");
        assert!(!again.has_tokens(), "clearing the last token removes the file");
        store.save_tokens("r", "i", tokens("t2"));
        assert!(store.forget().unwrap());
        assert!(!store.forget().unwrap());
    }
}
