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
    pub(crate) fn send_direct(&self, request: reqwest::Request) -> impl Future<Output = Result<Sent, BoxError>> + '_ {
        self.inner.exchange(request)
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
                return Ok(Sent::Reqwest(Box::pin(self.fallback.execute(request)).await?));
            }
        };
        let endpoint = *request.url() == self.url;
        let uri = if endpoint {
            self.uri.clone()
        } else {
            match request.url().as_str().parse::<Uri>() {
                Ok(uri) if request.url().scheme() == "http" => uri,
                // Boxed, as the other ways off the kept connection: the usual call's future stays
                // small (it is moved as each caller awaits it).
                _ => return Box::pin(self.whole_to_fallback(request, body)).await.map(Sent::Reqwest),
            }
        };
        if request.timeout().is_some() || request.version() != Version::HTTP_11 {
            return Box::pin(self.whole_to_fallback(request, body)).await.map(Sent::Reqwest);
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
                // Boxed: a new connection is seldom made, and its future is large.
                None => Box::pin(self.connect()).await?,
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
mod tests;
