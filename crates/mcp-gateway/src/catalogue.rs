//! One list of the tools of every upstream, under their listed names, and the calls to them: the
//! gateway's [`ToolSource`].

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use mcp_server::dynamic::{ToolFuture, ToolSource};
use mcp_server::{Context, Error, Server};
use mcp_types::{CallToolRequestParams, Tool};

use crate::upstream::Upstream;

/// The upstreams, in configuration order, and the index of their tools as listed now.
pub(crate) struct Catalogue {
    pub(crate) upstreams: Vec<Arc<Upstream>>,
    index: RwLock<Arc<Index>>,
    /// The server to tell when the list changes (set once it is built).
    pub(crate) server: OnceLock<Server>,
}

#[derive(Default)]
struct Index {
    tools: Arc<[Tool]>,
    /// Listed name → (upstream, its own name for the tool).
    routes: HashMap<String, (usize, String)>,
    /// Every listed name the configuration gives, with its upstream, so that a call to a tool of
    /// an upstream that is down names the upstream.
    ever: HashMap<String, usize>,
}

/// Two upstreams list a tool under the same name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clash {
    pub name: String,
    pub first: (String, String),
    pub second: (String, String),
}

impl std::fmt::Display for Clash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tool `{}` is listed by upstream `{}` (its tool `{}`) and by upstream `{}` (its tool `{}`); \
             give one of them a `prefix` or a `rename`",
            self.name, self.first.0, self.first.1, self.second.0, self.second.1
        )
    }
}

impl Catalogue {
    pub(crate) fn new(upstreams: Vec<Arc<Upstream>>) -> Catalogue {
        Catalogue { upstreams, index: RwLock::default(), server: OnceLock::new() }
    }

    /// Rebuilds the index from the upstreams' current tools. A clash keeps the tool of the
    /// upstream listed first in the configuration and is returned.
    pub(crate) fn rebuild(&self) -> Vec<Clash> {
        let mut tools = Vec::new();
        let mut routes: HashMap<String, (usize, String)> = HashMap::new();
        let mut ever = self.index.read().expect("not poisoned").ever.clone();
        let mut clashes = Vec::new();
        for (at, upstream) in self.upstreams.iter().enumerate() {
            for mut tool in upstream.tools() {
                let listed = upstream.config.listed_name(&tool.name);
                if let Some((first, own)) = routes.get(&listed) {
                    clashes.push(Clash {
                        name: listed,
                        first: (self.upstreams[*first].name().to_owned(), own.clone()),
                        second: (upstream.name().to_owned(), tool.name.clone()),
                    });
                    continue;
                }
                ever.insert(listed.clone(), at);
                routes.insert(listed.clone(), (at, std::mem::replace(&mut tool.name, listed)));
                tools.push(tool);
            }
        }
        for clash in &clashes {
            tracing::warn!(%clash, "tool left out");
        }
        *self.index.write().expect("not poisoned") = Arc::new(Index { tools: tools.into(), routes, ever });
        clashes
    }

    /// After an upstream changed: rebuild and tell the downstream clients.
    pub(crate) fn changed(&self) {
        self.rebuild();
        if let Some(server) = self.server.get() {
            server.notify_tools_list_changed();
        }
    }
}

impl ToolSource for Catalogue {
    fn tools(&self) -> Arc<[Tool]> {
        Arc::clone(&self.index.read().expect("not poisoned").tools)
    }

    fn call(&self, _ctx: Context, mut params: CallToolRequestParams) -> ToolFuture {
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        let Some((at, own)) = index.routes.get(&params.name).cloned() else {
            let error = match index.ever.get(&params.name) {
                Some(&at) => {
                    let upstream = &self.upstreams[at];
                    let why = upstream.client().err().unwrap_or_default();
                    Error::internal(format!(
                        "Tool {} is served by upstream `{}`, which is unavailable: {why}",
                        params.name,
                        upstream.name()
                    ))
                }
                None => Error::invalid_params(format!("Unknown tool: {}", params.name)),
            };
            return Box::pin(std::future::ready(Err(error)));
        };
        let upstream = Arc::clone(&self.upstreams[at]);
        Box::pin(async move {
            let client = upstream
                .client()
                .map_err(|why| Error::internal(format!("upstream `{}` is unavailable: {why}", upstream.name())))?;
            let arguments = params.arguments.take().unwrap_or_default();
            match client.call_tool(&own, arguments).await {
                Ok(result) => Ok(result),
                Err(mcp_client::Error::Rpc { error, .. }) => Err(Error::Rpc(error)),
                Err(error) => {
                    upstream.suspect();
                    Err(Error::internal(format!("upstream `{}` failed the call to {own}: {error}", upstream.name())))
                }
            }
        })
    }
}
