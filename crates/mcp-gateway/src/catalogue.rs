//! One list of each kind (tools, prompts, resources, templates, skills) of every upstream, tools
//! and prompts under their listed names, and the requests to them: the gateway's [`ToolSource`],
//! [`PromptSource`], [`ResourceSource`] and [`SkillSource`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

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
use crate::upstream::{Lists, Upstream};

/// The upstreams, in configuration order, and the index of their tools and prompts as listed now.
pub(crate) struct Catalogue {
    pub(crate) upstreams: Vec<Arc<Upstream>>,
    index: RwLock<Arc<Index>>,
    /// One rebuild at a time: each starts from the owners the one before recorded.
    rebuilding: Mutex<()>,
    /// Set by the first rebuild (`Gateway::start`'s, in configuration order); list changes
    /// reported before it wait for it.
    started: AtomicBool,
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
    /// Each owned template's literal start (the text before its first `{`): its upstream and
    /// the template. No two upstreams' starts are equal or one a prefix of the other, so a URI
    /// has one owner.
    starts: BTreeMap<String, (usize, String)>,
    /// Skills keep their URIs (their `SKILL.md`'s); a skill's files are read from its upstream.
    skills: Listing<Skill>,
    /// Entries left out because another upstream owns them, by kind, upstream and listed name:
    /// each is logged and counted once, when first refused.
    refused: HashSet<(&'static str, usize, String)>,
}

/// One kind of entry (tools, prompts) of every upstream.
struct Listing<T> {
    items: Arc<[T]>,
    /// Listed name → (upstream, its own name for the entry).
    routes: HashMap<String, (usize, String)>,
    /// The owner of every listed name seen so far: the upstream that listed it first, for the
    /// gateway's life (another that lists it later is refused, even while the owner is down),
    /// and the one a request names when the owner is down.
    owners: HashMap<String, usize>,
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Listing { items: Arc::from(Vec::new()), routes: HashMap::new(), owners: HashMap::new() }
    }
}

/// Two upstreams list a tool (or a prompt) under the same name, or resource templates that
/// overlap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clash {
    /// `tool`, `prompt`, `resource`, `resource template` or `skill`.
    pub kind: &'static str,
    /// The listed name.
    pub name: String,
    /// The upstream that owns the name (listed first in the configuration at start, first in
    /// time after), and its own name for the entry.
    pub first: (String, String),
    /// The other upstream, and its own name for the entry.
    pub second: (String, String),
}

impl std::fmt::Display for Clash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Clash { kind, name, first, second } = self;
        if *kind == "resource template" && first.1 != second.1 {
            return write!(
                f,
                "resource template `{}` of upstream `{}` overlaps resource template `{}` of upstream `{}` (the text \
                 before one's first `{{` begins the other's), so a read would have two owners; change one of them",
                second.1, second.0, first.1, first.0
            );
        }
        write!(
            f,
            "{kind} `{name}` is listed by upstream `{}` (its {kind} `{}`) and by upstream `{}` (its {kind} `{}`); \
             give one of them a `prefix` or a `rename`",
            first.0, first.1, second.0, second.1
        )
    }
}

/// A template's literal start: the text before its first `{`.
fn literal_start(template: &str) -> &str {
    template.split('{').next().unwrap_or_default()
}

/// The owner other than `at` of a literal start that `start` begins or that begins `start`,
/// with its template.
fn overlapping(starts: &BTreeMap<String, (usize, String)>, start: &str, at: usize) -> Option<(usize, String)> {
    let others = |(owner, _): &&(usize, String)| *owner != at;
    let prefixes = start.char_indices().map(|(i, _)| &start[..i]).chain([start]);
    let shorter = prefixes.filter_map(|prefix| starts.get(prefix).filter(others)).next();
    let longer = || starts.range(start.to_owned()..).take_while(|(other, _)| other.starts_with(start)).map(|(_, o)| o);
    shorter.or_else(|| longer().find(others)).cloned()
}

/// The listing of one kind: each upstream's entries under their listed names (`renamed`: with
/// the upstream's prefix or rename rules; else as they are). A name keeps its owner: an entry
/// of another upstream under that name, or (`starts`, for templates) whose literal start
/// overlaps another upstream's, is left out and returned as a clash.
#[allow(clippy::too_many_arguments)]
fn listing<T: Clone>(
    upstreams: &[Arc<Upstream>],
    kind: &'static str,
    renamed: bool,
    previous: &Listing<T>,
    entries: impl Fn(&Lists) -> &[T],
    name: impl Fn(&mut T) -> &mut String,
    mut starts: Option<&mut BTreeMap<String, (usize, String)>>,
    clashes: &mut Vec<(usize, Clash)>,
) -> Listing<T> {
    let mut items = Vec::new();
    let mut routes: HashMap<String, (usize, String)> = HashMap::new();
    let mut owners = previous.owners.clone();
    let own_name = |listed: &str, owner: usize, routes: &HashMap<String, (usize, String)>| {
        let route = routes.get(listed).or_else(|| previous.routes.get(listed)).filter(|(at, _)| *at == owner);
        route.map_or_else(|| listed.to_owned(), |(_, own)| own.clone())
    };
    for (at, upstream) in upstreams.iter().enumerate() {
        let lists = upstream.lists();
        for entry in entries(&lists) {
            let mut entry = entry.clone();
            let own = name(&mut entry).clone();
            let listed = if renamed { upstream.config.listed_name(&own) } else { own.clone() };
            let owner = match owners.get(&listed) {
                Some(&owner) if owner != at => Some((owner, own_name(&listed, owner, &routes))),
                // Listed twice by the same upstream (two of its names renamed alike).
                Some(_) if routes.contains_key(&listed) => Some((at, own_name(&listed, at, &routes))),
                Some(_) => None,
                None => starts.as_deref().and_then(|starts| overlapping(starts, literal_start(&listed), at)),
            };
            if let Some((owner, owner_own)) = owner {
                let first = (upstreams[owner].name().to_owned(), owner_own);
                let clash = Clash { kind, name: listed, first, second: (upstream.name().to_owned(), own) };
                clashes.push((at, clash));
                continue;
            }
            owners.insert(listed.clone(), at);
            if let Some(starts) = starts.as_deref_mut() {
                starts.insert(literal_start(&listed).to_owned(), (at, listed.clone()));
            }
            *name(&mut entry) = listed.clone();
            routes.insert(listed, (at, own));
            items.push(entry);
        }
    }
    Listing { items: items.into(), routes, owners }
}

impl Catalogue {
    pub(crate) fn new(upstreams: Vec<Arc<Upstream>>) -> Catalogue {
        Catalogue {
            upstreams,
            index: RwLock::default(),
            rebuilding: Mutex::new(()),
            started: AtomicBool::new(false),
            server: OnceLock::new(),
            held: Arc::default(),
        }
    }

    /// The first index, in configuration order (`Gateway::start`): every clash is returned.
    pub(crate) fn start(&self) -> Vec<Clash> {
        let _one = self.rebuilding.lock().expect("not poisoned");
        self.started.store(true, Ordering::SeqCst);
        self.rebuild_locked().0
    }

    /// Rebuilds the index from the upstreams' current lists. An entry another upstream owns is
    /// left out (logged and counted the first time) and returned, with which lists changed.
    fn rebuild_locked(&self) -> (Vec<Clash>, Changed) {
        let previous = Arc::clone(&self.index.read().expect("not poisoned"));
        let mut clashes = Vec::new();
        let upstreams = &self.upstreams;
        let tools =
            listing(upstreams, "tool", true, &previous.tools, |l| &l.tools, |t| &mut t.name, None, &mut clashes);
        let prompts =
            listing(upstreams, "prompt", true, &previous.prompts, |l| &l.prompts, |p| &mut p.name, None, &mut clashes);
        let resources = listing(
            upstreams,
            "resource",
            false,
            &previous.resources,
            |l| &l.resources,
            |r| &mut r.uri,
            None,
            &mut clashes,
        );
        let mut starts = previous.starts.clone();
        let templates = listing(
            upstreams,
            "resource template",
            false,
            &previous.templates,
            |l| &l.templates,
            |t| &mut t.uri_template,
            Some(&mut starts),
            &mut clashes,
        );
        let skills =
            listing(upstreams, "skill", false, &previous.skills, |l| &l.skills, |s| &mut s.uri, None, &mut clashes);
        let mut refused = HashSet::new();
        for (at, clash) in &clashes {
            let key = (clash.kind, *at, clash.name.clone());
            if !previous.refused.contains(&key) {
                tracing::warn!(%clash, owner = %clash.first.0, refused = %clash.second.0, "left out");
                crate::metrics::refused(clash.kind, &clash.second.0);
            }
            refused.insert(key);
        }
        // The skills extension has no notification of its own: a change is a resource change.
        let changed = Changed {
            tools: tools.items != previous.tools.items,
            prompts: prompts.items != previous.prompts.items,
            resources: resources.items != previous.resources.items
                || templates.items != previous.templates.items
                || skills.items != previous.skills.items,
        };
        let index = Index { tools, prompts, resources, templates, starts, skills, refused };
        *self.index.write().expect("not poisoned") = Arc::new(index);
        (clashes.into_iter().map(|(_, clash)| clash).collect(), changed)
    }

    /// After an upstream changed: rebuild, and tell the downstream clients what changed.
    pub(crate) fn changed(&self) {
        let changed = {
            let _one = self.rebuilding.lock().expect("not poisoned");
            if !self.started.load(Ordering::SeqCst) {
                return;
            }
            self.rebuild_locked().1
        };
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
    fn route<T>(&self, listing: &Listing<T>, kind: &str, listed: &str) -> Result<(Arc<Upstream>, String), Error> {
        if let Some((at, own)) = listing.routes.get(listed) {
            return Ok((Arc::clone(&self.upstreams[*at]), own.clone()));
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

/// The one upstream a read of `uri` goes to: the owner of a resource with that URI, else of the
/// skill whose directory holds it, else of the template whose literal start begins it.
fn owner_of(index: &Index, uri: &str) -> Option<usize> {
    if let Some(&at) = index.resources.owners.get(uri) {
        return Some(at);
    }
    let by_skill = index.skills.owners.iter().find_map(|(skill, &at)| {
        let root = skill.strip_suffix(SKILL_MD)?;
        (root.ends_with('/') && uri.starts_with(root)).then_some(at)
    });
    by_skill.or_else(|| {
        let prefixes = uri.char_indices().map(|(i, _)| &uri[..i]).chain([uri]);
        prefixes.filter_map(|prefix| index.starts.get(prefix).map(|(at, _)| *at)).next_back()
    })
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
    /// The same to every caller unless an upstream restricts who sees it.
    fn lists_depend_on_caller(&self) -> bool {
        self.restricted()
    }

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
    /// The same to every caller unless an upstream restricts who sees it.
    fn lists_depend_on_caller(&self) -> bool {
        self.restricted()
    }

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
    /// The same to every caller unless an upstream restricts who sees it.
    fn lists_depend_on_caller(&self) -> bool {
        self.restricted()
    }

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
    /// The same to every caller unless an upstream restricts who sees it.
    fn lists_depend_on_caller(&self) -> bool {
        self.restricted()
    }

    fn resources(&self, caller: &Principal) -> Arc<[Resource]> {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        self.visible(caller, &index.resources, |resource| &resource.uri, false)
    }

    fn templates(&self, caller: &Principal) -> Arc<[ResourceTemplate]> {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        self.visible(caller, &index.templates, |template| &template.uri_template, false)
    }

    /// A read goes to the one upstream that owns the URI ([`owner_of`]), if the caller may
    /// use that upstream.
    fn read(&self, ctx: Context, uri: String) -> ReadFuture {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        let at = owner_of(&index, &uri);
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

    /// Subscriptions (`resources/subscribe`, `subscriptions/listen`) take the same decision as a
    /// read: the URI's one owner, and whether the caller may use it.
    fn serves(&self, uri: &str, caller: &Principal) -> bool {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        owner_of(&index, uri).is_some_and(|at| self.access(caller, at, None) == Access::Granted)
    }
}
