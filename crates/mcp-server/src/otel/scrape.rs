//! The Prometheus exposition: `GET /metrics` on a thread of its own.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use prometheus::Encoder as _;

use super::OtelError;

/// `GET /metrics` in the Prometheus text format, answered on a thread of its own (one scrape at a
/// time, each connection closed after its answer), so that no async runtime is needed.
pub(super) struct PrometheusListener {
    pub(super) addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl PrometheusListener {
    pub(super) fn start(host: &str, port: u16, registry: prometheus::Registry) -> Result<Self, OtelError> {
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
pub(super) fn answer_scrape(mut stream: TcpStream, registry: &prometheus::Registry) -> std::io::Result<()> {
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
