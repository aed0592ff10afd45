//! MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865) on the client: a host that renders apps
//! declares the extension with the MIME types it renders ([`Handlers::apps`](crate::Handlers::apps)),
//! finds a tool's interface in its `_meta.ui` ([`Client::tool_ui`]) and reads it
//! ([`Client::read_ui_resource`]): the HTML, and the CSP and permissions the app asks for. The
//! app protocol itself (`ui/initialize`, `ui/notifications/tool-result`, ...) runs between the
//! host and the app's iframe: its messages are `mcp_types::ext::apps::McpUi*`.

use mcp_types::ext::apps::{self, McpUiResourceMeta, McpUiToolMeta};
use mcp_types::{ReadResourceResultContentsItem, Tool};

use super::Client;
use crate::error::Error;

/// An MCP App's interface as read from the server.
#[derive(Debug, Clone, PartialEq)]
pub struct UiResourceContents {
    /// The `ui://` URI it was read at.
    pub uri: String,
    /// The HTML document.
    pub html: String,
    /// What the app asks the host for (`_meta.ui` of the contents, else of the listing).
    pub meta: McpUiResourceMeta,
}

impl Client {
    /// The tool's `_meta.ui` (its interface and who may call it), when it names one; an error when
    /// it is not of the extension's shape.
    pub fn tool_ui(tool: &Tool) -> Option<Result<McpUiToolMeta, Error>> {
        let ui = apps::tool_meta(tool.meta.as_ref()?)?;
        Some(ui.map_err(|e| Error::Protocol(format!("tool `{}`: `_meta.ui`: {e}", tool.name))))
    }

    /// Reads the MCP App interface at `uri`: refused unless the server answers with one text
    /// contents of MIME type `text/html;profile=mcp-app` (an HTML document the host renders in a
    /// sandboxed iframe, with the CSP that `meta.csp` asks for).
    pub async fn read_ui_resource(&self, uri: &str) -> Result<UiResourceContents, Error> {
        let result = self.read_resource(uri).await?;
        let contents = result.contents.into_iter().find_map(|item| match item {
            ReadResourceResultContentsItem::TextResourceContents(text) if text.uri == uri => Some(text),
            _ => None,
        });
        let Some(contents) = contents else {
            return Err(Error::Protocol(format!("UI resource `{uri}`: the server returned no text contents for it")));
        };
        if contents.mime_type.as_deref() != Some(apps::MIME_TYPE) {
            return Err(Error::Protocol(format!(
                "UI resource `{uri}`: MIME type {:?}, not `{}`",
                contents.mime_type.as_deref().unwrap_or("(none)"),
                apps::MIME_TYPE
            )));
        }
        let meta = match contents.meta.as_ref().and_then(apps::resource_meta) {
            Some(meta) => meta.map_err(|e| Error::Protocol(format!("UI resource `{uri}`: `_meta.ui`: {e}")))?,
            None => McpUiResourceMeta::default(),
        };
        Ok(UiResourceContents { uri: contents.uri, html: contents.text, meta })
    }
}
