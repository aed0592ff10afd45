//! The era bridge of one upstream request: what the upstream asks while serving it (a legacy
//! server's `elicitation/create`, `sampling/createMessage` and `roots/list` requests, a modern
//! server's input requests), its progress and its log messages go to the downstream caller the
//! way the caller's era has them, and the answers go back.
//!
//! A legacy caller is asked at once (a server request on its session). A modern caller gets an
//! `InputRequiredResult`; the upstream request is then held here, under an id saved in the
//! `requestState` the gateway seals, until the caller's retry brings the answers (or the
//! upstream's timeout passes, which cancels it).

use std::any::Any;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use mcp_client::{CallOptions, HandlerError, InputAsk, Progress};
use mcp_server::{Context, Error};
use mcp_types::{InputRequest, InputResponse, LoggingMessageNotificationParams};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// Where the id of a held request is saved in the caller's `requestState`.
const HELD_ID: &str = "gateway/held";

/// Upstream requests held for their callers' retries at most, in all and per principal.
pub(crate) const MAX_HELD: usize = 4096;
const MAX_HELD_PER_PRINCIPAL: usize = 64;

/// Progress reports and log messages of one request held for the caller at most; an upstream
/// that sends faster than the caller takes them loses the excess.
const BACKLOG: usize = 64;

/// The upstream requests waiting for their modern callers' answers, by id.
#[derive(Default)]
pub(crate) struct Held {
    requests: Mutex<HashMap<String, HeldRequest>>,
}

struct HeldRequest {
    /// Who may resume it: the principal that started it.
    principal: String,
    bridged: Box<dyn Any + Send>,
}

/// One round of the upstream's questions, waiting for the caller's answers.
struct Round {
    /// Each question under the key the caller knows it by (the upstream's own key, made unique
    /// within the request), with its answer once given.
    questions: Vec<(String, InputRequest, Option<InputResponse>)>,
    reply: oneshot::Sender<Result<Vec<InputResponse>, HandlerError>>,
}

/// What the upstream sends while serving a request, besides its outcome, in the order sent.
enum Event {
    /// The upstream made the request a task (which the client follows).
    Task,
    Progress(Progress),
    Log(LoggingMessageNotificationParams),
    Ask(Vec<InputAsk>, oneshot::Sender<Result<Vec<InputResponse>, HandlerError>>),
}

/// An upstream request as the bridge drives it.
pub(crate) type Upstream<T> = BoxFuture<'static, Result<T, mcp_client::Error>>;

/// The upstream request: polled by the caller's handler, or, while held, on a task of its own.
enum Outcome<T> {
    Inline(Upstream<T>),
    Spawned(AbortOnDrop<Result<T, mcp_client::Error>>),
}

impl<T: Send + 'static> Outcome<T> {
    async fn finished(&mut self) -> Result<Result<T, mcp_client::Error>, Error> {
        match self {
            Outcome::Inline(request) => Ok(request.await),
            Outcome::Spawned(task) => {
                (&mut task.0).await.map_err(|e| Error::internal(format!("the upstream request ended abnormally: {e}")))
            }
        }
    }

    /// Keeps the request running while nobody polls it (in the current span).
    fn spawned(self) -> Self {
        match self {
            Outcome::Inline(request) => {
                Outcome::Spawned(AbortOnDrop(tokio::spawn(tracing::Instrument::in_current_span(request))))
            }
            spawned => spawned,
        }
    }
}

/// An upstream request in flight, with what it sends besides its result.
struct Bridged<T> {
    outcome: Outcome<T>,
    events: mpsc::Receiver<Event>,
    /// A sender of `events` kept here, so that the upstream call dropping its senders as it ends
    /// does not close the channel: a close would wake the caller's task from inside its own poll,
    /// and tokio requeues such a task and wakes another worker to take it.
    _open: mpsc::Sender<Event>,
    waiting: Vec<Round>,
    keys: HashSet<String>,
}

/// A spawned task that is aborted when its handle is dropped: a caller that goes away cancels
/// the upstream request (the client sends the cancellation).
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Whether this request resumes an upstream request held for it (a modern caller's retry with
/// the answers), rather than sending one.
pub(crate) fn resumes(ctx: &Context) -> bool {
    ctx.saved().as_ref().and_then(|saved| saved.get(HELD_ID)).is_some()
}

impl Held {
    /// Sends one upstream request started by `start` (with the options that route its
    /// questions, progress and log messages here), or resumes the held one this retry names,
    /// and serves the caller until the upstream's outcome; `hold_for` bounds how long it waits
    /// for a modern caller's retry.
    pub(crate) async fn bridge<T: Send + 'static>(
        self: &Arc<Self>,
        ctx: &Context,
        hold_for: Duration,
        tasks: bool,
        start: impl FnOnce(CallOptions) -> Upstream<T>,
    ) -> Result<Result<T, mcp_client::Error>, Error> {
        let mut bridged = match ctx.saved().as_ref().and_then(|saved| saved.get(HELD_ID)).and_then(Value::as_str) {
            Some(id) => self.resume::<T>(ctx, id)?,
            None => Bridged::start(ctx, tasks, start),
        };
        loop {
            let missing = bridged.ask_caller(ctx).await?;
            if !missing.is_empty() {
                self.hold(ctx, bridged, hold_for)?;
                return Err(Error::InputRequired(missing));
            }
            tokio::select! {
                outcome = bridged.outcome.finished() => {
                    // What came with the outcome goes first, in order.
                    while let Ok(event) = bridged.events.try_recv() {
                        bridged.pass_on(ctx, event).await;
                    }
                    return outcome;
                }
                Some(event) = bridged.events.recv() => bridged.pass_on(ctx, event).await,
            }
        }
    }

    /// Holds the request for the caller's retry, within the bounds: at most [`MAX_HELD`] in
    /// all and [`MAX_HELD_PER_PRINCIPAL`] for one principal (anonymous callers share one). Beyond
    /// them the request is refused, and so cancelled upstream.
    fn hold<T: Send + 'static>(
        self: &Arc<Self>,
        ctx: &Context,
        bridged: Bridged<T>,
        hold_for: Duration,
    ) -> Result<(), Error> {
        let principal = ctx.principal().as_str().to_owned();
        let id = held_id();
        {
            let mut requests = self.requests.lock().expect("not poisoned");
            let theirs = requests.values().filter(|held| held.principal == principal).count();
            if requests.len() >= MAX_HELD || theirs >= MAX_HELD_PER_PRINCIPAL {
                return Err(Error::internal(format!(
                    "The gateway holds too many upstream requests waiting for their callers' input \
                     ({} in all, {theirs} of this caller; at most {MAX_HELD} and {MAX_HELD_PER_PRINCIPAL}): \
                     answer or abandon some first",
                    requests.len()
                )));
            }
            let bridged = Bridged { outcome: bridged.outcome.spawned(), ..bridged };
            requests.insert(id.clone(), HeldRequest { principal, bridged: Box::new(bridged) });
        }
        ctx.save(json!({ HELD_ID: id }));
        // A caller that never retries: the request is dropped, and so cancelled upstream.
        let held = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(hold_for).await;
            if let Some(held) = held.upgrade() {
                let expired = held.requests.lock().expect("not poisoned").remove(&id);
                if expired.is_some() {
                    tracing::info!(held = %id, "a held upstream request expired: its caller did not retry");
                }
            }
        });
        Ok(())
    }

    fn resume<T: Send + 'static>(&self, ctx: &Context, id: &str) -> Result<Bridged<T>, Error> {
        let gone = || {
            Error::invalid_params(
                "The upstream request this requestState continues is no longer held by this gateway \
                 (it waited past the upstream's timeout, or another gateway instance holds it); \
                 send the request again without requestState",
            )
        };
        let mut requests = self.requests.lock().expect("not poisoned");
        let Some(held) = requests.remove(id) else { return Err(gone()) };
        // The state is sealed for its principal already; this keeps the two bound here too.
        if held.principal != ctx.principal().as_str() {
            requests.insert(id.to_owned(), held);
            return Err(gone());
        }
        held.bridged.downcast::<Bridged<T>>().map(|bridged| *bridged).map_err(|_| gone())
    }
}

impl<T: Send + 'static> Bridged<T> {
    /// `tasks`: whether the caller's tasks extension goes upstream (the upstream's `tasks`).
    fn start(ctx: &Context, tasks: bool, start: impl FnOnce(CallOptions) -> Upstream<T>) -> Self {
        let (sender, events) = mpsc::channel(BACKLOG);
        let open = sender.clone();
        let asks = sender.clone();
        // The upstream may ask what the caller declared it can answer.
        let mut capabilities = ctx.client_capabilities().clone();
        if !tasks && let Some(extensions) = &mut capabilities.extensions {
            extensions.remove(mcp_types::ext::TASKS);
        }
        let mut options = CallOptions::new().on_input(capabilities, move |round| {
            let asks = asks.clone();
            async move {
                let (reply, answer) = oneshot::channel();
                asks.send(Event::Ask(round, reply))
                    .await
                    .map_err(|_| HandlerError("the downstream caller is gone".to_owned()))?;
                answer.await.map_err(|_| HandlerError("the downstream caller gave no answer".to_owned()))?
            }
        });
        // Progress and log messages only when the caller asked for them; an upstream that sends
        // faster than the caller takes them loses the excess.
        // A caller with the tasks extension passes it on (a modern upstream may then run the call
        // as a task, which the client follows): the caller's call becomes a task at once too.
        let tasked = sender.clone();
        options = options.on_task(move |_| drop(tasked.try_send(Event::Task)));
        if ctx.wants_progress() {
            let reports = sender.clone();
            options = options.on_progress(move |report| drop(reports.try_send(Event::Progress(report))));
        }
        if let Some(level) = ctx.log_level() {
            options = options.log_level(level).on_log(move |message| drop(sender.try_send(Event::Log(message))));
        }
        let outcome = Outcome::Inline(start(options));
        Bridged { outcome, events, _open: open, waiting: Vec::new(), keys: HashSet::new() }
    }

    async fn pass_on(&mut self, ctx: &Context, event: Event) {
        match event {
            Event::Task => ctx.run_as_task().await,
            Event::Progress(report) => {
                ctx.progress(report.progress, report.total, report.message.as_deref()).await;
            }
            Event::Log(message) => ctx.log(message.level, message.logger.as_deref(), message.data).await,
            Event::Ask(round, reply) => self.wait_for(round, reply),
        }
    }

    /// Files a round of the upstream's questions, each under a key unique within the request:
    /// the upstream's own key (or the method's name) the first time, numbered after.
    fn wait_for(&mut self, round: Vec<InputAsk>, reply: oneshot::Sender<Result<Vec<InputResponse>, HandlerError>>) {
        let mut questions = Vec::with_capacity(round.len());
        for ask in round {
            let base = ask.key.unwrap_or_else(|| {
                match &ask.request {
                    InputRequest::Elicit(_) => "elicitation",
                    InputRequest::CreateMessage(_) => "sampling",
                    InputRequest::ListRoots(_) => "roots",
                    _ => "input",
                }
                .to_owned()
            });
            let unused = (1..).map(|n| if n == 1 { base.clone() } else { format!("{base}-{n}") });
            let key = unused.into_iter().find(|key| !self.keys.contains(key)).expect("an unused key exists");
            self.keys.insert(key.clone());
            questions.push((key, ask.request, None));
        }
        self.waiting.push(Round { questions, reply });
    }

    /// Asks the caller the questions waiting: a round it has answered (a legacy caller answers
    /// at once; a modern one in its retries) goes back to the upstream; the questions it has yet
    /// to answer are returned.
    async fn ask_caller(&mut self, ctx: &Context) -> Result<BTreeMap<String, InputRequest>, Error> {
        // All at once: a modern caller gets them in one InputRequiredResult, a task publishes
        // them together; a legacy caller is asked one after another.
        let questions: Vec<(String, InputRequest)> = self
            .waiting
            .iter()
            .flat_map(|round| round.questions.iter())
            .filter(|(_, _, answer)| answer.is_none())
            .map(|(key, request, _)| (key.clone(), request.clone()))
            .collect();
        if questions.is_empty() {
            return Ok(BTreeMap::new());
        }
        let mut answers = match ctx.input(questions).await {
            Ok(answers) => answers,
            Err(Error::InputRequired(missing)) => return Ok(missing),
            // The caller cannot answer (it lacks the capability, or went away): so is the
            // upstream request, which ends with the error.
            Err(error) => return Err(error),
        };
        for mut round in std::mem::take(&mut self.waiting) {
            for (key, _, answer) in &mut round.questions {
                if answer.is_none() {
                    *answer = answers.remove(key.as_str());
                }
            }
            let answers = round.questions.into_iter().filter_map(|(_, _, answer)| answer).collect();
            let _ = round.reply.send(Ok(answers));
        }
        Ok(BTreeMap::new())
    }
}

/// A random id for a held request (the `requestState` that names it is sealed, so the id needs
/// only to be unique).
fn held_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let process = std::process::id();
    let started = *STARTED.get_or_init(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos()
    });
    format!("{process:x}-{started:x}-{:x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

static STARTED: std::sync::OnceLock<u128> = std::sync::OnceLock::new();
