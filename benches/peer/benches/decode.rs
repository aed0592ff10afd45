//! A client's typed decode of a large `tools/call` answer, and a server's typed decode of the
//! driver's `tools/call add` request, ours next to rmcp's, with `serde_json::Value` on the same
//! bytes, in the same run.
//!
//! `cargo bench --bench decode` (in `benches/peer`). The answer is the 1 MiB text result of
//! `crates/mcp-types/benches/codec.rs` (same generator, same bytes), as the whole JSON-RPC
//! response and as the result object alone. The request is what the driver sends a server, in
//! each era (the modern one with its `_meta`); beside the SDKs, the floor server's own struct
//! (`id`, `method` and the two arguments, nothing else read) gives the least a request costs. After criterion's groups, a plain in-process loop
//! (median of interleaved batches) prints each decoder's time over `Value`'s. See [`profile`] for
//! instruction counts.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use mcp_types::{
    CallToolRequest, CallToolResultResponse, ClientMessage, ClientRequest, OnePassResponse, Request, ServerMessage,
};
use serde_json::Value;

type Ours = <CallToolRequest as Request>::Result;

/// The `tools/call` result of `codec.rs`'s `tools_call_text`: `resultType` first, then one text
/// block of 1 MiB of words with quotes, tabs, backslashes and newlines (escaped on the wire).
fn result_text() -> String {
    let mut rng = Lcg(0x5EED_0003);
    let mut text = String::with_capacity((1 << 20) + 64);
    let mut column = 0;
    while text.len() < 1 << 20 {
        let word = WORDS[(rng.next() % WORDS.len() as u64) as usize];
        match rng.next() % 40 {
            0 => write!(text, "\"{word}\"").unwrap(),
            1 => write!(text, "{word}\t").unwrap(),
            2 => write!(text, "C:\\{word}").unwrap(),
            _ => text.push_str(word),
        }
        column += word.len() + 1;
        if column > 72 {
            text.push('\n');
            column = 0;
        } else {
            text.push(' ');
        }
    }
    text.truncate(1 << 20);
    let text = serde_json::to_string(&text).unwrap();
    format!(r#"{{"resultType":"complete","content":[{{"type":"text","text":{text}}}]}}"#)
}

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

const WORDS: [&str; 24] = [
    "the",
    "server",
    "returned",
    "a",
    "list",
    "of",
    "matching",
    "files",
    "and",
    "their",
    "sizes",
    "while",
    "parsing",
    "configuration",
    "context",
    "protocol",
    "message",
    "for",
    "each",
    "request",
    "with",
    "tool",
    "result",
    "value",
];

/// What a decoder reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Input {
    /// The whole `tools/call` response of 1 MiB.
    Response,
    /// Its result object alone.
    Result,
    /// The driver's modern `tools/call add`, with `_meta`.
    ModernRequest,
    /// The driver's legacy `tools/call add`.
    LegacyRequest,
}

impl Input {
    const ALL: [Input; 4] = [Input::Response, Input::Result, Input::ModernRequest, Input::LegacyRequest];

    fn name(self) -> &'static str {
        match self {
            Input::Response => "response",
            Input::Result => "result",
            Input::ModernRequest => "modern request",
            Input::LegacyRequest => "legacy request",
        }
    }

    fn group(self) -> &'static str {
        match self {
            Input::Response => "tools/call response 1 MiB text",
            Input::Result => "tools/call result 1 MiB text",
            Input::ModernRequest => "tools/call add request, 2026-07-28",
            Input::LegacyRequest => "tools/call add request, 2025-11-25",
        }
    }
}

/// One way of decoding the bytes.
struct Decoder {
    name: &'static str,
    input: Input,
    run: fn(&[u8]),
}

/// What the floor server (`src/bin/floor.rs`) reads of a request.
#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct FloorRequest {
    id: Option<i64>,
    method: String,
    #[serde(default)]
    params: FloorParams,
}

#[derive(serde::Deserialize, Default)]
#[allow(dead_code)]
struct FloorParams {
    arguments: Option<FloorAdd>,
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct FloorAdd {
    a: i64,
    b: i64,
}

/// The request the driver sends (`call_body` in `src/bin/driver.rs`), for id 7.
fn request(modern: bool) -> String {
    let meta = match modern {
        true => {
            r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"peer-bench","version":"1"}},"#
        }
        false => "",
    };
    format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{{meta}"name":"add","arguments":{{"a":7,"b":7}}}}}}"#
    )
}

/// Decodes the bytes as `T`, as `serde_json::from_slice` does.
fn slice<T: serde::de::DeserializeOwned>(bytes: &[u8]) {
    drop(black_box(serde_json::from_slice::<T>(bytes).unwrap()));
}

/// Decodes the bytes as `T` as mcp-server's typed path reads a message: checked as UTF-8 whole,
/// then one pass over the text.
fn text<T: serde::de::DeserializeOwned>(bytes: &[u8]) {
    drop(black_box(serde_json::from_str::<T>(std::str::from_utf8(bytes).unwrap()).unwrap()));
}

const fn decoder(name: &'static str, input: Input, run: fn(&[u8])) -> Decoder {
    Decoder { name, input, run }
}

const DECODERS: &[Decoder] = &[
    decoder("Value", Input::Response, slice::<Value>),
    // mcp-types typed by the method: `CallToolResultResponse`, whose `result` is `Ours`.
    decoder("ours CallToolResultResponse", Input::Response, slice::<CallToolResultResponse>),
    // Read without the method (its result kept as text), then decoded by it.
    decoder("ours ServerMessage + RawResult::decode", Input::Response, |b| {
        let ServerMessage::Response(response) = serde_json::from_slice(b).unwrap() else { panic!() };
        drop(black_box(response.result.decode::<Ours>().unwrap()));
    }),
    // As mcp-client reads a `tools/call` response: the result decoded by the method where it
    // starts in the message, in the same pass (`OnePassResponse`).
    decoder("ours OnePassResponse", Input::Response, |b| {
        let text = std::str::from_utf8(b).unwrap();
        drop(black_box(OnePassResponse::read(text).unwrap().decode::<Ours>().unwrap()));
    }),
    decoder("rmcp ServerJsonRpcMessage", Input::Response, slice::<rmcp::model::ServerJsonRpcMessage>),
    decoder("Value", Input::Result, slice::<Value>),
    decoder("ours <CallToolRequest as Request>::Result", Input::Result, slice::<Ours>),
    decoder("rmcp CallToolResult", Input::Result, slice::<rmcp::model::CallToolResult>),
    decoder("Value", Input::ModernRequest, slice::<Value>),
    decoder("ours ClientMessage", Input::ModernRequest, text::<ClientMessage>),
    decoder("rmcp ClientJsonRpcMessage", Input::ModernRequest, slice::<rmcp::model::ClientJsonRpcMessage>),
    decoder("floor struct", Input::ModernRequest, slice::<FloorRequest>),
    decoder("Value", Input::LegacyRequest, slice::<Value>),
    decoder("ours legacy ClientMessage", Input::LegacyRequest, text::<mcp_types::v2025_11_25::ClientMessage>),
    decoder("rmcp ClientJsonRpcMessage", Input::LegacyRequest, slice::<rmcp::model::ClientJsonRpcMessage>),
    decoder("floor struct", Input::LegacyRequest, slice::<FloorRequest>),
];

struct Inputs {
    message: Vec<u8>,
    result: Vec<u8>,
    modern_request: Vec<u8>,
    legacy_request: Vec<u8>,
}

impl Inputs {
    fn new() -> Inputs {
        let result = result_text();
        let message = format!(r#"{{"jsonrpc":"2.0","id":2,"result":{result}}}"#);
        let inputs = Inputs {
            message: message.into_bytes(),
            result: result.into_bytes(),
            modern_request: request(true).into_bytes(),
            legacy_request: request(false).into_bytes(),
        };
        // Every decoder accepts its input, and both SDKs read the same text.
        for d in DECODERS {
            (d.run)(inputs.of(d));
        }
        let ours: Ours = serde_json::from_slice(&inputs.result).unwrap();
        let theirs: rmcp::model::CallToolResult = serde_json::from_slice(&inputs.result).unwrap();
        assert_eq!(serde_json::to_value(&ours).unwrap(), serde_json::to_value(&theirs).unwrap());
        // Both read the request as a `tools/call` of `add`, and ours keeps the arguments.
        let ClientMessage::Request(ClientRequest::CallTool(call)) =
            serde_json::from_slice(&inputs.modern_request).unwrap()
        else {
            panic!("a modern tools/call")
        };
        assert_eq!(call.params.arguments.unwrap()["a"], 7);
        let theirs: rmcp::model::ClientJsonRpcMessage = serde_json::from_slice(&inputs.modern_request).unwrap();
        assert!(serde_json::to_string(&theirs).unwrap().contains(r#""name":"add""#));
        inputs
    }

    fn of(&self, d: &Decoder) -> &[u8] {
        match d.input {
            Input::Response => &self.message,
            Input::Result => &self.result,
            Input::ModernRequest => &self.modern_request,
            Input::LegacyRequest => &self.legacy_request,
        }
    }
}

fn bench_decode(c: &mut Criterion) {
    let inputs = Inputs::new();
    for input in Input::ALL {
        let mut group = c.benchmark_group(input.group());
        let ds: Vec<&Decoder> = DECODERS.iter().filter(|d| d.input == input).collect();
        group.throughput(Throughput::Bytes(inputs.of(ds[0]).len() as u64));
        for d in ds {
            let bytes = inputs.of(d);
            group.bench_function(BenchmarkId::new("decode", d.name), |b| b.iter(|| (d.run)(black_box(bytes))));
        }
        group.finish();
    }
}

criterion_group! {
    name = decode;
    config = Criterion::default()
        .sample_size(20)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));
    targets = bench_decode
}

/// Median time per call of each closure, batches of all of them interleaved so that drift (other
/// load on the machine) affects them alike.
fn medians(fs: &[&dyn Fn()]) -> Vec<f64> {
    const BATCHES: usize = 15;
    let calls: Vec<u32> = fs
        .iter()
        .map(|f| {
            let start = Instant::now();
            let mut n = 0u32;
            while start.elapsed() < Duration::from_millis(40) || n < 2 {
                f();
                n += 1;
            }
            (0.02 / (start.elapsed().as_secs_f64() / f64::from(n))).ceil().max(1.0) as u32
        })
        .collect();
    let mut times = vec![Vec::with_capacity(BATCHES); fs.len()];
    for _ in 0..BATCHES {
        for (i, f) in fs.iter().enumerate() {
            let start = Instant::now();
            for _ in 0..calls[i] {
                f();
            }
            times[i].push(start.elapsed().as_secs_f64() / f64::from(calls[i]));
        }
    }
    times
        .into_iter()
        .map(|mut t| {
            t.sort_by(f64::total_cmp);
            t[t.len() / 2]
        })
        .collect()
}

fn summary() {
    let inputs = Inputs::new();
    println!("| input | decoder | time | / Value |");
    println!("|---|---|---:|---:|");
    for input in Input::ALL {
        let ds: Vec<&Decoder> = DECODERS.iter().filter(|d| d.input == input).collect();
        let fs: Vec<Box<dyn Fn() + '_>> =
            ds.iter().map(|d| Box::new(|| (d.run)(inputs.of(d))) as Box<dyn Fn()>).collect();
        let fs: Vec<&dyn Fn()> = fs.iter().map(|f| f.as_ref()).collect();
        let times = medians(&fs);
        for (d, t) in ds.iter().zip(&times) {
            println!("| {} | {} | {:.3} µs | {:.2} |", input.name(), d.name, t * 1e6, t / times[0]);
        }
    }
}

/// `DECODE_PROFILE=<decoder>/<iterations>` (decoder: its index in `DECODERS`) runs only that
/// decoder, for `valgrind --tool=callgrind` instruction counts where wall-clock noise hides a
/// difference; subtract a run with 0 iterations to leave out the setup.
fn profile(spec: &str) {
    let (index, iterations) = spec.split_once('/').expect("DECODE_PROFILE: <decoder>/<iterations>");
    let d = &DECODERS[index.parse::<usize>().expect("decoder index")];
    let inputs = Inputs::new();
    for _ in 0..iterations.parse::<u32>().expect("iterations") {
        (d.run)(inputs.of(d));
    }
    eprintln!("profiled {} ({})", d.name, d.input.name());
}

fn main() {
    if let Ok(spec) = std::env::var("DECODE_PROFILE") {
        return profile(&spec);
    }
    decode();
    if std::env::args().any(|a| a == "--bench") {
        println!();
        summary();
    }
    Criterion::default().configure_from_args().final_summary();
}
