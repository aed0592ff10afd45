//! `mcp.server.operation.duration` by the OpenTelemetry semantic conventions for MCP, read back
//! through the SDK's in-memory exporter. A file of its own: the meter provider must be the
//! process's global one before the server records anything.
#![cfg(feature = "otel")]

mod common;

use common::*;
use mcp_server::{Context, Error, Server, ToolRoute};
use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use serde_json::json;

#[tokio::test]
async fn operation_durations_are_recorded_with_the_conventions_attributes() {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder().with_reader(PeriodicReader::builder(exporter.clone()).build()).build();
    opentelemetry::global::set_meter_provider(provider.clone());
    let server = Server::builder("telemetry", "1")
        .tool(ToolRoute::new("echo", |_ctx: Context, args: Echo| async move { Ok::<_, Error>(args.text) }))
        .build()
        .unwrap();
    let mut client = MemoryClient::start(&server);
    for id in 0..5 {
        let meta = meta();
        let response = client
            .ask(request(id, "tools/call", json!({ "name": "echo", "arguments": { "text": "metric" }, "_meta": meta })))
            .await;
        assert_eq!(text(&response), "metric");
    }
    let unknown = client.ask(request(9, "tools/call", json!({ "name": "nope", "_meta": meta() }))).await;
    assert_error(&unknown, 9, -32602);
    // Refused before it is served: `_meta` lacks the client capabilities.
    let refused = client
        .ask(request(10, "tools/list", json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": MODERN } })))
        .await;
    assert_error(&refused, 10, -32602);
    provider.force_flush().unwrap();

    let sums = |name: &str, wanted: KeyValue| {
        let mut found = None;
        for resource_metrics in exporter.get_finished_metrics().unwrap() {
            for scope in resource_metrics.scope_metrics() {
                for metric in scope.metrics().filter(|m| m.name() == name) {
                    match metric.data() {
                        AggregatedMetrics::U64(MetricData::Sum(sum)) => {
                            for point in sum.data_points().filter(|p| p.attributes().any(|kv| *kv == wanted)) {
                                found = Some(point.value() as i64);
                            }
                        }
                        AggregatedMetrics::I64(MetricData::Sum(sum)) => {
                            for point in sum.data_points().filter(|p| p.attributes().any(|kv| *kv == wanted)) {
                                found = Some(point.value());
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        found
    };
    assert_eq!(sums("mcp.server.request.refused", KeyValue::new("reason", "-32602")), Some(1));
    assert_eq!(sums("mcp.server.session.active", KeyValue::new("network.transport", "pipe")), Some(1));

    let points = |wanted: &[KeyValue]| {
        let mut found = Vec::new();
        for resource_metrics in exporter.get_finished_metrics().unwrap() {
            for scope in resource_metrics.scope_metrics() {
                for metric in scope.metrics().filter(|m| m.name() == "mcp.server.operation.duration") {
                    assert_eq!(metric.unit(), "s");
                    if let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = metric.data() {
                        for point in histogram.data_points() {
                            let attributes: Vec<KeyValue> = point.attributes().cloned().collect();
                            if wanted.iter().all(|kv| attributes.contains(kv)) {
                                found.push((point.count(), point.bounds().collect::<Vec<f64>>(), attributes));
                            }
                        }
                    }
                }
            }
        }
        found
    };
    let echo = points(&[
        KeyValue::new("mcp.method.name", "tools/call"),
        KeyValue::new("gen_ai.tool.name", "echo"),
        KeyValue::new("gen_ai.operation.name", "execute_tool"),
        KeyValue::new("mcp.protocol.version", MODERN),
        KeyValue::new("network.transport", "pipe"),
    ]);
    let (count, bounds, attributes) = echo.last().expect("a data point for echo");
    assert_eq!(*count, 5);
    assert_eq!(*bounds, [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0]);
    assert!(!attributes.iter().any(|kv| kv.key.as_str() == "error.type"), "{attributes:?}");
    // A tool the server does not serve is recorded as `_OTHER`, never by the name the client sent.
    let failed = points(&[KeyValue::new("gen_ai.tool.name", "_OTHER"), KeyValue::new("error.type", "-32602")]);
    assert_eq!(failed.last().expect("a data point for the unknown tool").0, 1);
    assert!(points(&[KeyValue::new("gen_ai.tool.name", "nope")]).is_empty());
}
