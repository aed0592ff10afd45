//! [`Client::listen`] and the [`Subscription`] stream it returns.

use futures::stream::{self, BoxStream, Stream, StreamExt as _};
use mcp_types::{JsonObject, ServerNotification, SubscriptionFilter};
use serde_json::{Value, json};

use super::era::Era;
use super::{Call, Client};
use crate::error::Error;

impl Client {
    /// Opens a subscription: a stream of the notifications selected by `filter`. On the modern
    /// era this is `subscriptions/listen` (the first item is the acknowledgement); dropping the
    /// stream ends it (closing the HTTP stream, or `notifications/cancelled` on stdio). On the
    /// legacy era the matching unsolicited notifications are passed through (after
    /// `resources/subscribe` for each URI).
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription, Error> {
        if self.era() == Era::Legacy {
            for uri in filter.resource_subscriptions.iter().flatten() {
                let mut params = JsonObject::new();
                params.insert("uri".into(), json!(uri));
                self.request(&Call::new(self, "resources/subscribe", params)).await?;
            }
            let wanted = filter.clone();
            let rx = self.inner.core.notifications.subscribe();
            let stream = stream::unfold(rx, |mut rx| async move {
                loop {
                    match rx.recv().await {
                        Ok(text) => return Some((text, rx)),
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                            tracing::warn!(missed = n, "a slow subscription missed notifications");
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                    }
                }
            })
            .filter(move |text| std::future::ready(legacy_wanted(&wanted, text)));
            return Ok(Subscription::new(self.clone(), stream.boxed(), None));
        }
        let id = self.inner.core.next_id();
        let rx = self.inner.core.subscribe(id.clone());
        let mut params = JsonObject::new();
        params
            .insert("notifications".into(), serde_json::to_value(&filter).map_err(|e| Error::protocol(e.to_string()))?);
        let mut call = Call::new(self, "subscriptions/listen", params);
        call.timeout = None;
        let client = self.clone();
        let core = self.inner.core.clone();
        let sub_id = id.clone();
        let listen = async move {
            let outcome = client.send(&call, id).await.map(drop);
            core.unsubscribe(&sub_id);
            outcome
        };
        let notifications = stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|text| (text, rx)) });
        Ok(Subscription::new(self.clone(), notifications.boxed(), Some(Box::pin(listen))))
    }
}

/// A stream of server notifications from [`Client::listen`]; dropping it ends the
/// subscription.
pub struct Subscription {
    client: Client,
    notifications: BoxStream<'static, String>,
    listen: Option<futures::future::BoxFuture<'static, Result<(), Error>>>,
    ended: Option<Result<(), Error>>,
    drained: bool,
}

impl Subscription {
    fn new(
        client: Client,
        notifications: BoxStream<'static, String>,
        listen: Option<futures::future::BoxFuture<'static, Result<(), Error>>>,
    ) -> Self {
        Subscription { client, notifications, listen, ended: None, drained: false }
    }
}

impl Stream for Subscription {
    type Item = Result<ServerNotification, Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        let this = &mut *self;
        if let Some(listen) = &mut this.listen
            && let Poll::Ready(outcome) = listen.as_mut().poll(cx)
        {
            this.listen = None;
            this.ended = Some(outcome);
        }
        if !this.drained {
            match this.notifications.poll_next_unpin(cx) {
                Poll::Ready(Some(text)) => {
                    let notification = this.decode(&text);
                    if let Ok(ServerNotification::Cancelled(_)) = notification {
                        // The server ended the subscription (stdio).
                        this.drained = true;
                        this.listen = None;
                        this.ended = None;
                        return Poll::Ready(None);
                    }
                    return Poll::Ready(Some(notification));
                }
                Poll::Ready(None) => this.drained = true,
                Poll::Pending => {}
            }
        }
        if this.drained || (this.listen.is_none() && this.ended.is_some()) {
            this.drained = true;
            // The listen request is over: an error is reported once, then the stream ends.
            return match this.ended.take() {
                Some(Err(e)) => Poll::Ready(Some(Err(e))),
                _ if this.listen.is_some() => Poll::Pending,
                _ => Poll::Ready(None),
            };
        }
        Poll::Pending
    }
}

impl Subscription {
    fn decode(&self, text: &str) -> Result<ServerNotification, Error> {
        let notification = serde_json::from_str::<ServerNotification>(text)
            .map_err(|e| Error::protocol(format!("malformed notification: {e}")))?;
        match &notification {
            ServerNotification::ToolListChanged(_) => self.client.invalidate("tools/list"),
            ServerNotification::PromptListChanged(_) => self.client.invalidate("prompts/list"),
            ServerNotification::ResourceListChanged(_) => self.client.invalidate("resources/"),
            ServerNotification::ResourceUpdated(_) => self.client.invalidate("resources/read"),
            _ => {}
        }
        Ok(notification)
    }
}

fn legacy_wanted(filter: &SubscriptionFilter, text: &str) -> bool {
    let method = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v.get("method").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default();
    match method.as_str() {
        "notifications/tools/list_changed" => filter.tools_list_changed == Some(true),
        "notifications/prompts/list_changed" => filter.prompts_list_changed == Some(true),
        "notifications/resources/list_changed" => filter.resources_list_changed == Some(true),
        "notifications/resources/updated" => filter.resource_subscriptions.as_ref().is_some_and(|u| !u.is_empty()),
        _ => false,
    }
}
