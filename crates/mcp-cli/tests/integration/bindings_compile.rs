//! The bindings generated from `tests/bindings/contract.json` in a user's crate: a small cargo
//! project (`tests/bindings/caller.rs` as its `main.rs`, depending only on mcp-client, serde,
//! serde_json and tokio) is built with `cargo clippy -- -D warnings`, then run against a server
//! that serves exactly that contract; what the server received and what the program decoded are
//! compared with what each call should give. `Contract::fetch` from that server gives the
//! fixture's contract back.
//!
//! The project's target directory lives under this crate's `CARGO_TARGET_TMPDIR` and is kept, so
//! only the first run builds mcp-client and its dependencies.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mcp_cli::bindings::{self, Options};
use mcp_cli::contract::Contract;
use mcp_server::dynamic::{ToolFuture, ToolSource};
use mcp_server::types::{CallToolRequestParams, CallToolResult, ContentBlock, TextContent, Tool};
use mcp_server::{Context, Error, Principal, PromptRoute, ResourceTemplateRoute, Server, error_result, text_result};
use serde_json::{Value, json};

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bindings")
}

fn fixture() -> Contract {
    Contract::from_json(&std::fs::read_to_string(tests_dir().join("contract.json")).unwrap()).unwrap()
}

/// The arguments each tool received, in order.
type Received = Arc<Mutex<Vec<(String, Value)>>>;

/// What the fixture's tools answer: structured content for the tools with an output schema,
/// text otherwise; `files/read.v2` fails for the path `missing`.
fn answer(name: &str, args: &Value) -> CallToolResult {
    let structured = match name {
        "get-weather" => json!({
            "temperature": 21.5,
            "conditions": format!("sunny in {}", args["city"].as_str().unwrap_or("?")),
            "humidity": null,
            "alerts": [{ "level": "watch", "text": "wind" }],
            "station": { "name": "Central", "id": "0b6f2c1e-7c3a-4d8e-9a51-3f2b8e0c4d71" },
        }),
        "shapes.area" => {
            let shape = &args["shape"];
            let area = match shape["kind"].as_str() {
                Some("circle") => std::f64::consts::PI * shape["radius"].as_f64().unwrap_or(0.0).powi(2),
                _ => shape["width"].as_f64().unwrap_or(0.0) * shape["height"].as_f64().unwrap_or(0.0),
            };
            json!({ "area": area })
        }
        "set_labels" => {
            json!({ "count": args["labels"].as_object().map_or(0, |l| l.len()), "previous": { "env": "staging" } })
        }
        "now" => json!({ "iso": "2026-01-01T00:00:00Z", "unix": 1767225600 }),
        "files/read.v2" if args["path"] == "missing" => return error_result("no such file: missing"),
        _ => return text_result(format!("{name} got {args}")),
    };
    let mut result = text_result(structured.to_string());
    result.structured_content = Some(structured);
    result
}

/// The fixture's tools, served from a source: routes refuse names such as `files/read.v2`,
/// which real servers nevertheless publish.
struct FixtureTools {
    tools: Arc<[Tool]>,
    received: Received,
}

impl ToolSource for FixtureTools {
    fn tools(&self, _caller: &Principal) -> Arc<[Tool]> {
        Arc::clone(&self.tools)
    }

    fn lists_depend_on_caller(&self) -> bool {
        false
    }

    fn call(&self, _ctx: Context, params: CallToolRequestParams) -> ToolFuture {
        let args = Value::Object(params.arguments.unwrap_or_default());
        self.received.lock().unwrap().push((params.name.clone(), args.clone()));
        let result = match self.tools.iter().any(|t| t.name == params.name) {
            true => Ok(answer(&params.name, &args)),
            false => Err(Error::invalid_params(format!("Unknown tool: {}", params.name))),
        };
        Box::pin(std::future::ready(result))
    }
}

fn server(contract: &Contract, received: &Received) -> Server {
    let mut builder = Server::builder("fixture", "1.0");
    if !contract.tools.is_empty() {
        let tools = FixtureTools { tools: contract.tools.clone().into(), received: Arc::clone(received) };
        builder = builder.tool_source(Arc::new(tools));
    }
    for prompt in &contract.prompts {
        let name = prompt.name.clone();
        builder =
            builder.prompt(PromptRoute::raw(prompt.clone(), move |_: Context, args: BTreeMap<String, String>| {
                let text = format!("{name} {args:?}");
                async move { Ok::<_, Error>(text) }
            }));
    }
    for template in &contract.templates {
        builder = builder.resource_template(ResourceTemplateRoute::new(
            template.clone(),
            |_: Context, uri: String, vars: BTreeMap<String, String>| async move {
                Ok::<_, Error>(format!("{uri} {vars:?}"))
            },
        ));
    }
    builder.build().expect("the fixture serves")
}

/// Serves `server` over Streamable HTTP on a free port; returns its URL.
async fn serve(server: Server) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(mcp_server::http::serve(listener, server, mcp_server::http::HttpConfig::default()));
    url
}

/// Writes the user's crate: the generated bindings, the program, and a manifest that depends on
/// this workspace's mcp-client by path. The workspace's lock file keeps the dependencies at the
/// versions already built and downloaded, so the build runs offline.
fn write_project(dir: &Path, bindings_text: &str) {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap();
    let client = workspace.join("crates/mcp-client");
    let manifest = format!(
        r#"[package]
name = "bindings-caller"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
mcp-client = {{ path = {client:?}, default-features = false, features = ["http"] }}
serde = {{ version = "1", features = ["derive"] }}
serde_json = "1"
tokio = {{ version = "1", features = ["rt", "macros"] }}

[profile.dev]
debug = false

[workspace]
"#
    );
    std::fs::create_dir_all(dir.join("src")).unwrap();
    bindings::write_if_changed(dir.join("Cargo.toml"), &manifest).unwrap();
    if !dir.join("Cargo.lock").exists() {
        std::fs::copy(workspace.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    }
    let caller = std::fs::read_to_string(tests_dir().join("caller.rs")).unwrap();
    bindings::write_if_changed(dir.join("src/main.rs"), &caller).unwrap();
    bindings::write_if_changed(dir.join("src/fixture.rs"), bindings_text).unwrap();
    bindings::write_if_changed(dir.join("src/lib.rs"), "//! The bindings.\n\npub mod fixture;\n").unwrap();
}

/// Runs `cargo {command} --offline {args}` in the project; panics with its output on failure.
async fn cargo(dir: &Path, command: &str, args: &[&str]) -> std::process::Output {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bindings-caller-target");
    let output = tokio::process::Command::new(env!("CARGO"))
        .args([command, "--offline", "--quiet"])
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "cargo {command} {} failed:\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[tokio::test(flavor = "multi_thread")]
async fn the_bindings_build_under_clippy_and_call_the_server_they_describe() {
    let contract = fixture();
    let text = bindings::generate(&contract, &Options::default()).unwrap();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bindings-caller");
    write_project(&dir, &text);
    cargo(&dir, "clippy", &["--", "-D", "warnings"]).await;

    let received = Received::default();
    let url = serve(server(&contract, &received)).await;
    let output = cargo(&dir, "run", &["--", &url]).await;
    let printed: BTreeMap<String, Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let line: Value = serde_json::from_str(line).unwrap();
            (line["call"].as_str().unwrap().to_owned(), line["result"].clone())
        })
        .collect();

    // What the typed arguments put on the wire.
    let received = received.lock().unwrap().clone();
    assert_eq!(
        received,
        [
            ("get-weather", json!({ "city": "Paris", "units": "metric", "at": { "lat": 48.85, "lon": 2.35 } })),
            ("shapes.area", json!({ "shape": { "kind": "rect", "width": 2.0, "height": 3.5 } })),
            ("set_labels", json!({ "target": "eu-west", "labels": { "env": "prod" }, "value": 7 })),
            ("now", json!({})),
            ("files/read.v2", json!({ "path": "notes.txt", "encoding": "base64", "range": { "start": 0 } })),
            ("files/read.v2", json!({ "path": "missing" })),
            ("type", json!({ "type": "keyword", "self": true })),
        ]
        .map(|(name, args)| (name.to_owned(), args))
    );

    // What the typed outputs decoded, encoded again: the server's structured content exactly.
    let get_weather_args = &received[0].1;
    assert_eq!(printed["get_weather"], answer("get-weather", get_weather_args).structured_content.unwrap());
    assert_eq!(printed["shapes_area"], json!(7.0));
    assert_eq!(printed["set_labels"], json!({ "count": 1, "previous": { "env": "staging" } }));
    assert_eq!(printed["now"], json!({ "iso": "2026-01-01T00:00:00Z", "unix": 1767225600 }));
    let text = |s: &str| json!([serde_json::to_value(ContentBlock::Text(TextContent::new(s))).unwrap()]);
    assert_eq!(printed["files_read_v2"], text(&format!("files/read.v2 got {}", received[4].1)));
    assert_eq!(printed["files_read_v2 failing"], json!("the tool failed: no such file: missing"));
    assert_eq!(printed["type"], text(r#"type got {"self":true,"type":"keyword"}"#));

    let message = |v: &Value| v[0]["content"]["text"].as_str().unwrap_or_default().to_owned();
    assert_eq!(message(&printed["summarize"]), r#"summarize {"max-words": "5", "text": "A long text"}"#);
    assert_eq!(message(&printed["greeting"]), "greeting {}");

    assert_eq!(printed["user_profile_uri"], "users://ada%2Flovelace%3F/profile");
    assert_eq!(printed["search_uri"], "search://items?q=rust%20%26%20serde&lang=en");
    assert_eq!(printed["user_profile"][0]["text"], r#"users://ada%20lovelace/profile {"user_id": "ada%20lovelace"}"#);
}

#[tokio::test]
async fn fetch_gives_back_the_contract_the_server_serves() {
    let contract = fixture();
    let url = serve(server(&contract, &Received::default())).await;
    let client = mcp_client::Client::builder("fetch", "1.0").connect_http(&url).await.unwrap();
    let fetched = Contract::fetch(&client).await.unwrap();
    assert_eq!(fetched.digests(), contract.digests());
    assert_eq!(fetched.sha256(), contract.sha256());

    // A server with tools only has no prompts or templates, and that is not an error.
    let tools_only = Contract { prompts: vec![], templates: vec![], ..contract };
    let url = serve(server(&tools_only, &Received::default())).await;
    let client = mcp_client::Client::builder("fetch", "1.0").connect_http(&url).await.unwrap();
    let fetched = Contract::fetch(&client).await.unwrap();
    assert_eq!((fetched.tools.len(), fetched.prompts.len(), fetched.templates.len()), (6, 0, 0));
}
