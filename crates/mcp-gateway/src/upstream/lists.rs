//! What an upstream lists (tools, prompts, resources, templates, skills) and the caching hints
//! of its pages, read page by page within the gateway's bounds.

use mcp_client::{Client, Era};
use mcp_types::ext::skills::Skill;
use mcp_types::{Prompt, Resource, ResourceTemplate, Tool};

use crate::config::UpstreamConfig;

/// What an upstream lists, under its own names.
#[derive(Default, Clone)]
pub(crate) struct Lists {
    pub(crate) tools: Vec<Tool>,
    pub(crate) prompts: Vec<Prompt>,
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
    /// Skills (the skills extension), whose files are among its resources.
    pub(crate) skills: Vec<Skill>,
    /// What its pages of each list said of their caching (`ttlMs`, `cacheScope`).
    pub(crate) hints: Hints,
}

/// The caching hints of an upstream's lists, by kind.
#[derive(Default, Clone, Copy, Debug, PartialEq)]
pub(crate) struct Hints {
    pub(crate) tools: Hint,
    pub(crate) prompts: Hint,
    pub(crate) resources: Hint,
    pub(crate) templates: Hint,
}

/// What the pages of one list (of one or more upstreams) said of their caching: the shortest
/// `ttlMs`, and whether one was `private`. A legacy server says nothing: no hint.
#[derive(Default, Clone, Copy, Debug, PartialEq)]
pub(crate) struct Hint {
    pub(crate) ttl_ms: Option<u64>,
    pub(crate) private: bool,
}

impl Hint {
    /// A page's hints. A 2026-07-28 server must send `cacheScope`: one that does not is read
    /// as `private`, the cautious reading.
    fn of(era: Era, ttl: Option<mcp_types::TtlMs>, scope: Option<mcp_types::CacheScope>) -> Hint {
        match era {
            Era::Legacy => Hint::default(),
            Era::Modern => Hint {
                ttl_ms: Some(ttl.unwrap_or_default().millis()),
                private: scope != Some(mcp_types::CacheScope::Public),
            },
        }
    }

    /// Both hints: the shorter time, private if either is.
    pub(crate) fn and(self, other: Hint) -> Hint {
        let ttl_ms = match (self.ttl_ms, other.ttl_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Hint { ttl_ms, private: self.private || other.private }
    }
}

/// Why listing what an upstream serves failed.
pub(super) enum ListError {
    Client(mcp_client::Error),
    /// It lists more than its bound (entries, bytes or pages): it is degraded, not the gateway.
    OverBound(String),
}

impl From<mcp_client::Error> for ListError {
    fn from(error: mcp_client::Error) -> ListError {
        ListError::Client(error)
    }
}

/// What one listing of an upstream may take: `max_entries` of each kind, `max_pages` of each
/// list, and `max_bytes` of JSON in all (every kind together, counted in `bytes` as the entries
/// come).
struct Bounds {
    max_entries: usize,
    max_pages: usize,
    max_bytes: usize,
    bytes: usize,
}

/// Counts the bytes written to it.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(bytes.len());
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One page of a list: its entries, the cursor of the next one, and its caching hints.
struct Page<T> {
    items: Vec<T>,
    next: Option<String>,
    hint: Hint,
}

/// Every item of a list, page by page (`fetch` gets the page at a cursor), within `bounds`, and
/// what its pages said of their caching. The item that goes over a bound stops the listing
/// there, so that no more than a page beyond the bound is ever fetched; the pages are fetched
/// here rather than by mcp-client's list streams, which do not pass on the pages' hints.
async fn bounded<T: serde::Serialize, F: Future<Output = Result<Page<T>, mcp_client::Error>>>(
    kind: &str,
    bounds: &mut Bounds,
    fetch: impl Fn(Option<String>) -> F,
) -> Result<(Vec<T>, Hint), ListError> {
    let (mut all, mut hint, mut cursor, mut pages) = (Vec::new(), Hint::default(), None, 0);
    loop {
        let page = fetch(cursor.take()).await?;
        pages += 1;
        hint = hint.and(page.hint);
        for item in page.items {
            // Its size as JSON, counted without holding a copy (a list entry always serializes).
            let mut size = Counter(0);
            let _ = serde_json::to_writer(&mut size, &item);
            bounds.bytes = bounds.bytes.saturating_add(size.0);
            if bounds.bytes > bounds.max_bytes {
                let max = bounds.max_bytes;
                return Err(ListError::OverBound(format!(
                    "its lists take more than {max} bytes of JSON (`max_list_bytes`)"
                )));
            }
            all.push(item);
            if all.len() > bounds.max_entries {
                let max = bounds.max_entries;
                return Err(ListError::OverBound(format!("it lists more than {max} {kind} (`max_entries`)")));
            }
        }
        match page.next {
            None => return Ok((all, hint)),
            // A server repeating a cursor ends here too.
            Some(_) if pages >= bounds.max_pages => {
                let max = bounds.max_pages;
                return Err(ListError::OverBound(format!("its {kind} take more than {max} pages (`max_list_pages`)")));
            }
            Some(next) => cursor = Some(next),
        }
    }
}

impl Lists {
    /// What `client`'s server lists (only the kinds it declares), within `config`'s bounds.
    pub(super) async fn of(client: &Client, config: &UpstreamConfig) -> Result<Lists, ListError> {
        let bounds = &mut Bounds {
            max_entries: config.max_entries(),
            max_pages: config.max_list_pages(),
            max_bytes: config.max_list_bytes(),
            bytes: 0,
        };
        let era = client.era();
        let capabilities = client.server_capabilities();
        let mut lists = Lists::default();
        if capabilities.tools.is_some() {
            (lists.tools, lists.hints.tools) = bounded("tools", bounds, |cursor| {
                let client = client.clone();
                async move {
                    let page = client.list_tools_page(cursor).await?;
                    let hint = Hint::of(era, page.ttl_ms, page.cache_scope);
                    Ok(Page { hint, items: page.tools, next: page.next_cursor })
                }
            })
            .await?;
        }
        if capabilities.prompts.is_some() {
            (lists.prompts, lists.hints.prompts) = bounded("prompts", bounds, |cursor| {
                let client = client.clone();
                async move {
                    let page = client.list_prompts_page(cursor).await?;
                    let hint = Hint::of(era, page.ttl_ms, page.cache_scope);
                    Ok(Page { hint, items: page.prompts, next: page.next_cursor })
                }
            })
            .await?;
        }
        if capabilities.resources.is_some() {
            (lists.resources, lists.hints.resources) = bounded("resources", bounds, |cursor| {
                let client = client.clone();
                async move {
                    let page = client.list_resources_page(cursor).await?;
                    let hint = Hint::of(era, page.ttl_ms, page.cache_scope);
                    Ok(Page { hint, items: page.resources, next: page.next_cursor })
                }
            })
            .await?;
            (lists.templates, lists.hints.templates) = bounded("resource templates", bounds, |cursor| {
                let client = client.clone();
                async move {
                    let page = client.list_resource_templates_page(cursor).await?;
                    let hint = Hint::of(era, page.ttl_ms, page.cache_scope);
                    Ok(Page { hint, items: page.resource_templates, next: page.next_cursor })
                }
            })
            .await?;
        }
        if client.skills_settings().is_some() {
            (lists.skills, _) = bounded("skills", bounds, |cursor| {
                let client = client.clone();
                async move {
                    let page = client.list_skills_page(cursor).await?;
                    Ok(Page { hint: Hint::default(), items: page.skills, next: page.next_cursor })
                }
            })
            .await?;
        }
        Ok(lists)
    }
}
