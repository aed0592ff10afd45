//! The deprecated 2024-11-05 HTTP+SSE transport: a GET opens an event stream whose first
//! `endpoint` event names the URL to POST messages to; everything the server sends arrives as
//! `message` events on that stream. Used only as the last fallback.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt as _;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use serde_json::Value;
use tracing::Instrument as _;

use super::request::{Outgoing, PendingGuard, delivered, send};
use crate::body::read_capped;
use crate::core::{Core, Reply};
use crate::error::Error;
use crate::layer::HttpService;
use crate::sse::SseParser;

struct Inner {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    headers: HeaderMap,
    service: HttpService,
    alive: AtomicBool,
}

pub(crate) struct LegacySseTransport {
    inner: Arc<Inner>,
    reader: tokio::task::JoinHandle<()>,
}

impl LegacySseTransport {
    /// Opens the event stream and waits (at most `timeout`) for the `endpoint` event.
    pub async fn connect(
        client: reqwest::Client,
        url: reqwest::Url,
        headers: HeaderMap,
        service: HttpService,
        core: &Arc<Core>,
        timeout: Duration,
    ) -> Result<Self, Error> {
        let request = client.get(url.clone()).headers(headers.clone()).header(ACCEPT, "text/event-stream");
        let response = send(&service, request, || format!("GET {url}")).await?;
        let status = response.status();
        if !status.is_success() {
            return Err(Error::HttpStatus { status: status.as_u16(), body: read_capped(response, 4096).await });
        }
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"));
        if !is_sse {
            return Err(Error::protocol("the GET response is not an event stream"));
        }
        let mut stream = response.bytes_stream().boxed();
        let mut parser = SseParser::default();
        let find_endpoint = async {
            loop {
                let mut events = Vec::new();
                match stream.next().await {
                    Some(Ok(chunk)) => parser.push(&chunk, &mut events).map_err(Error::Protocol)?,
                    Some(Err(e)) => return Err(Error::transport_with("the event stream broke", e)),
                    None => return Err(Error::transport("the event stream ended before the endpoint event")),
                }
                if let Some(event) = events.into_iter().find(|e| e.event == "endpoint") {
                    return Ok(event.data);
                }
            }
        };
        let endpoint = tokio::time::timeout(timeout, find_endpoint)
            .await
            .map_err(|_| Error::Timeout { method: "the HTTP+SSE endpoint event".into(), after: timeout })??;
        let endpoint =
            url.join(endpoint.trim()).map_err(|e| Error::protocol(format!("the endpoint event is not a URL: {e}")))?;
        if endpoint.origin() != url.origin() {
            return Err(Error::protocol(format!("the endpoint {endpoint} is on another origin than {url}")));
        }
        let inner = Arc::new(Inner { client, endpoint, headers, service, alive: AtomicBool::new(true) });
        let (core, reader_inner) = (core.clone(), inner.clone());
        let reader = tokio::spawn(async move {
            // The answers to server requests; stopped with the reader (on close and on drop).
            let mut answering = tokio::task::JoinSet::new();
            loop {
                let mut events = Vec::new();
                match stream.next().await {
                    Some(Ok(chunk)) => {
                        if let Err(e) = parser.push(&chunk, &mut events) {
                            tracing::error!(error = %e, "stopped reading the HTTP+SSE stream");
                            break;
                        }
                    }
                    _ => break,
                }
                for event in events.into_iter().filter(|e| e.event == "message" && !e.data.trim().is_empty()) {
                    if let Some(request) = core.dispatch(&event.data, None) {
                        // While `max_server_requests` are being answered, the stream is not read.
                        let slot = core.server_request_slot().await;
                        let inner = reader_inner.clone();
                        answering.spawn(core.clone().answer_and_deliver(request, slot, |answer| async move {
                            let _ = post(&inner, answer.to_string()).await;
                        }));
                        while answering.try_join_next().is_some() {}
                    }
                }
            }
            core.close_all();
            reader_inner.alive.store(false, Ordering::SeqCst);
        });
        Ok(LegacySseTransport { inner, reader })
    }

    pub async fn post(&self, message: &Value) -> Result<(), Error> {
        post(&self.inner, message.to_string()).await
    }

    pub async fn request(&self, core: &Arc<Core>, out: Outgoing) -> Result<Reply, Error> {
        if !self.inner.alive.load(Ordering::SeqCst) {
            return Err(Error::Closed);
        }
        let rx = core.expect(out.id.clone(), out.wants);
        let on_cancel: Option<Box<dyn FnOnce() + Send>> = out.cancel_on_drop.then(|| {
            let (inner, id, notice) = (self.inner.clone(), out.id.clone(), out.cancel_notice);
            Box::new(move || {
                if let Ok(handle) = tokio::runtime::Handle::try_current() {
                    let (message, span) = notice.message(&id);
                    handle.spawn(
                        async move {
                            if let Err(error) = post(&inner, message.to_string()).await {
                                crate::telemetry::notification_failed(&tracing::Span::current(), &error);
                            }
                        }
                        .instrument(span),
                    );
                }
            }) as Box<dyn FnOnce() + Send>
        });
        let mut guard = PendingGuard::new(core, out.id.clone(), on_cancel);
        post(&self.inner, out.message).await?;
        let reply = delivered(rx.await);
        guard.disarm();
        reply
    }

    pub fn close(&self) {
        self.reader.abort();
    }

    /// The URL messages are posted to.
    pub fn url(&self) -> &reqwest::Url {
        &self.inner.endpoint
    }
}

impl Drop for LegacySseTransport {
    fn drop(&mut self) {
        // The reader holds the stream open; it must not outlive the client.
        self.reader.abort();
    }
}

async fn post(inner: &Inner, message: String) -> Result<(), Error> {
    crate::telemetry::wire("send", &message);
    let request = inner
        .client
        .post(inner.endpoint.clone())
        .headers(inner.headers.clone())
        .header(CONTENT_TYPE, "application/json")
        .body(message);
    let response = send(&inner.service, request, || format!("POST {}", inner.endpoint)).await?;
    let status = response.status();
    if status.is_success() {
        Ok(())
    } else {
        Err(Error::HttpStatus { status: status.as_u16(), body: read_capped(response, 4096).await })
    }
}
