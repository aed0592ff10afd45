//! Running a request's handler: its first step inline and the rest, if it waits, as its reply is
//! polled; multi-round requests (`requestState`, `inputResponses`); and the calls into the tools,
//! resources, prompts and completions the server was built with.

use super::*;
use futures::FutureExt as _;

use super::binding::Binding;
use crate::dynamic::ToolAnswer;
use crate::message::Stop;
use crate::routes::ToolArguments;
use crate::telemetry::Operation;
use serde_json::value::RawValue;

impl Server {
    /// Runs a handler: its first step here, and the rest, if it waits for anything, as the
    /// [`Reply`] that carries its messages and response is polled. No task is spawned for it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn spawn(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        era: Era,
        version: Cow<'static, str>,
        meta: CallerMeta,
        call: Decoded,
        operation: Option<Operation>,
    ) -> Reply {
        let (sink, rx) = crate::message::sink();
        let open = sink.clone();
        let server = self.clone();
        let run_session = Arc::clone(session);
        let run_id = id.clone();
        let running = Box::pin(async move { server.run(&run_session, &run_id, era, version, meta, call, sink).await });
        self.drive(session, id, rx, Some(open), running, operation)
    }

    /// Polls `running` once here; if it waits, the rest runs as the reply is polled (stopped when
    /// the reply is dropped) and ends the reply with its response. `open`, a sender of `rx`, is
    /// held by the reply until the handler ends.
    #[inline(never)]
    pub(super) fn drive(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        mut rx: crate::message::SinkReceiver,
        open: Option<crate::message::Sink>,
        mut running: BoxFuture<Outgoing>,
        operation: Option<Operation>,
    ) -> Reply {
        let limit = self.inner.options.max_in_flight;
        if session.in_flight() >= limit {
            crate::telemetry::refused("busy");
            let reply = Reply::ready(Outgoing::error(Some(&id), &busy(limit)));
            if let Some(operation) = operation {
                operation.finish(reply.known_response());
            }
            return reply;
        }
        if let Some(operation) = &operation
            && !operation.span().is_disabled()
        {
            running = Box::pin(tracing::Instrument::instrument(running, operation.span().clone()));
        }
        let mut waker = std::task::Context::from_waker(std::task::Waker::noop());
        // A panicking handler ends its reply without a response, as it does on a task.
        let first = std::panic::catch_unwind(AssertUnwindSafe(|| running.as_mut().poll(&mut waker)));
        let response = match first {
            Ok(Poll::Pending) => {
                // The rest runs as the reply is polled: a task spawned here would take the
                // worker's next turn from whatever the first step woke (a connection's task
                // sending the handler's query), and that would wait behind every queued task.
                let task_session = Arc::clone(session);
                let task_id = id.clone();
                let (stop, registration) = futures::future::AbortHandle::new_pair();
                let rest = async move {
                    // A panic ends the reply without a response, as on a task of its own.
                    let response = AssertUnwindSafe(running).catch_unwind().await.ok();
                    if let (Some(operation), Some(response)) = (operation, &response) {
                        operation.finish(Some(response));
                    }
                    // Untracked however it ended: the reply does not stop a handler that ended.
                    task_session.untrack(&task_id);
                    response
                };
                let rest = futures::future::Abortable::new(rest, registration).map(|ended| ended.ok().flatten());
                session.track(id, Stop::Inline(stop.clone()));
                return Reply::running(Box::pin(rest), rx, open, stop);
            }
            Ok(Poll::Ready(response)) => Some(response),
            Err(_) => None,
        };
        drop(running);
        if let Some(operation) = operation {
            operation.finish(response.as_ref());
        }
        let mut messages = VecDeque::new();
        while let Some(message) = rx.try_recv() {
            messages.push_back(message);
        }
        Reply::finished(messages, response)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) async fn run(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        era: Era,
        version: Cow<'static, str>,
        meta: CallerMeta,
        call: Decoded,
        sink: crate::message::Sink,
    ) -> Outgoing {
        // Multi-round requests: earlier answers come back sealed in `requestState`, bound to the
        // request they were given for. The binding (a hash) is computed only when needed: to
        // open a state, or to seal one. The legacy wire has neither.
        let modern = era == Era::Modern;
        let (state, responses) = match &call {
            Decoded::CallTool(p, _) => (p.request_state.as_deref(), p.input_responses.as_ref()),
            Decoded::GetPrompt(p) => (p.request_state.as_deref(), p.input_responses.as_ref()),
            Decoded::Read(p) => (p.request_state.as_deref(), p.input_responses.as_ref()),
            _ => (None, None),
        };
        let mut binding = (modern && state.is_some()).then(|| Binding::of(&call)).flatten();
        let principal = session.principal();
        let principal = (!principal.is_anonymous()).then(|| state::principal_digest(principal.as_str()));
        let (answers, saved) = match self.answers(era, binding.as_ref(), principal.as_deref(), state, responses).await {
            Ok(opened) => opened,
            Err(error) => return Outgoing::error(Some(id), &error),
        };
        let may_become_task = match &call {
            Decoded::CallTool(params, _) => {
                era == Era::Modern
                    && ext::declares(&meta.client_capabilities, TASKS)
                    && self.task_support(&params.name) != TaskSupport::Forbidden
            }
            _ => false,
        };
        // A plain tool route lends the handler its arguments, so the binding can be made from them
        // if the handler asks for input; anything else that may need one copies them now.
        let lends_arguments = match &call {
            Decoded::CallTool(p, _) => !may_become_task && self.handler_sees_only_arguments(&p.name),
            _ => false,
        };
        if modern && binding.is_none() && !lends_arguments {
            binding = Binding::of(&call);
        }
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
            saved: std::sync::Mutex::new(saved),
            principal: session.request_principal(),
            may_become_task,
            task: Default::default(),
            task_now: Default::default(),
        });
        let is_tool = matches!(call, Decoded::CallTool(..));
        let outcome: Result<Outgoing, Error> = match (call, &self.inner.layer) {
            (Decoded::CallTool(params, text), _) if may_become_task => {
                // Served inline until the handler first waits; then the call becomes a task.
                let params = match decoded::arguments_read(params, text) {
                    Ok(params) => params,
                    Err(error) => return self.respond_error(id, era, true, error),
                };
                let server = self.clone();
                let handler_ctx = ctx.clone();
                let handler_id = id.clone();
                let mut handler: BoxFuture<Result<mcp_types::CallToolResult, Error>> = Box::pin(async move {
                    match server.serve_layered(handler_id, handler_ctx, McpCall::CallTool(params)).await? {
                        McpResponse::CallTool(result) => Ok(result),
                        _ => Err(middleware::mismatch("tools/call")),
                    }
                });
                // A handler that finishes within the grace (none by default: until it first
                // waits) answers directly.
                let grace = self.inner.options.task_grace;
                let finished = match grace.is_zero() {
                    true => futures::poll!(handler.as_mut()),
                    false => tokio::select! {
                        biased;
                        outcome = handler.as_mut() => Poll::Ready(outcome),
                        _ = ctx.task_requested() => Poll::Pending,
                        _ = tokio::time::sleep(grace) => Poll::Pending,
                    },
                };
                match finished {
                    Poll::Ready(outcome) => outcome.map(|r| self.respond_tool(id, era, r)),
                    // Boxed: the paths that are not tasks keep a small future.
                    Poll::Pending => {
                        let client = crate::tasks::QuotaKey::new(ctx.principal(), session.remote());
                        return Box::pin(self.start_task(&ctx, client, id, handler)).await;
                    }
                }
            }
            // Without middleware each handler is awaited right here, on the decoded params: no
            // async level and no copy of the params more than before layers existed (this
            // future is moved whole into its box, so its size is paid on every request).
            (Decoded::CallTool(mut params, text), None) => {
                let outcome = self.call_tool(id, ctx.clone(), &mut params, text.as_deref(), true).await;
                if modern && binding.is_none() && matches!(outcome, Err(Error::InputRequired(_))) {
                    binding = Binding::of(&Decoded::CallTool(params, text));
                }
                outcome.map(|answer| match answer {
                    ToolAnswer::Decoded(result) => self.respond_tool(id, era, result),
                    ToolAnswer::Raw(raw) => self.respond_raw_tool(id, era, raw),
                })
            }
            (Decoded::Read(params), None) => self.read(id, ctx.clone(), params).await.map(|contents| {
                let cache = self.inner.options.read_cache;
                self.respond(id, era, ReadResourceResult::new(cache.scope, contents, cache.ttl_ms))
            }),
            (Decoded::GetPrompt(params), None) => {
                self.get_prompt(id, ctx.clone(), params).await.map(|r| self.respond(id, era, r))
            }
            (Decoded::Complete(params), None) => self
                .complete(ctx.clone(), params)
                .await
                .map(|completion| self.respond(id, era, CompleteResult::new(completion))),
            (call, Some(service)) => {
                let call = match call {
                    Decoded::CallTool(params, text) => match decoded::arguments_read(params, text) {
                        Ok(params) => McpCall::CallTool(params),
                        Err(error) => return self.respond_error(id, era, true, error),
                    },
                    Decoded::Read(params) => McpCall::ReadResource(params),
                    Decoded::GetPrompt(params) => McpCall::GetPrompt(params),
                    Decoded::Complete(params) => McpCall::Complete(params),
                    Decoded::ListTools(listing) => McpCall::ListTools(listing.cursor),
                    Decoded::ListResources(listing) => McpCall::ListResources(listing.cursor),
                    Decoded::ListTemplates(listing) => McpCall::ListResourceTemplates(listing.cursor),
                    Decoded::ListPrompts(listing) => McpCall::ListPrompts(listing.cursor),
                    _ => unreachable!("served without a task"),
                };
                let request = McpRequest { id: id.clone(), ctx: ctx.clone(), call };
                middleware::call(service, request).await.map(|response| self.respond_with(id, era, response))
            }
            (_, None) => unreachable!("served without a task"),
        };
        match outcome {
            Ok(message) => message,
            Err(Error::InputRequired(requests)) if era == Era::Modern => {
                tracing::info!(target: crate::telemetry::TARGET, inputs = requests.len(), "input required");
                let sealed = Sealed {
                    binding: binding.as_ref().map(Binding::digest).unwrap_or_default(),
                    issued: state::now_secs(),
                    answers: ctx.used_answers(),
                    principal,
                    nonce: state::nonce(),
                    saved: ctx.saved(),
                };
                let mut result = InputRequiredResult::new();
                result.result_type = ResultType::InputRequired;
                result.input_requests = Some(requests);
                result.request_state = Some(self.inner.keyring.seal(&sealed));
                self.respond(id, era, result)
            }
            Err(error) => self.respond_error(id, era, is_tool, error),
        }
    }

    /// The response to a request that failed with `error` (but for a modern request's input
    /// round, which `run` answers): a tool's failure is a tool error.
    pub(super) fn respond_error(&self, id: &RequestId, era: Era, is_tool: bool, error: Error) -> Outgoing {
        match error {
            Error::Failed(message) if is_tool => self.respond_tool(id, era, error_result(message)),
            Error::InsufficientScope(needed) => {
                Outgoing::error_as(Some(id), &crate::error::insufficient_scope(&needed), Disposition::Forbidden)
            }
            Error::MissingCapability(required) if era == Era::Modern => {
                Outgoing::error_as(Some(id), &missing_capability(&required), Disposition::BadRequest)
            }
            Error::MissingCapability(required) => {
                let names = serde_json::to_value(&required).unwrap_or_default();
                let error = ErrorObject::invalid_params(format!(
                    "The client did not declare the capabilities this needs: {names}"
                ));
                Outgoing::error(Some(id), &error)
            }
            error => Outgoing::error(Some(id), &error.into_error_object()),
        }
    }

    /// Serves a request through the server's middleware, if it has any.
    async fn serve_layered(&self, id: RequestId, ctx: Context, call: McpCall) -> Result<McpResponse, Error> {
        match &self.inner.layer {
            None => self.serve_call(id, ctx, call).await,
            Some(service) => middleware::call(service, McpRequest { id, ctx, call }).await,
        }
    }

    /// Serves a request (inside the server's middleware): its route, through the route's own.
    pub(super) async fn serve_call(&self, id: RequestId, ctx: Context, call: McpCall) -> Result<McpResponse, Error> {
        Ok(match call {
            McpCall::CallTool(mut params) => {
                McpResponse::CallTool(self.call_tool(&id, ctx, &mut params, None, false).await?.decode()?)
            }
            McpCall::ReadResource(params) => McpResponse::ReadResource(self.read(&id, ctx, params).await?),
            McpCall::GetPrompt(params) => McpResponse::GetPrompt(self.get_prompt(&id, ctx, params).await?),
            McpCall::Complete(params) => McpResponse::Complete(self.complete(ctx, params).await?),
            lists => self.serve_list(&ctx, lists)?,
        })
    }

    /// Serves one of the four lists.
    fn serve_list(&self, ctx: &Context, call: McpCall) -> Result<McpResponse, Error> {
        let principal = || ctx.principal().clone();
        Ok(match call {
            McpCall::ListTools(cursor) => McpResponse::ListTools(self.list_tools(principal, cursor)?),
            McpCall::ListResources(cursor) => McpResponse::ListResources(self.list_resources(principal, cursor)?),
            McpCall::ListResourceTemplates(cursor) => {
                McpResponse::ListResourceTemplates(self.list_templates(principal, cursor)?)
            }
            McpCall::ListPrompts(cursor) => McpResponse::ListPrompts(self.list_prompts(principal, cursor)?),
            other => return Err(middleware::mismatch(other.method())),
        })
    }

    /// The response message of a served request.
    fn respond_with(&self, id: &RequestId, era: Era, response: McpResponse) -> Outgoing {
        match response {
            McpResponse::CallTool(result) => self.respond_tool(id, era, result),
            McpResponse::ReadResource(contents) => {
                let cache = self.inner.options.read_cache;
                self.respond(id, era, ReadResourceResult::new(cache.scope, contents, cache.ttl_ms))
            }
            McpResponse::GetPrompt(result) => self.respond(id, era, result),
            McpResponse::Complete(completion) => self.respond(id, era, CompleteResult::new(completion)),
            McpResponse::ListTools(result) => self.respond(id, era, result),
            McpResponse::ListResources(result) => self.respond(id, era, result),
            McpResponse::ListResourceTemplates(result) => self.respond(id, era, result),
            McpResponse::ListPrompts(result) => self.respond(id, era, result),
        }
    }

    /// A tool's result; one with `isError` counts as a tool error in telemetry.
    pub(super) fn respond_tool(&self, id: &RequestId, era: Era, result: mcp_types::CallToolResult) -> Outgoing {
        let failed = result.is_error == Some(true);
        let message = self.respond(id, era, result);
        if failed { message.tool_error() } else { message }
    }

    /// The answers a multi-round request carries (those sealed in its state, then this
    /// round's), and what its handler saved in the round before.
    async fn answers(
        &self,
        era: Era,
        binding: Option<&Binding>,
        principal: Option<&str>,
        state: Option<&str>,
        responses: Option<&InputResponses>,
    ) -> Result<(BTreeMap<String, Value>, Option<Value>), ErrorObject> {
        let mut answers = BTreeMap::new();
        let mut saved = None;
        if era == Era::Legacy {
            return Ok((answers, saved));
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
            saved = sealed.saved;
            tracing::debug!(target: crate::telemetry::TARGET, answers = answers.len(), "request state opened");
        }
        for (key, response) in responses.into_iter().flatten() {
            answers.insert(key.clone(), to_value(response));
        }
        Ok((answers, saved))
    }

    /// Calls a tool. A route without middleware is lent the arguments on the modern wire and
    /// they are put back in `params` (a binding may be made from them); anything else takes them.
    /// `text`: the arguments as the request wrote them, when the lane left them unread (a route
    /// that checks nothing against a schema is lent the text; anything else reads it first).
    /// `writes_out`: the result goes straight out (no middleware reads it), so a tool source may
    /// answer with its text ([`ToolSource::answer`]).
    async fn call_tool(
        &self,
        id: &RequestId,
        ctx: Context,
        params: &mut CallToolRequestParams,
        text: Option<&RawValue>,
        writes_out: bool,
    ) -> Result<ToolAnswer, Error> {
        let entry = self.tool(&params.name);
        if let (Some(text), None) = (text, entry) {
            params.arguments = Some(decoded::arguments_from_text(text)?);
        }
        let Some(entry) = entry else {
            return match &self.inner.tool_source {
                Some(source) => {
                    let support = source.task_support(&params.name);
                    if let Some(refusal) = task_refusal(&ctx, support, &params.name) {
                        return Err(refusal);
                    }
                    // As for a route: a call that may become a task runs in the task's span.
                    let may_become_task = ctx.may_become_task();
                    if writes_out && !may_become_task {
                        return handler(source.answer(ctx, std::mem::take(params))).await;
                    }
                    let running = source.call(ctx, std::mem::take(params));
                    let result = if may_become_task { running.await } else { handler(running).await };
                    result.map(ToolAnswer::Decoded)
                }
                None => Err(Error::invalid_params(format!("Unknown tool: {}", params.name))),
            };
        };
        if let Some(required) = &entry.route.requires
            && let Some(missing) = missing_capabilities(required, ctx.client_capabilities())
        {
            return Err(Error::MissingCapability(Box::new(missing)));
        }
        if let Some(refusal) = task_refusal(&ctx, entry.route.task_support, &params.name) {
            return Err(refusal);
        }
        if let Some(text) = text
            && entry.route.service.is_none()
            && !entry.validator.checks()
        {
            let may_become_task = ctx.may_become_task();
            let running = (entry.route.handler)(ctx, ToolArguments::Text(text.get()));
            let result = if may_become_task { running.await } else { handler(running).await };
            return result.map(ToolAnswer::Decoded);
        }
        if let Some(text) = text {
            params.arguments = Some(decoded::arguments_from_text(text)?);
        }
        let given = params.arguments.take();
        let had_arguments = given.is_some();
        let arguments = given.map(Value::Object).unwrap_or_else(|| json!({}));
        let problems = entry.validator.problems(&arguments);
        if !problems.is_empty() {
            let problems = problems.join("; ");
            return Ok(ToolAnswer::Decoded(error_result(format!(
                "Invalid arguments for tool {}: {problems}",
                params.name
            ))));
        }
        let Some(service) = &entry.route.service else {
            // A call that may become a task runs in the task's span once it is one: a handler
            // span here would hold the request's span open for the task's whole life.
            let may_become_task = ctx.may_become_task();
            let running = match ctx.era() {
                Era::Modern => {
                    let running = (entry.route.handler)(ctx, ToolArguments::Lent(&arguments));
                    if let (true, Value::Object(arguments)) = (had_arguments, arguments) {
                        params.arguments = Some(arguments);
                    }
                    running
                }
                Era::Legacy => (entry.route.handler)(ctx, ToolArguments::Given(arguments)),
            };
            let result = if may_become_task { running.await } else { handler(running).await };
            return result.map(ToolAnswer::Decoded);
        };
        let Value::Object(arguments) = arguments else { unreachable!("built from an object") };
        params.arguments = Some(arguments);
        let call = McpCall::CallTool(std::mem::take(params));
        match middleware::call(service, McpRequest { id: id.clone(), ctx, call }).await? {
            McpResponse::CallTool(result) => Ok(ToolAnswer::Decoded(result)),
            _ => Err(middleware::mismatch("tools/call")),
        }
    }

    /// Reads a resource: through the route's own middleware when it has some (boxed, with the
    /// params it needs), else straight from the URI (the params are not kept in the future).
    fn read<'s>(
        &'s self,
        id: &RequestId,
        ctx: Context,
        params: ReadResourceRequestParams,
    ) -> impl Future<Output = Result<Vec<mcp_types::ReadResourceResultContentsItem>, Error>> + Send + use<'s> {
        let read = match self.read_route_service(&params.uri) {
            Some(service) => Ok((params.uri.clone(), read_through(service, id.clone(), ctx, params))),
            None => Err((ctx, params.uri)),
        };
        async move {
            match read {
                Ok((uri, through)) => non_empty(through.await?, &uri),
                Err((ctx, uri)) => self.read_plain(ctx, uri).await,
            }
        }
    }

    /// The middleware of the resource or template route that serves `uri`, if it has any.
    fn read_route_service(&self, uri: &str) -> Option<&middleware::McpService> {
        if !self.inner.has_route_layers {
            return None;
        }
        if let Some(&index) = self.inner.resource_index.get(uri) {
            return self.inner.resources[index].service.as_ref();
        }
        if self.inner.skills.iter().any(|skill| skill.inner.relative(uri).is_some()) {
            return None;
        }
        self.inner.templates.iter().find(|t| t.pattern.matches(uri).is_some()).and_then(|t| t.service.as_ref())
    }

    async fn read_plain(
        &self,
        ctx: Context,
        uri: String,
    ) -> Result<Vec<mcp_types::ReadResourceResultContentsItem>, Error> {
        if let Some(&index) = self.inner.resource_index.get(&uri) {
            let contents = handler((self.inner.resources[index].handler)(ctx, uri.clone())).await?;
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
                let contents = handler((template.handler)(ctx, uri.clone(), vars)).await?;
                return non_empty(contents, &uri);
            }
        }
        if let Some(source) = &self.inner.resource_source {
            let contents = handler(source.read(ctx, uri.clone())).await?;
            return non_empty(contents, &uri);
        }
        Err(Error::resource_not_found(&uri))
    }

    async fn get_prompt(
        &self,
        id: &RequestId,
        ctx: Context,
        params: GetPromptRequestParams,
    ) -> Result<mcp_types::GetPromptResult, Error> {
        let Some(&index) = self.inner.prompt_index.get(&params.name) else {
            return match &self.inner.prompt_source {
                Some(source) => handler(source.get(ctx, params)).await,
                None => Err(Error::invalid_params(format!("Unknown prompt: {}", params.name))),
            };
        };
        let route = &self.inner.prompts[index];
        if let Some(missing) = route.missing_argument(params.arguments.as_ref().unwrap_or(&BTreeMap::new())) {
            return Err(Error::invalid_params(format!("Prompt {} needs the argument `{missing}`", params.name)));
        }
        let Some(service) = &route.service else {
            return handler((route.handler)(ctx, params.arguments.unwrap_or_default())).await;
        };
        match middleware::call(service, McpRequest { id: id.clone(), ctx, call: McpCall::GetPrompt(params) }).await? {
            McpResponse::GetPrompt(result) => Ok(result),
            _ => Err(middleware::mismatch("prompts/get")),
        }
    }

    async fn complete(
        &self,
        ctx: Context,
        params: CompleteRequestParams,
    ) -> Result<mcp_types::CompleteResultCompletion, Error> {
        match &params.r#ref {
            CompleteRequestParamsRef::RefPrompt(prompt)
                if !self.inner.prompt_index.contains_key(&prompt.name)
                    && !self
                        .inner
                        .prompt_source
                        .as_ref()
                        .is_some_and(|s| s.lists_prompt(&prompt.name, ctx.principal())) =>
            {
                return Err(Error::invalid_params(format!("Unknown prompt: {}", prompt.name)));
            }
            CompleteRequestParamsRef::RefResource(template)
                if !self.inner.templates.iter().any(|t| t.template.uri_template == template.uri)
                    && !self.inner.resource_source.as_ref().is_some_and(|s| {
                        s.templates(ctx.principal()).iter().any(|t| t.uri_template == template.uri)
                    }) =>
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

/// A route's handler, in a span of its own (a child of the request's) when anything listens;
/// as it is otherwise.
pub(super) fn handler<T: 'static>(running: BoxFuture<T>) -> BoxFuture<T> {
    let span = tracing::info_span!(target: crate::telemetry::TARGET, "mcp.handler", otel.name = "handler");
    if span.is_disabled() { running } else { Box::pin(tracing::Instrument::instrument(running, span)) }
}

/// A read through a resource's (or template's) own middleware.
fn read_through(
    service: &middleware::McpService,
    id: RequestId,
    ctx: Context,
    params: ReadResourceRequestParams,
) -> BoxFuture<Result<Vec<mcp_types::ReadResourceResultContentsItem>, Error>> {
    let through = middleware::call(service, McpRequest { id, ctx, call: McpCall::ReadResource(params) });
    Box::pin(async move {
        match through.await? {
            McpResponse::ReadResource(contents) => Ok(contents),
            _ => Err(middleware::mismatch("resources/read")),
        }
    })
}

/// The refusal of a call of a tool that runs only as a task, from a client that cannot have one
/// (the extension does not exist before 2026-07-28, whatever a legacy client declared).
pub(super) fn task_refusal(ctx: &Context, support: TaskSupport, tool: &str) -> Option<Error> {
    let accepts_tasks = ctx.era() == Era::Modern && ext::declares(ctx.client_capabilities(), TASKS);
    (support == TaskSupport::Required && !accepts_tasks).then(|| match ctx.era() {
        Era::Modern => Error::MissingCapability(Box::new(ext::client_capabilities(TASKS))),
        Era::Legacy => Error::invalid_params(format!(
            "Tool {tool} runs only as a task, which needs the tasks extension of protocol 2026-07-28"
        )),
    })
}

impl Server {
    /// Whether calls of `name` may run as tasks: its route's, else the tool source's say.
    pub(super) fn task_support(&self, name: &str) -> TaskSupport {
        match (self.tool(name), &self.inner.tool_source) {
            (Some(entry), _) => entry.route.task_support,
            (None, Some(source)) => source.task_support(name),
            (None, None) => TaskSupport::Forbidden,
        }
    }

    /// The `x-mcp-header` parameters a call of `name` must mirror: its route's, else those the
    /// source gives for its tool as listed now ([`ToolSource::header_params`]).
    pub(super) fn mirrored_params(&self, name: &str, session: &Session) -> Option<Arc<[HeaderParam]>> {
        match self.tool(name) {
            Some(entry) if entry.headers.is_empty() => None,
            Some(entry) => Some(Arc::clone(&entry.headers)),
            None => self.inner.tool_source.as_ref()?.header_params(name, &session.request_principal()),
        }
    }
}
