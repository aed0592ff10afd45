//! Decode/encode throughput of the generated 2026-07-28 types against `serde_json::Value` on the
//! same bytes.
//!
//! `cargo bench -p mcp-types --bench codec` runs one criterion group per case (the primary
//! measurement), then times every case again with a plain in-process loop (median of interleaved
//! batches) and prints a markdown table of typed time / `Value` time (< 1: typed is faster).
//!
//! Decoding is `serde_json::from_slice::<T>` vs `serde_json::from_slice::<Value>`; encoding is
//! `serde_json::to_vec` of an already decoded typed value vs of the already decoded `Value`.
//!
//! For instruction counts, `CODEC_PROFILE=<case>/<decode|encode>/<typed|Value>/<iterations>`
//! runs one closure only (see [`profile`]), e.g. under `valgrind --tool=callgrind`.

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group};
use mcp_types::{
    CallToolRequest, CallToolResult, CallToolResultResponse, ClientMessage, ListToolsResultResponse, OnePassResponse,
    Request, RequestId, ServerMessage,
};
use serde_json::Value;

const EXAMPLES_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../schema/2026-07-28/examples");

/// Input requests of 2026-07-28: embedded in `InputRequiredResult`, not JSON-RPC messages.
const INPUT_REQUESTS: [&str; 3] = ["CreateMessageRequest", "ElicitRequest", "ListRootsRequest"];

const PROTOCOL_VERSION: &str = "2026-07-28";

// ---------------------------------------------------------------------------------------------
// Typed values of the few root types the cases use
// ---------------------------------------------------------------------------------------------

/// The typed root type an input decodes into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Client,
    Server,
    ListTools,
    CallTool,
    /// A `CallToolResult` on its own (the result object, no envelope).
    CallToolResult,
    /// A `tools/call` result object as a client decodes it: `<CallToolRequest as Request>::Result`,
    /// the `resultType` dispatch included.
    CallToolOutcome,
    /// A whole `tools/call` response read without its method (`ServerMessage`, the result kept as
    /// text), then its result decoded as `<CallToolRequest as Request>::Result`.
    ServerThenOutcome,
    /// A whole `tools/call` response as mcp-client reads it: [`OnePassResponse`], its result
    /// decoded as `<CallToolRequest as Request>::Result` straight from the message text.
    OnePassOutcome,
}

/// A decoded typed value.
// Unboxed on purpose: a `Box` would add an allocation to every typed decode being measured.
#[allow(clippy::large_enum_variant)]
enum Typed {
    Client(ClientMessage),
    Server(ServerMessage),
    ListTools(ListToolsResultResponse),
    CallTool(CallToolResultResponse),
    CallToolResult(CallToolResult),
    CallToolOutcome(<CallToolRequest as Request>::Result),
    /// The message (re-encoded as received) and its decoded result, kept to be measured.
    ServerThenOutcome(ServerMessage, #[allow(dead_code)] <CallToolRequest as Request>::Result),
    /// The id and the result: re-encoded as the response they came in.
    OnePassOutcome(RequestId, <CallToolRequest as Request>::Result),
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Client => "ClientMessage",
            Kind::Server => "ServerMessage",
            Kind::ListTools => "ListToolsResultResponse",
            Kind::CallTool => "CallToolResultResponse",
            Kind::CallToolResult => "CallToolResult",
            Kind::CallToolOutcome => "<CallToolRequest as Request>::Result",
            Kind::ServerThenOutcome => "ServerMessage, then <CallToolRequest as Request>::Result",
            Kind::OnePassOutcome => "OnePassResponse, its result as <CallToolRequest as Request>::Result",
        }
    }

    #[inline]
    fn decode(self, bytes: &[u8]) -> serde_json::Result<Typed> {
        Ok(match self {
            Kind::Client => Typed::Client(serde_json::from_slice(bytes)?),
            Kind::Server => Typed::Server(serde_json::from_slice(bytes)?),
            Kind::ListTools => Typed::ListTools(serde_json::from_slice(bytes)?),
            Kind::CallTool => Typed::CallTool(serde_json::from_slice(bytes)?),
            Kind::CallToolResult => Typed::CallToolResult(serde_json::from_slice(bytes)?),
            Kind::CallToolOutcome => Typed::CallToolOutcome(serde_json::from_slice(bytes)?),
            Kind::ServerThenOutcome => {
                let message: ServerMessage = serde_json::from_slice(bytes)?;
                let ServerMessage::Response(response) = &message else { panic!("not a response") };
                let result = response.result.decode()?;
                Typed::ServerThenOutcome(message, result)
            }
            Kind::OnePassOutcome => {
                let text = std::str::from_utf8(bytes).map_err(serde::de::Error::custom)?;
                let response = OnePassResponse::read(text).expect("written as peers write it");
                let result = response.decode().expect("a tools/call result");
                Typed::OnePassOutcome(response.id().clone(), result)
            }
        })
    }
}

impl Typed {
    #[inline]
    fn encode(&self) -> serde_json::Result<Vec<u8>> {
        match self {
            Typed::Client(v) => serde_json::to_vec(v),
            Typed::Server(v) => serde_json::to_vec(v),
            Typed::ListTools(v) => serde_json::to_vec(v),
            Typed::CallTool(v) => serde_json::to_vec(v),
            Typed::CallToolResult(v) => serde_json::to_vec(v),
            Typed::CallToolOutcome(v) => serde_json::to_vec(v),
            Typed::ServerThenOutcome(v, _) => serde_json::to_vec(v),
            Typed::OnePassOutcome(id, result) => {
                #[derive(serde::Serialize)]
                struct Response<'a, T> {
                    jsonrpc: &'static str,
                    id: &'a RequestId,
                    result: &'a T,
                }
                serde_json::to_vec(&Response { jsonrpc: "2.0", id, result })
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------------------------

struct Case {
    name: &'static str,
    /// Shown under the summary table.
    note: String,
    /// The wire bytes and the type each decodes into.
    inputs: Vec<(Kind, Vec<u8>)>,
    /// `inputs` decoded, for the encode benchmarks.
    typed: Vec<Typed>,
    values: Vec<Value>,
    total_bytes: u64,
}

impl Case {
    /// Decodes every input both ways and checks the typed value re-encodes to the same JSON, so
    /// that the benchmark measures real, lossless work.
    fn new(name: &'static str, note: String, inputs: Vec<(Kind, Vec<u8>)>) -> Case {
        assert!(!inputs.is_empty(), "case `{name}` has no inputs");
        let mut typed = Vec::with_capacity(inputs.len());
        let mut values = Vec::with_capacity(inputs.len());
        for (i, (kind, bytes)) in inputs.iter().enumerate() {
            let what = || format!("case `{name}`, input #{i} ({})", kind.name());
            let t = kind
                .decode(bytes)
                .unwrap_or_else(|e| panic!("{}: does not decode: {e}\ninput: {}", what(), excerpt(bytes)));
            let v: Value = serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("{}: not JSON: {e}", what()));
            let re = t.encode().unwrap_or_else(|e| panic!("{}: typed value does not encode: {e}", what()));
            let re: Value = serde_json::from_slice(&re).expect("typed encoding is JSON");
            assert!(
                re == v,
                "{}: typed re-encoding differs from the input\ninput:     {}\nre-encoded: {}",
                what(),
                excerpt(v.to_string().as_bytes()),
                excerpt(re.to_string().as_bytes()),
            );
            typed.push(t);
            values.push(v);
        }
        let total_bytes = inputs.iter().map(|(_, b)| b.len() as u64).sum();
        Case { name, note, inputs, typed, values, total_bytes }
    }

    #[inline]
    fn decode_typed(&self) {
        for (kind, bytes) in &self.inputs {
            black_box(kind.decode(black_box(bytes)).unwrap());
        }
    }

    #[inline]
    fn decode_value(&self) {
        for (_, bytes) in &self.inputs {
            black_box(serde_json::from_slice::<Value>(black_box(bytes)).unwrap());
        }
    }

    #[inline]
    fn encode_typed(&self) {
        for t in &self.typed {
            black_box(black_box(t).encode().unwrap());
        }
    }

    #[inline]
    fn encode_value(&self) {
        for v in &self.values {
            black_box(serde_json::to_vec(black_box(v)).unwrap());
        }
    }
}

fn excerpt(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    match s.char_indices().nth(600) {
        Some((at, _)) => format!("{}… ({} bytes)", &s[..at], bytes.len()),
        None => s.into_owned(),
    }
}

fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        let (list, list_generic) = tools_list();
        let (call, call_result, call_outcome, call_generic, call_one_pass) = tools_call_text();
        vec![
            official_examples(),
            list,
            call,
            client_to_server(),
            server_to_client(),
            list_generic,
            call_result,
            call_outcome,
            call_generic,
            call_one_pass,
        ]
    })
}

// ---------------------------------------------------------------------------------------------
// Input builders. serde_json's `Value` sorts object keys (no `preserve_order`), so the inputs are
// written as text, in the member order real peers send (`jsonrpc`, `id`, `method`, `params`).
// ---------------------------------------------------------------------------------------------

/// A JSON string literal.
fn s(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// A JSON object from already encoded member values, in the given order.
fn obj(members: &[(&str, String)]) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&s(key));
        out.push(':');
        out.push_str(value);
    }
    out.push('}');
    out
}

/// A JSON array from already encoded items.
fn arr<I: IntoIterator<Item = String>>(items: I) -> String {
    let items: Vec<String> = items.into_iter().collect();
    format!("[{}]", items.join(","))
}

/// Deterministic pseudo-random numbers (Knuth's MMIX LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
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

fn sentence(rng: &mut Lcg, words: usize) -> String {
    let mut out = String::new();
    for i in 0..words {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(rng.pick(&WORDS));
    }
    out.push('.');
    let mut chars = out.chars();
    let first = chars.next().unwrap().to_ascii_uppercase();
    format!("{first}{}", chars.as_str())
}

/// Case 1: every official example that is a whole JSON-RPC message.
fn official_examples() -> Case {
    let dir = Path::new(EXAMPLES_DIR);
    let folders = read_dir_sorted(dir).unwrap_or_else(|e| {
        panic!("cannot read the official examples at {}: {e}\nrun `cargo xtask schema sync` first", dir.display())
    });
    let mut inputs = Vec::new();
    let mut total = 0;
    let mut clients = 0;
    for folder in folders.into_iter().filter(|p| p.is_dir()) {
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        for file in read_dir_sorted(&folder).unwrap() {
            if file.extension().is_none_or(|e| e != "json") {
                continue;
            }
            total += 1;
            let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
            let json: Value =
                serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{} is not JSON: {e}", file.display()));
            let message = (name.ends_with("Request") && !INPUT_REQUESTS.contains(&name.as_str()))
                || name.ends_with("Notification");
            let envelope =
                (name.ends_with("ResultResponse") || name.ends_with("Error")) && json.get("jsonrpc").is_some();
            let as_client = serde_json::from_slice::<ClientMessage>(&bytes);
            let as_server = serde_json::from_slice::<ServerMessage>(&bytes);
            let kind = if envelope {
                if let Err(e) = &as_server {
                    panic!("{}: not a ServerMessage: {e}", file.display());
                }
                Kind::Server
            } else {
                match (&as_client, &as_server) {
                    (Ok(_), _) => Kind::Client,
                    (Err(_), Ok(_)) => Kind::Server,
                    (Err(c), Err(sv)) if message => {
                        panic!("{}: neither a ClientMessage ({c}) nor a ServerMessage ({sv})", file.display())
                    }
                    // A bare result, params object, content block…: no single root type.
                    (Err(_), Err(_)) => continue,
                }
            };
            clients += usize::from(kind == Kind::Client);
            inputs.push((kind, bytes));
        }
    }
    assert!(total > 0, "no example files under {}: run `cargo xtask schema sync` first", dir.display());
    let note = format!(
        "{} of {total} example files are whole JSON-RPC messages and are included \
         ({clients} ClientMessage, {} ServerMessage)",
        inputs.len(),
        inputs.len() - clients,
    );
    Case::new("official examples", note, inputs)
}

fn read_dir_sorted(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut entries = std::fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect::<std::io::Result<Vec<_>>>()?;
    entries.sort();
    Ok(entries)
}

/// Case 2: one `tools/list` response with 500 tools.
/// Cases 1 and 5: one `tools/list` response of 500 tools, typed by method and as a `ServerMessage`.
fn tools_list() -> (Case, Case) {
    let mut rng = Lcg(0x5EED_0002);
    let mut kind = 0usize;
    let tools = (0..500).map(|i| {
        let count = 2 + i % 7;
        let mut properties = Vec::with_capacity(count);
        let mut names = Vec::with_capacity(count);
        for p in 0..count {
            let schema = match kind % 7 {
                0 => obj(&[("type", s("string")), ("description", s(&sentence(&mut rng, 6)))]),
                1 => obj(&[
                    ("type", s("integer")),
                    ("minimum", "0".into()),
                    ("maximum", (100 * (1 + rng.below(100))).to_string()),
                ]),
                2 => obj(&[("type", s("number"))]),
                3 => obj(&[("type", s("boolean"))]),
                4 => obj(&[("type", s("string")), ("enum", arr(["a", "b", "c"].map(s)))]),
                5 => obj(&[("type", s("array")), ("items", obj(&[("type", s("string"))]))]),
                _ => obj(&[
                    ("type", s("object")),
                    (
                        "properties",
                        obj(&[("path", obj(&[("type", s("string"))])), ("depth", obj(&[("type", s("integer"))]))]),
                    ),
                ]),
            };
            kind += 1;
            let name = format!("{}_{p}", rng.pick(&WORDS));
            properties.push((name.clone(), schema));
            names.push(name);
        }
        let properties: Vec<(&str, String)> = properties.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        let required = arr(names[..count.div_ceil(2)].iter().map(|n| s(n)));
        let mut tool = vec![
            ("name", s(&format!("tool_{i}"))),
            ("title", s(&format!("Tool number {i}"))),
            ("description", s(&sentence(&mut rng, 12))),
            ("inputSchema", obj(&[("type", s("object")), ("properties", obj(&properties)), ("required", required)])),
        ];
        if i % 3 == 0 {
            tool.push(("annotations", obj(&[("readOnlyHint", "true".into())])));
        }
        obj(&tool)
    });
    let message = obj(&[
        ("jsonrpc", s("2.0")),
        ("id", "1".into()),
        (
            "result",
            obj(&[
                ("resultType", s("complete")),
                ("ttlMs", "60000".into()),
                ("cacheScope", s("public")),
                ("tools", arr(tools)),
            ]),
        ),
    ]);
    let note = format!("one message of {} KiB", message.len() / 1024);
    let generic_note = "the same message as a `ServerMessage` (its result kept as text: `RawResult`)".to_owned();
    (
        Case::new("tools/list 500 tools", note, vec![(Kind::ListTools, message.clone().into_bytes())]),
        Case::new("tools/list 500 tools, generic", generic_note, vec![(Kind::Server, message.into_bytes())]),
    )
}

/// Cases 2, 6, 7, 8 and 9: one `tools/call` response carrying 1 MiB of text; its result on its
/// own; that result decoded by the method's result type, as a client does once it knows the
/// method; the response read without its method, then its result decoded by it; and the response
/// read as mcp-client reads it, its result decoded by the method in the same pass.
fn tools_call_text() -> (Case, Case, Case, Case, Case) {
    let mut rng = Lcg(0x5EED_0003);
    let mut text = String::with_capacity((1 << 20) + 64);
    let mut column = 0;
    while text.len() < 1 << 20 {
        let word = rng.pick(&WORDS);
        match rng.below(40) {
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
    let result =
        obj(&[("resultType", s("complete")), ("content", arr([obj(&[("type", s("text")), ("text", s(&text))])]))]);
    let message = obj(&[("jsonrpc", s("2.0")), ("id", "2".into()), ("result", result.clone())]);
    let note =
        format!("one message of {} KiB ({} KiB of text before escaping)", message.len() / 1024, text.len() / 1024);
    let result_note = "the `CallToolResult` of that message on its own".to_owned();
    let outcome_note = "that result decoded by its method, as a client does: `<CallToolRequest as Request>::Result` \
                        (`CallToolOutcome`, the `resultType` dispatch included)"
        .to_owned();
    let generic_note = "the whole message as a `ServerMessage` (its result kept as text: `RawResult`), \
                        then `RawResult::decode` as `<CallToolRequest as Request>::Result`"
        .to_owned();
    let one_pass_note = "the whole message as mcp-client reads a `tools/call` response: `OnePassResponse`, \
                         its result decoded as `<CallToolRequest as Request>::Result` where it starts"
        .to_owned();
    (
        Case::new("tools/call 1 MiB text", note, vec![(Kind::CallTool, message.clone().into_bytes())]),
        Case::new("CallToolResult 1 MiB text", result_note, vec![(Kind::CallToolResult, result.clone().into_bytes())]),
        Case::new("CallToolOutcome 1 MiB text", outcome_note, vec![(Kind::CallToolOutcome, result.into_bytes())]),
        Case::new(
            "tools/call 1 MiB text, ServerMessage then result",
            generic_note,
            vec![(Kind::ServerThenOutcome, message.clone().into_bytes())],
        ),
        Case::new("tools/call 1 MiB text, one pass", one_pass_note, vec![(Kind::OnePassOutcome, message.into_bytes())]),
    )
}

/// The `_meta` every 2026-07-28 client request carries.
fn request_meta(progress_token: Option<u64>) -> String {
    let mut members = vec![
        ("io.modelcontextprotocol/protocolVersion", s(PROTOCOL_VERSION)),
        ("io.modelcontextprotocol/clientCapabilities", "{}".to_owned()),
    ];
    if let Some(token) = progress_token {
        members.push(("progressToken", token.to_string()));
    }
    obj(&members)
}

fn request(id: u64, method: &str, params: String) -> String {
    // One id in four is a string, as many clients send.
    let id = if id % 4 == 3 { s(&format!("req-{id}")) } else { id.to_string() };
    obj(&[("jsonrpc", s("2.0")), ("id", id), ("method", s(method)), ("params", params)])
}

fn notification(method: &str, params: String) -> String {
    obj(&[("jsonrpc", s("2.0")), ("method", s(method)), ("params", params)])
}

/// Case 4: 10,000 small client messages.
fn client_to_server() -> Case {
    let mut rng = Lcg(0x5EED_0004);
    let mut counts = [0usize; 6];
    let inputs = (0..10_000u64)
        .map(|n| {
            let which = rng.below(6) as usize;
            counts[which] += 1;
            let message = match which {
                0 => request(
                    n,
                    "tools/call",
                    obj(&[
                        ("_meta", request_meta(Some(n))),
                        ("name", s(&format!("tool_{}", rng.below(50)))),
                        (
                            "arguments",
                            obj(&[
                                ("city", s(rng.pick(&["Paris", "Tokyo", "Lima"]))),
                                ("days", rng.below(10).to_string()),
                            ]),
                        ),
                    ]),
                ),
                1 => {
                    let mut params = vec![("_meta", request_meta(None))];
                    if n % 2 == 0 {
                        params.push(("cursor", s(&format!("page-{}", rng.below(100)))));
                    }
                    request(n, "tools/list", obj(&params))
                }
                2 => request(
                    n,
                    "resources/read",
                    obj(&[("_meta", request_meta(None)), ("uri", s(&format!("file:///project/src/file_{n}.rs")))]),
                ),
                3 => request(
                    n,
                    "prompts/get",
                    obj(&[
                        ("_meta", request_meta(None)),
                        ("name", s("code_review")),
                        ("arguments", obj(&[("language", s("rust")), ("style", s("concise"))])),
                    ]),
                ),
                4 => request(
                    n,
                    "completion/complete",
                    obj(&[
                        ("_meta", request_meta(None)),
                        ("ref", obj(&[("type", s("ref/prompt")), ("name", s("p"))])),
                        ("argument", obj(&[("name", s("a")), ("value", s("x"))])),
                    ]),
                ),
                _ => notification(
                    "notifications/cancelled",
                    obj(&[
                        ("requestId", n.saturating_sub(1 + rng.below(5)).to_string()),
                        ("reason", s("User requested cancellation")),
                    ]),
                ),
            };
            (Kind::Client, message.into_bytes())
        })
        .collect::<Vec<_>>();
    let bytes: usize = inputs.iter().map(|(_, b)| b.len()).sum();
    let note = format!(
        "{} messages, {} KiB: {} tools/call, {} tools/list, {} resources/read, {} prompts/get, \
         {} completion/complete, {} notifications/cancelled",
        inputs.len(),
        bytes / 1024,
        counts[0],
        counts[1],
        counts[2],
        counts[3],
        counts[4],
        counts[5],
    );
    Case::new("10k client→server", note, inputs)
}

/// Case 5: 10,000 small server messages.
fn server_to_client() -> Case {
    let mut rng = Lcg(0x5EED_0005);
    let mut counts = [0usize; 4];
    let inputs = (0..10_000u64)
        .map(|n| {
            let which = rng.below(4) as usize;
            counts[which] += 1;
            let message = match which {
                0 => notification(
                    "notifications/progress",
                    obj(&[
                        ("progressToken", n.to_string()),
                        ("progress", "50".into()),
                        ("total", "100".into()),
                        ("message", s(&format!("Processing item {n}"))),
                    ]),
                ),
                1 => notification(
                    "notifications/message",
                    obj(&[("level", s("info")), ("logger", s("x")), ("data", obj(&[("k", s("v"))]))]),
                ),
                2 => obj(&[
                    ("jsonrpc", s("2.0")),
                    ("id", n.to_string()),
                    (
                        "result",
                        obj(&[
                            ("resultType", s("complete")),
                            ("content", arr([obj(&[("type", s("text")), ("text", s("ok"))])])),
                        ]),
                    ),
                ]),
                _ => notification(
                    "notifications/resources/updated",
                    obj(&[
                        ("uri", s("file:///x")),
                        ("_meta", obj(&[("io.modelcontextprotocol/subscriptionId", "1".into())])),
                    ]),
                ),
            };
            (Kind::Server, message.into_bytes())
        })
        .collect::<Vec<_>>();
    let bytes: usize = inputs.iter().map(|(_, b)| b.len()).sum();
    let note = format!(
        "{} messages, {} KiB: {} notifications/progress, {} notifications/message, \
         {} tools/call results, {} notifications/resources/updated",
        inputs.len(),
        bytes / 1024,
        counts[0],
        counts[1],
        counts[2],
        counts[3],
    );
    Case::new("10k server→client", note, inputs)
}

// ---------------------------------------------------------------------------------------------
// Criterion
// ---------------------------------------------------------------------------------------------

fn bench_codec(c: &mut Criterion) {
    for case in cases() {
        let mut group = c.benchmark_group(case.name);
        group.throughput(Throughput::Bytes(case.total_bytes));
        if case.inputs.len() >= 1000 {
            // Iterations of several milliseconds: 20 linear samples would not fit in 2 s.
            group.sampling_mode(SamplingMode::Flat);
        }
        group.bench_function(BenchmarkId::new("decode", "typed"), |b| b.iter(|| case.decode_typed()));
        group.bench_function(BenchmarkId::new("decode", "Value"), |b| b.iter(|| case.decode_value()));
        group.bench_function(BenchmarkId::new("encode", "typed"), |b| b.iter(|| case.encode_typed()));
        group.bench_function(BenchmarkId::new("encode", "Value"), |b| b.iter(|| case.encode_value()));
        group.finish();
    }
}

criterion_group! {
    name = codec;
    config = Criterion::default()
        .sample_size(20)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));
    targets = bench_codec
}

// ---------------------------------------------------------------------------------------------
// Summary table: a plain in-process measurement of each ratio
// ---------------------------------------------------------------------------------------------

/// Batches per closure; the median batch is reported.
const BATCHES: usize = 11;
/// Aimed-at duration of one batch.
const BATCH_TIME: Duration = Duration::from_millis(20);

/// Runs `f` for a while (warm-up) and returns how many calls make about one `BATCH_TIME`.
fn calibrate(f: &dyn Fn()) -> u32 {
    let start = Instant::now();
    let mut calls = 0u32;
    while start.elapsed() < BATCH_TIME * 2 || calls < 2 {
        f();
        calls += 1;
    }
    let per_call = start.elapsed().as_secs_f64() / f64::from(calls);
    (BATCH_TIME.as_secs_f64() / per_call).ceil().max(1.0) as u32
}

fn batch(f: &dyn Fn(), calls: u32) -> f64 {
    let start = Instant::now();
    for _ in 0..calls {
        f();
    }
    start.elapsed().as_secs_f64() / f64::from(calls)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Median time per call of `typed` and of `value`, their batches interleaved so that drift
/// (frequency scaling, other load) affects both alike.
fn time_pair(typed: &dyn Fn(), value: &dyn Fn()) -> (f64, f64) {
    let (typed_calls, value_calls) = (calibrate(typed), calibrate(value));
    let mut typed_times = Vec::with_capacity(BATCHES);
    let mut value_times = Vec::with_capacity(BATCHES);
    for _ in 0..BATCHES {
        typed_times.push(batch(typed, typed_calls));
        value_times.push(batch(value, value_calls));
    }
    (median(typed_times), median(value_times))
}

fn human(seconds: f64) -> String {
    match seconds {
        s if s >= 1.0 => format!("{s:.2} s"),
        s if s >= 1e-3 => format!("{:.2} ms", s * 1e3),
        s if s >= 1e-6 => format!("{:.1} µs", s * 1e6),
        s => format!("{:.0} ns", s * 1e9),
    }
}

fn summary_table() -> String {
    let mut out = String::new();
    out.push_str("| case | decode typed | decode Value | ratio | encode typed | encode Value | ratio |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|\n");
    for case in cases() {
        let (dt, dv) = time_pair(&|| case.decode_typed(), &|| case.decode_value());
        let (et, ev) = time_pair(&|| case.encode_typed(), &|| case.encode_value());
        writeln!(
            out,
            "| {} | {} | {} | {:.2} | {} | {} | {:.2} |",
            case.name,
            human(dt),
            human(dv),
            dt / dv,
            human(et),
            human(ev),
            et / ev,
        )
        .unwrap();
    }
    out.push('\n');
    out.push_str(
        "Times are per iteration (the whole case), median of interleaved batches; \
         ratio = typed / Value (< 1: typed is faster).\n",
    );
    for case in cases() {
        writeln!(out, "- {}: {}", case.name, case.note).unwrap();
    }
    out
}

/// `CODEC_PROFILE=<case>/<decode|encode>/<typed|Value>[/<iterations>]` (case: its index in the
/// table, from 0) runs only that closure, for `valgrind --tool=callgrind` instruction counts where
/// wall-clock noise hides a difference. Iterations default to 1; subtract a run with 0 to leave
/// out the setup.
fn profile(spec: &str) {
    let parts: Vec<&str> = spec.split('/').collect();
    let (case, op, side) = match parts[..] {
        [case, op, side] | [case, op, side, _] => (case, op, side),
        _ => panic!("CODEC_PROFILE: expected <case>/<decode|encode>/<typed|Value>[/<iterations>]"),
    };
    let case = &cases()[case.parse::<usize>().expect("case index")];
    let iterations: u32 = parts.get(3).map_or(1, |n| n.parse().expect("iterations"));
    let f: &dyn Fn() = match (op, side) {
        ("decode", "typed") => &|| case.decode_typed(),
        ("decode", "Value") => &|| case.decode_value(),
        ("encode", "typed") => &|| case.encode_typed(),
        ("encode", "Value") => &|| case.encode_value(),
        _ => panic!("CODEC_PROFILE: unknown operation {op}/{side}"),
    };
    for _ in 0..iterations {
        f();
    }
    eprintln!("profiled {} {op}/{side} x{iterations}", case.name);
}

fn main() {
    let started = Instant::now();
    // Build and verify every input before any measurement.
    let cases = cases();
    if let Ok(spec) = std::env::var("CODEC_PROFILE") {
        return profile(&spec);
    }
    codec();
    // `cargo test --benches` runs this binary without `--bench`: criterion then only checks each
    // benchmark once, and the summary would take time for nothing.
    if std::env::args().any(|a| a == "--bench") {
        println!();
        println!("## typed vs serde_json::Value ({} cases)", cases.len());
        println!();
        print!("{}", summary_table());
        println!();
        println!("total run time: {:.1} s", started.elapsed().as_secs_f64());
    }
    Criterion::default().configure_from_args().final_summary();
}
