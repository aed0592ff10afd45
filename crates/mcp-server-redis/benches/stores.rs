//! Tasks and sessions per second through the Redis stores against the in-memory defaults, in
//! the same run, on a `redis-server` started on a loopback port (as the tests do).
//!
//! ```text
//! cargo bench -p mcp-server-redis --bench stores
//! ```
//! A task is its life as the server drives it: create, read, one update (completion) and one
//! read of the result; a session is one save (`initialize`) and one load (the next request).
//! Each round trip to Redis is on loopback, on the same machine as the benchmark: the ratio is
//! the cost of a shared store, not a capacity figure. The cost of a `tools/call` through the
//! load balancer against one instance is measured by `tests/scale/run.sh` (`lb-overhead`),
//! which is where haproxy runs.

#[path = "../tests/support/mod.rs"]
#[allow(unused_imports)]
mod support;

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcp_server::tasks::TaskRecord;
use mcp_server::{InMemorySessionStore, InMemoryTaskStore, Principal, SessionRecord, SessionStore, TaskStore};
use mcp_server_redis::Redis;
use mcp_types::ext::tasks::TaskStatus;
use serde_json::json;

/// A name and its task and session stores.
type Stores = (&'static str, Arc<dyn TaskStore>, Arc<dyn SessionStore>);

fn session_record() -> SessionRecord {
    serde_json::from_value(json!({
        "principal": Principal::new("bench"),
        "protocol_version": "2025-11-25",
        "initialized": true,
        "client_capabilities": { "elicitation": {} },
        "client_info": { "name": "bench-client", "version": "1.0.0" },
        "log_level": null,
        "subscriptions": [],
    }))
    .expect("a session record")
}

async fn task_life(store: &dyn TaskStore) {
    let task = TaskRecord::new(Principal::new("bench"), Some(Duration::from_secs(60)), Duration::from_secs(1));
    store.create(task.clone()).await.unwrap();
    store.get(&task.id).await.unwrap().unwrap();
    store
        .update(&task.id, &mut |t| {
            t.status = TaskStatus::Completed;
            t.touch();
            true
        })
        .await
        .unwrap();
    store.get(&task.id).await.unwrap().unwrap();
}

fn stores(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let server = support::RedisServer::start();
    let redis = runtime.block_on(async { Redis::open(&server.url()).unwrap().with_prefix("bench:") });
    let stores: [Stores; 2] = [
        ("in-memory", Arc::new(InMemoryTaskStore::with_capacity(1_000_000)), Arc::new(InMemorySessionStore::new())),
        ("redis", Arc::new(redis.task_store()), Arc::new(redis.session_store())),
    ];

    let mut tasks = c.benchmark_group("tasks");
    tasks.throughput(Throughput::Elements(1));
    for (name, store, _) in &stores {
        tasks.bench_function(*name, |b| b.iter(|| runtime.block_on(task_life(store.as_ref()))));
    }
    tasks.finish();

    let mut sessions = c.benchmark_group("sessions");
    sessions.throughput(Throughput::Elements(1));
    let record = session_record();
    for (name, _, store) in &stores {
        let mut n = 0u64;
        sessions.bench_function(*name, |b| {
            b.iter(|| {
                n += 1;
                let id = format!("session-{n}");
                runtime.block_on(async {
                    store.save(&id, &record, Duration::from_secs(60)).await.unwrap();
                    store.load(&id, Duration::from_secs(60)).await.unwrap().unwrap();
                })
            })
        });
    }
    sessions.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = stores
}
criterion_main!(benches);
