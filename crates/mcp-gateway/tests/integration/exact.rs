//! A tool's result passes the gateway as its upstream spelled it (numbers, members no type has,
//! their order), with the gateway's own identity and the caller's era's `resultType`, in every
//! pair of eras; with a layer that reads results (the audit log) it is decoded, and a number no
//! type holds fails the call, never rounded.

use std::sync::Arc;

use mcp_client::{CallOptions, EraPreference};
use mcp_gateway::Gateway;
use mcp_server::dynamic::{AnswerFuture, ToolAnswer, ToolFuture, ToolSource};
use mcp_server::types::{CallToolRequestParams, ObjectSchema, RawResult, Tool};
use mcp_server::{Context, Server};
use serde_json::Value;

use crate::common;
use common::{Upstream, client, config, serve};

const STRUCTURED: &str = r#""structuredContent":{"n":1.0E2,"z":-0.0,"big":123456789012345678901234567890}"#;
const VENDOR: &str = r#""vendor":{"k":[1, 2]}"#;

/// An upstream whose tools answer text written by hand: `spelled`, and `named`, whose `_meta`
/// names a server (one behind the upstream, say).
struct Spelled;

/// The identity `named` carries.
const INNER: &str = r#"{"name":"inner","version":"0"}"#;

impl ToolSource for Spelled {
    fn tools(&self, _caller: &mcp_server::Principal) -> Arc<[Tool]> {
        [Tool::new(ObjectSchema::default(), "spelled"), Tool::new(ObjectSchema::default(), "named")].into()
    }

    fn call(&self, ctx: Context, params: CallToolRequestParams) -> ToolFuture {
        let answer = self.answer(ctx, params);
        Box::pin(async move { answer.await?.decode() })
    }

    fn answer(&self, _ctx: Context, params: CallToolRequestParams) -> AnswerFuture {
        let text = match params.name.as_str() {
            "named" => format!(r#"{{"content":[],"_meta":{{"io.modelcontextprotocol/serverInfo":{INNER}}}}}"#),
            _ => format!(
                r#"{{"content":[{{"type":"text","text":"x"}}],{STRUCTURED},{VENDOR},"_meta":{{"trace":"t1"}}}}"#
            ),
        };
        Box::pin(std::future::ready(Ok(ToolAnswer::Raw(RawResult::from_text(text).unwrap()))))
    }
}

async fn gateway(upstream: &Upstream, era: &str, audit: Option<&std::path::Path>) -> Gateway {
    let audit = audit.map(|path| format!("audit = \"{}\"\n", path.display())).unwrap_or_default();
    let text =
        format!("{audit}[[upstream]]\nname = \"up\"\nurl = \"{}\"\nera = \"{era}\"\nprefix = \"\"\n", upstream.url);
    Gateway::start(&config(&text)).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_passes_as_the_upstream_spelled_it_in_every_pair_of_eras() {
    let upstream =
        Upstream::start(Server::builder("spelled", "1.0.0").tool_source(Arc::new(Spelled)).build().unwrap(), 0);
    for upstream_era in ["modern", "legacy"] {
        let gateway = gateway(&upstream, upstream_era, None).await;
        let info = serde_json::to_string(gateway.server().info()).unwrap();
        let url = serve(&gateway).await;
        for era in [EraPreference::Modern, EraPreference::Legacy] {
            let caller = client(&url, era).await;
            let raw = caller.call_tool_raw("spelled", serde_json::json!({}), CallOptions::default()).await.unwrap();
            let text = raw.get();
            let case = format!("upstream {upstream_era}, caller {era:?}: {text}");
            assert!(text.contains(STRUCTURED) && text.contains(VENDOR), "{case}");
            let expected = match era {
                EraPreference::Legacy => {
                    format!(
                        r#"{{"content":[{{"type":"text","text":"x"}}],{STRUCTURED},{VENDOR},"_meta":{{"trace":"t1"}}}}"#
                    )
                }
                // `resultType` where the upstream's server (or the gateway, for a legacy
                // upstream) added it; the identity is the gateway's.
                _ => format!(
                    r#"{{"resultType":"complete","content":[{{"type":"text","text":"x"}}],{STRUCTURED},{VENDOR},"_meta":{{"trace":"t1","io.modelcontextprotocol/serverInfo":{info}}}}}"#
                ),
            };
            assert_eq!(text, expected, "{case}");
            let named = caller.call_tool_raw("named", serde_json::json!({}), CallOptions::default()).await.unwrap();
            assert!(!named.get().contains("inner"), "{case}: {}", named.get());
            // The typed call refuses the integer no type holds, naming it.
            let refused = caller.call_tool("spelled", serde_json::json!({})).await.unwrap_err().to_string();
            assert!(refused.contains("123456789012345678901234567890"), "{case}: {refused}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layer_that_reads_results_has_them_decoded_and_a_number_no_type_holds_fails_the_call() {
    let upstream =
        Upstream::start(Server::builder("spelled", "1.0.0").tool_source(Arc::new(Spelled)).build().unwrap(), 0);
    let log = std::env::temp_dir().join(format!("mcp-gateway-exact-audit-{}.log", std::process::id()));
    let gateway = gateway(&upstream, "modern", Some(&log)).await;
    let caller = client(&serve(&gateway).await, EraPreference::Modern).await;
    // The gateway decodes the upstream's answer for the layer: the integer fails it (the
    // gateway's log has the decode error under the request id), and nothing is rounded.
    let refused = caller.call_tool_raw("spelled", serde_json::json!({}), CallOptions::default()).await.unwrap_err();
    let refused = refused.to_string();
    assert!(refused.contains("upstream `up` failed the call to spelled: protocol error"), "{refused}");
    // Decoded or not, a result names the gateway as its server, never one behind it.
    let named = caller.call_tool("named", serde_json::json!({})).await.unwrap();
    let server = named.meta.and_then(|meta| meta.server_info).expect("the gateway's identity");
    assert_eq!(server.name, "mcp-gateway");
    let lines = std::fs::read_to_string(&log).unwrap();
    let line: Value = serde_json::from_str(lines.lines().last().unwrap()).unwrap();
    assert_eq!(line["method"], "tools/call", "{line}");
    let _ = std::fs::remove_file(log);
}

/// An upstream that records the arguments of each call as its server gave them: their text,
/// relayed as the gateway wrote them (its own server relays too).
#[derive(Default)]
struct Written(std::sync::Mutex<Vec<String>>);

impl ToolSource for Written {
    fn tools(&self, _caller: &mcp_server::Principal) -> Arc<[Tool]> {
        [Tool::new(ObjectSchema::default(), "written")].into()
    }

    fn call(&self, _ctx: Context, params: CallToolRequestParams) -> ToolFuture {
        let arguments = params.arguments.map(Value::Object).unwrap_or_default();
        self.0.lock().unwrap().push(format!("decoded {arguments}"));
        Box::pin(std::future::ready(Ok(mcp_server::types::CallToolResult::new(Vec::new()))))
    }

    fn relays(&self) -> bool {
        true
    }

    fn relay(&self, call: mcp_server::dynamic::RelayCall<'_>) -> mcp_server::dynamic::RelayFuture {
        self.0.lock().unwrap().push(format!("relayed {}", call.arguments.map_or("", |a| a.get())));
        let result = RawResult::from_text(r#"{"content":[]}"#.to_owned()).unwrap();
        Box::pin(std::future::ready(Ok(mcp_server::dynamic::Relayed::Result(result))))
    }
}

/// A modern call's arguments cross the gateway as its caller wrote them, to a modern upstream
/// over HTTP: relayed, not decoded and written again. Through a layer (the audit log) the call
/// takes the usual way: decoded, and written again (members in order of name, `1.50` as `1.5`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calls_arguments_cross_the_gateway_as_the_caller_wrote_them() {
    const ARGUMENTS: &str = r#"{"b": 1.50,  "a": [1, 2], "s": "\u00e9"}"#;
    let written = Arc::new(Written::default());
    let server = Server::builder("written", "1.0.0").tool_source(Arc::clone(&written) as _).build().unwrap();
    let upstream = Upstream::start(server, 0);
    let log = std::env::temp_dir().join(format!("mcp-gateway-exact-relay-{}.log", std::process::id()));
    for audit in [None, Some(log.as_path())] {
        let gateway = gateway(&upstream, "modern", audit).await;
        let url = serve(&gateway).await;
        // Listed first: the gateway's connection then knows the tool needs no mirrored headers.
        client(&url, EraPreference::Modern).await.all_tools().await.unwrap();
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"written","arguments":{ARGUMENTS},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
        );
        let response = reqwest::Client::new()
            .post(&url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", "written")
            .body(body)
            .send()
            .await
            .unwrap();
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
        assert_eq!(answer["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-gateway", "{answer}");
        let legacy = client(&url, EraPreference::Legacy).await;
        legacy.call_tool("written", serde_json::json!({"c": 3})).await.unwrap();
        let seen = std::mem::take(&mut *written.0.lock().unwrap());
        let relayed = match audit {
            None => format!("relayed {ARGUMENTS}"),
            Some(_) => r#"relayed {"a":[1,2],"b":1.5,"s":"é"}"#.to_owned(),
        };
        assert_eq!(seen, [relayed, r#"relayed {"c":3}"#.to_owned()]);
    }
    let _ = std::fs::remove_file(log);
}

/// A relayed call whose upstream asks its caller something comes back as an input round before
/// the tool ran; the gateway sends it again the usual way, which asks the caller. The upstream's
/// tool is started once more than without the relay (as every round of a multi-round call starts
/// it again), and the caller of either era gets its answer through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relayed_call_whose_upstream_asks_is_sent_again_the_usual_way() {
    use mcp_client::{ElicitationModes, ElicitationResponse, Handlers};
    use mcp_server::ToolRoute;
    use mcp_server::types::{ElicitRequestFormParams, ElicitRequestParams, JsonObject};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let started = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&started);
    let asks = ToolRoute::raw(Tool::new(ObjectSchema::default(), "asks"), move |ctx: Context, _: JsonObject| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move {
            let schema = serde_json::from_value(serde_json::json!({"type": "object", "properties": {}})).unwrap();
            let form = ElicitRequestParams::Form(ElicitRequestFormParams::new("Go on?", schema));
            let answer = ctx.elicit_with("go", form).await?;
            Ok::<_, mcp_server::Error>(format!("{:?}", answer.action))
        }
    });
    let upstream = Upstream::start(Server::builder("asking", "1.0.0").tool(asks).build().unwrap(), 0);
    let gateway = gateway(&upstream, "modern", None).await;
    let url = serve(&gateway).await;
    for era in [EraPreference::Modern, EraPreference::Legacy] {
        let handlers = Handlers::new()
            .elicitation(ElicitationModes::FORM, |_| async { Ok(ElicitationResponse::accept(JsonObject::new())) });
        let caller =
            mcp_client::Client::builder("asked", "1.0").era(era).handlers(handlers).connect_http(&url).await.unwrap();
        started.store(0, Ordering::SeqCst);
        let raw = caller.call_tool_raw("asks", serde_json::json!({}), CallOptions::default()).await.unwrap();
        assert!(raw.get().contains("Accept"), "{era:?}: {}", raw.get());
        // Relayed (it asks), sent again (it asks), and sent with the answer: three starts, the
        // upstream being modern whatever the caller's era (without the relay, two).
        assert_eq!(started.load(Ordering::SeqCst), 3, "{era:?}");
    }
}
