//! The typed API: one method per protocol request (`server/discover`, tools, resources, prompts,
//! completion, `health`, `ping`), each a [`Call`] through the request pipeline, and the list
//! pagination behind `list_*` and `all_*`.

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use futures::stream::{self, BoxStream, StreamExt as _};
use mcp_types::http_headers::{header_params, param_headers};
use mcp_types::{
    CallToolResult, CompleteRequestParamsRef, CompleteResult, DiscoverResult, GetPromptResult, JsonObject,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, Prompt, RawResult,
    ReadResourceResult, Resource, ResourceTemplate, Tool, error_codes,
};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::cache::{cache_key, ttl_of};
use super::era::Era;
use super::options::CallOptions;
use super::results::{decode, read_result, result_type_is, tool_result};
use super::{Call, Client, tool_arguments};
use crate::core::{Answer, Wants};
use crate::error::Error;
use crate::transport::TransportKind;

impl Client {
    /// `server/discover` (modern era), served from the cache while its `ttlMs` lasts.
    pub async fn discover(&self) -> Result<DiscoverResult, Error> {
        if self.era() == Era::Legacy {
            return Err(Error::NotSupported {
                method: "server/discover".into(),
                detail: "the server speaks a legacy protocol version".into(),
            });
        }
        if let Some((expires, result)) = &*self.inner.discover_cache.lock().unwrap()
            && *expires > Instant::now()
        {
            return Ok(result.clone());
        }
        let result = self.request(&Call::new(self, "server/discover", JsonObject::new())).await?;
        let discovered: DiscoverResult = decode("server/discover", &result)?;
        let version = self.protocol_version();
        self.settle_modern(version, Some((&result, discovered.clone())));
        Ok(discovered)
    }

    /// One page of `tools/list`. Tools with an invalid definition (on HTTP: invalid
    /// `x-mcp-header` annotations) are left out with a warning; input schemas keep their exact
    /// JSON text.
    pub async fn list_tools_page(&self, cursor: Option<String>) -> Result<ListToolsResult, Error> {
        let call = Call::new(self, "tools/list", cursor_params(&cursor));
        let raw = self.cached_request(&call, cache_key("tools/list", cursor.as_deref())).await?;
        self.decode_tools(&raw)
    }

    fn decode_tools(&self, raw: &RawValue) -> Result<ListToolsResult, Error> {
        #[derive(Deserialize)]
        struct ToolsOnly<'a> {
            #[serde(borrow)]
            tools: Vec<&'a RawValue>,
        }
        let ToolsOnly { tools } = serde_json::from_str(raw.get())
            .map_err(|e| Error::protocol(format!("malformed tools/list result: {e}")))?;
        let mut rest: Value = serde_json::from_str(raw.get()).map_err(|e| Error::protocol(e.to_string()))?;
        rest["tools"] = json!([]);
        let mut page: ListToolsResult =
            serde_json::from_value(rest).map_err(|e| Error::protocol(format!("malformed tools/list result: {e}")))?;
        let check_headers = self.era() == Era::Modern && self.transport().kind() == TransportKind::StreamableHttp;
        let budget = self.inner.config.limits.max_cache_bytes;
        let mut annotations = self.inner.tool_annotations.lock().unwrap();
        for text in tools {
            let tool: Tool = match serde_json::from_str(text.get()) {
                Ok(tool) => tool,
                Err(e) => {
                    tracing::warn!(error = %e, "leaving out a malformed tool definition");
                    continue;
                }
            };
            if check_headers {
                let found = header_params(&tool.input_schema.to_value()).map_err(|reason| reason.to_string());
                if let Err(reason) = &found {
                    tracing::warn!(tool = %tool.name, %reason, "leaving out a tool with an invalid x-mcp-header");
                }
                let valid = found.is_ok();
                annotations.record(&tool.name, found, budget);
                if !valid {
                    continue;
                }
            }
            page.tools.push(tool);
        }
        drop(annotations);
        self.inner.tools_listed.store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(page)
    }

    /// Every tool, page by page, as a stream.
    pub fn list_tools(&self) -> BoxStream<'static, Result<Tool, Error>> {
        let client = self.clone();
        paginate(self.inner.config.limits.max_list_pages, move |cursor| {
            let client = client.clone();
            async move { client.list_tools_page(cursor).await.map(|p| (p.tools, p.next_cursor)) }
        })
    }

    /// All tools, every page collected.
    pub async fn all_tools(&self) -> Result<Vec<Tool>, Error> {
        collect(self.list_tools()).await
    }

    /// Calls a tool with `arguments`: any value that serializes to a JSON object (a struct
    /// deriving `Serialize`, a map, `serde_json::json!({..})`), or `()` for none.
    ///
    /// A tool that ran and failed is `Ok` with `is_error: Some(true)` and the failure in
    /// `content`, for the model to read; `Err` means the call itself did not succeed (unknown
    /// tool, invalid arguments refused by the server, transport, timeout).
    ///
    /// ```no_run
    /// # async fn demo(client: mcp_client::Client) -> Result<(), mcp_client::Error> {
    /// #[derive(serde::Serialize)]
    /// struct Add { a: i64, b: i64 }
    ///
    /// let result = client.call_tool("add", &Add { a: 2, b: 3 }).await?;
    /// assert_ne!(result.is_error, Some(true), "the tool failed: {:?}", result.content);
    /// let time = client.call_tool("now", ()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn call_tool(&self, name: &str, arguments: impl Serialize) -> Result<CallToolResult, Error> {
        self.call_tool_with(name, arguments, CallOptions::default()).await
    }

    /// Calls a tool with per-call options (progress, timeout, log level); `arguments` as for
    /// [`Client::call_tool`].
    ///
    /// With [`ClientBuilder::tasks`](crate::ClientBuilder::tasks), a server may run the call as a task: this then polls
    /// `tasks/get` (every `pollIntervalMs`), answers the task's input requests with the
    /// [`Handlers`](crate::Handlers), and returns the task's result, or its JSON-RPC error ([`Error::Rpc`]), or
    /// [`Error::TaskCancelled`]. Dropping the future cancels the task (`tasks/cancel`).
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: CallOptions,
    ) -> Result<CallToolResult, Error> {
        let arguments = tool_arguments(name, arguments)?;
        let answer = self.start_tool_call(name, arguments, options.clone(), Wants::ToolResult).await?;
        if let Some(raw) = answer.unsettled()
            && result_type_is(raw, mcp_types::ext::tasks::RESULT_TYPE_TASK)
        {
            return Box::pin(self.follow_task(raw, options)).await;
        }
        tool_result(answer)
    }

    /// [`call_tool_with`](Self::call_tool_with), its result as the server wrote it: the exact
    /// JSON text of the `CallToolResult` (numbers as written, members this crate does not model,
    /// their order), for a proxy that forwards it or a tool that shows it. It is read as one JSON
    /// object with a `resultType` this client knows, not decoded ([`RawResult::decode`] does
    /// that). A call the server ran as a task gives the `CallToolResult` the task ended with,
    /// encoded again.
    ///
    /// ```no_run
    /// # async fn demo(client: mcp_client::Client) -> Result<(), mcp_client::Error> {
    /// use mcp_client::CallOptions;
    ///
    /// let result = client.call_tool_raw("add", serde_json::json!({"a": 2, "b": 3}), CallOptions::default()).await?;
    /// println!("{}", result.get());
    /// # Ok(()) }
    /// ```
    pub async fn call_tool_raw(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: CallOptions,
    ) -> Result<RawResult, Error> {
        let arguments = tool_arguments(name, arguments)?;
        let answer = self.start_tool_call(name, arguments, options.clone(), Wants::Raw).await?;
        if let Some(raw) = answer.unsettled()
            && result_type_is(raw, mcp_types::ext::tasks::RESULT_TYPE_TASK)
        {
            let result = Box::pin(self.follow_task(raw, options)).await?;
            return RawResult::new(&result).map_err(|e| Error::protocol(format!("tools/call result: {e}")));
        }
        RawResult::from_raw(answer.into_raw()).map_err(|e| Error::protocol(format!("malformed tools/call result: {e}")))
    }

    /// Follows the task a `tools/call` result announces to its end (cancelling it if dropped).
    pub(crate) async fn follow_task(&self, created: &RawValue, options: CallOptions) -> Result<CallToolResult, Error> {
        let told = options.hooks.task.clone();
        let handle = crate::client::tasks::TaskHandle::created(self, created, options)?;
        if let Some(told) = told {
            told(handle.id());
        }
        handle.wait_or_cancel().await
    }

    /// Sends `tools/call` (with the MRTR rounds answered) and returns its result: complete
    /// (decoded on arrival when the response allows it), or (with the tasks extension) a task.
    pub(crate) async fn start_tool_call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: CallOptions,
        wants: Wants,
    ) -> Result<Answer, Error> {
        let mut call = Call::new(self, "tools/call", JsonObject::new()).with_options(options);
        call.wants = wants;
        call.name = Some(name.to_owned());
        // One deadline for the whole call, the listing below included.
        call.deadline = call.timeout.map(|timeout| Instant::now() + timeout);
        if self.era() == Era::Modern && self.transport().kind() == TransportKind::StreamableHttp {
            let mut learned = None;
            if !self.inner.tools_listed.load(std::sync::atomic::Ordering::SeqCst)
                || self.inner.tool_annotations.lock().unwrap().may_be_missing(name)
            {
                // The annotations decide the Mcp-Param-* headers; learn them first.
                learned = self.learn_tool(&call, name).await?;
            }
            call.param_headers = self.param_headers(name, learned.as_ref(), arguments.as_ref())?;
        }
        call.params.insert("name".into(), json!(name));
        if let Some(arguments) = arguments {
            call.params.insert("arguments".into(), Value::Object(arguments));
        }
        let result = match self.request_with_input(&call).await {
            Err(Error::Rpc { error, .. })
                if error.code == error_codes::HEADER_MISMATCH && !call.param_headers.is_empty() =>
            {
                // The tool's annotations may have changed: list again, then retry once.
                self.invalidate("tools/list");
                let learned = self.learn_tool(&call, name).await?;
                let arguments = call.params.get("arguments").and_then(Value::as_object);
                call.param_headers = self.param_headers(name, learned.as_ref(), arguments)?;
                self.request_with_input(&call).await?
            }
            other => other?,
        };
        Ok(result)
    }

    /// The `Mcp-Param-*` headers of a call of `name`: from its kept annotations, else from the
    /// tool a listing just found; a tool left out for invalid annotations is refused.
    fn param_headers(
        &self,
        name: &str,
        learned: Option<&Tool>,
        arguments: Option<&JsonObject>,
    ) -> Result<Vec<(String, String)>, Error> {
        let annotations = self.inner.tool_annotations.lock().unwrap();
        if let Some(reason) = annotations.invalid(name) {
            return Err(Error::protocol(format!("tool {name:?} has an invalid definition: {reason}")));
        }
        if let Some(params) = annotations.headers(name) {
            return Ok(param_headers(params, arguments));
        }
        drop(annotations);
        match learned.map(|tool| header_params(&tool.input_schema.to_value())) {
            Some(Ok(params)) => Ok(param_headers(&params, arguments)),
            Some(Err(reason)) => Err(Error::protocol(format!("tool {name:?} has an invalid definition: {reason}"))),
            None => Ok(Vec::new()),
        }
    }

    /// Lists tools until `name` is among them (or the list ends, or shows it invalid), within
    /// the call's deadline; a listing that fails otherwise is only logged: the call goes ahead
    /// without headers.
    async fn learn_tool(&self, call: &Call, name: &str) -> Result<Option<Tool>, Error> {
        let listing = async {
            let mut tools = self.list_tools();
            loop {
                match tools.next().await {
                    Some(Ok(tool)) if tool.name == name => return Ok(Some(tool)),
                    Some(Ok(_)) if self.inner.tool_annotations.lock().unwrap().invalid(name).is_some() => {
                        return Ok(None);
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(e),
                    None => return Ok(None),
                }
            }
        };
        let outcome = match (call.deadline, call.timeout) {
            (Some(deadline), Some(after)) => tokio::time::timeout_at(deadline.into(), listing)
                .await
                .map_err(|_| Error::Timeout { method: call.method.to_owned(), after })?,
            _ => listing.await,
        };
        Ok(outcome.unwrap_or_else(|e| {
            tracing::debug!(error = %e, "could not list tools before calling {name}");
            None
        }))
    }

    /// One page of `resources/list`.
    pub async fn list_resources_page(&self, cursor: Option<String>) -> Result<ListResourcesResult, Error> {
        let call = Call::new(self, "resources/list", cursor_params(&cursor));
        let raw = self.cached_request(&call, cache_key("resources/list", cursor.as_deref())).await?;
        decode("resources/list", &raw)
    }

    /// Every resource, page by page, as a stream.
    pub fn list_resources(&self) -> BoxStream<'static, Result<Resource, Error>> {
        let client = self.clone();
        paginate(self.inner.config.limits.max_list_pages, move |cursor| {
            let client = client.clone();
            async move { client.list_resources_page(cursor).await.map(|p| (p.resources, p.next_cursor)) }
        })
    }

    /// All resources, every page collected.
    pub async fn all_resources(&self) -> Result<Vec<Resource>, Error> {
        collect(self.list_resources()).await
    }

    /// One page of `resources/templates/list`.
    pub async fn list_resource_templates_page(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, Error> {
        let call = Call::new(self, "resources/templates/list", cursor_params(&cursor));
        let raw = self.cached_request(&call, cache_key("resources/templates/list", cursor.as_deref())).await?;
        decode("resources/templates/list", &raw)
    }

    /// Every resource template, page by page, as a stream.
    pub fn list_resource_templates(&self) -> BoxStream<'static, Result<ResourceTemplate, Error>> {
        let client = self.clone();
        paginate(self.inner.config.limits.max_list_pages, move |cursor| {
            let client = client.clone();
            async move { client.list_resource_templates_page(cursor).await.map(|p| (p.resource_templates, p.next_cursor)) }
        })
    }

    /// All resource templates, every page collected.
    pub async fn all_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        collect(self.list_resource_templates()).await
    }

    /// Reads a resource (cached by `ttlMs`; input requests are answered by the handlers).
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, Error> {
        self.read_resource_with(uri, CallOptions::default()).await
    }

    /// [`read_resource`](Self::read_resource) with per-call options.
    pub async fn read_resource_with(&self, uri: &str, options: CallOptions) -> Result<ReadResourceResult, Error> {
        let key = cache_key("resources/read", Some(uri));
        if let Some(entry) = self.inner.cache.lock().unwrap().get(&key)
            && entry.expires > Instant::now()
        {
            return decode("resources/read", &entry.result);
        }
        let mut call = Call::new(self, "resources/read", JsonObject::new()).with_options(options);
        call.name = Some(uri.to_owned());
        call.params.insert("uri".into(), json!(uri));
        let result = match self.answer(&call).await? {
            // Results of retries are never cached.
            Answer::Raw(first) if result_type_is(&first, "input_required") => self.request_with_input(&call).await?,
            Answer::ReadResult(first) => {
                let ttl = first.ttl_ms.as_ref().map(|ttl| ttl.duration()).filter(|ttl| !ttl.is_zero());
                if let Some(ttl) = ttl {
                    let raw = serde_json::value::to_raw_value(&first).map_err(|e| Error::protocol(e.to_string()))?;
                    self.cache_put(key, &raw, ttl);
                }
                Answer::ReadResult(first)
            }
            first => {
                if let Some(raw) = first.as_raw()
                    && let Some(ttl) = ttl_of(raw)
                {
                    self.cache_put(key, raw, ttl);
                }
                first
            }
        };
        read_result(result)
    }

    /// One page of `prompts/list`.
    pub async fn list_prompts_page(&self, cursor: Option<String>) -> Result<ListPromptsResult, Error> {
        let call = Call::new(self, "prompts/list", cursor_params(&cursor));
        let raw = self.cached_request(&call, cache_key("prompts/list", cursor.as_deref())).await?;
        decode("prompts/list", &raw)
    }

    /// Every prompt, page by page, as a stream.
    pub fn list_prompts(&self) -> BoxStream<'static, Result<Prompt, Error>> {
        let client = self.clone();
        paginate(self.inner.config.limits.max_list_pages, move |cursor| {
            let client = client.clone();
            async move { client.list_prompts_page(cursor).await.map(|p| (p.prompts, p.next_cursor)) }
        })
    }

    /// All prompts, every page collected.
    pub async fn all_prompts(&self) -> Result<Vec<Prompt>, Error> {
        collect(self.list_prompts()).await
    }

    /// Gets a prompt with its arguments: a value that serializes to a JSON object of strings
    /// (a struct of `String` fields, a `BTreeMap<String, String>`), or `()` for none.
    pub async fn get_prompt(&self, name: &str, arguments: impl Serialize) -> Result<GetPromptResult, Error> {
        self.get_prompt_with(name, arguments, CallOptions::default()).await
    }

    /// [`get_prompt`](Self::get_prompt) with per-call options.
    pub async fn get_prompt_with(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: CallOptions,
    ) -> Result<GetPromptResult, Error> {
        let arguments = prompt_arguments(name, arguments)?;
        let mut call = Call::new(self, "prompts/get", JsonObject::new()).with_options(options);
        call.name = Some(name.to_owned());
        call.params.insert("name".into(), json!(name));
        if !arguments.is_empty() {
            call.params.insert("arguments".into(), Value::Object(arguments));
        }
        let result = self.request_with_input(&call).await?.into_raw();
        decode("prompts/get", &result)
    }

    /// `completion/complete` for one argument of a prompt or resource template.
    pub async fn complete(
        &self,
        reference: CompleteRequestParamsRef,
        argument: &str,
        value: &str,
        context: BTreeMap<String, String>,
    ) -> Result<CompleteResult, Error> {
        let mut params = JsonObject::new();
        params.insert("ref".into(), serde_json::to_value(reference).map_err(|e| Error::protocol(e.to_string()))?);
        params.insert("argument".into(), json!({"name": argument, "value": value}));
        if !context.is_empty() {
            params.insert("context".into(), json!({"arguments": context}));
        }
        let result = self.request(&Call::new(self, "completion/complete", params)).await?;
        decode("completion/complete", &result)
    }

    /// The non-standard `health` method some servers implement (not part of the MCP
    /// specification; mcp-server answers it with `{"protocolVersion": …}`); a server without it
    /// yields [`Error::NotSupported`].
    pub async fn health(&self) -> Result<JsonObject, Error> {
        match self.request(&Call::new(self, "health", JsonObject::new())).await {
            Ok(result) => serde_json::from_str(result.get()).map_err(|e| Error::protocol(e.to_string())),
            Err(Error::Rpc { error, .. }) if error.code == error_codes::METHOD_NOT_FOUND => Err(Error::NotSupported {
                method: "health".into(),
                detail: format!("the server answered: {} ({})", error.message, error.code),
            }),
            Err(e) => Err(e),
        }
    }

    /// Asks the server something it must answer, in either era, to learn whether it still does
    /// (for health checks): `ping` on the legacy era, `server/discover` on the modern one (never
    /// from the cache; the answer refreshes it).
    pub async fn check_alive(&self) -> Result<(), Error> {
        if self.era() == Era::Legacy {
            return self.ping().await;
        }
        let result = self.request(&Call::new(self, "server/discover", JsonObject::new())).await?;
        let discovered: DiscoverResult = decode("server/discover", &result)?;
        self.settle_modern(self.protocol_version(), Some((&result, discovered)));
        Ok(())
    }

    /// Whether the connection is known to be gone without asking: a stdio server whose process
    /// ended and that no request will start again ([`StdioCommand::restart_on_exit`]`(false)`,
    /// as when something else supervises it). Every request on it fails [`Error::Closed`]. A
    /// connection over HTTP is never known closed; [`check_alive`](Self::check_alive) asks.
    ///
    /// [`StdioCommand::restart_on_exit`]: crate::StdioCommand::restart_on_exit
    pub fn is_closed(&self) -> bool {
        match &*self.transport() {
            #[cfg(feature = "stdio")]
            crate::transport::Transport::Stdio(stdio) => !stdio.restarts_on_exit() && !stdio.is_alive(),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// Asks a legacy server for log messages at or above `level` for the rest of the session
    /// (`logging/setLevel`, deprecated). A 2026-07-28 server takes the level per request:
    /// [`CallOptions::log_level`] or [`ClientBuilder::log_level`](crate::ClientBuilder::log_level).
    pub async fn set_log_level(&self, level: mcp_types::LoggingLevel) -> Result<(), Error> {
        if self.era() == Era::Modern {
            return Err(Error::NotSupported {
                method: "logging/setLevel".into(),
                detail: "removed in 2026-07-28; the level is sent with each request".into(),
            });
        }
        let mut params = JsonObject::new();
        params.insert("level".into(), json!(level));
        self.request(&Call::new(self, "logging/setLevel", params)).await.map(drop)
    }

    /// Legacy `ping` (removed in 2026-07-28, where it is not sent).
    pub async fn ping(&self) -> Result<(), Error> {
        if self.era() == Era::Modern {
            return Err(Error::NotSupported { method: "ping".into(), detail: "removed in 2026-07-28".into() });
        }
        self.request(&Call::new(self, "ping", JsonObject::new())).await.map(drop)
    }
}

/// Pages through a list: `fetch(cursor)` returns a page's items and next cursor. A cursor the
/// server already returned is a loop and ends the stream with an error; so does a next cursor
/// after `max_pages` pages.
pub(super) fn paginate<T, F, Fut>(max_pages: usize, fetch: F) -> BoxStream<'static, Result<T, Error>>
where
    T: Send + 'static,
    F: Fn(Option<String>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(Vec<T>, Option<String>), Error>> + Send + 'static,
{
    struct State<F> {
        fetch: F,
        cursor: Option<String>,
        seen: HashSet<String>,
        done: bool,
        max_pages: usize,
    }
    let state = State { fetch, cursor: None, seen: HashSet::new(), done: false, max_pages };
    stream::unfold(state, |mut state| async move {
        if state.done {
            return None;
        }
        match (state.fetch)(state.cursor.take()).await {
            Ok((items, next)) => {
                let ending = match &next {
                    Some(next) if state.seen.contains(next) => {
                        Some(Error::protocol(format!("the server repeated the cursor {next:?}")))
                    }
                    // `seen` holds one cursor per page fetched after the first.
                    Some(_) if state.seen.len() + 1 >= state.max_pages => Some(Error::limit(
                        "ClientBuilder::max_list_pages",
                        format!(
                            "the server has more than {} pages of this list; the rest was not fetched",
                            state.max_pages
                        ),
                    )),
                    _ => None,
                };
                if let Some(error) = ending {
                    state.done = true;
                    let items: Vec<Result<T, Error>> = items.into_iter().map(Ok).chain([Err(error)]).collect();
                    return Some((stream::iter(items), state));
                }
                match next {
                    Some(next) => {
                        state.seen.insert(next.clone());
                        state.cursor = Some(next);
                    }
                    None => state.done = true,
                }
                Some((stream::iter(items.into_iter().map(Ok).collect::<Vec<_>>()), state))
            }
            Err(e) => {
                state.done = true;
                Some((stream::iter(vec![Err(e)]), state))
            }
        }
    })
    .flatten()
    .boxed()
}

pub(super) async fn collect<T>(mut items: BoxStream<'static, Result<T, Error>>) -> Result<Vec<T>, Error> {
    let mut all = Vec::new();
    while let Some(item) = items.next().await {
        all.push(item?);
    }
    Ok(all)
}

pub(super) fn cursor_params(cursor: &Option<String>) -> JsonObject {
    let mut params = JsonObject::new();
    if let Some(cursor) = cursor {
        params.insert("cursor".into(), json!(cursor));
    }
    params
}

/// A prompt's `arguments`: an object whose members are strings (members that are `null`, an
/// `Option` left `None`, are left out).
fn prompt_arguments(name: &str, arguments: impl Serialize) -> Result<JsonObject, Error> {
    let mut arguments = tool_arguments(name, arguments)?.unwrap_or_default();
    arguments.retain(|_, value| !value.is_null());
    match arguments.iter().find(|(_, value)| !value.is_string()) {
        Some((key, value)) => Err(Error::InvalidArguments {
            tool: name.to_owned(),
            message: format!("prompt argument `{key}` must be a string, not {value}"),
        }),
        None => Ok(arguments),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn pagination_follows_cursors_and_stops_on_a_loop() {
        let pages = paginate(10, |cursor: Option<String>| async move {
            Ok(match cursor.as_deref() {
                None => (vec![1, 2], Some("a".to_owned())),
                Some("a") => (vec![3], Some("".to_owned())),
                Some("") => (vec![4], None),
                _ => unreachable!(),
            })
        });
        assert_eq!(collect(pages).await.unwrap(), vec![1, 2, 3, 4]);
        let looping = paginate(10, |_cursor: Option<String>| async move { Ok((vec![0], Some("same".to_owned()))) });
        let err = collect(looping).await.unwrap_err();
        assert!(err.to_string().contains("repeated the cursor"), "{err}");
        let fetched = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = fetched.clone();
        let endless = paginate(3, move |cursor: Option<String>| {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move { Ok((vec![0], Some(format!("{}x", cursor.unwrap_or_default())))) }
        });
        let err = collect(endless).await.unwrap_err();
        assert!(matches!(err, Error::LimitExceeded { limit: "ClientBuilder::max_list_pages", .. }), "{err}");
        assert_eq!(fetched.load(std::sync::atomic::Ordering::SeqCst), 3);
    }
}
