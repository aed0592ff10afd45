//! MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865) on the server: a [`UiResource`] is an HTML
//! interface served as a `ui://` resource of MIME type `text/html;profile=mcp-app`, with the CSP
//! and permissions it asks the host for; [`ToolRoute::ui`](crate::ToolRoute::ui) links a tool to
//! it (`_meta.ui.resourceUri`) and [`ToolRoute::ui_visibility`](crate::ToolRoute::ui_visibility)
//! says who may call the tool (the model, the app, or both). Registering a UI resource declares
//! the extension (`capabilities.extensions["io.modelcontextprotocol/ui"]`) in both eras.
//!
//! ```
//! use mcp_server::apps::UiResource;
//! use mcp_server::types::ext::apps::McpUiResourceCsp;
//! use mcp_server::{Server, ToolRoute, NoArguments};
//!
//! let server = Server::builder("clock", "1.0.0")
//!     .ui_resource(
//!         UiResource::html("ui://clock/app.html", "<!doctype html><p id=time></p>")
//!             .csp(McpUiResourceCsp { connect_domains: Some(vec!["https://time.example".into()]), ..Default::default() }),
//!     )
//!     .tool(
//!         ToolRoute::new("get_time", |_ctx, _: NoArguments| async { Ok("12:00") })
//!             .ui("ui://clock/app.html"),
//!     )
//!     .build()
//!     .unwrap();
//! # let _ = server;
//! ```

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use mcp_types::ext::apps::{self, McpUiResourceCsp, McpUiResourceMeta, McpUiResourcePermissions};
use mcp_types::{JsonObject, Resource, TextResourceContents};
use serde_json::Value;

use crate::{error::Error, routes::ResourceRoute, routes::ToolRoute};

/// An MCP App's HTML interface: a `ui://` resource, its HTML given as text or read from a file
/// at each `resources/read` (so that an edit shows without a restart).
#[derive(Debug, Clone)]
pub struct UiResource {
    resource: Resource,
    source: Source,
    ui: McpUiResourceMeta,
}

#[derive(Debug, Clone)]
enum Source {
    Html(Arc<str>),
    File(PathBuf),
}

impl UiResource {
    /// The interface at `uri` (`ui://…`), with this HTML.
    pub fn html(uri: impl Into<String>, html: impl Into<String>) -> Self {
        Self::new(uri.into(), Source::Html(html.into().into()))
    }

    /// The interface at `uri` (`ui://…`), read from the file at `path` when a host reads it.
    pub fn file(uri: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        Self::new(uri.into(), Source::File(path.into()))
    }

    fn new(uri: String, source: Source) -> Self {
        let name = uri.rsplit('/').find(|segment| !segment.is_empty()).unwrap_or(&uri).to_owned();
        let resource = Resource { name, uri, mime_type: Some(apps::MIME_TYPE.to_owned()), ..Default::default() };
        UiResource { resource, source, ui: McpUiResourceMeta::default() }
    }

    /// The resource's name in `resources/list` (default: the URI's last segment).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.resource.name = name.into();
        self
    }

    /// A human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.resource.title = Some(title.into());
        self
    }

    /// What the interface shows.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.resource.description = Some(description.into());
        self
    }

    /// The origins the interface may load from or connect to (the host's CSP for its iframe;
    /// without one, none).
    pub fn csp(mut self, csp: McpUiResourceCsp) -> Self {
        self.ui.csp = Some(csp);
        self
    }

    /// The browser permissions the interface asks for (camera, microphone, ...).
    pub fn permissions(mut self, permissions: McpUiResourcePermissions) -> Self {
        self.ui.permissions = Some(permissions);
        self
    }

    /// A dedicated origin for the interface, for hosts that give each app its own.
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.ui.domain = Some(domain.into());
        self
    }

    /// Whether the host should draw a border around the interface.
    pub fn prefers_border(mut self, prefers_border: bool) -> Self {
        self.ui.prefers_border = Some(prefers_border);
        self
    }

    /// The URI hosts read it at.
    pub fn uri(&self) -> &str {
        &self.resource.uri
    }

    /// The `_meta` of the listing and of the contents: `{"ui": {csp, permissions, ...}}` when any
    /// is set.
    fn meta(&self) -> Option<JsonObject> {
        match serde_json::to_value(&self.ui) {
            Ok(Value::Object(ui)) if !ui.is_empty() => {
                Some([(apps::META_KEY.to_owned(), Value::Object(ui))].into_iter().collect())
            }
            _ => None,
        }
    }

    /// The resource route that serves it; an error names what is wrong with the URI.
    fn into_route(self) -> Result<ResourceRoute, String> {
        let uri = self.resource.uri.clone();
        if !uri.starts_with(apps::URI_SCHEME) || uri.len() == apps::URI_SCHEME.len() {
            return Err(format!("UI resource `{uri}` must be a `{}` URI", apps::URI_SCHEME));
        }
        let meta = self.meta();
        let mut resource = self.resource;
        resource.meta = meta.clone();
        let source = self.source;
        Ok(ResourceRoute::new(resource, move |_ctx, uri| {
            let source = source.clone();
            let meta = meta.clone();
            async move {
                let html = match &source {
                    Source::Html(html) => html.to_string(),
                    Source::File(path) => tokio::fs::read_to_string(path).await.map_err(|e| {
                        Error::internal(format!("UI resource `{uri}`: reading {}: {e}", path.display()))
                    })?,
                };
                let contents = TextResourceContents {
                    uri,
                    text: html,
                    mime_type: Some(apps::MIME_TYPE.to_owned()),
                    meta,
                    ..Default::default()
                };
                Ok(vec![contents.into()])
            }
        }))
    }
}

/// The routes that serve `resources`; an error names a malformed URI, or a tool of `tools` that
/// links to an interface none of them serves.
pub(crate) fn routes(resources: Vec<UiResource>, tools: &[ToolRoute]) -> Result<Vec<ResourceRoute>, String> {
    let uris: HashSet<&str> = resources.iter().map(UiResource::uri).collect();
    for tool in tools.iter().map(ToolRoute::tool) {
        let Some(ui) = tool.meta.as_ref().and_then(apps::tool_meta) else { continue };
        let ui = ui.map_err(|e| format!("tool `{}`: `_meta.ui`: {e}", tool.name))?;
        if let Some(uri) = ui.resource_uri.filter(|uri| !uris.contains(uri.as_str())) {
            return Err(format!(
                "tool `{}` links to the UI resource `{uri}`, which is not registered (ServerBuilder::ui_resource)",
                tool.name
            ));
        }
    }
    resources.into_iter().map(UiResource::into_route).collect()
}
