//! A handler that waits runs as its `Reply` is polled, in the task that reads the reply: no task
//! is spawned for it, dropping the reply stops it, and a panic in it ends the reply without a
//! response instead of unwinding into the transport.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::modern;
use futures::{FutureExt as _, StreamExt as _};
use mcp_server::{Context, Error, NoArguments, Options, Server, Session, ToolRoute};
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// Sets its flag when dropped: tells whether a handler's future was dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A server serving one request at a time per session, whose `wait` tool answers "released"
/// once the next of `releases` fires, and whose `panic_later` tool panics after waiting once.
fn server(releases: Vec<oneshot::Receiver<()>>, dropped: Arc<AtomicBool>) -> Server {
    let releases = Arc::new(Mutex::new(releases));
    let mut options = Options::default();
    options.max_in_flight = 1;
    Server::builder("reply", "1.0.0")
        .options(options)
        .tool(ToolRoute::new("wait", move |_: Context, _: NoArguments| {
            let release = releases.lock().unwrap().pop();
            let flag = DropFlag(Arc::clone(&dropped));
            async move {
                let _flag = flag;
                release.expect("a release per call").await.map_err(|_| Error::failed("never released"))?;
                Ok::<_, Error>("released")
            }
        }))
        .tool(ToolRoute::new("progress_later", |ctx: Context, _: NoArguments| async move {
            ctx.progress(1.0, Some(2.0), None).await;
            tokio::task::yield_now().await;
            // Sent in the same step that ends the handler: it must still come before the response.
            ctx.progress(2.0, Some(2.0), None).await;
            Ok::<_, Error>("done")
        }))
        .tool(ToolRoute::new("panic_later", |_: Context, _: NoArguments| async move {
            tokio::task::yield_now().await;
            if true {
                panic!("the handler fails after its first step");
            }
            Ok::<_, Error>("unreachable")
        }))
        .build()
        .unwrap()
}

fn call(id: i64, tool: &str) -> Value {
    modern(id, "tools/call", json!({ "name": tool, "arguments": {} }))
}

#[tokio::test(flavor = "current_thread")]
async fn a_waiting_handler_runs_as_its_reply_is_polled_with_no_task_of_its_own() {
    let (release, waiting) = oneshot::channel();
    let dropped = Arc::new(AtomicBool::new(false));
    let server = server(vec![waiting], Arc::clone(&dropped));
    let session = Session::new();
    let metrics = tokio::runtime::Handle::current().metrics();
    let tasks_before = metrics.num_alive_tasks();
    let mut reply = server.handle(&session, call(1, "wait"), None).expect("a request has a reply");
    assert!(reply.next().now_or_never().is_none(), "the handler waits for its release");
    assert_eq!(metrics.num_alive_tasks(), tasks_before, "no task was spawned for the waiting handler");
    release.send(()).unwrap();
    let response: Value = serde_json::from_str(&reply.next().await.expect("the response").json).unwrap();
    assert_eq!(response["id"], 1);
    assert_eq!(response["result"]["content"][0]["text"], "released", "{response}");
    assert!(reply.next().await.is_none(), "the response ends the reply");
    assert!(dropped.load(Ordering::SeqCst), "the handler ended");
}

#[tokio::test(flavor = "current_thread")]
async fn dropping_a_waiting_reply_stops_its_handler_and_frees_its_place() {
    let (second_release, second) = oneshot::channel();
    let (first_release, first) = oneshot::channel();
    let dropped = Arc::new(AtomicBool::new(false));
    let server = server(vec![second, first], Arc::clone(&dropped));
    let session = Session::new();
    let mut reply = server.handle(&session, call(1, "wait"), None).expect("a request has a reply");
    assert!(reply.next().now_or_never().is_none(), "the handler waits for its release");
    assert!(!dropped.load(Ordering::SeqCst), "the handler is still waiting");
    drop(reply);
    assert!(dropped.load(Ordering::SeqCst), "dropping the reply dropped the handler");
    assert!(first_release.send(()).is_err(), "nothing waits for the first release any more");
    // One request at a time: the stopped one no longer counts, so the next is served.
    let mut reply = server.handle(&session, call(2, "wait"), None).expect("a request has a reply");
    assert!(reply.next().now_or_never().is_none(), "the second call waits (it was not refused as busy)");
    second_release.send(()).unwrap();
    let response: Value = serde_json::from_str(&reply.next().await.expect("the response").json).unwrap();
    assert_eq!(response["result"]["content"][0]["text"], "released", "{response}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_handler_panicking_after_its_first_step_ends_its_reply_without_a_response() {
    let (_release, waiting) = oneshot::channel();
    let server = server(vec![waiting], Arc::new(AtomicBool::new(false)));
    let session = Session::new();
    let mut reply = server.handle(&session, call(1, "panic_later"), None).expect("a request has a reply");
    let polled = std::panic::AssertUnwindSafe(reply.next()).catch_unwind().await;
    assert!(matches!(polled, Ok(None)), "the panic stays in the handler and the reply ends");
    drop(reply);
    // One request at a time: the handler that panicked no longer counts.
    let mut reply = server.handle(&session, call(2, "wait"), None).expect("a request has a reply");
    assert!(reply.next().now_or_never().is_none(), "the next call waits (it was not refused as busy)");
}

/// Counts the wakes of the task that polls a reply.
struct CountingWaker(AtomicUsize);

impl std::task::Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A handler ending, and its reply being dropped, must not wake the task reading the reply from
/// inside that task's own poll: tokio would requeue the task and wake another worker for nothing.
#[tokio::test(flavor = "current_thread")]
async fn a_handler_ending_wakes_nobody() {
    let (release, waiting) = oneshot::channel();
    let server = server(vec![waiting], Arc::new(AtomicBool::new(false)));
    let session = Session::new();
    let mut reply = server.handle(&session, call(1, "wait"), None).expect("a request has a reply");
    let wakes = Arc::new(CountingWaker(AtomicUsize::new(0)));
    let waker = std::task::Waker::from(Arc::clone(&wakes));
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(reply.poll_next_unpin(&mut cx).is_pending(), "the handler waits for its release");
    release.send(()).unwrap();
    assert_eq!(wakes.0.load(Ordering::SeqCst), 1, "the release wakes the reply's reader");
    let std::task::Poll::Ready(Some(response)) = reply.poll_next_unpin(&mut cx) else {
        panic!("the released handler answers at once")
    };
    assert!(response.json.contains("released"), "{}", response.json);
    drop(reply);
    assert_eq!(wakes.0.load(Ordering::SeqCst), 1, "the handler's end and the reply's drop woke nobody");
}

#[tokio::test(flavor = "current_thread")]
async fn a_waiting_handlers_notifications_come_before_its_response() {
    let (_release, waiting) = oneshot::channel();
    let server = server(vec![waiting], Arc::new(AtomicBool::new(false)));
    let session = Session::new();
    let mut request = call(1, "progress_later");
    request["params"]["_meta"]["progressToken"] = json!("p");
    let reply = server.handle(&session, request, None).expect("a request has a reply");
    let messages: Vec<Value> = reply.map(|message| serde_json::from_str(&message.json).unwrap()).collect().await;
    let progress: Vec<_> = messages.iter().take(2).map(|m| m["params"]["progress"].clone()).collect();
    assert_eq!(progress, [json!(1.0), json!(2.0)], "{messages:?}");
    assert_eq!(messages.len(), 3, "two notifications, then the response: {messages:?}");
    assert_eq!(messages[2]["result"]["content"][0]["text"], "done", "{messages:?}");
}
