//! `mcp.gateway.upstream.duration` and `mcp.gateway.upstream.up` (feature `otel`), read back
//! through the SDK's in-memory exporter. A file of its own: the meter provider must be the
//! process's global one before the gateway records anything.
#![cfg(feature = "otel")]

use std::sync::{Arc, Mutex};

use mcp_client::EraPreference;
use mcp_gateway::Gateway;
use mcp_server::dynamic::{ToolFuture, ToolSource};
use mcp_server::types::{CallToolRequestParams, ObjectSchema, Tool};
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
    // An upstream that lists `e_echo` too, once the gateway runs: refused, and counted.
    let late_tools = Arc::new(Late(Mutex::new(vec!["marker0".into()])));
    let late_server =
        Server::builder("late", "1.0.0").tool_source(Arc::clone(&late_tools) as Arc<dyn ToolSource>).build().unwrap();
    let late = Upstream::start(late_server.clone(), 0);
    let gateway = Gateway::start(&config(&format!(
        "[[upstream]]\nname = \"e\"\nurl = \"{}\"\n[[upstream]]\nname = \"late\"\nurl = \"{}\"\nprefix = \"\"\n",
        upstream.url, late.url
    )))
    .await
    .unwrap();
    let client = client(&serve(&gateway).await, EraPreference::Modern).await;
    late_tools.0.lock().unwrap().extend(["e_echo".to_owned(), "marker1".to_owned()]);
    late_server.notify_tools_list_changed();
    common::eventually("the re-list", async || {
        client.clear_cache();
        client.all_tools().await.unwrap().iter().any(|t| t.name == "marker1")
    })
    .await;
    client.call_tool("e_echo", json!({"text": "hi"})).await.unwrap();
    client.call_tool("e_echo", json!({"text": "hi again"})).await.unwrap();
    let refused = client.call_tool("e_echo", json!({"text": "refuse"})).await.unwrap_err().to_string();
    assert!(refused.contains("refused on purpose"), "{refused}");
    // A name no upstream serves: the gateway's own request metrics record it as `_OTHER`.
    client.call_tool("e_invented_7f3a", json!({})).await.unwrap_err();
    provider.force_flush().unwrap();

    let upstream_attribute = KeyValue::new("mcp.gateway.upstream", "e");
    let has = |attributes: &mut dyn Iterator<Item = &KeyValue>, wanted: &[&KeyValue]| {
        let attributes: Vec<&KeyValue> = attributes.collect();
        wanted.iter().all(|kv| attributes.contains(kv))
    };
    // The latest export holds every point (cumulative).
    let exports = exporter.get_finished_metrics().unwrap();
    let last = exports.last().expect("an export");
    let (mut ok, mut failed, mut up, mut refused) = (0, 0, None, 0);
    let mut served_tool_names = std::collections::BTreeSet::new();
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
                ("mcp.server.operation.duration", AggregatedMetrics::F64(MetricData::Histogram(histogram))) => {
                    for point in histogram.data_points() {
                        let name = point.attributes().find(|kv| kv.key.as_str() == "gen_ai.tool.name");
                        served_tool_names.extend(name.map(|kv| kv.value.to_string()));
                    }
                }
                ("mcp.gateway.ownership.refused", AggregatedMetrics::U64(MetricData::Sum(sum))) => {
                    let (kind, late) = (KeyValue::new("kind", "tool"), KeyValue::new("mcp.gateway.upstream", "late"));
                    for point in sum.data_points() {
                        if has(&mut point.attributes(), &[&kind, &late]) {
                            refused += point.value();
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
    // The gateway's `e_echo` and, in this process too, the upstream's `echo`; never the invented name.
    let expected = ["_OTHER", "e_echo", "echo"].map(str::to_owned);
    assert_eq!(served_tool_names, std::collections::BTreeSet::from(expected));
    assert_eq!(up, Some(1), "the upstream is up");
    // Figure: one tool refused once, however many re-lists see it again.
    assert_eq!(refused, 1, "`late`'s `e_echo` refused and counted once");
}

/// Tools that the test changes while the upstream runs.
struct Late(Mutex<Vec<String>>);

impl ToolSource for Late {
    fn tools(&self, _caller: &mcp_server::Principal) -> Arc<[Tool]> {
        self.0.lock().unwrap().iter().map(|name| Tool::new(ObjectSchema::default(), name)).collect()
    }

    fn call(&self, _ctx: Context, params: CallToolRequestParams) -> ToolFuture {
        Box::pin(std::future::ready(Ok(mcp_server::text_result(format!("{} ran", params.name)))))
    }
}
