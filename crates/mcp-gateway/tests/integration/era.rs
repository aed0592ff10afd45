//! `era = "auto"` and an upstream that speaks both eras but can ask its caller something only in
//! the legacy one, as the Python SDK's servers do (PyPI `mcp` 2.3.0 answers a 2026-07-28 call
//! whose tool elicits with `-32600` "Cannot send 'elicitation/create': …"). The gateway speaks
//! the legacy era to it from the first such refusal on, and sends the refused call again there,
//! once; `era = "modern"` keeps to its era and says what to set.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::response::IntoResponse as _;
use mcp_client::{Client, ElicitationModes, ElicitationResponse, EraPreference, Handlers};
use mcp_gateway::Gateway;
use mcp_server::types::{ContentBlock, ErrorObject};
use mcp_server::{Context, Elicited, Era, Error, Server, ToolRoute};
use serde_json::json;

use crate::common;
use common::{Whom, config, serve};

/// No arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

/// What the Python SDK answers, in the 2026-07-28 era, to a call whose tool elicits.
const REFUSAL: &str =
    "Cannot send 'elicitation/create': this transport context has no back-channel for server-initiated requests.";

/// How often each tool ran, in each era.
#[derive(Default)]
struct Runs {
    asked_modern: AtomicUsize,
    asked_legacy: AtomicUsize,
    failed: AtomicUsize,
}

/// A server like the interop scripts' Python one: `ask_name` elicits a name, which it refuses
/// to do in the 2026-07-28 era as the Python SDK does; `fail` fails with another `-32600`, which
/// is its own failure, not a refusal to ask.
fn python_like(runs: &Arc<Runs>) -> Server {
    let (asking, failing) = (Arc::clone(runs), Arc::clone(runs));
    Server::builder("python-like", "1.0.0")
        .tool(ToolRoute::new("ask_name", move |ctx: Context, Nothing {}| {
            let runs = Arc::clone(&asking);
            async move {
                if ctx.era() == Era::Modern {
                    runs.asked_modern.fetch_add(1, Ordering::SeqCst);
                    return Err(Error::Rpc(ErrorObject::new(-32600, REFUSAL)));
                }
                runs.asked_legacy.fetch_add(1, Ordering::SeqCst);
                match ctx.elicit::<Whom>("What is your name?").await? {
                    Elicited::Accept(Whom { name }) => Ok(format!("Hello, {name}!")),
                    _ => Ok("No name".to_owned()),
                }
            }
        }))
        .tool(ToolRoute::new("fail", move |_: Context, Nothing {}| {
            let runs = Arc::clone(&failing);
            async move {
                runs.failed.fetch_add(1, Ordering::SeqCst);
                Err::<String, _>(Error::Rpc(ErrorObject::new(-32600, "Invalid request: no widgets today")))
            }
        }))
        .build()
        .unwrap()
}

/// Serves `server` over HTTP on loopback; with `modern_only`, every legacy request (one without
/// `Mcp-Method`: `initialize` first) is refused, as by a server that speaks 2026-07-28 alone.
/// Its URL, and the count of legacy requests it got.
async fn upstream(server: Server, modern_only: bool) -> (String, Arc<AtomicUsize>) {
    let legacy = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&legacy);
    let refuse_legacy = move |request: axum::extract::Request, next: axum::middleware::Next| {
        let legacy = Arc::clone(&counted);
        async move {
            let is_legacy = request.headers().get("mcp-method").is_none();
            if is_legacy {
                legacy.fetch_add(1, Ordering::SeqCst);
            }
            if modern_only && is_legacy {
                let error = json!({"jsonrpc": "2.0", "id": null, "error": {
                "code": -32022, "message": "Unsupported protocol version", "data": {"supported": ["2026-07-28"]}}});
                return (axum::http::StatusCode::BAD_REQUEST, axum::Json(error)).into_response();
            }
            next.run(request).await
        }
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let http = mcp_server::http::HttpConfig::default();
    let limits = mcp_server::http::ConnectionLimits::from(&http);
    let app = mcp_server::http::router(server, http).layer(axum::middleware::from_fn(refuse_legacy));
    tokio::spawn(mcp_server::http::serve_router(listener, app, limits, std::future::pending()));
    (url, legacy)
}

async fn gateway(url: &str, era: Option<&str>) -> Gateway {
    let era = era.map(|era| format!("era = \"{era}\"\n")).unwrap_or_default();
    Gateway::start(&config(&format!("[[upstream]]\nname = \"py\"\nurl = \"{url}\"\n{era}"))).await.unwrap()
}

/// A caller in `era` that answers the name question with "Ada".
async fn desk(url: &str, era: EraPreference) -> Client {
    let handlers = Handlers::new().elicitation(ElicitationModes::FORM, |params| async move {
        assert_eq!(serde_json::to_value(&params).unwrap()["message"], "What is your name?");
        ElicitationResponse::accept_value(&json!({ "name": "Ada" }))
    });
    Client::builder("desk", "1.0.0").era(era).handlers(handlers).connect_http(url).await.unwrap()
}

async fn ask_name(client: &Client) -> Result<String, mcp_client::Error> {
    let result = client.call_tool("py_ask_name", json!({})).await?;
    match &result.content[..] {
        [ContentBlock::Text(text)] => Ok(text.text.clone()),
        other => panic!("not one text: {other:?}"),
    }
}

fn rpc(error: mcp_client::Error) -> ErrorObject {
    match error {
        mcp_client::Error::Rpc { error, .. } => error,
        other => panic!("not a JSON-RPC error: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auto_upstream_that_cannot_ask_in_the_modern_era_is_asked_again_in_the_legacy_era() {
    for caller in [EraPreference::Legacy, EraPreference::Modern] {
        let runs = Arc::new(Runs::default());
        let gateway = gateway(&upstream(python_like(&runs), false).await.0, None).await;
        let client = desk(&serve(&gateway).await, caller).await;
        // Another -32600 of the tool's is its own failure: passed on as it is, not sent again.
        let failed = rpc(client.call_tool("py_fail", json!({})).await.unwrap_err());
        assert_eq!(failed.code, -32600);
        assert_eq!(failed.message, "Invalid request: no widgets today");
        assert_eq!(runs.failed.load(Ordering::SeqCst), 1, "{caller:?} caller");
        // The refusal: asked again in the legacy era, once, and the caller answers the question.
        assert_eq!(ask_name(&client).await.unwrap(), "Hello, Ada!", "{caller:?} caller");
        let ran = || (runs.asked_modern.load(Ordering::SeqCst), runs.asked_legacy.load(Ordering::SeqCst));
        assert_eq!(ran(), (1, 1), "{caller:?} caller: (refused in 2026-07-28, ran in legacy)");
        // The upstream stays in the legacy era: the next call goes there at once.
        assert_eq!(ask_name(&client).await.unwrap(), "Hello, Ada!", "{caller:?} caller");
        assert_eq!(ran(), (1, 2), "{caller:?} caller");
        // And its other tools still work there, each call run once.
        let failed = rpc(client.call_tool("py_fail", json!({})).await.unwrap_err());
        assert_eq!(failed.code, -32600);
        assert_eq!(runs.failed.load(Ordering::SeqCst), 2, "{caller:?} caller");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_pinned_upstream_that_cannot_ask_fails_saying_what_to_set() {
    let runs = Arc::new(Runs::default());
    let (url, legacy) = upstream(python_like(&runs), false).await;
    let gateway = gateway(&url, Some("modern")).await;
    let client = desk(&serve(&gateway).await, EraPreference::Legacy).await;
    for _ in 0..2 {
        let error = rpc(ask_name(&client).await.unwrap_err());
        assert_eq!(error.code, -32603, "{error:?}");
        for said in ["upstream `py`", "`elicitation/create`", "era = \"legacy\"", REFUSAL] {
            assert!(error.message.contains(said), "no {said} in {}", error.message);
        }
    }
    // Never sent again in another era, nor any handshake tried.
    assert_eq!((runs.asked_modern.load(Ordering::SeqCst), runs.asked_legacy.load(Ordering::SeqCst)), (2, 0));
    assert_eq!(legacy.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auto_upstream_that_cannot_ask_and_speaks_no_legacy_era_stays_up_in_its_own() {
    let runs = Arc::new(Runs::default());
    let (url, legacy) = upstream(python_like(&runs), true).await;
    let gateway = gateway(&url, None).await;
    let client = desk(&serve(&gateway).await, EraPreference::Legacy).await;
    for _ in 0..2 {
        let error = rpc(ask_name(&client).await.unwrap_err());
        assert_eq!(error.code, -32603, "{error:?}");
        for said in ["upstream `py`", "`elicitation/create`", "connecting to it in the legacy era failed"] {
            assert!(error.message.contains(said), "no {said} in {}", error.message);
        }
    }
    // One legacy handshake tried, for both refusals (the next one a minute later at the
    // earliest); no call sent again; and the upstream stays up in the 2026-07-28 era.
    assert_eq!(legacy.load(Ordering::SeqCst), 1);
    assert_eq!((runs.asked_modern.load(Ordering::SeqCst), runs.asked_legacy.load(Ordering::SeqCst)), (2, 0));
    let failed = rpc(client.call_tool("py_fail", json!({})).await.unwrap_err());
    assert_eq!(failed.message, "Invalid request: no widgets today");
}
