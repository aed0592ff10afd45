//! `login` and `logout`: OAuth 2.1 through mcp-client's `auth`, tokens kept per server.

use mcp_cli::target::Target;

use super::super::args::Global;
use super::super::connect::{self, Connection, Login};
use super::super::failure::{Failure, Kind, Outcome};
use super::super::render::{self, dim};
use super::super::tokens::FileTokenStore;

pub async fn login(global: &Global, target: &Target, login: Login) -> Outcome {
    let Target::Url { url, .. } = target else {
        return Err(Failure::usage("only a URL target can be logged in to: a stdio server has no authorization"));
    };
    let dir = FileTokenStore::default_dir()
        .ok_or_else(|| Failure::usage("no configuration directory to keep tokens in: set HOME or XDG_CONFIG_HOME"))?;
    // A login authorizes anew (for the scopes asked now), whatever tokens are kept.
    FileTokenStore::new(dir.clone(), url)
        .forget()
        .map_err(|e| Failure::new(Kind::Authorization, format!("could not replace the kept tokens: {e}")))?;
    let Connection { client, oauth } = connect::connect(global, target, login).await?;
    // Every request of a protected server needs the token: one that answers tools/list without
    // asking proves the login worked.
    let listed = client.list_tools_page(None).await;
    client.close().await;
    listed.map_err(|e| Failure::client(e, url))?;
    let tokens = oauth.and_then(|oauth| oauth.tokens());
    match tokens {
        Some(tokens) => {
            if global.json {
                render::json(
                    &serde_json::json!({ "server": url, "scopes": tokens.scopes, "expiresAt": tokens.expires_at }),
                );
            } else {
                let scopes = if tokens.scopes.is_empty() { "none".into() } else { tokens.scopes.join(" ") };
                anstream::println!("{} {url} (scopes: {scopes})", render::green("logged in to"));
                anstream::println!("{}", dim(&format!("tokens kept in {}", dir.display())));
            }
            Ok(())
        }
        None => {
            anstream::println!("{url} did not ask for authorization: nothing to log in to");
            Ok(())
        }
    }
}

pub fn logout(target: &Target) -> Outcome {
    let Target::Url { url, .. } = target else {
        return Err(Failure::usage("only a URL target has tokens to forget"));
    };
    let dir = FileTokenStore::default_dir().ok_or_else(|| Failure::usage("no configuration directory"))?;
    let forgotten = FileTokenStore::new(dir, url)
        .forget()
        .map_err(|e| Failure::new(Kind::Authorization, format!("could not remove the tokens: {e}")))?;
    if forgotten {
        anstream::println!("logged out of {url}");
    } else {
        anstream::println!("no tokens were kept for {url}");
    }
    Ok(())
}
