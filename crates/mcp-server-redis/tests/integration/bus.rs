//! The change bus: a change published through one instance reaches the listeners of all, with
//! the in-memory default (two servers in one process sharing it) and on Redis pub/sub (a bus
//! each, as separate processes have).

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use mcp_server::{Change, ChangeBus, Connection, InMemoryChangeBus, ResourceRoute, Server};
use mcp_server_redis::{Redis, RedisChangeBus};
use mcp_types::Resource;
use serde_json::{Value, json};
use support::*;

const PATIENCE: Duration = Duration::from_secs(20);

async fn redis_bus(server: &RedisServer) -> RedisChangeBus {
    let bus = Redis::open(&server.url()).unwrap().with_timeout(Duration::from_millis(500)).change_bus().unwrap();
    tokio::time::timeout(PATIENCE, bus.subscribed()).await.expect("the bus subscribes");
    bus
}

async fn next(stream: &mut mcp_server::bus::ChangeStream) -> Change {
    tokio::time::timeout(PATIENCE, stream.next()).await.expect("a change arrives").unwrap()
}

/// What every bus does: each change once, in order, to every subscriber of every instance,
/// the publisher's own included (and not twice, as an echo).
async fn bus_contract(one: Arc<dyn ChangeBus>, two: Arc<dyn ChangeBus>) {
    let (mut on_one, mut on_two) = (one.subscribe(), two.subscribe());
    let updated = Change::ResourceUpdated("test://watched".to_owned());
    two.publish(updated.clone());
    assert_eq!(next(&mut on_two).await, updated);
    assert_eq!(next(&mut on_one).await, updated);
    one.publish(Change::Tools);
    assert_eq!(next(&mut on_two).await, Change::Tools);
    assert_eq!(next(&mut on_one).await, Change::Tools);
    one.publish(Change::Prompts);
    assert_eq!(next(&mut on_two).await, Change::Prompts, "no echo of an earlier change");
    assert_eq!(next(&mut on_one).await, Change::Prompts, "no echo of an earlier change");
}

#[tokio::test]
async fn bus_contract_in_memory() {
    let bus: Arc<dyn ChangeBus> = Arc::new(InMemoryChangeBus::new());
    bus_contract(Arc::clone(&bus), bus).await;
}

#[tokio::test]
async fn bus_contract_on_redis() {
    let server = RedisServer::start();
    bus_contract(Arc::new(redis_bus(&server).await), Arc::new(redis_bus(&server).await)).await;
}

fn instance(bus: Arc<dyn ChangeBus>) -> Server {
    let resource = Resource { uri: "test://watched".into(), name: "watched".into(), ..Default::default() };
    builder()
        .resource(ResourceRoute::new(resource, |_, _uri| async move { Ok("x".to_owned()) }))
        .change_bus(bus)
        .build()
        .unwrap()
}

async fn receive(connection: &mut Connection) -> Value {
    let text = tokio::time::timeout(PATIENCE, connection.receiver.recv()).await.expect("a message arrives").unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A `subscriptions/listen` on instance two receives what is announced through instance one.
async fn listeners_on_one_instance_hear_changes_made_through_another(one: Server, two: Server) {
    let (server_end, mut listener) = Connection::memory();
    tokio::spawn(async move { two.serve(server_end).await });
    let listen = json!({
        "jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {
            "notifications": { "toolsListChanged": true, "resourceSubscriptions": ["test://watched"] },
            "_meta": { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} },
        },
    });
    listener.sender.send(listen.to_string()).await.unwrap();
    let ack = receive(&mut listener).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");

    one.notify_prompts_list_changed(); // not asked for
    one.notify_tools_list_changed();
    let next = receive(&mut listener).await;
    assert_eq!(next["method"], "notifications/tools/list_changed", "{next}");
    assert_eq!(next["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1", "{next}");
    one.notify_resource_updated("test://other"); // not subscribed
    one.notify_resource_updated("test://watched");
    let next = receive(&mut listener).await;
    assert_eq!(next["method"], "notifications/resources/updated", "{next}");
    assert_eq!(next["params"]["uri"], "test://watched", "{next}");
}

#[tokio::test]
async fn listeners_hear_changes_made_through_another_instance_in_memory() {
    let bus: Arc<dyn ChangeBus> = Arc::new(InMemoryChangeBus::new());
    listeners_on_one_instance_hear_changes_made_through_another(instance(Arc::clone(&bus)), instance(bus)).await;
}

#[tokio::test]
async fn listeners_hear_changes_made_through_another_instance_on_redis() {
    let server = RedisServer::start();
    let (one, two) = (redis_bus(&server).await, redis_bus(&server).await);
    listeners_on_one_instance_hear_changes_made_through_another(instance(Arc::new(one)), instance(Arc::new(two))).await;
}

#[tokio::test]
async fn the_redis_bus_resubscribes_after_a_lost_connection_and_announces_the_lists_may_have_changed() {
    let server = RedisServer::start();
    let (one, two) = (redis_bus(&server).await, redis_bus(&server).await);
    let mut on_two = two.subscribe();
    let client = redis::Client::open(server.url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let killed: i64 =
        redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("pubsub").query_async(&mut connection).await.unwrap();
    assert_eq!(killed, 2, "both buses' subscriptions");
    // Back: the lists and the subscribed resources may have changed while cut off, so listeners
    // are told to list and read again.
    for expected in [Change::Tools, Change::Prompts, Change::Resources, Change::ResourcesUpdated] {
        let change = tokio::time::timeout(PATIENCE, on_two.next()).await.expect("a change arrives").unwrap();
        assert_eq!(change, expected);
    }
    tokio::time::timeout(PATIENCE, one.subscribed()).await.unwrap();
    one.publish(Change::ResourceUpdated("test://after".to_owned()));
    loop {
        let change = tokio::time::timeout(PATIENCE, on_two.next()).await.expect("a change arrives").unwrap();
        if change == Change::ResourceUpdated("test://after".to_owned()) {
            break;
        }
        // Only the reconnection's announcements may come before it.
        assert!(
            matches!(change, Change::Tools | Change::Prompts | Change::Resources | Change::ResourcesUpdated),
            "{change:?}"
        );
    }
}

/// Updates lost while a bus was cut off (`Change::ResourcesUpdated`): every subscription hears
/// that its resource was updated, a legacy session's and a listen's alike, and nothing else does.
#[tokio::test]
async fn lost_updates_reach_every_subscription() {
    let bus: Arc<dyn ChangeBus> = Arc::new(InMemoryChangeBus::new());
    let server = instance(Arc::clone(&bus));
    let connect = || {
        let (server_end, client_end) = Connection::memory();
        let server = server.clone();
        tokio::spawn(async move { server.serve(server_end).await });
        client_end
    };
    let send =
        async |connection: &Connection, message: Value| connection.sender.send(message.to_string()).await.unwrap();

    let mut legacy = connect();
    let init =
        json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "c", "version": "1" } });
    send(&legacy, json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init })).await;
    assert_eq!(receive(&mut legacy).await["id"], 1);
    send(&legacy, json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;
    let subscribe =
        json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": { "uri": "test://watched" } });
    send(&legacy, subscribe).await;
    let subscribed = receive(&mut legacy).await;
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    let mut unsubscribed = connect();
    send(&unsubscribed, json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init })).await;
    assert_eq!(receive(&mut unsubscribed).await["id"], 1);
    send(&unsubscribed, json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;

    let mut listener = connect();
    let listen = json!({
        "jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {
            "notifications": { "resourceSubscriptions": ["test://watched"] },
            "_meta": { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} },
        },
    });
    send(&listener, listen).await;
    assert_eq!(receive(&mut listener).await["method"], "notifications/subscriptions/acknowledged");

    bus.publish(Change::ResourcesUpdated);
    let updated = receive(&mut legacy).await;
    assert_eq!(updated["method"], "notifications/resources/updated", "{updated}");
    assert_eq!(updated["params"], json!({ "uri": "test://watched" }), "{updated}");
    let updated = receive(&mut listener).await;
    assert_eq!(updated["method"], "notifications/resources/updated", "{updated}");
    assert_eq!(updated["params"]["uri"], "test://watched", "{updated}");
    assert_eq!(updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1", "{updated}");
    // The session without a subscription hears the next change, not the lost updates.
    bus.publish(Change::Tools);
    let next = receive(&mut unsubscribed).await;
    assert_eq!(next["method"], "notifications/tools/list_changed", "{next}");
}
