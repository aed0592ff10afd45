//! The gateway's own metrics (feature `otel`), from the process's global meter provider
//! (`mcp_server::otel::init` sets it): `mcp.gateway.upstream.duration`, a histogram of every
//! request sent to an upstream, by `mcp.gateway.upstream`, `mcp.method.name` and, when it
//! failed, `error.type` (the JSON-RPC code); and `mcp.gateway.upstream.up`, a
//! gauge of 1 or 0 per upstream; `mcp.gateway.ownership.refused`, a counter of entries (and
//! resource updates) of an upstream refused because another owns them, by `kind` and upstream. The requests the gateway serves downstream and those its
//! clients send have mcp-server's and mcp-client's metrics besides.

#[cfg(feature = "otel")]
mod enabled {
    use std::sync::{Arc, OnceLock};
    use std::time::Instant;

    use mcp_server::Error;
    use opentelemetry::KeyValue;
    use opentelemetry::metrics::Histogram;

    use crate::upstream::Upstream;

    /// The bucket boundaries the MCP semantic conventions give for durations, in seconds.
    const DURATION_BUCKETS: [f64; 14] =
        [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

    fn duration() -> &'static Histogram<f64> {
        static DURATION: OnceLock<Histogram<f64>> = OnceLock::new();
        DURATION.get_or_init(|| {
            opentelemetry::global::meter("mcp-gateway")
                .f64_histogram("mcp.gateway.upstream.duration")
                .with_unit("s")
                .with_description("Duration of the requests the gateway sends its upstreams")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build()
        })
    }

    /// Times one upstream request.
    pub(crate) struct Timer {
        start: Instant,
        attributes: Vec<KeyValue>,
    }

    impl Timer {
        pub(crate) fn start(upstream: &str, method: &'static str) -> Timer {
            let attributes = vec![
                KeyValue::new("mcp.gateway.upstream", upstream.to_owned()),
                KeyValue::new("mcp.method.name", method),
            ];
            Timer { start: Instant::now(), attributes }
        }

        pub(crate) fn finish(mut self, error: Option<&Error>) {
            if let Some(error) = error {
                let kind = match error {
                    Error::Rpc(error) => error.code.to_string(),
                    Error::Failed(_) => "tool_error".to_owned(),
                    // Not a failure: the caller is asked, and the request goes on.
                    Error::InputRequired(_) => return self.record(),
                    Error::MissingCapability(_) => {
                        mcp_types::error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY.to_string()
                    }
                    Error::InsufficientScope(_) => "insufficient_scope".to_owned(),
                    _ => "other".to_owned(),
                };
                self.attributes.push(KeyValue::new("error.type", kind));
            }
            self.record();
        }

        fn record(self) {
            duration().record(self.start.elapsed().as_secs_f64(), &self.attributes);
        }
    }

    /// Counts one entry left out, or one resource update dropped, because another upstream owns
    /// it (`mcp.gateway.ownership.refused`, by `kind` and the refused upstream).
    pub(crate) fn refused(kind: &'static str, upstream: &str) {
        static REFUSED: OnceLock<opentelemetry::metrics::Counter<u64>> = OnceLock::new();
        let counter = REFUSED.get_or_init(|| {
            opentelemetry::global::meter("mcp-gateway")
                .u64_counter("mcp.gateway.ownership.refused")
                .with_description(
                    "Entries and resource updates of an upstream refused because another upstream owns them",
                )
                .build()
        });
        counter.add(1, &[KeyValue::new("kind", kind), KeyValue::new("mcp.gateway.upstream", upstream.to_owned())]);
    }

    /// Reports 1 for each connected upstream (of those `upstreams` gives: the ones in service),
    /// 0 for the others, whenever metrics are read.
    pub(crate) fn watch(upstreams: impl Fn() -> Vec<Arc<Upstream>> + Send + Sync + 'static) {
        // The callback stays registered with the meter provider once the instrument is built.
        opentelemetry::global::meter("mcp-gateway")
            .u64_observable_gauge("mcp.gateway.upstream.up")
            .with_description("1 while the gateway is connected to the upstream, else 0")
            .with_callback(move |observer| {
                for upstream in upstreams() {
                    let up = u64::from(upstream.up().is_ok());
                    observer.observe(up, &[KeyValue::new("mcp.gateway.upstream", upstream.name().to_owned())]);
                }
            })
            .build();
    }
}

#[cfg(feature = "otel")]
pub(crate) use enabled::{Timer, refused, watch};

#[cfg(not(feature = "otel"))]
mod disabled {
    /// Without the `otel` feature, nothing is measured.
    pub(crate) struct Timer;

    impl Timer {
        pub(crate) fn start(_upstream: &str, _method: &'static str) -> Timer {
            Timer
        }

        pub(crate) fn finish(self, _error: Option<&mcp_server::Error>) {}
    }

    pub(crate) fn watch(
        _upstreams: impl Fn() -> Vec<std::sync::Arc<crate::upstream::Upstream>> + Send + Sync + 'static,
    ) {
    }

    pub(crate) fn refused(_kind: &'static str, _upstream: &str) {}
}

#[cfg(not(feature = "otel"))]
pub(crate) use disabled::{Timer, refused, watch};
