//! A configuration replaced while the gateway serves (`Gateway::reload`; the binary's SIGHUP
//! and watched file): upstreams added, removed and changed and a rule added under 64 callers of
//! both eras, with
//! no failed call on the upstreams that stayed, no session dropped, a call in flight on a
//! removed upstream answered; a bad configuration refused and the running one kept.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use mcp_client::EraPreference;
use mcp_gateway::{Gateway, StartError};
use mcp_server::{Context, Error, Server, ToolRoute};
use serde_json::json;

use crate::common;
use common::shifting::tool_names;
use common::{Text, Upstream, client, config, eventually, serve, text};

/// How many calls of `slow` (of any upstream) have begun.
static SLOW_CALLS: AtomicU64 = AtomicU64::new(0);

/// An upstream whose `echo` answers `<name>: <text>` and whose `slow` answers after `text`
/// milliseconds.
fn upstream(name: &'static str) -> Upstream {
    let server = Server::builder(name, "1.0.0")
        .tool(ToolRoute::new("echo", move |_: Context, args: Text| async move {
            Ok::<_, Error>(format!("{name}: {}", args.text))
        }))
        .tool(ToolRoute::new("slow", move |_: Context, args: Text| async move {
            SLOW_CALLS.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(args.text.parse().unwrap_or(0))).await;
            Ok::<_, Error>(format!("{name} slept"))
        }))
        .build()
        .unwrap();
    Upstream::start(server, 0)
}

fn section(name: &str, upstream: &Upstream, extra: &str) -> String {
    format!("[[upstream]]\nname = \"{name}\"\nurl = \"{}\"\n{extra}\n", upstream.url)
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reload_under_load_fails_no_call_of_the_upstreams_that_stay() {
    let (a, b, c) = (upstream("a"), upstream("b"), upstream("c"));
    let gateway = Arc::new(Gateway::start(&config(&(section("a", &a, "") + &section("b", &b, "")))).await.unwrap());
    let url = serve(&gateway).await;

    // 64 callers, one in eight on a legacy session, each calling `a` until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let (calls, failures) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut callers = Vec::new();
    for n in 0..64 {
        let era = if n % 8 == 0 { EraPreference::Legacy } else { EraPreference::Modern };
        let caller = client(&url, era).await;
        let (stop, calls, failures) = (Arc::clone(&stop), Arc::clone(&calls), Arc::clone(&failures));
        callers.push(tokio::spawn(async move {
            let mut own = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let said = format!("{n}-{own}");
                match caller.call_tool("a_echo", json!({ "text": said })).await {
                    Ok(result) if serde_json::to_string(&result.content).unwrap().contains(&format!("a: {said}")) => {
                        calls.fetch_add(1, Ordering::SeqCst);
                    }
                    other => {
                        eprintln!("caller {n}: {other:?}");
                        failures.fetch_add(1, Ordering::SeqCst);
                    }
                }
                own += 1;
            }
            own
        }));
    }
    let watcher = client(&url, EraPreference::Modern).await;
    // Calls made since `before`: the callers are still calling.
    let progressed = async |before: u64| {
        eventually("the callers go on calling", async || calls.load(Ordering::SeqCst) >= before + 64).await;
    };
    progressed(0).await;
    let attempts_of_a = || gateway.connection_attempts().into_iter().find(|(name, _)| name == "a").unwrap().1;
    let a_connected = attempts_of_a();

    // 1. An upstream added: its tools are listed and called.
    let with_c = section("a", &a, "") + &section("b", &b, "") + &section("c", &c, "");
    let reloaded = gateway.reload(&config(&with_c)).await.unwrap();
    assert_eq!(reloaded.added, ["c"]);
    assert!(reloaded.replaced.is_empty() && reloaded.removed.is_empty(), "{reloaded:?}");
    assert_eq!(sorted(tool_names(&watcher).await), ["a_echo", "a_slow", "b_echo", "b_slow", "c_echo", "c_slow"]);
    assert_eq!(text(&watcher, "c_echo", json!({ "text": "hi" })).await, "c: hi");
    progressed(calls.load(Ordering::SeqCst)).await;

    // 2. An upstream removed while a call to it is in flight: the call is answered; its tools go.
    let in_flight = {
        let caller = client(&url, EraPreference::Modern).await;
        tokio::spawn(async move { text(&caller, "b_slow", json!({ "text": "1500" })).await })
    };
    eventually("the call reaches `b`", async || SLOW_CALLS.load(Ordering::SeqCst) == 1).await;
    let reloaded = gateway.reload(&config(&(section("a", &a, "") + &section("c", &c, "")))).await.unwrap();
    assert_eq!(reloaded.removed, ["b"]);
    assert_eq!(sorted(tool_names(&watcher).await), ["a_echo", "a_slow", "c_echo", "c_slow"]);
    let refused = watcher.call_tool("b_echo", json!({ "text": "hi" })).await.unwrap_err();
    assert!(refused.to_string().contains("Unknown tool: b_echo"), "{refused}");
    assert_eq!(in_flight.await.unwrap(), "b slept");
    progressed(calls.load(Ordering::SeqCst)).await;

    // 3. An upstream changed (renamed tools): connected anew; the next list and call see it.
    let renamed = section("a", &a, "") + &section("c", &c, "rename = { echo = \"shout\" }");
    let reloaded = gateway.reload(&config(&renamed)).await.unwrap();
    assert_eq!(reloaded.replaced, ["c"]);
    assert_eq!(sorted(tool_names(&watcher).await), ["a_echo", "a_slow", "c_slow", "shout"]);
    assert_eq!(text(&watcher, "shout", json!({ "text": "hey" })).await, "c: hey");
    progressed(calls.load(Ordering::SeqCst)).await;

    // 4. A rule added: applied from the next call, the upstreams untouched.
    let ruled =
        renamed.clone() + "[[policy]]\nname = \"no-shouting\"\nwhen = 'entry.name == \"shout\"'\ndeny = 'true'\n";
    let reloaded = gateway.reload(&config(&ruled)).await.unwrap();
    assert!(reloaded.added.is_empty() && reloaded.replaced.is_empty() && reloaded.removed.is_empty());
    let refused = watcher.call_tool("shout", json!({ "text": "hey" })).await.unwrap_err();
    assert!(refused.to_string().contains("policy rule `no-shouting`"), "{refused}");
    assert_eq!(sorted(tool_names(&watcher).await), ["a_echo", "a_slow", "c_slow"]);
    progressed(calls.load(Ordering::SeqCst)).await;

    stop.store(true, Ordering::SeqCst);
    let mut each = Vec::new();
    for caller in callers {
        each.push(caller.await.unwrap());
    }
    assert_eq!(failures.load(Ordering::SeqCst), 0, "calls to `a` failed across the reloads");
    assert!(each.iter().all(|made| *made > 0), "every caller made calls: {each:?}");
    assert_eq!(gateway.connected(), ["a", "c"]);
    // `a` kept its connection through the four reloads.
    assert_eq!(attempts_of_a(), a_connected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_configuration_is_refused_and_the_running_one_kept() {
    let (a, b) = (upstream("a"), upstream("b"));
    let gateway = Gateway::start(&config(&section("a", &a, ""))).await.unwrap();
    let watcher = client(&serve(&gateway).await, EraPreference::Modern).await;

    // Invalid: refused before anything starts.
    let mut invalid = config(&section("a", &a, ""));
    invalid.upstreams[0].url = None;
    let error = gateway.reload(&invalid).await.unwrap_err();
    assert!(
        matches!(&error, StartError::Config(why) if why.contains("needs a `command`, a `url` or an `openapi`")),
        "{error}"
    );

    // A new upstream whose tool clashes with a running one's: refused naming both.
    let clashing = section("a", &a, "") + &section("b", &b, "rename = { echo = \"a_echo\" }");
    let error = gateway.reload(&config(&clashing)).await.unwrap_err();
    let StartError::Clash(clash) = &error else { panic!("{error}") };
    assert_eq!((clash.name.as_str(), clash.first.0.as_str(), clash.second.0.as_str()), ("a_echo", "a", "b"));
    assert_eq!(sorted(tool_names(&watcher).await), ["a_echo", "a_slow"]);
    assert_eq!(gateway.connected(), ["a"]);
    assert_eq!(text(&watcher, "a_echo", json!({ "text": "still" })).await, "a: still");

    // What the endpoint was built with needs a restart: said, and kept as it was.
    let moved = format!("listen = \"127.0.0.1:1\"\naudit = \"stderr\"\n{}", section("a", &a, ""));
    let reloaded = gateway.reload(&config(&moved)).await.unwrap();
    assert_eq!(reloaded.restart_needed, ["listen", "audit"]);
    assert!(reloaded.added.is_empty() && reloaded.replaced.is_empty() && reloaded.removed.is_empty());
    assert_eq!(text(&watcher, "a_echo", json!({ "text": "kept" })).await, "a: kept");
}

/// The binary, with its configuration in a file of its own; its URL, read from its first line.
struct Running {
    child: tokio::process::Child,
    url: String,
    log: Arc<std::sync::Mutex<String>>,
}

impl Running {
    async fn start(path: &std::path::Path, extra: &[&str]) -> Running {
        use tokio::io::AsyncBufReadExt as _;
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
            .arg("--config")
            .arg(path)
            .args(extra)
            .env("RUST_LOG", "info")
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let line = lines.next_line().await.unwrap().expect("the gateway says where it listens");
            if let Some(url) = line.strip_prefix("mcp-gateway: listening on ") {
                break url.to_owned();
            }
        };
        let log = Arc::new(std::sync::Mutex::new(String::new()));
        let kept = Arc::clone(&log);
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                kept.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        Running { child, url, log }
    }

    fn logged(&self, what: &str) -> bool {
        self.log.lock().unwrap().contains(what)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_reloads_when_its_file_changes_and_on_sighup() {
    let (a, b) = (upstream("a"), upstream("b"));
    let dir = std::env::temp_dir().join(format!("mcp-gateway-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let listen = "listen = \"127.0.0.1:0\"\n";

    // Watched: a changed file is loaded; a broken one is refused and the running one kept.
    let watched = dir.join("watched.toml");
    std::fs::write(&watched, format!("{listen}{}", section("a", &a, ""))).unwrap();
    let gateway = Running::start(&watched, &[]).await;
    let caller = client(&gateway.url, EraPreference::Modern).await;
    std::fs::write(&watched, format!("{listen}{}{}", section("a", &a, ""), section("b", &b, ""))).unwrap();
    eventually("the added upstream is listed", async || tool_names(&caller).await.len() == 4).await;
    assert_eq!(text(&caller, "b_echo", json!({ "text": "new" })).await, "b: new");
    std::fs::write(&watched, "[[upstream]]\nname = \"broken\"\n").unwrap();
    eventually("the broken file is refused", async || gateway.logged("reload refused")).await;
    assert!(gateway.logged("needs a `command`, a `url` or an `openapi`"));
    assert_eq!(text(&caller, "b_echo", json!({ "text": "kept" })).await, "b: kept");

    // Not watched: SIGHUP loads it.
    let signalled = dir.join("signalled.toml");
    std::fs::write(&signalled, format!("{listen}{}", section("a", &a, ""))).unwrap();
    let gateway = Running::start(&signalled, &["--no-watch"]).await;
    let caller = client(&gateway.url, EraPreference::Modern).await;
    std::fs::write(&signalled, format!("{listen}{}", section("b", &b, ""))).unwrap();
    let pid = gateway.child.id().unwrap().to_string();
    let status = std::process::Command::new("kill").args(["-HUP", &pid]).status().unwrap();
    assert!(status.success());
    eventually("SIGHUP reloads", async || gateway.logged("configuration reloaded")).await;
    assert_eq!(sorted(tool_names(&caller).await), ["b_echo", "b_slow"]);
    assert!(gateway.logged("added: b; replaced: none; removed: a"));
    std::fs::remove_dir_all(&dir).ok();
}
