//! Running a request's handler: its first step inline and the rest, if it waits, on a task of
//! its own; multi-round requests (`requestState`, `inputResponses`); and the calls into the tools,
//! resources, prompts and completions the server was built with.

use super::*;

impl Server {
    /// Runs a handler: its first step here, and the rest, if it waits for anything, on its own
    /// task; its messages and response arrive through the [`Reply`]. Most handlers answer
    /// without waiting, and then no task is spawned.
    pub(super) fn spawn(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        era: Era,
        version: String,
        meta: RequestMetaObject,
        call: Decoded,
    ) -> Reply {
        let (sink, rx) = mpsc::channel(32);
        let respond = sink.clone();
        let server = self.clone();
        let run_session = Arc::clone(session);
        let run_id = id.clone();
        let running = Box::pin(async move { server.run(&run_session, &run_id, era, version, meta, call, sink).await });
        self.drive(session, id, respond, rx, running)
    }

    /// Polls `running` once here; if it waits, the rest runs on its own task (cancelled when the
    /// reply is dropped) and its response comes through `respond`.
    pub(super) fn drive(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        respond: mpsc::Sender<Outgoing>,
        mut rx: mpsc::Receiver<Outgoing>,
        mut running: BoxFuture<Outgoing>,
    ) -> Reply {
        let limit = self.inner.options.max_in_flight;
        if session.in_flight() >= limit {
            return Reply::ready(Outgoing::error(Some(&id), &busy(limit)));
        }
        let mut waker = std::task::Context::from_waker(std::task::Waker::noop());
        // A panicking handler ends its reply without a response, as it does on a task.
        let first = std::panic::catch_unwind(AssertUnwindSafe(|| running.as_mut().poll(&mut waker)));
        let response = match first {
            Ok(Poll::Pending) => {
                let task_session = Arc::clone(session);
                let task_id = id.clone();
                let task = tokio::spawn(async move {
                    let response = running.await;
                    let _ = respond.send(response).await;
                    task_session.untrack(&task_id);
                });
                session.track(id, task.abort_handle());
                return Reply::streaming(rx, task.abort_handle());
            }
            Ok(Poll::Ready(response)) => Some(response),
            Err(_) => None,
        };
        drop(running);
        let mut messages = VecDeque::new();
        while let Ok(message) = rx.try_recv() {
            messages.push_back(message);
        }
        messages.extend(response);
        Reply::finished(messages)
    }

    #[allow(clippy::too_many_arguments)]
    async fn run(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        era: Era,
        version: String,
        meta: RequestMetaObject,
        call: Decoded,
        sink: mpsc::Sender<Outgoing>,
    ) -> Outgoing {
        // Multi-round requests: earlier answers come back sealed in `requestState`, bound to the
        // request they were given for. The binding (a hash) is computed only when needed: to
        // open a state, or to seal one. The legacy wire has neither.
        let modern = era == Era::Modern;
        let (binding, state, responses) = match &call {
            Decoded::CallTool(p) => (
                modern.then(|| Binding {
                    method: "tools/call",
                    target: p.name.clone(),
                    arguments: p.arguments.clone().map(Value::Object).unwrap_or_default(),
                }),
                p.request_state.as_deref(),
                p.input_responses.as_ref(),
            ),
            Decoded::GetPrompt(p) => (
                modern.then(|| Binding {
                    method: "prompts/get",
                    target: p.name.clone(),
                    arguments: serde_json::to_value(&p.arguments).unwrap_or_default(),
                }),
                p.request_state.as_deref(),
                p.input_responses.as_ref(),
            ),
            Decoded::Read(p) => (
                modern.then(|| Binding { method: "resources/read", target: p.uri.clone(), arguments: Value::Null }),
                p.request_state.as_deref(),
                p.input_responses.as_ref(),
            ),
            _ => (None, None, None),
        };
        let principal = session.principal();
        let principal = (!principal.is_anonymous()).then(|| state::principal_digest(principal.as_str()));
        let answers = match self.answers(era, binding.as_ref(), principal.as_deref(), state, responses).await {
            Ok(answers) => answers,
            Err(error) => return Outgoing::error(Some(id), &error),
        };
        let may_become_task = match &call {
            Decoded::CallTool(params) => {
                era == Era::Modern
                    && ext::declares(&meta.client_capabilities, TASKS)
                    && self.tool(&params.name).is_some_and(|t| t.route.task_support != TaskSupport::Forbidden)
            }
            _ => false,
        };
        let ctx = Context::new(ContextInner {
            server: self.clone(),
            era,
            protocol_version: version,
            client_capabilities: meta.client_capabilities,
            client_info: meta.client_info,
            log_level: meta.log_level,
            progress_token: meta.progress_token,
            sink,
            session: (era == Era::Legacy).then(|| Arc::clone(session)),
            answers,
            used: Default::default(),
            principal: session.request_principal(),
            may_become_task,
            task: Default::default(),
        });
        let is_tool = matches!(call, Decoded::CallTool(_));
        let outcome: Result<Outgoing, Error> = match call {
            Decoded::CallTool(params) if may_become_task => {
                // Served inline until the handler first waits; then the call becomes a task.
                let server = self.clone();
                let handler_ctx = ctx.clone();
                let mut handler: BoxFuture<Result<mcp_types::CallToolResult, Error>> =
                    Box::pin(async move { server.call_tool(handler_ctx, params).await });
                match futures::poll!(handler.as_mut()) {
                    Poll::Ready(outcome) => outcome.map(|r| self.respond(id, era, r)),
                    Poll::Pending => return self.start_task(&ctx, id, handler).await,
                }
            }
            Decoded::CallTool(params) => self.call_tool(ctx.clone(), params).await.map(|r| self.respond(id, era, r)),
            Decoded::Read(params) => self.read(ctx.clone(), params.uri).await.map(|contents| {
                let cache = self.inner.options.read_cache;
                self.respond(id, era, ReadResourceResult::new(cache.scope, contents, cache.ttl_ms))
            }),
            Decoded::GetPrompt(params) => self.get_prompt(ctx.clone(), params).await.map(|r| self.respond(id, era, r)),
            Decoded::Complete(params) => self
                .complete(ctx.clone(), params)
                .await
                .map(|completion| self.respond(id, era, CompleteResult::new(completion))),
            _ => unreachable!("served without a task"),
        };
        match outcome {
            Ok(message) => message,
            Err(Error::Failed(message)) if is_tool => self.respond(id, era, error_result(message)),
            Err(Error::InputRequired(requests)) if era == Era::Modern => {
                let sealed = Sealed {
                    binding: binding.as_ref().map(Binding::digest).unwrap_or_default(),
                    issued: state::now_secs(),
                    answers: ctx.used_answers(),
                    principal,
                    nonce: state::nonce(),
                };
                let mut result = InputRequiredResult::new();
                result.result_type = ResultType::InputRequired;
                result.input_requests = Some(requests);
                result.request_state = Some(self.inner.keyring.seal(&sealed));
                self.respond(id, era, result)
            }
            Err(Error::MissingCapability(required)) if era == Era::Modern => {
                Outgoing::error_as(Some(id), &missing_capability(&required), Disposition::BadRequest)
            }
            Err(Error::MissingCapability(required)) => {
                let names = serde_json::to_value(&required).unwrap_or_default();
                let error = ErrorObject::invalid_params(format!(
                    "The client did not declare the capabilities this needs: {names}"
                ));
                Outgoing::error(Some(id), &error)
            }
            Err(error) => Outgoing::error(Some(id), &error.into_error_object()),
        }
    }

    /// The answers a multi-round request carries: those sealed in its state, then this round's.
    async fn answers(
        &self,
        era: Era,
        binding: Option<&Binding>,
        principal: Option<&str>,
        state: Option<&str>,
        responses: Option<&InputResponses>,
    ) -> Result<BTreeMap<String, Value>, ErrorObject> {
        let mut answers = BTreeMap::new();
        if era == Era::Legacy {
            return Ok(answers);
        }
        if let (Some(state), Some(binding)) = (state, binding) {
            let options = &self.inner.options;
            let invalid = |e: state::StateError| ErrorObject::invalid_params(format!("Invalid requestState: {e}"));
            let sealed =
                self.inner.keyring.open(state, &binding.digest(), principal, options.state_max_age).map_err(invalid)?;
            if options.state_single_use {
                let used = StateUse {
                    issued_secs: sealed.issued,
                    nonce: sealed.nonce,
                    expires_secs: sealed.issued.saturating_add(options.state_max_age.as_secs()),
                };
                match self.inner.used_states.first_use(used).await {
                    Ok(UseVerdict::First) => {}
                    Ok(UseVerdict::Repeated) => return Err(invalid(state::StateError::AlreadyUsed)),
                    Ok(UseVerdict::Forgotten) => return Err(invalid(state::StateError::Forgotten)),
                    Err(error) => {
                        return Err(ErrorObject::internal_error(format!("The used-state store failed: {error}")));
                    }
                }
            }
            answers = sealed.answers;
        }
        for (key, response) in responses.into_iter().flatten() {
            answers.insert(key.clone(), to_value(response));
        }
        Ok(answers)
    }

    async fn call_tool(&self, ctx: Context, params: CallToolRequestParams) -> Result<mcp_types::CallToolResult, Error> {
        let Some(entry) = self.tool(&params.name) else {
            return Err(Error::invalid_params(format!("Unknown tool: {}", params.name)));
        };
        if let Some(required) = &entry.route.requires
            && let Some(missing) = missing_capabilities(required, ctx.client_capabilities())
        {
            return Err(Error::MissingCapability(Box::new(missing)));
        }
        // The extension does not exist before 2026-07-28, whatever a legacy client declared.
        let accepts_tasks = ctx.era() == Era::Modern && ext::declares(ctx.client_capabilities(), TASKS);
        if entry.route.task_support == TaskSupport::Required && !accepts_tasks {
            return Err(match ctx.era() {
                Era::Modern => Error::MissingCapability(Box::new(ext::client_capabilities(TASKS))),
                Era::Legacy => Error::invalid_params(format!(
                    "Tool {} runs only as a task, which needs the tasks extension of protocol 2026-07-28",
                    params.name
                )),
            });
        }
        let arguments = params.arguments.map(Value::Object).unwrap_or_else(|| json!({}));
        let problems = entry.validator.problems(&arguments);
        if !problems.is_empty() {
            return Ok(error_result(format!("Invalid arguments for tool {}: {}", params.name, problems.join("; "))));
        }
        (entry.route.handler)(ctx, arguments).await
    }

    async fn read(&self, ctx: Context, uri: String) -> Result<Vec<mcp_types::ReadResourceResultContentsItem>, Error> {
        if let Some(&index) = self.inner.resource_index.get(&uri) {
            let contents = (self.inner.resources[index].handler)(ctx, uri.clone()).await?;
            return non_empty(contents, &uri);
        }
        // A skill's other files: refuse a path that leaves the skill, generate a dynamic one.
        for skill in &self.inner.skills {
            if let Some(path) = skill.inner.relative(&uri) {
                let path = path?;
                if skill.entry().resources == mcp_types::ext::skills::SkillResources::Dynamic {
                    let contents = skill.inner.read(ctx, path).await?;
                    return non_empty(contents, &uri);
                }
                return Err(Error::resource_not_found(&uri));
            }
        }
        for template in &self.inner.templates {
            if let Some(vars) = template.pattern.matches(&uri) {
                let contents = (template.handler)(ctx, uri.clone(), vars).await?;
                return non_empty(contents, &uri);
            }
        }
        Err(Error::resource_not_found(&uri))
    }

    async fn get_prompt(
        &self,
        ctx: Context,
        params: GetPromptRequestParams,
    ) -> Result<mcp_types::GetPromptResult, Error> {
        let Some(&index) = self.inner.prompt_index.get(&params.name) else {
            return Err(Error::invalid_params(format!("Unknown prompt: {}", params.name)));
        };
        let route = &self.inner.prompts[index];
        let arguments = params.arguments.unwrap_or_default();
        if let Some(missing) = route.missing_argument(&arguments) {
            return Err(Error::invalid_params(format!("Prompt {} needs the argument `{missing}`", params.name)));
        }
        (route.handler)(ctx, arguments).await
    }

    async fn complete(
        &self,
        ctx: Context,
        params: CompleteRequestParams,
    ) -> Result<mcp_types::CompleteResultCompletion, Error> {
        match &params.r#ref {
            CompleteRequestParamsRef::RefPrompt(prompt) if !self.inner.prompt_index.contains_key(&prompt.name) => {
                return Err(Error::invalid_params(format!("Unknown prompt: {}", prompt.name)));
            }
            CompleteRequestParamsRef::RefResource(template)
                if !self.inner.templates.iter().any(|t| t.template.uri_template == template.uri) =>
            {
                return Err(Error::invalid_params(format!("Unknown resource template: {}", template.uri)));
            }
            _ => {}
        }
        let handler = self.inner.completion.as_ref().expect("checked when decoded");
        let mut completion = handler(ctx, params).await?;
        // The spec caps a response at 100 values.
        if completion.values.len() > 100 {
            completion.total.get_or_insert(completion.values.len().into());
            completion.values.truncate(100);
            completion.has_more = Some(true);
        }
        Ok(completion)
    }
}

/// What binds a `requestState` to its request: the method, the name or URI, and the arguments.
struct Binding {
    method: &'static str,
    target: String,
    arguments: Value,
}

impl Binding {
    fn digest(&self) -> String {
        state::binding(self.method, &self.target, &self.arguments)
    }
}
