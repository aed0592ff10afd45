//! The HTTP layer seam (`ClientBuilder::http_layer`): ordinary tower layers around the client's
//! HTTP traffic, against a recording server and a real `mcp-server` on 127.0.0.1.
#![cfg(feature = "http")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcp_client::Client;
use mcp_client::layer::{BoxError, HttpService};
use mcp_client::types::{JsonObject, ObjectSchema, Tool};
use mcp_server::{Server, ToolRoute};
use serde_json::{Value, json};
use tower::Service;

/// Adds `x-layer: <value>` to every request.
#[derive(Clone)]
struct AddHeader<S> {
    inner: S,
    value: &'static str,
}

impl<S> Service<reqwest::Request> for AddHeader<S>
where
    S: Service<reqwest::Request, Response = reqwest::Response, Error = BoxError>,
{
    type Response = reqwest::Response;
    type Error = BoxError;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: reqwest::Request) -> Self::Future {
        request.headers_mut().insert("x-layer", reqwest::header::HeaderValue::from_static(self.value));
        self.inner.call(request)
    }
}

/// Counts the requests that pass; `fail_first` fails that many of them before sending them on
/// (a broken connection, as a retry layer would see it).
#[derive(Clone)]
struct Count<S> {
    inner: S,
    seen: Arc<AtomicUsize>,
    fail_first: usize,
}

impl<S> Service<reqwest::Request> for Count<S>
where
    S: Service<reqwest::Request, Response = reqwest::Response, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = reqwest::Response;
    type Error = BoxError;
    type Future = futures::future::BoxFuture<'static, Result<reqwest::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: reqwest::Request) -> Self::Future {
        let seen = self.seen.fetch_add(1, Ordering::SeqCst);
        if seen < self.fail_first {
            return Box::pin(async { Err::<reqwest::Response, BoxError>("injected failure".into()) });
        }
        Box::pin(self.inner.call(request))
    }
}

fn count(seen: Arc<AtomicUsize>, fail_first: usize) -> impl tower::Layer<HttpService, Service = Count<HttpService>> {
    tower::layer::layer_fn(move |inner| Count { inner, seen: seen.clone(), fail_first })
}

/// Retries a failed request once (its body is a string, so it can be sent again).
#[derive(Clone)]
struct RetryOnce(bool);

impl tower::retry::Policy<reqwest::Request, reqwest::Response, BoxError> for RetryOnce {
    type Future = std::future::Ready<()>;

    fn retry(
        &mut self,
        _request: &mut reqwest::Request,
        result: &mut Result<reqwest::Response, BoxError>,
    ) -> Option<Self::Future> {
        (result.is_err() && !std::mem::replace(&mut self.0, true)).then(|| std::future::ready(()))
    }

    fn clone_request(&mut self, request: &reqwest::Request) -> Option<reqwest::Request> {
        request.try_clone()
    }
}

/// What the recording server saw: each request's headers and JSON body.
type Seen = Arc<Mutex<Vec<(HeaderMap, Value)>>>;

/// A modern server that answers discovery, listings and calls, recording every request.
async fn recording_server() -> (String, Seen) {
    async fn answer(State(seen): State<Seen>, headers: HeaderMap, body: String) -> Response {
        let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        seen.lock().unwrap().push((headers, body.clone()));
        let result = match body["method"].as_str().unwrap_or("") {
            "server/discover" => json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}}, "serverInfo": {"name": "recording", "version": "1"}}),
            "tools/list" => json!({"resultType": "complete", "tools": [
                {"name": "echo", "inputSchema": {"type": "object"}}]}),
            "tools/call" => json!({"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}),
            _ => return StatusCode::ACCEPTED.into_response(),
        };
        let reply = json!({"jsonrpc": "2.0", "id": body["id"], "result": result});
        ([(header::CONTENT_TYPE, "application/json")], reply.to_string()).into_response()
    }
    let seen = Seen::default();
    let app = axum::Router::new().route("/mcp", axum::routing::post(answer)).with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

/// A real `mcp-server` with one tool.
async fn mcp_server() -> String {
    let add = Tool::new(ObjectSchema::default(), "add");
    let server = Server::builder("layers", "1")
        .tool(ToolRoute::raw(add, |_: mcp_server::Context, args: JsonObject| async move {
            let sum: i64 = ["a", "b"].iter().filter_map(|name| args.get(*name).and_then(Value::as_i64)).sum();
            Ok::<_, mcp_server::Error>(sum.to_string())
        }))
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(mcp_server::http::serve(listener, server, Default::default()));
    url
}

#[tokio::test]
async fn a_layer_adding_a_header_is_seen_by_the_server_on_every_request() {
    let (url, seen) = recording_server().await;
    let client = Client::builder("layers", "1")
        .http_layer(tower::layer::layer_fn(|inner| AddHeader { inner, value: "outer" }))
        .connect_http(&url)
        .await
        .unwrap();
    client.call_tool("echo", json!({})).await.unwrap();
    client.close().await;

    let seen = seen.lock().unwrap();
    let methods: Vec<&str> = seen.iter().map(|(_, body)| body["method"].as_str().unwrap_or("")).collect();
    assert!(methods.contains(&"server/discover") && methods.contains(&"tools/call"), "{methods:?}");
    for (headers, body) in seen.iter() {
        assert_eq!(headers.get("x-layer").and_then(|v| v.to_str().ok()), Some("outer"), "{body}");
    }
}

#[tokio::test]
async fn the_first_layer_given_is_the_outermost() {
    let (url, seen) = recording_server().await;
    // Both set the same header: the inner one's value is what goes out.
    let client = Client::builder("layers", "1")
        .http_layer(tower::layer::layer_fn(|inner| AddHeader { inner, value: "outer" }))
        .http_layer(tower::layer::layer_fn(|inner| AddHeader { inner, value: "inner" }))
        .connect_http(&url)
        .await
        .unwrap();
    client.close().await;
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty());
    for (headers, _) in seen.iter() {
        assert_eq!(headers.get("x-layer").and_then(|v| v.to_str().ok()), Some("inner"));
    }
}

#[tokio::test]
async fn a_retry_layer_sends_a_failed_request_again() {
    let url = mcp_server().await;
    let (outside, inside) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    // Outermost a counter of what the client sends, then tower's retry, then a layer whose
    // first request fails.
    let client = Client::builder("layers", "1")
        .http_layer(count(outside.clone(), 0))
        .http_layer(tower::retry::RetryLayer::new(RetryOnce(false)))
        .http_layer(count(inside.clone(), 1))
        .connect_http(&url)
        .await
        .unwrap();
    let result = client.call_tool("add", json!({"a": 2, "b": 3})).await.unwrap();
    assert_eq!(serde_json::to_value(&result.content).unwrap()[0]["text"], "5");
    let sent = outside.load(Ordering::SeqCst);
    assert!(sent >= 2, "the probe and the call at least: {sent}");
    assert_eq!(inside.load(Ordering::SeqCst), sent + 1, "the failed first request was sent once more");
    client.close().await;
}

#[tokio::test]
async fn a_layer_failure_is_a_transport_error_with_its_source() {
    let url = mcp_server().await;
    let seen = Arc::new(AtomicUsize::new(0));
    let error =
        Client::builder("layers", "1").http_layer(count(seen, usize::MAX)).connect_http(&url).await.unwrap_err();
    let mcp_client::Error::Transport { source: Some(source), .. } = &error else { panic!("{error:?}") };
    assert_eq!(source.to_string(), "injected failure");
}
