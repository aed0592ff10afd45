//! The default HTTP sender for an `http://` endpoint (hyper's kept connections, the endpoint
//! prepared once): a client's calls, in either era, with a tower layer or none (then the sender is
//! called directly), go over the kept connection(s) to an `mcp-server` on 127.0.0.1; the layer
//! still sees each request and its response; a moved endpoint is followed; and a refused
//! connection is still a transport error that says so.
#![cfg(feature = "http")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context as TaskContext, Poll};

use axum::serve::ListenerExt as _;
use mcp_client::layer::BoxError;
use mcp_client::{Client, EraPreference, Error};
use mcp_server::{NoArguments, Server, ToolRoute};

/// Serves a one-tool server; its URL and the count of accepted TCP connections.
async fn serve() -> (String, Arc<AtomicUsize>) {
    serve_at("/mcp").await
}

/// [`serve`], with every request to `/old` answered `307` to `/mcp` (its URL is `/old`'s).
async fn serve_moved() -> (String, Arc<AtomicUsize>) {
    serve_at("/old").await
}

async fn serve_at(path: &str) -> (String, Arc<AtomicUsize>) {
    let server = Server::builder("kept", "1.0")
        .tool(ToolRoute::new("add", |_ctx, _: NoArguments| async { Ok("3") }))
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}{path}", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    let listener = listener.tap_io(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let moved = || async { (reqwest::StatusCode::TEMPORARY_REDIRECT, [(reqwest::header::LOCATION, "/mcp")]) };
    let router = mcp_server::http::router(server, mcp_server::http::HttpConfig::default())
        .route("/old", axum::routing::any(moved));
    tokio::spawn(async move { axum::serve(listener, router).await });
    (url, accepted)
}

/// Counts the responses that pass through the client's HTTP service.
#[derive(Clone)]
struct Count<S>(S, Arc<AtomicUsize>);

impl<S> tower::Service<reqwest::Request> for Count<S>
where
    S: tower::Service<reqwest::Request, Response = reqwest::Response, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = reqwest::Response;
    type Error = BoxError;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<reqwest::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: reqwest::Request) -> Self::Future {
        let (future, count) = (self.0.call(request), self.1.clone());
        Box::pin(async move {
            let response = future.await?;
            count.fetch_add(1, Ordering::SeqCst);
            Ok(response)
        })
    }
}

/// A client of `url` in `era`; `layered`: with a layer that counts the responses it sees (the
/// count is returned), else with none, so that the client calls its sender directly.
async fn connect(url: &str, era: EraPreference, layered: bool) -> (Client, Arc<AtomicUsize>) {
    let responses = Arc::new(AtomicUsize::new(0));
    let seen = responses.clone();
    let mut builder = Client::builder("test", "1.0").era(era);
    if layered {
        builder = builder.http_layer(tower::layer::layer_fn(move |inner| Count(inner, seen.clone())));
    }
    let client = builder.connect_http(url).await.unwrap_or_else(|e| panic!("{era:?}, layered {layered}: {e}"));
    (client, responses)
}

#[tokio::test]
async fn every_call_goes_over_one_kept_connection() {
    for era in [EraPreference::Modern, EraPreference::Legacy] {
        for layered in [true, false] {
            let (url, accepted) = serve().await;
            let (client, responses) = connect(&url, era, layered).await;
            client.call_tool("add", ()).await.expect("the first call succeeds");
            let before = responses.load(Ordering::SeqCst);
            // A legacy session holds a second connection for its standalone event stream (opened
            // alongside the first requests).
            let connections = accepted.load(Ordering::SeqCst);
            assert!(connections <= if era == EraPreference::Modern { 1 } else { 2 }, "{era:?}: {connections}");
            for _ in 0..25 {
                let result = client.call_tool("add", ()).await.expect("the call succeeds");
                assert_eq!(serde_json::to_value(&result.content).unwrap()[0]["text"], "3");
            }
            if layered {
                assert!(responses.load(Ordering::SeqCst) >= before + 25, "the layer sees every call");
            }
            assert_eq!(accepted.load(Ordering::SeqCst), connections, "{era:?}: no new connection for a call");
            client.close().await;
        }
    }
}

/// An endpoint that answers `307`: every POST is sent again through the `reqwest::Client`, which
/// follows the redirect, whether the client has layers around its sender or calls it directly.
#[tokio::test]
async fn a_moved_endpoint_is_followed_with_or_without_layers() {
    for era in [EraPreference::Modern, EraPreference::Legacy] {
        for layered in [false, true] {
            let (url, _) = serve_moved().await;
            let (client, responses) = connect(&url, era, layered).await;
            for _ in 0..3 {
                let result = client.call_tool("add", ()).await.expect("the call succeeds");
                assert_eq!(serde_json::to_value(&result.content).unwrap()[0]["text"], "3");
            }
            assert_eq!(responses.load(Ordering::SeqCst) > 0, layered, "{era:?}: the layer sees the calls");
            client.close().await;
        }
    }
}

#[tokio::test]
async fn a_refused_connection_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let Err(error) = Client::builder("test", "1.0").era(EraPreference::Modern).connect_http(&url).await else {
        panic!("nothing listens there");
    };
    assert!(matches!(error, Error::Transport { .. }), "{error:?}");
    let mut chain = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        chain.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    assert!(chain.contains("error sending request for url") && chain.contains("refused"), "{chain}");
}
