//! Streamable HTTP, both eras. Modern (2026-07-28): every request is a POST whose response (JSON
//! or an SSE stream scoped to it) carries the answer; closing the stream cancels. Legacy
//! (2025-03-26 … 2025-11-25): a session id, server-to-client requests on the response stream
//! (answered with POSTs), and resumption of a broken stream with GET + `Last-Event-ID` after the
//! server's `retry` delay.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt as _;
use mcp_types::RequestId;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio::sync::oneshot;
use tracing::Instrument as _;

use super::lean::{LeanSender, Returning, Sent, response_of};
use super::request::{Header, Outgoing, PendingGuard, delivered, send, send_request, service_error};
use crate::body::read_capped;
use crate::core::{Core, Delivery, Reply, as_reply_to};
use crate::error::Error;
use crate::layer::HttpService;
use crate::sse::SseParser;

/// Largest JSON response body read; more is treated as a broken server.
const MAX_BODY: usize = 64 * 1024 * 1024;
/// Largest error body kept for an error message.
const MAX_ERROR_BODY: usize = 64 * 1024;
const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// The header name for `name`: a constant for those every call sends, parsed otherwise
/// (`Mcp-Param-*`).
fn header_name(name: &str) -> Result<HeaderName, reqwest::header::InvalidHeaderName> {
    Ok(match name {
        "MCP-Protocol-Version" => MCP_PROTOCOL_VERSION,
        "Mcp-Method" => MCP_METHOD,
        "Mcp-Name" => MCP_NAME,
        _ => HeaderName::try_from(name)?,
    })
}

pub(crate) struct HttpInner {
    pub client: reqwest::Client,
    pub url: reqwest::Url,
    pub headers: HeaderMap,
    /// Where every request goes: the user's layers, OAuth, the reqwest client.
    pub service: HttpService,
    /// The lean sender that `service` is, when it is that alone (no layer, no OAuth): a POST
    /// calls it directly, without cloning the boxed service and boxing each call's future.
    direct: Option<LeanSender>,
    session: Mutex<Option<String>>,
    legacy_version: Mutex<Option<String>>,
    legacy: AtomicBool,
    /// Reconnection delay when a legacy server named none.
    default_retry: Duration,
    max_reconnects: u32,
    standalone: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The answers to server requests being delivered; stopped by `close` and on drop.
    answering: Mutex<tokio::task::JoinSet<()>>,
}

impl Drop for HttpInner {
    fn drop(&mut self) {
        if let Some(task) = self.standalone.get_mut().unwrap().take() {
            task.abort();
        }
    }
}

#[derive(Clone)]
pub(crate) struct HttpTransport {
    pub inner: Arc<HttpInner>,
}

impl HttpTransport {
    pub fn new(
        client: reqwest::Client,
        url: reqwest::Url,
        headers: HeaderMap,
        service: HttpService,
        direct: Option<LeanSender>,
    ) -> Self {
        HttpTransport {
            inner: Arc::new(HttpInner {
                client,
                url,
                headers,
                service,
                direct,
                session: Mutex::new(None),
                legacy_version: Mutex::new(None),
                legacy: AtomicBool::new(false),
                default_retry: Duration::from_secs(1),
                max_reconnects: 16,
                standalone: Mutex::new(None),
                answering: Mutex::new(tokio::task::JoinSet::new()),
            }),
        }
    }

    /// Switches to legacy semantics; `version` is then sent as `MCP-Protocol-Version`.
    pub fn set_legacy(&self, version: Option<String>) {
        self.inner.legacy.store(true, Ordering::SeqCst);
        *self.inner.legacy_version.lock().unwrap() = version;
    }

    /// Forgets the legacy session (before a new `initialize`).
    pub fn clear_session(&self) {
        *self.inner.session.lock().unwrap() = None;
        if let Some(task) = self.inner.standalone.lock().unwrap().take() {
            task.abort();
        }
    }

    pub fn session(&self) -> Option<String> {
        self.inner.session.lock().unwrap().clone()
    }

    fn is_legacy(&self) -> bool {
        self.inner.legacy.load(Ordering::SeqCst)
    }

    fn legacy_headers(&self, mut req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        if self.is_legacy() {
            if let Some(version) = &*self.inner.legacy_version.lock().unwrap() {
                req = req.header(MCP_PROTOCOL_VERSION, version);
            }
            if let Some(session) = &*self.inner.session.lock().unwrap() {
                req = req.header(MCP_SESSION_ID, session);
            }
        }
        req
    }

    /// A POST of `body` with `extra` headers, built as a `reqwest::Request` directly: the
    /// header names this client sends are constants, not parsed from strings on each call.
    fn post_request(&self, body: reqwest::Body, extra: &[Header]) -> Result<reqwest::Request, Error> {
        let what = || format!("POST {}", self.inner.url);
        let mut request = reqwest::Request::new(reqwest::Method::POST, self.inner.url.clone());
        let headers = request.headers_mut();
        // Room for the client's own headers at once: an empty map grows as it is filled.
        headers.reserve(self.inner.headers.len() + 8);
        for (name, value) in &self.inner.headers {
            headers.append(name, value.clone());
        }
        // Static values: a `&str` would be checked and copied on every request.
        headers.append(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        headers.append(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let value = |value: &str| HeaderValue::from_str(value).map_err(|e| Error::transport_with(what(), e));
        if self.is_legacy() {
            if let Some(version) = &*self.inner.legacy_version.lock().unwrap() {
                headers.append(MCP_PROTOCOL_VERSION, value(version)?);
            }
            if let Some(session) = &*self.inner.session.lock().unwrap() {
                headers.append(MCP_SESSION_ID, value(session)?);
            }
        }
        for (name, text) in extra {
            let text = match text {
                // A constant is checked, not copied.
                Cow::Borrowed(text) => HeaderValue::from_maybe_shared(bytes::Bytes::from_static(text.as_bytes()))
                    .map_err(|e| Error::transport_with(what(), e))?,
                Cow::Owned(text) => value(text)?,
            };
            headers.append(header_name(name).map_err(|e| Error::transport_with(what(), e))?, text);
        }
        *request.body_mut() = Some(body);
        Ok(request)
    }

    /// Sends a POST of `body`: through the HTTP service, or to the lean sender directly.
    async fn post(&self, body: String, extra: &[Header]) -> Result<Posted, Error> {
        crate::telemetry::wire("send", &body);
        let what = || format!("POST {}", self.inner.url);
        let request = self.post_request(body.into(), extra)?;
        let Some(lean) = &self.inner.direct else {
            return send_request(&self.inner.service, request, what).await.map(Posted::Reqwest);
        };
        match lean.send_direct(request).await.map_err(|error| service_error(what(), error))? {
            Sent::Hyper(response, url) => Ok(Posted::Lean(response, url)),
            Sent::Reqwest(response) => Ok(Posted::Reqwest(response)),
            // The request again, whole, through the `reqwest::Client`, which follows the redirect
            // as the lean sender does when it is a service.
            Sent::Redirect(_, _, body) => {
                let again = self.post_request(body.into(), extra)?;
                let response = self.inner.client.execute(again).await;
                response.map(Posted::Reqwest).map_err(|error| service_error(what(), error.into()))
            }
        }
    }

    pub async fn notify(&self, message: &Value, headers: &[Header]) -> Result<(), Error> {
        let response = self.post(message.to_string(), headers).await?.into_reqwest();
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        Err(Error::HttpStatus { status: status.as_u16(), body: read_capped(response, MAX_ERROR_BODY).await })
    }

    pub async fn request(&self, core: &Arc<Core>, mut out: Outgoing) -> Result<Reply, Error> {
        let rx = core.expect(out.id.clone(), out.wants);
        // Legacy servers do not read a closed stream as cancellation: tell them.
        let on_cancel: Option<Box<dyn FnOnce() + Send>> = (self.is_legacy() && out.cancel_on_drop).then(|| {
            let (this, id, notice) = (self.clone(), out.id.clone(), out.cancel_notice.clone());
            Box::new(move || {
                if let Ok(handle) = tokio::runtime::Handle::try_current() {
                    let (message, span) = notice.message(&id);
                    handle.spawn(
                        async move {
                            if let Err(error) = this.notify(&message, &[]).await {
                                crate::telemetry::notification_failed(&tracing::Span::current(), &error);
                            }
                        }
                        .instrument(span),
                    );
                }
            }) as Box<dyn FnOnce() + Send>
        });
        let mut guard = PendingGuard::new(core, out.id.clone(), on_cancel);
        let response = self.post(std::mem::take(&mut out.message), &out.headers).await?;
        let result = self.read_response(core, response, &out, rx).await;
        guard.disarm();
        result
    }

    async fn read_response(
        &self,
        core: &Arc<Core>,
        response: Posted,
        out: &Outgoing,
        rx: oneshot::Receiver<Delivery>,
    ) -> Result<Reply, Error> {
        // The usual answer, sent directly: its body read without reqwest's wrappers.
        let response = match response {
            Posted::Lean(response, _) if out.method != "initialize" && is_json_answer(&response) => {
                let body = read_body(response.into_body()).await?;
                return self.answer_in(core, &body, out, rx).await;
            }
            response => response.into_reqwest(),
        };
        let status = response.status();
        if out.method == "initialize"
            && let Some(session) = response.headers().get(MCP_SESSION_ID).and_then(|v| v.to_str().ok())
        {
            *self.inner.session.lock().unwrap() = Some(session.to_owned());
        }
        if !status.is_success() {
            let body = read_capped(response, MAX_ERROR_BODY).await;
            crate::telemetry::wire("receive", &body);
            if let Some(Ok(Err(error))) = as_reply_to(&body, &out.id, out.wants) {
                return Err(Error::Rpc { method: out.method.to_owned(), error, http_status: Some(status.as_u16()) });
            }
            return Err(Error::HttpStatus { status: status.as_u16(), body });
        }
        if status == reqwest::StatusCode::ACCEPTED {
            return Err(Error::protocol(format!("the server accepted {} (202) without answering it", out.method)));
        }
        let content_type =
            response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
        if content_type.starts_with("text/event-stream") {
            // Boxed: a stream's reader is large, and the usual answer's future is moved as each
            // caller awaits it.
            return Box::pin(self.read_stream(core, response, &out.id, rx)).await;
        }
        let body = read_body(reqwest::Body::from(response)).await?;
        self.answer_in(core, &body, out, rx).await
    }

    /// The reply in `body`, a JSON response's: the answer to `out`, or messages routed until it
    /// came.
    async fn answer_in(
        &self,
        core: &Arc<Core>,
        body: &str,
        out: &Outgoing,
        mut rx: oneshot::Receiver<Delivery>,
    ) -> Result<Reply, Error> {
        if let Some(delivery) = as_reply_to(body, &out.id, out.wants) {
            crate::telemetry::wire("receive", body);
            return delivered(Ok(delivery));
        }
        self.route(core, body, Some(&out.id)).await;
        match rx.try_recv() {
            Ok(delivery) => delivered(Ok(delivery)),
            Err(_) => Err(Error::protocol(format!("the HTTP response to {} is not its JSON-RPC response", out.method))),
        }
    }

    /// Routes one message that arrived on a response stream. A server request is answered
    /// on its own task, at most `max_server_requests` at once: until one finishes, this waits,
    /// and so the stream is not read further.
    async fn route(&self, core: &Arc<Core>, text: &str, related: Option<&RequestId>) {
        let Some(request) = core.dispatch(text, related) else { return };
        if !self.is_legacy() {
            tracing::warn!(method = %request.method, "ignoring a JSON-RPC request from a 2026-07-28 server");
            return;
        }
        let slot = core.server_request_slot().await;
        let transport = Arc::downgrade(&self.inner);
        let answer = core.clone().answer_and_deliver(request, slot, |answer| async move {
            let Some(inner) = transport.upgrade() else { return };
            if let Err(e) = (HttpTransport { inner }).notify(&answer, &[]).await {
                tracing::warn!(error = %e, "could not deliver the answer to a server request");
            }
        });
        let mut answering = self.inner.answering.lock().unwrap();
        while answering.try_join_next().is_some() {}
        answering.spawn(answer);
    }

    async fn read_stream(
        &self,
        core: &Arc<Core>,
        response: reqwest::Response,
        id: &RequestId,
        mut rx: oneshot::Receiver<Delivery>,
    ) -> Result<Reply, Error> {
        let mut parser = SseParser::default();
        let mut stream = response.bytes_stream().boxed();
        let mut reconnects = 0;
        loop {
            let mut events = Vec::new();
            let ended = tokio::select! {
                biased;
                delivery = &mut rx => return delivered(delivery),
                chunk = stream.next() => match chunk {
                    Some(Ok(chunk)) => {
                        parser.push(&chunk, &mut events).map_err(Error::Protocol)?;
                        None
                    }
                    Some(Err(e)) => Some(Error::transport_with("the response stream broke", e)),
                    None => Some(Error::transport("the response stream ended before the response")),
                },
            };
            for event in events {
                if event.event == "message" && !event.data.trim().is_empty() {
                    self.route(core, &event.data, Some(id)).await;
                }
            }
            let Some(error) = ended else { continue };
            if let Ok(delivery) = rx.try_recv() {
                return delivered(Ok(delivery));
            }
            let resumable = self.is_legacy() && parser.last_event_id.is_some();
            if !resumable || reconnects == self.inner.max_reconnects {
                return Err(error);
            }
            reconnects += 1;
            let delay = parser.retry.unwrap_or(self.inner.default_retry);
            tracing::debug!(?delay, last_event_id = ?parser.last_event_id, "resuming the response stream");
            tokio::select! {
                biased;
                delivery = &mut rx => return delivered(delivery),
                _ = tokio::time::sleep(delay) => {}
            }
            let response = self.get_stream(parser.last_event_id.as_deref()).await?;
            if !response.status().is_success() {
                let status = response.status().as_u16();
                return Err(Error::HttpStatus { status, body: read_capped(response, MAX_ERROR_BODY).await });
            }
            stream = response.bytes_stream().boxed();
            parser = parser.resumed();
        }
    }

    async fn get_stream(&self, last_event_id: Option<&str>) -> Result<reqwest::Response, Error> {
        let mut req = self
            .inner
            .client
            .get(self.inner.url.clone())
            .headers(self.inner.headers.clone())
            .header(ACCEPT, "text/event-stream");
        req = self.legacy_headers(req);
        if let Some(last) = last_event_id {
            req = req.header("Last-Event-ID", last);
        }
        send(&self.inner.service, req, || "GET for an event stream".to_owned()).await
    }

    /// Opens the legacy standalone GET stream on which a server sends requests and
    /// notifications not tied to a client request; reopened after the server's `retry` delay
    /// when the server closes it. A server without one (405) is fine.
    pub async fn open_standalone_stream(&self, core: &Arc<Core>) {
        // The first GET is awaited so that the stream exists before the next request: servers
        // drop messages for a stream that is not open yet.
        let first = match self.get_stream(None).await {
            Ok(response) if response.status().is_success() => response,
            Ok(response) => {
                tracing::debug!(status = %response.status(), "the server offers no standalone event stream");
                return;
            }
            Err(e) => {
                tracing::debug!(error = %e, "could not open the standalone event stream");
                return;
            }
        };
        let (weak, core) = (Arc::downgrade(&self.inner), core.clone());
        let task = tokio::spawn(async move {
            let mut parser = SseParser::default();
            let mut response = Some(first);
            for _ in 0..64 {
                let response = match response.take() {
                    Some(response) => response,
                    None => {
                        let Some(inner) = weak.upgrade() else { return };
                        match (HttpTransport { inner }).get_stream(parser.last_event_id.as_deref()).await {
                            Ok(response) if response.status().is_success() => response,
                            _ => return,
                        }
                    }
                };
                let mut stream = response.bytes_stream();
                while let Some(Ok(chunk)) = stream.next().await {
                    let mut events = Vec::new();
                    if parser.push(&chunk, &mut events).is_err() {
                        return;
                    }
                    let Some(inner) = weak.upgrade() else { return };
                    let this = HttpTransport { inner };
                    for event in events.iter().filter(|e| e.event == "message" && !e.data.trim().is_empty()) {
                        this.route(&core, &event.data, None).await;
                    }
                }
                let delay = parser.retry.unwrap_or(Duration::from_secs(1));
                tokio::time::sleep(delay).await;
                parser = parser.resumed();
            }
        });
        if let Some(old) = self.inner.standalone.lock().unwrap().replace(task) {
            old.abort();
        }
    }

    /// Ends a legacy session (a server may answer 405; that is fine).
    pub async fn close(&self) {
        if let Some(task) = self.inner.standalone.lock().unwrap().take() {
            task.abort();
        }
        self.inner.answering.lock().unwrap().abort_all();
        let Some(session) = self.session() else { return };
        let req = self.inner.client.delete(self.inner.url.clone()).headers(self.inner.headers.clone());
        let req = self.legacy_headers(req).header(MCP_SESSION_ID, session);
        let _ = send(&self.inner.service, req, || "DELETE of the session".to_owned()).await;
    }
}

/// A POST's response, as the HTTP service gave it, or as the lean sender did when it is called
/// directly.
enum Posted {
    Reqwest(reqwest::Response),
    Lean(http::Response<Returning>, reqwest::Url),
}

impl Posted {
    fn into_reqwest(self) -> reqwest::Response {
        match self {
            Posted::Reqwest(response) => response,
            Posted::Lean(response, url) => response_of(response, url),
        }
    }
}

/// Whether `response` is a success with a body to read as JSON: not `202`, not an event stream.
fn is_json_answer<B>(response: &http::Response<B>) -> bool {
    let status = response.status();
    let event_stream = response.headers().get(CONTENT_TYPE).is_some_and(|value| {
        value.as_bytes().get(..17).is_some_and(|start| start.eq_ignore_ascii_case(b"text/event-stream"))
    });
    status.is_success() && status != reqwest::StatusCode::ACCEPTED && !event_stream
}

/// The whole of `body` as UTF-8 text, up to [`MAX_BODY`].
async fn read_body<B>(mut body: B) -> Result<String, Error>
where
    B: http_body::Body<Data = bytes::Bytes> + Unpin,
    B::Error: Into<crate::layer::BoxError>,
{
    // Sized by the announced length, but not beyond what a small answer needs: a length is only
    // a claim until the bytes arrive.
    const PREPARED: usize = 64 * 1024;
    let mut text = Vec::with_capacity(usize::try_from(body.size_hint().lower()).unwrap_or(0).min(PREPARED));
    while let Some(frame) = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await {
        let frame = frame.map_err(|e| Error::Transport {
            message: "reading the response body".to_owned(),
            source: Some(e.into()),
        })?;
        let Ok(chunk) = frame.into_data() else { continue };
        if text.len() + chunk.len() > MAX_BODY {
            return Err(Error::protocol("the response body exceeds the size limit"));
        }
        text.extend_from_slice(&chunk);
    }
    String::from_utf8(text).map_err(|_| Error::protocol("the response body is not UTF-8"))
}
