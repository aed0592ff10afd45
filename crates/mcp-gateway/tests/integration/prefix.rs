//! `prefix_mode`: tools and prompts under `<prefix>_<name>` always (the default), only where two
//! upstreams' names clash (`conditional`), or never (a clash refused at start; after start, the
//! upstream configured first keeps the name). Resource URIs are never rewritten, so a tool's MCP
//! App (`_meta.ui.resourceUri`) stays its own upstream's in every mode.

use mcp_client::{Client, EraPreference};
use mcp_gateway::{Gateway, StartError};
use mcp_server::apps::UiResource;
use mcp_server::{Context, Error, NoArguments, Server, ToolRoute};
use serde_json::json;

use crate::common;
use common::shifting::{Shifting, tool_names};
use common::{Upstream, client, config, eventually, serve, text};

/// An upstream named `name` with a tool `show` linked to its own app (`ui://<name>/widget`), and
/// a tool named `only`.
fn with_app(name: &'static str, only: &'static str) -> Server {
    let uri = format!("ui://{name}/widget");
    Server::builder(name, "1.0.0")
        .ui_resource(UiResource::html(&uri, format!("<p>{name}'s widget</p>")))
        .tool(ToolRoute::new("show", |_: Context, _: NoArguments| async { Ok::<_, Error>("shown") }).ui(&uri))
        .tool(ToolRoute::new(only, |_: Context, _: NoArguments| async { Ok::<_, Error>("only") }))
        .build()
        .unwrap()
}

fn two(mode: &str, a: &Upstream, b: &Upstream) -> mcp_gateway::Config {
    config(&format!(
        "prefix_mode = \"{mode}\"\n[[upstream]]\nname = \"a\"\nurl = \"{}\"\n[[upstream]]\nname = \"b\"\nurl = \"{}\"\n",
        a.url, b.url
    ))
}

/// Each listed tool that has an app, and the text of that app as read through the gateway.
async fn apps(client: &Client) -> Vec<(String, String)> {
    client.clear_cache();
    let mut apps = Vec::new();
    for tool in client.all_tools().await.unwrap() {
        let meta = serde_json::to_value(&tool.meta).unwrap();
        let Some(uri) = meta["ui"]["resourceUri"].as_str() else { continue };
        let read = client.read_resource(uri).await.unwrap_or_else(|e| panic!("{uri}: {e}"));
        let html = serde_json::to_value(&read.contents).unwrap()[0]["text"].as_str().unwrap().to_owned();
        apps.push((tool.name, html));
    }
    apps.sort();
    apps
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_mode_names_the_tools_and_keeps_each_tools_app_its_own_upstreams() {
    let (a, b) = (Upstream::start(with_app("a", "alpha"), 0), Upstream::start(with_app("b", "beta"), 0));
    let always = Gateway::start(&two("always", &a, &b)).await.unwrap();
    let client_always = client(&serve(&always).await, EraPreference::Modern).await;
    let mut names = tool_names(&client_always).await;
    names.sort();
    assert_eq!(names, ["a_alpha", "a_show", "b_beta", "b_show"]);
    let expected = [("a_show", "<p>a's widget</p>"), ("b_show", "<p>b's widget</p>")];
    assert_eq!(apps(&client_always).await, expected.map(|(t, h)| (t.to_owned(), h.to_owned())));

    // Only the clashing name is prefixed, and only for the upstream configured later.
    let conditional = Gateway::start(&two("conditional", &a, &b)).await.unwrap();
    let client_conditional = client(&serve(&conditional).await, EraPreference::Modern).await;
    let mut names = tool_names(&client_conditional).await;
    names.sort();
    assert_eq!(names, ["alpha", "b_show", "beta", "show"]);
    let expected = [("b_show", "<p>b's widget</p>"), ("show", "<p>a's widget</p>")];
    assert_eq!(apps(&client_conditional).await, expected.map(|(t, h)| (t.to_owned(), h.to_owned())));
    assert_eq!(text(&client_conditional, "alpha", json!({})).await, "only");

    // `never`: the clash stops the gateway, naming both upstreams.
    let refused = Gateway::start(&two("never", &a, &b)).await.err().expect("refused");
    assert!(matches!(refused, StartError::Clash(_)), "{refused}");
    let message = refused.to_string();
    assert!(
        message
            .contains("tool `show` is listed by upstream `a` (its tool `show`) and by upstream `b` (its tool `show`)"),
        "{message}"
    );
    // Without a clash, `never` lists the names as they are, each app its own.
    let c = Upstream::start(with_app("c", "gamma"), 0);
    let lone = config(&format!("prefix_mode = \"never\"\n[[upstream]]\nname = \"c\"\nurl = \"{}\"\n", c.url));
    let never = Gateway::start(&lone).await.unwrap();
    let client_never = client(&serve(&never).await, EraPreference::Modern).await;
    assert_eq!(apps(&client_never).await, [("show".to_owned(), "<p>c's widget</p>".to_owned())]);
}

/// Two shifting upstreams, `first` and `second` in that order, under `mode`; the gateway and a client.
async fn shifting(mode: &str, first: &Upstream, second: &Upstream) -> (Gateway, Client) {
    let gateway = Gateway::start(&config(&format!(
        "prefix_mode = \"{mode}\"\n[[upstream]]\nname = \"first\"\nurl = \"{}\"\nhealth_interval_secs = 0.2\n\
         [[upstream]]\nname = \"second\"\nurl = \"{}\"\nhealth_interval_secs = 0.2\n",
        first.url, second.url
    )))
    .await
    .unwrap();
    let client = client(&serve(&gateway).await, EraPreference::Modern).await;
    (gateway, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_mode_gives_a_later_clash_to_the_upstream_configured_first() {
    let first = Shifting::new("first", &["one"], &[], &[]);
    let second = Shifting::new("second", &["x"], &[], &[]);
    let first_server = first.server();
    let (first_up, second_up) = (Upstream::start(first_server.clone(), 0), Upstream::start(second.server(), 0));
    let (_gateway, client) = shifting("never", &first_up, &second_up).await;
    assert_eq!(tool_names(&client).await, ["one", "x"]);
    assert_eq!(text(&client, "x", json!({})).await, "second {}");
    // The first upstream now lists `x` too: it wins, the second's `x` is left out (and logged).
    first.tools.lock().unwrap().push("x".to_owned());
    first_server.notify_tools_list_changed();
    eventually("the first upstream takes `x`", async || text(&client, "x", json!({})).await == "first {}").await;
    assert_eq!(tool_names(&client).await, ["one", "x"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_mode_prefixes_the_later_configured_name_when_a_clash_appears() {
    let first = Shifting::new("first", &["one"], &[], &[]);
    let second = Shifting::new("second", &["x"], &[], &[]);
    let first_server = first.server();
    let (first_up, second_up) = (Upstream::start(first_server.clone(), 0), Upstream::start(second.server(), 0));
    let (_gateway, client) = shifting("conditional", &first_up, &second_up).await;
    assert_eq!(tool_names(&client).await, ["one", "x"]);
    first.tools.lock().unwrap().push("x".to_owned());
    first_server.notify_tools_list_changed();
    eventually("the clash is resolved by a prefix", async || tool_names(&client).await.len() == 3).await;
    assert_eq!(tool_names(&client).await, ["one", "x", "second_x"]);
    assert_eq!(text(&client, "x", json!({})).await, "first {}");
    assert_eq!(text(&client, "second_x", json!({})).await, "second {}");
}
