//! An MCP App (SEP-1865): the tool `convert_temperature` shows its result in an interactive
//! interface, `ui://temperature/app.html`, which uses the official `@modelcontextprotocol/ext-apps`
//! app library (inlined into the page: an app's iframe loads nothing from the network unless its
//! CSP allows it). The interface shows the result the host pushes, converts 37 °C itself through
//! the host, and tells the conversation what it shows (`ui/message`). The browser test
//! `tests/interop/apps.sh` renders it in headless Chromium with the package's host side.
//!
//! ```text
//! npm install --prefix /tmp/ext-apps @modelcontextprotocol/ext-apps@2.0.4
//! export MCP_EXT_APPS_LIBRARY=/tmp/ext-apps/node_modules/@modelcontextprotocol/ext-apps/dist/src/app-with-deps.js
//! cargo run -p mcp-server --example apps                    # stdio
//! cargo run -p mcp-server --example apps -- 127.0.0.1:3001  # Streamable HTTP at /mcp
//! ```

use mcp_server::apps::UiResource;
use mcp_server::schemars::JsonSchema;
use mcp_server::{Context, Error, Server, Structured, ToolRoute};
use serde::{Deserialize, Serialize};

const URI: &str = "ui://temperature/app.html";
const PAGE: &str = include_str!("apps/temperature.html");

#[derive(Deserialize, JsonSchema)]
struct Celsius {
    /// Degrees Celsius.
    celsius: f64,
}

#[derive(Serialize, JsonSchema)]
struct Conversion {
    celsius: f64,
    fahrenheit: f64,
}

/// The page with the library's `App` class defined in its module script: the bundle's closing
/// `export { … }` becomes a `const` for each name the page uses.
fn page_with(library: &str) -> Result<String, String> {
    let at = library.rfind("export{").or_else(|| library.rfind("export {")).ok_or("no `export { … }` in the bundle")?;
    let names = library[at..].split_once('{').and_then(|(_, rest)| rest.split_once('}')).map(|(names, _)| names);
    let local = names
        .into_iter()
        .flat_map(|names| names.split(','))
        .find_map(|pair| pair.trim().strip_suffix(" as App").map(str::trim))
        .ok_or("the bundle exports no `App`")?;
    let module = format!("{}\nconst App = {local};\n", &library[..at]);
    Ok(PAGE.replace("/*@ext-apps*/", &module))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let library_path = std::env::var("MCP_EXT_APPS_LIBRARY").unwrap_or_else(|_| {
        eprintln!(
            "apps: set MCP_EXT_APPS_LIBRARY to @modelcontextprotocol/ext-apps's dist/src/app-with-deps.js \
             (npm install @modelcontextprotocol/ext-apps@2.0.4)"
        );
        std::process::exit(2)
    });
    let library = std::fs::read_to_string(&library_path)?;
    let page = page_with(&library).unwrap_or_else(|why| {
        eprintln!("apps: {library_path}: {why}");
        std::process::exit(2)
    });
    let server = Server::builder("temperature", env!("CARGO_PKG_VERSION"))
        .ui_resource(UiResource::html(URI, page).title("Temperature").prefers_border(true))
        .tool(
            ToolRoute::new("convert_temperature", |_: Context, Celsius { celsius }: Celsius| async move {
                // One decimal, as people write temperatures.
                let fahrenheit = ((celsius * 1.8 + 32.0) * 10.0).round() / 10.0;
                Ok::<_, Error>(Structured(Conversion { celsius, fahrenheit }))
            })
            .description("Converts degrees Celsius to Fahrenheit and shows it")
            .structured::<Conversion>()
            .ui(URI),
        )
        .build()
        .expect("the app is well-formed");
    match std::env::args().nth(1) {
        Some(address) => {
            let listener = tokio::net::TcpListener::bind(&address).await?;
            eprintln!("apps: serving http://{}/mcp", listener.local_addr()?);
            mcp_server::http::serve(listener, server, mcp_server::http::HttpConfig::default()).await
        }
        None => mcp_server::stdio::serve_stdio(server).await,
    }
}
