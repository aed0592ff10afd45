//! mcp-server's conformance fixture server as one instance of a deployment sharing one Redis:
//! tasks, single-use states, legacy sessions, SSE events and the change bus in Redis, and the
//! `requestState` keys read from a file that every instance watches (so a key rotation reaches
//! all of them). `tests/scale/run.sh` starts three behind haproxy.
//!
//! ```text
//! scale-server --addr 127.0.0.1:8101 --redis redis://127.0.0.1:6379 --name one --state-keys keys.txt \
//!     [--issuer http://127.0.0.1:ISSUER --resource http://127.0.0.1:LB/mcp]
//! ```
//!
//! The keys file holds one key a line, `ID SECRET`; the last line's key seals, every listed key
//! opens. Beside the fixture's tools it serves `scale_whoami` (the instance's name and current
//! key id) and `scale_two_questions` (two rounds of `InputRequiredResult`).
//!
//! With `--issuer` and `--resource` it is an OAuth 2.1 resource server: every request needs a
//! JWT access token of that issuer for that resource (the load balancer's URL, which clients
//! use) with the scope `notes:read`, and a legacy session is bound to the principal that opened
//! it, on every instance (the binding is in the session record, in Redis).

#[path = "../../mcp-server/examples/conformance-server.rs"]
#[allow(dead_code)]
mod conformance;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use mcp_server::auth::{JwtVerifier, ResourceServer};
use mcp_server::http::HttpConfig;
use mcp_server::{Context, Error, NoArguments, Options, StateKey, StateKeyring, ToolRoute};
use mcp_server_redis::Redis;
use mcp_types::ElicitRequestParams;
use serde_json::json;

#[derive(Parser)]
struct Args {
    /// Serve Streamable HTTP at http://ADDR/mcp.
    #[arg(long)]
    addr: SocketAddr,
    /// The Redis every instance shares.
    #[arg(long)]
    redis: String,
    /// The deployment's key prefix in Redis.
    #[arg(long, default_value = "mcp-scale:")]
    prefix: String,
    /// This instance's name, as `scale_whoami` reports it.
    #[arg(long)]
    name: String,
    /// The `requestState` keys (`ID SECRET` a line, the last one seals); re-read when it changes.
    #[arg(long)]
    state_keys: PathBuf,
    /// The lease of a running task's handler, in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    task_lease_ms: u64,
    /// Accept only JWT access tokens of this issuer (its issuer identifier); needs `--resource`.
    #[arg(long, requires = "resource")]
    issuer: Option<String>,
    /// The canonical URI tokens must be issued for (their `aud`): the public URL clients use,
    /// the load balancer's, not this instance's own; needs `--issuer`.
    #[arg(long, requires = "issuer")]
    resource: Option<String>,
}

fn read_keys(path: &Path) -> std::io::Result<Vec<(String, String)>> {
    let text = std::fs::read_to_string(path)?;
    let keys: Vec<(String, String)> = text
        .lines()
        .filter_map(|line| line.split_once(' '))
        .map(|(id, secret)| (id.trim().to_owned(), secret.trim().to_owned()))
        .collect();
    if keys.is_empty() {
        return Err(std::io::Error::other(format!("{}: no `ID SECRET` line", path.display())));
    }
    Ok(keys)
}

/// Makes `keyring` hold exactly `keys`, sealing with the last.
fn apply(keyring: &StateKeyring, keys: &[(String, String)]) {
    for (id, secret) in keys {
        keyring.insert(id.clone(), StateKey::from_secret(secret.as_bytes()));
    }
    let (current, secret) = keys.last().expect("checked non-empty");
    keyring.rotate(current.clone(), StateKey::from_secret(secret.as_bytes()));
    for id in keyring.ids() {
        if !keys.iter().any(|(listed, _)| *listed == id) {
            keyring.remove(&id);
        }
    }
}

fn form(key: &str) -> ElicitRequestParams {
    serde_json::from_value(json!({
        "mode": "form",
        "message": format!("Your {key}?"),
        "requestedSchema": { "type": "object", "properties": { key: { "type": "string" } }, "required": [key] },
    }))
    .expect("a valid form")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let keys = read_keys(&args.state_keys)?;
    let keyring = StateKeyring::new(keys[0].0.clone(), StateKey::from_secret(keys[0].1.as_bytes()));
    apply(&keyring, &keys);

    let redis = Redis::open(&args.redis)?.with_prefix(args.prefix);
    let bus = redis.change_bus()?;
    let mut options = Options::default();
    options.task_lease = Duration::from_millis(args.task_lease_ms);
    let skills = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp-server/examples/skills");
    let name = args.name.clone();
    let server = conformance::fixture(&skills)?
        .tool(
            ToolRoute::new("scale_whoami", move |ctx: Context, _: NoArguments| {
                let name = name.clone();
                async move {
                    let key = ctx.server().state_keyring().current_id();
                    Ok::<_, Error>(json!({ "instance": name, "keyId": key }).to_string())
                }
            })
            .description("This instance's name and the id of the key sealing requestState"),
        )
        .tool(
            ToolRoute::new("scale_two_questions", |ctx: Context, _: NoArguments| async move {
                let name = ctx.elicit_with("name", form("name")).await?;
                let color = ctx.elicit_with("color", form("color")).await?;
                let answer = |result: &mcp_types::ElicitResult, key: &str| {
                    serde_json::to_value(&result.content).ok().and_then(|c| c[key].as_str().map(str::to_owned))
                };
                let (name, color) = (answer(&name, "name"), answer(&color, "color"));
                Ok::<_, Error>(format!("{} likes {}", name.as_deref().unwrap_or("?"), color.as_deref().unwrap_or("?")))
            })
            .description("Asks a name, then a color (two rounds of InputRequiredResult)"),
        )
        .task_store(Arc::new(redis.task_store()))
        .used_state_store(Arc::new(redis.used_state_store()))
        .session_store(Arc::new(redis.session_store()))
        .change_bus(Arc::new(bus))
        .state_keyring(keyring.clone())
        .options(options)
        .build()?;

    // The keys file is watched, not signalled: an operator (or the scale check) rewrites it and
    // every instance follows within a moment.
    let path = args.state_keys.clone();
    tokio::spawn(async move {
        let mut last = keys;
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            match read_keys(&path) {
                Ok(keys) if keys != last => {
                    apply(&keyring, &keys);
                    eprintln!("state keys now {:?}, sealing with {}", keyring.ids(), keyring.current_id());
                    last = keys;
                }
                Ok(_) => {}
                Err(error) => eprintln!("state keys unchanged: {error}"),
            }
        }
    });

    let listener = tokio::net::TcpListener::bind(args.addr).await?;
    let mut config = HttpConfig::default();
    config.event_store = Some(Arc::new(redis.event_store()));
    let mut protection = String::new();
    if let (Some(issuer), Some(resource)) = (&args.issuer, &args.resource) {
        let verifier = JwtVerifier::new(issuer.as_str(), resource.as_str());
        config.authorization = Some(
            ResourceServer::builder(resource.as_str(), verifier)
                .authorization_server(issuer.as_str())
                .required_scopes(["notes:read"])
                .build(),
        );
        protection = format!(", tokens of {issuer} for {resource}");
    }
    eprintln!("scale-server {} listening on http://{}/mcp{protection}", args.name, listener.local_addr()?);
    mcp_server::http::serve(listener, server, config).await?;
    Ok(())
}
