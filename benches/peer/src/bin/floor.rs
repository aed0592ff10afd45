//! The least an `add` server can cost on this machine: no SDK, no framework, no async runtime.
//! A blocking thread per connection (or one loop on stdin) reads a request, takes the id and the
//! two integers out of it with serde, and writes a fixed-shape answer. It speaks only what the
//! driver sends (one POST per request with `Content-Length`, keep-alive; a legacy `initialize`)
//! and checks nothing else, so it is a yardstick for the figures, not a server.
//!
//! `floor http` serves 127.0.0.1 (an ephemeral port, printed as the first line of stdout);
//! `floor stdio` serves stdin and stdout.
//!
//! With `--runtime` the same answers come from the bare stack that ours and rmcp both stand on:
//! tokio's multi-thread runtime with hyper's HTTP/1 server (no router, no framework), or stdin
//! read on the runtime's reactor. The gap between the two floors is what the runtime and hyper
//! cost; the gap between the runtime floor and a server is what its MCP layer costs.
//!
//! `floor proxy URL` is the least an HTTP gateway can cost (the driver's `gateway` cell): hyper's
//! HTTP/1 server on tokio that sends each request, headers and body untouched, over one kept
//! hyper HTTP/1 connection per downstream connection to `URL`, and streams the answer back. It
//! reads no JSON: any gateway does at least this much work per call.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};

#[derive(serde::Deserialize)]
struct Request {
    id: Option<i64>,
    method: String,
    #[serde(default)]
    params: Params,
}

#[derive(serde::Deserialize, Default)]
struct Params {
    arguments: Option<Add>,
}

#[derive(serde::Deserialize)]
struct Add {
    a: i64,
    b: i64,
}

/// The answer to one message, or `None` for a notification.
fn answer(message: &[u8]) -> Option<String> {
    let request: Request = serde_json::from_slice(message).expect("the driver sends JSON-RPC");
    let id = request.id?;
    Some(match (request.method.as_str(), request.params.arguments) {
        ("initialize", _) => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"capabilities":{{"tools":{{}}}},"protocolVersion":"2025-11-25","serverInfo":{{"name":"floor","version":"1"}}}}}}"#
        ),
        ("tools/call", Some(Add { a, b })) => {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#, a + b)
        }
        (method, _) => panic!("the floor server answers only initialize and tools/call add, not {method}"),
    })
}

fn serve_connection(stream: TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let (mut line, mut body, mut out) = (String::new(), Vec::new(), Vec::new());
    loop {
        let mut length = 0;
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().expect("a Content-Length");
            }
        }
        body.resize(length, 0);
        reader.read_exact(&mut body)?;
        out.clear();
        match answer(&body) {
            Some(json) => write!(
                out,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: floor\r\ncontent-length: {}\r\n\r\n{json}",
                json.len()
            )?,
            None => out.extend_from_slice(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n"),
        }
        writer.write_all(&out)?;
    }
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args[..] {
        ["http", "--runtime"] => runtime().block_on(runtime_http()),
        ["stdio", "--runtime"] => runtime().block_on(async { tokio::spawn(runtime_stdio()).await? }),
        ["proxy", upstream] => {
            let upstream: hyper::Uri = upstream.parse().expect("an upstream URL");
            runtime().block_on(runtime_proxy(upstream))
        }
        ["http"] => {
            let listener = TcpListener::bind("127.0.0.1:0")?;
            println!("http://{}/mcp", listener.local_addr()?);
            for stream in listener.incoming() {
                let stream = stream?;
                std::thread::spawn(move || serve_connection(stream));
            }
            Ok(())
        }
        ["stdio"] => {
            let (stdin, mut stdout) = (std::io::stdin().lock(), std::io::stdout().lock());
            let mut out = Vec::new();
            for line in stdin.split(b'\n') {
                if let Some(json) = answer(&line?) {
                    out.clear();
                    out.extend_from_slice(json.as_bytes());
                    out.push(b'\n');
                    stdout.write_all(&out)?;
                    stdout.flush()?;
                }
            }
            Ok(())
        }
        _ => panic!("usage: floor http|stdio [--runtime] | floor proxy URL"),
    }
}

/// The runtime both SDKs' binaries use: `#[tokio::main]`'s.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime")
}

/// hyper's HTTP/1 server, a task per connection, the body collected before it is answered.
async fn runtime_http() -> std::io::Result<()> {
    use http_body_util::BodyExt as _;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("http://{}/mcp", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        tokio::spawn(async move {
            let service = hyper::service::service_fn(|request: hyper::Request<hyper::body::Incoming>| async move {
                let body = request.into_body().collect().await?.to_bytes();
                let response = match answer(&body) {
                    Some(json) => hyper::Response::builder()
                        .header("content-type", "application/json")
                        .header("mcp-session-id", "floor")
                        .body(http_body_util::Full::new(bytes::Bytes::from(json))),
                    None => hyper::Response::builder().status(202).body(http_body_util::Full::default()),
                };
                Ok::<_, hyper::Error>(response.expect("a valid response"))
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
        });
    }
}

/// stdin (a pipe, as the driver gives it) read on the reactor by a task of the runtime; each
/// answer written to stdout with a blocking write, as ours writes a batch that fits the pipe.
async fn runtime_stdio() -> std::io::Result<()> {
    use std::os::fd::AsFd as _;
    use tokio::io::AsyncBufReadExt as _;

    let stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    let mut stdin = tokio::io::BufReader::new(tokio::net::unix::pipe::Receiver::from_file(stdin)?);
    let (mut line, mut out) = (Vec::new(), Vec::new());
    loop {
        line.clear();
        if stdin.read_until(b'\n', &mut line).await? == 0 {
            return Ok(());
        }
        if let Some(json) = answer(line.trim_ascii_end()) {
            out.clear();
            out.extend_from_slice(json.as_bytes());
            out.push(b'\n');
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(&out)?;
            stdout.flush()?;
        }
    }
}

/// Each downstream connection gets its own upstream connection, so the upstream sees as many
/// keep-alive connections as the gateway has clients and no pool is consulted per request.
async fn runtime_proxy(upstream: hyper::Uri) -> std::io::Result<()> {
    let authority = upstream.authority().expect("an upstream URL with a host and port").clone();
    let host = hyper::header::HeaderValue::from_str(authority.as_str()).expect("an authority is a header value");
    // Origin form, as a client writes it: the path alone on the request line.
    let path = hyper::Uri::from(upstream.path_and_query().expect("an upstream path").clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("http://{}/mcp", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let to_upstream = tokio::net::TcpStream::connect(authority.as_str()).await?;
        to_upstream.set_nodelay(true)?;
        let (sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(to_upstream))
            .await
            .map_err(std::io::Error::other)?;
        tokio::spawn(connection);
        let sender = std::sync::Arc::new(tokio::sync::Mutex::new(sender));
        let (path, host) = (path.clone(), host.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
                let sender = std::sync::Arc::clone(&sender);
                *request.uri_mut() = path.clone();
                request.headers_mut().insert(hyper::header::HOST, host.clone());
                async move {
                    let mut sender = sender.lock().await;
                    sender.ready().await?;
                    sender.send_request(request).await
                }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
        });
    }
}
