//! The metrics stay bounded whatever names a client sends: 10,000 calls of random tool names
//! make no series of their own (they are recorded as `_OTHER`), read back through the SDK's
//! in-memory exporter. A file of its own: the meter provider must be the process's global one
//! before the server records anything.
#![cfg(feature = "otel")]

mod common;

use std::collections::BTreeSet;

use common::*;
use mcp_server::{Context, Error, Server, ToolRoute};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use serde_json::json;

/// A tool name no server serves: 16 random bytes, hex.
fn random_name() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).unwrap();
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[tokio::test]
async fn ten_thousand_random_tool_names_add_one_series() {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder().with_reader(PeriodicReader::builder(exporter.clone()).build()).build();
    opentelemetry::global::set_meter_provider(provider.clone());
    let server = Server::builder("telemetry", "1")
        .tool(ToolRoute::new("echo", |_ctx: Context, args: Echo| async move { Ok::<_, Error>(args.text) }))
        .build()
        .unwrap();
    let mut client = MemoryClient::start(&server);
    let served = client
        .ask(request(0, "tools/call", json!({ "name": "echo", "arguments": { "text": "hi" }, "_meta": meta() })))
        .await;
    assert_eq!(text(&served), "hi");
    for id in 1..=10_000 {
        let refused = client.ask(request(id, "tools/call", json!({ "name": random_name(), "_meta": meta() }))).await;
        assert_error(&refused, id, -32602);
    }
    provider.force_flush().unwrap();

    // Every distinct attribute set of the duration histogram is one series in a backend.
    let mut series = BTreeSet::new();
    let mut tool_names = BTreeSet::new();
    let mut calls = 0;
    for resource_metrics in exporter.get_finished_metrics().unwrap() {
        for scope in resource_metrics.scope_metrics() {
            for metric in scope.metrics().filter(|m| m.name() == "mcp.server.operation.duration") {
                if let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = metric.data() {
                    for point in histogram.data_points() {
                        let mut attributes: Vec<String> =
                            point.attributes().map(|kv| format!("{}={}", kv.key, kv.value)).collect();
                        attributes.sort();
                        if let Some(name) = point.attributes().find(|kv| kv.key.as_str() == "gen_ai.tool.name") {
                            tool_names.insert(name.value.to_string());
                        }
                        calls = calls.max(point.count());
                        series.insert(attributes);
                    }
                }
            }
        }
    }
    // Counted first, and not listed: a failure here would list thousands of names.
    assert_eq!(series.len(), 2, "series of mcp.server.operation.duration");
    assert_eq!(tool_names, BTreeSet::from(["_OTHER".to_owned(), "echo".to_owned()]));
    assert_eq!(calls, 10_000, "the unknown names share one series");
}
