//! Serving a server over any channel of whole messages.

use futures::StreamExt as _;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::{Principal, Server, Session};

/// Two ends of a message channel, as in lsp-server: whole JSON-RPC messages as text.
pub struct Connection {
    pub sender: mpsc::Sender<String>,
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
    /// Serves one connection (one session, either era) until the peer closes its sender. Requests
    /// are served concurrently; on close, requests in flight finish and subscriptions end. The
    /// connection's requests are anonymous ([`Principal::anonymous`]).
    pub async fn serve(&self, connection: Connection) {
        self.serve_as(connection, Principal::anonymous()).await
    }

    /// Serves one connection whose requests all come from `principal` (the tasks they create are
    /// bound to it).
    pub async fn serve_as(&self, connection: Connection, principal: Principal) {
        let Connection { sender, mut receiver } = connection;
        let session = Session::with_principal(principal);
        let mut notifications = Box::pin(self.session_notifications(session.clone()));
        let mut requests = JoinSet::new();
        let mut subscriptions = JoinSet::new();
        loop {
            tokio::select! {
                message = receiver.recv() => {
                    let Some(message) = message else { break };
                    let Some(mut reply) = self.handle_bytes(&session, message.as_bytes(), None) else { continue };
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
        subscriptions.abort_all();
        while requests.join_next().await.is_some() {}
    }
}
