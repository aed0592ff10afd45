//! Era negotiation and legacy server requests over stdio, against the scripted Python server in
//! `tests/support/stdio_server.py`.
#![cfg(feature = "stdio")]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt as _;
use mcp_client::types::{CallToolResult, JsonObject, Root, ServerNotification, SubscriptionFilter};
use mcp_client::{
    CallOptions, Client, ElicitationModes, ElicitationResponse, Era, Error, Handlers, StderrMode, StdioCommand,
};
use serde_json::{Value, json};

fn log_path(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!(
        "mcp-client-stdio-{}-{}-{name}.log",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_file(&path);
    path
}

fn command(mode: &str, log: &PathBuf) -> StdioCommand {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/stdio_server.py");
    StdioCommand::new("python3")
        .arg(script)
        .arg(mode)
        .arg(log)
        .stderr(StderrMode::Capture)
        .shutdown_grace(Duration::from_millis(500))
}

/// The messages the server received, parsed.
fn received(log: &PathBuf) -> Vec<Value> {
    std::fs::read_to_string(log).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

fn methods(log: &PathBuf) -> Vec<String> {
    received(log).iter().filter_map(|m| m["method"].as_str().map(str::to_owned)).collect()
}

/// A probe timeout generous enough for Python to start on a busy machine.
fn builder() -> mcp_client::ClientBuilder {
    Client::builder("stdio-test", "1.0").probe_timeout(Duration::from_secs(10))
}

/// A short probe timeout counted from the start, for the servers that never answer the probe in
/// time.
fn impatient() -> mcp_client::ClientBuilder {
    Client::builder("stdio-test", "1.0").probe_timeout(Duration::from_millis(400)).startup_timeout(Duration::ZERO)
}

/// Auto mode with the default start-up allowance and a 1 s probe timeout.
fn quick_probe() -> mcp_client::ClientBuilder {
    Client::builder("stdio-test", "1.0").probe_timeout(Duration::from_secs(1))
}

async fn assert_modern_and_working(client: &Client, log: &PathBuf) {
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(client.protocol_version(), "2026-07-28");
    assert_eq!(client.all_tools().await.unwrap().len(), 2);
    let tools = received(log).into_iter().find(|m| m["method"] == "tools/list").unwrap();
    assert_eq!(tools["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28", "{tools}");
}

/// A modern server that takes 5 s to start (and writes nothing meanwhile): start-up is not
/// silence, so the probe waits for it (`startup_timeout`) and `initialize` is never sent.
#[tokio::test]
async fn a_modern_server_that_starts_after_5_s_is_modern() {
    let log = log_path("modern-slow");
    let client = quick_probe().connect_stdio(command("modern-slow", &log)).await.unwrap();
    assert_modern_and_working(&client, &log).await;
    assert_eq!(client.server_info().unwrap().name, "scripted-modern");
    assert_eq!(methods(&log)[0], "server/discover");
    assert!(!methods(&log).contains(&"initialize".to_owned()), "{:?}", methods(&log));
    client.close().await;
}

/// The same for a server that accepts both eras: it is modern, not settled as legacy.
#[tokio::test]
async fn a_server_of_both_eras_that_starts_after_5_s_is_modern() {
    let log = log_path("dual-slow");
    let client = quick_probe().connect_stdio(command("dual-slow", &log)).await.unwrap();
    assert_modern_and_working(&client, &log).await;
    assert!(!methods(&log).contains(&"initialize".to_owned()), "{:?}", methods(&log));
    client.close().await;
}

/// When the probe gives up before the slow server starts, `initialize` follows, but the probe is
/// still listened to: the server answers it first, so the connection is modern, not a failure
/// (modern only: `initialize` is refused with -32022) nor legacy (both eras).
#[tokio::test]
async fn a_late_discover_result_during_initialize_makes_the_connection_modern() {
    for mode in ["modern-slow", "dual-slow"] {
        let log = log_path(mode);
        let client = Client::builder("stdio-test", "1.0")
            .probe_timeout(Duration::from_millis(300))
            .startup_timeout(Duration::from_millis(300))
            .connect_stdio(command(mode, &log))
            .await
            .unwrap_or_else(|e| panic!("{mode}: {e}"));
        assert_modern_and_working(&client, &log).await;
        assert_eq!(client.server_info().unwrap().name, "scripted-modern", "{mode}");
        assert_eq!(methods(&log)[..2], ["server/discover", "initialize"], "{mode}");
        client.close().await;
    }
}

/// A server that never answers the probe but refuses `initialize` with -32022 listing a modern
/// version is modern (spec: a recognized modern error means "do not fall back").
#[tokio::test]
async fn initialize_refused_with_a_modern_supported_list_makes_the_connection_modern() {
    let log = log_path("modern-no-discover");
    let client = impatient().connect_stdio(command("modern-no-discover", &log)).await.unwrap();
    assert_modern_and_working(&client, &log).await;
    assert_eq!(client.server().supported_versions, vec!["2026-07-28".to_owned()]);
    client.close().await;
}

#[tokio::test]
async fn discover_result_means_modern_with_meta_on_every_request() {
    let log = log_path("modern");
    let client = builder().connect_stdio(command("modern", &log)).await.unwrap();
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(client.protocol_version(), "2026-07-28");
    assert_eq!(client.server_info().unwrap().name, "scripted-modern");
    assert!(client.server_capabilities().tools.is_some());
    let tools = client.all_tools().await.unwrap();
    assert_eq!(tools.len(), 2);
    client.close().await;
    let sent = received(&log);
    assert!(!methods(&log).contains(&"initialize".to_owned()));
    for request in sent.iter().filter(|m| m.get("id").is_some()) {
        let meta = &request["params"]["_meta"];
        assert_eq!(meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28", "{request}");
        assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object(), "{request}");
        assert_eq!(meta["io.modelcontextprotocol/clientInfo"]["name"], "stdio-test", "{request}");
    }
}

/// `call_tool_raw` gives the result as the server wrote it, an integer beyond 64 bits included,
/// which `call_tool`'s decode (as it arrives, in one pass: `id` before `result`) refuses by name
/// rather than round; in each era.
#[tokio::test]
async fn a_raw_tool_call_keeps_the_servers_text_and_a_typed_one_decodes_it() {
    const EXACT: &str = concat!(
        r#"{"structuredContent": {"n": 1.0E2, "big": 123456789012345678901234567890, "z": 0, "a": -0.0}, "#,
        r#""content": [{"type": "text", "text": "exact"}], "x-vendor": {"b": [1, 2], "a": null}"#
    );
    for (mode, era, tail) in
        [("modern", Era::Modern, r#", "resultType": "complete"}"#), ("legacy-error", Era::Legacy, "}")]
    {
        let log = log_path(mode);
        let client = builder().connect_stdio(command(mode, &log)).await.unwrap();
        assert_eq!(client.era(), era);
        let raw = client.call_tool_raw("exact", (), CallOptions::default()).await.unwrap();
        assert_eq!(raw.get(), format!("{EXACT}{tail}"), "{mode}");
        let refused = client.call_tool("exact", ()).await.unwrap_err().to_string();
        assert!(refused.contains("the integer 123456789012345678901234567890 cannot be kept exactly"), "{refused}");
        assert!(raw.decode::<CallToolResult>().is_err(), "{mode}");
        // The text without it decodes, its unknown member kept.
        let kept = raw.get().replace("123456789012345678901234567890", "1");
        let typed: CallToolResult = serde_json::from_str(&kept).unwrap();
        assert_eq!(typed.extra["x-vendor"], json!({"b": [1, 2], "a": null}), "{mode}");
        client.close().await;
    }
}

#[tokio::test]
async fn unsupported_version_error_is_modern_and_retried_not_a_fallback() {
    let log = log_path("modern-32022");
    let client = builder().connect_stdio(command("modern-32022", &log)).await.unwrap();
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(methods(&log), vec!["server/discover", "server/discover"]);
    let ids: Vec<Value> = received(&log).iter().map(|m| m["id"].clone()).collect();
    assert_ne!(ids[0], ids[1], "the retry needs a new id");
    client.close().await;
}

#[tokio::test]
async fn a_non_modern_error_to_the_probe_means_legacy() {
    let log = log_path("legacy-error");
    let client = builder().connect_stdio(command("legacy-error", &log)).await.unwrap();
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.protocol_version(), "2025-11-25");
    let tools = client.all_tools().await.unwrap();
    assert_eq!(tools[0].name, "echo");
    assert_eq!(methods(&log), vec!["server/discover", "initialize", "notifications/initialized", "tools/list"]);
    // Legacy requests carry no modern _meta.
    let list = received(&log).into_iter().find(|m| m["method"] == "tools/list").unwrap();
    assert!(list["params"].get("_meta").is_none(), "{list}");
    client.close().await;
}

#[tokio::test]
async fn probe_timeout_means_legacy() {
    let log = log_path("legacy-silent");
    let started = std::time::Instant::now();
    let client = impatient().connect_stdio(command("legacy-silent", &log)).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(400));
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.server_info().unwrap().name, "scripted-legacy");
    // The probe was not cancelled: its late reply would simply be ignored.
    assert!(!methods(&log).contains(&"notifications/cancelled".to_owned()));
    client.close().await;
}

#[tokio::test]
async fn a_late_probe_reply_is_ignored() {
    let log = log_path("legacy-late");
    let client = impatient().connect_stdio(command("legacy-late", &log)).await.unwrap();
    assert_eq!(client.era(), Era::Legacy);
    // Let the late DiscoverResult arrive; it must change nothing.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.server_info().unwrap().name, "scripted-legacy");
    let result = client.call_tool("echo", Some(obj(json!({"text": "still fine"})))).await.unwrap();
    assert_eq!(serde_json::to_value(&result.content).unwrap()[0]["text"], "still fine");
    client.close().await;
}

#[tokio::test]
async fn a_server_that_exits_on_the_probe_is_restarted_for_initialize() {
    let log = log_path("legacy-exit");
    let client = builder().connect_stdio(command("legacy-exit", &log)).await.unwrap();
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.all_tools().await.unwrap().len(), 2);
    // One log, two processes: the first saw only the probe, the second the handshake.
    assert_eq!(methods(&log), vec!["server/discover", "initialize", "notifications/initialized", "tools/list"]);
    client.close().await;
}

#[tokio::test]
async fn capabilities_nested_in_server_info_are_understood() {
    let log = log_path("legacy-nested");
    let client = builder().connect_stdio(command("legacy-nested", &log)).await.unwrap();
    let tools = client.server_capabilities().tools.expect("tools capability from serverInfo.capabilities");
    assert_eq!(tools.list_changed, Some(true));
    client.close().await;
}

#[tokio::test]
async fn legacy_server_requests_are_answered_by_the_handlers() {
    let log = log_path("legacy-asks");
    let handlers = Handlers::new()
        .elicitation(ElicitationModes::FORM, |_| async { Ok(ElicitationResponse::accept(JsonObject::new())) })
        .roots(|| async { Ok(vec![Root { uri: "file:///work".into(), ..Default::default() }]) });
    let client = builder().handlers(handlers).connect_stdio(command("legacy-asks", &log)).await.unwrap();
    let init = received(&log).into_iter().find(|m| m["method"] == "initialize").unwrap();
    assert_eq!(init["params"]["capabilities"], json!({"elicitation": {"form": {}}, "roots": {"listChanged": false}}));
    let result = client.call_tool("echo", ()).await.unwrap();
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap().to_owned();
    let answers: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answers["elicited"], json!({"action": "accept", "content": {"name": "Ann"}}));
    assert_eq!(answers["roots"], json!({"roots": [{"uri": "file:///work"}]}));
    assert_eq!(answers["ping"], json!({}));
    client.close().await;
}

#[tokio::test]
async fn dropping_a_call_sends_notifications_cancelled() {
    let log = log_path("modern-cancel");
    let client = builder().connect_stdio(command("modern", &log)).await.unwrap();
    let call = client.call_tool("slow", ());
    assert!(tokio::time::timeout(Duration::from_millis(300), call).await.is_err());
    // The server logs what it reads; give it time on a busy machine.
    let mut cancel = None;
    for _ in 0..100 {
        cancel = received(&log).into_iter().find(|m| m["method"] == "notifications/cancelled");
        if cancel.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let slow = received(&log).into_iter().find(|m| m["params"]["name"] == "slow").unwrap();
    assert_eq!(cancel.expect("a cancellation")["params"]["requestId"], slow["id"]);
    client.close().await;
}

#[tokio::test]
async fn a_request_timeout_is_a_typed_error_and_the_connection_survives() {
    let log = log_path("modern-timeout");
    let client = builder().connect_stdio(command("modern", &log)).await.unwrap();
    let options = mcp_client::CallOptions::new().timeout(Duration::from_millis(300));
    let err = client.call_tool_with("slow", (), options).await.unwrap_err();
    assert!(matches!(err, Error::Timeout { ref method, .. } if method == "tools/call"), "{err}");
    assert_eq!(client.all_tools().await.unwrap().len(), 2);
    client.close().await;
}

#[tokio::test]
async fn a_missing_program_is_a_transport_error() {
    let err = builder().connect_stdio(StdioCommand::new("/nonexistent/mcp-server")).await.unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err}");
}

fn obj(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => unreachable!(),
    }
}

#[tokio::test]
async fn a_server_that_dies_is_restarted_on_the_next_request() {
    for mode in ["modern", "legacy-error"] {
        let log = log_path(mode);
        let client = builder().connect_stdio(command(mode, &log)).await.unwrap();
        let err = client.call_tool("crash", ()).await.unwrap_err();
        assert!(matches!(err, Error::Closed), "{mode}: {err}");
        assert!(!client.is_closed(), "{mode}: the next request starts the process again");
        assert_eq!(client.all_tools().await.unwrap().len(), 2, "{mode}");
        let handshakes = methods(&log).iter().filter(|m| *m == "initialize").count();
        assert_eq!(handshakes, if mode == "modern" { 0 } else { 3 }, "{mode}: one per process");
        client.close().await;
    }
}

/// A relayed call lost with its process is sent again on the same client, as a call of its own
/// is, and only when that client restarts the process: a proxy that supervises the process (and
/// may hold others, a pool) gets `Closed` rather than a call to send elsewhere.
#[tokio::test]
async fn a_relayed_call_lost_with_its_process_is_sent_again_only_on_a_restarted_process() {
    let none = mcp_client::types::ClientCapabilities::default();
    for (restart, sent) in [(true, 2), (false, 1)] {
        let log = log_path(if restart { "relay-restart" } else { "relay-no-restart" });
        let client = builder().connect_stdio(command("modern", &log).restart_on_exit(restart)).await.unwrap();
        let err = client.relay_tool_call("crash", None, &none, None).await.unwrap_err();
        assert!(matches!(err, Error::Closed), "restart {restart}: {err}");
        let crashes = received(&log).iter().filter(|m| m["params"]["name"] == "crash").count();
        assert_eq!(crashes, sent, "restart {restart}: the call reached {crashes} processes");
        client.close().await;
    }
}

#[tokio::test]
async fn a_server_that_dies_stays_down_when_something_else_supervises_it() {
    let log = log_path("no-restart");
    let client = builder().connect_stdio(command("modern", &log).restart_on_exit(false)).await.unwrap();
    assert!(!client.is_closed());
    let err = client.call_tool("crash", ()).await.unwrap_err();
    assert!(matches!(err, Error::Closed), "{err}");
    assert!(client.is_closed(), "known closed without a request");
    let err = client.all_tools().await.unwrap_err();
    assert!(matches!(err, Error::Closed), "no new process answers: {err}");
    let discovered = methods(&log).iter().filter(|m| *m == "server/discover").count();
    assert_eq!(discovered, 1, "one process, started once");
    client.close().await;
}

#[tokio::test]
async fn a_modern_stdio_subscription_streams_and_is_cancelled_when_dropped() {
    let log = log_path("modern-listen");
    let client = builder().connect_stdio(command("modern", &log)).await.unwrap();
    let filter = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
    let mut subscription = client.listen(filter).await.unwrap();
    let ack = subscription.next().await.unwrap().unwrap();
    assert!(matches!(ack, ServerNotification::SubscriptionsAcknowledged(_)), "{ack:?}");
    let changed = subscription.next().await.unwrap().unwrap();
    assert!(matches!(changed, ServerNotification::ToolListChanged(_)), "{changed:?}");
    drop(subscription);
    let mut cancel = None;
    for _ in 0..100 {
        cancel = received(&log).into_iter().find(|m| m["method"] == "notifications/cancelled");
        if cancel.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let listen = received(&log).into_iter().find(|m| m["method"] == "subscriptions/listen").unwrap();
    assert_eq!(cancel.expect("the subscription is cancelled")["params"]["requestId"], listen["id"]);
    client.close().await;
}

#[tokio::test]
async fn a_legacy_subscription_passes_the_selected_unsolicited_notifications() {
    let log = log_path("legacy-listen");
    let client = builder().connect_stdio(command("legacy-error", &log)).await.unwrap();
    let filter = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
    let mut subscription = client.listen(filter).await.unwrap();
    client.call_tool("touch", ()).await.unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), subscription.next()).await.unwrap().unwrap().unwrap();
    assert!(matches!(first, ServerNotification::ToolListChanged(_)), "{first:?}");
    // The prompts change was not asked for.
    assert!(tokio::time::timeout(Duration::from_millis(300), subscription.next()).await.is_err());
    client.close().await;
}

/// The names of the variables `sh` had, as its `env` wrote them to the captured stderr before
/// the server started (the lines that look like `NAME=value`).
async fn environment_of(command: StdioCommand, log: &PathBuf) -> Vec<String> {
    let client = builder().connect_stdio(command).await.unwrap();
    assert_modern_and_working(&client, log).await;
    let mut names = Vec::new();
    // The stderr reader may lag the server's first answer: wait for the marker `env` ends with.
    for _ in 0..100 {
        let lines = client.stderr_lines();
        if lines.iter().any(|line| line == "END-OF-ENV") {
            let kept = lines.iter().take_while(|line| *line != "END-OF-ENV");
            names = kept.filter_map(|line| Some(line.split_once('=')?.0.to_owned())).collect();
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client.close().await;
    names
}

#[tokio::test]
async fn env_clear_starts_the_server_with_only_the_variables_given() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/stdio_server.py");
    let path = std::env::var("PATH").unwrap();
    let start = |log: &PathBuf| {
        StdioCommand::new("sh")
            .arg("-c")
            .arg(format!("env >&2; echo END-OF-ENV >&2; exec python3 '{script}' modern '{}'", log.display()))
            .env("GIVEN", "yes")
            .stderr(StderrMode::Capture)
            .shutdown_grace(Duration::from_millis(500))
    };
    // Some variable of this process that a shell does not set itself (cargo sets several).
    let ours = std::env::vars()
        .map(|(name, _)| name)
        .find(|name| !["PATH", "PWD", "OLDPWD", "SHLVL", "_", "HOME"].contains(&name.as_str()))
        .expect("the test runs with some environment");
    let log = log_path("env-inherited");
    let inherited = environment_of(start(&log), &log).await;
    assert!(inherited.contains(&ours) && inherited.contains(&"GIVEN".to_owned()), "{inherited:?}");

    let log = log_path("env-cleared");
    let cleared = environment_of(start(&log).env_clear().env("PATH", &path), &log).await;
    // What the shell adds of its own (`PWD`, `SHLVL`, `_`) aside, only what was given.
    let given: Vec<&str> = cleared.iter().map(String::as_str).filter(|n| !["PWD", "SHLVL", "_"].contains(n)).collect();
    assert_eq!(given.iter().copied().collect::<std::collections::BTreeSet<_>>(), ["GIVEN", "PATH"].into());
    assert!(!cleared.contains(&ours), "{ours} is not passed on: {cleared:?}");
}
