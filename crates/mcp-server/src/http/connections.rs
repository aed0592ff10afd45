//! Accepting connections: the server-wide cap, each client's share of it, and the header read
//! timeout, applied by [`serve_router`] (and so by [`serve`](super::serve)).

use std::net::IpAddr;

use super::*;
use crate::shares::Shares;
use hyper::body::Incoming;
use tower::ServiceExt as _;

/// What [`serve_router`] limits, taken from the [`HttpConfig`] the router was made with.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ConnectionLimits {
    /// See [`HttpConfig::max_connections`].
    pub max_connections: usize,
    /// See [`HttpConfig::max_connections_per_client`].
    pub max_connections_per_client: usize,
    /// See [`HttpConfig::header_read_timeout`].
    pub header_read_timeout: Duration,
}

impl From<&HttpConfig> for ConnectionLimits {
    fn from(config: &HttpConfig) -> Self {
        ConnectionLimits {
            max_connections: config.max_connections,
            max_connections_per_client: config.max_connections_per_client,
            header_read_timeout: config.header_read_timeout,
        }
    }
}

/// Written to a connection refused for its address's share, before it is closed: nothing of it
/// is read, so an attacker's refused connections cost one write each.
const SHARE_FULL: &[u8] = b"HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\nContent-Type: text/plain\r\n\
Content-Length: 87\r\n\r\nThis address holds its share of connections (HttpConfig::max_connections_per_client).\r\n";

/// Serves `app` (a [`router`] with layers of the application's own, an authentication layer
/// that inserts the [`Principal`] for instance) until `shutdown` completes, with the limits
/// [`serve_with_shutdown`] applies (`ConnectionLimits::from(&config)` of the router's config).
///
/// At most `max_connections` connections are served at once: further ones wait in the listen
/// backlog. One remote address holds at most `max_connections_per_client` of them: a further
/// connection from it is answered 429 and closed at once, so that one client reconnecting
/// slowly cannot take every slot. Each connection must send its request headers within
/// `header_read_timeout`.
pub async fn serve_router(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_connections(listener, limits, shutdown, move |remote| {
        // The remote address, as axum's `into_make_service_with_connect_info` would give it: the
        // per-client shares of sessions and streams read it. Inserted into each request rather
        // than layered onto a copy of the router, which would wrap (and box) every route again.
        hyper_util::service::TowerToHyperService::new(app.clone().into_service::<Incoming>().map_request(
            move |mut request: Request<Incoming>| {
                request.extensions_mut().insert(ConnectInfo(remote));
                request
            },
        ))
    })
    .await
}

/// [`serve_router`] for a router nothing was layered onto: a request for the endpoint's path
/// goes straight to the endpoint, without the router's matching and boxed futures; any other
/// path (the authorization metadata) goes through the router.
pub(super) async fn serve_endpoint_direct(
    listener: TcpListener,
    app: Router,
    shared: Arc<Shared>,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use futures::FutureExt as _;
    use futures::future::Either;

    serve_connections(listener, limits, shutdown, move |remote| {
        let (app, shared) = (app.clone(), Arc::clone(&shared));
        hyper::service::service_fn(move |mut request: Request<Incoming>| {
            if request.uri().path() == shared.config.path {
                let serving = serve_request(Arc::clone(&shared), request.map(Body::new), Some(remote.ip()));
                Either::Left(serving.map(Ok::<_, Infallible>))
            } else {
                request.extensions_mut().insert(ConnectInfo(remote));
                Either::Right(app.clone().oneshot(request))
            }
        })
    })
    .await
}

/// Accepts connections within `limits` until `shutdown` completes, serving each with the
/// service `service_for` makes for its remote address.
async fn serve_connections<S>(
    listener: TcpListener,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
    service_for: impl Fn(SocketAddr) -> S,
) -> std::io::Result<()>
where
    S: hyper::service::Service<Request<Incoming>, Response = Response, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
{
    use hyper_util::rt::{TokioIo, TokioTimer};

    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let shares: Arc<Shares<IpAddr>> = Arc::default();
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors, or a connection reset before it was accepted: retry.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(share) = shares.admit(remote.ip(), limits.max_connections_per_client) else {
            drop(slot);
            let _ = stream.try_write(SHARE_FULL);
            tracing::debug!(%remote, "connection refused: its address holds its share");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let connection = graceful.watch(http1.serve_connection(TokioIo::new(stream), service_for(remote)));
        let connection = super::self_wake::RepollOnSelfWake::new(connection);
        tokio::spawn(async move {
            let _held = (slot, share);
            if let Err(error) = connection.await {
                tracing::trace!(%error, "connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::SHARE_FULL;

    #[test]
    fn the_refusal_is_a_complete_http_response() {
        let text = std::str::from_utf8(SHARE_FULL).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let length: usize = head.lines().find_map(|l| l.strip_prefix("Content-Length: ")).unwrap().parse().unwrap();
        assert_eq!(body.len(), length, "{text}");
    }
}
