//! `mcp.client.operation.duration` and `mcp.client.session.duration` by the OpenTelemetry
//! semantic conventions for MCP, read back through the SDK's in-memory exporter. A file of its
//! own: the meter provider must be the process's global one before the client records anything.
#![cfg(all(feature = "otel", feature = "http"))]

use mcp_client::Client;
use mcp_client::types::{JsonObject, ObjectSchema, Tool};
use mcp_server::{Context, Server, ToolRoute};
use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use serde_json::json;

const BUCKETS: [f64; 14] = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// A real `mcp-server`: `echo` answers, `fail` is a tool error, `stuck` never answers.
async fn mcp_server() -> String {
    let tool = |name: &str| Tool::new(ObjectSchema::default(), name);
    let server = Server::builder("metrics", "1")
        .tool(ToolRoute::raw(tool("echo"), |_: Context, _: JsonObject| async move {
            Ok::<_, mcp_server::Error>("hi".to_owned())
        }))
        .tool(ToolRoute::raw(tool("fail"), |_: Context, _: JsonObject| async move {
            Err::<String, _>(mcp_server::Error::failed("no"))
        }))
        .tool(ToolRoute::raw(tool("stuck"), |_: Context, _: JsonObject| async move {
            std::future::pending::<()>().await;
            Ok::<_, mcp_server::Error>("never".to_owned())
        }))
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(mcp_server::http::serve(listener, server, Default::default()));
    url
}

/// Each data point of the histogram `name` that has every attribute of `wanted`: its count, its
/// bucket bounds and its attributes.
fn points(exporter: &InMemoryMetricExporter, name: &str, wanted: &[KeyValue]) -> Vec<(u64, Vec<f64>, Vec<KeyValue>)> {
    let mut found = Vec::new();
    for resource_metrics in exporter.get_finished_metrics().unwrap() {
        for scope in resource_metrics.scope_metrics() {
            for metric in scope.metrics().filter(|m| m.name() == name) {
                assert_eq!(metric.unit(), "s");
                if let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = metric.data() {
                    for point in histogram.data_points() {
                        let attributes: Vec<KeyValue> = point.attributes().cloned().collect();
                        if wanted.iter().all(|kv| attributes.contains(kv)) {
                            found.push((point.count(), point.bounds().collect(), attributes));
                        }
                    }
                }
            }
        }
    }
    found
}

#[tokio::test]
async fn operation_and_session_durations_are_recorded_with_the_conventions_attributes() {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder().with_reader(PeriodicReader::builder(exporter.clone()).build()).build();
    opentelemetry::global::set_meter_provider(provider.clone());
    let url = mcp_server().await;

    let client = Client::builder("metrics", "1").connect_http(&url).await.unwrap();
    for _ in 0..3 {
        client.call_tool("echo", json!({})).await.unwrap();
    }
    client.call_tool("fail", json!({})).await.unwrap();
    client.call_tool("nope", json!({})).await.unwrap_err();
    // A call its caller gives up on (the future dropped) still counts, as cancelled.
    let gave_up = tokio::time::timeout(std::time::Duration::from_millis(100), client.call_tool("stuck", json!({})));
    gave_up.await.unwrap_err();
    client.close().await;
    // A client dropped without `close` ends its session too.
    let dropped = Client::builder("metrics", "1").connect_http(&url).await.unwrap();
    drop(dropped);
    provider.force_flush().unwrap();

    let operation = "mcp.client.operation.duration";
    let echo = points(
        &exporter,
        operation,
        &[
            KeyValue::new("mcp.method.name", "tools/call"),
            KeyValue::new("gen_ai.tool.name", "echo"),
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("mcp.protocol.version", "2026-07-28"),
            KeyValue::new("network.transport", "tcp"),
            KeyValue::new("network.protocol.name", "http"),
        ],
    );
    let (count, bounds, attributes) = echo.last().expect("a data point for echo");
    assert_eq!(*count, 3);
    assert_eq!(*bounds, BUCKETS);
    assert!(!attributes.iter().any(|kv| kv.key.as_str() == "error.type"), "{attributes:?}");
    let failed = points(&exporter, operation, &[KeyValue::new("gen_ai.tool.name", "fail")]);
    let (count, _, attributes) = failed.last().expect("a data point for the tool error");
    assert_eq!(*count, 1);
    assert!(attributes.contains(&KeyValue::new("error.type", "tool_error")), "{attributes:?}");
    let unknown = points(
        &exporter,
        operation,
        &[
            KeyValue::new("gen_ai.tool.name", "nope"),
            KeyValue::new("error.type", "-32602"),
            KeyValue::new("rpc.response.status_code", "-32602"),
        ],
    );
    assert_eq!(unknown.last().expect("a data point for the unknown tool").0, 1);
    let cancelled = points(
        &exporter,
        operation,
        &[KeyValue::new("gen_ai.tool.name", "stuck"), KeyValue::new("error.type", "cancelled")],
    );
    assert_eq!(cancelled.last().expect("a data point for the cancelled call").0, 1);

    let sessions = points(
        &exporter,
        "mcp.client.session.duration",
        &[KeyValue::new("mcp.protocol.version", "2026-07-28"), KeyValue::new("network.transport", "tcp")],
    );
    let (count, bounds, attributes) = sessions.last().expect("a session data point");
    assert_eq!(*count, 2, "the closed client and the dropped one");
    assert_eq!(*bounds, BUCKETS);
    assert!(!attributes.iter().any(|kv| kv.key.as_str() == "error.type"), "{attributes:?}");
}
