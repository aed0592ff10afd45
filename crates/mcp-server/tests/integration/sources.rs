//! `ServerBuilder::tool_source`, `prompt_source` and `resource_source`: entries known only while
//! serving, listed after the routes and asked for every name (URI) no route serves, in both eras.

use crate::common;

use common::*;
use std::sync::{Arc, Mutex};

use mcp_server::dynamic::{ToolFuture, ToolSource};
use mcp_server::{Context, Error, Options, Server, ToolRoute, text_result};
use mcp_types::{CallToolRequestParams, ObjectSchema, Tool};
use serde_json::json;

/// Tools named by the test; each answers its name and arguments, or refuses a name it lacks.
#[derive(Default)]
struct Named(Mutex<Vec<String>>);

impl ToolSource for Named {
    fn tools(&self, _caller: &mcp_server::Principal) -> Arc<[Tool]> {
        self.0.lock().unwrap().iter().map(|name| Tool::new(ObjectSchema::default(), name)).collect()
    }

    fn call(&self, _ctx: Context, params: CallToolRequestParams) -> ToolFuture {
        let known = self.0.lock().unwrap().contains(&params.name);
        Box::pin(async move {
            match known {
                true => Ok(text_result(format!("{} {}", params.name, json!(params.arguments.unwrap_or_default())))),
                false => Err(Error::invalid_params(format!("Unknown tool: {}", params.name))),
            }
        })
    }
}

fn server(source: &Arc<Named>, page_size: usize) -> Server {
    let mut options = Options::default();
    options.page_size = page_size;
    Server::builder("dynamic", "1.0.0")
        .tool(ToolRoute::new("echo", |_, args: Echo| async move { Ok::<_, Error>(format!("route {}", args.text)) }))
        .tool_source(Arc::clone(source) as Arc<dyn ToolSource>)
        .options(options)
        .build()
        .unwrap()
}

fn listed(response: &serde_json::Value) -> Vec<String> {
    let tools = response["result"]["tools"].as_array().unwrap_or_else(|| panic!("a list: {response}"));
    tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn source_tools_are_listed_after_the_routes_across_pages() {
    let source = Arc::new(Named(Mutex::new(vec!["a".into(), "b".into(), "echo".into()])));
    let mut client = MemoryClient::start(&server(&source, 2));
    let first = client.ask(modern(1, "tools/list", json!({}))).await;
    assert_eq!(listed(&first), ["echo", "a"]);
    let cursor = first["result"]["nextCursor"].clone();
    let second = client.ask(modern(2, "tools/list", json!({ "cursor": cursor }))).await;
    // The source's own `echo` is listed too: the route wins its calls, as documented.
    assert_eq!(listed(&second), ["b", "echo"]);
    assert!(second["result"].get("nextCursor").is_none(), "{second}");

    source.0.lock().unwrap().push("c".into());
    let changed = client.ask(modern(3, "tools/list", json!({}))).await;
    assert_eq!(listed(&changed), ["echo", "a"]);
}

#[tokio::test]
async fn calls_go_to_the_route_else_the_source_in_both_eras() {
    let source = Arc::new(Named(Mutex::new(vec!["a".into(), "echo".into()])));
    let server = server(&source, 50);
    assert!(server.capabilities().tools.as_ref().is_some_and(|t| t.list_changed == Some(true)));
    let mut modern_client = MemoryClient::start(&server);
    let call = |id: i64, name: &str| modern(id, "tools/call", json!({ "name": name, "arguments": { "text": "x" } }));
    assert_eq!(text(&modern_client.ask(call(1, "echo")).await), "route x");
    assert_eq!(text(&modern_client.ask(call(2, "a")).await), r#"a {"text":"x"}"#);
    let unknown = modern_client.ask(call(3, "nothing")).await;
    assert_error(&unknown, 3, -32602);
    assert!(message(&unknown).contains("Unknown tool: nothing"), "{unknown}");

    let mut legacy = MemoryClient::start(&server);
    legacy.ask(initialize(0, "2025-11-25", json!({}))).await;
    legacy.send(notification("notifications/initialized", json!({}))).await;
    let answer = legacy.ask(request(1, "tools/call", json!({ "name": "a", "arguments": { "n": 1 } }))).await;
    assert_eq!(text(&answer), r#"a {"n":1}"#);
}

#[tokio::test]
async fn a_server_with_only_a_source_declares_tools_even_while_it_has_none() {
    let server = Server::builder("empty", "1.0.0").tool_source(Arc::new(Named::default())).build().unwrap();
    assert!(server.capabilities().tools.is_some());
    let mut client = MemoryClient::start(&server);
    assert!(listed(&client.ask(modern(1, "tools/list", json!({}))).await).is_empty());
}

/// Prompts named by the test; each answers with its name.
struct Prompts(Vec<String>);

impl mcp_server::dynamic::PromptSource for Prompts {
    fn prompts(&self, _caller: &mcp_server::Principal) -> Arc<[mcp_types::Prompt]> {
        self.0.iter().map(mcp_types::Prompt::new).collect()
    }

    fn get(&self, _ctx: Context, params: mcp_types::GetPromptRequestParams) -> mcp_server::dynamic::PromptFuture {
        let known = self.0.contains(&params.name);
        Box::pin(async move {
            match known {
                true => Ok(mcp_types::GetPromptResult::new(vec![mcp_types::PromptMessage::new(
                    mcp_types::ContentBlock::Text(mcp_types::TextContent::new(format!("from {}", params.name))),
                    mcp_types::Role::User,
                )])),
                false => Err(Error::invalid_params(format!("Unknown prompt: {}", params.name))),
            }
        })
    }
}

#[tokio::test]
async fn source_prompts_are_listed_and_got_when_no_route_has_the_name() {
    let server =
        Server::builder("prompts", "1.0.0").prompt_source(Arc::new(Prompts(vec!["dynamic".into()]))).build().unwrap();
    assert!(server.capabilities().prompts.is_some());
    let mut client = MemoryClient::start(&server);
    let list = client.ask(modern(1, "prompts/list", json!({}))).await;
    assert_eq!(list["result"]["prompts"][0]["name"], "dynamic", "{list}");
    let got = client.ask(modern(2, "prompts/get", json!({ "name": "dynamic" }))).await;
    assert_eq!(got["result"]["messages"][0]["content"]["text"], "from dynamic", "{got}");
    let unknown = client.ask(modern(3, "prompts/get", json!({ "name": "other" }))).await;
    assert_error(&unknown, 3, -32602);
}

/// One resource and one template; reads answer with the URI.
struct Files;

impl mcp_server::dynamic::ResourceSource for Files {
    fn resources(&self, _caller: &mcp_server::Principal) -> Arc<[mcp_types::Resource]> {
        Arc::from(vec![mcp_types::Resource { uri: "file:///a".into(), name: "a".into(), ..Default::default() }])
    }

    fn templates(&self, _caller: &mcp_server::Principal) -> Arc<[mcp_types::ResourceTemplate]> {
        Arc::from(vec![mcp_types::ResourceTemplate {
            uri_template: "file:///dir/{name}".into(),
            name: "dir".into(),
            ..Default::default()
        }])
    }

    fn read(&self, _ctx: Context, uri: String) -> mcp_server::dynamic::ReadFuture {
        Box::pin(async move {
            match uri == "file:///a" || uri.starts_with("file:///dir/") {
                true => Ok(vec![mcp_types::ReadResourceResultContentsItem::TextResourceContents(
                    mcp_types::TextResourceContents {
                        text: format!("read {uri}"),
                        uri: uri.clone(),
                        ..Default::default()
                    },
                )]),
                false => Err(Error::resource_not_found(&uri)),
            }
        })
    }
}

#[tokio::test]
async fn source_resources_and_templates_are_listed_read_and_subscribed() {
    let server = Server::builder("files", "1.0.0").resource_source(Arc::new(Files)).build().unwrap();
    assert!(server.capabilities().resources.is_some());
    let mut client = MemoryClient::start(&server);
    let resources = client.ask(modern(1, "resources/list", json!({}))).await;
    assert_eq!(resources["result"]["resources"][0]["uri"], "file:///a", "{resources}");
    let templates = client.ask(modern(2, "resources/templates/list", json!({}))).await;
    assert_eq!(templates["result"]["resourceTemplates"][0]["uriTemplate"], "file:///dir/{name}", "{templates}");
    let read = client.ask(modern(3, "resources/read", json!({ "uri": "file:///dir/b" }))).await;
    assert_eq!(read["result"]["contents"][0]["text"], "read file:///dir/b", "{read}");
    let missing = client.ask(modern(4, "resources/read", json!({ "uri": "file:///elsewhere" }))).await;
    assert_error(&missing, 4, -32602);

    let mut legacy = MemoryClient::start(&server);
    legacy.ask(initialize(0, "2025-11-25", json!({}))).await;
    legacy.send(notification("notifications/initialized", json!({}))).await;
    let subscribed = legacy.ask(request(1, "resources/subscribe", json!({ "uri": "file:///dir/c" }))).await;
    assert!(subscribed.get("result").is_some(), "a URI the source serves: {subscribed}");
    let refused = legacy.ask(request(2, "resources/subscribe", json!({ "uri": "file:///elsewhere" }))).await;
    assert!(refused.get("error").is_some(), "{refused}");
}

/// One tool per caller: named after the principal that lists it.
struct PerCaller;

impl ToolSource for PerCaller {
    fn tools(&self, caller: &mcp_server::Principal) -> Arc<[Tool]> {
        Arc::from(vec![Tool::new(ObjectSchema::default(), format!("for_{}", caller.as_str()))])
    }

    fn call(&self, ctx: Context, params: CallToolRequestParams) -> ToolFuture {
        let mine = params.name == format!("for_{}", ctx.principal().as_str());
        Box::pin(async move {
            match mine {
                true => Ok(text_result("yours")),
                false => Err(Error::invalid_params(format!("Unknown tool: {}", params.name))),
            }
        })
    }
}

#[tokio::test]
async fn a_source_lists_what_each_caller_may_see() {
    let server = Server::builder("per-caller", "1.0.0").tool_source(Arc::new(PerCaller)).build().unwrap();
    for who in ["ada", "alan"] {
        let (server_end, client_end) = mcp_server::Connection::memory();
        let serving = server.clone();
        tokio::spawn(async move { serving.serve_as(server_end, mcp_server::Principal::new(who)).await });
        let mut client = MemoryClient { connection: client_end };
        assert_eq!(listed(&client.ask(modern(1, "tools/list", json!({}))).await), [format!("for_{who}")]);
        let call = client.ask(modern(2, "tools/call", json!({ "name": format!("for_{who}") }))).await;
        assert_eq!(text(&call), "yours");
    }
}

/// A source whose tools may run as tasks: `yield` waits once, `gated` until the test opens
/// its gate; each answers its name.
struct Tasked {
    gate: Arc<tokio::sync::Semaphore>,
    support: mcp_server::TaskSupport,
}

impl ToolSource for Tasked {
    fn tools(&self, _caller: &mcp_server::Principal) -> Arc<[Tool]> {
        ["yield", "gated"].map(|name| Tool::new(ObjectSchema::default(), name)).into()
    }

    fn call(&self, _ctx: Context, params: CallToolRequestParams) -> ToolFuture {
        let gate = Arc::clone(&self.gate);
        Box::pin(async move {
            match params.name.as_str() {
                "gated" => gate.acquire().await.expect("open").forget(),
                _ => tokio::task::yield_now().await,
            }
            Ok(text_result(params.name))
        })
    }

    fn task_support(&self, _tool: &str) -> mcp_server::TaskSupport {
        self.support
    }

    fn offers_tasks(&self) -> bool {
        self.support != mcp_server::TaskSupport::Forbidden
    }
}

fn tasked(support: mcp_server::TaskSupport, grace: std::time::Duration) -> (Server, Arc<tokio::sync::Semaphore>) {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let mut options = Options::default();
    options.task_grace = grace;
    let source = Tasked { gate: Arc::clone(&gate), support };
    let server = Server::builder("tasked", "1.0.0").tool_source(Arc::new(source)).options(options).build().unwrap();
    (server, gate)
}

fn tasks_call(id: i64, tool: &str, declares_tasks: bool) -> serde_json::Value {
    let capabilities = match declares_tasks {
        true => json!({ "extensions": { mcp_types::ext::TASKS: {} } }),
        false => json!({}),
    };
    request(id, "tools/call", json!({ "name": tool, "arguments": {}, "_meta": meta_with(capabilities) }))
}

/// Polls `tasks/get` until the task is over; its state.
async fn finished(client: &mut MemoryClient, task_id: &str) -> serde_json::Value {
    for id in 100.. {
        let meta = meta_with(json!({ "extensions": { mcp_types::ext::TASKS: {} } }));
        let state = client.ask(request(id, "tasks/get", json!({ "taskId": task_id, "_meta": meta }))).await;
        if state["result"]["status"] != "working" {
            return state;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    unreachable!()
}

#[tokio::test]
async fn a_sources_call_becomes_a_task_as_a_routes_does() {
    let (server, _gate) = tasked(mcp_server::TaskSupport::Optional, std::time::Duration::ZERO);
    let caps = serde_json::to_value(server.capabilities()).unwrap();
    assert!(caps["extensions"][mcp_types::ext::TASKS].is_object(), "{caps}");
    let mut client = MemoryClient::start(&server);
    // Declaring the extension: the handler waits, so the call becomes a task.
    let created = client.ask(tasks_call(1, "yield", true)).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let done = finished(&mut client, &task_id).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(done["result"]["result"]["content"][0]["text"], "yield", "{done}");
    // Not declaring it: the result, directly.
    let direct = client.ask(tasks_call(2, "yield", false)).await;
    assert_eq!(direct["result"]["content"][0]["text"], "yield", "{direct}");
    // A source that allows none: never a task.
    let (server, _gate) = tasked(mcp_server::TaskSupport::Forbidden, std::time::Duration::ZERO);
    let caps = serde_json::to_value(server.capabilities()).unwrap();
    assert!(caps.pointer("/extensions").is_none_or(|e| e.get(mcp_types::ext::TASKS).is_none()), "{caps}");
    let direct = MemoryClient::start(&server).ask(tasks_call(3, "yield", true)).await;
    assert_eq!(direct["result"]["content"][0]["text"], "yield", "{direct}");
}

#[tokio::test]
async fn within_the_task_grace_a_call_answers_directly_and_after_it_becomes_a_task() {
    let (server, gate) = tasked(mcp_server::TaskSupport::Optional, std::time::Duration::from_millis(50));
    let mut client = MemoryClient::start(&server);
    let direct = client.ask(tasks_call(1, "yield", true)).await;
    assert_eq!(direct["result"]["content"][0]["text"], "yield", "it finished within the grace: {direct}");
    // `gated` cannot finish before the test opens its gate, so whatever the grace, it becomes a task.
    let created = client.ask(tasks_call(2, "gated", true)).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    gate.add_permits(1);
    let done = finished(&mut client, created["result"]["taskId"].as_str().unwrap()).await;
    assert_eq!(done["result"]["result"]["content"][0]["text"], "gated", "{done}");
}

#[tokio::test]
async fn a_sources_tool_that_runs_only_as_a_task_refuses_a_caller_without_the_extension() {
    let (server, _gate) = tasked(mcp_server::TaskSupport::Required, std::time::Duration::ZERO);
    let refused = MemoryClient::start(&server).ask(tasks_call(1, "yield", false)).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
}
