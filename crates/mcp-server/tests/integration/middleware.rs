//! Tower middleware around MCP requests: tower's own layers and the crate's, on the server and
//! on one route, over in-memory connections (each its own session, as a stdio client is).

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use mcp_server::middleware::{self, McpCall, McpRequest, PrincipalRateLimit};
use mcp_server::{Connection, Context, Error, NoArguments, Principal, PromptRoute, Server, ToolRoute};
use mcp_types::{ContentBlock, Prompt, PromptMessage, Role, TextContent};
use serde_json::{Value, json};
use tower::ServiceBuilder;

const INTERNAL_ERROR: i64 = -32603;

fn call(id: i64, tool: &str) -> Value {
    modern(id, "tools/call", json!({ "name": tool, "arguments": {} }))
}

/// A tool that never answers by itself.
fn stuck(name: &str) -> ToolRoute {
    ToolRoute::new(name, |_ctx: Context, _: NoArguments| async {
        std::future::pending::<()>().await;
        Ok::<_, Error>("never")
    })
}

fn quick(name: &str) -> ToolRoute {
    ToolRoute::new(name, |_ctx: Context, _: NoArguments| async { Ok::<_, Error>("done") })
}

fn connect_as(server: &Server, principal: &str) -> MemoryClient {
    let (server_end, client_end) = Connection::memory();
    let server = server.clone();
    let principal = Principal::new(principal);
    tokio::spawn(async move { server.serve_as(server_end, principal).await });
    MemoryClient { connection: client_end }
}

#[tokio::test]
async fn a_timeout_on_one_tool_answers_its_error_while_the_other_tools_answer() {
    let server = Server::builder("t", "1")
        .tool(stuck("stuck_tower").layer(tower::timeout::TimeoutLayer::new(Duration::from_millis(50))))
        .tool(stuck("stuck_named").layer(middleware::timeout(Duration::from_millis(50))))
        .tool(quick("quick"))
        .build()
        .unwrap();
    let mut client = MemoryClient::start(&server);
    // Both stuck calls are in flight when the quick one is answered.
    client.send(call(1, "stuck_tower")).await;
    client.send(call(2, "stuck_named")).await;
    let quick = client.ask(call(3, "quick")).await;
    assert_eq!(text(&quick), "done");

    let mut answers = [client.recv().await, client.recv().await];
    answers.sort_by_key(|a| a["id"].as_i64());
    assert_error(&answers[0], 1, INTERNAL_ERROR);
    assert_eq!(message(&answers[0]), "tools/call stuck_tower timed out (tower::timeout)");
    assert_error(&answers[1], 2, INTERNAL_ERROR);
    assert_eq!(message(&answers[1]), "tools/call stuck_named timed out after 50 ms (a timeout layer's limit)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_concurrency_limit_of_four_holds_under_sixty_four_clients() {
    // Every call waits until four are inside together: with a limit below four none would
    // finish; above four, `most` would say so.
    let barrier = Arc::new(tokio::sync::Barrier::new(4));
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let tool = {
        let (barrier, inside, most) = (barrier.clone(), inside.clone(), most.clone());
        ToolRoute::new("work", move |_ctx: Context, _: NoArguments| {
            let (barrier, inside, most) = (barrier.clone(), inside.clone(), most.clone());
            async move {
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                barrier.wait().await;
                inside.fetch_sub(1, Ordering::SeqCst);
                Ok::<_, Error>("done")
            }
        })
    };
    let server =
        Server::builder("t", "1").tool(tool).layer(tower::limit::ConcurrencyLimitLayer::new(4)).build().unwrap();
    let clients: Vec<_> = (0..64)
        .map(|n| {
            let mut client = MemoryClient::start(&server);
            tokio::spawn(async move { client.ask(call(n, "work")).await })
        })
        .collect();
    for client in clients {
        let response = client.await.unwrap();
        assert_eq!(text(&response), "done", "{response}");
    }
    assert_eq!(most.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn a_rate_limit_per_principal_refuses_only_the_client_over_it() {
    let server = Server::builder("t", "1")
        .tool(quick("quick"))
        .layer(PrincipalRateLimit::new(3, Duration::from_secs(3600)))
        .build()
        .unwrap();
    let mut alice = connect_as(&server, "alice");
    let mut bob = connect_as(&server, "bob");
    for id in 1..=3 {
        assert_eq!(text(&alice.ask(call(id, "quick")).await), "done");
    }
    for id in 4..=5 {
        let refused = alice.ask(call(id, "quick")).await;
        assert_error(&refused, id, INTERNAL_ERROR);
        assert!(message(&refused).starts_with("Rate limit: alice made 3 requests in 3600000 ms"), "{refused}");
        assert!(refused["error"]["data"]["retryAfterMs"].as_u64().is_some_and(|ms| ms <= 3_600_000), "{refused}");
    }
    // Lists pass through the server's layers too.
    let listed = alice.ask(modern(6, "tools/list", json!({}))).await;
    assert_error(&listed, 6, INTERNAL_ERROR);
    for id in 1..=3 {
        assert_eq!(text(&bob.ask(call(id, "quick")).await), "done");
    }
}

#[tokio::test]
async fn load_shedding_answers_server_overloaded() {
    let server = Server::builder("t", "1")
        .tool(stuck("stuck"))
        .tool(quick("quick"))
        .layer(ServiceBuilder::new().load_shed().concurrency_limit(1))
        .build()
        .unwrap();
    let mut busy = MemoryClient::start(&server);
    busy.send(call(1, "stuck")).await;
    assert!(busy.quiet().await, "the stuck call holds the only slot");
    let mut shed = MemoryClient::start(&server);
    let refused = shed.ask(call(2, "quick")).await;
    assert_error(&refused, 2, INTERNAL_ERROR);
    assert_eq!(message(&refused), "Server overloaded: tools/call quick was shed by a load-shedding layer; retry later");
}

/// Records each request a layer sees, then lets it through.
fn audit(log: Arc<Mutex<Vec<String>>>) -> impl middleware::McpLayer {
    ServiceBuilder::new().map_request(move |request: McpRequest| {
        let target = request.call.target().map(|t| format!(" {t}")).unwrap_or_default();
        log.lock().unwrap().push(format!("{} {}{target}", request.principal().as_str(), request.method()));
        request
    })
}

#[tokio::test]
async fn server_layers_see_typed_requests_and_route_layers_only_their_route() {
    let server_log = Arc::new(Mutex::new(Vec::new()));
    let route_log = Arc::new(Mutex::new(Vec::new()));
    let prompt = PromptRoute::raw(Prompt::new("greet"), |_ctx: Context, _| async {
        Ok::<_, Error>(vec![PromptMessage::new(ContentBlock::Text(TextContent::new("hello")), Role::User)])
    });
    let server = Server::builder("t", "1")
        .tool(quick("quick").layer(audit(route_log.clone())))
        .tool(quick("other"))
        .prompt(prompt.layer(audit(route_log.clone())))
        .layer(audit(server_log.clone()))
        .build()
        .unwrap();
    let mut client = connect_as(&server, "carol");
    let _ = client.ask(modern(1, "tools/list", json!({}))).await;
    assert_eq!(text(&client.ask(call(2, "quick")).await), "done");
    assert_eq!(text(&client.ask(call(3, "other")).await), "done");
    let prompt = client.ask(modern(4, "prompts/get", json!({ "name": "greet" }))).await;
    assert!(prompt["result"]["messages"].is_array(), "{prompt}");
    // Not a request that reaches the application: no layer sees it.
    let _ = client.ask(modern(5, "server/discover", json!({}))).await;
    assert_eq!(
        *server_log.lock().unwrap(),
        ["carol tools/list", "carol tools/call quick", "carol tools/call other", "carol prompts/get greet"]
    );
    assert_eq!(*route_log.lock().unwrap(), ["carol tools/call quick", "carol prompts/get greet"]);
}

#[tokio::test]
async fn a_layer_that_answers_for_another_method_is_an_internal_error() {
    // A layer that swaps every request for a `tools/list`.
    let swap = ServiceBuilder::new().map_request(|mut request: McpRequest| {
        request.call = McpCall::ListTools(None);
        request
    });
    let server = Server::builder("t", "1").tool(quick("quick")).layer(swap).build().unwrap();
    let mut client = MemoryClient::start(&server);
    let answer = client.ask(call(1, "quick")).await;
    assert_error(&answer, 1, INTERNAL_ERROR);
    assert_eq!(message(&answer), "A middleware layer answered tools/call with the result of another method");
}

#[tokio::test]
async fn tool_failures_and_protocol_errors_pass_through_layers_unchanged() {
    let failing = ToolRoute::new("failing", |_ctx: Context, _: NoArguments| async {
        Err::<String, _>(Error::failed("the disk is full"))
    });
    let server = Server::builder("t", "1")
        .tool(failing.layer(middleware::timeout(Duration::from_secs(60))))
        .layer(middleware::timeout(Duration::from_secs(60)))
        .build()
        .unwrap();
    let mut client = MemoryClient::start(&server);
    let failed = client.ask(call(1, "failing")).await;
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    assert_eq!(text(&failed), "the disk is full");
    let unknown = client.ask(call(2, "missing")).await;
    assert_error(&unknown, 2, -32602);
    assert_eq!(message(&unknown), "Unknown tool: missing");
}

fn connect_with_scopes(server: &Server, subject: &str, scope: &str) -> MemoryClient {
    let (server_end, client_end) = Connection::memory();
    let server = server.clone();
    let claims = json!({ "sub": subject, "scope": scope });
    let Value::Object(claims) = claims else { unreachable!() };
    let principal = Principal::from_token(mcp_server::VerifiedToken::from_claims(claims));
    tokio::spawn(async move { server.serve_as(server_end, principal).await });
    MemoryClient { connection: client_end }
}

#[tokio::test]
async fn route_scopes_and_require_scopes_refuse_on_the_seam_before_the_applications_layers() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let server = Server::builder("t", "1")
        .tool(quick("open"))
        .tool(quick("write").scopes(["notes:write"]))
        .tool(quick("purge").layer(middleware::RequireScopes::new(["admin", "notes:write"])))
        .layer(audit(log.clone()))
        .build()
        .unwrap();
    let mut reader = connect_with_scopes(&server, "reader", "notes:read");
    assert_eq!(text(&reader.ask(call(1, "open")).await), "done");
    for (id, tool, needed) in [(2, "write", json!(["notes:write"])), (3, "purge", json!(["admin", "notes:write"]))] {
        let refused = reader.ask(call(id, tool)).await;
        assert_error(&refused, id, -32600);
        assert_eq!(refused["error"]["data"]["requiredScopes"], needed, "{refused}");
        assert!(message(&refused).starts_with("Forbidden: this request needs the scope(s)"), "{refused}");
    }
    // A route's scopes are checked before the server's layers (which never saw the refused
    // call); `RequireScopes` on a route runs inside them.
    assert_eq!(*log.lock().unwrap(), ["reader tools/call open", "reader tools/call purge"]);

    let mut admin = connect_with_scopes(&server, "admin", "notes:write admin");
    for (id, tool) in [(1, "write"), (2, "purge")] {
        assert_eq!(text(&admin.ask(call(id, tool)).await), "done");
    }
    // A caller without a token (stdio) has nothing to check.
    let mut local = connect_as(&server, "local");
    assert_eq!(text(&local.ask(call(1, "write")).await), "done");
}
