//! Every mutant of the official 2026-07-28 client→server request examples (each member removed,
//! each value replaced by `null`, `0`, `-1.5`, `"x"`, `[]`, `{}`, `true`, the text cut at six
//! places; see `tests/src/mutate.rs`) is fed to one session of a small server whose tool, resource
//! and prompt are the ones the examples name, so that mutants reach the handlers and not only the
//! envelope checks. No mutant may panic the server; a request with a usable `id` gets exactly one
//! response, with that id; errors use a standard or MCP code; and the server still answers a valid
//! `server/discover` afterwards.

#[allow(dead_code)]
#[path = "../../../tests/src/mutate.rs"]
mod mutate;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use mcp_server::{Context, Error, PromptRoute, Reply, ResourceRoute, Server, Session, ToolRoute, text_result};
use mcp_types::{
    CompleteResultCompletion, ContentBlock, GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage,
    RequestId, Resource, Role, TextContent, TextResourceContents, Tool, error_codes,
};
use mutate::{Kind, mutants};
use serde_json::{Value, json};

/// The codes a response may carry: JSON-RPC's own and the MCP ones.
const CODES: &[i64] = &[
    error_codes::PARSE_ERROR,
    error_codes::INVALID_REQUEST,
    error_codes::METHOD_NOT_FOUND,
    error_codes::INVALID_PARAMS,
    error_codes::INTERNAL_ERROR,
    error_codes::HEADER_MISMATCH,
    error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
    error_codes::UNSUPPORTED_PROTOCOL_VERSION,
    error_codes::RESOURCE_NOT_FOUND_LEGACY,
    error_codes::URL_ELICITATION_REQUIRED_LEGACY,
];

/// An upper bound for one reply; never reached when the server works.
const PATIENCE: Duration = Duration::from_secs(10);

/// `get_weather {location}`, `file:///project/src/main.rs`, `code_review {code}` (the names the
/// examples use), and completions.
fn server() -> Server {
    let weather = Tool::new(
        serde_json::from_value(json!({
            "type": "object",
            "properties": { "location": { "type": "string" } },
            "required": ["location"],
        }))
        .unwrap(),
        "get_weather",
    );
    let mut review = Prompt::new("code_review");
    let mut code = PromptArgument::new("code");
    code.required = Some(true);
    review.arguments = Some(vec![code]);
    Server::builder("mutations", "0.0.0")
        .tool(ToolRoute::raw(weather, |_: Context, args: JsonObject| async move {
            Ok::<_, Error>(text_result(format!("weather at {}", Value::Object(args))))
        }))
        .resource(ResourceRoute::new(
            Resource { uri: "file:///project/src/main.rs".into(), name: "main".into(), ..Default::default() },
            |_, uri| async move {
                let contents = TextResourceContents { uri, text: "fn main() {}".into(), ..Default::default() };
                Ok(vec![mcp_types::ReadResourceResultContentsItem::from(contents.with_mime_type("text/x-rust"))])
            },
        ))
        .prompt(PromptRoute::raw(review, |_, args| async move {
            Ok(GetPromptResult::new(vec![PromptMessage::new(
                ContentBlock::Text(TextContent::new(format!("Review {}", args["code"]))),
                Role::User,
            )]))
        }))
        .completion(|_, params| async move { Ok(CompleteResultCompletion::new(vec![params.argument.value])) })
        .build()
        .unwrap()
}

/// The client→server request examples: (folder, file, message).
fn request_examples() -> Vec<(String, String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema/2026-07-28/examples");
    assert!(dir.is_dir(), "{} is missing: run `cargo xtask schema sync` first", dir.display());
    let mut out = Vec::new();
    let mut folders: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    folders.sort();
    for folder in folders.into_iter().filter(|p| p.file_name().unwrap().to_string_lossy().ends_with("Request")) {
        let mut files: Vec<_> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        for file in files {
            let message: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            // Only whole JSON-RPC requests (some folders hold bare params or results).
            if message.get("jsonrpc").is_some() && message.get("id").is_some() && message.get("method").is_some() {
                let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
                out.push((name(&folder), name(&file), message));
            }
        }
    }
    out
}

/// Everything one reply carries, up to its response (for a subscription: its first message).
async fn drain(reply: Option<Reply>) -> Vec<Value> {
    let Some(mut reply) = reply else { return Vec::new() };
    let long_lived = reply.is_long_lived();
    let mut out = Vec::new();
    while let Some(message) = tokio::time::timeout(PATIENCE, reply.next()).await.expect("the reply ends") {
        if message.is_message() {
            out.push(serde_json::from_str(&message.json).expect("the server sends JSON"));
        }
        if long_lived {
            break; // the acknowledgement (or the error that refused it); dropping the reply closes it
        }
    }
    out
}

#[derive(Default, Debug)]
struct Tally {
    mutants: usize,
    results: usize,
    errors: usize,
    subscriptions: usize,
    silent: usize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutants_of_the_request_examples_get_one_clear_answer() {
    let server = server();
    let session = Session::new();
    let examples = request_examples();
    assert_eq!(examples.len(), 10, "upstream has 10 whole request examples");
    let mut failures = Vec::new();
    let mut total = Tally::default();
    for (folder, file, original) in &examples {
        // The originals are served (completion, discovery and listing included).
        let answer = drain(server.handle(&session, original.clone(), None)).await;
        let last = answer.last().cloned().unwrap_or_default();
        if last.get("error").is_some() {
            failures.push(format!("{folder}/{file}: the original was refused: {last}"));
        }
        let mut tally = Tally::default();
        for mutant in mutants(original) {
            tally.mutants += 1;
            let case = format!("{folder}/{file} {} {}", mutant.path, mutant.label);
            let handled = catch_unwind(AssertUnwindSafe(|| match &mutant.value {
                Some(value) => server.handle(&session, value.clone(), None),
                None => server.handle_bytes(&session, mutant.text.as_bytes(), None),
            }));
            let Ok(reply) = handled else {
                failures.push(format!("{case}: PANICKED"));
                continue;
            };
            let messages = drain(reply).await;
            // A usable id must come back; an unusable one (or none) is answered with no id.
            let id = mutant.value.as_ref().and_then(|v| v.get("id")).cloned();
            let usable = id.clone().filter(|id| serde_json::from_value::<RequestId>(id.clone()).is_ok());
            let is_request = mutant.value.as_ref().is_some_and(|v| v.get("method").is_some_and(Value::is_string));
            let responses: Vec<&Value> = messages.iter().filter(|m| m.get("method").is_none()).collect();
            let acknowledged = messages.len() == 1
                && messages[0]["method"] == "notifications/subscriptions/acknowledged"
                && usable.is_some();
            if acknowledged {
                tally.subscriptions += 1;
                continue;
            }
            match responses.as_slice() {
                [] if usable.is_none() && mutant.kind != Kind::Truncated => tally.silent += 1,
                [] if usable.is_some() && !is_request => tally.silent += 1, // a response to nothing pending
                [] => failures.push(format!("{case}: no response")),
                [response] => {
                    let want = usable.clone().unwrap_or(Value::Null);
                    let got = response.get("id").cloned().unwrap_or(Value::Null);
                    if got != want {
                        failures.push(format!("{case}: answered with id {got}, want {want}: {response}"));
                    }
                    if let Some(error) = response.get("error") {
                        tally.errors += 1;
                        let code = error["code"].as_i64().unwrap_or_default();
                        let message = error["message"].as_str().unwrap_or_default();
                        if !CODES.contains(&code) {
                            failures.push(format!("{case}: non-standard code {code}: {response}"));
                        }
                        if message.trim().is_empty() {
                            failures.push(format!("{case}: empty error message: {response}"));
                        }
                    } else if response.get("result").is_some() {
                        tally.results += 1;
                    } else {
                        failures.push(format!("{case}: neither result nor error: {response}"));
                    }
                }
                more => failures.push(format!("{case}: {} responses: {more:?}", more.len())),
            }
        }
        println!("{folder}/{file}: {tally:?}");
        total.mutants += tally.mutants;
        total.results += tally.results;
        total.errors += tally.errors;
        total.subscriptions += tally.subscriptions;
        total.silent += tally.silent;
    }
    println!("total: {total:?}");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));

    // The session still works.
    let discover = examples.iter().find(|(folder, ..)| folder == "DiscoverRequest").unwrap().2.clone();
    let answer = drain(server.handle(&session, discover, None)).await;
    assert_eq!(answer.len(), 1, "{answer:?}");
    assert_eq!(answer[0]["id"], "discover-1");
    assert_eq!(answer[0]["result"]["resultType"], "complete", "{}", answer[0]);
}
