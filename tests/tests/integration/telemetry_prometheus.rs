//! The `observed` example (mcp-server's, features `http` and `otel`) with its metrics exported for
//! Prometheus (`OTEL_METRICS_EXPORTER=prometheus`), scraped by a real Prometheus every second:
//! every `tools/call` made through mcp-client, in both eras, must reach Prometheus as
//! `mcp.server.operation.duration` with the conventions' labels and bucket boundaries; calls of
//! invented tool names add one series (`_OTHER`), not one per name. Prometheus comes from
//! `cargo xtask test` (`MCP_TEST_PROMETHEUS`).

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mcp_client::{Client, EraPreference};
use mcp_tests::prometheus::Prometheus;
use serde_json::json;

const MODERN_CALLS: usize = 5;
const LEGACY_CALLS: usize = 3;
/// Calls of tool names the server does not serve, each name different (below the example's rate
/// limit of 600 calls a minute, so that each is refused as an unknown tool).
const INVENTED_CALLS: usize = 500;

/// How long the count may take to reach Prometheus: scrapes are 1 s apart, so this is only a
/// bound on a stuck test, not a timing assertion.
const SCRAPE_WAIT: Duration = Duration::from_secs(60);

/// The bucket boundaries the conventions give for MCP durations, in seconds.
const DURATION_BUCKETS: [f64; 14] = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// The example, built as `.ci/run` and `cargo xtask test` build it (every feature of the
/// workspace, so that this is a no-op after either), into this test's target directory.
fn observed_binary() -> PathBuf {
    let root = mcp_tests::workspace_root();
    let status = Command::new(env!("CARGO"))
        .current_dir(&root)
        .args(["build", "--quiet", "--workspace", "--all-features", "--example", "observed"])
        .status()
        .expect("running cargo build");
    assert!(status.success(), "cargo build --example observed failed ({status})");
    // This test runs as <target>/debug/deps/telemetry_prometheus-HASH.
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps");
    profile_dir.join("examples/observed")
}

/// The running example, killed when dropped.
struct Observed {
    child: Child,
    /// `http://ADDR/mcp`
    url: String,
    /// `ADDR` of its Prometheus exposition.
    metrics: String,
}

impl Observed {
    fn start() -> Observed {
        let mut child = Command::new(observed_binary())
            .args(["--listen", "127.0.0.1:0"])
            .env("OTEL_METRICS_EXPORTER", "prometheus")
            .env("OTEL_EXPORTER_PROMETHEUS_HOST", "127.0.0.1")
            .env("OTEL_EXPORTER_PROMETHEUS_PORT", "0")
            .env("OTEL_TRACES_EXPORTER", "none")
            .env("OTEL_SERVICE_NAME", "observed-test")
            .env_remove("OTEL_SDK_DISABLED")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting the observed example");
        // Its first two stdout lines: the MCP URL, then the metrics URL; read with a deadline.
        let stdout = child.stdout.take().expect("piped stdout");
        let (lines_tx, lines_rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = lines_tx.send(line);
            }
        });
        let mut next_line = || match lines_rx.recv_timeout(Duration::from_secs(20)) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                panic!("observed printed no URL within 20 s (its stderr is above)");
            }
        };
        let url = next_line();
        let metrics_url = next_line();
        let metrics = metrics_url
            .strip_prefix("http://")
            .and_then(|rest| rest.strip_suffix("/metrics"))
            .unwrap_or_else(|| panic!("not a metrics URL: {metrics_url}"))
            .to_owned();
        Observed { child, url, metrics }
    }
}

impl Drop for Observed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `MODERN_CALLS` calls of `echo` on the modern wire, then `LEGACY_CALLS` of `add` in a legacy
/// session; returns the protocol version each client settled on.
async fn call_tools(url: &str) -> (String, String) {
    let modern = Client::builder("telemetry-test", "1.0.0").era(EraPreference::Modern).connect_http(url).await.unwrap();
    for i in 0..MODERN_CALLS {
        let result = modern.call_tool("echo", &json!({ "text": format!("call {i}") })).await.unwrap();
        assert_eq!(result.is_error, None, "{result:?}");
    }
    let legacy = Client::builder("telemetry-test", "1.0.0").era(EraPreference::Legacy).connect_http(url).await.unwrap();
    for i in 0..LEGACY_CALLS as i64 {
        let result = legacy.call_tool("add", &json!({ "a": i, "b": 1 })).await.unwrap();
        assert_eq!(result.structured_content, Some(json!({ "sum": i + 1 })), "{result:?}");
    }
    for i in 0..INVENTED_CALLS {
        let refused = modern.call_tool(&format!("invented_{i:05}"), &json!({})).await;
        assert!(refused.is_err(), "invented_{i:05}: {refused:?}");
    }
    let versions = (modern.protocol_version(), legacy.protocol_version());
    modern.close().await;
    legacy.close().await;
    versions
}

/// Evaluates `promql` until it yields `wanted`, within [`SCRAPE_WAIT`]; the last value otherwise.
fn wait_for_value(prometheus: &Prometheus, promql: &str, wanted: f64) -> Option<f64> {
    let deadline = Instant::now() + SCRAPE_WAIT;
    loop {
        let value = prometheus.value(promql);
        if value == Some(wanted) || Instant::now() > deadline {
            return value;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn tool_calls_of_both_eras_reach_prometheus_as_operation_durations() {
    let observed = Observed::start();
    let prometheus = Prometheus::start(&observed.metrics);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (modern_version, legacy_version) = runtime.block_on(call_tools(&observed.url));
    assert_eq!(modern_version, "2026-07-28");
    assert_ne!(legacy_version, modern_version);

    // The target is scraped at all (else every count below would stay empty).
    assert_eq!(wait_for_value(&prometheus, r#"up{job="target"}"#, 1.0), Some(1.0), "observed is not scraped");

    let calls =
        r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name!="_OTHER"}"#;
    let total = (MODERN_CALLS + LEGACY_CALLS) as f64;
    let counted = wait_for_value(&prometheus, &format!("sum({calls})"), total);
    assert_eq!(counted, Some(total), "tools/call operations counted; series: {}", prometheus.query(calls));

    // One series per tool and era, labelled as the conventions say.
    let by_tool = prometheus.query(&format!("sum by (gen_ai_tool_name, mcp_protocol_version) ({calls})"));
    let mut series: Vec<(String, String, String)> = by_tool
        .as_array()
        .expect("an instant vector")
        .iter()
        .map(|sample| {
            let label = |name: &str| sample["metric"][name].as_str().unwrap_or_default().to_owned();
            (label("gen_ai_tool_name"), label("mcp_protocol_version"), sample["value"][1].as_str().unwrap().to_owned())
        })
        .collect();
    series.sort();
    assert_eq!(
        series,
        [
            ("add".to_owned(), legacy_version, LEGACY_CALLS.to_string()),
            ("echo".to_owned(), modern_version, MODERN_CALLS.to_string()),
        ],
        "{by_tool}"
    );

    // The invented names: one series, whatever the number of names.
    let invented =
        r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="_OTHER"}"#;
    let counted = wait_for_value(&prometheus, &format!("sum({invented})"), INVENTED_CALLS as f64);
    assert_eq!(counted, Some(INVENTED_CALLS as f64), "{}", prometheus.query(invented));
    let all_calls = r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call"}"#;
    let tool_names = prometheus.value(&format!("count(count by (gen_ai_tool_name) ({all_calls}))"));
    assert_eq!(tool_names, Some(3.0), "add, echo and _OTHER: {}", prometheus.query(all_calls));
    let series = prometheus.value(&format!("count({all_calls})"));
    assert_eq!(series, Some(3.0), "{}", prometheus.query(all_calls));

    // The conventions' bucket boundaries, and +Inf.
    let buckets = prometheus
        .query(r#"mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="echo"}"#);
    let mut bounds: Vec<f64> = buckets
        .as_array()
        .expect("an instant vector")
        .iter()
        .map(|sample| sample["metric"]["le"].as_str().and_then(|le| le.parse().ok()).unwrap_or(f64::NAN))
        .collect();
    bounds.sort_by(f64::total_cmp);
    let mut expected = DURATION_BUCKETS.to_vec();
    expected.push(f64::INFINITY);
    assert_eq!(bounds, expected, "{buckets}");
    let every_echo_in_inf = prometheus.value(
        r#"sum(mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="echo",le="+Inf"})"#,
    );
    assert_eq!(every_echo_in_inf, Some(MODERN_CALLS as f64));
}
