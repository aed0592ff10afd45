//! Legacy HTTP sessions (`Mcp-Session-Id`) shared by two server instances through a
//! `SessionStore`: the in-memory default shared in one process, and Redis.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use mcp_server::http::HttpConfig;
use mcp_server::{InMemorySessionStore, Server, SessionStore};
use mcp_server_redis::Redis;
use serde_json::{Value, json};
use support::*;

const LEGACY: &str = "2025-11-25";

/// One instance served over HTTP on a loopback port; dropping it stops it.
struct Instance {
    url: String,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Instance {
    async fn start(server: Server) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let task = tokio::spawn(mcp_server::http::serve(listener, server, HttpConfig::default()));
        Instance { url, task }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A legacy client: no connection is reused, so that a stopped instance is really gone.
struct Legacy {
    http: reqwest::Client,
    session: Option<String>,
}

impl Legacy {
    fn new() -> Self {
        Legacy { http: reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap(), session: None }
    }

    /// POSTs `message`; returns the HTTP status and every JSON-RPC message of the body.
    async fn post(&mut self, url: &str, message: Value) -> (u16, Vec<Value>) {
        let mut request = self
            .http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(message.to_string());
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session).header("mcp-protocol-version", LEGACY);
        }
        let response = request.send().await.expect("the instance answers");
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.session = Some(session.to_str().unwrap().to_owned());
        }
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let messages = match serde_json::from_str::<Value>(&text) {
            Ok(message) => vec![message],
            Err(_) => text
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .filter_map(|data| serde_json::from_str(data.trim()).ok())
                .collect(),
        };
        (status, messages)
    }

    async fn request(&mut self, url: &str, id: i64, method: &str, params: Value) -> (u16, Vec<Value>) {
        self.post(url, json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })).await
    }
}

fn response(messages: &[Value], id: i64) -> &Value {
    messages.iter().find(|m| m["id"] == id && m.get("method").is_none()).expect("a response")
}

/// Opens a session on one instance (version, capabilities, client info, log level) and uses it
/// on another after the first is stopped.
async fn a_session_outlives_its_instance(store: Arc<dyn SessionStore>) {
    let build = || builder().session_store(Arc::clone(&store)).build().unwrap();
    let (one, two) = (Instance::start(build()).await, Instance::start(build()).await);
    let mut client = Legacy::new();
    let init = json!({
        "protocolVersion": LEGACY,
        "capabilities": { "elicitation": {} },
        "clientInfo": { "name": "roaming-client", "version": "1.0.0" },
    });
    let (status, messages) = client.request(&one.url, 1, "initialize", init).await;
    assert_eq!(status, 200, "{messages:?}");
    assert_eq!(response(&messages, 1)["result"]["protocolVersion"], LEGACY);
    assert!(client.session.is_some(), "initialize opens a session");
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(client.post(&one.url, initialized).await.0, 202);
    let (_, messages) = client.request(&one.url, 2, "logging/setLevel", json!({ "level": "error" })).await;
    assert!(response(&messages, 2).get("result").is_some(), "{messages:?}");

    let one_url = one.url.clone();
    drop(one);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(client.http.post(&one_url).body("{}").send().await.is_err(), "the first instance is gone");

    let (status, messages) =
        client.request(&two.url, 3, "tools/call", json!({ "name": "whoami", "arguments": {} })).await;
    assert_eq!(status, 200, "{messages:?}");
    let answer = response(&messages, 3);
    assert_eq!(answer["result"]["content"][0]["text"], "2025-11-25 roaming-client elicitation=true", "{answer}");
    let logs: Vec<&Value> = messages.iter().filter(|m| m["method"] == "notifications/message").collect();
    assert_eq!(logs.len(), 1, "only the error passes the session's log level: {messages:?}");
    assert_eq!(logs[0]["params"]["level"], "error");

    // Ended on the second instance, the session is unknown everywhere.
    let deleted = client.http.delete(&two.url).header("mcp-session-id", client.session.clone().unwrap()).send();
    assert_eq!(deleted.await.unwrap().status().as_u16(), 200);
    let three = Instance::start(build()).await;
    let (status, messages) =
        client.request(&three.url, 4, "tools/call", json!({ "name": "plain", "arguments": {} })).await;
    assert_eq!(status, 404, "{messages:?}");
}

#[tokio::test]
async fn a_session_outlives_its_instance_in_memory() {
    a_session_outlives_its_instance(Arc::new(InMemorySessionStore::new())).await;
}

#[tokio::test]
async fn a_session_outlives_its_instance_on_redis() {
    let server = RedisServer::start();
    let store = Redis::open(&server.url()).unwrap().with_timeout(Duration::from_millis(500)).session_store();
    a_session_outlives_its_instance(Arc::new(store)).await;
}

#[tokio::test]
async fn with_redis_down_a_session_request_fails_with_a_clear_error_and_works_again_when_it_returns() {
    let mut redis = RedisServer::start();
    let stores = Redis::open(&redis.url()).unwrap().with_timeout(Duration::from_millis(500));
    let instance = Instance::start(builder().session_store(Arc::new(stores.session_store())).build().unwrap()).await;
    let init = json!({ "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "c", "version": "1" } });

    redis.stop();
    let mut client = Legacy::new();
    let (_, messages) = client.request(&instance.url, 1, "initialize", init.clone()).await;
    let error = &response(&messages, 1)["error"];
    assert_eq!(error["code"], INTERNAL_ERROR, "{error}");
    assert!(error["message"].as_str().unwrap().contains("Redis session store at 127.0.0.1:"), "{error}");
    assert!(client.session.is_none(), "no session is opened that no other instance could serve");
    // A modern request needs no session store.
    let mut modern = Client::start(&builder().session_store(Arc::new(stores.session_store())).build().unwrap());
    let plain = modern.call("plain", json!({})).await;
    assert_eq!(plain["result"]["content"][0]["text"], "plain", "{plain}");

    redis.restart();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (status, messages) = client.request(&instance.url, 2, "initialize", init.clone()).await;
        if client.session.is_some() {
            assert_eq!(status, 200, "{messages:?}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "Redis is back but sessions still fail: {messages:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, messages) =
        client.request(&instance.url, 3, "tools/call", json!({ "name": "plain", "arguments": {} })).await;
    assert_eq!(response(&messages, 3)["result"]["content"][0]["text"], "plain", "{messages:?}");
}

/// The store's own contract: `touch` says whether a record is there and starts its idle time
/// again, without changing the record.
async fn session_store_contract(store: Arc<dyn SessionStore>) {
    let record: mcp_server::SessionRecord = serde_json::from_value(json!({
        "principal": "",
        "protocol_version": LEGACY,
        "initialized": true,
        "client_capabilities": {},
        "client_info": null,
        "log_level": null,
        "subscriptions": [],
    }))
    .unwrap();
    let (short, long) = (Duration::from_millis(300), Duration::from_secs(30));
    assert!(!store.touch("unknown", long).await.unwrap(), "an unknown id is not there");
    store.save("kept", &record, short).await.unwrap();
    store.save("left", &record, short).await.unwrap();
    assert!(store.touch("kept", long).await.unwrap());
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(store.touch("kept", long).await.unwrap(), "touch started the idle time again, with its own length");
    assert_eq!(store.load("kept", long).await.unwrap(), Some(record), "touch leaves the record as it was");
    assert!(!store.touch("left", long).await.unwrap(), "an idle record is gone");
    store.remove("kept").await.unwrap();
    assert!(!store.touch("kept", long).await.unwrap(), "a removed record is gone");
}

#[tokio::test]
async fn session_store_contract_in_memory() {
    session_store_contract(Arc::new(InMemorySessionStore::new())).await;
}

#[tokio::test]
async fn session_store_contract_on_redis() {
    let server = RedisServer::start();
    session_store_contract(Arc::new(Redis::open(&server.url()).unwrap().session_store())).await;
}

/// A session one instance holds (it served a request of it) is gone there too once another
/// instance ended it: the holder asks the store on every request.
async fn a_session_ended_elsewhere_is_gone_where_it_was_held(store: Arc<dyn SessionStore>) {
    let build = || builder().session_store(Arc::clone(&store)).build().unwrap();
    let (one, two) = (Instance::start(build()).await, Instance::start(build()).await);
    let mut client = Legacy::new();
    let init = json!({ "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "c", "version": "1" } });
    assert_eq!(client.request(&one.url, 1, "initialize", init).await.0, 200);
    let plain = json!({ "name": "plain", "arguments": {} });
    let (status, messages) = client.request(&two.url, 2, "tools/call", plain.clone()).await;
    assert_eq!((status, &response(&messages, 2)["result"]["content"][0]["text"]), (200, &json!("plain")));
    let deleted = client.http.delete(&one.url).header("mcp-session-id", client.session.clone().unwrap()).send();
    assert_eq!(deleted.await.unwrap().status().as_u16(), 200);
    let (status, messages) = client.request(&two.url, 3, "tools/call", plain).await;
    assert_eq!(status, 404, "{messages:?}");
}

#[tokio::test]
async fn a_session_ended_elsewhere_is_gone_where_it_was_held_in_memory() {
    a_session_ended_elsewhere_is_gone_where_it_was_held(Arc::new(InMemorySessionStore::new())).await;
}

#[tokio::test]
async fn a_session_ended_elsewhere_is_gone_where_it_was_held_on_redis() {
    let server = RedisServer::start();
    let store = Redis::open(&server.url()).unwrap().session_store();
    a_session_ended_elsewhere_is_gone_where_it_was_held(Arc::new(store)).await;
}
