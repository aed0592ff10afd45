//! Messages on their way to the client, and the stream that carries one request's messages.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use futures::future::BoxFuture;
use mcp_types::{ErrorObject, RequestId};
use serde::Serialize;
use serde_json::Value;
use tokio::task::AbortHandle;

mod sink;

pub(crate) use sink::{Sink, SinkReceiver, sink};

/// How a response should be surfaced by a transport that has status codes.
///
/// The core decides this from what went wrong, so that the HTTP layer does not need to know the
/// protocol's rules (`-32601` is 404, a malformed modern request is 400, everything else 200).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// A result, or an error found while serving a well-formed request.
    Ok,
    /// The request was refused before it was served: bad `_meta`, headers, version or capabilities.
    BadRequest,
    /// The method does not exist (on the modern wire).
    NotFound,
    /// The caller's token lacks a scope the request needs (HTTP 403 with an `insufficient_scope`
    /// challenge; the error's `data.requiredScopes` names every scope it needs).
    Forbidden,
}

/// What kind of message an [`Outgoing`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutgoingKind {
    /// A notification.
    Notification,
    /// A server-to-client request (legacy sessions only).
    Request,
    /// The response that ends a request's stream.
    Response(Disposition),
    /// Not a message: the handler asked to end the current HTTP response stream early (legacy
    /// SSE polling); the client resumes with `Last-Event-ID`. Transports without such streams
    /// ignore it.
    StreamBreak,
}

/// One JSON-RPC message, already encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The message, encoded as JSON text.
    pub json: String,
    /// What kind of message it is.
    pub kind: OutgoingKind,
    /// How the request it answers went, for telemetry.
    pub(crate) outcome: Outcome,
}

/// How a request went, as its response says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Ok,
    /// A tool result with `isError: true`.
    ToolError,
    /// A JSON-RPC error with this code.
    Error(i64),
}

#[derive(Serialize)]
struct ResultEnvelope<'a, T> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: &'a T,
}

#[derive(Serialize)]
struct ErrorEnvelope<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RequestId>,
    error: &'a ErrorObject,
}

impl Outgoing {
    pub(crate) fn result<T: Serialize>(id: &RequestId, result: &T) -> Self {
        match serde_json::to_string(&ResultEnvelope { jsonrpc: "2.0", id, result }) {
            Ok(json) => Outgoing::response(json),
            Err(error) => Self::error(Some(id), &ErrorObject::internal_error(format!("result not encodable: {error}"))),
        }
    }

    /// A result whose `_meta` holds only the server's identity (`server_info`, already JSON),
    /// written ahead of the result's own members, which must leave `_meta` out: the identity is
    /// neither copied into the result nor encoded again for each response.
    pub(crate) fn result_with_server_info<T: Serialize>(id: &RequestId, result: &T, server_info: &str) -> Self {
        const SERVER_INFO: &[u8] = b",\"result\":{\"_meta\":{\"io.modelcontextprotocol/serverInfo\":";
        let mut json = Vec::with_capacity(256 + server_info.len());
        json.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        let written = serde_json::to_writer(&mut json, id).and_then(|()| {
            json.extend_from_slice(SERVER_INFO);
            json.extend_from_slice(server_info.as_bytes());
            json.push(b'}');
            let members = json.len();
            serde_json::to_writer(&mut json, result)?;
            // The result's own `{` becomes the comma after `_meta`; an empty result adds nothing
            // but the brace that closes it.
            match &json[members..] {
                b"{}" => {
                    json[members] = b'}';
                    json.truncate(members + 1);
                }
                [b'{', ..] => json[members] = b',',
                _ => return Err(serde::ser::Error::custom("a result is an object")),
            }
            json.push(b'}');
            Ok(())
        });
        match written {
            // SAFETY: serde_json writes only UTF-8 (its own `to_string` relies on that), and the
            // rest is ASCII and `server_info`, a `str`.
            Ok(()) => Outgoing::response(unsafe { String::from_utf8_unchecked(json) }),
            Err(error) => Self::error(Some(id), &ErrorObject::internal_error(format!("result not encodable: {error}"))),
        }
    }

    /// An error response; `id` is `None` only when the request's id could not be read.
    pub(crate) fn error(id: Option<&RequestId>, error: &ErrorObject) -> Self {
        Self::error_as(id, error, Disposition::Ok)
    }

    pub(crate) fn error_as(id: Option<&RequestId>, error: &ErrorObject, disposition: Disposition) -> Self {
        let json = serde_json::to_string(&ErrorEnvelope { jsonrpc: "2.0", id, error }).expect("errors encode");
        Outgoing {
            json,
            kind: OutgoingKind::Response(disposition),
            outcome: Outcome::Error(error.code.as_i64().unwrap_or_default()),
        }
    }

    /// A successful response, already encoded.
    pub(crate) fn response(json: String) -> Self {
        Outgoing { json, kind: OutgoingKind::Response(Disposition::Ok), outcome: Outcome::Ok }
    }

    /// Marks a tool result with `isError: true`.
    pub(crate) fn tool_error(mut self) -> Self {
        if self.outcome == Outcome::Ok {
            self.outcome = Outcome::ToolError;
        }
        self
    }

    pub(crate) fn notification(message: &Value) -> Self {
        Outgoing { json: message.to_string(), kind: OutgoingKind::Notification, outcome: Outcome::Ok }
    }

    pub(crate) fn request(message: &Value) -> Self {
        Outgoing { json: message.to_string(), kind: OutgoingKind::Request, outcome: Outcome::Ok }
    }

    pub(crate) fn stream_break() -> Self {
        Outgoing { json: String::new(), kind: OutgoingKind::StreamBreak, outcome: Outcome::Ok }
    }

    /// Whether this is a message for the client (not a transport hint).
    pub fn is_message(&self) -> bool {
        self.kind != OutgoingKind::StreamBreak
    }

    /// Whether this is the response that ends a request.
    pub fn is_response(&self) -> bool {
        matches!(self.kind, OutgoingKind::Response(_))
    }
}

/// The messages of one request: notifications and (legacy) server requests, then the response.
///
/// A handler that did not answer at once runs as its reply is polled, in the task that reads the
/// reply (no task of its own, so what it wakes, say a database connection's task, runs next rather
/// than behind a newly spawned one). Dropping the reply cancels the request: its handler is
/// stopped and nothing more is sent for it.
pub struct Reply {
    /// Messages known before the reply was made, sent before anything from `rx`.
    queued: VecDeque<Outgoing>,
    /// The response, sent after `queued`: kept apart so that a reply of a response alone
    /// allocates no queue.
    last: Option<Outgoing>,
    /// The rest of the handler: it sends its messages to `rx` and ends with its response (none
    /// when it was stopped or panicked).
    running: Option<BoxFuture<'static, Option<Outgoing>>>,
    rx: Option<SinkReceiver>,
    /// A sender of `rx` kept while `running` runs, so that the handler dropping its own at its
    /// end does not close the channel: a close wakes the task polling this reply from inside its
    /// own poll, and tokio requeues such a task and wakes another worker to take it.
    open: Option<Sink>,
    stop: Option<Stop>,
    done: bool,
    long_lived: bool,
}

/// How a request still running is stopped (a client's cancellation, a closed session, a dropped
/// reply): its task, or the handler a [`Reply`] drives.
pub(crate) enum Stop {
    Task(AbortHandle),
    Inline(futures::future::AbortHandle),
}

impl Stop {
    pub(crate) fn abort(&self) {
        match self {
            Stop::Task(task) => task.abort(),
            Stop::Inline(handler) => handler.abort(),
        }
    }

    /// Whether it has ended (an inline handler that ended on its own is untracked by itself).
    pub(crate) fn is_finished(&self) -> bool {
        match self {
            Stop::Task(task) => task.is_finished(),
            Stop::Inline(handler) => handler.is_aborted(),
        }
    }
}

impl Reply {
    pub(crate) fn ready(message: Outgoing) -> Self {
        Self::finished(VecDeque::new(), Some(message))
    }

    /// A reply whose messages are all known: a handler's notifications, then its response.
    pub(crate) fn finished(messages: VecDeque<Outgoing>, response: Option<Outgoing>) -> Self {
        Reply {
            queued: messages,
            last: response,
            running: None,
            rx: None,
            open: None,
            stop: None,
            done: false,
            long_lived: false,
        }
    }

    /// A reply whose messages come from a task of its own.
    pub(crate) fn streaming(rx: SinkReceiver, task: AbortHandle) -> Self {
        Reply {
            queued: VecDeque::new(),
            last: None,
            running: None,
            rx: Some(rx),
            open: None,
            stop: Some(Stop::Task(task)),
            done: false,
            long_lived: false,
        }
    }

    /// A reply that drives `running`, the rest of a handler sending its messages to `rx` and
    /// ending with its response, each time it is polled; `stop` stops it when the reply is dropped.
    /// `open` (a sender of `rx`, when the handler has one) is held until `running` ends.
    pub(crate) fn running(
        running: BoxFuture<'static, Option<Outgoing>>,
        rx: SinkReceiver,
        open: Option<Sink>,
        stop: futures::future::AbortHandle,
    ) -> Self {
        Reply {
            queued: VecDeque::new(),
            last: None,
            running: Some(running),
            rx: Some(rx),
            open,
            stop: Some(Stop::Inline(stop)),
            done: false,
            long_lived: false,
        }
    }

    /// The next known message: the queued ones, then the response.
    fn pop(&mut self) -> Option<Outgoing> {
        self.queued.pop_front().or_else(|| self.last.take())
    }

    pub(crate) fn long_lived(mut self) -> Self {
        self.long_lived = true;
        self
    }

    /// The response, when every message of the reply is already known.
    pub(crate) fn known_response(&self) -> Option<&Outgoing> {
        if self.rx.is_some() {
            return None;
        }
        self.last.as_ref().or(self.queued.back()).filter(|message| message.is_response())
    }

    /// Whether this reply is a subscription that lasts until cancelled, rather than a request
    /// that ends with its response.
    pub fn is_long_lived(&self) -> bool {
        self.long_lived
    }
}

impl Stream for Reply {
    type Item = Outgoing;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Outgoing>> {
        if self.done {
            return Poll::Ready(None);
        }
        let this = &mut *self;
        if let Some(running) = this.running.as_mut() {
            match running.as_mut().poll(cx) {
                Poll::Ready(response) => {
                    // What the handler sent before it ended goes first, then its response.
                    this.running = None;
                    if let Some(mut rx) = this.rx.take() {
                        while let Some(message) = rx.try_recv() {
                            this.queued.push_back(message);
                        }
                    }
                    // After the receiver: a sender dropped first would wake it.
                    this.open = None;
                    this.last = response;
                }
                // While it runs, what it sends so far; the end of `rx` is not the end of the reply.
                Poll::Pending => {
                    let sent = match this.pop() {
                        Some(message) => Some(message),
                        None => match this.rx.as_mut().map(|rx| rx.poll_recv(cx)) {
                            Some(Poll::Ready(Some(message))) => Some(message),
                            _ => None,
                        },
                    };
                    return match sent {
                        Some(message) => {
                            this.done = message.is_response();
                            Poll::Ready(Some(message))
                        }
                        None => Poll::Pending,
                    };
                }
            }
        }
        let next = match this.pop() {
            Some(message) => Poll::Ready(Some(message)),
            None => match this.rx.as_mut() {
                Some(rx) => rx.poll_recv(cx),
                None => Poll::Ready(None),
            },
        };
        if let Poll::Ready(item) = &next {
            // The response ends the stream even if a handler kept a clone of its context alive.
            this.done = item.as_ref().is_none_or(Outgoing::is_response);
        }
        next
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        // A handler driven here that has ended needs no stop: aborting it would wake the task
        // dropping the reply, from inside its own poll.
        let ended_here = self.running.is_none() && matches!(self.stop, Some(Stop::Inline(_)));
        if let Some(stop) = &self.stop
            && !ended_here
        {
            stop.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The identity written ahead of the result reads as the same message as one the result
    /// carries in its own `_meta`, for a result with members and for an empty one.
    #[test]
    fn server_info_is_written_ahead_of_the_result() {
        let info = mcp_types::Implementation { name: "notes".into(), version: "1.2.0".into(), ..Default::default() };
        let info_json = serde_json::to_string(&info).unwrap();
        let id = RequestId::from(7);
        let mut result = mcp_types::CallToolResult::new(vec![]);
        result.is_error = Some(true);
        let spliced = Outgoing::result_with_server_info(&id, &result, &info_json);
        result.meta = Some(mcp_types::ResultMetaObject { server_info: Some(Box::new(info)), ..Default::default() });
        let carried = Outgoing::result(&id, &result);
        let spliced: Value = serde_json::from_str(&spliced.json).unwrap();
        assert_eq!(spliced, serde_json::from_str::<Value>(&carried.json).unwrap());
        assert_eq!(spliced["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "notes");

        let empty = Outgoing::result_with_server_info(&id, &json!({}), &info_json);
        assert_eq!(
            empty.json,
            r#"{"jsonrpc":"2.0","id":7,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"notes","version":"1.2.0"}}}}"#
        );
        let refused = Outgoing::result_with_server_info(&id, &json!([1]), &info_json);
        assert!(refused.json.contains("a result is an object"), "{}", refused.json);
    }
}
