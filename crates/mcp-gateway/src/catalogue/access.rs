//! Who may see and use an entry: the upstream's `principals` and `scopes` (and `entry_scopes`),
//! then the `[[policy]]` rules ([`crate::policy`]). One decision, taken by the lists, by
//! `search_tools`, by each request before it is forwarded, and for the audit log.

use std::sync::Arc;

use mcp_server::{Error, Principal};
use mcp_types::CallToolRequestParams;

use super::Catalogue;
use crate::index::{Index, Listing, owner_of};
use crate::policy::{Arguments, Caller, Entries, Entry, Method, Policy, Refusal};
use crate::upstream::Upstream;

/// What a request uses an entry for: the method the rules see, and whether the entry has names
/// of its own (tools and prompts: `entry_scopes` apply) or is a URI.
#[derive(Clone, Copy)]
pub(super) struct Use {
    /// In errors (`Unknown tool: …`).
    pub(super) kind: &'static str,
    /// The rules' `entry.kind`.
    pub(super) entry: &'static str,
    pub(super) method: &'static str,
    pub(super) named: bool,
}

pub(super) const TOOL: Use = Use { kind: "tool", entry: "tool", method: "tools/call", named: true };
pub(super) const PROMPT: Use = Use { kind: "prompt", entry: "prompt", method: "prompts/get", named: true };
pub(super) const RESOURCE: Use = Use { kind: "resource", entry: "resource", method: "resources/read", named: false };
pub(super) const TEMPLATE: Use =
    Use { kind: "resource template", entry: "template", method: "resources/read", named: false };
pub(super) const SKILL: Use = Use { kind: "skill", entry: "skill", method: "resources/read", named: false };

/// The entry a request names: its upstream, its listed name and the upstream's own (a tool's
/// or prompt's; `None` for a URI), and the rules' view of it if the index has one.
pub(super) struct Target<'a> {
    pub(super) at: usize,
    pub(super) listed: &'a str,
    pub(super) own: Option<&'a str>,
    pub(super) entry: Option<&'a Entry>,
    pub(super) kind: Use,
}

/// Why a caller may not use an entry.
#[derive(Debug)]
pub(super) enum Refused {
    /// The caller is not among the upstream's `principals`: to it the entry does not exist.
    Hidden,
    /// The caller's token lacks some of these scopes, which the upstream or the entry needs.
    Scopes(Vec<String>),
    /// A policy rule refuses it; the scopes the upstream and entry need (for a step-up).
    Rule(Refusal, Vec<String>),
}

impl Refused {
    /// Whether a list still shows the entry: what the caller can step up to, unless the server
    /// lists only what the token permits.
    fn listed(&self, only_permitted: bool) -> bool {
        match self {
            Refused::Hidden => false,
            Refused::Scopes(_) => !only_permitted,
            Refused::Rule(refusal, _) => refusal.step_up.is_some() && !only_permitted,
        }
    }

    /// The error of a request for `listed` (a name, or a URI when `unknown` is for a resource).
    pub(super) fn error(self, unknown: impl FnOnce() -> Error) -> Error {
        match self {
            Refused::Hidden => unknown(),
            Refused::Scopes(needed) => Error::InsufficientScope(needed),
            Refused::Rule(refusal, base) => refusal.error(&base),
        }
    }

    /// For the audit log.
    fn reason(&self) -> String {
        match self {
            Refused::Hidden => "the caller is not among the upstream's `principals`".to_owned(),
            Refused::Scopes(needed) => format!("the caller's token lacks the scope(s) {}", needed.join(" ")),
            Refused::Rule(refusal, _) => refusal.why.clone(),
        }
    }
}

/// The caller of one request (or list), as the checks need it: converted for the rules once.
pub(super) struct Asking<'a> {
    principal: &'a Principal,
    rules: Option<Caller>,
}

impl Catalogue {
    /// The caching hints of the upstreams' lists as indexed now.
    pub(super) fn hints(&self) -> crate::upstream::Hints {
        self.index.read().expect("not poisoned").hints
    }

    /// Whether any upstream restricts its callers (else those checks are skipped).
    pub(super) fn restricted(&self) -> bool {
        self.upstreams.iter().any(|u| u.config.restricts_callers())
    }

    /// Whether the lists may differ from one caller to another: an upstream restricts its
    /// callers, or a policy rule reads `principal`.
    pub(super) fn depends_on_caller(&self) -> bool {
        self.restricted() || self.policy.reads_principal()
    }

    pub(super) fn asking<'a>(&self, principal: &'a Principal) -> Asking<'a> {
        Asking { principal, rules: (!self.policy.is_empty()).then(|| Caller::new(principal)) }
    }

    /// The rules' view of the entries of a new index (none without rules): built with the index,
    /// not per request.
    pub(super) fn prepare(&self, index: &Index) -> crate::policy::Indexed {
        if self.policy.is_empty() {
            return crate::policy::Indexed::default();
        }
        let upstream = |at: usize| self.upstreams[at].name();
        let annotations = |value: Option<serde_json::Value>| value.filter(|v| v.is_object());
        let tools = index.tools.items.iter().filter_map(|tool| {
            let (at, own) = index.tools.routes.get(&tool.name)?;
            let annotations = annotations(tool.annotations.as_ref().and_then(|a| serde_json::to_value(a).ok()));
            Some((tool.name.clone(), Entry::new("tool", &tool.name, own, "", annotations, upstream(*at))))
        });
        let prompts = index.prompts.items.iter().filter_map(|prompt| {
            let (at, own) = index.prompts.routes.get(&prompt.name)?;
            Some((prompt.name.clone(), Entry::new("prompt", &prompt.name, own, "", None, upstream(*at))))
        });
        let resources = index.resources.items.iter().filter_map(|resource| {
            let (at, _) = index.resources.routes.get(&resource.uri)?;
            let annotations = annotations(resource.annotations.as_ref().and_then(|a| serde_json::to_value(a).ok()));
            let uri = &resource.uri;
            Some((uri.clone(), Entry::new("resource", uri, uri, uri, annotations, upstream(*at))))
        });
        let templates = index.templates.items.iter().filter_map(|template| {
            let uri = &template.uri_template;
            let (at, _) = index.templates.routes.get(uri)?;
            let annotations = annotations(template.annotations.as_ref().and_then(|a| serde_json::to_value(a).ok()));
            Some((uri.clone(), Entry::new("template", uri, uri, uri, annotations, upstream(*at))))
        });
        let skills = index.skills.items.iter().filter_map(|skill| {
            let (at, _) = index.skills.routes.get(&skill.uri)?;
            Some((skill.uri.clone(), Entry::new("skill", &skill.uri, &skill.uri, &skill.uri, None, upstream(*at))))
        });
        // Each decided ahead as the method that uses it, as the lists and most requests check it.
        let (call, get, read) = (Method::of(TOOL.method), Method::of(PROMPT.method), Method::of(RESOURCE.method));
        fn ahead<'a>(policy: &'a Policy, method: &'a Method) -> impl FnMut((String, Entry)) -> (String, Entry) + 'a {
            move |(name, mut entry)| {
                policy.decide_ahead(&mut entry, method);
                (name, entry)
            }
        }
        crate::policy::Indexed {
            tools: Entries::new(tools.map(ahead(&self.policy, call))),
            prompts: Entries::new(prompts.map(ahead(&self.policy, get))),
            resources: Entries::new(resources.map(ahead(&self.policy, read))),
            templates: Entries::new(templates.map(ahead(&self.policy, read))),
            skills: Entries::new(skills.map(ahead(&self.policy, read))),
        }
    }

    /// Whether `caller` may use `target` for `method`, with `arguments` (none: rules that need
    /// them are undecided). A caller without a token is the process that started the gateway over
    /// stdio (HTTP callers have tokens whenever an upstream restricts them): the upstream lets it
    /// use everything; the rules apply to it too.
    fn decide_entry(
        &self,
        caller: &Asking,
        target: &Target,
        method: &'static str,
        arguments: Option<&Arguments>,
    ) -> Result<(), Refused> {
        let config = &self.upstreams[target.at].config;
        let token = caller.principal.token();
        if token.is_some()
            && !config.principals.is_empty()
            && !config.principals.iter().any(|p| p == caller.principal.as_str())
        {
            return Err(Refused::Hidden);
        }
        let entry_scopes = target.own.and_then(|own| config.entry_scopes.get(own)).into_iter().flatten();
        let needed: Vec<String> = config.scopes.iter().chain(entry_scopes).cloned().collect();
        if let Some(rules) = &caller.rules {
            let built;
            let entry = match target.entry {
                Some(entry) => entry,
                // Not indexed: a URI read or subscribed to that no list names (or a name whose
                // upstream is down).
                None => {
                    let (listed, own) = (target.listed, target.own.unwrap_or(target.listed));
                    let uri = if target.kind.named { "" } else { listed };
                    built = Entry::new(target.kind.entry, listed, own, uri, None, self.upstreams[target.at].name());
                    &built
                }
            };
            let method = Method::of(method);
            self.policy.check(rules, method, entry, arguments).map_err(|r| Refused::Rule(r, needed.clone()))?;
        }
        match token {
            Some(token) if !needed.iter().all(|scope| token.has_scope(scope)) => Err(Refused::Scopes(needed)),
            _ => Ok(()),
        }
    }

    /// The entries of `listing` that `caller` may see.
    pub(super) fn visible<T: Clone>(
        &self,
        caller: &Principal,
        listing: &Listing<T>,
        entries: &Entries,
        key: impl Fn(&T) -> &str,
        kind: Use,
    ) -> Arc<[T]> {
        if (!self.restricted() || caller.token().is_none()) && self.policy.is_empty() {
            return Arc::clone(&listing.items);
        }
        let shown = self.shown(caller);
        let items = listing.items.iter().filter(|item| {
            let listed = key(item);
            listing.routes.get(listed).is_some_and(|(at, own)| {
                let own = kind.named.then_some(&**own);
                shown(&Target { at: *at, listed, own, entry: entries.named(listed), kind })
            })
        });
        items.cloned().collect()
    }

    /// Whether `caller` is shown an entry: in the lists, and in what `search_tools` finds. The
    /// rules decide without arguments, as the method that would use the entry.
    pub(super) fn shown<'a>(&'a self, caller: &'a Principal) -> impl Fn(&Target) -> bool + 'a {
        let open = (!self.restricted() || caller.token().is_none()) && self.policy.is_empty();
        // Like a server's own routes: what needs more scopes is listed (a call gets 403, and the
        // client can step up) unless the server lists only what the token permits.
        let only_permitted = self.server.get().is_some_and(|server| server.options().list_only_permitted);
        let asking = self.asking(caller);
        move |target| {
            open || match self.decide_entry(&asking, target, target.kind.method, None) {
                Ok(()) => true,
                Err(refused) => refused.listed(only_permitted),
            }
        }
    }

    /// Whether `caller` is shown the tool (or prompt) listed as `name`, without building the
    /// list (for the server's telemetry and its mirrored headers).
    pub(super) fn shows(&self, caller: &Principal, index: &Index, name: &str, kind: Use) -> bool {
        let (listing, entries) = match kind.entry {
            "prompt" => (&index.prompts.routes, &index.policed.prompts),
            _ => (&index.tools.routes, &index.policed.tools),
        };
        listing.get(name).is_some_and(|(at, own)| {
            let entry = entries.named(name);
            self.shown(caller)(&Target { at: *at, listed: name, own: Some(own), entry, kind })
        })
    }

    /// The answer to `caller`'s `search_tools` call (`catalogue = "search"`): the best matches
    /// among the tools it would be listed in plain mode.
    pub(super) fn search_tools(
        &self,
        caller: &Principal,
        params: &CallToolRequestParams,
    ) -> Result<mcp_types::CallToolResult, Error> {
        let Some(search) = &self.search else { return Err(Error::invalid_params("Unknown tool: search_tools")) };
        let search = Arc::clone(&search.read().expect("not poisoned"));
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        let shown = self.shown(caller);
        search.answer(params.arguments.as_ref(), |at, own, listed| {
            let entry = index.policed.tools.named(listed);
            shown(&Target { at, listed, own: Some(own), entry, kind: TOOL })
        })
    }

    /// The route of a request for `listed` (`method`, with `arguments`), if `caller` may use it:
    /// a hidden entry is unknown, one the caller's token lacks scopes for is refused naming them
    /// (so that it can step up), one a rule refuses is refused naming the rule (or the scopes
    /// the rule names).
    pub(super) fn route_for<T>(
        &self,
        caller: &Principal,
        (listing, entries): (&Listing<T>, &Entries),
        kind: Use,
        method: &'static str,
        listed: &str,
        arguments: Option<&Arguments>,
    ) -> Result<(Arc<Upstream>, Arc<str>), Error> {
        let (upstream, own) = self.route(listing, kind.kind, listed)?;
        let at = self.upstreams.iter().position(|u| Arc::ptr_eq(u, &upstream)).expect("an upstream of the catalogue");
        let target = Target { at, listed, own: kind.named.then_some(&*own), entry: entries.named(listed), kind };
        match self.decide_entry(&self.asking(caller), &target, method, arguments) {
            Ok(()) => Ok((upstream, own)),
            Err(refused) => Err(refused.error(|| Error::invalid_params(format!("Unknown {}: {listed}", kind.kind)))),
        }
    }

    /// The upstream that owns `uri`, if `caller` may read it (`method`: or subscribe to it).
    pub(super) fn uri_for(
        &self,
        caller: &Principal,
        index: &Index,
        uri: &str,
        method: &'static str,
    ) -> Result<usize, Error> {
        let Some(at) = owner_of(index, uri) else { return Err(Error::resource_not_found(uri)) };
        self.decide_entry(&self.asking(caller), &uri_target(index, at, uri), method, None)
            .map(|()| at)
            .map_err(|refused| refused.error(|| Error::resource_not_found(uri)))
    }
}

/// A URI read or subscribed to: a listed resource, a skill's `SKILL.md`, or a URI of a template
/// or of a skill's files (which the rules see as a resource of that URI).
fn uri_target<'a>(index: &'a Index, at: usize, uri: &'a str) -> Target<'a> {
    let (resource, skill) = (index.policed.resources.named(uri), index.policed.skills.named(uri));
    let kind = if resource.is_none() && skill.is_some() { SKILL } else { RESOURCE };
    Target { at, listed: uri, own: None, entry: resource.or(skill), kind }
}

/// What the gateway decided about a request before forwarding it, for the audit log.
#[derive(Default)]
pub(crate) struct Decision {
    /// The upstream it goes to.
    pub(crate) upstream: Option<String>,
    /// Why it was refused, if it was.
    pub(crate) denied: Option<String>,
    /// The policy rule that refused it, if one did.
    pub(crate) rule: Option<String>,
}

impl Catalogue {
    /// For the audit log: the upstream `call` goes to, and why the gateway refuses it before
    /// forwarding, if it does (the decisions of `route_for` and `uri_for`, on the same index). A
    /// name no upstream serves is refused as unknown; one whose owner is down goes to it (and
    /// fails, naming it).
    pub(crate) fn decide(&self, caller: &Principal, call: &mcp_server::middleware::McpCall) -> Decision {
        use mcp_server::middleware::McpCall;
        use mcp_types::CompleteRequestParamsRef;
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        let asking = self.asking(caller);
        let rules = asking.rules.is_some();
        let inner;
        let (target, method, arguments) = match call {
            McpCall::CallTool(params) => {
                let params = match params.name.as_str() {
                    crate::search::SEARCH_TOOLS if self.search.is_some() => return Decision::default(),
                    // The call `call_tool` makes, as a direct call would be decided.
                    crate::search::CALL_TOOL if self.search.is_some() => {
                        let Ok(params) = crate::search::inner_call(params.clone()) else { return Decision::default() };
                        inner = params;
                        &inner
                    }
                    _ => params,
                };
                let arguments = rules.then(|| Arguments::new(params.arguments.as_ref().unwrap_or(&Default::default())));
                let target = named(&index.tools, &index.policed.tools, &params.name, TOOL);
                (target, TOOL.method, arguments)
            }
            McpCall::GetPrompt(params) => {
                let arguments =
                    rules.then(|| Arguments::strings(params.arguments.as_ref().unwrap_or(&Default::default())));
                (named(&index.prompts, &index.policed.prompts, &params.name, PROMPT), PROMPT.method, arguments)
            }
            McpCall::Complete(params) => {
                let target = match &params.r#ref {
                    CompleteRequestParamsRef::RefPrompt(prompt) => {
                        named(&index.prompts, &index.policed.prompts, &prompt.name, PROMPT)
                    }
                    CompleteRequestParamsRef::RefResource(template) => {
                        named(&index.templates, &index.policed.templates, &template.uri, TEMPLATE)
                    }
                    _ => return Decision::default(),
                };
                (target, "completion/complete", None)
            }
            McpCall::ReadResource(params) => {
                let target = owner_of(&index, &params.uri).map(|at| uri_target(&index, at, &params.uri));
                (target, RESOURCE.method, None)
            }
            _ => return Decision::default(),
        };
        let Some(target) = target else {
            return Decision { denied: Some("no upstream serves it".to_owned()), ..Decision::default() };
        };
        let refused = self.decide_entry(&asking, &target, method, arguments.as_ref()).err();
        Decision {
            upstream: Some(self.upstreams[target.at].name().to_owned()),
            rule: match &refused {
                Some(Refused::Rule(refusal, _)) => Some(refusal.rule.clone()),
                _ => None,
            },
            denied: refused.as_ref().map(Refused::reason),
        }
    }
}

/// The entry listed as `name`: its route, or the owner of the name (down now).
fn named<'a, T>(listing: &'a Listing<T>, entries: &'a Entries, name: &'a str, kind: Use) -> Option<Target<'a>> {
    let entry = entries.named(name);
    match listing.routes.get(name) {
        Some((at, own)) => Some(Target { at: *at, listed: name, own: kind.named.then_some(&**own), entry, kind }),
        None => listing.owners.get(name).map(|&at| Target { at, listed: name, own: None, entry, kind }),
    }
}
