//! What a handler can do besides returning its result: report progress, log, ask the client for
//! input, announce changes. The same calls serve both protocol eras.

use std::any::Any;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use mcp_types::{
    Action, ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationCapability, Implementation, InputRequest, InputResponse,
    ListRootsRequest, ListRootsResult, LoggingLevel, ProgressToken, SamplingCapability,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::app_state::AppState;
use crate::elicitation::Elicited;
use crate::error::Error;
use crate::error::input_method;
use crate::message::Outgoing;
use crate::session::Session;
use crate::tasks::{TaskLink, task_input};
use crate::{era::Era, principal::Principal};

/// The request a handler is serving, and its channel back to the client.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner<dyn Served>>,
}

/// What a context needs of the server serving it. The core implements it for its `Server`, so
/// that the context stands below the core; the core's `Context::server` hands the `Server` back.
pub(crate) trait Served: Any + Send + Sync {
    /// The application states given to the builder.
    fn app_state(&self) -> &AppState;
    /// How long a request to a legacy client may wait for its answer.
    fn client_request_timeout(&self) -> Duration;
}

/// A context's request; `server` last, so that the core's `Inner<Server>` becomes an
/// `Inner<dyn Served>` in the same allocation.
pub(crate) struct Inner<S: ?Sized> {
    pub era: Era,
    /// A constant where this server knows the version (every one it negotiates).
    pub protocol_version: Cow<'static, str>,
    pub client_capabilities: Arc<ClientCapabilities>,
    pub client_info: Option<Arc<Implementation>>,
    pub log_level: Option<LoggingLevel>,
    pub progress_token: Option<ProgressToken>,
    pub sink: crate::message::Sink,
    /// The legacy session that can carry server-to-client requests.
    pub session: Option<Arc<Session>>,
    /// Modern era: the input responses known in this round (earlier rounds' ones come from
    /// `requestState`), and the ones the handler used, to seal into the next state.
    pub answers: BTreeMap<String, Value>,
    pub used: Mutex<BTreeMap<String, Value>>,
    /// Modern era: what the handler keeps for its next round, sealed into `requestState`.
    pub saved: Mutex<Option<Value>>,
    pub principal: Principal,
    /// Whether this call may become a task (the tool allows it and the request declared the
    /// tasks extension), and the task once it is one.
    pub may_become_task: bool,
    pub task: OnceLock<TaskLink>,
    /// Woken by [`Context::run_as_task`]: the call becomes a task now, whatever the grace.
    pub task_now: tokio::sync::Notify,
    pub server: S,
}

impl Context {
    pub(crate) fn new<S: Served>(inner: Inner<S>) -> Self {
        Context { inner: Arc::new(inner) }
    }

    /// The server serving this request, as the context sees it.
    pub(crate) fn served(&self) -> &dyn Served {
        &self.inner.server
    }

    /// Whether this call may become a task (then its handler outlives the request's span).
    pub(crate) fn may_become_task(&self) -> bool {
        self.inner.may_become_task
    }

    /// Resolves when the handler asked to become a task now ([`Context::run_as_task`]).
    pub(crate) async fn task_requested(&self) {
        self.inner.task_now.notified().await
    }

    pub(crate) fn used_answers(&self) -> BTreeMap<String, Value> {
        self.inner.used.lock().expect("not poisoned").clone()
    }

    pub(crate) fn attach_task(&self, link: TaskLink) {
        let _ = self.inner.task.set(link);
    }

    /// The log level the client asked for: this request's (`_meta`) on the modern wire, the
    /// session's (`logging/setLevel`) on a legacy one; `None` when it asked for no log messages
    /// (modern) or set no level (legacy).
    pub fn log_level(&self) -> Option<LoggingLevel> {
        match (&self.inner.session, self.inner.era) {
            (Some(session), Era::Legacy) => session.log_level(),
            _ => self.inner.log_level,
        }
    }

    /// What this handler [saved](Context::save) in the round before, on a multi-round request
    /// of the modern wire (it came back sealed in `requestState`); `None` in the first round and
    /// on a legacy session.
    pub fn saved(&self) -> Option<Value> {
        self.inner.saved.lock().expect("not poisoned").clone()
    }

    /// Keeps `value` for the handler's next round: when it returns
    /// [`Error::InputRequired`](crate::Error::InputRequired) (as `Context::input` does), the
    /// value is sealed into the `requestState` of that result with the answers so far (signed,
    /// bound to the request and the principal), and the retry reads it with
    /// [`Context::saved`]. It replaces what an earlier round saved. A legacy session has no
    /// rounds: there it does nothing.
    pub fn save(&self, value: Value) {
        *self.inner.saved.lock().expect("not poisoned") = Some(value);
    }

    /// Which protocol era this request came in.
    pub fn era(&self) -> Era {
        self.inner.era
    }

    /// The protocol version of this request (`_meta` on the modern wire, the negotiated one on a
    /// legacy session).
    pub fn protocol_version(&self) -> &str {
        &self.inner.protocol_version
    }

    /// The capabilities the client declared for this request (modern) or its session (legacy).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.client_capabilities
    }

    /// The client's self-reported identity, if it sent one.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.inner.client_info.as_deref()
    }

    /// The party making the request, as the transport knows it ([`Principal`]).
    pub fn principal(&self) -> &Principal {
        &self.inner.principal
    }

    /// The access token this request was authorized with (HTTP with `HttpConfig::authorization`,
    /// feature `auth`): subject, client id, scopes, expiry and every claim. On a legacy session,
    /// the token of the session's latest request (always of the same principal).
    pub fn token(&self) -> Option<&crate::principal::VerifiedToken> {
        self.inner.principal.token()
    }

    /// The id of the task this call became, if it became one.
    pub fn task_id(&self) -> Option<&str> {
        self.inner.task.get().map(|link| link.id.as_str())
    }

    /// Makes the call a task now, if it may become one (a task-capable tool, a request that
    /// declared the tasks extension), rather than at the handler's first wait: input asked for
    /// afterwards is answered through `tasks/update`, not by retrying the call. Elsewhere it does
    /// nothing.
    pub async fn run_as_task(&self) {
        if self.inner.may_become_task && self.inner.task.get().is_none() {
            // One `Pending`: the server turns the call into a task when its handler waits (or,
            // within `Options::task_grace`, when told).
            self.inner.task_now.notify_one();
            tokio::task::yield_now().await;
        }
    }

    /// Whether the client asked for progress reports (sent a progress token): without one,
    /// [`Context::progress`] does nothing.
    pub fn wants_progress(&self) -> bool {
        self.inner.progress_token.is_some()
    }

    /// Reports progress, if the client asked for it with a progress token; otherwise does nothing.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.inner.progress_token else { return };
        let mut params = json!({ "progressToken": token, "progress": progress });
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        self.notify("notifications/progress", params).await;
    }

    /// Sends a log message on this request's stream if the client asked for this level: per
    /// request through `_meta` on the modern wire (nothing without it), per session through
    /// `logging/setLevel` on a legacy one.
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: Value) {
        let threshold = match (&self.inner.session, self.inner.era) {
            (Some(session), Era::Legacy) => session.log_level(),
            _ => match self.inner.log_level {
                Some(level) => Some(level),
                None => return,
            },
        };
        if threshold.is_some_and(|threshold| level < threshold) {
            return;
        }
        let mut params = json!({ "level": level, "data": data });
        if let Some(logger) = logger {
            params["logger"] = json!(logger);
        }
        self.notify("notifications/message", params).await;
    }

    async fn notify(&self, method: &str, params: Value) {
        // The tasks extension has no channel for a task's progress or log messages.
        if self.inner.task.get().is_some() {
            return;
        }
        let message = json!({ "jsonrpc": "2.0", "method": method, "params": params });
        // A closed sink means the client went away; the handler will be stopped soon.
        let _ = self.inner.sink.send(Outgoing::notification(&message)).await;
    }

    /// On a legacy Streamable HTTP session, ends the current SSE response early after its
    /// priming event (SEP-1699 polling): the client reconnects with `Last-Event-ID` and gets the
    /// rest, while the handler keeps running. Elsewhere it does nothing.
    pub async fn close_stream(&self) {
        if self.inner.era == Era::Legacy {
            let _ = self.inner.sink.send(Outgoing::stream_break()).await;
        }
    }

    /// The application state of type `S` given to
    /// [`ServerBuilder::state`](crate::ServerBuilder::state); an error naming the type when none
    /// was given.
    pub fn state<S: Send + Sync + 'static>(&self) -> Result<&S, Error> {
        self.inner.server.app_state().get::<S>().ok_or_else(|| {
            Error::internal(format!(
                "no state of type `{}` was given to ServerBuilder::state",
                std::any::type_name::<S>()
            ))
        })
    }

    /// Asks the user to fill in a form for `T` and returns the values as a `T`, or how the user
    /// declined. The form's schema is derived from `T` (the spec's restricted elicitation
    /// schema: flat strings, numbers, integers, booleans, enums of strings and multi-selects of
    /// them); a `T` it cannot express is an error naming the field, before anything is sent.
    /// On the modern wire the question is named by `T`'s type name across rounds: ask two
    /// different questions of the same type with [`Context::elicit_named`].
    ///
    /// ```no_run
    /// # async fn demo(ctx: mcp_server::Context) -> Result<(), mcp_server::Error> {
    /// use mcp_server::Elicited;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Confirm {
    ///     /// Delete the note for good?
    ///     confirm: bool,
    /// }
    /// match ctx.elicit::<Confirm>("Delete the note?").await? {
    ///     Elicited::Accept(Confirm { confirm: true }) => { /* delete */ }
    ///     _ => { /* keep it */ }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn elicit<T>(&self, message: &str) -> Result<Elicited<T>, Error>
    where
        T: DeserializeOwned + schemars::JsonSchema,
    {
        let name = std::any::type_name::<T>();
        let key = name.rsplit("::").next().unwrap_or(name);
        self.elicit_named(key, message).await
    }

    /// As [`Context::elicit`], with `key` naming the question across rounds on the modern wire.
    pub async fn elicit_named<T>(&self, key: &str, message: &str) -> Result<Elicited<T>, Error>
    where
        T: DeserializeOwned + schemars::JsonSchema,
    {
        let params = crate::elicitation::form_params::<T>(message).map_err(Error::internal)?;
        let answer = self.elicit_with(key, params).await?;
        Ok(match answer.action {
            Action::Accept => {
                let content = answer.content.map(serde_json::to_value).transpose();
                let content = content.map_err(|e| Error::invalid_params(e.to_string()))?;
                let value = crate::elicitation::decode_answer(content)
                    .map_err(|why| Error::invalid_params(format!("elicitation `{key}`: {why}")))?;
                Elicited::Accept(value)
            }
            Action::Decline => Elicited::Decline,
            Action::Cancel => Elicited::Cancel,
        })
    }

    /// Asks the user for input with a request built by hand (a form, or a URL to visit). `key`
    /// names this question across rounds on the modern wire.
    pub async fn elicit_with(&self, key: &str, params: ElicitRequestParams) -> Result<ElicitResult, Error> {
        let request = InputRequest::Elicit(ElicitRequest::new(params));
        match self.input_one(key, request).await? {
            InputResponse::Elicit(result) => Ok(result),
            other => Err(unexpected(key, &other)),
        }
    }

    /// Asks the client's model for a completion (sampling).
    pub async fn create_message(
        &self,
        key: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, Error> {
        match self.input_one(key, InputRequest::CreateMessage(CreateMessageRequest::new(params))).await? {
            InputResponse::CreateMessage(result) => Ok(result),
            other => Err(unexpected(key, &other)),
        }
    }

    /// Asks the client for its roots.
    pub async fn list_roots(&self, key: &str) -> Result<ListRootsResult, Error> {
        match self.input_one(key, InputRequest::ListRoots(ListRootsRequest::new())).await? {
            InputResponse::ListRoots(result) => Ok(result),
            other => Err(unexpected(key, &other)),
        }
    }

    async fn input_one(&self, key: &str, request: InputRequest) -> Result<InputResponse, Error> {
        let mut answers = self.input([(key.to_owned(), request)]).await?;
        Ok(answers.remove(key).expect("input() answers every key"))
    }

    /// Asks several questions at once. On the modern wire, all unanswered ones go to the client
    /// in one `InputRequiredResult`; on a legacy session they are sent one after another.
    pub async fn input(
        &self,
        requests: impl IntoIterator<Item = (String, InputRequest)>,
    ) -> Result<BTreeMap<String, InputResponse>, Error> {
        let requests: Vec<(String, InputRequest)> = requests.into_iter().collect();
        for (_, request) in &requests {
            self.check_capability(request)?;
        }
        if let Some(link) = self.inner.task.get() {
            return self.task_input(link, requests).await;
        }
        match (self.inner.era, &self.inner.session) {
            (Era::Legacy, Some(session)) => {
                let mut answers = BTreeMap::new();
                for (key, request) in requests {
                    let method = input_method(&request);
                    let params = match &request {
                        InputRequest::Elicit(r) => serde_json::to_value(&r.params),
                        InputRequest::CreateMessage(r) => serde_json::to_value(&r.params),
                        InputRequest::ListRoots(r) => serde_json::to_value(&r.params),
                        _ => return Err(Error::internal(format!("cannot send {method} to a legacy client"))),
                    }
                    .map_err(|e| Error::internal(e.to_string()))?;
                    let timeout = self.inner.server.client_request_timeout();
                    let result = session.request(&self.inner.sink, method, params, timeout).await?;
                    let response = decode_response(method, result)
                        .map_err(|e| Error::internal(format!("the client's {method} result is invalid: {e}")))?;
                    answers.insert(key, response);
                }
                Ok(answers)
            }
            _ => {
                let mut answers = BTreeMap::new();
                let mut missing = BTreeMap::new();
                for (key, request) in requests {
                    let method = input_method(&request);
                    // An answer of the wrong kind counts as missing: the question is asked again.
                    let known = self.inner.answers.get(&key);
                    match known.and_then(|value| Some((value, decode_response(method, value.clone()).ok()?))) {
                        Some((value, answer)) => {
                            self.inner.used.lock().expect("not poisoned").insert(key.clone(), value.clone());
                            answers.insert(key, answer);
                        }
                        None => {
                            missing.insert(key, request);
                        }
                    }
                }
                if missing.is_empty() { Ok(answers) } else { Err(Error::InputRequired(missing)) }
            }
        }
    }

    /// Inside a task: answers known from the rounds before the task, then the task's own.
    async fn task_input(
        &self,
        link: &TaskLink,
        requests: Vec<(String, InputRequest)>,
    ) -> Result<BTreeMap<String, InputResponse>, Error> {
        let mut answers = BTreeMap::new();
        let mut missing = Vec::new();
        for (key, request) in requests {
            let method = input_method(&request);
            match self.inner.answers.get(&key).and_then(|value| decode_response(method, value.clone()).ok()) {
                Some(answer) => {
                    answers.insert(key, answer);
                }
                None => missing.push((key, request)),
            }
        }
        if missing.is_empty() {
            return Ok(answers);
        }
        let methods: BTreeMap<String, &'static str> =
            missing.iter().map(|(key, request)| (key.clone(), input_method(request))).collect();
        for (key, value) in task_input(link, missing).await? {
            let method = methods[&key];
            let answer = decode_response(method, value)
                .map_err(|e| Error::invalid_params(format!("input response `{key}` is not a {method} result: {e}")))?;
            answers.insert(key, answer);
        }
        Ok(answers)
    }

    fn check_capability(&self, request: &InputRequest) -> Result<(), Error> {
        let caps = &self.inner.client_capabilities;
        let mut needed = ClientCapabilities::default();
        match request {
            InputRequest::Elicit(elicit) => {
                let url = matches!(elicit.params, ElicitRequestParams::Url(_));
                let ok = caps.elicitation.as_ref().is_some_and(|e| {
                    if url {
                        e.url.is_some()
                    } else {
                        // `{}` means form only.
                        e.form.is_some() || e.url.is_none()
                    }
                });
                if !ok {
                    let mut cap = ElicitationCapability::default();
                    if url {
                        cap.url = Some(Default::default());
                    } else {
                        cap.form = Some(Default::default());
                    }
                    needed.elicitation = Some(cap);
                }
            }
            InputRequest::CreateMessage(_) if caps.sampling.is_none() => {
                needed.sampling = Some(SamplingCapability::default());
            }
            InputRequest::ListRoots(_) if caps.roots.is_none() => needed.roots = Some(Default::default()),
            _ => {}
        }
        if needed == ClientCapabilities::default() { Ok(()) } else { Err(Error::MissingCapability(Box::new(needed))) }
    }
}

pub(crate) fn decode_response(method: &str, value: Value) -> Result<InputResponse, serde_json::Error> {
    Ok(match method {
        "elicitation/create" => InputResponse::Elicit(serde_json::from_value(value)?),
        "sampling/createMessage" => InputResponse::CreateMessage(serde_json::from_value(value)?),
        _ => InputResponse::ListRoots(serde_json::from_value(value)?),
    })
}

fn unexpected(key: &str, response: &InputResponse) -> Error {
    Error::invalid_params(format!("input response `{key}` has the wrong kind: {response:?}"))
}
