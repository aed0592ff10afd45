//! The event store: legacy SSE events kept for `Last-Event-ID` resumption on any instance, with
//! the in-memory store shared in one process and on Redis streams.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use mcp_server::events::{EventFeed, StoredEvent};
use mcp_server::http::HttpConfig;
use mcp_server::{EventStore, InMemoryEventStore, InMemorySessionStore, Server, SessionStore};
use mcp_server_redis::Redis;
use serde_json::{Value, json};
use support::*;

const PATIENCE: Duration = Duration::from_secs(20);
const LEGACY: &str = "2025-11-25";

async fn next(feed: &mut EventFeed) -> Option<StoredEvent> {
    tokio::time::timeout(PATIENCE, feed.next()).await.expect("the feed moves").map(|event| event.unwrap())
}

fn event(position: u64, data: &str) -> Option<StoredEvent> {
    Some(StoredEvent { position, data: data.to_owned() })
}

/// What every event store does: a reader gets what was kept after its position, then follows
/// the stream until its end; streams are bounded, and unknown ones are `None`. `bounded` holds
/// at most three events per stream.
async fn event_store_contract(store: Arc<dyn EventStore>, bounded: Arc<dyn EventStore>) {
    assert!(store.read("s", 1, 0).await.unwrap().is_none(), "an unknown stream");
    store.append("s", 7, 1, "a").await.unwrap();
    store.append("s", 7, 2, "b").await.unwrap();
    // Position 3 was a stream break: never stored.
    store.append("s", 7, 4, "d").await.unwrap();
    let mut feed = store.read("s", 7, 1).await.unwrap().expect("a known stream");
    assert_eq!(next(&mut feed).await, event(2, "b"));
    assert_eq!(next(&mut feed).await, event(4, "d"));
    // Followed live: what is appended after the read began, then the end.
    store.append("s", 7, 5, "e").await.unwrap();
    assert_eq!(next(&mut feed).await, event(5, "e"));
    store.finish("s", 7).await.unwrap();
    assert_eq!(next(&mut feed).await, None);
    // Read again once finished: everything after the position, then the end at once.
    let mut again = store.read("s", 7, 0).await.unwrap().unwrap();
    let positions: Vec<u64> = again.by_ref().map(|e| e.unwrap().position).collect().await;
    assert_eq!(positions, [1, 2, 4, 5]);
    // Streams are per session.
    assert!(store.read("other", 7, 0).await.unwrap().is_none());

    for position in 1..=5 {
        bounded.append("s", 1, position, &format!("event {position}")).await.unwrap();
    }
    bounded.finish("s", 1).await.unwrap();
    let mut feed = bounded.read("s", 1, 0).await.unwrap().unwrap();
    let positions: Vec<u64> = feed.by_ref().map(|e| e.unwrap().position).collect().await;
    assert_eq!(positions, [3, 4, 5], "the oldest went");
}

#[tokio::test]
async fn event_store_contract_in_memory() {
    event_store_contract(Arc::new(InMemoryEventStore::new()), Arc::new(InMemoryEventStore::with_limits(3, 10))).await;
}

#[tokio::test]
async fn event_store_contract_on_redis() {
    let server = RedisServer::start();
    let redis = Redis::open(&server.url()).unwrap().with_timeout(Duration::from_millis(500));
    event_store_contract(
        Arc::new(redis.event_store()),
        Arc::new(redis.with_prefix("bounded:").event_store().with_max_events(3)),
    )
    .await;
}

#[tokio::test]
async fn redis_event_streams_expire_after_their_ttl() {
    let server = RedisServer::start();
    let store = Redis::open(&server.url()).unwrap().with_prefix("ttl:").event_store().with_ttl(Duration::from_secs(60));
    store.append("s", 1, 1, "a").await.unwrap();
    let client = redis::Client::open(server.url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let ttl: i64 = redis::cmd("PTTL").arg("ttl:events:s:1").query_async(&mut connection).await.unwrap();
    assert!((59_000..=60_000).contains(&ttl), "{ttl}");
}

async fn serve(server: Server, events: Arc<dyn EventStore>) -> (String, tokio::task::JoinHandle<std::io::Result<()>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let mut config = HttpConfig::default();
    config.event_store = Some(events);
    config.sse_retry = Duration::from_millis(250);
    (url, tokio::spawn(mcp_server::http::serve(listener, server, config)))
}

/// A legacy stream broken on one instance is resumed with `Last-Event-ID` on another, which
/// never held it.
async fn a_stream_written_on_one_instance_resumes_on_another(
    sessions: Arc<dyn SessionStore>,
    events: Arc<dyn EventStore>,
) {
    let build = || {
        builder()
            .session_store(Arc::clone(&sessions))
            .tool(mcp_server::ToolRoute::new(
                "polling",
                |ctx: mcp_server::Context, _: mcp_server::NoArguments| async move {
                    ctx.close_stream().await;
                    Ok::<_, mcp_server::Error>("finished after the break")
                },
            ))
            .build()
            .unwrap()
    };
    let (one, one_task) = serve(build(), Arc::clone(&events)).await;
    let (two, two_task) = serve(build(), events).await;
    let http = reqwest::Client::new();
    let post = |url: &str, session: Option<&str>, body: Value| {
        let mut request = http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(session) = session {
            request = request.header("mcp-session-id", session).header("mcp-protocol-version", LEGACY);
        }
        request.send()
    };
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": { "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "c", "version": "1" } } });
    let response = post(&one, None, init).await.unwrap();
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    post(&one, Some(&session), json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await.unwrap();

    // On one: only the priming event, then the break.
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "polling" } });
    let text = post(&one, Some(&session), call).await.unwrap().text().await.unwrap();
    let primed = text.lines().find_map(|line| line.strip_prefix("id: ")).expect("the priming event").to_owned();
    assert!(primed.ends_with(":0"), "{text}");

    // Resumed on two: the response, with the next event id, then the stream ends.
    let resumed = http
        .get(&two)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", LEGACY)
        .header("last-event-id", &primed)
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status().as_u16(), 200);
    let text = tokio::time::timeout(PATIENCE, resumed.text()).await.expect("the stream ends").unwrap();
    let data = text.lines().find_map(|line| line.strip_prefix("data: ")).expect("an event");
    let message: Value = serde_json::from_str(data).unwrap();
    assert_eq!(message["result"]["content"][0]["text"], "finished after the break", "{text}");
    let stream = primed.split(':').next().unwrap();
    assert!(text.starts_with(&format!("id: {stream}:2\n")), "{text}");
    one_task.abort();
    two_task.abort();
}

#[tokio::test]
async fn a_stream_written_on_one_instance_resumes_on_another_in_memory() {
    a_stream_written_on_one_instance_resumes_on_another(
        Arc::new(InMemorySessionStore::new()),
        Arc::new(InMemoryEventStore::new()),
    )
    .await;
}

#[tokio::test]
async fn a_stream_written_on_one_instance_resumes_on_another_on_redis() {
    let server = RedisServer::start();
    let redis = Redis::open(&server.url()).unwrap();
    a_stream_written_on_one_instance_resumes_on_another(Arc::new(redis.session_store()), Arc::new(redis.event_store()))
        .await;
}

#[tokio::test]
async fn with_redis_down_a_resumption_elsewhere_fails_with_a_clear_error() {
    let mut server = RedisServer::start();
    let store = Redis::open(&server.url()).unwrap().with_timeout(Duration::from_millis(300)).event_store();
    store.append("s", 1, 1, "a").await.unwrap();
    server.stop();
    let error = store.read("s", 1, 0).await.err().expect("Redis is down");
    assert!(error.0.contains("Redis event store at 127.0.0.1:"), "{error}");
}
