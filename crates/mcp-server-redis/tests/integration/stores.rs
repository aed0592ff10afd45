//! Each seam's contract, run against the in-memory default and against a real `redis-server`
//! (started by `support` on a loopback port); then servers sharing the Redis stores, and Redis
//! going down and coming back.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use mcp_server::tasks::TaskRecord;
use mcp_server::{
    InMemoryTaskStore, InMemoryUsedStates, Options, Principal, Server, StateKey, StateKeyring, StateUse, TaskStore,
    UseVerdict, UsedStateStore,
};
use mcp_server_redis::Redis;
use mcp_types::ext::tasks::TaskStatus;
use serde_json::{Value, json};
use support::*;

fn redis(server: &RedisServer) -> Redis {
    Redis::open(&server.url()).unwrap().with_timeout(Duration::from_millis(500))
}

fn record(ttl: Option<Duration>) -> TaskRecord {
    TaskRecord::new(Principal::new("alice"), ttl, Duration::from_millis(100))
}

// ------------------------------------------------------------------ TaskStore

/// What every task store does: create once, get, watch the current state then each change,
/// update atomically under contention, remove, and forget expired tasks.
async fn task_store_contract(store: Arc<dyn TaskStore>) {
    let task = record(None);
    store.create(task.clone()).await.unwrap();
    assert_eq!(store.get(&task.id).await.unwrap(), Some(task.clone()));
    let again = store.create(task.clone()).await.unwrap_err();
    assert!(again.0.contains("exists already"), "{again}");
    assert_eq!(store.get("no-such-task").await.unwrap(), None);
    assert_eq!(store.update("no-such-task", &mut |_| true).await.unwrap(), None);
    assert!(store.watch("no-such-task").await.unwrap().next().await.is_none());

    let mut states = store.watch(&task.id).await.unwrap();
    assert_eq!(states.next().await.unwrap(), task);
    let unchanged = store.update(&task.id, &mut |t| t.status == TaskStatus::Cancelled).await.unwrap();
    assert_eq!(unchanged, Some(task.clone()));
    let updated = store
        .update(&task.id, &mut |t| {
            t.status = TaskStatus::InputRequired;
            true
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(updated.status, TaskStatus::InputRequired);
    let seen = tokio::time::timeout(Duration::from_secs(5), states.next()).await.unwrap().unwrap();
    assert_eq!(seen, updated, "the watcher sees the change, not the unchanged update");

    // Concurrent changes all land: none is lost to another.
    let writers = (0..16).map(|n| {
        let store = Arc::clone(&store);
        let id = task.id.clone();
        tokio::spawn(async move {
            store
                .update(&id, &mut |t| {
                    t.answers.insert(format!("k{n}"), json!(n));
                    true
                })
                .await
                .unwrap()
                .unwrap();
        })
    });
    for writer in writers.collect::<Vec<_>>() {
        writer.await.unwrap();
    }
    assert_eq!(store.get(&task.id).await.unwrap().unwrap().answers.len(), 16);

    store.remove(&task.id).await.unwrap();
    assert_eq!(store.get(&task.id).await.unwrap(), None);
    let ended = tokio::time::timeout(Duration::from_secs(5), async { while states.next().await.is_some() {} }).await;
    assert!(ended.is_ok(), "a watch ends when its task is removed");

    // Leases: none until renewed, held while renewed, lapsed once not renewed in time.
    let leased = record(None);
    store.create(leased.clone()).await.unwrap();
    assert!(!store.lease_held(&leased.id).await.unwrap());
    store.renew_lease(&leased.id, Duration::from_secs(60)).await.unwrap();
    assert!(store.lease_held(&leased.id).await.unwrap());
    store.renew_lease(&leased.id, Duration::from_millis(200)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!store.lease_held(&leased.id).await.unwrap());

    // Expiry: an expired task is unknown, and a live one is forgotten once its TTL passes.
    let mut expired = record(Some(Duration::from_millis(1)));
    expired.created_at_ms -= 10;
    store.create(expired.clone()).await.unwrap();
    assert_eq!(store.get(&expired.id).await.unwrap(), None);
    assert_eq!(store.update(&expired.id, &mut |_| true).await.unwrap(), None);
    let short = record(Some(Duration::from_millis(300)));
    store.create(short.clone()).await.unwrap();
    assert!(store.get(&short.id).await.unwrap().is_some());
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(store.get(&short.id).await.unwrap(), None);
}

#[tokio::test]
async fn task_store_contract_in_memory() {
    task_store_contract(Arc::new(InMemoryTaskStore::new())).await;
}

#[tokio::test]
async fn task_store_contract_on_redis() {
    let server = RedisServer::start();
    task_store_contract(Arc::new(redis(&server).task_store())).await;
}

#[tokio::test]
async fn redis_task_keys_expire_with_their_task_or_after_the_retention() {
    let server = RedisServer::start();
    let stores = redis(&server).with_prefix("ttl-test:").with_task_retention(Duration::from_secs(60));
    let store = stores.task_store();
    let (with_ttl, without) = (record(Some(Duration::from_secs(30))), record(None));
    store.create(with_ttl.clone()).await.unwrap();
    store.create(without.clone()).await.unwrap();
    let client = redis::Client::open(server.url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let ttl = |id: &str| redis::cmd("PTTL").arg(format!("ttl-test:task:{id}")).clone();
    let with_ttl_ms: i64 = ttl(&with_ttl.id).query_async(&mut connection).await.unwrap();
    let without_ms: i64 = ttl(&without.id).query_async(&mut connection).await.unwrap();
    assert!((29_000..=30_000).contains(&with_ttl_ms), "{with_ttl_ms}");
    assert!((59_000..=60_000).contains(&without_ms), "{without_ms}");
    // An update keeps the expiry.
    store.update(&with_ttl.id, &mut |_| true).await.unwrap();
    let after: i64 = ttl(&with_ttl.id).query_async(&mut connection).await.unwrap();
    assert!((28_000..=30_000).contains(&after), "{after}");
}

// ------------------------------------------------------------------ UsedStateStore

/// What every used-state store does: the first use wins, once, even when raced.
async fn used_state_contract(store: Arc<dyn UsedStateStore>) {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let state = StateUse { issued_secs: now, nonce: 7, expires_secs: now + 600 };
    assert_eq!(store.first_use(state).await.unwrap(), UseVerdict::First);
    assert_eq!(store.first_use(state).await.unwrap(), UseVerdict::Repeated);
    let other = StateUse { nonce: 8, ..state };
    assert_eq!(store.first_use(other).await.unwrap(), UseVerdict::First);

    let raced = StateUse { nonce: 9, ..state };
    let uses = (0..16).map(|_| {
        let store = Arc::clone(&store);
        tokio::spawn(async move { store.first_use(raced).await.unwrap() })
    });
    let mut firsts = 0;
    for verdict in uses.collect::<Vec<_>>() {
        firsts += usize::from(verdict.await.unwrap() == UseVerdict::First);
    }
    assert_eq!(firsts, 1, "exactly one of sixteen racing uses is the first");
}

#[tokio::test]
async fn used_state_contract_in_memory() {
    used_state_contract(Arc::new(InMemoryUsedStates::with_capacity(100))).await;
}

#[tokio::test]
async fn used_state_contract_on_redis() {
    let server = RedisServer::start();
    used_state_contract(Arc::new(redis(&server).used_state_store())).await;
}

// ------------------------------------------------------------------ servers sharing the stores

/// A task created through one instance is polled, answered and cancelled through another.
async fn instances_share_tasks(store: Arc<dyn TaskStore>) {
    let one = builder().task_store(Arc::clone(&store)).build().unwrap();
    let two = builder().task_store(store).build().unwrap();
    let (mut on_one, mut on_two) = (Client::start(&one), Client::start(&two));
    let task_id = on_one.start_task("two_inputs").await;
    on_two.until(&task_id, |task| task["inputRequests"].get("first").is_some()).await;
    on_two.update(&task_id, json!({ "first": accept("first", "Ada") })).await;
    on_one.until(&task_id, |task| task["inputRequests"].get("second").is_some()).await;
    on_one.update(&task_id, json!({ "second": accept("second", "Bob") })).await;
    let done = on_two.until(&task_id, |task| task["status"] == "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "Ada then Bob", "{done}");

    let task_id = on_one.start_task("forever").await;
    let cancelled = on_two.task("tasks/cancel", &task_id).await;
    assert!(cancelled.get("result").is_some(), "{cancelled}");
    assert_eq!(on_one.task("tasks/get", &task_id).await["result"]["status"], "cancelled");
}

#[tokio::test]
async fn instances_share_tasks_in_memory() {
    instances_share_tasks(Arc::new(InMemoryTaskStore::new())).await;
}

#[tokio::test]
async fn instances_share_tasks_on_redis() {
    let server = RedisServer::start();
    instances_share_tasks(Arc::new(redis(&server).task_store())).await;
}

/// Instances one and two with `lease` on `stores`, and a never-ending task started on one. One runs
/// on the runtime returned: shutting it down stands for the process dying (its handler and
/// heartbeat stop with it).
async fn task_on_a_mortal_instance(
    stores: [Arc<dyn TaskStore>; 2],
    lease: Duration,
) -> (tokio::runtime::Runtime, Server, String) {
    let mut options = Options::default();
    options.task_lease = lease;
    let [store_one, store_two] = stores;
    let one = builder().task_store(store_one).options(options.clone()).build().unwrap();
    let two = builder().task_store(store_two).options(options).build().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let (started, task_id) = tokio::sync::oneshot::channel();
    runtime.spawn(async move {
        let mut on_one = Client::start(&one);
        let _ = started.send(on_one.start_task("forever").await);
        std::future::pending::<()>().await;
    });
    let task_id = task_id.await.unwrap();
    (runtime, two, task_id)
}

/// A task whose instance dies is reported `failed` by another once its lease lapses, never left
/// `working` until its TTL.
async fn a_dead_instances_task_fails_after_its_lease(stores: [Arc<dyn TaskStore>; 2]) {
    let (runtime, two, task_id) = task_on_a_mortal_instance(stores, Duration::from_millis(1500)).await;
    let mut on_two = Client::start(&two);
    // While its instance lives, the heartbeat keeps the task working past several leases.
    tokio::time::sleep(Duration::from_millis(3000)).await;
    assert_eq!(on_two.task("tasks/get", &task_id).await["result"]["status"], "working");

    runtime.shutdown_background();
    let failed = on_two.until(&task_id, |task| task["status"] != "working").await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], INTERNAL_ERROR, "{failed}");
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(message.contains("renewed no lease for 1500 ms"), "{message}");
    assert_eq!(failed["statusMessage"], message);
    // Failed for good: a cancellation changes nothing.
    on_two.task("tasks/cancel", &task_id).await;
    assert_eq!(on_two.task("tasks/get", &task_id).await["result"]["status"], "failed");
}

/// A `subscriptions/listen` on another instance watching the task hears it fail once the lease
/// of its dead instance lapses, although nobody reads the task.
async fn a_listener_hears_a_dead_instances_task_fail(stores: [Arc<dyn TaskStore>; 2]) {
    let (runtime, two, task_id) = task_on_a_mortal_instance(stores, Duration::from_millis(600)).await;
    let (server_end, mut listener) = mcp_server::Connection::memory();
    tokio::spawn(async move { two.serve(server_end).await });
    let listen = json!({
        "jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {
            "notifications": { "taskIds": [task_id] },
            "_meta": { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": tasks_caps() },
        },
    });
    listener.sender.send(listen.to_string()).await.unwrap();
    let mut statuses = Vec::new();
    runtime.shutdown_background();
    loop {
        let text = tokio::time::timeout(PATIENCE, listener.receiver.recv()).await.expect("a message").unwrap();
        let message: Value = serde_json::from_str(&text).unwrap();
        if message["method"] != "notifications/tasks" {
            continue;
        }
        statuses.push(message["params"]["status"].as_str().unwrap().to_owned());
        if message["params"]["status"] == "failed" {
            assert!(message["params"]["error"]["message"].as_str().unwrap().contains("renewed no lease"), "{message}");
            break;
        }
    }
    assert_eq!(statuses.first().map(String::as_str), Some("working"), "the current state first: {statuses:?}");
}

#[tokio::test]
async fn a_listener_hears_a_dead_instances_task_fail_in_memory() {
    let store: Arc<dyn TaskStore> = Arc::new(InMemoryTaskStore::new());
    a_listener_hears_a_dead_instances_task_fail([Arc::clone(&store), store]).await;
}

#[tokio::test]
async fn a_listener_hears_a_dead_instances_task_fail_on_redis() {
    let server = RedisServer::start();
    a_listener_hears_a_dead_instances_task_fail([
        Arc::new(redis(&server).task_store()),
        Arc::new(redis(&server).task_store()),
    ])
    .await;
}

#[tokio::test]
async fn a_dead_instances_task_fails_after_its_lease_in_memory() {
    let store: Arc<dyn TaskStore> = Arc::new(InMemoryTaskStore::new());
    a_dead_instances_task_fails_after_its_lease([Arc::clone(&store), store]).await;
}

#[tokio::test]
async fn a_dead_instances_task_fails_after_its_lease_on_redis() {
    let server = RedisServer::start();
    // A connection each, as two processes have: the dead one's dies with it.
    a_dead_instances_task_fails_after_its_lease([
        Arc::new(redis(&server).task_store()),
        Arc::new(redis(&server).task_store()),
    ])
    .await;
}

/// A single-use state used on one instance is refused on another; states move between
/// instances holding the same keys.
async fn instances_share_used_states(store: Arc<dyn UsedStateStore>) {
    let mut options = Options::default();
    options.state_single_use = true;
    let instance = || {
        builder()
            .state_keyring(StateKeyring::new("k1", StateKey::from_secret(b"shared")))
            .used_state_store(Arc::clone(&store))
            .options(options.clone())
            .build()
            .unwrap()
    };
    let (one, two) = (instance(), instance());
    let (mut on_one, mut on_two) = (Client::start(&one), Client::start(&two));
    let response = on_one.call("two_questions", json!({})).await;
    let state = response["result"]["requestState"].as_str().unwrap().to_owned();
    let retry = json!({ "inputResponses": { "name": accept("name", "Ada") }, "requestState": state });
    let response = on_two.call("two_questions", retry.clone()).await;
    assert_eq!(response["result"]["resultType"], "input_required", "{response}");
    let response = on_one.call("two_questions", retry).await;
    assert_error(&response, INVALID_PARAMS, "already used");
}

#[tokio::test]
async fn instances_share_used_states_in_memory() {
    instances_share_used_states(Arc::new(InMemoryUsedStates::with_capacity(100))).await;
}

#[tokio::test]
async fn instances_share_used_states_on_redis() {
    let server = RedisServer::start();
    instances_share_used_states(Arc::new(redis(&server).used_state_store())).await;
}

// ------------------------------------------------------------------ Redis down, then back

#[tokio::test]
async fn with_redis_down_requests_that_need_it_fail_with_a_clear_error_and_recover_when_it_returns() {
    let mut server = RedisServer::start();
    let stores = redis(&server);
    let mut options = Options::default();
    options.state_single_use = true;
    let instance = builder()
        .task_store(Arc::new(stores.task_store()))
        .used_state_store(Arc::new(stores.used_state_store()))
        .options(options)
        .build()
        .unwrap();
    let mut client = Client::start(&instance);
    let task_id = client.start_task("forever").await;
    let first_round = client.call("two_questions", json!({})).await;
    let state = first_round["result"]["requestState"].as_str().unwrap().to_owned();

    server.stop();
    let address = format!("Redis task store at 127.0.0.1:{}", server.url().rsplit(':').next().unwrap());
    let response = client.task("tasks/get", &task_id).await;
    assert_error(&response, INTERNAL_ERROR, &address);
    let response = client.call("forever", json!({})).await;
    assert_error(&response, INTERNAL_ERROR, "Redis task store at 127.0.0.1:");
    let retry = json!({ "inputResponses": { "name": accept("name", "Ada") }, "requestState": state });
    let response = client.call("two_questions", retry.clone()).await;
    assert_error(&response, INTERNAL_ERROR, "Redis used-state store at 127.0.0.1:");
    // What needs no store is still answered.
    let response = client.call("plain", json!({})).await;
    assert_eq!(response["result"]["content"][0]["text"], "plain", "{response}");

    // Back, empty (persistence is off): new work goes through again.
    server.restart();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let task_id = loop {
        let response = client.call("forever", json!({})).await;
        if response["result"]["resultType"] == "task" {
            break response["result"]["taskId"].as_str().unwrap().to_owned();
        }
        assert!(std::time::Instant::now() < deadline, "Redis is back but tasks still fail: {response}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(client.task("tasks/get", &task_id).await["result"]["status"], "working");
    let response = client.call("two_questions", retry.clone()).await;
    assert_eq!(response["result"]["resultType"], "input_required", "{response}");
    let response = client.call("two_questions", retry).await;
    assert_error(&response, INVALID_PARAMS, "already used");
}

#[tokio::test]
async fn a_task_watch_survives_a_lost_connection_and_sees_changes_made_after_it() {
    let server = RedisServer::start();
    let store = redis(&server).task_store();
    let task = record(None);
    store.create(task.clone()).await.unwrap();
    let mut states = store.watch(&task.id).await.unwrap();
    assert_eq!(states.next().await.unwrap().status, TaskStatus::Working);
    // Redis drops every pub/sub connection (as on a network cut); the data stays.
    let client = redis::Client::open(server.url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let killed: i64 =
        redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("pubsub").query_async(&mut connection).await.unwrap();
    assert_eq!(killed, 1, "the watch's own connection");
    store
        .update(&task.id, &mut |t| {
            t.status = TaskStatus::Completed;
            true
        })
        .await
        .unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(10), states.next()).await.expect("the watch goes on");
    assert_eq!(seen.unwrap().status, TaskStatus::Completed);
}
