//! OpenTelemetry for a server process in one call (feature `otel`).
//!
//! [`init`] installs a tracer provider and a meter provider as the process's globals, the W3C
//! TraceContext and Baggage propagators, and a `tracing` subscriber (an `EnvFilter` from
//! `RUST_LOG`, default `info`; a fmt layer writing to stderr, since a stdio server's stdout is the
//! protocol; and the tracing-opentelemetry layer, so that the server's request spans become
//! OpenTelemetry spans). Call it first in `main`, before the server serves anything: the server
//! creates its instruments from the global meter provider on its first request. It needs no
//! async runtime.
//!
//! ```no_run
//! # fn main() -> Result<(), mcp_server::otel::OtelError> {
//! let telemetry = mcp_server::otel::init()?;
//! // ... build and serve the server ...
//! telemetry.shutdown()?; // or let it drop: the last spans and metrics are flushed either way
//! # Ok(()) }
//! ```
//!
//! The standard variables choose what happens:
//!
//! | variable | values |
//! |---|---|
//! | `OTEL_SDK_DISABLED` | `true`: no providers, no propagators; the fmt layer only |
//! | `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` | the resource (read by the SDK) |
//! | `OTEL_TRACES_EXPORTER` | `otlp` (default), `console`, `none`, or a comma-separated list |
//! | `OTEL_METRICS_EXPORTER` | `otlp` (default), `prometheus`, `console`, `none`, or a list |
//! | `OTEL_EXPORTER_OTLP_ENDPOINT` and the other `OTEL_EXPORTER_OTLP_*` | read by opentelemetry-otlp (HTTP, protobuf) |
//! | `OTEL_EXPORTER_OTLP_PROTOCOL`, `…_TRACES_PROTOCOL`, `…_METRICS_PROTOCOL` | `http/protobuf` (the default, and the only one built in: another is an error at `init`) |
//! | `OTEL_EXPORTER_PROMETHEUS_HOST`, `OTEL_EXPORTER_PROMETHEUS_PORT` | where `prometheus` serves `/metrics` (`localhost`, `9464`; port `0` picks a free one, see [`Telemetry::prometheus_addr`]) |
//! | `OTEL_PROPAGATORS` | `tracecontext,baggage` (default), `none`, or a list of those two |
//! | `MCP_OTEL_SPAN_DETAILS` | `true`: spans also carry their code location (`code.file.path`, the build machine's absolute path; `code.line.number`, `code.module.name`), `thread.id`, `thread.name` and `busy_ns`/`idle_ns`; off by default ([`Builder::span_details`]) |
//!
//! `console` writes one line per span or metric to stderr (not stdout, which is a stdio server's
//! protocol). [`Builder`] takes exporters of your own instead and can leave the subscriber to you.
//!
//! `init` logs once (target `mcp_server::otel`, level info) where each signal goes, e.g.
//! `traces: OTLP http/protobuf to http://localhost:4318/v1/traces` (the default with no variable
//! set); when an OTLP export fails it warns once, with the endpoint and the error, and says so
//! again only after an export succeeded in between.

use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry::propagation::{TextMapCompositePropagator, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{MeterProviderBuilder, SdkMeterProvider, Temporality};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider, SpanData, SpanExporter, TracerProviderBuilder};
use tracing_opentelemetry::OpenTelemetryLayer;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The instrumentation scope of the spans bridged from `tracing`.
const TRACER_NAME: &str = "mcp-server";

/// The `tracing` target of what `init` and the exporters log.
const LOG_TARGET: &str = "mcp_server::otel";

/// Where OTLP over HTTP goes when no variable says (the specification's default).
const OTLP_DEFAULT_ENDPOINT: &str = "http://localhost:4318";

mod console;
mod scrape;

use console::{ConsoleMetrics, ConsoleSpans};
use scrape::PrometheusListener;

/// Installs OpenTelemetry for this process as the `OTEL_*` variables say (see the [module
/// docs](self)); [`Builder::new().init()`](Builder::init).
pub fn init() -> Result<Telemetry, OtelError> {
    Builder::new().init()
}

/// [`init`] with exporters of your own, or without installing the `tracing` subscriber.
///
/// ```no_run
/// use tracing_subscriber::layer::SubscriberExt as _;
/// # fn demo(exporter: opentelemetry_sdk::trace::InMemorySpanExporter) -> Result<(), mcp_server::otel::OtelError> {
/// let telemetry = mcp_server::otel::Builder::new().span_exporter(exporter).install_subscriber(false).init()?;
/// let subscriber = tracing_subscriber::registry().with(telemetry.layer());
/// # let _ = subscriber; Ok(()) }
/// ```
pub struct Builder {
    /// Set once an exporter of the caller's is given: `OTEL_TRACES_EXPORTER` is then not read.
    traces: Option<TracerProviderBuilder>,
    /// Likewise for `OTEL_METRICS_EXPORTER`.
    metrics: Option<MeterProviderBuilder>,
    install_subscriber: bool,
    /// Code locations, threads and busy/idle times on spans (`None`: `MCP_OTEL_SPAN_DETAILS`).
    span_details: Option<bool>,
    /// How the `OTEL_*` variables are read: the environment, or a table in this module's tests.
    var: Box<Vars>,
}

/// Reads one `OTEL_*` variable.
type Vars = dyn Fn(&str) -> Option<String>;

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    /// Everything from the environment, the subscriber installed.
    pub fn new() -> Self {
        Builder {
            traces: None,
            metrics: None,
            install_subscriber: true,
            span_details: None,
            var: Box::new(|name| std::env::var(name).ok()),
        }
    }

    /// Exports spans to `exporter` (batched) instead of what `OTEL_TRACES_EXPORTER` names; may be
    /// given several times.
    pub fn span_exporter<E: SpanExporter + 'static>(mut self, exporter: E) -> Self {
        let traces = self.traces.take().unwrap_or_else(SdkTracerProvider::builder);
        self.traces = Some(traces.with_batch_exporter(exporter));
        self
    }

    /// Reads metrics with `reader` (e.g. a `PeriodicReader` over an exporter of yours) instead of
    /// what `OTEL_METRICS_EXPORTER` names; may be given several times.
    pub fn metric_reader<R: MetricReader>(mut self, reader: R) -> Self {
        let metrics = self.metrics.take().unwrap_or_else(SdkMeterProvider::builder);
        self.metrics = Some(metrics.with_reader(reader));
        self
    }

    /// Whether [`init`](Self::init) installs the global `tracing` subscriber (default `true`).
    /// Without it, put [`Telemetry::layer`] into a subscriber of your own.
    pub fn install_subscriber(mut self, install: bool) -> Self {
        self.install_subscriber = install;
        self
    }

    /// Whether spans carry what the tracing-opentelemetry layer can add besides the server's own
    /// attributes: the code location (`code.file.path`, an absolute path on the build machine,
    /// `code.line.number`, `code.module.name`), `thread.id`, `thread.name`, and `busy_ns` and
    /// `idle_ns`. Default off (`MCP_OTEL_SPAN_DETAILS=true` turns it on when this is not called).
    pub fn span_details(mut self, details: bool) -> Self {
        self.span_details = Some(details);
        self
    }

    /// Builds the exporters, sets the global providers and propagator and (unless told not to)
    /// installs the `tracing` subscriber. Every variable is checked before anything is installed.
    pub fn init(self) -> Result<Telemetry, OtelError> {
        let var = |name: &str| (self.var)(name).filter(|value| !value.trim().is_empty());
        let disabled = var("OTEL_SDK_DISABLED").is_some_and(|value| value.trim().eq_ignore_ascii_case("true"));
        let span_details = self.span_details.unwrap_or_else(|| {
            var("MCP_OTEL_SPAN_DETAILS").is_some_and(|value| value.trim().eq_ignore_ascii_case("true"))
        });
        let mut telemetry = Telemetry { tracer_provider: None, meter_provider: None, prometheus: None, span_details };
        // What init logs once it is done: where each signal goes.
        let mut destinations = Vec::new();
        if disabled {
            destinations
                .push("OpenTelemetry is off (OTEL_SDK_DISABLED=true): no spans or metrics are exported".to_owned());
        } else {
            // The lists are checked before any exporter is built.
            let trace_exporters = match self.traces {
                None => list(&var, "OTEL_TRACES_EXPORTER", "otlp", TRACES_EXPORTERS)?,
                Some(_) => Vec::new(),
            };
            let metric_exporters = match self.metrics {
                None => list(&var, "OTEL_METRICS_EXPORTER", "otlp", METRICS_EXPORTERS)?,
                Some(_) => Vec::new(),
            };
            let propagators = list(&var, "OTEL_PROPAGATORS", "tracecontext,baggage", PROPAGATORS)?;

            let traces = match self.traces {
                Some(traces) => {
                    destinations.push("traces: the exporters given to otel::Builder::span_exporter".to_owned());
                    traces
                }
                None => traces_from(&trace_exporters, &var, &mut destinations)?,
            };
            let metrics = match self.metrics {
                Some(metrics) => {
                    destinations.push("metrics: the readers given to otel::Builder::metric_reader".to_owned());
                    metrics
                }
                None => {
                    let (metrics, prometheus) = metrics_from(&metric_exporters, &var, &mut destinations)?;
                    telemetry.prometheus = prometheus;
                    metrics
                }
            };

            // Read once: OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and the SDK's own attributes.
            let resource = Resource::builder().build();
            let tracer_provider = traces.with_resource(resource.clone()).build();
            let meter_provider = metrics.with_resource(resource).build();
            opentelemetry::global::set_tracer_provider(tracer_provider.clone());
            opentelemetry::global::set_meter_provider(meter_provider.clone());
            opentelemetry::global::set_text_map_propagator(propagator_from(&propagators));
            telemetry.tracer_provider = Some(tracer_provider);
            telemetry.meter_provider = Some(meter_provider);
        }
        if self.install_subscriber {
            let filter = tracing_subscriber::EnvFilter::builder()
                .with_default_directive(tracing::level_filters::LevelFilter::INFO.into())
                .from_env_lossy();
            let fmt = tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::stderr().is_terminal());
            tracing_subscriber::registry()
                .with(filter)
                .with(fmt)
                .with(telemetry.layer())
                .try_init()
                .map_err(OtelError::Subscriber)?;
        }
        // Once, at start, so that an operator sees where the telemetry goes (or that it goes
        // nowhere) before anything fails.
        for destination in &destinations {
            tracing::info!(target: LOG_TARGET, "{destination}");
        }
        Ok(telemetry)
    }
}

/// What [`init`] installed; flushes and shuts the providers down when dropped (or on
/// [`shutdown`](Self::shutdown)), and stops the Prometheus listener.
pub struct Telemetry {
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
    prometheus: Option<PrometheusListener>,
    /// See [`Builder::span_details`].
    span_details: bool,
}

impl Telemetry {
    /// The address the Prometheus exposition (`GET /metrics`) listens on, when
    /// `OTEL_METRICS_EXPORTER` names `prometheus`: the port actually bound, also for port 0.
    pub fn prometheus_addr(&self) -> Option<SocketAddr> {
        self.prometheus.as_ref().map(|listener| listener.addr)
    }

    /// The layer that turns `tracing` spans into OpenTelemetry spans of this tracer provider,
    /// for a subscriber of your own ([`Builder::install_subscriber(false)`](Builder::install_subscriber));
    /// `None` when the SDK is disabled (`Option<Layer>` is a layer that does nothing then).
    pub fn layer<S>(&self) -> Option<OpenTelemetryLayer<S, SdkTracer>>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        let provider = self.tracer_provider.as_ref()?;
        let details = self.span_details;
        Some(
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer(TRACER_NAME))
                .with_location(details)
                .with_threads(details)
                .with_tracked_inactivity(details),
        )
    }

    /// Exports the spans and metrics recorded so far (Prometheus is read when scraped instead).
    pub fn flush(&self) -> Result<(), OtelError> {
        if let Some(provider) = &self.tracer_provider {
            provider.force_flush().map_err(OtelError::Flush)?;
        }
        if let Some(provider) = &self.meter_provider {
            provider.force_flush().map_err(OtelError::Flush)?;
        }
        Ok(())
    }

    /// Flushes and shuts down both providers and stops the Prometheus listener; the first error
    /// is returned after all of them were tried.
    pub fn shutdown(mut self) -> Result<(), OtelError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<(), OtelError> {
        let traces = self.tracer_provider.take().map_or(Ok(()), |provider| provider.shutdown());
        let metrics = self.meter_provider.take().map_or(Ok(()), |provider| provider.shutdown());
        drop(self.prometheus.take());
        traces.and(metrics).map_err(OtelError::Flush)
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Err(error) = self.stop() {
            eprintln!("otel: {error}");
        }
    }
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("enabled", &self.tracer_provider.is_some())
            .field("prometheus_addr", &self.prometheus_addr())
            .finish()
    }
}

/// Why [`init`] (or a flush or shutdown) failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum OtelError {
    /// An `OTEL_*` variable holds a value this crate does not support.
    Variable {
        /// The variable, e.g. `OTEL_METRICS_EXPORTER`.
        name: &'static str,
        /// What it holds.
        value: String,
        /// What it may hold, as a phrase.
        expected: &'static str,
    },
    /// An exporter could not be built (e.g. an OTLP endpoint that is no URL).
    Exporter(Box<dyn std::error::Error + Send + Sync>),
    /// The Prometheus listener could not bind its address.
    Listen {
        /// `host:port`, as the variables gave it.
        address: String,
        /// Why binding failed.
        source: std::io::Error,
    },
    /// A global `tracing` subscriber is installed already.
    Subscriber(tracing_subscriber::util::TryInitError),
    /// Flushing or shutting down a provider failed.
    Flush(OTelSdkError),
}

impl std::fmt::Display for OtelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OtelError::Variable { name, value, expected } => {
                write!(f, "{name}={value:?} is not supported ({expected})")
            }
            OtelError::Exporter(error) => write!(f, "building an OpenTelemetry exporter failed: {error}"),
            OtelError::Listen { address, source } => {
                write!(f, "the Prometheus exporter cannot listen on {address}: {source}")
            }
            OtelError::Subscriber(error) => write!(f, "installing the tracing subscriber failed: {error}"),
            OtelError::Flush(error) => write!(f, "flushing OpenTelemetry failed: {error}"),
        }
    }
}

impl std::error::Error for OtelError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OtelError::Variable { .. } => None,
            OtelError::Exporter(error) => Some(error.as_ref()),
            OtelError::Listen { source, .. } => Some(source),
            OtelError::Subscriber(error) => Some(error),
            OtelError::Flush(error) => Some(error),
        }
    }
}

// ------------------------------------------------------------------------------------------------
// The variables

/// A variable's allowed values, and the phrase that lists them in an error.
struct Choices {
    values: &'static [&'static str],
    expected: &'static str,
}

const TRACES_EXPORTERS: Choices =
    Choices { values: &["otlp", "console", "none"], expected: "expected otlp, console or none" };
const METRICS_EXPORTERS: Choices = Choices {
    values: &["otlp", "prometheus", "console", "none"],
    expected: "expected otlp, prometheus, console or none",
};
const PROPAGATORS: Choices =
    Choices { values: &["tracecontext", "baggage", "none"], expected: "expected tracecontext, baggage or none" };

/// The comma-separated values of `name` (else `default`), each one of `choices`; `none` stands
/// alone and means an empty list.
fn list(
    var: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    default: &str,
    choices: Choices,
) -> Result<Vec<&'static str>, OtelError> {
    let value = var(name).unwrap_or_else(|| default.to_owned());
    let unsupported = || OtelError::Variable { name, value: value.clone(), expected: choices.expected };
    let mut items = Vec::new();
    for item in value.split(',').map(str::trim) {
        let known = choices.values.iter().find(|known| known.eq_ignore_ascii_case(item));
        let known = *known.ok_or_else(unsupported)?;
        if !items.contains(&known) {
            items.push(known);
        }
    }
    if items.contains(&"none") {
        return if items.len() == 1 { Ok(Vec::new()) } else { Err(unsupported()) };
    }
    Ok(items)
}

/// The URL OTLP over HTTP sends `signal` to, as opentelemetry-otlp resolves it: the signal's
/// own variable as it is, else `OTEL_EXPORTER_OTLP_ENDPOINT` with the signal's path, else
/// localhost.
fn otlp_endpoint(var: &impl Fn(&str) -> Option<String>, signal_variable: &str, path: &str) -> String {
    if let Some(endpoint) = var(signal_variable) {
        return endpoint.trim().to_owned();
    }
    let base = var("OTEL_EXPORTER_OTLP_ENDPOINT").unwrap_or_else(|| OTLP_DEFAULT_ENDPOINT.to_owned());
    format!("{}/{path}", base.trim().trim_end_matches('/'))
}

/// OTLP is exported over HTTP with protobuf bodies only (opentelemetry-otlp's `http-proto`): a
/// `grpc` or `http/json` asked for in `OTEL_EXPORTER_OTLP_PROTOCOL` or the signal's own variable
/// is an error at start, not data that silently goes elsewhere.
fn check_otlp_protocol(var: &impl Fn(&str) -> Option<String>, signal_variable: &'static str) -> Result<(), OtelError> {
    for name in [signal_variable, "OTEL_EXPORTER_OTLP_PROTOCOL"] {
        if let Some(value) = var(name) {
            if value.trim() == "http/protobuf" {
                return Ok(());
            }
            return Err(OtelError::Variable {
                name,
                value,
                expected: "expected http/protobuf, the only OTLP protocol built in",
            });
        }
    }
    Ok(())
}

fn traces_from(
    exporters: &[&str],
    var: &impl Fn(&str) -> Option<String>,
    destinations: &mut Vec<String>,
) -> Result<TracerProviderBuilder, OtelError> {
    let mut traces = SdkTracerProvider::builder();
    for exporter in exporters {
        traces = match *exporter {
            "otlp" => {
                check_otlp_protocol(var, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")?;
                let endpoint = otlp_endpoint(var, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "v1/traces");
                let exporter = opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .with_endpoint(endpoint.clone())
                    .build()
                    .map_err(|error| OtelError::Exporter(error.into()))?;
                destinations.push(format!("traces: OTLP http/protobuf to {endpoint}"));
                traces.with_batch_exporter(Reported::new(exporter, "traces", endpoint))
            }
            // One line per span, written as each span ends.
            _ => {
                destinations.push("traces: console (stderr)".to_owned());
                traces.with_simple_exporter(ConsoleSpans)
            }
        };
    }
    if exporters.is_empty() {
        destinations.push("traces: not exported (OTEL_TRACES_EXPORTER=none)".to_owned());
    }
    Ok(traces)
}

/// `OTEL_EXPORTER_PROMETHEUS_HOST` and `OTEL_EXPORTER_PROMETHEUS_PORT`, with their defaults.
fn prometheus_address(var: &impl Fn(&str) -> Option<String>) -> Result<(String, u16), OtelError> {
    let host = var("OTEL_EXPORTER_PROMETHEUS_HOST").unwrap_or_else(|| "localhost".to_owned());
    let port = match var("OTEL_EXPORTER_PROMETHEUS_PORT") {
        None => 9464,
        Some(value) => value.trim().parse().map_err(|_| OtelError::Variable {
            name: "OTEL_EXPORTER_PROMETHEUS_PORT",
            value,
            expected: "expected a port number",
        })?,
    };
    Ok((host.trim().to_owned(), port))
}

fn metrics_from(
    exporters: &[&str],
    var: &impl Fn(&str) -> Option<String>,
    destinations: &mut Vec<String>,
) -> Result<(MeterProviderBuilder, Option<PrometheusListener>), OtelError> {
    let mut metrics = SdkMeterProvider::builder();
    let mut prometheus = None;
    for exporter in exporters {
        metrics = match *exporter {
            "otlp" => {
                check_otlp_protocol(var, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")?;
                let endpoint = otlp_endpoint(var, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "v1/metrics");
                let exporter = opentelemetry_otlp::MetricExporter::builder()
                    .with_http()
                    .with_endpoint(endpoint.clone())
                    .build()
                    .map_err(|error| OtelError::Exporter(error.into()))?;
                destinations.push(format!("metrics: OTLP http/protobuf to {endpoint}"));
                metrics.with_periodic_exporter(Reported::new(exporter, "metrics", endpoint))
            }
            "prometheus" => {
                let registry = prometheus::Registry::new();
                let reader = opentelemetry_prometheus::exporter()
                    .with_registry(registry.clone())
                    .build()
                    .map_err(|error| OtelError::Exporter(error.into()))?;
                let (host, port) = prometheus_address(var)?;
                let listener = PrometheusListener::start(&host, port, registry)?;
                destinations.push(format!("metrics: Prometheus scrapes http://{}/metrics", listener.addr));
                prometheus = Some(listener);
                metrics.with_reader(reader)
            }
            // Every 60 s (OTEL_METRIC_EXPORT_INTERVAL) and at shutdown.
            _ => {
                destinations.push("metrics: console (stderr)".to_owned());
                metrics.with_periodic_exporter(ConsoleMetrics)
            }
        };
    }
    if exporters.is_empty() {
        destinations.push("metrics: not exported (OTEL_METRICS_EXPORTER=none)".to_owned());
    }
    Ok((metrics, prometheus))
}

/// An exporter whose failures are logged: a warning at the first failure (with where it
/// exports and why), none for the failures after it, and a line when an export succeeds again.
#[derive(Debug)]
struct Reported<E> {
    inner: E,
    signal: &'static str,
    endpoint: String,
    failing: AtomicBool,
}

impl<E> Reported<E> {
    fn new(inner: E, signal: &'static str, endpoint: String) -> Self {
        Reported { inner, signal, endpoint, failing: AtomicBool::new(false) }
    }

    fn report(&self, result: &OTelSdkResult) {
        let (signal, endpoint) = (self.signal, &self.endpoint);
        match result {
            Err(error) if !self.failing.swap(true, Ordering::AcqRel) => tracing::warn!(
                target: LOG_TARGET,
                "exporting {signal} to {endpoint} failed: {error}; further failures are not logged until an export succeeds"
            ),
            Ok(()) if self.failing.swap(false, Ordering::AcqRel) => {
                tracing::info!(target: LOG_TARGET, "exporting {signal} to {endpoint} works again")
            }
            _ => {}
        }
    }
}

impl<E: SpanExporter> SpanExporter for Reported<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        self.report(&result);
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E: PushMetricExporter> PushMetricExporter for Reported<E> {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let result = self.inner.export(metrics).await;
        self.report(&result);
        result
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}

fn propagator_from(propagators: &[&str]) -> TextMapCompositePropagator {
    let propagators = propagators
        .iter()
        .map(|name| -> Box<dyn TextMapPropagator + Send + Sync> {
            match *name {
                "tracecontext" => Box::new(TraceContextPropagator::new()),
                _ => Box::new(BaggagePropagator::new()),
            }
        })
        .collect();
    TextMapCompositePropagator::new(propagators)
}

#[cfg(test)]
mod tests;
