//! The change bus on Redis pub/sub.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use mcp_server::bus::{ChangeStream, broadcast_stream};
use mcp_server::tasks::StoreError;
use mcp_server::{Change, ChangeBus};
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::connection::Redis;

const BUS: &str = "change bus";

/// The change bus of a deployment on Redis pub/sub: each change is published on
/// `PREFIXchanges` (with the id of the bus that sent it) and every instance's bus forwards what
/// it receives to its own listeners. A change reaches this instance's listeners at once and
/// the others' through Redis.
///
/// One background task publishes (from a bounded queue: [`ChangeBus::publish`] never waits)
/// and one holds the subscription, resubscribing with backoff when the connection is lost.
/// Pub/sub does not keep messages: a change published while an instance was cut off never
/// reaches it, so after a reconnection it announces the three list changes and
/// [`Change::ResourcesUpdated`] to its listeners (the lists and the subscribed resources may have
/// changed; clients list and read again). Dropping the bus stops both tasks.
#[derive(Clone)]
pub struct RedisChangeBus(Arc<BusInner>);

struct BusInner {
    local: broadcast::Sender<Change>,
    outbox: mpsc::Sender<String>,
    origin: String,
    subscribed: watch::Receiver<bool>,
    _stop: oneshot::Sender<()>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Envelope {
    origin: String,
    change: Change,
}

impl Redis {
    /// The change bus of this deployment (see [`RedisChangeBus`]). It starts its background
    /// tasks on the current Tokio runtime; outside one it fails.
    pub fn change_bus(&self) -> Result<RedisChangeBus, StoreError> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| StoreError("the Redis change bus needs a Tokio runtime to start in".to_owned()))?;
        let mut origin = [0u8; 8];
        getrandom::fill(&mut origin).map_err(|e| StoreError(format!("no random source for the bus id: {e}")))?;
        let origin: String = origin.iter().map(|b| format!("{b:02x}")).collect();
        let (local, _) = broadcast::channel(256);
        let (outbox, queued) = mpsc::channel(1024);
        let (stop, stopped) = oneshot::channel();
        let (subscribed_tx, subscribed) = watch::channel(false);
        let channel = format!("{}changes", self.0.prefix);
        runtime.spawn(publish_queued(self.clone(), channel.clone(), queued));
        runtime.spawn(forward_remote(self.clone(), channel, origin.clone(), local.clone(), subscribed_tx, stopped));
        Ok(RedisChangeBus(Arc::new(BusInner { local, outbox, origin, subscribed, _stop: stop })))
    }
}

impl RedisChangeBus {
    /// Resolves once the bus is subscribed to Redis, so that changes other instances publish
    /// from then on reach this one (startup and tests; changes flow regardless).
    pub async fn subscribed(&self) {
        let mut subscribed = self.0.subscribed.clone();
        let _ = subscribed.wait_for(|subscribed| *subscribed).await;
    }
}

impl std::fmt::Debug for RedisChangeBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisChangeBus").field("origin", &self.0.origin).finish()
    }
}

impl ChangeBus for RedisChangeBus {
    fn publish(&self, change: Change) {
        let envelope = Envelope { origin: self.0.origin.clone(), change: change.clone() };
        let _ = self.0.local.send(change);
        let json = serde_json::to_string(&envelope).expect("a change encodes to JSON");
        if let Err(error) = self.0.outbox.try_send(json) {
            tracing::warn!(%error, "Redis change bus: a change was not queued for the other instances");
        }
    }

    fn subscribe(&self) -> ChangeStream {
        broadcast_stream(self.0.local.subscribe())
    }
}

/// Publishes queued changes one by one; ends when the bus is dropped.
async fn publish_queued(redis: Redis, channel: String, mut queued: mpsc::Receiver<String>) {
    while let Some(json) = queued.recv().await {
        if let Err(error) = redis.query::<()>(BUS, redis::cmd("PUBLISH").arg(&channel).arg(json)).await {
            tracing::warn!(%error, "a change did not reach the other instances");
        }
    }
}

/// Holds the subscription and forwards other instances' changes to this one's listeners.
async fn forward_remote(
    redis: Redis,
    channel: String,
    origin: String,
    local: broadcast::Sender<Change>,
    subscribed: watch::Sender<bool>,
    stopped: oneshot::Receiver<()>,
) {
    let forward = async {
        let mut delay = Duration::from_millis(50);
        let mut reconnected = false;
        loop {
            let pubsub = match redis.subscribe(BUS, &channel).await {
                Ok(pubsub) => pubsub,
                Err(error) => {
                    tracing::debug!(%error, "the change bus is waiting for Redis");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(1));
                    continue;
                }
            };
            delay = Duration::from_millis(50);
            subscribed.send_replace(true);
            if reconnected {
                // Whatever was published while cut off is lost: the lists, and any subscribed
                // resource, may have changed.
                for change in [Change::Tools, Change::Prompts, Change::Resources, Change::ResourcesUpdated] {
                    let _ = local.send(change);
                }
            }
            let mut messages = pubsub.into_on_message();
            while let Some(message) = messages.next().await {
                let Ok(json) = message.get_payload::<String>() else { continue };
                match serde_json::from_str::<Envelope>(&json) {
                    Ok(envelope) if envelope.origin != origin => {
                        let _ = local.send(envelope.change);
                    }
                    Ok(_) => {}
                    Err(error) => tracing::warn!(%error, "the change bus ignored a message that is no change"),
                }
            }
            subscribed.send_replace(false);
            reconnected = true;
        }
    };
    tokio::select! {
        () = forward => {}
        _ = stopped => {}
    }
}
