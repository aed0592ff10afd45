//! The state of one legacy connection (a stdio process or an HTTP `Mcp-Session-Id`): what
//! `initialize` negotiated, the log level, resource subscriptions, and the server-to-client
//! requests waiting for their answers. Modern requests carry everything in `_meta` and use a
//! session only to be cancellable.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use mcp_types::{ClientCapabilities, ErrorObject, Implementation, LoggingLevel, RequestId};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::message::Outgoing;
use crate::{Error, Principal};

type Pending = HashMap<RequestId, oneshot::Sender<Result<Value, ErrorObject>>>;

/// One connection's state. Cheap to create; transports make one per connection or session.
#[derive(Default)]
pub struct Session {
    principal: Principal,
    legacy: Mutex<Legacy>,
    pending: Mutex<Pending>,
    next_id: AtomicI64,
    in_flight: Mutex<HashMap<RequestId, AbortHandle>>,
}

#[derive(Default, Clone)]
pub(crate) struct Legacy {
    pub version: Option<String>,
    pub initialized: bool,
    pub client_capabilities: ClientCapabilities,
    pub client_info: Option<Implementation>,
    pub log_level: Option<LoggingLevel>,
    pub subscriptions: BTreeSet<String>,
}

impl Session {
    /// A session of the anonymous principal.
    pub fn new() -> Arc<Self> {
        Arc::new(Session::default())
    }

    /// A session of `principal`: the party its requests come from (see [`Principal`]).
    pub fn with_principal(principal: Principal) -> Arc<Self> {
        Arc::new(Session { principal, ..Session::default() })
    }

    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// The version `initialize` negotiated, if this is a legacy session.
    pub fn protocol_version(&self) -> Option<String> {
        self.legacy.lock().expect("not poisoned").version.clone()
    }

    pub(crate) fn legacy(&self) -> Legacy {
        self.legacy.lock().expect("not poisoned").clone()
    }

    pub(crate) fn update(&self, change: impl FnOnce(&mut Legacy)) {
        change(&mut self.legacy.lock().expect("not poisoned"));
    }

    pub(crate) fn log_level(&self) -> Option<LoggingLevel> {
        self.legacy.lock().expect("not poisoned").log_level
    }

    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        self.legacy.lock().expect("not poisoned").subscriptions.contains(uri)
    }

    /// Sends a server-to-client request on `sink` and waits for the client's answer.
    pub(crate) async fn request(
        &self,
        sink: &mpsc::Sender<Outgoing>,
        method: &str,
        params: Value,
    ) -> Result<Value, Error> {
        let id = RequestId::Integer(self.next_id.fetch_add(1, Ordering::Relaxed) + 1);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().expect("not poisoned").insert(id.clone(), tx);
        let _forget = RemovePending { session: self, id: &id };
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        sink.send(Outgoing::request(&message)).await.map_err(|_| Error::internal("the client went away"))?;
        match rx.await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(Error::Failed(format!("the client answered {method} with an error: {error}"))),
            Err(_) => Err(Error::internal("the session ended before the client answered")),
        }
    }

    /// Delivers a client's response to the request waiting for it; false if none is.
    pub(crate) fn resolve(&self, id: &RequestId, outcome: Result<Value, ErrorObject>) -> bool {
        match self.pending.lock().expect("not poisoned").remove(id) {
            Some(waiter) => waiter.send(outcome).is_ok(),
            None => false,
        }
    }

    pub(crate) fn track(&self, id: RequestId, task: AbortHandle) {
        let mut in_flight = self.in_flight.lock().expect("not poisoned");
        in_flight.retain(|_, task| !task.is_finished());
        in_flight.insert(id, task);
    }

    pub(crate) fn untrack(&self, id: &RequestId) {
        self.in_flight.lock().expect("not poisoned").remove(id);
    }

    /// Stops the handler of a request the client cancelled; unknown ids are ignored.
    pub(crate) fn cancel(&self, id: &RequestId) {
        if let Some(task) = self.in_flight.lock().expect("not poisoned").remove(id) {
            task.abort();
        }
    }
}

struct RemovePending<'a> {
    session: &'a Session,
    id: &'a RequestId,
}

impl Drop for RemovePending<'_> {
    fn drop(&mut self) {
        self.session.pending.lock().expect("not poisoned").remove(self.id);
    }
}
