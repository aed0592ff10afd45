//! Internals the fuzz targets in `fuzz/` drive (feature `fuzzing`): the SSE parser and the
//! matching of responses to requests. Not a stable API.

use std::sync::Arc;

use mcp_types::{ErrorObject, RequestId};
use tokio::sync::oneshot;

use crate::core::{Answer, Wants};

pub use crate::sse::{SseEvent, SseParser};

/// What a response carries for a request: its result's JSON text, or its error.
pub type Outcome = Result<String, ErrorObject>;

/// `Some` if `text` answers `id` (on HTTP, an id-less error answers the only request of the
/// exchange); `Err` when it answers it in a malformed way.
pub fn reply_to(text: &str, id: &RequestId) -> Option<Result<Outcome, String>> {
    outcome(crate::core::as_reply_to(text, id, Wants::Raw))
}

/// As [`reply_to`] for a request of `method`: the complete result of a `tools/call` or a
/// `resources/read` may be decoded as it arrives (one pass). Its text is then the decoded result
/// encoded again; `true` says it was.
pub fn reply_to_method(text: &str, id: &RequestId, method: &str) -> Option<(Result<Outcome, String>, bool)> {
    let delivery = crate::core::as_reply_to(text, id, Wants::for_method(method))?;
    let one_pass = matches!(delivery, Ok(Ok(Answer::ToolResult(_) | Answer::ReadResult(_))));
    Some((outcome(Some(delivery))?, one_pass))
}

fn outcome(delivery: Option<crate::core::Delivery>) -> Option<Result<Outcome, String>> {
    delivery.map(|delivery| delivery.map(|reply| reply.map(|answer| answer.into_raw().get().to_owned())))
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
        Waiting(self.0.expect(id, Wants::Raw))
    }

    /// As [`Router::expect`], for the response to a request of `method`.
    pub fn expect_answer_to(&self, id: RequestId, method: &str) -> Waiting {
        Waiting(self.0.expect(id, Wants::for_method(method)))
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
        outcome(Some(delivery))
    }
}
