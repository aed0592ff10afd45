//! Who is making a request, as far as the transport (or an auth layer in front of it) knows.

use std::fmt;

/// The authenticated party behind a request: what a task is bound to, so that only the party
/// that created a task can read, answer or cancel it.
///
/// The server does not authenticate anyone itself. On HTTP, a layer in front of the router
/// (an OAuth resource-server middleware, for instance) inserts a `Principal` into the request's
/// extensions (`request.extensions_mut().insert(Principal::new(subject))`); on stdio and
/// in-memory connections the whole connection has one ([`Server::serve_as`](crate::Server::serve_as)).
///
/// Without one, a request is [`Principal::anonymous`]: every anonymous request is the same
/// party, so a task created anonymously is reachable by anyone who has its id. Task ids are
/// unguessable (128 random bits), which makes the id a bearer token, as the tasks extension
/// allows; set a principal where that is not enough.
#[derive(Clone, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Principal(String);

impl Principal {
    /// The party named `id` (a subject, an account id, a key id). The empty id is anonymous.
    pub fn new(id: impl Into<String>) -> Self {
        Principal(id.into())
    }

    /// The party of requests nobody authenticated.
    pub fn anonymous() -> Self {
        Principal::default()
    }

    /// Whether this is the anonymous party (the empty id).
    pub fn is_anonymous(&self) -> bool {
        self.0.is_empty()
    }

    /// The party's id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_anonymous() { f.write_str("Principal(anonymous)") } else { write!(f, "Principal({:?})", self.0) }
    }
}
