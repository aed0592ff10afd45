//! In-process cost of one `tools/call` through `Server::handle_bytes` (no transport): bytes in,
//! the encoded response out, for the modern era (per-request `_meta`) and a legacy session
//! (after `initialize`). Prints ns per request, best of several rounds. Then a call answered with
//! 100 KiB of text, against serde_json encoding the same result alone in the same run.
//!
//! ```text
//! cargo bench -p mcp-server --bench decode
//! ```

use std::time::{Duration, Instant};

use futures::{FutureExt as _, StreamExt as _};
use mcp_server::{Context, Error, Server, Session, ToolRoute};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

fn server() -> Server {
    Server::builder("bench", "1.0.0")
        .tool(ToolRoute::new(
            "add",
            |_: Context, Add { a, b }: Add| async move { Ok::<_, Error>(format!("{}", a + b)) },
        ))
        .tool(ToolRoute::new("text", |_: Context, _: Empty| async move { Ok::<_, Error>(long_text()) }))
        .build()
        .expect("valid server")
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Empty {}

/// 100 KiB of prose-like text: lines of 73 characters, each with a quoted word.
fn long_text() -> String {
    let line = "The \"notes\" tool returns what was written, line by line, as text content.";
    let mut text = String::with_capacity(100 * 1024 + 80);
    while text.len() < 100 * 1024 {
        text.push_str(line);
        text.push('\n');
    }
    text
}

const TEXT: &str = r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"text","arguments":{}}}"#;

const MODERN: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"add","arguments":{"a":2,"b":3}}}"#;
const LEGACY: &str =
    r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}"#;
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;

fn once(server: &Server, session: &std::sync::Arc<Session>, bytes: &[u8]) -> usize {
    let mut reply = server.handle_bytes(session, bytes, None).expect("a request");
    let mut len = 0;
    while let Some(Some(message)) = reply.next().now_or_never() {
        len += message.json.len();
    }
    assert!(len > 0, "answered at once");
    len
}

/// Best of 7 rounds of `iterations` calls of `step`, in ns per call.
fn best_ns(iterations: u32, mut step: impl FnMut()) -> f64 {
    let mut best = Duration::MAX;
    for _ in 0..7 {
        let start = Instant::now();
        for _ in 0..iterations {
            step();
        }
        best = best.min(start.elapsed());
    }
    best.as_nanos() as f64 / f64::from(iterations)
}

fn measure(
    runtime: &tokio::runtime::Runtime,
    name: &str,
    server: &Server,
    session: &std::sync::Arc<Session>,
    bytes: &[u8],
    answer_holds: &str,
    iterations: u32,
) -> f64 {
    let reply = server.handle_bytes(session, bytes, None).expect("a request");
    let first = runtime.block_on(reply.collect::<Vec<_>>());
    assert!(first.last().is_some_and(|m| m.json.contains(answer_holds)), "{name}: {first:?}");
    let ns = best_ns(iterations, || {
        std::hint::black_box(once(server, session, std::hint::black_box(bytes)));
    });
    println!("{name}: {ns:.0} ns/request (best of 7 x {iterations})");
    ns
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let _guard = runtime.enter();
    let server = server();
    let modern = Session::new();
    measure(&runtime, "modern tools/call", &server, &modern, MODERN.as_bytes(), "\"text\":\"5\"", 20_000);
    let legacy = Session::new();
    let init = server.handle_bytes(&legacy, INITIALIZE.as_bytes(), None).expect("a request");
    drop(runtime.block_on(init.collect::<Vec<_>>()));
    measure(&runtime, "legacy tools/call", &server, &legacy, LEGACY.as_bytes(), "\"text\":\"5\"", 20_000);

    // The whole call, decode and dispatch included, against serde_json writing its result alone.
    let text = long_text();
    let call = measure(&runtime, "modern tools/call, 100 KiB text", &server, &modern, TEXT.as_bytes(), "notes", 1_000);
    let result = mcp_types::CallToolResult::text(text);
    let alone = best_ns(1_000, || {
        std::hint::black_box(serde_json::to_string(std::hint::black_box(&result)).expect("encodes"));
    });
    println!("serde_json::to_string of that result alone: {alone:.0} ns; the whole call / that: {:.2}", call / alone);
}
