//! One list of each kind (tools, prompts, resources, templates, skills) of every upstream, tools
//! and prompts under their listed names, and the requests to them: the gateway's [`ToolSource`],
//! [`PromptSource`], [`ResourceSource`] and [`SkillSource`].

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use mcp_server::dynamic::{
    PromptFuture, PromptSource, ReadFuture, ResourceSource, SkillSource, ToolFuture, ToolSource,
};
use mcp_server::{Context, Error, Principal, Server};
use mcp_types::ext::skills::{SKILL_MD, Skill};
use mcp_types::{
    CallToolRequestParams, CompleteRequestParams, CompleteRequestParamsRef, CompleteResultCompletion,
    GetPromptRequestParams, Prompt, Resource, ResourceTemplate, Tool,
};

use crate::bridge::Held;
use crate::upstream::Upstream;

/// The upstreams, in configuration order, and the index of their tools and prompts as listed now.
pub(crate) struct Catalogue {
    pub(crate) upstreams: Vec<Arc<Upstream>>,
    index: RwLock<Arc<Index>>,
    /// The server to tell when a list changes (set once it is built).
    pub(crate) server: OnceLock<Server>,
    /// Upstream requests waiting for their modern callers' input.
    held: Arc<Held>,
}

#[derive(Default)]
struct Index {
    tools: Listing<Tool>,
    prompts: Listing<Prompt>,
    /// Resources and templates keep their URIs: listed by URI, routed by URI.
    resources: Listing<Resource>,
    templates: Listing<ResourceTemplate>,
    /// Skills keep their URIs (their `SKILL.md`'s); a skill's files are read from its upstream.
    skills: Listing<Skill>,
}

/// One kind of entry (tools, prompts) of every upstream.
struct Listing<T> {
    items: Arc<[T]>,
    /// Listed name → (upstream, its own name for the entry).
    routes: HashMap<String, (usize, String)>,
    /// Every listed name seen so far, with its upstream, so that a request for an entry of an
    /// upstream that is down names the upstream.
    ever: HashMap<String, usize>,
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Listing { items: Arc::from(Vec::new()), routes: HashMap::new(), ever: HashMap::new() }
    }
}

/// Two upstreams list a tool (or a prompt) under the same name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clash {
    /// `tool`, `prompt`, `resource`, `resource template` or `skill`.
    pub kind: &'static str,
    /// The listed name.
    pub name: String,
    /// The upstream listed first in the configuration, and its own name for the entry.
    pub first: (String, String),
    /// The other upstream, and its own name for the entry.
    pub second: (String, String),
}

impl std::fmt::Display for Clash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Clash { kind, name, first, second } = self;
        write!(
            f,
            "{kind} `{name}` is listed by upstream `{}` (its {kind} `{}`) and by upstream `{}` (its {kind} `{}`); \
             give one of them a `prefix` or a `rename`",
            first.0, first.1, second.0, second.1
        )
    }
}

/// The listing of one kind: each upstream's entries under their listed names (`renamed`: with
/// the upstream's prefix or rename rules; else as they are), the first upstream keeping a name
/// two of them give.
fn listing<T: Clone>(
    upstreams: &[Arc<Upstream>],
    kind: &'static str,
    renamed: bool,
    previous: &Listing<T>,
    entries: impl Fn(&Upstream) -> Vec<T>,
    name: impl Fn(&mut T) -> &mut String,
    clashes: &mut Vec<Clash>,
) -> Listing<T> {
    let mut items = Vec::new();
    let mut routes: HashMap<String, (usize, String)> = HashMap::new();
    let mut ever = previous.ever.clone();
    for (at, upstream) in upstreams.iter().enumerate() {
        for mut entry in entries(upstream) {
            let own = name(&mut entry).clone();
            let listed = if renamed { upstream.config.listed_name(&own) } else { own.clone() };
            if let Some((first, first_own)) = routes.get(&listed) {
                let first = (upstreams[*first].name().to_owned(), first_own.clone());
                clashes.push(Clash { kind, name: listed, first, second: (upstream.name().to_owned(), own) });
                continue;
            }
            ever.insert(listed.clone(), at);
            *name(&mut entry) = listed.clone();
            routes.insert(listed, (at, own));
            items.push(entry);
        }
    }
    Listing { items: items.into(), routes, ever }
}

impl Catalogue {
    pub(crate) fn new(upstreams: Vec<Arc<Upstream>>) -> Catalogue {
        Catalogue { upstreams, index: RwLock::default(), server: OnceLock::new(), held: Arc::default() }
    }

    /// Rebuilds the index from the upstreams' current lists. A clash keeps the entry of the
    /// upstream listed first in the configuration and is returned, with which lists changed.
    pub(crate) fn rebuild(&self) -> (Vec<Clash>, Changed) {
        let previous = Arc::clone(&self.index.read().expect("not poisoned"));
        let mut clashes = Vec::new();
        let upstreams = &self.upstreams;
        let tools = listing(upstreams, "tool", true, &previous.tools, Upstream::tools, |t| &mut t.name, &mut clashes);
        let prompts =
            listing(upstreams, "prompt", true, &previous.prompts, Upstream::prompts, |p| &mut p.name, &mut clashes);
        let resources = listing(
            upstreams,
            "resource",
            false,
            &previous.resources,
            Upstream::resources,
            |r| &mut r.uri,
            &mut clashes,
        );
        let templates = listing(
            upstreams,
            "resource template",
            false,
            &previous.templates,
            Upstream::templates,
            |t| &mut t.uri_template,
            &mut clashes,
        );
        let skills =
            listing(upstreams, "skill", false, &previous.skills, Upstream::skills, |s| &mut s.uri, &mut clashes);
        for clash in &clashes {
            tracing::warn!(%clash, "left out");
        }
        // The skills extension has no notification of its own: a change is a resource change.
        let changed = Changed {
            tools: tools.items != previous.tools.items,
            prompts: prompts.items != previous.prompts.items,
            resources: resources.items != previous.resources.items
                || templates.items != previous.templates.items
                || skills.items != previous.skills.items,
        };
        *self.index.write().expect("not poisoned") = Arc::new(Index { tools, prompts, resources, templates, skills });
        (clashes, changed)
    }

    /// After an upstream changed: rebuild, and tell the downstream clients what changed.
    pub(crate) fn changed(&self) {
        let (_, changed) = self.rebuild();
        if let Some(server) = self.server.get() {
            if changed.tools {
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

    /// The upstream serving `listed` and its own name for it, or the error for a name no
    /// connected upstream lists (naming the upstream that listed it, if one did).
    fn route<T>(&self, listing: &Listing<T>, kind: &str, listed: &str) -> Result<(Arc<Upstream>, String), Error> {
        if let Some((at, own)) = listing.routes.get(listed) {
            return Ok((Arc::clone(&self.upstreams[*at]), own.clone()));
        }
        Err(match listing.ever.get(listed) {
            Some(&at) => {
                let upstream = &self.upstreams[at];
                let why = upstream.up().err().unwrap_or_default();
                Error::internal(format!(
                    "The {kind} {listed} is served by upstream `{}`, which is unavailable: {why}",
                    upstream.name()
                ))
            }
            None => Error::invalid_params(format!("Unknown {kind}: {listed}")),
        })
    }
}

/// What a caller may do with the entries of an upstream.
#[derive(Debug, PartialEq)]
enum Access {
    Granted,
    /// The caller is not among the upstream's `principals`: to it the entry does not exist.
    Hidden,
    /// The caller's token lacks some of these scopes, which the entry needs.
    NeedsScopes(Vec<String>),
}

impl SkillSource for Catalogue {
    fn skills(&self, caller: &Principal) -> Arc<[Skill]> {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        self.visible(caller, &index.skills, |skill| &skill.uri, false)
    }
}

impl Catalogue {
    /// Whether any upstream restricts its callers (else every check is skipped).
    fn restricted(&self) -> bool {
        self.upstreams.iter().any(|u| u.config.restricts_callers())
    }

    /// What `caller` may do with the entry `own` (a tool's or prompt's own name; `None`: a
    /// resource or template, governed by the upstream's rules alone) of the upstream at `at`.
    /// A caller without a token is the process that started the gateway over stdio (HTTP
    /// callers have tokens whenever an upstream restricts them): it may use everything.
    fn access(&self, caller: &Principal, at: usize, own: Option<&str>) -> Access {
        let config = &self.upstreams[at].config;
        let Some(token) = caller.token() else { return Access::Granted };
        if !config.principals.is_empty() && !config.principals.iter().any(|p| p == caller.as_str()) {
            return Access::Hidden;
        }
        let entry = own.and_then(|own| config.entry_scopes.get(own)).into_iter().flatten();
        let needed: Vec<String> = config.scopes.iter().chain(entry).cloned().collect();
        if needed.iter().all(|scope| token.has_scope(scope)) { Access::Granted } else { Access::NeedsScopes(needed) }
    }

    /// The entries of `listing` that `caller` may use.
    fn visible<T: Clone>(
        &self,
        caller: &Principal,
        listing: &Listing<T>,
        key: impl Fn(&T) -> &str,
        named: bool,
    ) -> Arc<[T]> {
        if !self.restricted() || caller.token().is_none() {
            return Arc::clone(&listing.items);
        }
        // Like a server's own routes: what needs more scopes is listed (a call gets 403, and the
        // client can step up) unless the server lists only what the token permits.
        let only_permitted = self.server.get().is_some_and(|server| server.options().list_only_permitted);
        let items = listing.items.iter().filter(|item| {
            let route = listing.routes.get(key(item));
            route.is_some_and(|(at, own)| match self.access(caller, *at, named.then_some(own.as_str())) {
                Access::Granted => true,
                Access::NeedsScopes(_) => !only_permitted,
                Access::Hidden => false,
            })
        });
        items.cloned().collect()
    }

    /// The route of a request for `listed`, if `caller` may use it: a hidden entry is unknown,
    /// one the caller's token lacks scopes for is refused naming them (so that it can step up).
    fn route_for<T>(
        &self,
        caller: &Principal,
        listing: &Listing<T>,
        kind: &str,
        listed: &str,
        named: bool,
    ) -> Result<(Arc<Upstream>, String), Error> {
        let (upstream, own) = self.route(listing, kind, listed)?;
        let at = self.upstreams.iter().position(|u| Arc::ptr_eq(u, &upstream)).expect("an upstream of the catalogue");
        match self.access(caller, at, named.then_some(own.as_str())) {
            Access::Granted => Ok((upstream, own)),
            Access::Hidden => Err(Error::invalid_params(format!("Unknown {kind}: {listed}"))),
            Access::NeedsScopes(needed) => Err(Error::InsufficientScope(needed)),
        }
    }
}

/// One request sent to an upstream: its span (`mcp.gateway.upstream`, inside the downstream
/// request's: which upstream, which method, and the upstream's own name for the target) and its
/// duration (`mcp.gateway.upstream.duration`, with the `otel` feature).
struct Forward {
    span: tracing::Span,
    timer: crate::metrics::Timer,
}

impl Forward {
    fn new(upstream: &Upstream, method: &'static str, target: &str) -> Forward {
        let span = tracing::info_span!("mcp.gateway.upstream", upstream = upstream.name(), method, target);
        Forward { span, timer: crate::metrics::Timer::start(upstream.name(), method) }
    }

    async fn run<T>(self, request: impl std::future::Future<Output = Result<T, Error>>) -> Result<T, Error> {
        let Forward { span, timer } = self;
        let outcome = tracing::Instrument::instrument(request, span).await;
        timer.finish(outcome.as_ref().err());
        outcome
    }
}

/// Which lists a rebuild changed.
pub(crate) struct Changed {
    tools: bool,
    prompts: bool,
    resources: bool,
}

/// The error of a request the upstream did not answer: its own JSON-RPC errors pass as they are;
/// anything else names the upstream and has its connection checked.
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
            Error::internal(format!("upstream `{}` failed {what}: {error}", upstream.name()))
        }
    }
}

fn connected(upstream: &Upstream) -> Result<crate::upstream::Lease, Error> {
    upstream.lease().map_err(|why| Error::internal(format!("upstream `{}` is unavailable: {why}", upstream.name())))
}

/// A slot of the upstream's concurrency limit, held for the request.
async fn slot(upstream: &Upstream) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, Error> {
    upstream.slot().await.map_err(Error::internal)
}

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
                let (upstream, own) = self.route_for(caller, &index.prompts, "prompt", &prompt.name, true)?;
                prompt.name = own;
                (upstream, CompleteRequestParamsRef::RefPrompt(prompt))
            }
            CompleteRequestParamsRef::RefResource(template) => {
                let route = self.route_for(caller, &index.templates, "resource template", &template.uri, false);
                let (upstream, _) = route?;
                (upstream, CompleteRequestParamsRef::RefResource(template))
            }
            other => return Err(Error::invalid_params(format!("Cannot complete for {}", serde_json::json!(other)))),
        };
        let forward = Forward::new(&upstream, "completion/complete", &params.argument.name);
        let completing = async move {
            let lease = connected(&upstream)?;
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
    fn tools(&self, caller: &Principal) -> Arc<[Tool]> {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        self.visible(caller, &index.tools, |tool| &tool.name, true)
    }

    fn call(&self, ctx: Context, mut params: CallToolRequestParams) -> ToolFuture {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        let (upstream, own) = match self.route_for(ctx.principal(), &index.tools, "tool", &params.name, true) {
            Ok(route) => route,
            Err(error) => return Box::pin(std::future::ready(Err(error))),
        };
        let arguments = params.arguments.take().unwrap_or_default();
        let what = format!("the call to {own}");
        self.bridged(ctx, upstream, "tools/call", own, what, |client, own, options| {
            Box::pin(async move { client.call_tool_with(&own, arguments, options).await })
        })
    }

    /// A long call becomes a task for a caller with the tasks extension, unless its upstream
    /// opted out (`tasks = false`).
    fn task_support(&self, tool: &str) -> mcp_server::TaskSupport {
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
    /// A request to `upstream` through the era bridge (`start` sends it, to the upstream's own
    /// name for the target): connected, within the upstream's concurrency limit, in its span and
    /// timed, its failures named after it (`what`).
    fn bridged<T: Send + 'static>(
        &self,
        ctx: Context,
        upstream: Arc<Upstream>,
        method: &'static str,
        own: String,
        what: String,
        start: impl FnOnce(mcp_client::Client, String, mcp_client::CallOptions) -> crate::bridge::Upstream<T>
        + Send
        + 'static,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, Error>> + Send>> {
        let forward = Forward::new(&upstream, method, &own);
        let held = Arc::clone(&self.held);
        Box::pin(forward.run(async move {
            let crate::upstream::Lease { client, in_flight } = connected(&upstream)?;
            let _slot = slot(&upstream).await?;
            let (timeout, tasks) = (upstream.config.timeout(), upstream.config.tasks);
            // The request counts as in flight on its connection until the upstream answers, even
            // when it is held for a later round.
            let send = move |options| -> crate::bridge::Upstream<T> {
                let answer = start(client, own, options);
                Box::pin(async move {
                    let _in_flight = in_flight;
                    answer.await
                })
            };
            let outcome = held.bridge(&ctx, timeout, tasks, send).await?;
            outcome.map_err(|e| upstream_error(&upstream, &what, e))
        }))
    }
}

impl PromptSource for Catalogue {
    fn prompts(&self, caller: &Principal) -> Arc<[Prompt]> {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        self.visible(caller, &index.prompts, |prompt| &prompt.name, true)
    }

    fn get(&self, ctx: Context, mut params: GetPromptRequestParams) -> PromptFuture {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        let (upstream, own) = match self.route_for(ctx.principal(), &index.prompts, "prompt", &params.name, true) {
            Ok(route) => route,
            Err(error) => return Box::pin(std::future::ready(Err(error))),
        };
        let arguments = params.arguments.take().unwrap_or_default();
        let what = format!("getting the prompt {own}");
        self.bridged(ctx, upstream, "prompts/get", own, what, |client, own, options| {
            Box::pin(async move { client.get_prompt_with(&own, arguments, options).await })
        })
    }
}

impl ResourceSource for Catalogue {
    fn resources(&self, caller: &Principal) -> Arc<[Resource]> {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        self.visible(caller, &index.resources, |resource| &resource.uri, false)
    }

    fn templates(&self, caller: &Principal) -> Arc<[ResourceTemplate]> {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        self.visible(caller, &index.templates, |template| &template.uri_template, false)
    }

    /// A listed resource goes to its upstream, a file of a listed skill to the skill's; any other
    /// URI to the upstream whose template has the longest literal start (the text before its
    /// first `{`) that begins the URI.
    fn read(&self, ctx: Context, uri: String) -> ReadFuture {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        let by_skill = || {
            index.skills.routes.iter().find_map(|(skill, (at, _))| {
                let root = skill.strip_suffix(SKILL_MD)?;
                (root.ends_with('/') && uri.starts_with(root)).then_some(*at)
            })
        };
        let by_template = || {
            index
                .templates
                .routes
                .iter()
                .map(|(template, route)| (template.split('{').next().unwrap_or_default(), route))
                .filter(|(start, _)| uri.starts_with(start))
                .max_by_key(|(start, _)| start.len())
                .map(|(_, (at, _))| *at)
        };
        let at = match index.resources.routes.get(&uri) {
            Some((at, _)) => Some(*at),
            None => by_skill().or_else(by_template).or_else(|| index.resources.ever.get(&uri).copied()),
        };
        let at = match at.map(|at| (at, self.access(ctx.principal(), at, None))) {
            Some((at, Access::Granted)) => at,
            None | Some((_, Access::Hidden)) => {
                return Box::pin(std::future::ready(Err(Error::resource_not_found(&uri))));
            }
            Some((_, Access::NeedsScopes(needed))) => {
                return Box::pin(std::future::ready(Err(Error::InsufficientScope(needed))));
            }
        };
        let upstream = Arc::clone(&self.upstreams[at]);
        let what = format!("reading {uri}");
        let read = self.bridged(ctx, upstream, "resources/read", uri, what, |client, uri, options| {
            Box::pin(async move { client.read_resource_with(&uri, options).await })
        });
        Box::pin(async move { Ok(read.await?.contents) })
    }
}
