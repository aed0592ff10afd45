//! Each client's share of long-lived streams (legacy GET streams, `subscriptions/listen`), so
//! that one client holding streams open cannot take every connection the server accepts.

use super::*;
use crate::session_table::ClientKey;
use crate::shares::{Share, Shares};

/// The long-lived streams each client holds open.
pub(super) type StreamShares = Shares<ClientKey>;

/// Admits one more stream of `client` within `limit` (`Err` when it holds them all); a client
/// known by neither principal nor address has no share of its own and is not counted.
pub(super) fn admit(
    shares: &Arc<StreamShares>,
    client: &ClientKey,
    limit: usize,
) -> Result<Option<Share<ClientKey>>, ()> {
    if *client == ClientKey::Unknown {
        return Ok(None);
    }
    shares.admit(client.clone(), limit).map(Some).ok_or(())
}

/// Whether a request opens a long-lived stream: a GET, or a `subscriptions/listen`.
pub(super) fn is_long_lived(method: &Method, headers: &super::guards::KnownHeaders<'_>) -> bool {
    *method == Method::GET || super::guards::KnownHeaders::text(headers.method) == Some("subscriptions/listen")
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
pub(super) fn holding(response: Response, slot: Option<Share<ClientKey>>, idle: Duration) -> Response {
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
