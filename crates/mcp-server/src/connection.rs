//! Serving a server over any channel of whole messages.

use futures::{FutureExt as _, StreamExt as _};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use mcp_types::RequestId;

use crate::message::Outgoing;
use crate::server::busy;
use crate::{principal::Principal, server::Server, session::Session};

/// Two ends of a message channel, as in lsp-server: whole JSON-RPC messages as text.
pub struct Connection {
    /// Messages to the other end.
    pub sender: mpsc::Sender<String>,
    /// Messages from the other end.
    pub receiver: mpsc::Receiver<String>,
}

impl Connection {
    /// A connected pair: give the first to [`Server::serve`], drive the second from a test.
    pub fn memory() -> (Connection, Connection) {
        let (to_server, server_inbox) = mpsc::channel(64);
        let (to_client, client_inbox) = mpsc::channel(64);
        (
            Connection { sender: to_client, receiver: server_inbox },
            Connection { sender: to_server, receiver: client_inbox },
        )
    }
}

impl Server {
    /// Serves one connection (one session, either era) until the peer closes its sender.
    ///
    /// Requests are served concurrently, at most [`Options::max_in_flight`](crate::Options::max_in_flight)
    /// at once: beyond that a request is refused at once (`-32603` naming the limit), and while
    /// the peer does not read the answers, the refusals wait too, so nothing piles up. On close,
    /// server-to-client requests fail (no answer can arrive), subscriptions end, and the other
    /// requests in flight get [`Options::drain_timeout`](crate::Options::drain_timeout) to finish.
    /// The connection's requests are anonymous ([`Principal::anonymous`]).
    pub async fn serve(&self, connection: Connection) {
        self.serve_as(connection, Principal::anonymous()).await
    }

    /// Serves one connection whose requests all come from `principal` (the tasks they create are
    /// bound to it).
    pub async fn serve_as(&self, connection: Connection, principal: Principal) {
        let Connection { sender, receiver } = connection;
        self.serve_inbox(receiver, sender, (), principal).await
    }

    /// [`Server::serve_as`] with the peer's messages from `inbox` (a channel, or a transport
    /// that reads them itself, so that no task stands between the bytes and the server).
    pub(crate) async fn serve_inbox(
        &self,
        mut inbox: impl Inbox,
        sender: mpsc::Sender<String>,
        mut direct: impl WriteNow,
        principal: Principal,
    ) {
        let session = Session::with_principal(principal);
        session.set_transport(crate::telemetry::Transport::Pipe);
        session.opened(None);
        let mut notifications = Box::pin(self.session_notifications(session.clone()));
        let mut requests = JoinSet::new();
        let mut subscriptions = JoinSet::new();
        let limit = self.options().max_in_flight;
        // The messages of the reply at hand that are ready (kept, so as not to allocate per request).
        let mut ready = Vec::new();
        loop {
            tokio::select! {
                incoming = inbox.next() => {
                    let message = match incoming {
                        None => break,
                        Some(Incoming::Message(message)) => message,
                        // The transport's own answer, for something it could not read.
                        Some(Incoming::Answer(answer)) => {
                            if sender.send(answer).await.is_err() {
                                break;
                            }
                            continue;
                        }
                    };
                    let at_limit = requests.len() >= limit;
                    if at_limit && let Some(refusal) = refusal(message.as_bytes(), limit) {
                        if sender.send(refusal).await.is_err() {
                            break;
                        }
                        continue;
                    }
                    // A message comes in as text: not checked as UTF-8 again.
                    let reply = match self.refusal_before_decode(message.as_bytes()) {
                        Some(refusal) => Some(refusal),
                        None => self.handle_measured_text(&session, &message, None),
                    };
                    let Some(mut reply) = reply else { continue };
                    // Most replies are complete at once: sent from here, with no task per request,
                    // and written from here when the transport can (`WriteNow`).
                    let waiting = loop {
                        match reply.next().now_or_never() {
                            Some(Some(message)) => {
                                if message.is_message() {
                                    ready.push(message.json);
                                }
                            }
                            Some(None) => break false,
                            None => break true,
                        }
                    };
                    if !waiting && direct.write_now(&ready) {
                        ready.clear();
                        continue;
                    }
                    let mut closed = false;
                    for json in ready.drain(..) {
                        if !closed && sender.send(json).await.is_err() {
                            closed = true;
                        }
                    }
                    // A peer that is gone gets nothing more of this reply.
                    if closed || !waiting {
                        continue;
                    }
                    if at_limit {
                        // Not a request: an error answered at once, sent here rather than on a task.
                        while let Some(message) = reply.next().await {
                            if message.is_message() && sender.send(message.json).await.is_err() {
                                break;
                            }
                        }
                        continue;
                    }
                    let tasks = if reply.is_long_lived() { &mut subscriptions } else { &mut requests };
                    let sender = sender.clone();
                    tasks.spawn(async move {
                        while let Some(message) = reply.next().await {
                            if message.is_message() && sender.send(message.json).await.is_err() {
                                break;
                            }
                        }
                    });
                }
                Some(notification) = notifications.next() => {
                    if sender.send(notification.json).await.is_err() {
                        break;
                    }
                }
                Some(_) = requests.join_next(), if !requests.is_empty() => {}
                Some(_) = subscriptions.join_next(), if !subscriptions.is_empty() => {}
            }
        }
        session.end_input();
        subscriptions.abort_all();
        let drained = async { while requests.join_next().await.is_some() {} };
        if tokio::time::timeout(self.options().drain_timeout, drained).await.is_err() {
            tracing::warn!("requests still in flight after Options::drain_timeout; stopping them");
        }
        session.close();
        requests.abort_all();
    }
}

/// What a connection's inbox gives the server next.
pub(crate) enum Incoming {
    /// A message from the peer.
    Message(String),
    /// An answer of the transport's own, for input it could not read as a message (stdio's).
    #[cfg_attr(not(feature = "stdio"), allow(dead_code))]
    Answer(String),
}

/// A transport's way to write the messages of a reply complete at once from the serving task
/// itself, with no task or channel between them and the peer (stdio's, to a pipe).
pub(crate) trait WriteNow: Send {
    /// Writes `messages` now, if that neither waits nor passes a message already on its way;
    /// `false` leaves them to the connection's channel.
    fn write_now(&mut self, messages: &[String]) -> bool;
}

/// A channel's connection: everything goes through the channel.
impl WriteNow for () {
    fn write_now(&mut self, _: &[String]) -> bool {
        false
    }
}

/// Where a served connection's messages come from. `next` must be cancel-safe: the serving loop
/// waits for it beside other work and drops it when that comes first.
pub(crate) trait Inbox: Send {
    /// The next message, `None` once the peer closed.
    fn next(&mut self) -> impl Future<Output = Option<Incoming>> + Send;
}

impl Inbox for mpsc::Receiver<String> {
    async fn next(&mut self) -> Option<Incoming> {
        self.recv().await.map(Incoming::Message)
    }
}

impl<I: Inbox> Inbox for &mut I {
    fn next(&mut self) -> impl Future<Output = Option<Incoming>> + Send {
        (**self).next()
    }
}

/// The answer to a message that arrives while [`Options::max_in_flight`](crate::Options::max_in_flight)
/// requests are in flight: a refusal for a request or a batch; `None` for what needs no answer
/// (notifications, and responses to the server's requests, which are always taken in).
fn refusal(bytes: &[u8], limit: usize) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Probe {
        id: Option<RequestId>,
        method: Option<serde::de::IgnoredAny>,
    }
    let id = match serde_json::from_slice::<Probe>(bytes) {
        Ok(Probe { id: Some(id), method: Some(_) }) => Some(id),
        Ok(_) => return None,
        // A batch, or something the server will refuse anyway: answered without an id.
        Err(_) if bytes.trim_ascii_start().starts_with(b"[") => None,
        Err(_) => return None,
    };
    Some(Outgoing::error(id.as_ref(), &busy(limit)).json)
}
