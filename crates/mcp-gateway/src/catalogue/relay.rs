//! A call passed on as its caller wrote it (`ToolSource::relay`): routed as any call, sent to a
//! 2026-07-28 upstream with its arguments as text (`Client::relay_tool_call`), its result back as
//! the upstream's text.

use std::sync::Arc;

use mcp_server::Error;
use mcp_server::dynamic::ToolSource as _;
use mcp_server::dynamic::{RelayCall, RelayFuture, Relayed};
use serde_json::value::RawValue;

use super::{Catalogue, Forward, access, slot, upstream_error};

impl Catalogue {
    /// The relayed call: only over the gateway's own connection to a 2026-07-28 upstream (HTTP or
    /// stdio); anything else, and whatever the relay gives back, goes the usual way (`answer`).
    pub(super) fn relayed(&self, call: RelayCall<'_>) -> RelayFuture {
        let again = || -> RelayFuture { Box::pin(std::future::ready(Ok(Relayed::Again))) };
        // Asked again: a reload may have brought rules since the server asked.
        if !self.relays() {
            return again();
        }
        let index = Arc::clone(&self.index.read().expect("not poisoned"));
        let listing = (&index.tools, &index.policed.tools);
        let (upstream, own) = match self.route_for(call.principal, listing, access::TOOL, "tools/call", call.name, None)
        {
            Ok(route) => route,
            Err(error) => return Box::pin(std::future::ready(Err(error))),
        };
        if upstream.config.openapi.is_some()
            || upstream.config.identity != crate::config::Identity::Gateway
            || upstream.chose_legacy()
        {
            return again();
        }
        let lease = match upstream.lease() {
            Ok(lease) if lease.client.can_relay(&own) => lease,
            _ => return again(),
        };
        let arguments = call.arguments.map(RawValue::to_owned);
        let capabilities = call.client_capabilities.clone();
        let forward = Forward::new(&upstream, "tools/call", &own);
        Box::pin(forward.relay(async move {
            let _slot = slot(&upstream).await?;
            let crate::upstream::Lease { client, in_flight: _in_flight } = lease;
            let timeout = Some(upstream.config.timeout());
            match client.relay_tool_call(&own, arguments.as_deref(), &capabilities, timeout).await {
                Ok(mcp_client::Relayed::Result(raw)) => Ok(Relayed::Result(raw)),
                Ok(mcp_client::Relayed::Again) => Ok(Relayed::Again),
                Err(error) => {
                    let what = format!("the call to {own}");
                    // A refusal to ask the caller in this era: as the usual way takes it
                    // (`Catalogue::bridged`), which then sends the call in the legacy era once.
                    let Some(asked) = crate::era::refused_input(&error) else {
                        return Err(upstream_error(&upstream, &what, error));
                    };
                    match upstream.config.era {
                        crate::config::Era::Auto => {
                            Box::pin(upstream.choose_legacy(asked)).await.map_err(Error::internal)?;
                            Ok(Relayed::Again)
                        }
                        crate::config::Era::Modern => Err(crate::era::pinned_modern(upstream.name(), asked, &error)),
                        crate::config::Era::Legacy => Err(upstream_error(&upstream, &what, error)),
                    }
                }
            }
        }))
    }
}
