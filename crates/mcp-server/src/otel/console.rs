//! The console exporters: one line per span or metric on stderr, since a stdio server's stdout
//! is the protocol.

use std::io::Write as _;
use std::time::Duration;

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

#[derive(Debug)]
pub(super) struct ConsoleSpans;

impl SpanExporter for ConsoleSpans {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let mut stderr = std::io::stderr().lock();
        for span in batch {
            let duration = span.end_time.duration_since(span.start_time).unwrap_or_default();
            let _ = write!(
                stderr,
                "span {:?} trace_id={} span_id={} parent_id={} kind={:?} duration={duration:?} status={:?}",
                span.name,
                span.span_context.trace_id(),
                span.span_context.span_id(),
                span.parent_span_id,
                span.span_kind,
                span.status
            );
            for attribute in &span.attributes {
                let _ = write!(stderr, " {}={}", attribute.key, attribute.value);
            }
            let _ = writeln!(stderr);
        }
        Ok(())
    }
}

pub(super) struct ConsoleMetrics;

impl PushMetricExporter for ConsoleMetrics {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let mut stderr = std::io::stderr().lock();
        for scope in metrics.scope_metrics() {
            for metric in scope.metrics() {
                let _ = writeln!(stderr, "metric {:?} unit={:?} {:?}", metric.name(), metric.unit(), metric.data());
            }
        }
        Ok(())
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }

    fn temporality(&self) -> Temporality {
        Temporality::Cumulative
    }
}
