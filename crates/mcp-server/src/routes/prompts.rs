//! Prompts: what a prompt handler returns, the route, and the arguments declared from a type.

use super::*;

/// What a prompt handler may return: anything that becomes a `GetPromptResult`.
pub trait IntoPromptResult {
    /// The result to answer `prompts/get` with.
    fn into_prompt_result(self) -> GetPromptResult;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> GetPromptResult {
        self
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> GetPromptResult {
        GetPromptResult::new(self)
    }
}

impl IntoPromptResult for PromptMessage {
    fn into_prompt_result(self) -> GetPromptResult {
        GetPromptResult::new(vec![self])
    }
}

/// One user message with this text.
impl IntoPromptResult for String {
    fn into_prompt_result(self) -> GetPromptResult {
        PromptMessage::new(ContentBlock::Text(TextContent::new(self)), Role::User).into_prompt_result()
    }
}

/// A prompt; required arguments are checked before the handler runs.
pub struct PromptRoute {
    pub(crate) prompt: Prompt,
    pub(crate) handler: PromptFn,
    pub(crate) schema_error: Option<String>,
    pub(crate) scopes: Scopes,
    pub(crate) service: Option<McpService>,
}

impl PromptRoute {
    /// A prompt whose arguments decode into `A` (use [`NoArguments`] for none): each field of
    /// `A` is a declared argument, with its doc comment as description, required unless it is
    /// an `Option` or has a default. Prompt arguments are strings on the wire, so every field
    /// must be a string (or an enum of strings); [`build`](crate::ServerBuilder::build) names
    /// the one that is not.
    ///
    /// ```
    /// use mcp_server::{Context, Error, PromptRoute};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Summarize {
    ///     /// The note to summarize.
    ///     title: String,
    ///     /// How short: a sentence or a paragraph.
    ///     length: Option<String>,
    /// }
    ///
    /// let route = PromptRoute::new("summarize", |_ctx: Context, args: Summarize| async move {
    ///     Ok::<_, Error>(format!("Summarize the note {:?} in a {}.", args.title,
    ///         args.length.as_deref().unwrap_or("sentence")))
    /// })
    /// .description("Summarizes a note");
    /// ```
    pub fn new<A, F, Fut, R>(name: impl Into<String>, handler: F) -> Self
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        F: Fn(Context, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, Error>> + Send + 'static,
        R: IntoPromptResult,
    {
        let name = name.into();
        let mut prompt = Prompt::new(name);
        let schema_error = match prompt_arguments::<A>() {
            Ok(arguments) => {
                prompt.arguments = (!arguments.is_empty()).then_some(arguments);
                None
            }
            Err(error) => Some(error),
        };
        let handler = Arc::new(handler);
        let handler: PromptFn = Arc::new(move |ctx, arguments| {
            let handler = Arc::clone(&handler);
            Box::pin(async move {
                let arguments = arguments.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
                let arguments: A = serde_json::from_value(Value::Object(arguments))
                    .map_err(|e| Error::invalid_params(format!("Invalid arguments: {e}")))?;
                handler(ctx, arguments).await.map(IntoPromptResult::into_prompt_result)
            })
        });
        PromptRoute { prompt, handler, schema_error, scopes: Scopes::default(), service: None }
    }

    /// `prompt` as listed by `prompts/list`, with the arguments it declares by hand; the handler
    /// receives the arguments of `prompts/get` by name, the required ones already checked.
    pub fn raw<F, Fut, R>(prompt: Prompt, handler: F) -> Self
    where
        F: Fn(Context, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, Error>> + Send + 'static,
        R: IntoPromptResult,
    {
        let handler = Arc::new(handler);
        let handler: PromptFn = Arc::new(move |ctx, arguments| {
            let handler = Arc::clone(&handler);
            Box::pin(async move { handler(ctx, arguments).await.map(IntoPromptResult::into_prompt_result) })
        });
        PromptRoute { prompt, handler, schema_error: None, scopes: Scopes::default(), service: None }
    }

    /// Wraps this prompt's handler in a tower layer, as [`ToolRoute::layer`](crate::ToolRoute::layer).
    pub fn layer(mut self, layer: impl McpLayer) -> Self {
        let handler = Arc::clone(&self.handler);
        self.service = Some(middleware::wrap(self.service.take(), layer, move || {
            middleware::service(move |request| {
                let handler = Arc::clone(&handler);
                async move {
                    let McpCall::GetPrompt(params) = request.call else {
                        return Err(middleware::mismatch("prompts/get"));
                    };
                    handler(request.ctx, params.arguments.unwrap_or_default()).await.map(McpResponse::GetPrompt)
                }
            })
        }));
        self
    }

    /// What the prompt is for (`description`).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.prompt.description = Some(description.into());
        self
    }

    /// A name for people (`title`).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.prompt.title = Some(title.into());
        self
    }

    /// OAuth scopes getting the prompt needs, as [`ToolRoute::scopes`].
    pub fn scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.scopes = Scopes::from_iter(scopes);
        self
    }

    /// The definition as listed by `prompts/list`.
    pub fn prompt(&self) -> &Prompt {
        &self.prompt
    }

    pub(crate) fn missing_argument(&self, given: &BTreeMap<String, String>) -> Option<&str> {
        self.prompt
            .arguments
            .iter()
            .flatten()
            .filter(|argument: &&PromptArgument| argument.required == Some(true))
            .find(|argument| !given.contains_key(&argument.name))
            .map(|argument| argument.name.as_str())
    }
}

/// The declared arguments of a prompt whose arguments decode into `A`.
pub(super) fn prompt_arguments<A: schemars::JsonSchema>() -> Result<Vec<PromptArgument>, String> {
    let schema = ObjectSchema::for_type::<A>().map_err(|e| e.to_string())?.to_value();
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let defs = schema.get("$defs").and_then(Value::as_object);
    let mut arguments = Vec::new();
    for (name, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
        let flattened = crate::elicitation::flattened(property, defs).unwrap_or_default();
        if flattened.get("type").and_then(Value::as_str) != Some("string") {
            return Err(format!(
                "the argument `{name}` of `{}` is not a string (prompt arguments are strings on the wire)",
                std::any::type_name::<A>()
            ));
        }
        let mut argument = PromptArgument::new(name.clone());
        argument.description = property.get("description").and_then(Value::as_str).map(str::to_owned);
        argument.title = property.get("title").and_then(Value::as_str).map(str::to_owned);
        argument.required = Some(required.contains(&name.as_str()));
        arguments.push(argument);
    }
    Ok(arguments)
}
