//! In-process cost of one `tools/call` through `Server::handle_bytes` (no transport): bytes in,
//! the encoded response out, for the modern era (per-request `_meta`) and a legacy session
//! (after `initialize`). Prints ns per request, best of several rounds.
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
        .build()
        .expect("valid server")
}

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

fn measure(
    runtime: &tokio::runtime::Runtime,
    name: &str,
    server: &Server,
    session: &std::sync::Arc<Session>,
    bytes: &[u8],
) {
    let reply = server.handle_bytes(session, bytes, None).expect("a request");
    let first = runtime.block_on(reply.collect::<Vec<_>>());
    assert!(first.last().is_some_and(|m| m.json.contains("\"text\":\"5\"")), "{name}: {first:?}");
    let iterations = 20_000;
    let mut best = Duration::MAX;
    for _ in 0..7 {
        let start = Instant::now();
        for _ in 0..iterations {
            std::hint::black_box(once(server, session, std::hint::black_box(bytes)));
        }
        best = best.min(start.elapsed());
    }
    println!("{name}: {:.0} ns/request (best of 7 x {iterations})", best.as_nanos() as f64 / iterations as f64);
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let _guard = runtime.enter();
    let server = server();
    let modern = Session::new();
    measure(&runtime, "modern tools/call", &server, &modern, MODERN.as_bytes());
    let legacy = Session::new();
    let init = server.handle_bytes(&legacy, INITIALIZE.as_bytes(), None).expect("a request");
    drop(runtime.block_on(init.collect::<Vec<_>>()));
    measure(&runtime, "legacy tools/call", &server, &legacy, LEGACY.as_bytes());
}
