//! The change bus: how list changes and resource updates reach `subscriptions/listen` streams
//! and legacy sessions. [`Server::notify_tools_list_changed`](crate::Server::notify_tools_list_changed)
//! and its siblings publish on it; every listener of the server subscribes to it. A bus shared
//! by several instances (the Redis one of `mcp-server-redis`, on pub/sub) therefore carries a
//! change made through one instance to the listeners of all.

use std::pin::Pin;

use futures::Stream;
use tokio::sync::broadcast;

/// A change announced to listeners.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "uri", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Change {
    /// `notifications/tools/list_changed`.
    Tools,
    /// `notifications/prompts/list_changed`.
    Prompts,
    /// `notifications/resources/list_changed`.
    Resources,
    /// `notifications/resources/updated` for this URI.
    ResourceUpdated(String),
    /// Updates may have been lost (a bus that was cut off): every subscription is told that its
    /// resource was updated, so that its client reads it again.
    ResourcesUpdated,
}

/// The changes published from the moment of subscription on, by any instance sharing the bus.
pub type ChangeStream = Pin<Box<dyn Stream<Item = Change> + Send>>;

/// Carries changes to every listener of every instance sharing it.
pub trait ChangeBus: Send + Sync + 'static {
    /// Announces `change` to the listeners of every instance, this one's included. It must not
    /// wait: a bus that needs I/O queues the change (a change that cannot be delivered is
    /// logged, and lost, as a notification to a disconnected client is).
    fn publish(&self, change: Change);

    /// Every change published from now on.
    fn subscribe(&self) -> ChangeStream;
}

/// The default [`ChangeBus`]: a `tokio::sync::broadcast` channel in this process. A listener
/// that falls more than the capacity behind skips what it missed.
#[derive(Debug, Clone)]
pub struct InMemoryChangeBus(broadcast::Sender<Change>);

impl InMemoryChangeBus {
    /// A bus keeping up to 64 changes per slow listener.
    pub fn new() -> Self {
        Self::with_capacity(64)
    }

    /// A bus keeping up to `capacity` changes (at least one) per slow listener.
    pub fn with_capacity(capacity: usize) -> Self {
        InMemoryChangeBus(broadcast::channel(capacity.max(1)).0)
    }
}

impl Default for InMemoryChangeBus {
    fn default() -> Self {
        Self::new()
    }
}

impl ChangeBus for InMemoryChangeBus {
    fn publish(&self, change: Change) {
        // No receiver: nobody listens, nothing to do.
        let _ = self.0.send(change);
    }

    fn subscribe(&self) -> ChangeStream {
        broadcast_stream(self.0.subscribe())
    }
}

/// The changes a broadcast receiver gets, skipping those it lagged behind on; ends when the
/// channel closes. For buses that fan changes out in process (as the in-memory and Redis ones do).
pub fn broadcast_stream(receiver: broadcast::Receiver<Change>) -> ChangeStream {
    Box::pin(futures::stream::unfold(receiver, |mut receiver| async move {
        loop {
            match receiver.recv().await {
                Ok(change) => return Some((change, receiver)),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt as _;

    #[tokio::test]
    async fn subscribers_see_what_is_published_after_they_subscribed() {
        let bus = InMemoryChangeBus::new();
        bus.publish(Change::Tools);
        let (mut one, mut two) = (bus.subscribe(), bus.subscribe());
        bus.publish(Change::ResourceUpdated("file:///a".to_owned()));
        assert_eq!(one.next().await, Some(Change::ResourceUpdated("file:///a".to_owned())));
        assert_eq!(two.next().await, Some(Change::ResourceUpdated("file:///a".to_owned())));
    }

    #[test]
    fn changes_have_a_stable_json_form() {
        let json = serde_json::to_string(&Change::ResourceUpdated("u".to_owned())).unwrap();
        assert_eq!(json, r#"{"kind":"resource_updated","uri":"u"}"#);
        assert_eq!(serde_json::to_string(&Change::Tools).unwrap(), r#"{"kind":"tools"}"#);
        assert_eq!(serde_json::from_str::<Change>(r#"{"kind":"prompts"}"#).unwrap(), Change::Prompts);
    }
}
