//! A real Prometheus server for the tests, scraping one loopback target every second.
//! `cargo xtask test` installs Debian's `prometheus` and sets `MCP_TEST_PROMETHEUS` to it.
//!
//! ```no_run
//! let prometheus = mcp_tests::prometheus::Prometheus::start("127.0.0.1:9464");
//! // After a scrape or two:
//! let up = prometheus.value(r#"up{job="target"}"#);
//! assert_eq!(up, Some(1.0));
//! ```
//!
//! Its HTTP API is spoken with a few lines of HTTP/1.0 over std's `TcpStream` (Prometheus then
//! answers without chunking and closes the connection): this library has no HTTP client.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long Prometheus may take to answer `/-/ready`.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `prometheus`, killed when dropped along with its storage.
pub struct Prometheus {
    /// `127.0.0.1:PORT` of its web UI and API.
    pub address: String,
    child: Child,
    temp_dir: PathBuf,
}

impl Prometheus {
    /// Starts Prometheus on a free loopback port, scraping `http://<target>/metrics` every second
    /// as job `target`, and waits until it is ready. Panics, naming `cargo xtask test`, when
    /// `MCP_TEST_PROMETHEUS` is unset, and with Prometheus's log when it does not become ready
    /// within 30 seconds.
    pub fn start(target: &str) -> Prometheus {
        let binary = match std::env::var("MCP_TEST_PROMETHEUS") {
            Ok(path) if !path.is_empty() => path,
            _ => panic!(
                "MCP_TEST_PROMETHEUS is not set: run the tests with `cargo xtask test`, which installs \
                 Debian's prometheus and sets it"
            ),
        };
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let temp_dir = std::env::temp_dir().join(format!(
            "mcp-tests-prometheus-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&temp_dir).unwrap_or_else(|e| panic!("creating {}: {e}", temp_dir.display()));
        let config = temp_dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: target\n    static_configs:\n      - targets: [\"{target}\"]\n"
            ),
        )
        .unwrap_or_else(|e| panic!("writing {}: {e}", config.display()));
        let log_path = temp_dir.join("prometheus.log");
        let log = std::fs::File::create(&log_path).unwrap_or_else(|e| panic!("creating {}: {e}", log_path.display()));

        // A port that was free a moment ago; Prometheus takes no port 0 (it would not say which).
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let address = format!("127.0.0.1:{port}");
        let child = Command::new(&binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", temp_dir.join("data").display()))
            .arg(format!("--web.listen-address={address}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {binary}: {e} (MCP_TEST_PROMETHEUS comes from `cargo xtask test`)"));
        let mut prometheus = Prometheus { address, child, temp_dir };

        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if get(&prometheus.address, "/-/ready").is_ok_and(|(status, _)| status == 200) {
                return prometheus;
            }
            let exited = prometheus.child.try_wait().ok().flatten();
            if exited.is_some() || Instant::now() > deadline {
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                let outcome = exited.map_or("not ready within 30 s".to_owned(), |status| format!("exited: {status}"));
                drop(prometheus);
                panic!("prometheus {outcome}; its log:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Evaluates `promql` now (`/api/v1/query`) and returns `data.result`: for an instant vector,
    /// one `{"metric": {labels}, "value": [time, "number"]}` per series. Panics unless Prometheus
    /// answers with `"status": "success"`.
    pub fn query(&self, promql: &str) -> Value {
        let path = format!("/api/v1/query?query={}", percent_encode(promql));
        let (status, body) = get(&self.address, &path).unwrap_or_else(|e| panic!("querying {promql}: {e}"));
        let answer: Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("query {promql}: HTTP {status}, not JSON ({e}): {body}"));
        assert_eq!(answer["status"], "success", "query {promql}: HTTP {status}: {answer}");
        answer["data"]["result"].clone()
    }

    /// The value of the first series `promql` yields, if any (an aggregation yields at most one).
    pub fn value(&self, promql: &str) -> Option<f64> {
        self.query(promql).get(0)?["value"][1].as_str()?.parse().ok()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.temp_dir);
    }
}

/// `GET path` from `address` (HTTP/1.0): the status code and the body.
fn get(address: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n")?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let malformed = || std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not an HTTP answer: {answer:?}"));
    let (head, body) = answer.split_once("\r\n\r\n").ok_or_else(malformed)?;
    let status = head.split_whitespace().nth(1).and_then(|code| code.parse().ok()).ok_or_else(malformed)?;
    Ok((status, body.to_owned()))
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (byte as char).to_string(),
            _ => format!("%{byte:02X}"),
        })
        .collect()
}
