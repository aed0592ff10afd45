//! The index of what the upstreams list: one listing of each kind (tools, prompts, resources,
//! templates, skills), each entry under its listed name, and who owns each name. Built anew
//! from the upstreams' lists and the previous index's owners after every change.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use mcp_types::ext::skills::{SKILL_MD, Skill};
use mcp_types::http_headers::HeaderParam;
use mcp_types::{Prompt, Resource, ResourceTemplate, Tool};

use crate::config::PrefixMode;
use crate::upstream::{Hints, Lists, Upstream};

/// A map by name or URI: looked up on every call (a route, its owner, its headers), so hashed
/// with foldhash (seeded per process) rather than SipHash.
pub(crate) type ByName<V> = HashMap<String, V, foldhash::fast::RandomState>;

#[derive(Default)]
pub(crate) struct Index {
    pub(crate) tools: Listing<Tool>,
    /// The `x-mcp-header` parameters of the tools that have some, by listed name: what a call's
    /// mirrored `Mcp-Param-*` headers are checked against, found without a search of `tools`.
    pub(crate) tool_headers: ByName<Arc<[HeaderParam]>>,
    pub(crate) prompts: Listing<Prompt>,
    /// Resources and templates keep their URIs: listed by URI, routed by URI.
    pub(crate) resources: Listing<Resource>,
    pub(crate) templates: Listing<ResourceTemplate>,
    /// Each owned template's literal start (the text before its first `{`): its upstream and
    /// the template. No two upstreams' starts are equal or one a prefix of the other, so a URI
    /// has one owner. Kept, like an owner record, while its upstream lists a template with that
    /// start or is down.
    starts: BTreeMap<String, (usize, String)>,
    /// Skills keep their URIs (their `SKILL.md`'s); a skill's files are read from its upstream.
    pub(crate) skills: Listing<Skill>,
    /// Entries left out now because another upstream owns them, by kind, upstream and listed
    /// name: each is logged and counted once, when first refused.
    refused: HashSet<(&'static str, usize, String)>,
    /// Entries listed under their prefix because their name clashes (`prefix_mode =
    /// "conditional"`), by kind, upstream and own name: each is logged once, when first prefixed.
    prefixed: HashSet<(&'static str, usize, String)>,
    /// The caching hints of the upstreams that are up, merged kind by kind (the shortest
    /// `ttlMs`; private if one said so).
    pub(crate) hints: Hints,
    /// The `[[policy]]` rules' view of the entries (the catalogue fills it in; empty without).
    pub(crate) policed: crate::policy::Indexed,
}

/// One kind of entry (tools, prompts) of every upstream.
pub(crate) struct Listing<T> {
    pub(crate) items: Arc<[T]>,
    /// Listed name → (upstream, its own name for the entry).
    pub(crate) routes: ByName<(usize, Arc<str>)>,
    /// The owner of each listed name: the upstream that listed it first. Another that lists it
    /// is refused while the owner lists it, and while the owner is down (a request names the
    /// owner then); once the owner is up and lists it no more, the record goes (so that an
    /// upstream renaming its entries cannot grow it) and another upstream may take the name.
    pub(crate) owners: ByName<usize>,
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Listing { items: Arc::from(Vec::new()), routes: ByName::default(), owners: ByName::default() }
    }
}

/// Which lists a rebuild changed.
pub(crate) struct Changed {
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
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

/// The upstreams, and what each lists now (`None`: it is down), read once per rebuild so that
/// every kind agrees on which are up.
struct Now<'a> {
    upstreams: &'a [Arc<Upstream>],
    lists: Vec<Option<Arc<Lists>>>,
}

/// How one kind of entry is named: tools and prompts by `prefix_mode` (with the upstreams'
/// prefixes and rename rules), URIs as they are.
#[derive(Clone, Copy)]
enum Naming {
    Prefixed(PrefixMode),
    AsListed,
}

/// The listing of one kind: each upstream's entries under their listed names (`naming`). A name
/// keeps its owner: an entry of another upstream under that name, or (`starts`, for templates)
/// whose literal start overlaps another upstream's, is left out and returned as a clash. With
/// `prefix_mode = "never"`, an owner that is up keeps a name only while no upstream configured
/// before it lists it; with `conditional`, an entry whose name an upstream configured before
/// lists is prefixed (returned in `prefixed`: upstream, own name, listed name).
#[allow(clippy::too_many_arguments)]
fn listing<T: Clone>(
    now: &Now<'_>,
    kind: &'static str,
    naming: Naming,
    previous: &Listing<T>,
    entries: impl Fn(&Lists) -> &[T],
    name: impl Fn(&mut T) -> &mut String,
    mut starts: Option<&mut BTreeMap<String, (usize, String)>>,
    clashes: &mut Vec<(usize, Clash)>,
    prefixed: &mut Vec<(usize, String, String)>,
) -> Listing<T> {
    let upstreams = now.upstreams;
    // The unprefixed names of the upstreams seen so far, in configuration order (`conditional`).
    let mut before: HashSet<String> = HashSet::new();
    // Each upstream's entries, with their own and listed names.
    let named: Vec<Vec<(T, String, String)>> = (now.lists.iter().zip(upstreams).enumerate())
        .map(|(at, (lists, upstream))| {
            let entries = lists.as_deref().map_or(&[][..], &entries);
            let config = &upstream.config;
            let named: Vec<(T, String, String)> = entries
                .iter()
                .map(|entry| {
                    let mut entry = entry.clone();
                    let own = name(&mut entry).clone();
                    let listed = match naming {
                        Naming::AsListed => own.clone(),
                        Naming::Prefixed(PrefixMode::Always) => config.listed_name(&own),
                        Naming::Prefixed(PrefixMode::Never) => config.bare_name(&own),
                        Naming::Prefixed(PrefixMode::Conditional) => {
                            let bare = config.bare_name(&own);
                            // A `rename` is the operator's choice: kept as it is.
                            if before.contains(&bare) && !config.rename.contains_key(&own) {
                                let listed = config.listed_name(&own);
                                prefixed.push((at, own.clone(), listed.clone()));
                                listed
                            } else {
                                bare
                            }
                        }
                    };
                    (entry, own, listed)
                })
                .collect();
            if let Naming::Prefixed(PrefixMode::Conditional) = naming {
                before.extend(named.iter().map(|(_, own, _)| config.bare_name(own)));
            }
            named
        })
        .collect();
    // An owner keeps its names while it lists them or is down; what an up owner no longer lists
    // is free (for any upstream, this rebuild included).
    let mut owners: ByName<usize> = {
        let down = |at: usize| now.lists[at].is_none();
        let listed: Vec<HashSet<&str>> =
            named.iter().map(|named| named.iter().map(|(_, _, listed)| listed.as_str()).collect()).collect();
        if let Some(starts) = starts.as_deref_mut() {
            let begun: Vec<HashSet<&str>> =
                listed.iter().map(|names| names.iter().map(|name| literal_start(name)).collect()).collect();
            starts.retain(|start, (at, _)| down(*at) || begun[*at].contains(start.as_str()));
        }
        // `never`: configuration order decides among the upstreams that are up (the loop below
        // gives a name to the first that lists it); only a down owner keeps its names.
        let by_order = matches!(naming, Naming::Prefixed(PrefixMode::Never));
        let kept = previous
            .owners
            .iter()
            .filter(|(name, at)| down(**at) || (!by_order && listed[**at].contains(name.as_str())));
        kept.map(|(name, at)| (name.clone(), *at)).collect()
    };
    let mut items = Vec::new();
    let mut routes: ByName<(usize, Arc<str>)> = ByName::default();
    let own_name = |listed: &str, owner: usize, routes: &ByName<(usize, Arc<str>)>| {
        let route = routes.get(listed).or_else(|| previous.routes.get(listed)).filter(|(at, _)| *at == owner);
        route.map_or_else(|| listed.to_owned(), |(_, own)| own.to_string())
    };
    for (at, named) in named.into_iter().enumerate() {
        let upstream = &upstreams[at];
        for (mut entry, own, listed) in named {
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
            routes.insert(listed, (at, Arc::from(own)));
            items.push(entry);
        }
    }
    Listing { items: items.into(), routes, owners }
}

impl Index {
    /// The index of what `upstreams` list now, names keeping the owners `previous` recorded. An
    /// entry another upstream owns is left out (logged and counted the first time) and
    /// returned, with which lists changed.
    pub(crate) fn next(
        previous: &Index,
        upstreams: &[Arc<Upstream>],
        mode: PrefixMode,
    ) -> (Index, Vec<Clash>, Changed) {
        let now = Now { upstreams, lists: upstreams.iter().map(|upstream| upstream.current()).collect() };
        let (mut clashes, mut tools_prefixed, mut prompts_prefixed, mut none) = (Vec::new(), vec![], vec![], vec![]);
        let (named, uris) = (Naming::Prefixed(mode), Naming::AsListed);
        let tools = listing(
            &now,
            "tool",
            named,
            &previous.tools,
            |l| &l.tools,
            |t| &mut t.name,
            None,
            &mut clashes,
            &mut tools_prefixed,
        );
        let prompts = listing(
            &now,
            "prompt",
            named,
            &previous.prompts,
            |l| &l.prompts,
            |p| &mut p.name,
            None,
            &mut clashes,
            &mut prompts_prefixed,
        );
        let resources = listing(
            &now,
            "resource",
            uris,
            &previous.resources,
            |l| &l.resources,
            |r| &mut r.uri,
            None,
            &mut clashes,
            &mut none,
        );
        let mut starts = previous.starts.clone();
        let templates = listing(
            &now,
            "resource template",
            uris,
            &previous.templates,
            |l| &l.templates,
            |t| &mut t.uri_template,
            Some(&mut starts),
            &mut clashes,
            &mut none,
        );
        let skills = listing(
            &now,
            "skill",
            uris,
            &previous.skills,
            |l| &l.skills,
            |s| &mut s.uri,
            None,
            &mut clashes,
            &mut none,
        );
        let mut prefixed = HashSet::new();
        let all_prefixed =
            tools_prefixed.into_iter().map(|p| ("tool", p)).chain(prompts_prefixed.into_iter().map(|p| ("prompt", p)));
        for (kind, (at, own, listed)) in all_prefixed {
            let key = (kind, at, own);
            if !previous.prefixed.contains(&key) {
                let upstream = upstreams[at].name();
                tracing::warn!(kind, upstream, own = %key.2, %listed, "prefix_mode = \"conditional\": an upstream configured before lists this name; listed under the prefix");
            }
            prefixed.insert(key);
        }
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
        let hints = now.lists.iter().flatten().fold(Hints::default(), |all, lists| Hints {
            tools: all.tools.and(lists.hints.tools),
            prompts: all.prompts.and(lists.hints.prompts),
            resources: all.resources.and(lists.hints.resources),
            templates: all.templates.and(lists.hints.templates),
        });
        let policed = Default::default();
        let tool_headers = tools
            .items
            .iter()
            .filter_map(|tool| Some((tool.name.clone(), mcp_server::dynamic::header_params_of(tool)?)))
            .collect();
        let index = Index {
            tools,
            tool_headers,
            prompts,
            resources,
            templates,
            starts,
            skills,
            refused,
            prefixed,
            hints,
            policed,
        };
        (index, clashes.into_iter().map(|(_, clash)| clash).collect(), changed)
    }

    /// The names it records: owners of every kind, template starts and refused entries.
    pub(crate) fn recorded(&self) -> usize {
        let owners = [
            self.tools.owners.len(),
            self.prompts.owners.len(),
            self.resources.owners.len(),
            self.templates.owners.len(),
            self.skills.owners.len(),
        ];
        owners.iter().sum::<usize>() + self.starts.len() + self.refused.len()
    }
}

/// The one upstream a read of `uri` goes to: the owner of a resource with that URI, else of the
/// skill whose directory holds it, else of the template whose literal start begins it.
pub(crate) fn owner_of(index: &Index, uri: &str) -> Option<usize> {
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
