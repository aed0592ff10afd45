//! One request on its way out, whichever transport carries it: what is sent, what its
//! cancellation names, the guard that forgets it however it ends, and the HTTP service call the
//! HTTP transports share.

use std::sync::Arc;

use mcp_types::RequestId;
use serde_json::Value;

use crate::core::{Core, Delivery, Reply, Wants};
use crate::error::Error;

/// An HTTP header's name and value. Most names, and values such as a method or a known protocol
/// version, are constants: borrowed, they are neither copied nor parsed per request.
pub(crate) type Header = (std::borrow::Cow<'static, str>, std::borrow::Cow<'static, str>);

/// A protocol version as a header value: the constant of a known revision, else a copy.
pub(crate) fn version_value(version: &str) -> std::borrow::Cow<'static, str> {
    match mcp_types::ProtocolVersion::SUPPORTED.iter().find(|known| known.as_str() == version) {
        Some(known) => std::borrow::Cow::Borrowed(known.as_str()),
        None => std::borrow::Cow::Owned(version.to_owned()),
    }
}

/// One outgoing request.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) struct Outgoing {
    pub id: RequestId,
    pub method: &'static str,
    /// The encoded request.
    pub message: String,
    /// Extra HTTP headers (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`, `MCP-Protocol-Version`).
    pub headers: Vec<Header>,
    /// Send `notifications/cancelled` when the request is dropped unanswered (not for the
    /// stdio probe, whose late reply is simply ignored, nor for `initialize`).
    pub cancel_on_drop: bool,
    /// What the span of that cancellation names.
    pub cancel_notice: CancelNotice,
    /// How the result is to be delivered.
    pub wants: Wants,
}

/// What the span of a request's `notifications/cancelled` names: the request's peer, version
/// and span (its parent).
#[derive(Clone)]
pub(crate) struct CancelNotice {
    pub peer: Arc<crate::telemetry::Peer>,
    pub version: std::borrow::Cow<'static, str>,
    pub request_span: tracing::Span,
}

impl CancelNotice {
    /// The cancellation message for `id` and the span it is sent in (its trace context written
    /// into the message with `otel`).
    pub fn message(&self, id: &RequestId) -> (Value, tracing::Span) {
        // The request's span is the cancellation's parent.
        let span = self
            .request_span
            .in_scope(|| crate::telemetry::notification_span(&self.peer, "notifications/cancelled", &self.version));
        let mut message = cancelled_message(id);
        crate::telemetry::inject_into_message(&span, &mut message);
        (message, span)
    }
}

/// Forgets a request's entry among the pending ones when it ends, however it ends (a response
/// read from an HTTP body never passes through the pending map, which would keep the entry for
/// good), and runs the transport's cancellation (if any) when the request was dropped before its
/// response arrived. Disarmed (no cancellation) once the response is in.
pub(crate) struct PendingGuard {
    core: Arc<Core>,
    id: RequestId,
    on_cancel: Option<Box<dyn FnOnce() + Send>>,
    armed: bool,
}

impl PendingGuard {
    pub fn new(core: &Arc<Core>, id: RequestId, on_cancel: Option<Box<dyn FnOnce() + Send>>) -> Self {
        PendingGuard { core: core.clone(), id, on_cancel, armed: true }
    }

    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.core.forget(&self.id);
        if self.armed
            && let Some(cancel) = self.on_cancel.take()
        {
            cancel();
        }
    }
}

/// The `notifications/cancelled` message for `id`.
pub(crate) fn cancelled_message(id: &RequestId) -> Value {
    serde_json::json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": "The client no longer needs the result."}
    })
}

/// Turns what a waiting request received into its reply.
pub(crate) fn delivered(delivery: Result<Delivery, tokio::sync::oneshot::error::RecvError>) -> Result<Reply, Error> {
    match delivery {
        Ok(Ok(reply)) => Ok(reply),
        Ok(Err(violation)) => Err(Error::Protocol(violation)),
        Err(_) => Err(Error::Closed),
    }
}

/// Sends `request` through the client's HTTP service; `what` names it in errors (never with
/// secrets), and is only called for one.
#[cfg(feature = "http")]
pub(crate) async fn send(
    service: &crate::layer::HttpService,
    request: reqwest::RequestBuilder,
    what: impl Fn() -> String,
) -> Result<reqwest::Response, Error> {
    let request = request.build().map_err(|e| Error::transport_with(what(), e))?;
    send_request(service, request, what).await
}

/// Sends a built `request` through the client's HTTP service, as [`send`] does.
#[cfg(feature = "http")]
pub(crate) async fn send_request(
    service: &crate::layer::HttpService,
    request: reqwest::Request,
    what: impl Fn() -> String,
) -> Result<reqwest::Response, Error> {
    use tower::ServiceExt as _;

    service.clone().oneshot(request).await.map_err(|e| service_error(what(), e))
}

/// What a failure of the HTTP service means for the caller: an OAuth failure stays one, the
/// rest is a transport error with the service's error as its source.
#[cfg(feature = "http")]
pub(crate) fn service_error(what: String, error: crate::layer::BoxError) -> Error {
    #[cfg(feature = "auth")]
    let error = match error.downcast::<crate::auth::AuthError>() {
        Ok(auth) => return Error::Auth(*auth),
        Err(error) => error,
    };
    Error::Transport { message: what, source: Some(error) }
}
