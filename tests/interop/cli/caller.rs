//! A user's program over the bindings `mcp codegen` wrote for two servers nobody here wrote:
//! tests/interop/cli.sh builds it as `src/main.rs` of a small crate whose library is the
//! generated `src/everything.rs` (the TypeScript everything server) and `src/python.rs` (the
//! Python SDK server of tests/interop/cli/py_server.py), under `cargo clippy -- -D warnings`.
//!
//! `caller everything|python URL auto|modern|legacy` connects to the server over Streamable HTTP
//! in that era, calls every tool that needs no user through its typed handle with typed
//! arguments, gets the prompts and reads the templates, and prints one JSON line per call:
//! `{"kind": "tool", "name": WIRE NAME, "args": WHAT WAS SENT, "status": ..., "result": ...}`
//! where status is `structured` (result: the typed output, encoded again), `content` (no output
//! schema: the result's content), `error` (the tool reported isError: its text); prompts and
//! reads print `{"kind": "prompt"|"read", ...}` the same way. tests/interop/cli/compare.py makes
//! the same calls with `mcp --json` and compares.
//!
//! The everything server's tools not called here, and why:
//! - `trigger-elicitation-request`, `trigger-url-elicitation`: elicitation (a person fills in a
//!   form or opens a URL);
//! - `trigger-sampling-request`: sampling (an LLM answers the server).
//!
//! The client offers the root `mcp` offers (the current directory): the everything server has
//! `get-roots-list` only for a client that declares roots.

use cli_bindings::{everything, python};
use mcp_client::types::CallToolResult;
use serde::Serialize;
use serde_json::{Value, json};

type Error = Box<dyn std::error::Error>;

fn line(value: Value) {
    println!("{value}");
}

/// One tool call's line. `outcome` is the typed handle's answer: `(status, result)`, or
/// `Err(text)` when the tool failed.
fn tool<A: Serialize>(name: &str, args: &A, outcome: Result<(&str, Value), String>) -> Result<(), Error> {
    let args = serde_json::to_value(args)?;
    let (status, result) = outcome.unwrap_or_else(|text| ("error", json!(text)));
    line(json!({ "kind": "tool", "name": name, "args": args, "status": status, "result": result }));
    Ok(())
}

/// A typed output, encoded again.
fn structured<T: Serialize>(output: T) -> Result<(&'static str, Value), Error> {
    Ok(("structured", serde_json::to_value(output)?))
}

/// The result of a tool without an output schema: its content.
fn content(result: CallToolResult) -> Result<(&'static str, Value), Error> {
    Ok(("content", serde_json::to_value(result.content)?))
}

/// The typed handle's answer: `Ok` as a value, a failed tool as `Err(text)`, anything else (the
/// connection, a decoding error) ends the program.
macro_rules! answer {
    ($module:ident, $call:expr, $convert:ident) => {
        match $call.await {
            Ok(output) => Ok($convert(output)?),
            Err(error @ $module::ToolError::Tool(_)) => Err(error.to_string()),
            Err(error) => return Err(format!("{}: {error}", stringify!($call)).into()),
        }
    };
}

async fn everything(client: &mcp_client::Client) -> Result<(), Error> {
    use everything::*;
    let tools = Tools::new(client);

    let args = EchoArgs { message: "typed hello".into() };
    tool("echo", &args, answer!(everything, tools.echo(args.clone()), content))?;

    let args = GetAnnotatedMessageArgs {
        message_type: get_annotated_message::GetAnnotatedMessageArgsMessageType::Success,
        include_image: true,
    };
    tool("get-annotated-message", &args, answer!(everything, tools.get_annotated_message(args.clone()), content))?;

    let args = GetEnvArgs {};
    tool("get-env", &args, answer!(everything, tools.get_env(args.clone()), content))?;

    let args = GetResourceLinksArgs { count: 2.0 };
    tool("get-resource-links", &args, answer!(everything, tools.get_resource_links(args.clone()), content))?;

    // More than the schema's maximum (10): the server answers isError.
    let args = GetResourceLinksArgs { count: 20.0 };
    tool("get-resource-links", &args, answer!(everything, tools.get_resource_links(args.clone()), content))?;

    let args = GetResourceReferenceArgs {
        resource_id: 3.0,
        resource_type: get_resource_reference::GetResourceReferenceArgsResourceType::Text,
    };
    tool("get-resource-reference", &args, answer!(everything, tools.get_resource_reference(args.clone()), content))?;

    let args = GetRootsListArgs {};
    tool("get-roots-list", &args, answer!(everything, tools.get_roots_list(args.clone()), content))?;

    for location in [
        get_structured_content::GetStructuredContentArgsLocation::Chicago,
        get_structured_content::GetStructuredContentArgsLocation::NewYork,
    ] {
        let args = GetStructuredContentArgs { location };
        let outcome = answer!(everything, tools.get_structured_content(args.clone()), structured);
        tool("get-structured-content", &args, outcome)?;
    }

    let args = GetSumArgs { a: 2.0, b: 3.5 };
    tool("get-sum", &args, answer!(everything, tools.get_sum(args.clone()), content))?;

    let args = GetTinyImageArgs {};
    tool("get-tiny-image", &args, answer!(everything, tools.get_tiny_image(args.clone()), content))?;

    // A data: URI, so that nothing is fetched from the network.
    for output_type in [
        gzip_file_as_resource::GzipFileAsResourceArgsOutputType::Resource,
        gzip_file_as_resource::GzipFileAsResourceArgsOutputType::ResourceLink,
    ] {
        let args = GzipFileAsResourceArgs {
            data: "data:text/plain;base64,aGVsbG8gZnJvbSB0aGUgdHlwZWQgYmluZGluZ3M=".into(),
            name: "typed.txt.gz".into(),
            output_type,
        };
        tool("gzip-file-as-resource", &args, answer!(everything, tools.gzip_file_as_resource(args.clone()), content))?;
    }

    // Taken as a task only: mcp-client has no 2025-11-25 tasks, so in the legacy era the
    // server answers isError (and `mcp call` the same).
    let args = SimulateResearchQueryArgs { topic: "typed bindings".into(), ambiguous: false };
    tool("simulate-research-query", &args, answer!(everything, tools.simulate_research_query(args.clone()), content))?;

    let args = ToggleSimulatedLoggingArgs {};
    tool(
        "toggle-simulated-logging",
        &args,
        answer!(everything, tools.toggle_simulated_logging(args.clone()), content),
    )?;

    let args = ToggleSubscriberUpdatesArgs {};
    let outcome = answer!(everything, tools.toggle_subscriber_updates(args.clone()), content);
    tool("toggle-subscriber-updates", &args, outcome)?;

    // One second, two steps (the default is ten seconds).
    let args = TriggerLongRunningOperationArgs { duration: 1.0, steps: 2.0 };
    let outcome = answer!(everything, tools.trigger_long_running_operation(args.clone()), content);
    tool("trigger-long-running-operation", &args, outcome)?;

    let prompts = Prompts::new(client);
    let args = ArgsPromptPromptArgs { city: "Paris".into(), state: Some("Texas".into()) };
    let result = prompts.args_prompt(args.clone()).await?;
    line(json!({ "kind": "prompt", "name": "args-prompt", "args": args, "result": result.messages }));
    let args = SimplePromptPromptArgs {};
    let result = prompts.simple_prompt(args.clone()).await?;
    line(json!({ "kind": "prompt", "name": "simple-prompt", "args": args, "result": result.messages }));

    let uri = dynamic_text_resource_uri("7");
    let read = Resources::new(client).dynamic_text_resource("7").await?;
    line(json!({ "kind": "read", "uri": uri, "result": read.contents }));
    Ok(())
}

async fn python(client: &mcp_client::Client) -> Result<(), Error> {
    use python::*;
    let tools = Tools::new(client);

    let trip = plan_trip::Trip {
        title: "Alps".into(),
        stops: vec![
            plan_trip::Stop { name: "Bern".into(), at: plan_trip::Point { lat: 46.95, lon: 7.45 }, nights: 2 },
            plan_trip::Stop { name: "Zermatt".into(), at: plan_trip::Point { lat: 46.02, lon: 7.75 }, nights: 3 },
        ],
        budget: Some(1200.0),
    };
    let args = PlanTripArgs {
        trip: trip.clone(),
        mode: plan_trip::Mode::Plane,
        travelers: 3,
        tags: vec!["snow".into(), "hiking".into()],
        notes: Some("window seats".into()),
    };
    tool("plan_trip", &args, answer!(python, tools.plan_trip(args.clone()), structured))?;
    // The optional arguments left to their defaults.
    let args = PlanTripArgs {
        trip: plan_trip::Trip { budget: None, ..trip },
        mode: plan_trip::Mode::default(),
        travelers: 1,
        tags: vec![],
        notes: None,
    };
    tool("plan_trip", &args, answer!(python, tools.plan_trip(args.clone()), structured))?;

    let args = MixPaintArgs { color: "green".into(), shade: mix_paint::Shade::Dark, glossy: true };
    tool("mix_paint", &args, answer!(python, tools.mix_paint(args.clone()), structured))?;

    let args = AddArgs { a: 20, b: 22 };
    tool("add", &args, answer!(python, tools.add(args.clone()), structured))?;

    let args = StatsArgs { values: vec![1.5, 2.5, 4.0], label: Some("three".into()) };
    tool("stats", &args, answer!(python, tools.stats(args.clone()), structured))?;

    let args = ShoutArgs { text: "typed".into(), times: 2 };
    tool("shout", &args, answer!(python, tools.shout(args.clone()), content))?;

    let args = FailArgs { reason: "typed".into() };
    tool("fail", &args, answer!(python, tools.fail(args.clone()), structured))?;

    let args = ReviewPromptArgs { code: "fn main() {}".into(), language: Some("rust".into()) };
    let result = Prompts::new(client).review(args.clone()).await?;
    line(json!({ "kind": "prompt", "name": "review", "args": args, "result": result.messages }));

    let uri = profile_uri("ada lovelace");
    let read = Resources::new(client).profile("ada lovelace").await?;
    line(json!({ "kind": "read", "uri": uri, "result": read.contents }));
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let (Some(server), Some(url), Some(era)) = (args.next(), args.next(), args.next()) else {
        return Err("usage: caller everything|python URL auto|modern|legacy".into());
    };
    let era = match era.as_str() {
        "auto" => mcp_client::EraPreference::Auto,
        "modern" => mcp_client::EraPreference::Modern,
        "legacy" => mcp_client::EraPreference::Legacy,
        other => return Err(format!("unknown era {other}").into()),
    };
    // The root `mcp` offers (the current directory), so that get-roots-list answers alike.
    let handlers = mcp_client::Handlers::new().roots(|| async {
        let cwd = std::env::current_dir().map_err(|e| mcp_client::HandlerError(e.to_string()))?;
        let root = json!({
            "uri": format!("file://{}", cwd.display()),
            "name": cwd.file_name().map(|n| n.to_string_lossy().into_owned()),
        });
        Ok(vec![serde_json::from_value(root).map_err(|e| mcp_client::HandlerError(e.to_string()))?])
    });
    let client =
        mcp_client::Client::builder("cli-interop-caller", "1.0").era(era).handlers(handlers).connect_http(&url).await?;
    match server.as_str() {
        "everything" => everything(&client).await?,
        "python" => python(&client).await?,
        other => return Err(format!("unknown server {other}").into()),
    }
    client.close().await;
    Ok(())
}
