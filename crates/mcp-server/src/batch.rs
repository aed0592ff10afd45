//! JSON-RPC batches, a part of protocol revision 2025-03-26 only (2025-06-18 removed them, and
//! 2026-07-28 has none). Each element goes through [`Server::handle`] like a message of its own;
//! the responses of the batch's requests are then sent together as one JSON array, while the
//! notifications and server requests their handlers produce go out as they come.

use std::sync::Arc;

use futures::StreamExt as _;
use mcp_types::ErrorObject;
use serde_json::Value;

use crate::message::{Disposition, Outgoing, Reply};
use crate::{headers::Mirrors, server::MODERN_VERSIONS, server::Server, session::Session};

/// The only revision whose sessions accept batches.
const BATCH_VERSION: &str = "2025-03-26";

impl Server {
    /// Handles a JSON array: refused as a whole (one error object) unless this session
    /// negotiated 2025-03-26; otherwise a [`Reply`] ending with the array of the responses, or
    /// `None` when the batch held only notifications and responses.
    pub(crate) fn handle_batch(
        &self,
        session: &Arc<Session>,
        batch: Vec<Value>,
        mirrors: Option<&Mirrors>,
    ) -> Option<Reply> {
        if let Err(reason) = batch_allowed(session, &batch, mirrors) {
            return Some(refuse(&reason));
        }
        if batch.is_empty() {
            return Some(refuse("Invalid Request: an empty JSON-RPC batch"));
        }
        if batch.len() > self.options().max_batch_len {
            return Some(self.oversized_batch(batch.len()));
        }
        let replies: Vec<Reply> = batch
            .into_iter()
            .filter_map(|element| match element {
                Value::Object(_) if element.get("method").and_then(Value::as_str) == Some("initialize") => {
                    let id = element.get("id").cloned().and_then(|id| serde_json::from_value(id).ok());
                    let error = ErrorObject::invalid_request(
                        "The initialize request must not be part of a JSON-RPC batch; send it on its own",
                    );
                    Some(Reply::ready(Outgoing::error_as(id.as_ref(), &error, Disposition::BadRequest)))
                }
                Value::Object(_) => self.handle(session, element, mirrors),
                _ => Some(refuse("A JSON-RPC batch element must be an object")),
            })
            .collect();
        if replies.is_empty() {
            return None;
        }
        let (sink, rx) = crate::message::sink();
        let task = tokio::spawn(async move {
            let mut responses = Vec::new();
            let mut messages = futures::stream::select_all(replies);
            while let Some(message) = messages.next().await {
                if message.is_response() {
                    responses.push(message.json);
                } else if sink.send(message).await.is_err() {
                    return;
                }
            }
            // Requests cancelled before they answered have no response, as outside a batch.
            if !responses.is_empty() {
                let json = format!("[{}]", responses.join(","));
                let _ = sink.send(Outgoing::response(json)).await;
            }
        });
        Some(Reply::streaming(rx, task.abort_handle()))
    }
}

impl Server {
    /// The refusal of a batch longer than [`Options::max_batch_len`](crate::Options::max_batch_len).
    pub(crate) fn oversized_batch(&self, len: usize) -> Reply {
        let limit = self.options().max_batch_len;
        refuse(&format!(
            "Invalid Request: the JSON-RPC batch has {len} elements; this server accepts at most {limit} \
             (Options::max_batch_len)"
        ))
    }
}

/// Why this session may not send a batch, if it may not.
fn batch_allowed(session: &Session, batch: &[Value], mirrors: Option<&Mirrors>) -> Result<(), String> {
    let header = mirrors.and_then(|m| m.protocol_version.as_deref()).filter(|v| MODERN_VERSIONS.contains(v));
    let meta = batch.iter().find_map(|element| {
        element.get("params")?.get("_meta")?.get("io.modelcontextprotocol/protocolVersion")?.as_str()
    });
    if let Some(modern) = header.or(meta) {
        return Err(format!(
            "JSON-RPC batches are only part of protocol revision {BATCH_VERSION}; {modern} has none, \
             send one message per request"
        ));
    }
    match session.protocol_version() {
        Some(version) if version == BATCH_VERSION => Ok(()),
        Some(version) => Err(format!(
            "JSON-RPC batches are only part of protocol revision {BATCH_VERSION}; this session uses {version}"
        )),
        None if batch.iter().any(|e| e.get("method").and_then(Value::as_str) == Some("initialize")) => {
            Err("The initialize request must not be part of a JSON-RPC batch; send it on its own".to_owned())
        }
        None => Err(format!(
            "JSON-RPC batches are only part of protocol revision {BATCH_VERSION}, after initialize negotiated it"
        )),
    }
}

fn refuse(message: &str) -> Reply {
    Reply::ready(Outgoing::error_as(None, &ErrorObject::invalid_request(message), Disposition::BadRequest))
}
