//! One request sent to an upstream, in its span and timed (`Forward`).

use mcp_server::Error;
use mcp_server::dynamic::Relayed;

use crate::upstream::Upstream;

/// One request sent to an upstream: its span (`mcp.gateway.upstream`, inside the downstream
/// request's: which upstream, which method, and the upstream's own name for the target) and its
/// duration (`mcp.gateway.upstream.duration`, with the `otel` feature).
pub(super) struct Forward {
    span: tracing::Span,
    timer: crate::metrics::Timer,
}

impl Forward {
    pub(super) fn new(upstream: &Upstream, method: &'static str, target: &str) -> Forward {
        let span = tracing::info_span!("mcp.gateway.upstream", upstream = upstream.name(), method, target);
        Forward { span, timer: crate::metrics::Timer::start(upstream.name(), method) }
    }

    /// `request` in the span, timed.
    pub(super) fn run<T>(
        self,
        request: impl std::future::Future<Output = Result<T, Error>>,
    ) -> impl std::future::Future<Output = Result<T, Error>> {
        self.timed(request, |_| true)
    }

    /// `request` in the span, timed when `counts` says its outcome counts. A combinator rather
    /// than an `async fn`, which would keep the request's future twice in its state (as its
    /// argument, and as what it awaits) and copy it from one to the other.
    fn timed<T>(
        self,
        request: impl std::future::Future<Output = Result<T, Error>>,
        counts: fn(&Result<T, Error>) -> bool,
    ) -> impl std::future::Future<Output = Result<T, Error>> {
        let Forward { span, timer } = self;
        futures::FutureExt::map(tracing::Instrument::instrument(request, span), move |outcome| {
            if counts(&outcome) {
                timer.finish(outcome.as_ref().err());
            }
            outcome
        })
    }

    /// As [`Forward::run`], for a relayed call: one given back is timed by the usual way, which
    /// sends it, so that each call counts once.
    pub(super) fn relay(
        self,
        request: impl std::future::Future<Output = Result<Relayed, Error>>,
    ) -> impl std::future::Future<Output = Result<Relayed, Error>> {
        self.timed(request, |outcome| !matches!(outcome, Ok(Relayed::Again)))
    }
}
