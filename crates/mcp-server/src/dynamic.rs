//! Tools that change while the server runs: a proxy's upstream tools, a plugin host's plugins.
//! A [`ToolSource`] is listed after the server's own routes and called for every name none of
//! them has; [`Server::notify_tools_list_changed`](crate::Server::notify_tools_list_changed) tells
//! clients when its list changes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcp_types::{CallToolRequestParams, CallToolResult, Tool};

use crate::{Context, Error};

/// What [`ToolSource::call`] returns.
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<CallToolResult, Error>> + Send>>;

/// Tools the server does not know when it is built ([`ServerBuilder::tool_source`](crate::ServerBuilder::tool_source)).
///
/// The source checks its own arguments (the server has no schema of its own for them) and its
/// calls do not become tasks. A name that is also a route's goes to the route.
///
/// ```
/// use std::sync::Arc;
/// use mcp_server::dynamic::{ToolFuture, ToolSource};
/// use mcp_server::types::{CallToolRequestParams, ObjectSchema, Tool};
/// use mcp_server::{Context, Error, Server, text_result};
///
/// /// One tool per name in the list, each answering its own name.
/// struct Named(Vec<String>);
///
/// impl ToolSource for Named {
///     fn tools(&self) -> Arc<[Tool]> {
///         self.0.iter().map(|name| Tool::new(ObjectSchema::default(), name)).collect()
///     }
///
///     fn call(&self, _ctx: Context, params: CallToolRequestParams) -> ToolFuture {
///         let known = self.0.contains(&params.name);
///         Box::pin(async move {
///             match known {
///                 true => Ok(text_result(params.name)),
///                 false => Err(Error::invalid_params(format!("Unknown tool: {}", params.name))),
///             }
///         })
///     }
/// }
///
/// let server = Server::builder("plugins", "1.0.0").tool_source(Arc::new(Named(vec!["a".into()]))).build().unwrap();
/// assert!(server.capabilities().tools.is_some());
/// ```
pub trait ToolSource: Send + Sync + 'static {
    /// The tools as they are now, in the order they are listed.
    fn tools(&self) -> Arc<[Tool]>;

    /// Calls the tool `params.name` (one no route of the server has). A name the source does not
    /// have is its to refuse, as `Error::invalid_params("Unknown tool: …")` does.
    fn call(&self, ctx: Context, params: CallToolRequestParams) -> ToolFuture;
}
