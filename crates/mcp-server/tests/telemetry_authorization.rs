//! The authorization check in the request's telemetry, read back through the SDK's in-memory
//! exporters: its span is a child of the request's span; a request it refuses still has a
//! request span; and a refusal, by the check or for a route's scope, carries the HTTP status the
//! caller saw as `error.type`, in the span and in `mcp.server.operation.duration`; the span's
//! parent is the HTTP `traceparent` header's context, `_meta`'s a link. A GET and a DELETE have
//! spans too, named by the HTTP method. One test: the
//! meter provider must be the process's global one before the server records anything.
#![cfg(all(feature = "otel", feature = "auth"))]

mod common;

use common::*;
use futures::future::BoxFuture;
use mcp_server::auth::{ResourceServer, TokenVerifier, VerifyError};
use mcp_server::http::HttpConfig;
use mcp_server::{Context, Error, Server, ToolRoute, VerifiedToken};
use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt as _;

/// The caller's context in the HTTP `traceparent` header.
const HEADER_TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const HEADER_PARENT_ID: &str = "00f067aa0ba902b7";
/// Another in `_meta`.
const META_TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
const META_PARENT_ID: &str = "b7ad6b7169203331";

/// Accepts the token `reader` (scope `read`); refuses any other.
struct Tokens;

impl TokenVerifier for Tokens {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, VerifyError>> {
        Box::pin(async move {
            match token {
                "reader" => {
                    let claims = json!({ "sub": "alice", "scope": "read" });
                    Ok(VerifiedToken::from_claims(claims.as_object().unwrap().clone()))
                }
                _ => Err(VerifyError::Invalid("unknown token".to_owned())),
            }
        })
    }
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string())
}

#[tokio::test]
async fn the_authorization_check_is_a_child_of_the_request_and_refusals_carry_the_http_status() {
    let metrics = InMemoryMetricExporter::default();
    let meter_provider =
        SdkMeterProvider::builder().with_reader(PeriodicReader::builder(metrics.clone()).build()).build();
    opentelemetry::global::set_meter_provider(meter_provider.clone());
    let spans = InMemorySpanExporter::default();
    let tracer_provider = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
    let layer = tracing_opentelemetry::layer().with_tracer(tracer_provider.tracer("test"));
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));

    let server = Server::builder("telemetry", "1")
        .tool(ToolRoute::new("echo", |_ctx: Context, args: Echo| async move { Ok::<_, Error>(args.text) }))
        .tool(
            ToolRoute::new("purge", |_ctx: Context, _: mcp_server::NoArguments| async { Ok::<_, Error>("purged") })
                .scopes(["admin"]),
        )
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let mut config = HttpConfig::default();
    config.authorization = Some(ResourceServer::builder(&url, Tokens).required_scopes(["read"]).build());
    tokio::spawn(mcp_server::http::serve(listener, server, config));
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let post = |token: Option<&str>, tool: &str, id: i64| {
        let mut meta = meta();
        // The caller's context in `_meta`: read only after the check ran in the request's span.
        meta["traceparent"] = json!(format!("00-{META_TRACE_ID}-{META_PARENT_ID}-01"));
        let body = request(id, "tools/call", json!({ "name": tool, "arguments": { "text": "hi" }, "_meta": meta }));
        let mut request = reqwest::Client::new()
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool)
            .header("traceparent", format!("00-{HEADER_TRACE_ID}-{HEADER_PARENT_ID}-01"));
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        request.body(body.to_string()).send()
    };

    let served = post(Some("reader"), "echo", 1).await.unwrap();
    assert_eq!(served.status(), 200);
    let _ = served.text().await.unwrap();
    let unauthenticated = post(Some("forged"), "echo", 2).await.unwrap();
    assert_eq!(unauthenticated.status(), 401);
    let forbidden = post(Some("reader"), "purge", 3).await.unwrap();
    assert_eq!(forbidden.status(), 403);
    assert!(forbidden.headers()["www-authenticate"].to_str().unwrap().contains("insufficient_scope"));
    // A GET and a DELETE carry no MCP message; each still has a span, with its refusal.
    let http = reqwest::Client::new();
    let stream = http.get(&url).header("accept", "text/event-stream").header("authorization", "Bearer forged");
    assert_eq!(stream.send().await.unwrap().status(), 401);
    let end = http.delete(&url).header("authorization", "Bearer reader").header("mcp-session-id", "unknown");
    assert_eq!(end.send().await.unwrap().status(), 404);

    let _ = tracer_provider.force_flush();
    let finished = spans.get_finished_spans().unwrap();
    let requests: Vec<&SpanData> = finished.iter().filter(|span| span.span_kind == SpanKind::Server).collect();
    let checks: Vec<&SpanData> = finished.iter().filter(|span| span.name == "authorization").collect();
    assert_eq!(requests.len(), 5, "{finished:#?}");
    assert_eq!(checks.len(), 5, "{finished:#?}");
    // Every check is the child of a request span, in its trace.
    for check in &checks {
        let parent = requests
            .iter()
            .find(|request| request.span_context.span_id() == check.parent_span_id)
            .unwrap_or_else(|| panic!("the check's parent is a request span: {check:#?}"));
        assert_eq!(parent.span_context.trace_id(), check.span_context.trace_id());
    }

    let served = requests.iter().find(|span| span.name == "tools/call echo").expect("the served call's span");
    assert_eq!(attribute(served, "error.type"), None);
    // Behind the check, the request span's parent is the header's context, and `_meta`'s a link.
    assert_eq!(served.span_context.trace_id().to_string(), HEADER_TRACE_ID);
    assert_eq!(served.parent_span_id.to_string(), HEADER_PARENT_ID);
    let linked: Vec<String> = served.links.iter().map(|link| link.span_context.trace_id().to_string()).collect();
    assert_eq!(linked, [META_TRACE_ID]);
    // Refused by the check: a request span all the same, with the status the caller got.
    let refused = requests.iter().find(|span| attribute(span, "error.type").as_deref() == Some("401"));
    let refused = refused.unwrap_or_else(|| panic!("a request span with error.type 401: {requests:#?}"));
    assert_eq!(attribute(refused, "mcp.method.name").as_deref(), Some("tools/call"));
    assert!(
        matches!(&refused.status, Status::Error { description } if description.starts_with("HTTP 401: invalid_token")),
        "{refused:#?}"
    );
    let check = checks.iter().find(|check| check.parent_span_id == refused.span_context.span_id()).unwrap();
    assert_eq!(attribute(check, "error.type").as_deref(), Some("401"));
    // Refused for the route's scope: 403 on the wire, so 403 in the span, not the body's -32600.
    let scoped = requests.iter().find(|span| span.name == "tools/call purge").expect("the scoped call's span");
    assert_eq!(attribute(scoped, "error.type").as_deref(), Some("403"));
    assert_eq!(attribute(scoped, "http.response.status_code").as_deref(), Some("403"));
    assert_eq!(scoped.status, Status::error("HTTP 403: insufficient_scope"));
    // The GET refused by the check, and the DELETE of a session that does not exist: spans named
    // by the HTTP method, with no MCP method.
    let get = requests.iter().find(|span| span.name == "GET").expect("the GET's span");
    assert_eq!(attribute(get, "http.request.method").as_deref(), Some("GET"));
    assert_eq!(attribute(get, "error.type").as_deref(), Some("401"));
    assert_eq!(attribute(get, "mcp.method.name"), None);
    assert!(checks.iter().any(|check| check.parent_span_id == get.span_context.span_id()));
    let delete = requests.iter().find(|span| span.name == "DELETE").expect("the DELETE's span");
    assert_eq!(attribute(delete, "error.type").as_deref(), Some("404"));
    assert_eq!(attribute(delete, "http.response.status_code").as_deref(), Some("404"));
    assert_eq!(delete.status, Status::error("HTTP 404: Not Found"));

    meter_provider.force_flush().unwrap();
    let mut error_types = Vec::new();
    for resource_metrics in metrics.get_finished_metrics().unwrap() {
        for scope in resource_metrics.scope_metrics() {
            for metric in scope.metrics().filter(|m| m.name() == "mcp.server.operation.duration") {
                if let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = metric.data() {
                    for point in histogram.data_points() {
                        let attributes: Vec<KeyValue> = point.attributes().cloned().collect();
                        let error_type = attributes.iter().find(|kv| kv.key.as_str() == "error.type");
                        error_types.push(error_type.map(|kv| kv.value.to_string()));
                    }
                }
            }
        }
    }
    error_types.sort();
    error_types.dedup();
    // The GET and the DELETE are no MCP operations: no 404 here.
    assert_eq!(error_types, [None, Some("401".to_owned()), Some("403".to_owned())]);
}
