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

use std::io::{IsTerminal as _, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
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
use prometheus::Encoder as _;
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

// ------------------------------------------------------------------------------------------------
// The console exporters: stderr, since a stdio server's stdout is the protocol

#[derive(Debug)]
struct ConsoleSpans;

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

struct ConsoleMetrics;

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

// ------------------------------------------------------------------------------------------------
// The Prometheus exposition

/// `GET /metrics` in the Prometheus text format, answered on a thread of its own (one scrape at a
/// time, each connection closed after its answer), so that no async runtime is needed.
struct PrometheusListener {
    addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl PrometheusListener {
    fn start(host: &str, port: u16, registry: prometheus::Registry) -> Result<Self, OtelError> {
        let listen_error = |source| OtelError::Listen { address: format!("{host}:{port}"), source };
        let listener = TcpListener::bind((host, port)).map_err(listen_error)?;
        let addr = listener.local_addr().map_err(listen_error)?;
        let stopping = Arc::new(AtomicBool::new(false));
        let stop_seen = Arc::clone(&stopping);
        let thread = std::thread::Builder::new()
            .name("otel-prometheus".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if stop_seen.load(Ordering::Acquire) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        // A client that fails mid-answer only loses its own answer.
                        let _ = answer_scrape(stream, &registry);
                    }
                }
            })
            .map_err(listen_error)?;
        Ok(PrometheusListener { addr, stopping, thread: Some(thread) })
    }
}

impl Drop for PrometheusListener {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::Release);
        // Wake the blocking accept with a connection of our own; without one, leave the thread be.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(if wake.is_ipv4() { [127, 0, 0, 1].into() } else { std::net::Ipv6Addr::LOCALHOST.into() });
        }
        if TcpStream::connect_timeout(&wake, Duration::from_secs(1)).is_ok()
            && let Some(thread) = self.thread.take()
        {
            let _ = thread.join();
        }
    }
}

/// Reads one request head and answers it: the exposition for `GET /metrics`, 404 otherwise.
fn answer_scrape(mut stream: TcpStream, registry: &prometheus::Registry) -> std::io::Result<()> {
    const MAX_HEAD: usize = 16 * 1024;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut head = Vec::new();
    let mut buffer = [0; 1024];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") && head.len() < MAX_HEAD {
        let read = stream.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        head.extend_from_slice(&buffer[..read]);
    }
    let request_line = head.split(|&byte| byte == b'\n').next().unwrap_or_default();
    let mut parts = std::str::from_utf8(request_line).unwrap_or_default().split_whitespace();
    let (method, target) = (parts.next(), parts.next().unwrap_or_default());
    let path = target.split('?').next().unwrap_or_default();
    let (status, content_type, body) = if method == Some("GET") && path == "/metrics" {
        let mut body = Vec::new();
        match prometheus::TextEncoder::new().encode(&registry.gather(), &mut body) {
            Ok(()) => ("200 OK", prometheus::TEXT_FORMAT, body),
            Err(error) => ("500 Internal Server Error", "text/plain", error.to_string().into_bytes()),
        }
    } else {
        ("404 Not Found", "text/plain", b"GET /metrics\n".to_vec())
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(&body)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use opentelemetry::KeyValue;

    use super::*;

    /// A builder that reads `vars` instead of the environment and installs no subscriber (a
    /// process has one global subscriber, and tests share the process).
    fn builder(vars: &[(&str, &str)]) -> Builder {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Builder { var: Box::new(move |name| vars.get(name).cloned()), ..Builder::new() }.install_subscriber(false)
    }

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut stream = TcpStream::connect(addr).unwrap();
        write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/plain\r\n\r\n").unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    }

    #[test]
    fn an_unknown_exporter_is_an_error_naming_the_variable_and_the_value() {
        let error = builder(&[("OTEL_METRICS_EXPORTER", "zipkin")]).init().unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"OTEL_METRICS_EXPORTER="zipkin" is not supported (expected otlp, prometheus, console or none)"#
        );
        let error = builder(&[("OTEL_TRACES_EXPORTER", "prometheus")]).init().unwrap_err();
        assert!(error.to_string().starts_with(r#"OTEL_TRACES_EXPORTER="prometheus" is not supported"#), "{error}");
        let error =
            builder(&[("OTEL_TRACES_EXPORTER", "none"), ("OTEL_PROPAGATORS", "tracecontext,b3")]).init().unwrap_err();
        assert!(error.to_string().starts_with(r#"OTEL_PROPAGATORS="tracecontext,b3""#), "{error}");
        let error = builder(&[
            ("OTEL_TRACES_EXPORTER", "none"),
            ("OTEL_METRICS_EXPORTER", "prometheus"),
            ("OTEL_EXPORTER_PROMETHEUS_PORT", "http"),
        ])
        .init()
        .unwrap_err();
        assert!(error.to_string().starts_with(r#"OTEL_EXPORTER_PROMETHEUS_PORT="http""#), "{error}");
        // Only OTLP over HTTP with protobuf is built in: grpc is said at start, not sent nowhere.
        let error =
            builder(&[("OTEL_METRICS_EXPORTER", "none"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).init().unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is not supported (expected http/protobuf, the only OTLP protocol built in)"#
        );
        let error = builder(&[
            ("OTEL_TRACES_EXPORTER", "none"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/json"),
        ])
        .init()
        .unwrap_err();
        assert!(error.to_string().starts_with(r#"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL="http/json""#), "{error}");
    }

    #[test]
    fn lists_take_several_values_and_none_alone() {
        let var = |value: &'static str| move |_: &str| Some(value.to_owned());
        assert_eq!(list(&var("otlp, Console"), "X", "", TRACES_EXPORTERS).unwrap(), ["otlp", "console"]);
        assert!(list(&var("none"), "X", "", TRACES_EXPORTERS).unwrap().is_empty());
        assert!(list(&var("none,otlp"), "X", "", TRACES_EXPORTERS).is_err());
        assert_eq!(list(&|_: &str| None, "X", "tracecontext,baggage", PROPAGATORS).unwrap().len(), 2);
    }

    #[test]
    fn the_sdk_disabled_installs_nothing() {
        let telemetry =
            builder(&[("OTEL_SDK_DISABLED", "true"), ("OTEL_METRICS_EXPORTER", "prometheus")]).init().unwrap();
        assert!(telemetry.prometheus_addr().is_none());
        assert!(telemetry.layer::<tracing_subscriber::Registry>().is_none());
    }

    /// Held by the tests that set the global providers (`init` does), one at a time.
    static GLOBALS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn globals() -> std::sync::MutexGuard<'static, ()> {
        GLOBALS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What the process's `tracing` logs, installed once as the global subscriber (an exporter
    /// logs on the SDK's own threads).
    fn logs() -> Arc<std::sync::Mutex<Vec<u8>>> {
        static LOGS: std::sync::OnceLock<Arc<std::sync::Mutex<Vec<u8>>>> = std::sync::OnceLock::new();
        Arc::clone(LOGS.get_or_init(|| {
            let logs = Arc::new(std::sync::Mutex::new(Vec::new()));
            let writer = Arc::clone(&logs);
            let fmt =
                tracing_subscriber::fmt::layer().with_ansi(false).with_writer(move || LogWriter(Arc::clone(&writer)));
            tracing_subscriber::registry().with(fmt).try_init().expect("no other global subscriber");
            logs
        }))
    }

    struct LogWriter(Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for LogWriter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn lines_containing(logs: &std::sync::Mutex<Vec<u8>>, needle: &str) -> Vec<String> {
        let logs = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
        logs.lines().filter(|line| line.contains(needle)).map(str::to_owned).collect()
    }

    /// Ends one span through `telemetry`'s layer and exports it.
    fn export_one_span(telemetry: &Telemetry) {
        let subscriber = tracing_subscriber::registry().with(telemetry.layer());
        tracing::subscriber::with_default(subscriber, || {
            tracing::info_span!("exported", otel.name = "exported").in_scope(|| {});
        });
        let _ = telemetry.flush();
    }

    #[test]
    fn init_says_where_it_exports_and_warns_once_while_exports_fail() {
        let _globals = globals();
        let logs = logs();
        // Nothing listens on port 1.
        let telemetry =
            builder(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1/"), ("OTEL_METRICS_EXPORTER", "none")])
                .init()
                .unwrap();
        let said = lines_containing(&logs, "traces: OTLP http/protobuf to http://127.0.0.1:1/v1/traces");
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].contains("INFO") && said[0].contains("mcp_server::otel"), "{said:?}");
        assert_eq!(lines_containing(&logs, "metrics: not exported (OTEL_METRICS_EXPORTER=none)").len(), 1);

        for _ in 0..3 {
            export_one_span(&telemetry);
        }
        let warned = lines_containing(&logs, "exporting traces to http://127.0.0.1:1/v1/traces failed");
        assert_eq!(warned.len(), 1, "one warning for three failed exports: {warned:?}");
        assert!(warned[0].contains("WARN"), "{warned:?}");
        drop(telemetry);

        // With no variable set, the default is said too.
        let telemetry = builder(&[("OTEL_METRICS_EXPORTER", "none")]).init().unwrap();
        assert_eq!(lines_containing(&logs, "traces: OTLP http/protobuf to http://localhost:4318/v1/traces").len(), 1);
        drop(telemetry);
    }

    #[test]
    fn spans_carry_no_code_location_thread_or_timings_unless_asked() {
        let _globals = globals();
        let attribute_keys = |details: Option<bool>| {
            let exporter = opentelemetry_sdk::trace::InMemorySpanExporter::default();
            let mut builder = builder(&[("OTEL_METRICS_EXPORTER", "none")]).span_exporter(exporter.clone());
            if let Some(details) = details {
                builder = builder.span_details(details);
            }
            let telemetry = builder.init().unwrap();
            export_one_span(&telemetry);
            let spans = exporter.get_finished_spans().unwrap();
            assert_eq!(spans.len(), 1);
            spans[0].attributes.iter().map(|kv| kv.key.to_string()).collect::<Vec<_>>()
        };
        let details = ["code.file.path", "code.line.number", "thread.id", "busy_ns", "idle_ns"];
        let plain = attribute_keys(None);
        assert!(details.iter().all(|key| !plain.iter().any(|k| k == key)), "{plain:?}");
        let detailed = attribute_keys(Some(true));
        assert!(details.iter().all(|key| detailed.iter().any(|k| k == key)), "{detailed:?}");
    }

    /// A histogram recorded through the global meter is served at `/metrics`, with the boundaries
    /// the instrument was given.
    #[test]
    fn prometheus_serves_what_the_global_meter_records() {
        let _globals = globals();
        let telemetry = builder(&[
            ("OTEL_TRACES_EXPORTER", "none"),
            ("OTEL_METRICS_EXPORTER", "prometheus"),
            ("OTEL_EXPORTER_PROMETHEUS_HOST", "127.0.0.1"),
            ("OTEL_EXPORTER_PROMETHEUS_PORT", "0"),
        ])
        .init()
        .unwrap();
        let addr = telemetry.prometheus_addr().expect("a Prometheus listener");
        assert_ne!(addr.port(), 0);

        let histogram = opentelemetry::global::meter("otel-test")
            .f64_histogram("test.operation.duration")
            .with_unit("s")
            .with_boundaries(vec![0.01, 0.1, 1.0])
            .build();
        histogram.record(0.05, &[KeyValue::new("mcp.method.name", "tools/call")]);
        histogram.record(0.5, &[KeyValue::new("mcp.method.name", "tools/call")]);

        let answer = get(addr, "/metrics");
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        assert!(answer.contains("Content-Type: text/plain; version=0.0.4"), "{answer}");
        let count =
            r#"test_operation_duration_seconds_count{mcp_method_name="tools/call",otel_scope_name="otel-test"} 2"#;
        assert!(answer.contains(count), "{answer}");
        let bucket = r#"test_operation_duration_seconds_bucket{mcp_method_name="tools/call",otel_scope_name="otel-test",le="0.1"} 1"#;
        assert!(answer.contains(bucket), "{answer}");
        assert!(get(addr, "/").starts_with("HTTP/1.1 404 Not Found\r\n"));

        telemetry.shutdown().unwrap();
        assert!(TcpStream::connect(addr).is_err(), "the listener is closed after shutdown");
    }
}
