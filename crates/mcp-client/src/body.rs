//! Reading HTTP bodies within a limit, shared by the transports and the OAuth layer (which
//! depends on nothing else of the client).

use futures::StreamExt as _;

/// Reads at most `limit` bytes of a body, for error messages and small documents; never fails.
pub(crate) async fn read_capped(response: reqwest::Response, limit: usize) -> String {
    let mut stream = response.bytes_stream();
    let mut body = Vec::new();
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk[..chunk.len().min(limit - body.len())]);
        if body.len() == limit {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}
