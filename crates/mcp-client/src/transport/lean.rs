//! The default innermost HTTP sender for a plain `http://` endpoint: hyper's HTTP/1 connections to
//! the endpoint, kept in a pool of this sender's own, instead of `reqwest::Client::execute`.
//!
//! reqwest does work on every request that a client sending to one fixed URL needs once: it
//! parses the `Url` into an `http::Uri` (`try_uri`), parses the response's URL back from that
//! `Uri` (its redirect layer records it on every response, whatever the policy), and clones the
//! request's headers twice; hyper-util then formats the `Host` header from the `Uri`. Here the
//! endpoint's `Uri` and `Host` are prepared once per connection and reused whenever a request's
//! `Url` is that endpoint (a string comparison; another URL is parsed, and one on another server
//! is sent with hyper-util's pooled client), the body's bytes go to hyper as they are, and the
//! response is handed back as a `reqwest::Response`, so that the layers above (the user's, OAuth)
//! see the same types.
//!
//! The endpoint server's pool ([`Pool`]) is a list of idle connections: one is taken for a
//! request and given back when its response's body has been read to the end, from the task
//! reading it. A general pool (hyper-util's) hashes the host and port on each checkout and
//! return, and spawns a task per request to give the connection back; a sender with one endpoint
//! needs neither. A request that a kept connection refused unsent (it was closing) is sent once
//! more on a new one, as hyper-util does; a response dropped before its end closes its
//! connection. A connection idle past the idle timeout is closed by the pool's sweeper, a task
//! that runs while any connection is idle.
//!
//! What reqwest's default client does that matters here is kept: `Accept: */*` when a request
//! names none, TCP no-delay and keep-alive, a 90 s pool idle timeout (or the builder's), and its
//! redirect policy: a 3xx with a `Location` sends the request again through the
//! `reqwest::Client`, which follows it as it would have (a redirect costs one more round trip; an
//! MCP endpoint seldom redirects). Requests this sender does not handle go to that client whole: one with its
//! own timeout (`reqwest::Request::timeout`), a streaming body, another HTTP version than 1.1, or
//! a URL that is not `http://`. A proxy set in the environment for the endpoint
//! (`HTTP_PROXY`, `ALL_PROXY`, unless `NO_PROXY` excludes it) makes the connection use the
//! `reqwest::Client` for everything, as before (see [`LeanSender::for_endpoint`]).
//!
//! A transport with nothing around this sender (no `http_layer`, no OAuth) calls it directly
//! ([`LeanSender::send_direct`]): no boxed service is cloned and no future boxed per request,
//! hyper's response is read as it is (made a `reqwest::Response` only where the transport needs
//! one: an event stream, an error, `initialize`), and a redirect is sent again whole by the
//! transport, through the same `reqwest::Client`.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Uri;
use http_body::Body as _;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use reqwest::header::{ACCEPT, HOST, HeaderValue, LOCATION};
use reqwest::{StatusCode, Url, Version};

use crate::layer::BoxError;

/// Sends requests to one `http://` endpoint over kept connections; clones share the pool.
#[derive(Clone)]
pub(crate) struct LeanSender {
    inner: Arc<Inner>,
}

struct Inner {
    /// For URLs other than the endpoint's.
    hyper: HyperClient<HttpConnector, reqwest::Body>,
    connector: HttpConnector,
    pool: Arc<Pool>,
    /// The endpoint, its `Uri` parsed once (and its path, which an HTTP/1 request line carries),
    /// and the `Host` header hyper-util would write for it.
    url: Url,
    uri: Uri,
    path: Uri,
    host: HeaderValue,
    /// Everything this sender does not do itself (see the module's documentation).
    fallback: reqwest::Client,
}

impl LeanSender {
    /// The sender for `url`, or `None` when reqwest must keep it: not an `http://` URL, one
    /// that is not a valid `Uri`, or one a proxy from the environment would intercept (reqwest
    /// reads the same variables, with the same matcher, at its client's construction).
    pub(crate) fn for_endpoint(url: &Url, fallback: reqwest::Client, idle_timeout: Duration) -> Option<Self> {
        if url.scheme() != "http" {
            return None;
        }
        let uri: Uri = url.as_str().parse().ok()?;
        let host = host_header(&uri)?;
        if hyper_util::client::proxy::matcher::Matcher::from_system().intercept(&uri).is_some() {
            return None;
        }
        // reqwest's defaults for its connector.
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_keepalive(Some(Duration::from_secs(15)));
        connector.set_keepalive_interval(Some(Duration::from_secs(15)));
        connector.set_keepalive_retries(Some(3));
        #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
        connector.set_tcp_user_timeout(Some(Duration::from_secs(30)));
        let hyper = HyperClient::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(idle_timeout)
            .build(connector.clone());
        let path = origin_form(&uri);
        let pool = Arc::new(Pool { idle: Mutex::default(), idle_timeout });
        let url = url.clone();
        Some(LeanSender { inner: Arc::new(Inner { hyper, connector, pool, url, uri, path, host, fallback }) })
    }
}

impl LeanSender {
    /// Sends `request` for a transport with no layer around this sender: the call's future is
    /// not boxed, hyper's response is not made a `reqwest::Response` (see [`response_of`]),
    /// and the request's headers are not kept for a redirect, which is left to the caller.
    pub(crate) async fn send_direct(&self, request: reqwest::Request) -> Result<Sent, BoxError> {
        self.inner.exchange(request).await
    }
}

impl tower::Service<reqwest::Request> for LeanSender {
    type Response = reqwest::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<reqwest::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: reqwest::Request) -> Self::Future {
        let inner = self.inner.clone();
        Box::pin(async move { inner.send(request).await })
    }
}

/// What became of a request: hyper's response (`Returning` gives its connection back at the
/// body's end) with the request's URL, the `reqwest::Client`'s response to a request this sender
/// does not handle itself, or a redirect, which only the `reqwest::Client` follows.
pub(crate) enum Sent {
    Hyper(http::Response<Returning>, Url),
    Reqwest(reqwest::Response),
    /// The request's method, URL and body; its headers are the caller's to give again.
    Redirect(reqwest::Method, Url, Bytes),
}

impl Inner {
    async fn send(&self, request: reqwest::Request) -> Result<reqwest::Response, BoxError> {
        // What a redirect needs: cheap (the body's bytes are shared, not copied).
        let kept = request.headers().clone();
        match self.exchange(request).await? {
            Sent::Hyper(response, url) => Ok(response_of(response, url)),
            Sent::Reqwest(response) => Ok(response),
            Sent::Redirect(method, url, body) => {
                // Sent again whole: reqwest's policy follows the redirect from here.
                let mut again = reqwest::Request::new(method, url);
                *again.headers_mut() = kept;
                self.whole_to_fallback(again, body).await
            }
        }
    }

    async fn exchange(&self, mut request: reqwest::Request) -> Result<Sent, BoxError> {
        let body = match request.body_mut().take() {
            None => Bytes::new(),
            Some(body) if body.as_bytes().is_some() => into_bytes(body),
            streaming => {
                *request.body_mut() = streaming;
                return Ok(Sent::Reqwest(self.fallback.execute(request).await?));
            }
        };
        let endpoint = *request.url() == self.url;
        let uri = if endpoint {
            self.uri.clone()
        } else {
            match request.url().as_str().parse::<Uri>() {
                Ok(uri) if request.url().scheme() == "http" => uri,
                _ => return self.whole_to_fallback(request, body).await.map(Sent::Reqwest),
            }
        };
        if request.timeout().is_some() || request.version() != Version::HTTP_11 {
            return self.whole_to_fallback(request, body).await.map(Sent::Reqwest);
        }
        let method = request.method().clone();
        let mut headers = std::mem::take(request.headers_mut());
        if let http::header::Entry::Vacant(entry) = headers.entry(ACCEPT) {
            entry.insert(HeaderValue::from_static("*/*"));
        }
        // The endpoint's server: its kept connections, and its `Host`.
        let pooled = endpoint || (uri.scheme() == self.uri.scheme() && uri.authority() == self.uri.authority());
        if pooled && let http::header::Entry::Vacant(entry) = headers.entry(HOST) {
            entry.insert(self.host.clone());
        }
        let mut outgoing = http::Request::new(reqwest::Body::from(body.clone()));
        *outgoing.method_mut() = method.clone();
        *outgoing.headers_mut() = headers;
        let url = request.url().clone();
        let sent = if pooled {
            *outgoing.uri_mut() = if endpoint { self.path.clone() } else { origin_form(&uri) };
            self.send_to_endpoint(outgoing).await.map(|(response, returned)| {
                let (parts, body) = response.into_parts();
                http::Response::from_parts(parts, Returning { body, returned })
            })
        } else {
            *outgoing.uri_mut() = uri;
            let response = self.hyper.request(outgoing).await.map_err(BoxError::from);
            response.map(|response| response.map(|body| Returning { body, returned: None }))
        };
        let response = sent.map_err(|source| SendError { url: url.clone(), source })?;
        if is_redirect(response.status()) && response.headers().contains_key(LOCATION) {
            return Ok(Sent::Redirect(method, url, body));
        }
        Ok(Sent::Hyper(response, url))
    }

    /// Sends `request` on a kept connection to the endpoint, or a new one; and what gives the
    /// connection back once the response's body is read.
    async fn send_to_endpoint(
        &self,
        mut request: http::Request<reqwest::Body>,
    ) -> Result<(http::Response<hyper::body::Incoming>, Option<Checkin>), BoxError> {
        let mut kept = self.pool.checkout().await;
        loop {
            let reused = kept.is_some();
            let mut sender = match kept.take() {
                Some(sender) => sender,
                None => self.connect().await?,
            };
            match sender.try_send_request(request).await {
                // A response with no body (a notification's `202`) is over: nothing will read it.
                Ok(response) if response.body().is_end_stream() => {
                    self.pool.checkin(sender);
                    return Ok((response, None));
                }
                Ok(response) => return Ok((response, Some(Checkin { sender, pool: Arc::clone(&self.pool) }))),
                // A kept connection that was closing: the request was not written, so it is sent
                // once more, on a new connection.
                Err(mut refused) if reused && refused.message().is_some() => {
                    request = refused.take_message().expect("the request came back");
                }
                Err(refused) => return Err(refused.into_error().into()),
            }
        }
    }

    /// A new HTTP/1 connection to the endpoint, served by a task of its own.
    async fn connect(&self) -> Result<hyper::client::conn::http1::SendRequest<reqwest::Body>, BoxError> {
        let io = tower::ServiceExt::oneshot(self.connector.clone(), self.uri.clone()).await?;
        let (sender, connection) = hyper::client::conn::http1::handshake(io).await?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "an HTTP connection to the endpoint ended");
            }
        });
        Ok(sender)
    }

    /// Sends a request this sender does not handle through the `reqwest::Client`, its body put
    /// back.
    async fn whole_to_fallback(
        &self,
        mut request: reqwest::Request,
        body: Bytes,
    ) -> Result<reqwest::Response, BoxError> {
        // reqwest sends an absent body as an empty one.
        *request.body_mut() = Some(reqwest::Body::from(body));
        Ok(self.fallback.execute(request).await?)
    }
}

/// The endpoint's idle connections, the latest given back last. While any is idle, a sweeper task
/// closes those idle past the timeout; it ends when none is left, or with the pool.
struct Pool {
    idle: Mutex<Idle>,
    idle_timeout: Duration,
}

#[derive(Default)]
struct Idle {
    connections: Vec<(hyper::client::conn::http1::SendRequest<reqwest::Body>, Instant)>,
    sweeping: bool,
}

impl Pool {
    /// The connection given back last that is still open and not idle too long; the others
    /// looked at are closed. (One given back at its response's end may take a moment to be ready
    /// for the next request: its connection's task finishes the response first.)
    async fn checkout(&self) -> Option<hyper::client::conn::http1::SendRequest<reqwest::Body>> {
        loop {
            let (mut sender, since) = self.idle.lock().expect("not poisoned").connections.pop()?;
            if !sender.is_closed() && since.elapsed() < self.idle_timeout && sender.ready().await.is_ok() {
                return Some(sender);
            }
        }
    }

    fn checkin(self: &Arc<Self>, sender: hyper::client::conn::http1::SendRequest<reqwest::Body>) {
        if sender.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().expect("not poisoned");
        idle.connections.push((sender, Instant::now()));
        if !idle.sweeping
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            idle.sweeping = true;
            runtime.spawn(Pool::sweep(Arc::downgrade(self), self.idle_timeout));
        }
    }

    /// Closes the connections idle past the timeout, once a timeout, while any is idle.
    async fn sweep(pool: std::sync::Weak<Pool>, every: Duration) {
        loop {
            tokio::time::sleep(every).await;
            let Some(pool) = pool.upgrade() else { return };
            let mut idle = pool.idle.lock().expect("not poisoned");
            let now = Instant::now();
            idle.connections.retain(|(_, since)| now.duration_since(*since) < pool.idle_timeout);
            if idle.connections.is_empty() {
                idle.sweeping = false;
                return;
            }
        }
    }
}

/// Gives a connection back to the pool.
struct Checkin {
    sender: hyper::client::conn::http1::SendRequest<reqwest::Body>,
    pool: Arc<Pool>,
}

/// A response's body that gives its connection back when it has been read to the end (the
/// connection is then free for the next request); dropped before, the connection is closed.
pub(crate) struct Returning {
    body: hyper::body::Incoming,
    returned: Option<Checkin>,
}

impl http_body::Body for Returning {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, hyper::Error>>> {
        let frame = Pin::new(&mut self.body).poll_frame(cx);
        let over = matches!(frame, Poll::Ready(None))
            || (matches!(frame, Poll::Ready(Some(Ok(_)))) && self.body.is_end_stream());
        if over && let Some(Checkin { sender, pool }) = self.returned.take() {
            pool.checkin(sender);
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// What an HTTP/1 request line carries of `uri`: its path and query.
fn origin_form(uri: &Uri) -> Uri {
    uri.path_and_query().map_or_else(|| Uri::from_static("/"), |path| Uri::from(path.clone()))
}

/// The `Host` header of a request to `uri`, as hyper-util writes it when a request has none: the
/// host, and the port unless it is 80 (an `http://` URI).
fn host_header(uri: &Uri) -> Option<HeaderValue> {
    let host = uri.host()?;
    let value = match uri.port_u16() {
        Some(port) if port != 80 => HeaderValue::from_str(&format!("{host}:{port}")),
        _ => HeaderValue::from_str(host),
    };
    value.ok()
}

fn is_redirect(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::MOVED_PERMANENTLY
            | StatusCode::FOUND
            | StatusCode::SEE_OTHER
            | StatusCode::TEMPORARY_REDIRECT
            | StatusCode::PERMANENT_REDIRECT
    )
}

/// A `reqwest::Response` of hyper's, its body streamed as it arrives, its URL the request's.
pub(crate) fn response_of<B>(response: http::Response<B>, url: Url) -> reqwest::Response
where
    B: http_body::Body<Data = Bytes> + Send + Sync + 'static,
    B::Error: Into<BoxError>,
{
    let (mut parts, body) = response.into_parts();
    // `ResponseBuilderExt::url` is how a `reqwest::Response` made from an `http::Response` gets
    // its URL (without it, reqwest parses a placeholder URL for each one).
    let marked = reqwest::ResponseBuilderExt::url(http::Response::builder(), url).body(()).expect("an empty response");
    parts.extensions.extend(marked.into_parts().0.extensions);
    reqwest::Response::from(http::Response::from_parts(parts, reqwest::Body::wrap(body)))
}

/// The bytes of a body that holds them (`as_bytes` is `Some`), shared rather than copied: such a
/// body yields them whole as its first frame, at once.
fn into_bytes(mut body: reqwest::Body) -> Bytes {
    use http_body::Body as _;

    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    match Pin::new(&mut body).poll_frame(&mut cx) {
        Poll::Ready(Some(Ok(frame))) => frame.into_data().unwrap_or_default(),
        _ => Bytes::new(),
    }
}

/// A request that could not be sent, or whose response did not arrive: as reqwest words it,
/// with hyper's or hyper-util's error (and its sources: the refused connection, the closed one) as
/// source.
#[derive(Debug)]
struct SendError {
    url: Url,
    source: BoxError,
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error sending request for url ({})", self.url)
    }
}

impl std::error::Error for SendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

#[cfg(test)]
mod tests {
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
}
