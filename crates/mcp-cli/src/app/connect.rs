//! From the command line's target and options to a connected [`Client`]: era, timeout,
//! headers, OAuth with the kept tokens, and the handlers that let a server ask the user.

use std::time::Duration;

use mcp_cli::target::Target;
use mcp_client::auth::{LoopbackAuthorizer, OAuth};
use mcp_client::types::{Root, SamplingCapability};
use mcp_client::{Client, ElicitationModes, EraPreference, HandlerError, Handlers};

use super::args::{EraChoice, Global};
use super::failure::{Failure, Outcome};
use super::form;
use super::tokens::FileTokenStore;

/// How a connection authorizes, when the server asks.
#[derive(Debug, Default)]
pub struct Login {
    /// `mcp login`: open the browser even without a terminal.
    pub explicit: bool,
    pub scopes: Vec<String>,
    pub client_id: Option<String>,
}

/// A connected client and what `login`/`logout` need to know about it.
pub struct Connection {
    pub client: Client,
    pub oauth: Option<OAuth>,
}

pub async fn connect(global: &Global, target: &Target, login: Login) -> Outcome<Connection> {
    let era = match global.era {
        EraChoice::Auto => EraPreference::Auto,
        EraChoice::Modern => EraPreference::Modern,
        EraChoice::Legacy => EraPreference::Legacy,
    };
    let mut builder = Client::builder("mcp", env!("CARGO_PKG_VERSION"))
        .era(era)
        .request_timeout(global.timeout)
        .startup_timeout(global.timeout)
        .tasks(true)
        .handlers(handlers());
    let described = target.describe();
    let mut oauth = None;
    match target {
        Target::Url { url, headers } => {
            let mut has_authorization = headers.keys().any(|name| name.eq_ignore_ascii_case("authorization"));
            for (name, value) in parse_headers(&global.headers)? {
                has_authorization |= name.eq_ignore_ascii_case("authorization");
                builder = builder.http_header(name, value);
            }
            // A token given by hand is used as is: no login on top of it.
            if !has_authorization && let Some(authorization) = authorization(global, url, &login) {
                builder = builder.oauth(authorization.clone());
                oauth = Some(authorization);
            }
        }
        Target::Command { .. } if !global.headers.is_empty() => {
            return Err(Failure::usage("--header applies to URL targets only, not to a stdio server"));
        }
        Target::Command { .. } => {}
    }
    let connected = target.connect(builder).await;
    let client = connected.map_err(|error| Failure::client(error, &described))?;
    Ok(Connection { client, oauth })
}

fn parse_headers(headers: &[String]) -> Outcome<Vec<(String, String)>> {
    headers
        .iter()
        .map(|header| match header.split_once(':') {
            Some((name, value)) if !name.trim().is_empty() => Ok((name.trim().to_owned(), value.trim().to_owned())),
            _ => Err(Failure::usage(format!("--header {header:?} is not `Name: value`"))),
        })
        .collect()
}

/// OAuth for a URL, with the tokens kept in the credentials directory; the browser is opened
/// only by `mcp login` or when a person is at the terminal.
fn authorization(global: &Global, url: &str, login: &Login) -> Option<OAuth> {
    let store = FileTokenStore::new(FileTokenStore::default_dir()?, url);
    let may_open = login.explicit || form::interactive();
    let server = url.to_owned();
    let authorizer = LoopbackAuthorizer::new(global.callback_port, move |authorization_url| {
        if may_open {
            open_browser(authorization_url.as_str())
        } else {
            Err(format!("not logged in to {server}: run `mcp login {server}` first"))
        }
    })
    .timeout(Duration::from_secs(300));
    let mut builder = OAuth::builder().client_name("mcp").token_store(store).authorizer(authorizer);
    if !login.scopes.is_empty() {
        builder = builder.scopes(login.scopes.clone());
    }
    if let Some(client_id) = &login.client_id {
        builder = builder.client_id(client_id.clone());
    }
    Some(builder.build())
}

/// Opens `url` with `$BROWSER` (a command; the URL is its last argument) or the platform's
/// opener, and always prints it, for a browser elsewhere.
pub fn open_browser(url: &str) -> Result<(), String> {
    anstream::eprintln!("Opening {url}");
    let words: Vec<String> = match std::env::var("BROWSER") {
        Ok(browser) if !browser.trim().is_empty() => browser.split_whitespace().map(str::to_owned).collect(),
        _ if cfg!(target_os = "macos") => vec!["open".into()],
        _ if cfg!(windows) => vec!["cmd".into(), "/C".into(), "start".into(), String::new()],
        _ => vec!["xdg-open".into()],
    };
    let mut command = std::process::Command::new(&words[0]);
    command.args(&words[1..]).arg(url).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null());
    // Its own process group: the terminal's hangup when `mcp` exits must not kill a browser
    // (or the script that starts one) that is still starting.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    command.spawn().map(drop).map_err(|e| format!("could not run {}: {e}; open the URL yourself", words[0]))
}

/// What a server may ask of `mcp`: elicitation (asked in the terminal), roots (the current
/// directory); sampling is refused, since `mcp` runs no model.
fn handlers() -> Handlers {
    Handlers::new()
        .elicitation(ElicitationModes::BOTH, |request| async move {
            tokio::task::spawn_blocking(move || form::answer(request, &open_browser))
                .await
                .map_err(|e| HandlerError(format!("the terminal form failed: {e}")))
        })
        .sampling(SamplingCapability::default(), |_request| async move {
            anstream::eprintln!("mcp: the server asked for sampling (a model's answer); mcp runs no model and refused");
            Err(HandlerError("sampling is not supported by the mcp command line: it runs no model".into()))
        })
        .roots(|| async {
            let cwd = std::env::current_dir().map_err(|e| HandlerError(format!("no current directory: {e}")))?;
            let root: Root = serde_json::from_value(serde_json::json!({
                "uri": format!("file://{}", cwd.display()),
                "name": cwd.file_name().map(|n| n.to_string_lossy().into_owned()),
            }))
            .map_err(|e| HandlerError(e.to_string()))?;
            Ok(vec![root])
        })
}
