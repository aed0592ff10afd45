use std::collections::HashMap;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::sync::Arc;

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
    let telemetry = builder(&[("OTEL_SDK_DISABLED", "true"), ("OTEL_METRICS_EXPORTER", "prometheus")]).init().unwrap();
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
        let fmt = tracing_subscriber::fmt::layer().with_ansi(false).with_writer(move || LogWriter(Arc::clone(&writer)));
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
    let count = r#"test_operation_duration_seconds_count{mcp_method_name="tools/call",otel_scope_name="otel-test"} 2"#;
    assert!(answer.contains(count), "{answer}");
    let bucket = r#"test_operation_duration_seconds_bucket{mcp_method_name="tools/call",otel_scope_name="otel-test",le="0.1"} 1"#;
    assert!(answer.contains(bucket), "{answer}");
    assert!(get(addr, "/").starts_with("HTTP/1.1 404 Not Found\r\n"));

    telemetry.shutdown().unwrap();
    assert!(TcpStream::connect(addr).is_err(), "the listener is closed after shutdown");
}
