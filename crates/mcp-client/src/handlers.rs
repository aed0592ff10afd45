//! Handlers the application supplies for what a server may ask of the client: elicitation,
//! sampling and roots. The same handlers answer a 2026-07-28 server's `InputRequiredResult`
//! and a legacy server's server-to-client JSON-RPC requests; the capabilities the client
//! declares are derived from which ones are present.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use mcp_types::{
    Action, ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitationCapability, InputRequest, InputResponse, JsonObject, LoggingMessageNotificationParams, Root,
    SamplingCapability,
};
use serde_json::{Value, json};

use crate::error::HandlerError;

/// The answer to an elicitation. `content` is plain JSON so that any value the schema allows
/// (numbers with fractions included) can be returned.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationResponse {
    /// Accept, decline or cancel.
    pub action: Action,
    /// The values entered (form mode, when accepted).
    pub content: Option<JsonObject>,
}

impl ElicitationResponse {
    /// The user accepted; for a form, `content` holds the values (schema defaults fill in the
    /// fields left out).
    pub fn accept(content: JsonObject) -> Self {
        ElicitationResponse { action: Action::Accept, content: Some(content) }
    }

    /// The user accepted a form with these values: any value that serializes to a JSON object,
    /// such as the same type a server asked for with `Context::elicit::<T>`.
    ///
    /// ```
    /// use mcp_client::ElicitationResponse;
    ///
    /// #[derive(serde::Serialize)]
    /// struct Confirm { confirm: bool }
    ///
    /// let response = ElicitationResponse::accept_value(&Confirm { confirm: true }).unwrap();
    /// assert_eq!(response.content.unwrap()["confirm"], true);
    /// ```
    pub fn accept_value(content: &impl serde::Serialize) -> Result<Self, HandlerError> {
        match serde_json::to_value(content) {
            Ok(Value::Object(content)) => Ok(Self::accept(content)),
            Ok(other) => Err(HandlerError(format!("an elicitation answer must be a JSON object, not {other}"))),
            Err(error) => Err(HandlerError(format!("the elicitation answer could not be encoded: {error}"))),
        }
    }

    /// The user accepted a URL-mode elicitation (no content).
    pub fn accept_url() -> Self {
        ElicitationResponse { action: Action::Accept, content: None }
    }

    /// The user declined.
    pub fn decline() -> Self {
        ElicitationResponse { action: Action::Decline, content: None }
    }

    /// The user dismissed the request without choosing.
    pub fn cancel() -> Self {
        ElicitationResponse { action: Action::Cancel, content: None }
    }

    pub(crate) fn to_json(&self) -> Value {
        let mut out = json!({ "action": self.action });
        if let Some(content) = &self.content {
            out["content"] = Value::Object(content.clone());
        }
        out
    }
}

/// Which elicitation modes the application can handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElicitationModes {
    /// Form mode: the user fills in fields of a schema.
    pub form: bool,
    /// URL mode: the user is sent to a URL.
    pub url: bool,
}

impl ElicitationModes {
    /// Form mode only.
    pub const FORM: ElicitationModes = ElicitationModes { form: true, url: false };
    /// URL mode only.
    pub const URL: ElicitationModes = ElicitationModes { form: false, url: true };
    /// Both modes.
    pub const BOTH: ElicitationModes = ElicitationModes { form: true, url: true };
}

type ElicitFn =
    dyn Fn(ElicitRequestParams) -> BoxFuture<'static, Result<ElicitationResponse, HandlerError>> + Send + Sync;
type SamplingFn =
    dyn Fn(CreateMessageRequestParams) -> BoxFuture<'static, Result<CreateMessageResult, HandlerError>> + Send + Sync;
type RootsFn = dyn Fn() -> BoxFuture<'static, Result<Vec<Root>, HandlerError>> + Send + Sync;

/// One question a server asks while serving a call with its own input handler
/// ([`CallOptions::on_input`](crate::CallOptions::on_input)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct InputAsk {
    /// The server's key for the question (a 2026-07-28 `inputRequests` entry or a task's); `None`
    /// for a legacy server-to-client request, which has no key.
    pub key: Option<String>,
    /// The question: an elicitation, a sampling request or a roots listing.
    pub request: InputRequest,
}

type InputFn = dyn Fn(Vec<InputAsk>) -> BoxFuture<'static, Result<Vec<InputResponse>, HandlerError>> + Send + Sync;
pub(crate) type LogFn = Arc<dyn Fn(LoggingMessageNotificationParams) + Send + Sync>;
pub(crate) type TaskFn = Arc<dyn Fn(&str) + Send + Sync>;
pub(crate) type TaskStatusFn = Arc<dyn Fn(&mcp_types::ext::tasks::GetTaskResult) + Send + Sync>;

/// A call's own input handler and the capabilities it declares for the call.
#[derive(Clone)]
pub(crate) struct InputHook {
    /// Shared: the hook is copied with its call's options, several times a call.
    pub capabilities: Arc<ClientCapabilities>,
    answer: Arc<InputFn>,
}

impl std::fmt::Debug for InputHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputHook").field("capabilities", &self.capabilities).finish_non_exhaustive()
    }
}

impl InputHook {
    pub(crate) fn new<F, Fut>(capabilities: ClientCapabilities, handler: F) -> Self
    where
        F: Fn(Vec<InputAsk>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<InputResponse>, HandlerError>> + Send + 'static,
    {
        InputHook { capabilities: Arc::new(capabilities), answer: Arc::new(move |asks| Box::pin(handler(asks))) }
    }

    /// Runs the handler for one round of questions (`key`, `method`, `params`), returning the
    /// JSON answers in the same order.
    pub(crate) async fn answer(&self, round: Vec<(Option<String>, &str, Value)>) -> Result<Vec<Value>, HandlerError> {
        let mut asks = Vec::with_capacity(round.len());
        for (key, method, params) in round {
            let mut request = json!({ "method": method });
            if !params.is_null() {
                request["params"] = params;
            }
            let request: InputRequest = serde_json::from_value(request)
                .map_err(|e| HandlerError(format!("malformed {method} request: {e}")))?;
            asks.push(InputAsk { key, request });
        }
        let asked = asks.len();
        let responses = (self.answer)(asks).await?;
        if responses.len() != asked {
            return Err(HandlerError(format!("{asked} questions were given {} answers", responses.len())));
        }
        responses
            .into_iter()
            .map(|response| {
                serde_json::to_value(response).map_err(|e| HandlerError(format!("an answer could not be encoded: {e}")))
            })
            .collect()
    }
}

/// What one call wants besides its result: the input its server asks for, and its log messages.
#[derive(Clone, Default)]
pub(crate) struct CallHooks {
    pub input: Option<InputHook>,
    pub log: Option<LogFn>,
    /// Told the task id when the server makes the call a task.
    pub task: Option<TaskFn>,
    /// Told each state polled while the task is followed.
    pub task_status: Option<TaskStatusFn>,
}

impl CallHooks {
    /// Whether the server must route anything to the call (the task hook is the client's own).
    pub(crate) fn is_empty(&self) -> bool {
        self.input.is_none() && self.log.is_none()
    }
}

/// The set of handlers; empty by default (the client then declares no capabilities).
#[derive(Clone, Default)]
pub struct Handlers {
    pub(crate) elicitation: Option<(ElicitationModes, Arc<ElicitFn>)>,
    pub(crate) sampling: Option<(SamplingCapability, Arc<SamplingFn>)>,
    pub(crate) roots: Option<Arc<RootsFn>>,
    /// Extensions the application opts into, with their settings (`capabilities.extensions`).
    pub(crate) extensions: JsonObject,
}

impl std::fmt::Debug for Handlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handlers")
            .field("elicitation", &self.elicitation.as_ref().map(|(modes, _)| modes))
            .field("sampling", &self.sampling.is_some())
            .field("roots", &self.roots.is_some())
            .field("extensions", &self.extensions)
            .finish()
    }
}

impl Handlers {
    /// No handlers: the client declares no capabilities.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares the extension `id` (e.g. [`mcp_types::ext::SKILLS`]) with `settings` (`{}` for
    /// none) under `capabilities.extensions`.
    pub fn extension(mut self, id: impl Into<String>, settings: JsonObject) -> Self {
        self.extensions.insert(id.into(), Value::Object(settings));
        self
    }

    /// Declares MCP Apps (`io.modelcontextprotocol/ui`) with the MIME types the application
    /// renders (`text/html;profile=mcp-app`, [`mcp_types::ext::apps::MIME_TYPE`]): servers may
    /// then link tools to interfaces ([`Client::tool_ui`](crate::Client::tool_ui)).
    pub fn apps<I: IntoIterator<Item = S>, S: Into<String>>(self, mime_types: I) -> Self {
        self.extension(mcp_types::ext::APPS, mcp_types::ext::apps::client_settings(mime_types))
    }

    /// Answers `elicitation/create` in the given modes. For a form, fields the answer leaves out
    /// are filled from the schema's `default`s before the answer is sent.
    pub fn elicitation<F, Fut>(mut self, modes: ElicitationModes, handler: F) -> Self
    where
        F: Fn(ElicitRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitationResponse, HandlerError>> + Send + 'static,
    {
        self.elicitation = Some((modes, Arc::new(move |params| Box::pin(handler(params)))));
        self
    }

    /// Answers `sampling/createMessage`; `capability` says whether tools and context inclusion
    /// are supported.
    pub fn sampling<F, Fut>(mut self, capability: SamplingCapability, handler: F) -> Self
    where
        F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, HandlerError>> + Send + 'static,
    {
        self.sampling = Some((capability, Arc::new(move |params| Box::pin(handler(params)))));
        self
    }

    /// Answers `roots/list`.
    pub fn roots<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<Root>, HandlerError>> + Send + 'static,
    {
        self.roots = Some(Arc::new(move || Box::pin(handler())));
        self
    }

    /// The capabilities these handlers let the client declare.
    pub fn capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        if let Some((modes, _)) = &self.elicitation {
            let mut cap = ElicitationCapability::default();
            if modes.form {
                cap.form = Some(JsonObject::new());
            }
            if modes.url {
                cap.url = Some(JsonObject::new());
            }
            caps.elicitation = Some(cap);
        }
        if let Some((cap, _)) = &self.sampling {
            caps.sampling = Some(cap.clone());
        }
        if self.roots.is_some() {
            caps.roots = Some(JsonObject::new());
        }
        for (id, settings) in &self.extensions {
            let settings = settings.as_object().cloned().unwrap_or_default();
            caps.extensions.get_or_insert_with(Default::default).insert(id.clone(), settings);
        }
        caps
    }

    /// Whether these handlers declare the capability a server needs to ask `method`.
    pub(crate) fn declares(&self, method: &str) -> bool {
        match method {
            "elicitation/create" => self.elicitation.is_some(),
            "sampling/createMessage" => self.sampling.is_some(),
            "roots/list" => self.roots.is_some(),
            _ => false,
        }
    }

    /// Runs the handler for one input request (`method` + `params`), returning the JSON answer.
    pub(crate) async fn answer(&self, method: &str, params: Value) -> Result<Value, HandlerError> {
        match method {
            "elicitation/create" => {
                let Some((modes, handler)) = &self.elicitation else {
                    return Err(HandlerError("no elicitation handler is configured".into()));
                };
                let schema_defaults = defaults_of(&params);
                let mode = params.get("mode").and_then(Value::as_str).unwrap_or("form");
                if (mode == "url" && !modes.url) || (mode != "url" && !modes.form) {
                    return Err(HandlerError(format!("elicitation mode {mode:?} is not supported")));
                }
                let params: ElicitRequestParams = serde_json::from_value(params)
                    .map_err(|e| HandlerError(format!("malformed elicitation request: {e}")))?;
                let is_form = matches!(params, ElicitRequestParams::Form(_));
                let mut response = handler(params).await?;
                if is_form && response.action == Action::Accept {
                    let content = response.content.get_or_insert_with(JsonObject::new);
                    for (key, value) in schema_defaults {
                        content.entry(key).or_insert(value);
                    }
                }
                Ok(response.to_json())
            }
            "sampling/createMessage" => {
                let Some((_, handler)) = &self.sampling else {
                    return Err(HandlerError("no sampling handler is configured".into()));
                };
                let params: CreateMessageRequestParams = serde_json::from_value(params)
                    .map_err(|e| HandlerError(format!("malformed sampling request: {e}")))?;
                let result = handler(params).await?;
                serde_json::to_value(result).map_err(|e| HandlerError(e.to_string()))
            }
            "roots/list" => {
                let Some(handler) = &self.roots else {
                    return Err(HandlerError("no roots handler is configured".into()));
                };
                let roots = handler().await?;
                Ok(json!({ "roots": roots }))
            }
            other => Err(HandlerError(format!("no handler for {other:?}"))),
        }
    }
}

/// The `default` of every property of a form elicitation's `requestedSchema`.
fn defaults_of(params: &Value) -> Vec<(String, Value)> {
    params
        .pointer("/requestedSchema/properties")
        .and_then(Value::as_object)
        .map(|props| {
            props.iter().filter_map(|(name, prop)| prop.get("default").map(|d| (name.clone(), d.clone()))).collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn form_answers_get_schema_defaults_and_keep_given_values() {
        let handlers = Handlers::new().elicitation(ElicitationModes::FORM, |_| async {
            let mut content = JsonObject::new();
            content.insert("name".into(), json!("Ann"));
            Ok(ElicitationResponse::accept(content))
        });
        let params = json!({"message":"m","requestedSchema":{"type":"object","properties":{
            "name":{"type":"string","default":"John Doe"},
            "score":{"type":"number","default":95.5},
            "verified":{"type":"boolean","default":true},
            "nickname":{"type":"string"}}}});
        let answer = handlers.answer("elicitation/create", params).await.unwrap();
        assert_eq!(answer, json!({"action":"accept","content":{"name":"Ann","score":95.5,"verified":true}}));
        let err = handlers
            .answer("elicitation/create", json!({"mode":"url","message":"m","url":"https://x"}))
            .await
            .unwrap_err();
        assert!(err.0.contains("not supported"), "{err}");
    }

    #[test]
    fn capabilities_follow_the_handlers() {
        assert_eq!(serde_json::to_value(Handlers::new().capabilities()).unwrap(), json!({}));
        let handlers = Handlers::new()
            .elicitation(ElicitationModes::BOTH, |_| async { Ok(ElicitationResponse::decline()) })
            .roots(|| async { Ok(vec![]) });
        assert_eq!(
            serde_json::to_value(handlers.capabilities()).unwrap(),
            json!({"elicitation":{"form":{},"url":{}},"roots":{}})
        );
    }
}
