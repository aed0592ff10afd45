//! A Redis store call is a client span, a child of the MCP request it serves.

mod support;

use std::sync::Arc;
use std::time::Duration;

use mcp_server_redis::Redis;
use opentelemetry::trace::{SpanKind, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::json;
use support::*;
use tracing_subscriber::layer::SubscriberExt as _;

#[tokio::test]
async fn a_task_stores_call_is_a_child_span_of_the_tool_call() {
    let redis_server = RedisServer::start();
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));

    let redis = Redis::open(&redis_server.url()).unwrap().with_timeout(Duration::from_secs(5));
    let server = builder().task_store(Arc::new(redis.task_store())).build().unwrap();
    let mut client = Client::start(&server);
    let created = client.call("forever", json!({})).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let _ = provider.force_flush();

    let spans = exporter.get_finished_spans().unwrap();
    let all: Vec<_> = spans.iter().map(|s| s.name.to_string()).collect();
    let call = spans
        .iter()
        .find(|s| s.name == "tools/call forever")
        .unwrap_or_else(|| panic!("the tool call's span among {all:?}"));
    let store_calls: Vec<_> = spans
        .iter()
        .filter(|s| s.attributes.iter().any(|kv| kv.key.as_str() == "db.system.name" && kv.value.as_str() == "redis"))
        .collect();
    let names: Vec<_> = store_calls.iter().map(|s| s.name.to_string()).collect();
    let children: Vec<_> = store_calls.iter().filter(|s| s.parent_span_id == call.span_context.span_id()).collect();
    assert!(!children.is_empty(), "a Redis call under the tool call among {names:?}");
    for child in children {
        assert_eq!(child.span_kind, SpanKind::Client);
        assert_eq!(child.span_context.trace_id(), call.span_context.trace_id());
        assert!(child.name.ends_with("(task store)"), "{}", child.name);
    }
}
