//! Each client's share of long-lived streams (legacy GET streams, `subscriptions/listen`), so
//! that one client holding streams open cannot take every connection the server accepts.

use std::collections::HashMap;

use super::*;
use crate::session_table::ClientKey;

/// The long-lived streams each client holds open.
#[derive(Default)]
pub(super) struct StreamShares {
    open: Mutex<HashMap<ClientKey, usize>>,
}

/// One open stream's place in its client's share, given back when the response body is dropped
/// (the stream ended, or the client went away).
pub(super) struct StreamSlot {
    shares: Arc<StreamShares>,
    client: ClientKey,
}

impl StreamShares {
    /// A slot for one more stream of `client`, or `None` when it already holds `limit`. A
    /// client known by neither principal nor address has no share of its own: not counted.
    pub(super) fn admit(self: &Arc<Self>, client: &ClientKey, limit: usize) -> Result<Option<StreamSlot>, ()> {
        if *client == ClientKey::Unknown {
            return Ok(None);
        }
        let mut open = self.open.lock().expect("not poisoned");
        let count = open.entry(client.clone()).or_default();
        if *count >= limit {
            return Err(());
        }
        *count += 1;
        Ok(Some(StreamSlot { shares: Arc::clone(self), client: client.clone() }))
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.shares.open.lock().expect("not poisoned");
        if let Some(count) = open.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.client);
            }
        }
    }
}

/// Whether a request opens a long-lived stream: a GET, or a `subscriptions/listen`.
pub(super) fn is_long_lived(method: &Method, headers: &HeaderMap) -> bool {
    *method == Method::GET || header_str(headers, "mcp-method") == Some("subscriptions/listen")
}

/// The 429 of a client that already holds its share of streams.
pub(super) fn share_full(limit: usize) -> Response {
    let error = ErrorObject::new(
        SESSION_SHARE_FULL,
        format!(
            "This client already holds {limit} open streams (HttpConfig::max_streams_per_client); \
             close one first"
        ),
    );
    json_response(StatusCode::TOO_MANY_REQUESTS, &Outgoing::error(None, &error))
}

/// A long-lived stream's `response`, holding `slot` for as long as its body is read, and ended
/// once `idle` passed without an event (keep-alive comments do not count): the client opens
/// it again. Any other answer gives the slot back at once.
pub(super) fn holding(response: Response, slot: Option<StreamSlot>, idle: Duration) -> Response {
    let streaming = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"text/event-stream"));
    if !streaming {
        return response;
    }
    let (parts, body) = response.into_parts();
    let state = (body.into_data_stream(), slot, tokio::time::Instant::now());
    let body = futures::stream::unfold(state, move |(mut body, slot, mut active)| async move {
        tokio::select! {
            chunk = body.next() => {
                let chunk = chunk?;
                if !matches!(&chunk, Ok(bytes) if bytes.as_ref() == KEEP_ALIVE_COMMENT) {
                    active = tokio::time::Instant::now();
                }
                Some((chunk, (body, slot, active)))
            }
            () = tokio::time::sleep_until(active + idle) => None,
        }
    });
    Response::from_parts(parts, Body::from_stream(body))
}
