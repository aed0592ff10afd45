//! Hostile upstreams against the gateway's bounds (issue 42, item 7): the bytes an upstream's
//! lists take, the index rebuilt off the async workers after a list change, and the names the
//! gateway records bounded by what is listed now (an upstream renaming its entries cannot grow
//! them).

use std::sync::atomic::Ordering;
use std::sync::{Mutex, Once};
use std::thread::ThreadId;

use mcp_client::EraPreference;
use mcp_gateway::Gateway;
use serde_json::json;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;

mod common;
use common::shifting::{Shifting, resource_uris, tool_names};
use common::{Upstream, client, config, eventually, serve, text};

/// The gateway's events (target `mcp_gateway`) of every test of this file: the thread each
/// happened on, and its level and fields as text.
static EVENTS: Mutex<Vec<(ThreadId, String)>> = Mutex::new(Vec::new());

struct Record;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Record {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut text = format!("{} ", event.metadata().level());
        event.record(&mut Fields(&mut text));
        EVENTS.lock().unwrap().push((std::thread::current().id(), text));
    }
}

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={value:?} ", field.name()));
    }
}

/// The events recorded so far that contain every one of `parts`.
fn events(parts: &[&str]) -> Vec<(ThreadId, String)> {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let gateway_only = tracing_subscriber::filter::filter_fn(|m| m.target().starts_with("mcp_gateway"));
        let subscriber = tracing_subscriber::registry().with(Record.with_filter(gateway_only));
        tracing::subscriber::set_global_default(subscriber).unwrap();
    });
    let events = EVENTS.lock().unwrap();
    events.iter().filter(|(_, text)| parts.iter().all(|part| text.contains(part))).cloned().collect()
}

/// An upstream with one tool, `echo` (answering `echo <arguments>`).
fn echo() -> Upstream {
    Upstream::start(Shifting::new("echo", &["echo"], &[], &[]).server(), 0)
}

/// The size as JSON of each tool and of each resource `url` lists, summed by kind.
async fn sizes(url: &str) -> (usize, usize) {
    let direct = client(url, EraPreference::Modern).await;
    let tools = direct.all_tools().await.unwrap();
    let resources = direct.all_resources().await.unwrap();
    let size = |value: serde_json::Value| value.to_string().len();
    let tools = tools.iter().map(|tool| size(json!(tool))).sum();
    (tools, resources.iter().map(|resource| size(json!(resource))).sum())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_whose_lists_together_pass_max_list_bytes_is_degraded_and_the_others_are_served() {
    events(&[]);
    let fat = Shifting::new("fat", &[], &[], &[]);
    fat.padding.store(1000, Ordering::SeqCst);
    *fat.tools.lock().unwrap() = (0..100).map(|n| format!("tool{n}")).collect();
    *fat.resources.lock().unwrap() = (0..100).map(|n| format!("fat://r{n}")).collect();
    let (fat, echo) = (Upstream::start(fat.server(), 0), echo());
    // Figure: 100 tools and 100 resources with 1,000-byte descriptions, each kind under 150,000
    // bytes of JSON and both together over it.
    let (tools, resources) = sizes(&fat.url).await;
    eprintln!("{tools} bytes of tools, {resources} of resources");
    assert!(tools < 150_000 && resources < 150_000 && tools + resources > 150_000, "{tools} + {resources}");
    let gateway = Gateway::start(&config(&format!(
        "[[upstream]]\nname = \"fat_bytes\"\nurl = \"{}\"\nmax_list_bytes = 150000\n\
         [[upstream]]\nname = \"e\"\nurl = \"{}\"\n",
        fat.url, echo.url
    )))
    .await
    .expect("the gateway starts");
    // Against `max_list_bytes = 150000`: degraded, 0 of its entries listed; the other served.
    let states = gateway.upstreams();
    assert_eq!(states[0].1, Err("degraded: its lists take more than 150000 bytes of JSON (`max_list_bytes`)".into()));
    assert_eq!(states[1], ("e".to_owned(), Ok(())));
    let client = client(&serve(&gateway).await, EraPreference::Modern).await;
    assert_eq!(tool_names(&client).await, ["e_echo"]);
    assert!(client.all_resources().await.unwrap().is_empty());
    assert_eq!(text(&client, "e_echo", json!({"n": 1})).await, "echo {\"n\":1}");
    // Logged as an error naming the upstream and the bound.
    let logged = events(&["ERROR", "upstream degraded", "fat_bytes", "more than 150000 bytes", "`max_list_bytes`"]);
    assert!(!logged.is_empty(), "no error logged: {:?}", events(&["fat_bytes"]));
    // With room for both kinds (250,000 bytes) the same upstream is served.
    let roomy = Gateway::start(&config(&format!(
        "[[upstream]]\nname = \"fat_roomy\"\nurl = \"{}\"\nmax_list_bytes = 250000\n",
        fat.url
    )))
    .await
    .expect("the gateway starts");
    assert_eq!(roomy.upstreams()[0].1, Ok(()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_listing_megabytes_is_read_no_further_than_the_page_that_passes_max_list_bytes() {
    events(&[]);
    let huge = Shifting::new("huge", &[], &[], &[]);
    huge.padding.store(1000, Ordering::SeqCst);
    *huge.tools.lock().unwrap() = (0..5000).map(|n| format!("tool{n}")).collect();
    let upstream = Upstream::start(huge.server(), 0);
    let gateway = Gateway::start(&config(&format!(
        "[[upstream]]\nname = \"huge_pages\"\nurl = \"{}\"\nmax_list_bytes = 150000\n",
        upstream.url
    )))
    .await
    .expect("the gateway starts");
    let why = gateway.upstreams()[0].1.clone().expect_err("degraded");
    assert!(why.contains("more than 150000 bytes of JSON (`max_list_bytes`)"), "{why}");
    // Figure: 5,000 tools of about 1,060 bytes (about 5.3 MB, 50 pages of 100) against
    // 150,000 bytes: each listing attempt reads at most 2 pages, the second of which passes the
    // bound (before: all 50, and the upstream served). The gateway retries with backoff, so
    // the pages read are compared with the attempts ended (read after them) plus one running.
    let pages = huge.tool_lists.load(Ordering::SeqCst);
    let attempts = gateway.connection_attempts()[0].1 as usize;
    eprintln!("{pages} pages read in {attempts} attempts");
    assert!(attempts >= 1 && pages <= 2 * (attempts + 1), "{pages} pages read in {attempts} attempts");
}

#[tokio::test(flavor = "current_thread")]
async fn the_index_is_rebuilt_after_a_list_change_off_the_runtimes_only_thread() {
    events(&[]);
    // A current-thread runtime: the test's thread is the one async worker, which runs the
    // gateway's supervisors (the upstreams run on threads of their own).
    let worker = std::thread::current().id();
    let owner = Shifting::new("owner", &["add"], &[], &[]);
    let hostile = Shifting::new("hostile", &["marker0"], &[], &[]);
    let (owner_up, hostile_server) = (Upstream::start(owner.server(), 0), hostile.server());
    let hostile_up = Upstream::start(hostile_server.clone(), 0);
    let entry = |name: &str, url: &str| format!("[[upstream]]\nname = \"{name}\"\nurl = \"{url}\"\nprefix = \"\"\n");
    let toml = entry("rebuilt_owner", &owner_up.url) + &entry("rebuilt_hostile", &hostile_up.url);
    let gateway = Gateway::start(&config(&toml)).await.unwrap();
    let client = client(&serve(&gateway).await, EraPreference::Modern).await;
    // The hostile upstream lists the owner's tool: the rebuild after that change leaves it out,
    // and says so in the log, on the thread it runs on.
    hostile.tools.lock().unwrap().extend(["add".to_owned(), "marker1".to_owned()]);
    hostile_server.notify_tools_list_changed();
    eventually("the re-list", async || tool_names(&client).await.contains(&"marker1".to_owned())).await;
    // Figure: 1 rebuild left the tool out, on a thread other than the runtime's one worker
    // (before: on it, holding up every other task of the runtime meanwhile).
    let left_out = events(&["left out", "refused=rebuilt_hostile"]);
    assert_eq!(left_out.len(), 1, "{left_out:?}");
    assert_ne!(left_out[0].0, worker, "the rebuild ran on the async worker");
    assert_eq!(text(&client, "add", json!({})).await, "owner {}");
}

async fn template_uris(client: &mcp_client::Client) -> Vec<String> {
    client.clear_cache();
    client.all_resource_templates().await.unwrap().into_iter().map(|t| t.uri_template).collect()
}

async fn read_text(client: &mcp_client::Client, uri: &str) -> String {
    let result = client.read_resource(uri).await.unwrap_or_else(|e| panic!("{uri}: {e}"));
    serde_json::to_value(&result.contents).unwrap()[0]["text"].as_str().unwrap().to_owned()
}

/// 100 tool names of generation `g`.
fn generation(prefix: &str, g: usize) -> Vec<String> {
    (0..100).map(|n| format!("{prefix}{g}_t{n}")).collect()
}

/// 10 resource templates of generation `g`, each with a literal start of its own.
fn templates(g: usize) -> Vec<String> {
    (0..10).map(|n| format!("g{g}://t{n}/{{x}}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_renaming_its_100_tools_50_times_leaves_only_its_current_100_names_recorded() {
    let renamer = Shifting::new("renamer", &[], &[], &[]);
    *renamer.tools.lock().unwrap() = generation("g", 0);
    *renamer.templates.lock().unwrap() = templates(0);
    let server = renamer.server();
    let upstream = Upstream::start(server.clone(), 0);
    let gateway = Gateway::start(&config(&format!(
        "[[upstream]]\nname = \"renamer\"\nurl = \"{}\"\nprefix = \"\"\nrelist_delay_secs = 0\n",
        upstream.url
    )))
    .await
    .unwrap();
    let client = client(&serve(&gateway).await, EraPreference::Modern).await;
    assert_eq!(gateway.recorded_names(), 120);
    for g in 1..=50 {
        *renamer.tools.lock().unwrap() = generation("g", g);
        *renamer.templates.lock().unwrap() = templates(g);
        server.notify_tools_list_changed();
        server.notify_resources_list_changed();
        let (tool, template) = (format!("g{g}_t99"), format!("g{g}://t9/{{x}}"));
        let listed =
            async || tool_names(&client).await.contains(&tool) && template_uris(&client).await.contains(&template);
        eventually("the generation listed", listed).await;
    }
    // Figure: after 50 renamings of its 100 tools and 10 templates (5,100 tool names and 510
    // templates listed in all), the gateway records 120 names, the current ones: 100 tools, 10
    // templates and their 10 literal starts (before: 6,120).
    assert_eq!(tool_names(&client).await.len(), 100);
    assert_eq!(gateway.recorded_names(), 120);
    assert_eq!(text(&client, "g50_t7", json!({})).await, "renamer {}");
    assert_eq!(read_text(&client, "g50://t3/x").await, "renamer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_keeps_its_names_while_down_and_those_it_drops_once_up_go_to_another() {
    let renamer = Shifting::new("renamer", &[], &[], &[]);
    let names = |prefix: &str| (0..10).map(|n| format!("{prefix}{n}")).collect::<Vec<_>>();
    *renamer.tools.lock().unwrap() = names("a");
    *renamer.templates.lock().unwrap() = vec!["notes://a/{x}".to_owned()];
    let renamer_up = Upstream::start(renamer.server(), 0);
    let port = renamer_up.port();
    let taker = Shifting::new("taker", &["marker0"], &[], &[]);
    let taker_server = taker.server();
    let taker_up = Upstream::start(taker_server.clone(), 0);
    let entry = |name: &str, url: &str| {
        format!(
            "[[upstream]]\nname = \"{name}\"\nurl = \"{url}\"\nprefix = \"\"\nrelist_delay_secs = 0\n\
             health_interval_secs = 0.1\n"
        )
    };
    let toml = entry("renamer", &renamer_up.url) + &entry("taker", &taker_up.url);
    let gateway = Gateway::start(&config(&toml)).await.unwrap();
    let client = client(&serve(&gateway).await, EraPreference::Modern).await;
    eventually("both listed", async || tool_names(&client).await.len() == 11).await;
    assert_eq!(gateway.recorded_names(), 13);

    // The owner goes away; the other lists its 10 names, and a template inside its template's.
    drop(renamer_up);
    eventually("the owner down", async || gateway.upstreams()[0].1.is_err()).await;
    let mut listed = names("a");
    listed.extend(["marker0".to_owned(), "marker1".to_owned()]);
    *taker.tools.lock().unwrap() = listed;
    *taker.templates.lock().unwrap() = vec!["notes://a/1{y}".to_owned()];
    *taker.resources.lock().unwrap() = vec!["taker://marker".to_owned()];
    taker_server.notify_tools_list_changed();
    taker_server.notify_resources_list_changed();
    let relisted = async || {
        let marked = tool_names(&client).await.contains(&"marker1".to_owned());
        marked && resource_uris(&client).await.contains(&"taker://marker".to_owned())
    };
    eventually("the re-list of both kinds", relisted).await;
    // Figure: while the owner is down, 0 of its 10 names and 0 of its template's URIs go to
    // the other (a call and a read name the owner); 26 names recorded: its 10 tools, template
    // and start, the other's 2 tools and resource, and the other's 10 tools and template
    // refused.
    assert_eq!(tool_names(&client).await, ["marker0", "marker1"]);
    let error = client.call_tool("a3", json!({})).await.unwrap_err().to_string();
    assert!(error.contains("upstream `renamer`, which is unavailable"), "{error}");
    let error = client.read_resource("notes://a/1z").await.unwrap_err().to_string();
    assert!(error.contains("upstream `renamer` is unavailable"), "{error}");
    assert_eq!((taker.calls.load(Ordering::SeqCst), taker.reads.load(Ordering::SeqCst)), (0, 0));
    assert_eq!(gateway.recorded_names(), 26);

    // The owner comes back listing other names: the 10 it dropped are free, and taken.
    *renamer.tools.lock().unwrap() = names("b");
    *renamer.templates.lock().unwrap() = vec!["notes://b/{x}".to_owned()];
    let _back = Upstream::start(renamer.server(), port);
    eventually("the owner back", async || tool_names(&client).await.contains(&"b9".to_owned())).await;
    // Figure: 10 of 10 calls to the dropped names and 5 of 5 reads under the dropped template
    // reach the other upstream, 0 the owner; 27 names recorded (the owner's 10 new tools, new
    // template and start; the other's 12 tools, resource, template and start).
    for n in 0..10 {
        assert_eq!(text(&client, &format!("a{n}"), json!({"n": n})).await, format!("taker {{\"n\":{n}}}"));
    }
    for n in 0..5 {
        assert_eq!(read_text(&client, &format!("notes://a/1z{n}")).await, "taker");
    }
    assert_eq!((taker.calls.load(Ordering::SeqCst), renamer.calls.load(Ordering::SeqCst)), (10, 0));
    assert_eq!((taker.reads.load(Ordering::SeqCst), renamer.reads.load(Ordering::SeqCst)), (5, 0));
    assert_eq!(tool_names(&client).await.len(), 22);
    assert_eq!(gateway.recorded_names(), 27);
}

/// An upstream that stays down is said at its first failure, then at most once a minute (it
/// was a warning per retry, two with the failure's own line), with where it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_stays_down_is_said_once_with_its_url() {
    events(&[]);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", closed.local_addr().unwrap());
    drop(closed);
    let gateway = Gateway::start(&config(&format!("[[upstream]]\nname = \"gone\"\nurl = \"{url}\"\n"))).await.unwrap();
    let why = gateway.upstreams()[0].1.clone().expect_err("down");
    assert!(why.starts_with("connecting failed: connection refused (request id gw-"), "{why}");
    // Retried after 0.1, 0.2, 0.4, 0.8 and 1.6 s: five more attempts, none said.
    eventually("five more attempts", async || gateway.connection_attempts()[0].1 >= 6).await;
    let said = events(&["upstream=gone ", "upstream unavailable"]);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].1.contains(&format!("target={url}")), "{}", said[0].1);
    assert_eq!(events(&["upstream=gone ", "failed connecting"]).len(), 0);
    assert_eq!(gateway.upstreams()[0].1.clone().unwrap_err(), why, "callers are told the said attempt");
}
