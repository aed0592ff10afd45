//! The seam for the client's HTTP traffic (feature `http`): every HTTP request the client sends
//! to the MCP server (the POSTs, the event-stream GETs, the session DELETE, the deprecated
//! HTTP+SSE transport's requests) goes through one [`HttpService`], a tower service from
//! `reqwest::Request` to `reqwest::Response`. [`ClientBuilder::http_layer`] wraps it in
//! ordinary tower layers: headers, retries, timeouts, metrics, logging.
//!
//! The stack, from the outside in: the layers given to [`ClientBuilder::http_layer`], the
//! first one given outermost (as with `tower::ServiceBuilder`); then the OAuth layer when
//! `ClientBuilder::oauth` (feature `auth`) is set (innermost, so that its `Authorization` and
//! DPoP proof are made for the request as it finally goes out, and each retry of an outer layer
//! gets a fresh proof); then the sender: the `reqwest::Client` given to
//! [`ClientBuilder::http_client`], or by default, for an `http://` endpoint, hyper's kept
//! connections to it with its URI prepared once (no URL parsed per request), which answer with a
//! `reqwest::Response` as reqwest does, follow redirects as reqwest's default policy does, and
//! hand reqwest what they do not do themselves (a request with its own `timeout`, a streaming
//! body, an `https://` URL); for an `https://` endpoint, or one behind a proxy named in the
//! environment, `reqwest::Client::new()`. When that default sender is all there is (no layer, no
//! OAuth), the client's POSTs call it directly rather than through the boxed service, which
//! would add nothing.
//!
//! ```
//! use std::task::{Context, Poll};
//!
//! use mcp_client::layer::BoxError;
//!
//! /// Adds `x-tenant` to every request.
//! #[derive(Clone)]
//! struct Tenant<S>(S);
//!
//! impl<S> tower::Service<reqwest::Request> for Tenant<S>
//! where
//!     S: tower::Service<reqwest::Request, Response = reqwest::Response, Error = BoxError>,
//! {
//!     type Response = reqwest::Response;
//!     type Error = BoxError;
//!     type Future = S::Future;
//!
//!     fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
//!         self.0.poll_ready(cx)
//!     }
//!
//!     fn call(&mut self, mut request: reqwest::Request) -> Self::Future {
//!         request.headers_mut().insert("x-tenant", reqwest::header::HeaderValue::from_static("blue"));
//!         self.0.call(request)
//!     }
//! }
//!
//! let builder = mcp_client::Client::builder("my-app", "1.0.0")
//!     .http_layer(tower::layer::layer_fn(Tenant));
//! # let _ = builder;
//! ```
//!
//! [`ClientBuilder::http_layer`]: crate::ClientBuilder::http_layer
//! [`ClientBuilder::http_client`]: crate::ClientBuilder::http_client

use std::fmt;
use std::sync::Arc;

use tower::util::BoxCloneSyncService;
use tower::{Layer, Service, ServiceExt as _};

/// The error of an [`HttpService`]: any error, boxed (tower's convention). The client reports
/// it as [`Error::Transport`](crate::Error::Transport) with this error as its source, or as
/// [`Error::Auth`](crate::Error) when it is an OAuth failure.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The service the client sends its HTTP requests through, boxed so that any stack of layers
/// has this one type; clone it to send concurrently.
pub type HttpService = BoxCloneSyncService<reqwest::Request, reqwest::Response, BoxError>;

/// The innermost service: `client` sends the request.
pub(crate) fn reqwest_service(client: reqwest::Client) -> HttpService {
    BoxCloneSyncService::new(client.map_err(BoxError::from))
}

/// Boxes `service` into an [`HttpService`].
pub(crate) fn boxed<S>(service: S) -> HttpService
where
    S: Service<reqwest::Request, Response = reqwest::Response> + Clone + Send + Sync + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    BoxCloneSyncService::new(service.map_err(Into::into))
}

type WrapFn = dyn Fn(HttpService) -> HttpService + Send + Sync;

/// The layers given to [`ClientBuilder::http_layer`](crate::ClientBuilder::http_layer), in the
/// order given.
#[derive(Clone, Default)]
pub(crate) struct HttpLayers(Vec<Arc<WrapFn>>);

impl fmt::Debug for HttpLayers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} layer(s)", self.0.len())
    }
}

impl HttpLayers {
    pub(crate) fn push<L>(&mut self, layer: L)
    where
        L: Layer<HttpService> + Send + Sync + 'static,
        L::Service: Service<reqwest::Request, Response = reqwest::Response> + Clone + Send + Sync + 'static,
        <L::Service as Service<reqwest::Request>>::Error: Into<BoxError>,
        <L::Service as Service<reqwest::Request>>::Future: Send + 'static,
    {
        self.0.push(Arc::new(move |inner| boxed(layer.layer(inner))));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `inner` wrapped in every layer, the first one given outermost.
    pub(crate) fn wrap(&self, inner: HttpService) -> HttpService {
        self.0.iter().rev().fold(inner, |service, wrap| wrap(service))
    }
}
