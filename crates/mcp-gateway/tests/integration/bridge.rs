//! The era bridge: what an upstream asks of its caller while serving a call (elicitation,
//! sampling, roots), its log messages and its progress reach the downstream caller in the
//! caller's era, whatever the upstream's, and the answers get back.

use std::sync::{Arc, Mutex};

use mcp_client::{CallOptions, Client, ElicitationModes, ElicitationResponse, EraPreference, Handlers};
use mcp_gateway::Gateway;
use mcp_server::types::{
    CallToolResult, ContentBlock, CreateMessageRequestParams, CreateMessageResult, CreateMessageResultContent,
    LoggingLevel, Role, Root, TextContent,
};
use mcp_server::{Context, Elicited, Error, Server, ToolRoute};
use serde_json::{Value, json};

use crate::common;
use common::{Upstream, Whom, config, serve};

/// No arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

/// A server whose tool `interview` asks its caller a name (a form), a model's answer and the
/// roots (when its session declared them), logging and reporting progress between the questions.
fn interviewer() -> Server {
    interviewer_with(mcp_server::Options::default())
}

fn interviewer_with(options: mcp_server::Options) -> Server {
    Server::builder("interviewer", "1.0.0")
        .options(options)
        .tool(ToolRoute::new("interview", |ctx: Context, Nothing {}| async move {
            ctx.log(LoggingLevel::Info, Some("interviewer"), json!("asking a name")).await;
            ctx.progress(1.0, Some(3.0), Some("name")).await;
            let name = match ctx.elicit_named::<Whom>("whom", "Who is there?").await? {
                Elicited::Accept(Whom { name }) => name,
                _ => "nobody".to_owned(),
            };
            ctx.progress(2.0, Some(3.0), Some("model")).await;
            let question: CreateMessageRequestParams = serde_json::from_value(json!({
                "messages": [{ "role": "user", "content": { "type": "text", "text": format!("Greet {name}") } }],
                "maxTokens": 20,
            }))
            .unwrap();
            let answer = ctx.create_message("greeting", question).await?;
            let said = match answer.content {
                CreateMessageResultContent::TextContent(text) => text.text,
                other => format!("{other:?}"),
            };
            ctx.log(LoggingLevel::Debug, Some("interviewer"), json!("asked the model")).await;
            // A session that declared no roots is not asked for them.
            let roots = match ctx.list_roots("roots").await {
                Ok(roots) => roots.roots.into_iter().map(|root| root.uri).collect::<Vec<_>>().join(","),
                Err(Error::MissingCapability(needed)) if needed.roots.is_some() => "no roots".to_owned(),
                Err(error) => return Err(error),
            };
            ctx.progress(3.0, Some(3.0), Some("roots")).await;
            Ok::<_, Error>(format!("{name}; {said}; {roots}"))
        }))
        .build()
        .unwrap()
}

/// Answers as a person at a desk would: a name, a model's greeting, one root.
fn desk() -> Handlers {
    Handlers::new()
        .elicitation(ElicitationModes::FORM, |params| async move {
            let asked = serde_json::to_value(&params).unwrap();
            assert_eq!(asked["message"], "Who is there?");
            ElicitationResponse::accept_value(&json!({ "name": "Ada" }))
        })
        .sampling(Default::default(), |params| async move {
            let asked = serde_json::to_value(&params.messages).unwrap();
            let text = asked[0]["content"]["text"].as_str().unwrap().to_owned();
            Ok(CreateMessageResult::new(
                CreateMessageResultContent::TextContent(TextContent::new(format!("{text}!"))),
                "model",
                Role::Assistant,
            ))
        })
        .roots(|| async { Ok(vec![Root { uri: "file:///desk".into(), ..Default::default() }]) })
}

fn only_text(result: &CallToolResult) -> &str {
    match &result.content[..] {
        [ContentBlock::Text(text)] => &text.text,
        other => panic!("not one text: {other:?}"),
    }
}

async fn gateway(upstream: &Upstream, era: &str) -> Gateway {
    let toml = format!("[[upstream]]\nname = \"i\"\nurl = \"{}\"\nera = \"{era}\"\nprefix = \"\"\n", upstream.url);
    Gateway::start(&config(&toml)).await.unwrap()
}

/// Calls `interview` at `url` in `era` with the desk's answers, asking for info logs and
/// progress: the result's text, the log messages and the progress messages seen.
async fn interview(url: &str, era: EraPreference) -> (String, Vec<Value>, Vec<String>) {
    let client = Client::builder("desk", "1.0.0").era(era).handlers(desk()).connect_http(url).await.unwrap();
    let logs = Arc::new(Mutex::new(Vec::new()));
    let progress = Arc::new(Mutex::new(Vec::new()));
    let (seen_logs, seen_progress) = (Arc::clone(&logs), Arc::clone(&progress));
    let mut options = CallOptions::new()
        .on_log(move |message| seen_logs.lock().unwrap().push(message.data))
        .on_progress(move |report| seen_progress.lock().unwrap().push(report.message.unwrap_or_default()));
    // Only info and above: the caller's level decides, not the one the gateway asks upstream.
    match era {
        EraPreference::Legacy => client.set_log_level(LoggingLevel::Info).await.unwrap(),
        _ => options = options.log_level(LoggingLevel::Info),
    }
    let result = client.call_tool_with("interview", json!({}), options).await.unwrap();
    let text = only_text(&result).to_owned();
    let logs = logs.lock().unwrap().clone();
    let progress = progress.lock().unwrap().clone();
    (text, logs, progress)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn questions_logs_and_progress_cross_the_gateway_in_every_pair_of_eras() {
    let upstream = Upstream::start(interviewer(), 0);
    for (upstream_era, direct_era) in [("legacy", EraPreference::Legacy), ("modern", EraPreference::Modern)] {
        let gateway = gateway(&upstream, upstream_era).await;
        let url = serve(&gateway).await;
        // What a caller of the upstream's own era sees calling it directly: a legacy server
        // runs once; a modern one runs again in each round, and logs and reports again.
        let (text, logs, progress) = interview(&upstream.url, direct_era).await;
        assert_eq!(text, "Ada; Greet Ada!; file:///desk");
        match direct_era {
            EraPreference::Legacy => {
                assert_eq!(logs, [json!("asking a name")]);
                assert_eq!(progress, ["name", "model", "roots"]);
            }
            _ => assert_eq!(logs.len(), 4, "one round per question, and the last: {logs:?}"),
        }
        // The gateway's legacy session is every caller's: it declares no roots, so that one
        // caller's roots never become the session's. A modern upstream asks each request's own.
        let text_through = match upstream_era {
            "legacy" => "Ada; Greet Ada!; no roots".to_owned(),
            _ => text.clone(),
        };
        for era in [EraPreference::Modern, EraPreference::Legacy] {
            let pair = format!("{upstream_era} upstream, {era:?} caller");
            let through = interview(&url, era).await;
            assert_eq!(through, (text_through.clone(), logs.clone(), progress.clone()), "{pair}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_caller_gets_the_questions_of_a_legacy_upstream_as_input_requests_sealed_by_the_gateway() {
    let upstream = Upstream::start(interviewer(), 0);
    let gateway = gateway(&upstream, "legacy").await;
    let url = serve(&gateway).await;
    let http = reqwest::Client::new();
    let call = |extra: Value| modern_interview(&http, &url, extra);
    // Round 1: the upstream's elicitation, under a key named for its method (a legacy server's
    // requests have none), with a state only the gateway can open.
    let first = call(json!({})).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    assert_eq!(result["inputRequests"]["elicitation"]["method"], "elicitation/create", "{first}");
    assert_eq!(result["inputRequests"]["elicitation"]["params"]["message"], "Who is there?");
    let state = result["requestState"].as_str().unwrap().to_owned();
    let tampered = call(json!({"requestState": format!("{state}x")})).await;
    assert_eq!(tampered["error"]["code"], -32602, "{tampered}");
    // A retry without the answer is asked again; with it, the upstream asks its next question.
    let again = call(json!({"requestState": state})).await;
    assert!(again["result"]["inputRequests"]["elicitation"].is_object(), "{again}");
    let state = again["result"]["requestState"].as_str().unwrap().to_owned();
    let answer = json!({"elicitation": {"action": "accept", "content": {"name": "Bo"}}});
    let second = call(json!({"requestState": state, "inputResponses": answer})).await;
    assert_eq!(second["result"]["inputRequests"]["sampling"]["method"], "sampling/createMessage", "{second}");
    // The held call was resumed once: the same state cannot resume it again.
    let replayed = call(json!({"requestState": state, "inputResponses": answer})).await;
    let why = replayed["error"]["message"].as_str().unwrap_or_default();
    assert!(why.contains("no longer held"), "{replayed}");
}

/// A 2026-07-28 `tools/call` of `interview` on the raw wire, with `extra` params (a state, answers).
async fn modern_interview(http: &reqwest::Client, url: &str, extra: Value) -> Value {
    let mut params = json!({
        "name": "interview",
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}, "sampling": {}, "roots": {}},
        },
    });
    params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let request = http
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "interview")
        .header("Content-Type", "application/json")
        .body(body.to_string());
    serde_json::from_str::<Value>(&request.send().await.unwrap().text().await.unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_may_leave_at_most_64_upstream_requests_waiting_for_its_answers() {
    // The upstream takes more requests at once on the gateway's session than the gateway
    // holds for one caller, so that the gateway's bound is the one met.
    let mut options = mcp_server::Options::default();
    options.max_in_flight = 100;
    let upstream = Upstream::start(interviewer_with(options), 0);
    let gateway = gateway(&upstream, "legacy").await;
    let url = serve(&gateway).await;
    let http = reqwest::Client::new();
    // Every caller here is the anonymous one: 64 first rounds are held, each for its retry…
    let mut states = Vec::new();
    for n in 0..64 {
        let first = modern_interview(&http, &url, json!({})).await;
        assert_eq!(first["result"]["resultType"], "input_required", "call {n}: {first}");
        states.push(first["result"]["requestState"].as_str().unwrap().to_owned());
    }
    // …the 65th is refused (and cancelled upstream), naming the bound…
    let refused = modern_interview(&http, &url, json!({})).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    let why = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(why.contains("64 of this caller; at most 4096 and 64"), "{refused}");
    // …and none of those already held is lost: each goes on with its answer.
    let answer = json!({"elicitation": {"action": "accept", "content": {"name": "Bo"}}});
    for state in [&states[0], &states[63]] {
        let next = modern_interview(&http, &url, json!({"requestState": state, "inputResponses": answer})).await;
        assert_eq!(next["result"]["inputRequests"]["sampling"]["method"], "sampling/createMessage", "{next}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_cannot_answer_gets_the_missing_capability_named() {
    let upstream = Upstream::start(interviewer(), 0);
    for upstream_era in ["legacy", "modern"] {
        let gateway = gateway(&upstream, upstream_era).await;
        let url = serve(&gateway).await;
        let client = Client::builder("no-desk", "1.0.0").era(EraPreference::Modern).connect_http(&url).await.unwrap();
        let error = client.call_tool("interview", json!({})).await.unwrap_err();
        match &error {
            mcp_client::Error::Rpc { error, .. } => {
                assert_eq!(error.code, -32021, "{upstream_era}: {error:?}");
                assert_eq!(error.data.as_ref().unwrap()["requiredCapabilities"], json!({"elicitation": {"form": {}}}));
            }
            other => panic!("{upstream_era}: {other}"),
        }
        // A legacy session has no code of its own for it: -32602, naming it in the message.
        let client = Client::builder("no-desk", "1.0.0").era(EraPreference::Legacy).connect_http(&url).await.unwrap();
        match client.call_tool("interview", json!({})).await.unwrap_err() {
            mcp_client::Error::Rpc { error, .. } => {
                assert_eq!(error.code, -32602, "{upstream_era}: {error:?}");
                assert!(error.message.contains("elicitation"), "{upstream_era}: {error:?}");
            }
            other => panic!("{upstream_era}: {other}"),
        }
    }
}

/// This crate's binary over stdio (legacy era) in front of `upstream` (legacy era, HTTP): a
/// gateway whose upstream does not say which request a server request belongs to. The inner
/// gateway's configuration file is removed when the returned guard drops.
async fn chained_over_stdio(upstream: &Upstream, label: &str) -> (Gateway, String, RemoveOnDrop) {
    let inner = std::env::temp_dir().join(format!("mcp-gateway-bridge-{label}-{}.toml", std::process::id()));
    let inner_toml =
        format!("[[upstream]]\nname = \"i\"\nurl = \"{}\"\nera = \"legacy\"\nprefix = \"\"\n", upstream.url);
    std::fs::write(&inner, inner_toml).unwrap();
    let outer = format!(
        "[[upstream]]\nname = \"s\"\ncommand = [\"{}\", \"--stdio\", \"--config\", \"{}\"]\nera = \"legacy\"\nprefix = \"\"\n",
        env!("CARGO_BIN_EXE_mcp-gateway"),
        inner.display()
    );
    let gateway = Gateway::start(&config(&outer)).await.unwrap();
    let url = serve(&gateway).await;
    (gateway, url, RemoveOnDrop(inner))
}

struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_stdio_upstream_asking_while_two_calls_are_in_flight_is_refused() {
    // `hold` waits until released, so that it is in flight when `interview` asks its question:
    // stdio does not say which of the two calls the question is for, so no caller gets it.
    let (started, release) = (Arc::new(tokio::sync::Notify::new()), Arc::new(tokio::sync::Notify::new()));
    let (held, released) = (Arc::clone(&started), Arc::clone(&release));
    let server = Server::builder("interviewer", "1.0.0")
        .tool(ToolRoute::new("hold", move |_: Context, Nothing {}| {
            let (held, released) = (Arc::clone(&held), Arc::clone(&released));
            async move {
                held.notify_one();
                released.notified().await;
                Ok::<_, Error>("released".to_owned())
            }
        }))
        .tool(ToolRoute::new("interview", |ctx: Context, Nothing {}| async move {
            match ctx.elicit_named::<Whom>("whom", "Who is there?").await? {
                Elicited::Accept(Whom { name }) => Ok::<_, Error>(name),
                _ => Ok("nobody".to_owned()),
            }
        }))
        .build()
        .unwrap();
    let upstream = Upstream::start(server, 0);
    let (_gateway, url, _inner) = chained_over_stdio(&upstream, "two").await;
    let client = Client::builder("desk", "1.0.0").handlers(desk()).connect_http(&url).await.unwrap();
    let holding = {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool("hold", json!({})).await })
    };
    started.notified().await;
    // The upstream's handler gets the refusal, and its call ends as a tool error saying why.
    let refused = client.call_tool("interview", json!({})).await.unwrap();
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let said = only_text(&refused);
    assert!(said.contains("the client answered elicitation/create with an error"), "{said}");
    assert!(said.contains("cannot tell which of its callers"), "{said}");
    release.notify_one();
    let held = holding.await.unwrap().unwrap();
    assert_eq!(only_text(&held), "released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_stdio_upstream_asks_the_caller_of_its_only_call_in_flight_but_not_for_roots() {
    // The stdio upstream is this crate's binary, fronting the interviewer; stdio does not say
    // which call a server request belongs to, so the gateway gives an elicitation or a sampling
    // request to the only call in flight. Roots it gives to no caller: a server keeps them for
    // its session (each gateway's upstream session is every caller's), and one caller's roots
    // must not become the session's; neither gateway declares roots upstream.
    let upstream = Upstream::start(interviewer(), 0);
    let (_gateway, url, _inner) = chained_over_stdio(&upstream, "one").await;
    for era in [EraPreference::Modern, EraPreference::Legacy] {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let (named, modelled, rooted) = (Arc::clone(&asked), Arc::clone(&asked), Arc::clone(&asked));
        let handlers = Handlers::new()
            .elicitation(ElicitationModes::FORM, move |_| {
                named.lock().unwrap().push("name");
                async { ElicitationResponse::accept_value(&json!({ "name": "Ada" })) }
            })
            .sampling(Default::default(), move |_| {
                modelled.lock().unwrap().push("model");
                let text = TextContent::new("Hello!");
                async move { Ok(CreateMessageResult::new(text.into(), "model", Role::Assistant)) }
            })
            .roots(move || {
                rooted.lock().unwrap().push("roots");
                async { Ok(vec![Root { uri: "file:///desk".into(), ..Default::default() }]) }
            });
        let client = Client::builder("desk", "1.0.0").era(era).handlers(handlers).connect_http(&url).await.unwrap();
        let result = client.call_tool("interview", json!({})).await.unwrap();
        assert_eq!(only_text(&result), "Ada; Hello!; no roots", "{era:?} caller");
        assert_eq!(*asked.lock().unwrap(), ["name", "model"], "{era:?} caller");
    }
}
