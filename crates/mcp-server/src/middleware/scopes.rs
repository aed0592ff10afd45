//! OAuth scope checks on the middleware seam: the scopes routes declare
//! ([`ToolRoute::scopes`](crate::ToolRoute::scopes) and its siblings), checked before every
//! other layer, and [`RequireScopes`] for any others.

use super::*;

/// A layer that refuses a request whose caller's token lacks any of `scopes`, with
/// [`Error::InsufficientScope`] (over HTTP a `403` with an `insufficient_scope` challenge naming
/// these scopes and the server's own). A caller without a token (stdio, or HTTP without
/// authorization) is not checked: there is nothing to check it against.
///
/// ```
/// use mcp_server::middleware::RequireScopes;
/// use mcp_server::{NoArguments, ToolRoute};
///
/// let purge = ToolRoute::new("purge", |_ctx, _: NoArguments| async { Ok("purged") })
///     .layer(RequireScopes::new(["admin"]));
/// # let _ = purge;
/// ```
#[derive(Debug, Clone)]
pub struct RequireScopes {
    scopes: Arc<[String]>,
}

impl RequireScopes {
    /// Requires every one of `scopes`.
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(scopes: I) -> Self {
        RequireScopes { scopes: scopes.into_iter().map(Into::into).collect() }
    }
}

impl<S> Layer<S> for RequireScopes {
    type Service = ScopeCheck<S>;

    fn layer(&self, inner: S) -> ScopeCheck<S> {
        ScopeCheck { inner, needed: Needed::Fixed(Arc::clone(&self.scopes)) }
    }
}

/// The service of [`RequireScopes`], and of the check of the scopes routes declare.
#[derive(Debug, Clone)]
pub struct ScopeCheck<S> {
    inner: S,
    needed: Needed,
}

#[derive(Debug, Clone)]
enum Needed {
    Fixed(Arc<[String]>),
    /// What the request's tool, resource or prompt declares.
    Route,
}

/// The check of the scopes routes declare, outside every other layer of the server: a refused
/// call is answered before a limit counts it or a task is made of it.
pub(crate) fn route_scopes(inner: McpService) -> McpService {
    BoxCloneSyncService::new(ScopeCheck { inner, needed: Needed::Route })
}

impl<S> Service<McpRequest> for ScopeCheck<S>
where
    S: Service<McpRequest, Response = McpResponse>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = McpResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<McpResponse, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: McpRequest) -> Self::Future {
        let refusal = match &self.needed {
            Needed::Fixed(scopes) => lacking(request.principal(), scopes),
            Needed::Route => match &request.call {
                McpCall::Complete(params) => {
                    lacking(request.principal(), request.ctx.server().completion_scopes(&params.r#ref))
                }
                call => call.target().and_then(|target| {
                    lacking(request.principal(), request.ctx.server().scopes_for(request.method(), target))
                }),
            },
        };
        if let Some(refusal) = refusal {
            return Box::pin(std::future::ready(Err(Box::new(refusal) as BoxError)));
        }
        let response = self.inner.call(request);
        Box::pin(async move { response.await.map_err(Into::into) })
    }
}

/// The refusal of a caller whose token lacks some of `needed`; none without a token.
pub(crate) fn lacking(principal: &Principal, needed: &[String]) -> Option<Error> {
    let token = principal.token()?;
    needed.iter().any(|scope| !token.has_scope(scope)).then(|| Error::InsufficientScope(needed.to_vec()))
}
