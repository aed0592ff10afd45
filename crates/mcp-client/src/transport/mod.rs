//! Transports: stdio (child process), Streamable HTTP, and the deprecated HTTP+SSE.

#[cfg(feature = "http")]
pub(crate) mod http;
#[cfg(feature = "http")]
pub(crate) mod lean;
#[cfg(feature = "http")]
pub(crate) mod legacy_sse;
pub(crate) mod request;
#[cfg(feature = "stdio")]
pub(crate) mod stdio;

use std::sync::Arc;

use serde_json::Value;

use crate::core::{Core, Reply};
use crate::error::Error;
use request::Outgoing;

/// Which transport a client talks over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportKind {
    /// A child process's stdin and stdout.
    Stdio,
    /// Streamable HTTP.
    StreamableHttp,
    /// The 2024-11-05 HTTP+SSE transport (deprecated).
    HttpSse,
}

pub(crate) enum Transport {
    #[cfg(feature = "stdio")]
    Stdio(stdio::StdioTransport),
    #[cfg(feature = "http")]
    Http(http::HttpTransport),
    #[cfg(feature = "http")]
    LegacySse(legacy_sse::LegacySseTransport),
}

impl Transport {
    pub fn kind(&self) -> TransportKind {
        match self {
            #[cfg(feature = "stdio")]
            Transport::Stdio(_) => TransportKind::Stdio,
            #[cfg(feature = "http")]
            Transport::Http(_) => TransportKind::StreamableHttp,
            #[cfg(feature = "http")]
            Transport::LegacySse(_) => TransportKind::HttpSse,
        }
    }

    /// Where requests go, for telemetry.
    pub fn peer(&self) -> Arc<crate::telemetry::Peer> {
        match self {
            #[cfg(feature = "stdio")]
            Transport::Stdio(_) => crate::telemetry::Peer::stdio(),
            #[cfg(feature = "http")]
            Transport::Http(t) => crate::telemetry::Peer::http(&t.inner.url),
            #[cfg(feature = "http")]
            Transport::LegacySse(t) => crate::telemetry::Peer::http(t.url()),
        }
    }

    /// A transport's exchange is boxed here (an HTTP one, with hyper's and reqwest's futures inside,
    /// runs to kilobytes), so that every future holding a request's (a call's, a proxy's relay)
    /// stays small and cheap to move.
    pub async fn request(&self, core: &Arc<Core>, out: Outgoing) -> Result<Reply, Error> {
        match self {
            #[cfg(feature = "stdio")]
            Transport::Stdio(t) => Box::pin(t.request(core, out)).await,
            #[cfg(feature = "http")]
            Transport::Http(t) => Box::pin(t.request(core, out)).await,
            #[cfg(feature = "http")]
            Transport::LegacySse(t) => Box::pin(t.request(core, out)).await,
        }
    }

    #[cfg_attr(not(feature = "http"), allow(unused_variables))]
    pub async fn notify(&self, message: Value, headers: Vec<request::Header>) -> Result<(), Error> {
        match self {
            #[cfg(feature = "stdio")]
            Transport::Stdio(t) => t.send(&message),
            #[cfg(feature = "http")]
            Transport::Http(t) => t.notify(&message, &headers).await,
            #[cfg(feature = "http")]
            Transport::LegacySse(t) => t.post(&message).await,
        }
    }

    pub async fn close(&self) {
        match self {
            #[cfg(feature = "stdio")]
            Transport::Stdio(t) => t.shutdown().await,
            #[cfg(feature = "http")]
            Transport::Http(t) => t.close().await,
            #[cfg(feature = "http")]
            Transport::LegacySse(t) => t.close(),
        }
    }
}
