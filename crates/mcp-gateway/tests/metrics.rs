//! `mcp.gateway.upstream.duration` and `mcp.gateway.upstream.up` (feature `otel`), read back
//! through the SDK's in-memory exporter. A file of its own: the meter provider must be the
//! process's global one before the gateway records anything.
#![cfg(feature = "otel")]

use mcp_client::EraPreference;
use mcp_gateway::Gateway;
use mcp_server::{Context, Error, Server, ToolRoute};
use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use serde_json::json;

mod common;
use common::{Text, Upstream, client, config, serve};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_upstream_request_is_timed_by_upstream_method_and_outcome() {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder().with_reader(PeriodicReader::builder(exporter.clone()).build()).build();
    opentelemetry::global::set_meter_provider(provider.clone());
    let echo = Server::builder("echo", "1.0.0")
        .tool(ToolRoute::new("echo", |_: Context, Text { text }: Text| async move {
            match text.as_str() {
                "refuse" => Err(Error::invalid_params("refused on purpose")),
                _ => Ok::<_, Error>(text),
            }
        }))
        .build()
        .unwrap();
    let upstream = Upstream::start(echo, 0);
    let gateway =
        Gateway::start(&config(&format!("[[upstream]]\nname = \"e\"\nurl = \"{}\"\n", upstream.url))).await.unwrap();
    let client = client(&serve(&gateway).await, EraPreference::Modern).await;
    client.call_tool("e_echo", json!({"text": "hi"})).await.unwrap();
    client.call_tool("e_echo", json!({"text": "hi again"})).await.unwrap();
    let refused = client.call_tool("e_echo", json!({"text": "refuse"})).await.unwrap_err().to_string();
    assert!(refused.contains("refused on purpose"), "{refused}");
    provider.force_flush().unwrap();

    let upstream_attribute = KeyValue::new("mcp.gateway.upstream", "e");
    let has = |attributes: &mut dyn Iterator<Item = &KeyValue>, wanted: &[&KeyValue]| {
        let attributes: Vec<&KeyValue> = attributes.collect();
        wanted.iter().all(|kv| attributes.contains(kv))
    };
    // The latest export holds every point (cumulative).
    let exports = exporter.get_finished_metrics().unwrap();
    let last = exports.last().expect("an export");
    let (mut ok, mut failed, mut up) = (0, 0, None);
    for scope in last.scope_metrics() {
        for metric in scope.metrics() {
            match (metric.name(), metric.data()) {
                ("mcp.gateway.upstream.duration", AggregatedMetrics::F64(MetricData::Histogram(histogram))) => {
                    assert_eq!(metric.unit(), "s");
                    let call = KeyValue::new("mcp.method.name", "tools/call");
                    for point in histogram.data_points() {
                        let refused = KeyValue::new("error.type", "-32602");
                        if has(&mut point.attributes(), &[&upstream_attribute, &call, &refused]) {
                            failed += point.count();
                        } else if has(&mut point.attributes(), &[&upstream_attribute, &call])
                            && !point.attributes().any(|kv| kv.key.as_str() == "error.type")
                        {
                            ok += point.count();
                        }
                    }
                }
                ("mcp.gateway.upstream.up", AggregatedMetrics::U64(MetricData::Gauge(gauge))) => {
                    for point in gauge.data_points() {
                        if point.attributes().any(|kv| *kv == upstream_attribute) {
                            up = Some(point.value());
                        }
                    }
                }
                _ => {}
            }
        }
    }
    assert_eq!((ok, failed), (2, 1), "two calls answered, one refused by the upstream");
    assert_eq!(up, Some(1), "the upstream is up");
}
