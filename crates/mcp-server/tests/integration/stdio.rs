//! Both protocol eras over the stdio transport: `mcp_server::stdio::serve_lines` on an in-process
//! byte pipe (`tokio::io::duplex`), newline-delimited JSON-RPC in both directions.
#![cfg(feature = "stdio")]

use crate::common;

use common::*;
use mcp_server::Server;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;

/// The client side of a stdio server: its stdin to write, its stdout to read.
struct StdioClient {
    stdin: Option<WriteHalf<DuplexStream>>,
    stdout: Lines<BufReader<ReadHalf<DuplexStream>>>,
    serving: JoinHandle<std::io::Result<()>>,
}

impl StdioClient {
    fn start(server: &Server) -> Self {
        let (client, server_end) = tokio::io::duplex(64 * 1024);
        let (server_read, server_write) = tokio::io::split(server_end);
        let serving =
            tokio::spawn(mcp_server::stdio::serve_lines(server.clone(), BufReader::new(server_read), server_write));
        let (client_read, client_write) = tokio::io::split(client);
        StdioClient { stdin: Some(client_write), stdout: BufReader::new(client_read).lines(), serving }
    }

    async fn send_raw(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(text.as_bytes()).await.expect("the server reads stdin");
        stdin.flush().await.expect("the server reads stdin");
    }

    async fn send(&mut self, message: Value) {
        self.send_raw(&format!("{message}\n")).await;
    }

    /// The next line the server writes, which must be one JSON-RPC message.
    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.stdout.next_line())
            .await
            .expect("a line from the server")
            .expect("stdout is readable")
            .expect("stdout is open");
        assert!(!line.is_empty() && !line.contains('\n'), "one message per line: {line:?}");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    async fn quiet(&mut self) -> bool {
        tokio::time::timeout(QUIET, self.stdout.next_line()).await.is_err()
    }

    /// Sends a request; returns what came before its response, and the response.
    async fn call(&mut self, message: Value) -> (Vec<Value>, Value) {
        let id = message["id"].clone();
        self.send(message).await;
        let mut before = Vec::new();
        loop {
            let message = self.recv().await;
            if message.get("method").is_none() && message["id"] == id {
                return (before, message);
            }
            before.push(message);
        }
    }

    /// Writes `line` and returns the next message.
    async fn recv_after_line(&mut self, line: &str) -> Value {
        self.send_raw(&format!("{line}\n")).await;
        self.recv().await
    }

    async fn ask(&mut self, message: Value) -> Value {
        let (before, response) = self.call(message).await;
        assert!(before.is_empty(), "unexpected messages before the response: {before:?}");
        response
    }

    /// Ends stdin (the server reads end of file).
    async fn close_stdin(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            stdin.shutdown().await.expect("stdin closes");
        }
    }

    /// Closes stdin; the server finishes and `serve_lines` returns.
    async fn close(mut self) -> std::io::Result<()> {
        self.close_stdin().await;
        let result = tokio::time::timeout(PATIENCE, self.serving).await.expect("serve_lines ends").expect("no panic");
        // Everything written before the end was a whole line.
        while let Some(line) = self.stdout.next_line().await? {
            assert!(serde_json::from_str::<Value>(&line).is_ok(), "{line}");
        }
        result
    }
}

#[tokio::test]
async fn modern_requests_over_stdio() {
    let mut client = StdioClient::start(&server());
    let response = client.ask(modern(1, "server/discover", json!({}))).await;
    assert_eq!(response["result"]["resultType"], "complete");
    assert_eq!(response["result"]["supportedVersions"][0], MODERN);
    assert_eq!(response["result"]["_meta"][SERVER_INFO]["name"], "fixture");

    let response =
        client.ask(modern("call", "tools/call", json!({ "name": "echo", "arguments": { "text": "hé\nllo" } }))).await;
    assert_eq!(response["id"], "call");
    assert_eq!(text(&response), "echo: hé\nllo");

    let response = client.ask(modern("health", "health", json!({}))).await;
    assert_eq!(
        response["result"],
        json!({ "protocolVersion": MODERN, "resultType": "complete", "_meta": { SERVER_INFO: { "name": "fixture", "version": "1.2.3" } } })
    );

    let mut m = meta();
    m["progressToken"] = json!("stdio-progress");
    m[LOG_LEVEL] = json!("warning");
    let (before, response) =
        client.call(request(2, "tools/call", json!({ "name": "progress_logger", "_meta": m }))).await;
    assert_eq!(text(&response), "progress done");
    let methods: Vec<&str> = before.iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(
        methods,
        ["notifications/progress", "notifications/progress", "notifications/progress", "notifications/message"]
    );
    assert!(before[..3].iter().all(|n| n["params"]["progressToken"] == "stdio-progress"));
    assert_eq!(before[3]["params"]["level"], "warning");
    client.close().await.expect("a clean end");
}

#[tokio::test]
async fn modern_error_paths_over_stdio() {
    let mut client = StdioClient::start(&server());
    client.send_raw("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \n").await;
    let response = client.recv().await;
    assert_eq!(code(&response), -32700);
    assert!(response.get("id").is_none_or(Value::is_null), "{response}");

    // Blank lines are skipped, not answered.
    client.send_raw("\n\r\n   \n").await;
    let response = client.ask(request(2, "tools/list", json!({}))).await;
    assert_error(&response, 2, -32602);

    let params = json!({ "_meta": { PROTOCOL_VERSION: "2030-01-01", CLIENT_CAPABILITIES: {} } });
    let response = client.ask(request(3, "server/discover", params)).await;
    assert_error(&response, 3, -32022);
    assert_eq!(response["error"]["data"]["requested"], "2030-01-01");
    assert!(response["error"]["data"]["supported"].as_array().unwrap().contains(&json!(MODERN)));

    let response = client.ask(modern(4, "tools/call", json!({ "name": "needs_sampling" }))).await;
    assert_error(&response, 4, -32021);
    assert_eq!(response["error"]["data"]["requiredCapabilities"], json!({ "sampling": {} }));

    for (id, method) in
        [(5, "ping"), (6, "logging/setLevel"), (7, "resources/subscribe"), (8, "initialize"), (9, "nope")]
    {
        let response = client.ask(modern(id, method, json!({}))).await;
        assert_error(&response, id, -32601);
    }
    let response = client.ask(modern(10, "tools/call", json!({ "name": "missing" }))).await;
    assert_error(&response, 10, -32602);
    let response = client.ask(modern(11, "resources/read", json!({ "uri": "test://missing" }))).await;
    assert_error(&response, 11, -32602);
    assert_eq!(response["error"]["data"]["uri"], "test://missing");

    client.send(json!([modern(12, "server/discover", json!({}))])).await;
    assert_eq!(code(&client.recv().await), -32600);
    client
        .send(json!({ "jsonrpc": "2.1", "id": 13, "method": "server/discover", "params": { "_meta": meta() } }))
        .await;
    assert_error(&client.recv().await, 13, -32600);
    client.close().await.expect("a clean end");
}

#[tokio::test]
async fn input_required_over_stdio() {
    let mut client = StdioClient::start(&server());
    let m = meta_with(json!({ "elicitation": {} }));
    let response = client.ask(request(1, "tools/call", json!({ "name": "ask_name", "_meta": m }))).await;
    assert_eq!(response["result"]["resultType"], "input_required");
    let state = response["result"]["requestState"].clone();
    let params = json!({
        "name": "ask_name",
        "inputResponses": { "name": { "action": "accept", "content": { "name": "Lin" } } },
        "requestState": state,
        "_meta": m,
    });
    let response = client.ask(request(2, "tools/call", params)).await;
    assert_eq!(text(&response), "Hello, Lin!");
    client.close().await.expect("a clean end");
}

#[tokio::test]
async fn legacy_session_over_stdio() {
    let server = server();
    let mut client = StdioClient::start(&server);
    // A legacy client may ping first.
    let response = client.ask(json!({ "jsonrpc": "2.0", "id": "p0", "method": "ping" })).await;
    assert_eq!(response, json!({ "jsonrpc": "2.0", "id": "p0", "result": {} }));

    let response = client.ask(initialize(1, "2024-11-05", json!({ "elicitation": {} }))).await;
    assert_eq!(response["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(response["result"]["serverInfo"]["name"], "fixture");
    assert!(response["result"].get("resultType").is_none());
    client.send(notification("notifications/initialized", json!({}))).await;

    let response = client.ask(json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" })).await;
    assert_eq!(response, json!({ "jsonrpc": "2.0", "id": 2, "result": {} }));
    let response = client.ask(initialize(3, "2025-11-25", json!({}))).await;
    assert_error(&response, 3, -32600);

    let response = client.ask(request(4, "tools/list", json!({}))).await;
    let result = response["result"].as_object().unwrap();
    assert_eq!(result["tools"].as_array().unwrap().len(), TOOL_NAMES.len());
    assert!(!result.contains_key("resultType") && !result.contains_key("ttlMs") && !result.contains_key("cacheScope"));

    // logging/setLevel, then the tool's logs arrive on stdout before its response.
    let response = client.ask(request(5, "logging/setLevel", json!({ "level": "info" }))).await;
    assert_eq!(response["result"], json!({}));
    let (before, response) = client.call(request(6, "tools/call", json!({ "name": "progress_logger" }))).await;
    assert_eq!(text(&response), "progress done");
    let data: Vec<&Value> = before.iter().map(|m| &m["params"]["data"]).collect();
    assert_eq!(data, [&json!("info line"), &json!("warning line")]);

    // resources/subscribe, then updates of that resource arrive as notifications.
    let response = client.ask(request(7, "resources/subscribe", json!({ "uri": "test://items/5" }))).await;
    assert_eq!(response["result"], json!({}));
    server.notify_resource_updated("test://items/6");
    server.notify_resource_updated("test://items/5");
    let update = client.recv().await;
    assert_eq!(update["method"], "notifications/resources/updated");
    assert_eq!(update["params"], json!({ "uri": "test://items/5" }));

    // The same handler that returns input_required on the modern wire asks the client here.
    client.send(request(8, "tools/call", json!({ "name": "ask_name" }))).await;
    let question = client.recv().await;
    assert_eq!(question["jsonrpc"], "2.0");
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(question["params"]["message"], "What is your name?");
    let answer = json!({ "action": "accept", "content": { "name": "Mo" } });
    client.send(json!({ "jsonrpc": "2.0", "id": question["id"], "result": answer })).await;
    let response = client.recv().await;
    assert_eq!(response["id"], 8);
    assert_eq!(text(&response), "Hello, Mo!");
    assert!(response["result"].get("resultType").is_none());

    let response = client.ask(request(9, "server/discover", json!({}))).await;
    assert_error(&response, 9, -32601);
    assert!(client.quiet().await);
    client.close().await.expect("a clean end");
}

#[tokio::test]
async fn both_eras_at_once_on_one_server() {
    let server = server();
    let mut legacy = StdioClient::start(&server);
    let mut modern_client = StdioClient::start(&server);
    let response = legacy.ask(initialize(1, LEGACY, json!({}))).await;
    assert_eq!(response["result"]["protocolVersion"], LEGACY);

    let response =
        modern_client.ask(modern(1, "tools/call", json!({ "name": "echo", "arguments": { "text": "new" } }))).await;
    assert_eq!(response["result"]["resultType"], "complete");
    let response =
        legacy.ask(request(2, "tools/call", json!({ "name": "echo", "arguments": { "text": "old" } }))).await;
    assert_eq!(text(&response), "echo: old");
    assert!(response["result"].get("resultType").is_none());
    // The modern connection did not become legacy, and ping stays removed there.
    let response = modern_client.ask(modern(2, "ping", json!({}))).await;
    assert_error(&response, 2, -32601);

    // A list change reaches the legacy session; the modern connection gets nothing unasked.
    server.notify_tools_list_changed();
    assert_eq!(legacy.recv().await["method"], "notifications/tools/list_changed");
    assert!(modern_client.quiet().await);
    legacy.close().await.expect("a clean end");
    modern_client.close().await.expect("a clean end");
}

#[tokio::test]
async fn closing_stdin_still_answers_what_was_sent() {
    let mut client = StdioClient::start(&server());
    client.send(modern(1, "tools/call", json!({ "name": "echo", "arguments": { "text": "last" } }))).await;
    client.close_stdin().await;
    let response = client.recv().await;
    assert_eq!(text(&response), "echo: last");
    client.close().await.expect("a clean end");
}

#[tokio::test]
async fn an_oversized_line_is_refused_and_the_session_goes_on() {
    let mut client = StdioClient::start(&server());
    // One line just over the limit, written in pieces so it is never whole in any buffer.
    let chunk = "x".repeat(1024 * 1024);
    for _ in 0..mcp_server::stdio::MAX_LINE / chunk.len() {
        client.send_raw(&chunk).await;
    }
    client.send_raw("tail\n").await;
    let refused = client.recv().await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("exceeds"), "{refused}");
    assert!(refused.get("id").is_none(), "the id of an unread request is unknown: {refused}");

    let response = client.ask(modern(1, "server/discover", json!({}))).await;
    assert_eq!(response["result"]["resultType"], "complete");
    client.close().await.expect("the server ends cleanly");
}

#[tokio::test]
async fn a_2025_03_26_batch_is_one_line_over_stdio() {
    let mut client = StdioClient::start(&server());
    // Before initialize, and with initialize inside it, a batch is refused as a whole.
    client.send(json!([initialize(0, BATCH_VERSION, json!({})), request(1, "ping", json!({}))])).await;
    let refused = client.recv().await;
    assert_eq!(code(&refused), -32600, "{refused}");
    assert!(message(&refused).contains("initialize request must not be part of a JSON-RPC batch"), "{refused}");

    let response = client.ask(initialize(0, BATCH_VERSION, json!({}))).await;
    assert_eq!(response["result"]["protocolVersion"], BATCH_VERSION);
    client.send(notification("notifications/initialized", json!({}))).await;

    // The batch is one line, and so is the array that answers it.
    client.send_raw(&format!("{}\n", two_requests_and_a_notification())).await;
    let batch = client.recv().await;
    let responses = by_id(&batch);
    assert_eq!(responses.len(), 2, "{batch}");
    assert_eq!(responses[0], json!({ "jsonrpc": "2.0", "id": 1, "result": {} }));
    assert_eq!(text(&responses[1]), "echo: batched");

    let batch = client.recv_after_line(&one_bad_element().to_string()).await;
    let responses = by_id(&batch);
    assert_eq!(responses[0]["result"], json!({}), "{batch}");
    assert_error(&responses[1], "bad", -32600);

    let empty = client.recv_after_line("[]").await;
    assert_eq!(code(&empty), -32600, "{empty}");
    assert!(empty.get("id").is_none(), "{empty}");
    assert!(client.quiet().await);
    client.close().await.expect("a clean end");
}

#[tokio::test]
async fn batches_are_refused_over_stdio_on_other_revisions() {
    let mut client = StdioClient::start(&server());
    let refused = client.recv_after_line(&json!([modern(1, "server/discover", json!({}))]).to_string()).await;
    assert_eq!(code(&refused), -32600, "{refused}");
    assert!(message(&refused).contains("2026-07-28 has none"), "{refused}");

    let response = client.ask(initialize(0, LEGACY, json!({}))).await;
    assert_eq!(response["result"]["protocolVersion"], LEGACY);
    let refused = client.recv_after_line(&two_requests_and_a_notification().to_string()).await;
    assert_eq!(code(&refused), -32600, "{refused}");
    assert!(message(&refused).contains("this session uses 2025-11-25"), "{refused}");
    assert!(client.quiet().await, "no element was served");
    client.close().await.expect("a clean end");
}
