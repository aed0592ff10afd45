//! The lean sender against servers on loopback: pooling, redirects, `Host`, refused and closed
//! connections, idle timeouts.

use std::sync::atomic::{AtomicUsize, Ordering};

use axum::serve::ListenerExt as _;
use reqwest::Method;
use reqwest::header::AUTHORIZATION;
use tower::ServiceExt as _;

use super::*;

/// Serves `router` on loopback; the URL of `/mcp` and the count of accepted connections.
async fn serve(router: axum::Router) -> (Url, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = Url::parse(&format!("http://{}/mcp", listener.local_addr().unwrap())).unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    let listener = listener.tap_io(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    tokio::spawn(async move { axum::serve(listener, router).await });
    (url, accepted)
}

fn lean(url: &Url) -> LeanSender {
    LeanSender::for_endpoint(url, reqwest::Client::new(), Duration::from_secs(90)).expect("a lean sender for http")
}

fn post(url: &Url, body: &str) -> reqwest::Request {
    let mut request = reqwest::Request::new(Method::POST, url.clone());
    *request.body_mut() = Some(body.to_owned().into());
    request
}

/// The method, the body and the headers a request arrived with, as text.
async fn echo(method: Method, headers: http::HeaderMap, body: String) -> String {
    let accept = headers.get(ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let auth = headers.get(AUTHORIZATION).is_some();
    let hosts: Vec<_> = headers.get_all(HOST).iter().map(|v| v.to_str().unwrap_or("").to_owned()).collect();
    format!("{method} {body} accept={accept} auth={auth} host={}", hosts.join("|"))
}

#[tokio::test]
async fn requests_share_one_kept_connection() {
    let router = axum::Router::new().route("/mcp", axum::routing::any(echo));
    let (url, accepted) = serve(router).await;
    let lean = lean(&url);
    for i in 0..20 {
        let response = lean.clone().oneshot(post(&url, &format!("call {i}"))).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.url(), &url);
        let host = url.authority();
        assert_eq!(response.text().await.unwrap(), format!("POST call {i} accept=*/* auth=false host={host}"));
    }
    // Another URL on the same server: parsed, and the same connection.
    let other = url.join("/other?x=1").unwrap();
    let response = lean.clone().oneshot(reqwest::Request::new(Method::GET, other.clone())).await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(response.url(), &other);
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "every request on the one kept connection");
}

#[tokio::test]
async fn redirects_are_followed_as_reqwest_follows_them() {
    let router = axum::Router::new()
        .route("/mcp", axum::routing::any(echo))
        .route("/kept", axum::routing::any(|| async { (StatusCode::TEMPORARY_REDIRECT, [(LOCATION, "/mcp")]) }))
        .route("/other", axum::routing::any(|| async { (StatusCode::SEE_OTHER, [(LOCATION, "mcp")]) }));
    let (url, _) = serve(router).await;
    let lean = lean(&url);
    let mut request = post(&url.join("/kept").unwrap(), "body");
    request.headers_mut().insert(AUTHORIZATION, HeaderValue::from_static("Bearer t"));
    let response = lean.clone().oneshot(request).await.unwrap();
    assert_eq!(response.url(), &url);
    let host = url.authority();
    assert_eq!(response.text().await.unwrap(), format!("POST body accept=*/* auth=true host={host}"));
    let response = lean.clone().oneshot(post(&url.join("/other").unwrap(), "body")).await.unwrap();
    assert_eq!(response.text().await.unwrap(), format!("GET  accept=*/* auth=false host={host}"));
}

#[tokio::test]
async fn a_refused_connection_says_so() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = Url::parse(&format!("http://{}/mcp", listener.local_addr().unwrap())).unwrap();
    drop(listener);
    let error = lean(&url).oneshot(post(&url, "x")).await.unwrap_err();
    assert_eq!(error.to_string(), format!("error sending request for url ({url})"));
    let mut chain = String::new();
    let mut source = error.source();
    while let Some(cause) = source {
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    assert!(chain.to_ascii_lowercase().contains("refused"), "{chain}");
}

/// The endpoint's prepared `Host` stays with the endpoint: a redirect to another server
/// reaches it with that server's.
#[tokio::test]
async fn a_redirect_from_the_endpoint_carries_the_next_hosts_host() {
    let (elsewhere, _) = serve(axum::Router::new().fallback(echo)).await;
    let location = elsewhere.to_string();
    let router = axum::Router::new().route(
        "/mcp",
        axum::routing::any(move || {
            let location = location.clone();
            async move { (StatusCode::TEMPORARY_REDIRECT, [(LOCATION, location)]) }
        }),
    );
    let (url, _) = serve(router).await;
    let response = lean(&url).oneshot(post(&url, "body")).await.unwrap();
    assert_eq!(response.url(), &elsewhere);
    let host = elsewhere.authority();
    assert_eq!(response.text().await.unwrap(), format!("POST body accept=*/* auth=false host={host}"));
}

/// A request's own `Host` is kept, once, and another URL gets the host hyper-util writes.
#[tokio::test]
async fn the_host_header_is_the_endpoints_unless_the_request_has_its_own() {
    let router = axum::Router::new().fallback(echo);
    let (url, _) = serve(router).await;
    let lean = lean(&url);
    let mut request = post(&url, "own");
    request.headers_mut().insert(HOST, HeaderValue::from_static("example.test"));
    let response = lean.clone().oneshot(request).await.unwrap();
    assert_eq!(response.text().await.unwrap(), "POST own accept=*/* auth=false host=example.test");
    let other = url.join("/elsewhere").unwrap();
    let response = lean.clone().oneshot(post(&other, "x")).await.unwrap();
    assert_eq!(response.text().await.unwrap(), format!("POST x accept=*/* auth=false host={}", url.authority()));
}

/// A server on loopback that answers each connection's first request with `response` and
/// then closes it (without saying so in the response); its URL and accepted connections.
async fn serve_once_per_connection(response: &'static str) -> (Url, Arc<AtomicUsize>) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = Url::parse(&format!("http://{}/mcp", listener.local_addr().unwrap())).unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buffer = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    let Ok(n @ 1..) = stream.read(&mut buffer).await else { return };
                    request.extend_from_slice(&buffer[..n]);
                }
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    (url, accepted)
}

/// A kept connection that its server closed is not sent on again: each request reaches the
/// server (on a new connection).
#[tokio::test]
async fn a_connection_the_server_closed_is_not_used_again() {
    let (url, accepted) = serve_once_per_connection("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").await;
    let lean = lean(&url);
    for _ in 0..5 {
        let response = lean.clone().oneshot(reqwest::Request::new(Method::GET, url.clone())).await.unwrap();
        assert_eq!(response.text().await.unwrap(), "ok");
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 5);
}

/// A response read to its end gives its connection back, one with no body at once (a
/// notification's `202`, which nothing reads); one dropped before its end does not, and a
/// response in progress keeps its connection from the next request.
#[tokio::test]
async fn a_connection_is_reused_once_its_response_is_over() {
    let (finish, finished) = tokio::sync::oneshot::channel::<()>();
    let finished = Arc::new(tokio::sync::Mutex::new(Some(finished)));
    let router = axum::Router::new()
        .route("/mcp", axum::routing::any(echo))
        .route("/accepted", axum::routing::any(|| async { StatusCode::ACCEPTED }))
        .route(
            "/stream",
            axum::routing::any(move || {
                let finished = finished.clone();
                async move {
                    let finished = finished.lock().await.take();
                    let rest = futures::stream::once(async move {
                        if let Some(finished) = finished {
                            let _ = finished.await;
                        }
                        Ok::<_, std::convert::Infallible>("end")
                    });
                    let body = futures::StreamExt::chain(futures::stream::iter([Ok("start ")]), rest);
                    axum::body::Body::from_stream(body)
                }
            }),
        );
    let (url, accepted) = serve(router).await;
    let lean = lean(&url);
    for _ in 0..3 {
        let response = lean.clone().oneshot(post(&url.join("/accepted").unwrap(), "note")).await.unwrap();
        assert_eq!(response.status(), StatusCode::ACCEPTED);
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "a response with no body gives its connection back");
    let mut streaming = lean.clone().oneshot(post(&url.join("/stream").unwrap(), "")).await.unwrap();
    assert_eq!(streaming.chunk().await.unwrap().unwrap(), "start ");
    let response = lean.clone().oneshot(post(&url, "while streaming")).await.unwrap();
    assert!(response.text().await.unwrap().starts_with("POST while streaming"));
    assert_eq!(accepted.load(Ordering::SeqCst), 2, "the streaming response keeps its connection");
    finish.send(()).unwrap();
    assert_eq!(streaming.chunk().await.unwrap().unwrap(), "end");
    assert!(streaming.chunk().await.unwrap().is_none());
    for i in 0..4 {
        let response = lean.clone().oneshot(post(&url, &format!("after {i}"))).await.unwrap();
        assert!(response.text().await.unwrap().starts_with(&format!("POST after {i}")));
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 2, "both connections are kept");
    // Dropped before its end: its connection is not given back, and a new one is opened.
    let (url2, accepted2) = serve(axum::Router::new().route(
        "/mcp",
        axum::routing::any(|| async {
            let endless = futures::stream::repeat_with(|| Ok::<_, std::convert::Infallible>("x".repeat(1024)));
            axum::body::Body::from_stream(endless)
        }),
    ))
    .await;
    let lean2 = LeanSender::for_endpoint(&url2, reqwest::Client::new(), Duration::from_secs(90)).unwrap();
    let mut endless = lean2.clone().oneshot(post(&url2, "")).await.unwrap();
    assert!(endless.chunk().await.unwrap().is_some());
    drop(endless);
    let mut again = lean2.clone().oneshot(post(&url2, "")).await.unwrap();
    assert!(again.chunk().await.unwrap().is_some());
    assert_eq!(accepted2.load(Ordering::SeqCst), 2);
}

/// A connection idle past the idle timeout is not used again.
#[tokio::test]
async fn an_idle_connection_past_its_timeout_is_closed() {
    let (url, accepted) = serve(axum::Router::new().route("/mcp", axum::routing::any(echo))).await;
    let lean = LeanSender::for_endpoint(&url, reqwest::Client::new(), Duration::from_millis(50)).unwrap();
    for _ in 0..2 {
        let response = lean.clone().oneshot(post(&url, "x")).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.bytes().await.unwrap();
        tokio::time::sleep(Duration::from_millis(120)).await;
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    // Closed with no request after it: the sweeper empties the pool, and then ends.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let idle = lean.inner.pool.idle.lock().unwrap();
    assert!(idle.connections.is_empty() && !idle.sweeping);
}

/// Concurrent requests each get a connection, and every one is kept for later requests.
#[tokio::test]
async fn concurrent_requests_each_get_a_connection() {
    let (url, accepted) = serve(axum::Router::new().route("/mcp", axum::routing::any(echo))).await;
    let lean = lean(&url);
    let calls = (0..8).map(|i| {
        let (lean, url) = (lean.clone(), url.clone());
        async move { lean.oneshot(post(&url, &format!("c{i}"))).await.unwrap().text().await.unwrap() }
    });
    let answers = futures::future::join_all(calls).await;
    for (i, answer) in answers.iter().enumerate() {
        assert!(answer.starts_with(&format!("POST c{i} ")), "{answer}");
    }
    let opened = accepted.load(Ordering::SeqCst);
    assert!((1..=8).contains(&opened), "{opened}");
    for i in 0..16 {
        let answer = lean.clone().oneshot(post(&url, &format!("s{i}"))).await.unwrap().text().await.unwrap();
        assert!(answer.starts_with(&format!("POST s{i} ")), "{answer}");
    }
    assert_eq!(accepted.load(Ordering::SeqCst), opened, "later requests reuse the kept connections");
}

#[test]
fn the_host_header_leaves_out_the_default_port() {
    let host = |url: &str| host_header(&url.parse().unwrap()).unwrap();
    assert_eq!(host("http://example.test/mcp"), "example.test");
    assert_eq!(host("http://example.test:80/mcp"), "example.test");
    assert_eq!(host("http://example.test:8080/mcp"), "example.test:8080");
    assert_eq!(host("http://user@127.0.0.1:9/mcp"), "127.0.0.1:9");
    assert_eq!(host("http://[::1]:9/mcp"), "[::1]:9");
}

#[test]
fn https_stays_with_reqwest() {
    let url = Url::parse("https://example.com/mcp").unwrap();
    assert!(LeanSender::for_endpoint(&url, reqwest::Client::new(), Duration::from_secs(1)).is_none());
}
