//! Two gateway instances of one deployment sharing a real `redis-server` (`[redis]`): a legacy
//! session opened on one is served by the other, a task one started is followed on the other,
//! and a multi-round request that comes back to the other instance is refused clearly (the
//! upstream request it continues is held by the first).

use std::sync::Arc;

use mcp_client::{Client, EraPreference, ToolCall};
use mcp_gateway::Gateway;
use mcp_server::{Context, Error, Server, ToolRoute};
use serde_json::{Value, json};

use crate::common;
use common::{Text, Upstream, Whom, config, serve};

use crate::support;

/// `wait` takes one pass through `gate`; `ask` asks its caller a name.
fn upstream_server(gate: Arc<tokio::sync::Semaphore>) -> Server {
    Server::builder("shared", "1.0.0")
        .tool(ToolRoute::new("wait", move |_: Context, Text { text }: Text| {
            let gate = Arc::clone(&gate);
            async move {
                gate.acquire().await.map_err(|e| Error::failed(e.to_string()))?.forget();
                Ok::<_, Error>(text)
            }
        }))
        .tool(ToolRoute::new("ask", |ctx: Context, _: mcp_server::NoArguments| async move {
            let name = match ctx.elicit_named::<Whom>("whom", "Who?").await? {
                mcp_server::Elicited::Accept(Whom { name }) => name,
                _ => "nobody".to_owned(),
            };
            Ok::<_, Error>(name)
        }))
        .build()
        .unwrap()
}

/// A JSON-RPC request to `url` (with the headers of its era); the response's JSON.
async fn post(url: &str, session: Option<&str>, body: Value) -> (Value, Option<String>) {
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let mut request = reqwest::Client::new()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .body(body.to_string());
    match session {
        Some(session) => {
            request = request.header("Mcp-Session-Id", session).header("MCP-Protocol-Version", "2025-11-25")
        }
        None if method != "initialize" => {
            request = request.header("MCP-Protocol-Version", "2026-07-28").header("Mcp-Method", &method);
            if let Some(name) = body["params"]["name"].as_str().or(body["params"]["taskId"].as_str()) {
                request = request.header("Mcp-Name", name);
            }
        }
        None => {}
    }
    let response = request.send().await.unwrap();
    let session = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    // A legacy answer may come as one SSE event.
    let json = text.lines().find_map(|line| line.strip_prefix("data: ")).unwrap_or(&text).to_owned();
    (serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {text}")), session)
}

fn modern_meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_sharing_redis_serve_each_others_sessions_and_tasks() {
    let redis = support::RedisServer::start();
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let upstream = Upstream::start(upstream_server(Arc::clone(&gate)), 0);
    let toml = format!(
        "task_after_secs = 0.2\n[redis]\nurl = \"{}\"\nstate_secret = \"a shared secret of this test deployment\"\n\
         [[upstream]]\nname = \"s\"\nurl = \"{}\"\nprefix = \"\"\n",
        redis.url(),
        upstream.url
    );
    let (one, two) = (Gateway::start(&config(&toml)).await.unwrap(), Gateway::start(&config(&toml)).await.unwrap());
    let (one_url, two_url) = (serve(&one).await, serve(&two).await);

    // A legacy session opened on one instance is served by the other.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (_, session) = post(&one_url, None, initialize).await;
    let session = session.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let _ = reqwest::Client::new()
        .post(&one_url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", &session)
        .header("MCP-Protocol-Version", "2025-11-25")
        .body(initialized.to_string())
        .send()
        .await
        .unwrap();
    gate.add_permits(1);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "wait", "arguments": {"text": "legacy"}}});
    let (answer, _) = post(&two_url, Some(&session), call).await;
    assert_eq!(answer["result"]["content"][0]["text"], "legacy", "{answer}");

    // A task started through one instance is followed through the other.
    let client = Client::builder("t", "1").era(EraPreference::Modern).tasks(true).connect_http(&one_url).await.unwrap();
    let ToolCall::Task(task) =
        client.call_tool_as_task("wait", json!({"text": "task"}), Default::default()).await.unwrap()
    else {
        panic!("not a task")
    };
    let get = |id: i64| {
        let meta = modern_meta(json!({"extensions": {mcp_types::ext::TASKS: {}}}));
        json!({"jsonrpc": "2.0", "id": id, "method": "tasks/get", "params": {"taskId": task.id(), "_meta": meta}})
    };
    let (state, _) = post(&two_url, None, get(3)).await;
    assert_eq!(state["result"]["status"], "working", "{state}");
    gate.add_permits(1);
    let mut finished = None;
    for id in 4..400 {
        let (state, _) = post(&two_url, None, get(id)).await;
        if state["result"]["status"] != "working" {
            finished = Some(state);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let finished = finished.expect("the task finished");
    assert_eq!(finished["result"]["result"]["content"][0]["text"], "task", "{finished}");

    // The shared secret opens the state on the other instance, which then says why it cannot
    // go on: the upstream request waiting for the answer is held by the first.
    let ask = |id: i64, extra: Value| {
        let mut params = json!({"name": "ask", "arguments": {}, "_meta": modern_meta(json!({"elicitation": {}}))});
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    };
    let (first, _) = post(&one_url, None, ask(500, json!({}))).await;
    let state = first["result"]["requestState"].as_str().unwrap_or_else(|| panic!("{first}")).to_owned();
    let answer =
        json!({"requestState": state, "inputResponses": {"whom": {"action": "accept", "content": {"name": "Ada"}}}});
    let (elsewhere, _) = post(&two_url, None, ask(501, answer.clone())).await;
    let why = elsewhere["error"]["message"].as_str().unwrap_or_default();
    assert!(why.contains("another gateway instance holds it"), "{elsewhere}");
    let (home, _) = post(&one_url, None, ask(502, answer)).await;
    assert_eq!(home["result"]["content"][0]["text"], "Ada", "{home}");
}
