//! `Server::handle_bytes` over a whole session: each input line is one message (a request, a
//! notification, a response to the server, a batch, or garbage); a line starting with `#` sets
//! the mirrored HTTP headers of the next message as JSON (`{"v": version, "m": method,
//! "n": name, "p": [[param, value]]}`; anything else there means all of them absent).
//!
//! Oracle: no panic (libFuzzer aborts on any, tasks included); every message the server sends
//! is valid JSON; each request gets at most one response, carrying the request's id when the
//! request had a readable one; an id used by one request only is answered at most once in the
//! whole session.
#![no_main]

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;
use std::time::Duration;

use futures::StreamExt as _;
use libfuzzer_sys::fuzz_target;
use mcp_server::dynamic::{AnswerFuture, RelayCall, RelayFuture, Relayed, ToolAnswer, ToolFuture, ToolSource};
use mcp_server::{
    Context, Error, Mirrors, NoArguments, PromptRoute, ResourceRoute, ResourceTemplateRoute, Server, Session,
    SkillRoute, TaskSupport, ToolRoute, text_result,
};
use mcp_types::{
    CallToolRequestParams, ClientCapabilities, CompleteResultCompletion, ContentBlock, GetPromptResult, JsonObject,
    LoggingLevel, Prompt, PromptArgument, PromptMessage, RawResult, ReadResourceResultContentsItem, RequestId,
    Resource, ResourceTemplate, Role, SamplingCapability, TextContent, TextResourceContents, Tool,
};
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    text: String,
}

fn contents(uri: &str, text: &str) -> Vec<ReadResourceResultContentsItem> {
    vec![TextResourceContents { uri: uri.into(), text: text.into(), ..Default::default() }.into()]
}

/// A server with one handler of each kind: plain and annotated tools, tools that ask the
/// client (elicitation, sampling), report progress and log, fail, become a task; resources, a
/// template, prompts, completion and a skill.
fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let regional = Tool::new(
            serde_json::from_value(json!({
                "type": "object",
                "properties": {
                    "region": { "type": "string", "x-mcp-header": "Region" },
                    "count": { "type": "integer", "x-mcp-header": "Count" },
                    "flag": { "type": "boolean", "x-mcp-header": "Flag" },
                },
                "required": ["region"],
            }))
            .expect("an object schema"),
            "regional",
        );
        let sampling = ClientCapabilities { sampling: Some(SamplingCapability::default()), ..Default::default() };
        let mut greeting = Prompt::new("greeting");
        let mut name = PromptArgument::new("name");
        name.required = Some(true);
        greeting.arguments = Some(vec![name]);
        Server::builder("fuzz", "1.0.0")
            .tool(ToolRoute::new("echo", |_: Context, args: Echo| async move { Ok::<_, Error>(args.text) }))
            .tool(ToolRoute::raw(regional, |_: Context, args: JsonObject| async move {
                Ok::<_, Error>(text_result(Value::Object(args).to_string()))
            }))
            .tool(ToolRoute::new("ask", |ctx: Context, _: NoArguments| async move {
                let form = serde_json::from_value(json!({"mode": "form", "message": "Name?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}))
                .expect("valid params");
                let first = ctx.elicit_with("first", form).await?;
                let roots = ctx.list_roots("roots").await?;
                Ok(text_result(format!("{:?} {}", first.action, roots.roots.len())))
            }))
            .tool(
                ToolRoute::new("sample", |ctx: Context, _: NoArguments| async move {
                    let params = serde_json::from_value(json!({"maxTokens": 5,
                        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}))
                    .expect("valid params");
                    let reply = ctx.create_message("model", params).await?;
                    Ok(text_result(json!(reply.content).to_string()))
                })
                .requires(sampling),
            )
            .tool(ToolRoute::new("progress", |ctx: Context, _: NoArguments| async move {
                for step in 0..3 {
                    ctx.progress(f64::from(step), Some(3.0), None).await;
                }
                ctx.log(LoggingLevel::Info, Some("fuzz"), json!("a log line")).await;
                ctx.close_stream().await;
                Ok::<_, Error>("done")
            }))
            .tool(ToolRoute::new("fail", |_: Context, _: NoArguments| async move {
                Err::<String, _>(Error::failed("failed on purpose"))
            }))
            .resource(ResourceRoute::new(
                Resource { uri: "test://static".into(), name: "static".into(), ..Default::default() },
                |_, uri| async move { Ok(contents(&uri, "static")) },
            ))
            .resource_template(ResourceTemplateRoute::new(
                ResourceTemplate {
                    uri_template: "test://items/{id}".into(),
                    name: "items".into(),
                    ..Default::default()
                },
                |_, uri, vars: BTreeMap<String, String>| async move { Ok(contents(&uri, &vars["id"])) },
            ))
            .prompt(PromptRoute::raw(greeting, |_, args| async move {
                Ok(GetPromptResult::new(vec![PromptMessage::new(
                    ContentBlock::Text(TextContent::new(format!("Hello {}", args["name"]))),
                    Role::User,
                )]))
            }))
            .tool(
                ToolRoute::new("build", |ctx: Context, _: NoArguments| async move {
                    // A task from its first wait on, with a question for tasks/update.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let form = serde_json::from_value(json!({"mode": "form", "message": "Target?",
                        "requestedSchema": {"type": "object", "properties": {"target": {"type": "string"}}}}))
                    .expect("valid params");
                    let answer = ctx.elicit_with("target", form).await?;
                    Ok::<_, Error>(format!("built {:?}", answer.action))
                })
                .task_support(TaskSupport::Optional),
            )
            .skill(
                SkillRoute::from_files(
                    "team/notes",
                    [("SKILL.md", "---\nname: notes\ndescription: Team notes\n---\n\n# Notes\n"), ("data/a.txt", "a")],
                )
                .expect("a valid skill"),
            )
            .tool_source(std::sync::Arc::new(Verbatim))
            .completion(|_, params| async move {
                let values = ["alpha", "beta"].into_iter().filter(|v| v.starts_with(&params.argument.value));
                Ok(CompleteResultCompletion::new(values.map(str::to_owned).collect()))
            })
            .build()
            .expect("a well-formed server")
    })
}

/// A tool source whose one tool, `verbatim`, answers its `text` argument as the result's text
/// (`ToolSource::answer`), which the server writes out unread: the fuzzer's text reaches
/// `server/raw_results.rs` as an upstream's result would. It relays too (`server/relay.rs`): a
/// relayed call with a `text` is answered the same way, one without is given back.
struct Verbatim;

impl ToolSource for Verbatim {
    fn tools(&self, _caller: &mcp_server::Principal) -> std::sync::Arc<[Tool]> {
        [Tool::new(mcp_types::ObjectSchema::default(), "verbatim")].into()
    }

    fn call(&self, ctx: Context, params: CallToolRequestParams) -> ToolFuture {
        let answer = self.answer(ctx, params);
        Box::pin(async move { answer.await?.decode() })
    }

    fn answer(&self, _ctx: Context, params: CallToolRequestParams) -> AnswerFuture {
        let text = params.arguments.as_ref().and_then(|a| a.get("text")).and_then(Value::as_str);
        let answer = match text.map(|text| RawResult::from_text(text.to_owned())) {
            Some(Ok(raw)) => Ok(ToolAnswer::Raw(raw)),
            _ => Err(Error::invalid_params("verbatim needs `text`: a JSON object")),
        };
        Box::pin(std::future::ready(answer))
    }

    fn relays(&self) -> bool {
        true
    }

    fn relay(&self, call: RelayCall<'_>) -> RelayFuture {
        #[derive(serde::Deserialize)]
        struct Arguments {
            text: Option<String>,
        }
        let arguments = call.arguments.and_then(|a| serde_json::from_str::<Arguments>(a.get()).ok());
        let answer = match arguments.and_then(|a| a.text).map(RawResult::from_text) {
            Some(Ok(raw)) => Relayed::Result(raw),
            _ => Relayed::Again,
        };
        Box::pin(std::future::ready(Ok(answer)))
    }
}

fn mirrors(spec: &[u8]) -> Mirrors<'static> {
    let Ok(Value::Object(spec)) = serde_json::from_slice::<Value>(spec) else { return Mirrors::default() };
    let text = |key: &str| spec.get(key).and_then(Value::as_str).map(|text| text.to_owned().into());
    let params = spec.get("p").and_then(Value::as_array).into_iter().flatten().filter_map(|pair| {
        let pair = pair.as_array()?;
        Some((pair.first()?.as_str()?.to_owned().into(), pair.get(1)?.as_str()?.to_owned().into()))
    });
    Mirrors { protocol_version: text("v"), method: text("m"), name: text("n"), params: params.collect() }
}

/// The id of a request: an object with a readable `id` and a `method`, or with `params` and
/// neither `result` nor `error` (a request that lost its method, answered as a request).
fn request_id(message: &Value) -> Option<RequestId> {
    let object = message.as_object()?;
    let request = object.contains_key("method")
        || (object.contains_key("params") && !object.contains_key("result") && !object.contains_key("error"));
    if !request {
        return None;
    }
    serde_json::from_value(object.get("id")?.clone()).ok()
}

async fn session(data: &[u8]) {
    let server = server();
    let session = Session::new();
    let (sent, mut received) = tokio::sync::mpsc::unbounded_channel::<(usize, mcp_server::Outgoing)>();
    let mut replies = tokio::task::JoinSet::new();
    let mut asked: Vec<Option<RequestId>> = Vec::new();
    let mut uses: HashMap<RequestId, usize> = HashMap::new();
    let mut next_mirrors = None;
    for line in data.split(|&b| b == b'\n') {
        if let Some(spec) = line.strip_prefix(b"#") {
            next_mirrors = Some(mirrors(spec));
            continue;
        }
        let parsed = serde_json::from_slice::<Value>(line).ok();
        let elements = match &parsed {
            Some(Value::Array(batch)) => batch.iter().collect(),
            Some(message) => vec![message],
            None => Vec::new(),
        };
        for id in elements.into_iter().filter_map(request_id) {
            *uses.entry(id).or_default() += 1;
        }
        let Some(mut reply) = server.handle_bytes(&session, line, next_mirrors.take().as_ref()) else { continue };
        let index = asked.len();
        asked.push(parsed.as_ref().and_then(request_id));
        let sent = sent.clone();
        replies.spawn(async move {
            while let Some(message) = reply.next().await {
                let _ = sent.send((index, message));
            }
        });
        // Let the handlers run up to their next wait, as a connection would between messages.
        tokio::task::yield_now().await;
    }
    // The clock is paused: this lets every handler finish, or time out waiting on the client.
    tokio::time::sleep(Duration::from_secs(24 * 3600)).await;
    session.close();
    replies.abort_all();
    while replies.join_next().await.is_some() {}
    drop(sent);

    let mut responses_per_reply = vec![0usize; asked.len()];
    let mut answers: HashMap<RequestId, usize> = HashMap::new();
    while let Some((index, message)) = received.recv().await {
        if !message.is_message() {
            continue;
        }
        serde_json::from_str::<serde::de::IgnoredAny>(&message.json)
            .unwrap_or_else(|e| panic!("the server sent invalid JSON ({e}): {}", message.json));
        // Valid JSON the harness cannot read as a `Value`: a number beyond f64 (an id echoed
        // exactly as the client wrote it, a request the harness could not read either).
        let Ok(value) = serde_json::from_str::<Value>(&message.json) else { continue };
        if !message.is_response() {
            continue;
        }
        responses_per_reply[index] += 1;
        assert!(responses_per_reply[index] <= 1, "a second response to one request: {}", message.json);
        if let (Some(asked), Value::Object(response)) = (&asked[index], &value) {
            let id = response.get("id").cloned().and_then(|id| serde_json::from_value::<RequestId>(id).ok());
            assert_eq!(id.as_ref(), Some(asked), "a response with another id than its request: {}", message.json);
        }
        let responses = match &value {
            Value::Array(batch) => batch.iter().collect(),
            response => vec![response],
        };
        for response in responses {
            if let Some(id) = response.get("id").cloned().and_then(|id| serde_json::from_value::<RequestId>(id).ok()) {
                *answers.entry(id).or_default() += 1;
            }
        }
    }
    for (id, count) in answers {
        if uses.get(&id) == Some(&1) {
            assert!(count <= 1, "request {id} was answered {count} times");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    thread_local! {
        static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a runtime");
    }
    RUNTIME.with(|runtime| runtime.block_on(session(data)));
});
