//! A notes server: tools (one with structured output, one that asks the user to confirm), a
//! resource, a resource template and a prompt, sharing one store.
//!
//! ```text
//! cargo run -p mcp-server --example notes                        # stdio
//! cargo run -p mcp-server --example notes -- --http 127.0.0.1:8002
//! cargo run -p mcp-server --example notes --features auth -- --http 127.0.0.1:8002 --issuer https://auth.example.com
//! ```
//!
//! With `--issuer` (feature `auth`) the HTTP endpoint is an OAuth 2.1 resource server: JWT access
//! tokens of that issuer for this endpoint's URL, scope `notes:read` on every request and
//! `notes:write` to add or delete a note. `--introspect CLIENT_ID:SECRET` verifies opaque tokens
//! at the issuer's introspection endpoint instead.

use std::collections::BTreeMap;
use std::sync::RwLock;

use mcp_server::types::{Resource, ResourceTemplate};
use mcp_server::{Context, Elicited, Error, NoArguments, PromptRoute, Server, Structured, ToolRoute};
use mcp_server::{ResourceRoute, ResourceTemplateRoute};

/// Every note, by title.
#[derive(Default)]
struct Notes(RwLock<BTreeMap<String, String>>);

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddNote {
    /// A short unique title.
    title: String,
    /// The note itself.
    body: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoteTitle {
    /// The title of a note.
    title: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct NoteList {
    titles: Vec<String>,
    count: usize,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    /// Delete the note for good?
    confirm: bool,
}

async fn add_note(ctx: Context, note: AddNote) -> Result<String, Error> {
    let mut notes = ctx.state::<Notes>()?.0.write().unwrap();
    if notes.contains_key(&note.title) {
        return Err(Error::failed(format!("A note titled {:?} exists already", note.title)));
    }
    let added = format!("Added {:?}", note.title);
    notes.insert(note.title, note.body);
    Ok(added)
}

async fn list_notes(ctx: Context, _: NoArguments) -> Result<Structured<NoteList>, Error> {
    let titles: Vec<String> = ctx.state::<Notes>()?.0.read().unwrap().keys().cloned().collect();
    Ok(Structured(NoteList { count: titles.len(), titles }))
}

async fn delete_note(ctx: Context, NoteTitle { title }: NoteTitle) -> Result<String, Error> {
    if !ctx.state::<Notes>()?.0.read().unwrap().contains_key(&title) {
        return Err(Error::failed(format!("No note titled {title:?}")));
    }
    let question = format!("Delete the note {title:?}?");
    match ctx.elicit::<Confirm>(&question).await? {
        Elicited::Accept(Confirm { confirm: true }) => {
            ctx.state::<Notes>()?.0.write().unwrap().remove(&title);
            Ok(format!("Deleted {title:?}"))
        }
        _ => Ok(format!("Kept {title:?}")),
    }
}

async fn note_text(ctx: Context, _uri: String, vars: BTreeMap<String, String>) -> Result<Option<String>, Error> {
    Ok(ctx.state::<Notes>()?.0.read().unwrap().get(&vars["title"]).cloned())
}

async fn index(ctx: Context, _uri: String) -> Result<String, Error> {
    let notes = ctx.state::<Notes>()?.0.read().unwrap();
    Ok(notes.keys().map(|title| format!("- {title}\n")).collect())
}

async fn summarize(ctx: Context, NoteTitle { title }: NoteTitle) -> Result<String, Error> {
    let notes = ctx.state::<Notes>()?.0.read().unwrap();
    let body = notes.get(&title).ok_or_else(|| Error::invalid_params(format!("No note titled {title:?}")))?;
    Ok(format!("Summarize this note in one sentence:\n\n# {title}\n{body}"))
}

fn server() -> Result<Server, mcp_server::BuildError> {
    Server::builder("notes", env!("CARGO_PKG_VERSION"))
        .state(Notes::default())
        .tool(ToolRoute::new("add_note", add_note).description("Adds a note").scopes(["notes:write"]))
        .tool(ToolRoute::new("list_notes", list_notes).description("Lists the titles of all notes"))
        .tool(
            ToolRoute::new("delete_note", delete_note)
                .description("Deletes a note, after asking the user")
                .scopes(["notes:write"]),
        )
        .resource(ResourceRoute::new(
            Resource { uri: "notes://index".into(), name: "index".into(), ..Default::default() },
            index,
        ))
        .resource_template(ResourceTemplateRoute::new(
            ResourceTemplate { uri_template: "notes://{title}".into(), name: "note".into(), ..Default::default() },
            note_text,
        ))
        .prompt(PromptRoute::new("summarize", summarize).description("Asks the model to summarize a note"))
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = server()?;
    let option = |name: &str| std::env::args().skip_while(|arg| arg != name).nth(1);
    match option("--http") {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            let url = format!("http://{}/mcp", listener.local_addr()?);
            #[allow(unused_mut)]
            let mut config = mcp_server::http::HttpConfig::default();
            match option("--issuer") {
                #[cfg(feature = "auth")]
                Some(issuer) => config.authorization = Some(protect(&url, &issuer, option("--introspect"))),
                #[cfg(not(feature = "auth"))]
                Some(_) => return Err("--issuer needs the `auth` feature".into()),
                None => {}
            }
            eprintln!("notes: listening on {url}");
            mcp_server::http::serve(listener, server, config).await?;
        }
        None => mcp_server::stdio::serve_stdio(server).await?,
    }
    Ok(())
}

/// The resource server of `url`: tokens of `issuer`, `notes:read` on every request.
#[cfg(feature = "auth")]
fn protect(url: &str, issuer: &str, introspect: Option<String>) -> mcp_server::auth::ResourceServer {
    use mcp_server::auth::{IntrospectionVerifier, JwtVerifier, ResourceServer};
    let builder = match introspect.as_deref().and_then(|client| client.split_once(':')) {
        Some((id, secret)) => ResourceServer::builder(url, IntrospectionVerifier::new(issuer, url, id, secret)),
        None => ResourceServer::builder(url, JwtVerifier::new(issuer, url)),
    };
    builder
        .authorization_server(issuer)
        .required_scopes(["notes:read"])
        .scopes_supported(["notes:read", "notes:write"])
        .resource_name("Notes")
        .build()
}
