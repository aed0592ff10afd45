//! One list of each kind (tools, prompts, resources, templates, skills) of every upstream, tools
//! and prompts under their listed names, and the requests to them: the gateway's [`ToolSource`],
//! [`PromptSource`], [`ResourceSource`] and [`SkillSource`]. Who may see and use what is
//! decided in [`access`].

mod access;
mod forward;
mod relay;
pub(crate) use access::Decision;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use mcp_server::dynamic::{
    AnswerFuture, PromptFuture, PromptSource, ReadFuture, RelayCall, RelayFuture, ResourceSource, SkillSource,
    ToolAnswer, ToolFuture, ToolSource,
};
use mcp_server::{Context, Error, Principal, Server};
use mcp_types::ext::skills::Skill;
use mcp_types::http_headers::HeaderParam;
use mcp_types::{
    CallToolRequestParams, CompleteRequestParams, CompleteRequestParamsRef, CompleteResultCompletion,
    GetPromptRequestParams, Prompt, Resource, ResourceTemplate, Tool,
};

use crate::bridge::Held;
use crate::config::PrefixMode;
use crate::index::{Changed, Clash, Index, Listing, owner_of};
use crate::policy::{Arguments, Policy};
use crate::upstream::Upstream;
use forward::Forward;

/// The upstreams, in configuration order, and the index of their tools and prompts as listed now.
pub(crate) struct Catalogue {
    pub(crate) upstreams: Vec<Arc<Upstream>>,
    /// When tools and prompts are listed under their upstream's prefix.
    prefix_mode: PrefixMode,
    index: RwLock<Arc<Index>>,
    /// One rebuild at a time: each starts from the owners the one before recorded.
    rebuilding: Mutex<()>,
    /// Whether a rebuild after a list change is wanted, and whether one runs.
    rebuilds: Mutex<Rebuilds>,
    /// Set by the first rebuild (`Gateway::start`'s, in configuration order); list changes
    /// reported before it wait for it.
    started: AtomicBool,
    /// The server to tell when a list changes (set once it is built).
    pub(crate) server: OnceLock<Server>,
    /// Upstream requests waiting for their modern callers' input.
    held: Arc<Held>,
    /// `catalogue = "search"`: the index of the tools, rebuilt with the catalogue's when they
    /// change (`crate::search`). None: every tool is listed.
    search: Option<RwLock<Arc<crate::search::Search>>>,
    /// The `[[policy]]` rules, compiled.
    policy: Arc<Policy>,
}

/// The rebuilds after list changes: at most one runs (on a blocking thread), and changes
/// reported meanwhile are one more rebuild after it.
#[derive(Default)]
struct Rebuilds {
    wanted: bool,
    running: bool,
}

impl Catalogue {
    pub(crate) fn new(upstreams: Vec<Arc<Upstream>>, prefix_mode: PrefixMode) -> Catalogue {
        Catalogue {
            upstreams,
            prefix_mode,
            index: RwLock::default(),
            rebuilding: Mutex::new(()),
            rebuilds: Mutex::default(),
            started: AtomicBool::new(false),
            server: OnceLock::new(),
            held: Arc::default(),
            search: None,
            policy: Arc::new(Policy::none()),
        }
    }

    /// Holding the requests `held` holds (a reload's next catalogue takes over the previous one's,
    /// so that a caller's answer reaches the upstream request that waits for it).
    pub(crate) fn holding(mut self, held: Arc<Held>) -> Catalogue {
        self.held = held;
        self
    }

    /// The upstream requests waiting for their modern callers' input.
    pub(crate) fn held(&self) -> Arc<Held> {
        Arc::clone(&self.held)
    }

    /// Every scope a policy rule names (a caller may step up to them).
    pub(crate) fn policy_scopes(&self) -> Vec<String> {
        self.policy.scopes().cloned().collect()
    }

    /// With `[[policy]]` rules.
    pub(crate) fn policed(mut self, policy: Arc<Policy>) -> Catalogue {
        self.policy = policy;
        self
    }

    /// With `catalogue = "search"`: only `search_tools` and `call_tool` listed.
    pub(crate) fn searching(mut self, mode: crate::config::CatalogueMode) -> Catalogue {
        if mode == crate::config::CatalogueMode::Search {
            self.search = Some(RwLock::default());
        }
        self
    }

    /// The first index, in configuration order (`Gateway::start`): every clash is returned.
    pub(crate) fn start(&self) -> Vec<Clash> {
        let _one = self.rebuilding.lock().expect("not poisoned");
        self.started.store(true, Ordering::SeqCst);
        self.rebuild_locked().0
    }

    /// Rebuilds the index from the upstreams' current lists: the clashes, and which lists
    /// changed.
    fn rebuild_locked(&self) -> (Vec<Clash>, Changed) {
        let previous = Arc::clone(&self.index.read().expect("not poisoned"));
        let (mut index, clashes, changed) = Index::next(&previous, &self.upstreams, self.prefix_mode);
        index.policed = self.prepare(&index);
        if let Some(search) = &self.search
            && changed.tools
        {
            let searched = crate::search::Search::new(&index.tools);
            *search.write().expect("not poisoned") = Arc::new(searched);
        }
        *self.index.write().expect("not poisoned") = Arc::new(index);
        (clashes, changed)
    }

    /// The names the index records (owners, template starts, refused entries).
    pub(crate) fn recorded(&self) -> usize {
        self.index.read().expect("not poisoned").recorded()
    }

    /// After an upstream changed: rebuild, and tell the downstream clients what changed. The
    /// rebuild is CPU work over every upstream's entries, so it runs on a blocking thread, not
    /// on the async workers that serve calls meanwhile.
    pub(crate) fn changed(self: &Arc<Self>) {
        {
            let mut rebuilds = self.rebuilds.lock().expect("not poisoned");
            rebuilds.wanted = true;
            if rebuilds.running {
                return;
            }
            rebuilds.running = true;
        }
        let catalogue = Arc::clone(self);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(move || catalogue.rebuild_while_wanted())),
            // Outside a runtime there are no async workers to spare.
            Err(_) => catalogue.rebuild_while_wanted(),
        }
    }

    /// Rebuilds until no change is left unseen, telling the downstream clients after each.
    fn rebuild_while_wanted(&self) {
        loop {
            {
                let mut rebuilds = self.rebuilds.lock().expect("not poisoned");
                if !rebuilds.wanted {
                    rebuilds.running = false;
                    return;
                }
                rebuilds.wanted = false;
            }
            let changed = {
                let _one = self.rebuilding.lock().expect("not poisoned");
                // Before the first rebuild: that one takes the change in.
                if !self.started.load(Ordering::SeqCst) {
                    continue;
                }
                self.rebuild_locked().1
            };
            if let Some(server) = self.server.get() {
                // In search mode the two tools listed stay.
                if changed.tools && self.search.is_none() {
                    server.notify_tools_list_changed();
                }
                if changed.prompts {
                    server.notify_prompts_list_changed();
                }
                if changed.resources {
                    server.notify_resources_list_changed();
                }
            }
        }
    }

    /// After a reload replaced `before` with this catalogue: tells the downstream clients which
    /// lists differ.
    pub(crate) fn tell_changes_since(&self, before: &Catalogue) {
        let (now, then) = (self.index.read().expect("not poisoned"), before.index.read().expect("not poisoned"));
        let Some(server) = self.server.get() else { return };
        // In search mode the two tools listed stay.
        let searching = self.search.is_some();
        if searching != before.search.is_some() || (now.tools.items != then.tools.items && !searching) {
            server.notify_tools_list_changed();
        }
        if now.prompts.items != then.prompts.items {
            server.notify_prompts_list_changed();
        }
        let resources = now.resources.items != then.resources.items
            || now.templates.items != then.templates.items
            || now.skills.items != then.skills.items;
        if resources {
            server.notify_resources_list_changed();
        }
    }

    /// An upstream says a resource changed: passed on to its subscribers only if that upstream
    /// owns the URI; otherwise dropped and counted.
    pub(crate) fn resource_updated(&self, upstream: &str, uri: String) {
        let Some(at) = self.upstreams.iter().position(|u| u.name() == upstream) else { return };
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        if owner_of(&index, &uri) != Some(at) {
            tracing::debug!(upstream, %uri, "dropped an update of a resource the upstream does not own");
            crate::metrics::refused("resource update", upstream);
            return;
        }
        if let Some(server) = self.server.get() {
            server.notify_resource_updated(uri);
        }
    }

    /// The upstream serving `listed` and its own name for it, or the error for a name no
    /// connected upstream lists (naming the upstream that owns it, if one does).
    fn route<T>(&self, listing: &Listing<T>, kind: &str, listed: &str) -> Result<(Arc<Upstream>, Arc<str>), Error> {
        if let Some((at, own)) = listing.routes.get(listed) {
            return Ok((Arc::clone(&self.upstreams[*at]), Arc::clone(own)));
        }
        let down = listing.owners.get(listed).map(|&at| &self.upstreams[at]).and_then(|u| Some((u, u.up().err()?)));
        Err(match down {
            Some((upstream, why)) => Error::internal(format!(
                "The {kind} {listed} is served by upstream `{}`, which is unavailable: {why}",
                upstream.name()
            )),
            None => Error::invalid_params(format!("Unknown {kind}: {listed}")),
        })
    }
}

impl SkillSource for Catalogue {
    /// The same to every caller unless an upstream restricts who sees it, or a rule reads who
    /// asks.
    fn lists_depend_on_caller(&self) -> bool {
        self.depends_on_caller()
    }

    fn skills(&self, caller: &Principal) -> Arc<[Skill]> {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        self.visible(caller, &index.skills, &index.policed.skills, |skill| &skill.uri, access::SKILL)
    }
}

/// The error of a request the upstream did not answer: its own JSON-RPC errors pass as they are;
/// anything else names the upstream and the kind of failure, with a request id under which the
/// gateway logs the whole error (redacted: an HTTP error page may echo the gateway's
/// credentials), and has its connection checked.
fn upstream_error(upstream: &Upstream, what: &str, error: mcp_client::Error) -> Error {
    match error {
        // A capability the upstream needs of its client is one the caller must have: the same
        // error, which the downstream wire words as its own (`-32021`, HTTP 400).
        mcp_client::Error::Rpc { error, .. }
            if error.code == mcp_types::error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY
                && let Some(Ok(required)) = error
                    .data
                    .as_ref()
                    .and_then(|data| data.get("requiredCapabilities"))
                    .map(|caps| serde_json::from_value::<mcp_types::ClientCapabilities>(caps.clone())) =>
        {
            Error::MissingCapability(Box::new(required))
        }
        mcp_client::Error::Rpc { error, .. } => Error::Rpc(error),
        error => {
            upstream.suspect();
            let failure = upstream.failure(what, &error);
            Error::internal(format!("upstream `{}` failed {what}: {failure}", upstream.name()))
        }
    }
}

/// A connection for one request made for `caller` (with `identity = "exchange"`, its own).
async fn connected(upstream: &Upstream, caller: &Principal) -> Result<crate::upstream::Lease, Error> {
    upstream.lease_for(caller).await.map_err(Error::internal)
}

/// A slot of the upstream's concurrency limit, held for the request.
async fn slot(upstream: &Upstream) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, Error> {
    upstream.slot().await.map_err(Error::internal)
}

/// The method the rules see for a completion.
const COMPLETE: &str = "completion/complete";

impl Catalogue {
    /// `completion/complete` for a prompt or template of an upstream: asked of that upstream, under
    /// its own name for the prompt.
    pub(crate) async fn complete(
        &self,
        caller: &Principal,
        params: CompleteRequestParams,
    ) -> Result<CompleteResultCompletion, Error> {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        let (upstream, reference) = match params.r#ref {
            CompleteRequestParamsRef::RefPrompt(mut prompt) => {
                let listing = (&index.prompts, &index.policed.prompts);
                let (upstream, own) = self.route_for(caller, listing, access::PROMPT, COMPLETE, &prompt.name, None)?;
                prompt.name = own.to_string();
                (upstream, CompleteRequestParamsRef::RefPrompt(prompt))
            }
            CompleteRequestParamsRef::RefResource(template) => {
                let listing = (&index.templates, &index.policed.templates);
                let route = self.route_for(caller, listing, access::TEMPLATE, COMPLETE, &template.uri, None);
                let (upstream, _) = route?;
                (upstream, CompleteRequestParamsRef::RefResource(template))
            }
            other => return Err(Error::invalid_params(format!("Cannot complete for {}", serde_json::json!(other)))),
        };
        let forward = Forward::new(&upstream, "completion/complete", &params.argument.name);
        let completing = async move {
            let lease = connected(&upstream, caller).await?;
            let _slot = slot(&upstream).await?;
            let context = params.context.and_then(|c| c.arguments).unwrap_or_default();
            let argument = params.argument;
            let what = format!("completing `{}`", argument.name);
            let result = lease
                .client
                .complete(reference, &argument.name, &argument.value, context)
                .await
                .map_err(|e| upstream_error(&upstream, &what, e))?;
            Ok(result.completion)
        };
        forward.run(completing).await
    }
}

impl ToolSource for Catalogue {
    /// The same to every caller unless an upstream restricts who sees it or a rule reads who
    /// asks (in search mode, always the same two); marked private too when an upstream marked its
    /// own list so.
    fn lists_depend_on_caller(&self) -> bool {
        self.search.is_none() && (self.depends_on_caller() || self.hints().tools.private)
    }

    /// The shortest `ttlMs` of the upstreams' lists (none said: the server's default).
    fn list_ttl_ms(&self) -> Option<u64> {
        self.hints().tools.ttl_ms
    }

    fn tools(&self, caller: &Principal) -> Arc<[Tool]> {
        if self.search.is_some() {
            return crate::search::listed();
        }
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        self.visible(caller, &index.tools, &index.policed.tools, |tool| &tool.name, access::TOOL)
    }

    /// The tool `name` as `caller` may see it: in search mode, one of the two listed or any tool
    /// of the catalogue (which may be called directly).
    fn tool(&self, name: &str, caller: &Principal) -> Option<Tool> {
        if self.search.is_some()
            && let Some(tool) = crate::search::listed_tool(name)
        {
            return Some(tool);
        }
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        if !self.shows(caller, &index, name, access::TOOL) {
            return None;
        }
        index.tools.items.iter().find(|tool| tool.name == name).cloned()
    }

    /// From the index, without a search of the tools or a copy of one (asked on every call).
    fn header_params(&self, name: &str, caller: &Principal) -> Option<Arc<[HeaderParam]>> {
        if self.search.is_some()
            && let Some(tool) = crate::search::listed_tool(name)
        {
            return mcp_server::dynamic::header_params_of(&tool);
        }
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        // Looked up first: most tools have none, and an empty map answers without hashing.
        let params = index.tool_headers.get(name)?;
        self.shows(caller, &index, name, access::TOOL).then(|| Arc::clone(params))
    }

    /// From the index, without building the caller's list (asked on every call).
    fn lists_tool(&self, name: &str, caller: &Principal) -> bool {
        if self.search.is_some() {
            return crate::search::listed().iter().any(|tool| tool.name == name);
        }
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        self.shows(caller, &index, name, access::TOOL)
    }

    fn call(&self, ctx: Context, params: CallToolRequestParams) -> ToolFuture {
        let answer = self.call_answering(ctx, params, false);
        Box::pin(async move {
            let mut result = answer.await?.decode()?;
            // The caller's server is the gateway: it writes its own identity.
            if let Some(meta) = &mut result.meta {
                meta.server_info = None;
            }
            Ok(result)
        })
    }

    /// An upstream's result goes out as its text (`Client::call_tool_raw`): nothing in it is
    /// decoded or encoded again.
    fn answer(&self, ctx: Context, params: CallToolRequestParams) -> AnswerFuture {
        self.call_answering(ctx, params, true)
    }

    /// Without rules (which may read arguments) and outside search mode.
    fn relays(&self) -> bool {
        self.search.is_none() && self.policy.is_empty()
    }

    /// See `catalogue/relay.rs`.
    fn relay(&self, call: RelayCall<'_>) -> RelayFuture {
        self.relayed(call)
    }

    /// A long call becomes a task for a caller with the tasks extension, unless its upstream
    /// opted out (`tasks = false`). A `call_tool` may, when no upstream opted out.
    fn task_support(&self, tool: &str) -> mcp_server::TaskSupport {
        if self.search.is_some() {
            match tool {
                crate::search::SEARCH_TOOLS => return mcp_server::TaskSupport::Forbidden,
                crate::search::CALL_TOOL if self.upstreams.iter().all(|u| u.config.tasks) => {
                    return mcp_server::TaskSupport::Optional;
                }
                crate::search::CALL_TOOL => return mcp_server::TaskSupport::Forbidden,
                _ => {}
            }
        }
        let index = self.index.read().expect("not poisoned");
        match index.tools.routes.get(tool) {
            Some((at, _)) if self.upstreams[*at].config.tasks => mcp_server::TaskSupport::Optional,
            _ => mcp_server::TaskSupport::Forbidden,
        }
    }

    fn offers_tasks(&self) -> bool {
        self.upstreams.iter().any(|upstream| upstream.config.tasks)
    }
}

impl Catalogue {
    /// A call of a tool the catalogue lists (in search mode, of `search_tools` or `call_tool`);
    /// `raw`: an upstream's result may be answered as its text.
    fn call_answering(&self, ctx: Context, params: CallToolRequestParams, raw: bool) -> AnswerFuture {
        if self.search.is_some() {
            match params.name.as_str() {
                crate::search::SEARCH_TOOLS => {
                    let result = self.search_tools(ctx.principal(), &params).map(ToolAnswer::Decoded);
                    return Box::pin(std::future::ready(result));
                }
                // As a direct call of the tool named: the same checks, the same errors.
                crate::search::CALL_TOOL => match crate::search::inner_call(params) {
                    Ok(inner) => return self.call_listed(ctx, inner, raw),
                    Err(error) => return Box::pin(std::future::ready(Err(error))),
                },
                _ => {}
            }
        }
        self.call_listed(ctx, params, raw)
    }

    /// A call of the tool the catalogue lists as `params.name`, if the caller may use it.
    fn call_listed(&self, ctx: Context, mut params: CallToolRequestParams, raw: bool) -> AnswerFuture {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        // Shared, not copied, by the rules, the call and its retry in another era (`crate::era`).
        let arguments = Arc::new(params.arguments.take().unwrap_or_default());
        let checked = (!self.policy.is_empty()).then(|| Arguments::new(&arguments));
        let listing = (&index.tools, &index.policed.tools);
        let routed =
            self.route_for(ctx.principal(), listing, access::TOOL, "tools/call", &params.name, checked.as_ref());
        let (upstream, own) = match routed {
            Ok(route) => route,
            Err(error) => return Box::pin(std::future::ready(Err(error))),
        };
        // A REST API's operation (`crate::openapi`): one HTTP request, nothing to bridge.
        if upstream.config.openapi.is_some() {
            let arguments = Arc::unwrap_or_clone(arguments);
            let forward = Forward::new(&upstream, "tools/call", &own);
            let caller = ctx.principal().clone();
            let calling =
                async move { upstream.call_operation(&caller, &own, arguments).await.map(ToolAnswer::Decoded) };
            return Box::pin(forward.run(calling));
        }
        // Either kind of answer, whichever `raw` says: a request held for the caller's next round
        // (`crate::bridge`) is resumed by a retry that may want the other.
        self.bridged(ctx, upstream, "tools/call", own, "the call to", move |client, own, options| {
            let arguments = Arc::clone(&arguments);
            Box::pin(async move {
                match raw {
                    true => client.call_tool_raw(&own, &*arguments, options).await.map(ToolAnswer::Raw),
                    false => client.call_tool_with(&own, &*arguments, options).await.map(ToolAnswer::Decoded),
                }
            })
        })
    }
}

impl Catalogue {
    /// A request to `upstream` through the era bridge (`start` sends it, to the upstream's own
    /// name for the target): connected, within the upstream's concurrency limit, in its span and
    /// timed, its failures named after what it was `doing` to `own`. An upstream of
    /// `era = "auto"` that refuses, in the 2026-07-28 era, to ask its client anything is sent it
    /// again in the legacy era (`crate::era`).
    fn bridged<T: Send + 'static>(
        &self,
        ctx: Context,
        upstream: Arc<Upstream>,
        method: &'static str,
        own: Arc<str>,
        doing: &'static str,
        start: impl Fn(mcp_client::Client, String, mcp_client::CallOptions) -> crate::bridge::Upstream<T>
        + Send
        + Sync
        + 'static,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, Error>> + Send>> {
        let forward = Forward::new(&upstream, method, &own);
        let held = Arc::clone(&self.held);
        Box::pin(forward.run(async move {
            // Once `auto` chose the legacy era, a connection still in the other one (until its
            // supervisor replaces it) would be refused the same question again.
            let lease = match upstream.chose_legacy() {
                true => upstream.legacy_lease_for(ctx.principal()).await.map_err(Error::internal)?,
                false => connected(&upstream, ctx.principal()).await?,
            };
            let _slot = slot(&upstream).await?;
            let (timeout, tasks) = (upstream.config.timeout(), upstream.config.tasks);
            let era = lease.client.era();
            // The request counts as in flight on its connection until the upstream answers, even
            // when it is held for a later round.
            let start = &start;
            let send = |lease: crate::upstream::Lease, own: String| {
                move |options| -> crate::bridge::Upstream<T> {
                    let crate::upstream::Lease { client, in_flight } = lease;
                    let answer = start(client, own, options);
                    Box::pin(async move {
                        let _in_flight = in_flight;
                        answer.await
                    })
                }
            };
            let error = match held.bridge(&ctx, timeout, tasks, send(lease, own.to_string())).await? {
                Ok(answer) => return Ok(answer),
                Err(error) => error,
            };
            // Worded only when something failed.
            let what = format!("{doing} {own}");
            // A request this call started (not one resumed from an earlier round), refused by a
            // 2026-07-28 connection because it would have to ask the caller something.
            let refused = match crate::era::refused_input(&error) {
                Some(asked) if era == mcp_client::Era::Modern && !crate::bridge::resumes(&ctx) => asked,
                _ => return Err(upstream_error(&upstream, &what, error)),
            };
            match upstream.config.era {
                crate::config::Era::Auto => {}
                crate::config::Era::Modern => return Err(crate::era::pinned_modern(upstream.name(), refused, &error)),
                crate::config::Era::Legacy => return Err(upstream_error(&upstream, &what, error)),
            }
            // Boxed, as is the call sent again: the path is rare, and a request's future carries
            // its awaits' futures from the start.
            Box::pin(upstream.choose_legacy(refused)).await.map_err(Error::internal)?;
            let lease = upstream.legacy_lease_for(ctx.principal()).await.map_err(Error::internal)?;
            tracing::info!(upstream = upstream.name(), %what, "sent again in the legacy era");
            let outcome = Box::pin(held.bridge(&ctx, timeout, tasks, send(lease, own.to_string()))).await?;
            outcome.map_err(|e| upstream_error(&upstream, &what, e))
        }))
    }
}

impl PromptSource for Catalogue {
    /// As for tools.
    fn lists_depend_on_caller(&self) -> bool {
        self.depends_on_caller() || self.hints().prompts.private
    }

    fn list_ttl_ms(&self) -> Option<u64> {
        self.hints().prompts.ttl_ms
    }

    fn prompts(&self, caller: &Principal) -> Arc<[Prompt]> {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        self.visible(caller, &index.prompts, &index.policed.prompts, |prompt| &prompt.name, access::PROMPT)
    }

    fn lists_prompt(&self, name: &str, caller: &Principal) -> bool {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        self.shows(caller, &index, name, access::PROMPT)
    }

    fn get(&self, ctx: Context, mut params: GetPromptRequestParams) -> PromptFuture {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        let arguments = Arc::new(params.arguments.take().unwrap_or_default());
        let checked = (!self.policy.is_empty()).then(|| Arguments::strings(&arguments));
        let listing = (&index.prompts, &index.policed.prompts);
        let routed =
            self.route_for(ctx.principal(), listing, access::PROMPT, "prompts/get", &params.name, checked.as_ref());
        let (upstream, own) = match routed {
            Ok(route) => route,
            Err(error) => return Box::pin(std::future::ready(Err(error))),
        };
        self.bridged(ctx, upstream, "prompts/get", own, "getting the prompt", move |client, own, options| {
            let arguments = Arc::clone(&arguments);
            Box::pin(async move { client.get_prompt_with(&own, &*arguments, options).await })
        })
    }
}

impl ResourceSource for Catalogue {
    /// As for tools; resources and templates share their hints (one source serves both).
    fn lists_depend_on_caller(&self) -> bool {
        let hints = self.hints();
        self.depends_on_caller() || hints.resources.and(hints.templates).private
    }

    fn list_ttl_ms(&self) -> Option<u64> {
        let hints = self.hints();
        hints.resources.and(hints.templates).ttl_ms
    }

    fn resources(&self, caller: &Principal) -> Arc<[Resource]> {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        self.visible(caller, &index.resources, &index.policed.resources, |resource| &resource.uri, access::RESOURCE)
    }

    fn templates(&self, caller: &Principal) -> Arc<[ResourceTemplate]> {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        let (listing, entries) = (&index.templates, &index.policed.templates);
        self.visible(caller, listing, entries, |template| &template.uri_template, access::TEMPLATE)
    }

    /// A read goes to the one upstream that owns the URI ([`owner_of`]), if the caller may
    /// use that upstream.
    fn read(&self, ctx: Context, uri: String) -> ReadFuture {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        let at = match self.uri_for(ctx.principal(), &index, &uri, "resources/read") {
            Ok(at) => at,
            Err(error) => return Box::pin(std::future::ready(Err(error))),
        };
        let upstream = Arc::clone(&self.upstreams[at]);
        let read = self.bridged(ctx, upstream, "resources/read", uri.into(), "reading", |client, uri, options| {
            Box::pin(async move { client.read_resource_with(&uri, options).await })
        });
        Box::pin(async move { Ok(read.await?.contents) })
    }

    /// Subscriptions (`resources/subscribe`, `subscriptions/listen`) take the same decision as a
    /// read: the URI's one owner, and whether the caller may use it.
    fn serves(&self, uri: &str, caller: &Principal) -> bool {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        self.uri_for(caller, &index, uri, "resources/subscribe").is_ok()
    }
}
