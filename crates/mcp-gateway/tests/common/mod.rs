//! What the gateway's tests share: upstreams on runtimes of their own, the gateway served on
//! loopback, clients.
#![allow(dead_code)]

use std::time::Duration;

use mcp_client::{Client, EraPreference};
use mcp_gateway::{Config, Gateway};
use mcp_server::Server;
use mcp_server::types::ContentBlock;

pub mod catalogue;
pub mod shifting;

/// Some text.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Text {
    pub text: String,
}

/// Whom to greet.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Whom {
    pub name: String,
}

/// An upstream on a runtime of its own: dropping it ends the runtime, and with it every
/// connection, as a process that exits would.
pub struct Upstream {
    pub url: String,
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Upstream {
    pub fn start(server: Server, port: u16) -> Upstream {
        Upstream::serving(port, move |listener| {
            tokio::spawn(mcp_server::http::serve(listener, server, Default::default()));
        })
    }

    /// An HTTP application that is not an MCP server (a REST API), served the same way.
    #[allow(dead_code)] // Not every test file serves one.
    pub fn start_router(app: axum::Router, port: u16) -> Upstream {
        Upstream::serving(port, move |listener| {
            tokio::spawn(async move { axum::serve(listener, app).await });
        })
    }

    /// Binds `port` (0: any) on loopback in a runtime of its own, and has `spawn` serve there.
    fn serving(port: u16, spawn: impl FnOnce(tokio::net::TcpListener) + Send + 'static) -> Upstream {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
            runtime.block_on(async {
                let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap();
                ready_tx.send(listener.local_addr().unwrap().port()).unwrap();
                spawn(listener);
                tokio::task::spawn_blocking(move || stop_rx.recv()).await.unwrap().ok();
            });
            runtime.shutdown_timeout(Duration::from_secs(1));
        });
        let port = ready_rx.recv().unwrap();
        Upstream { url: format!("http://127.0.0.1:{port}/mcp"), stop: Some(stop_tx), thread: Some(thread) }
    }

    pub fn port(&self) -> u16 {
        self.url.trim_start_matches("http://127.0.0.1:").trim_end_matches("/mcp").parse().unwrap()
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

/// Serves `gateway` over HTTP on loopback; its URL.
pub async fn serve(gateway: &Gateway) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(mcp_server::http::serve(listener, gateway.server().clone(), Default::default()));
    url
}

pub async fn client(url: &str, era: EraPreference) -> Client {
    Client::builder("gateway-test", "1.0.0").era(era).connect_http(url).await.unwrap()
}

pub async fn text(client: &Client, tool: &str, arguments: serde_json::Value) -> String {
    let result = client.call_tool(tool, arguments).await.unwrap_or_else(|e| panic!("{tool}: {e}"));
    match &result.content[..] {
        [ContentBlock::Text(text)] => text.text.clone(),
        other => panic!("{tool}: {other:?}"),
    }
}

/// Waits (up to 20 s, polling) until `check` holds.
pub async fn eventually<F: AsyncFnMut() -> bool>(what: &str, mut check: F) {
    for _ in 0..200 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("never: {what}");
}

pub fn config(text: &str) -> Config {
    Config::from_toml(text).unwrap()
}

/// An RFC 7662 introspection endpoint that calls every token active, its text being its
/// subject, for `resource`; its URL.
pub async fn introspection(resource: String) -> String {
    introspection_with(resource, |token| serde_json::json!({ "sub": token, "scope": "mcp" })).await
}

/// An RFC 7662 introspection endpoint that calls every token active, for `resource`, with the
/// claims `claims` gives it; its URL.
pub async fn introspection_with(resource: String, claims: fn(&str) -> serde_json::Value) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/introspect", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/introspect",
        axum::routing::post(move |body: String| {
            let token = body.split('&').find_map(|pair| pair.strip_prefix("token=")).unwrap_or_default();
            let mut answer = claims(token);
            answer["active"] = serde_json::json!(true);
            answer["aud"] = serde_json::json!(resource);
            std::future::ready(axum::Json(answer))
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}
