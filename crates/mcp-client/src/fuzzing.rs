//! Internals the fuzz targets in `fuzz/` drive (feature `fuzzing`): the SSE parser and the
//! matching of responses to requests. Not a stable API.

use std::sync::Arc;

use mcp_types::{ErrorObject, RequestId};
use tokio::sync::oneshot;

pub use crate::sse::{SseEvent, SseParser};

/// What a response carries for a request: its result's JSON text, or its error.
pub type Outcome = Result<String, ErrorObject>;

/// `Some` if `text` answers `id` (on HTTP, an id-less error answers the only request of the
/// exchange); `Err` when it answers it in a malformed way.
pub fn reply_to(text: &str, id: &RequestId) -> Option<Result<Outcome, String>> {
    crate::core::as_reply_to(text, id).map(|delivery| delivery.map(|reply| reply.map(|raw| raw.get().to_owned())))
}

/// The client's correlation of responses, notifications and server requests.
pub struct Router(Arc<crate::core::Core>);

/// A request waiting for its response.
pub struct Waiting(oneshot::Receiver<crate::core::Delivery>);

impl Default for Router {
    fn default() -> Self {
        Router(crate::core::Core::new(crate::handlers::Handlers::new(), Default::default()))
    }
}

impl Router {
    pub fn expect(&self, id: RequestId) -> Waiting {
        Waiting(self.0.expect(id))
    }

    /// Routes one message; the method of a server request it turned out to be.
    pub fn dispatch(&self, text: &str) -> Option<String> {
        self.0.dispatch(text, None).map(|request| request.method)
    }
}

impl Waiting {
    /// What was delivered so far (`None`: nothing yet, or the router is gone).
    pub fn delivered(&mut self) -> Option<Result<Outcome, String>> {
        let delivery = self.0.try_recv().ok()?;
        Some(delivery.map(|reply| reply.map(|raw| raw.get().to_owned())))
    }
}
