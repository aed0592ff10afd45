//! Which era and version a connection speaks: probing with `server/discover`, the legacy
//! `initialize` handshake, and the fallback to the 2024-11-05 HTTP+SSE transport.

use std::time::{Duration, Instant};

use mcp_types::{DiscoverResult, JsonObject, ServerCapabilities, error_codes};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::cache::ttl_of;
use super::era::{Era, EraPreference};
use super::results::{decode, server_info_of, supported_versions};
use super::{Call, Client};
use crate::core::Answer;
use crate::error::Error;
use crate::transport::{Transport, TransportKind};

impl Client {
    pub(super) async fn negotiate(&self) -> Result<(), Error> {
        let preferred_legacy = self.inner.config.legacy_versions.first().cloned();
        let preferred_modern = self.inner.config.modern_versions.first().cloned();
        match self.inner.config.era {
            EraPreference::Legacy => {
                let version =
                    preferred_legacy.ok_or_else(|| Error::transport("no legacy protocol version configured"))?;
                self.initialize(&version).await
            }
            EraPreference::Modern => {
                let version =
                    preferred_modern.ok_or_else(|| Error::transport("no modern protocol version configured"))?;
                match self.probe(&version, self.inner.config.request_timeout).await {
                    Ok(Probe::Modern) => Ok(()),
                    Ok(Probe::Legacy(_)) => {
                        // Pinned to modern: the server's discover failed, but requests may still
                        // work (discover is optional for clients).
                        tracing::warn!("server/discover failed; continuing with {version} as configured");
                        Ok(())
                    }
                    Ok(Probe::LegacyVersion(offered)) => Err(Error::VersionMismatch { requested: version, offered }),
                    Err(e) => Err(e),
                }
            }
            EraPreference::Auto => {
                let Some(version) = preferred_modern else {
                    let version = preferred_legacy.ok_or_else(|| Error::transport("no protocol version configured"))?;
                    return self.initialize(&version).await;
                };
                let is_stdio = self.transport().kind() == TransportKind::Stdio;
                #[cfg(feature = "stdio")]
                if is_stdio {
                    return self.negotiate_stdio(version, preferred_legacy).await;
                }
                let legacy_version = match self.probe(&version, self.inner.config.request_timeout).await? {
                    Probe::Modern => return Ok(()),
                    Probe::LegacyVersion(offered) => match self.pick_legacy(&offered) {
                        Some(v) => v,
                        None => return Err(Error::VersionMismatch { requested: version, offered }),
                    },
                    Probe::Legacy(_) => preferred_legacy
                        .clone()
                        .ok_or_else(|| Error::VersionMismatch { requested: version.clone(), offered: Vec::new() })?,
                };
                #[cfg(feature = "stdio")]
                if let Transport::Stdio(stdio) = &*self.transport()
                    && !stdio.is_alive()
                {
                    tracing::debug!("the server exited after the probe; restarting it for initialize");
                    stdio.restart(&self.inner.core).await?;
                }
                match self.initialize(&legacy_version).await {
                    #[cfg(feature = "http")]
                    Err(Error::HttpStatus { status: 400 | 404 | 405, .. }) if !is_stdio => {
                        self.fall_back_to_http_sse(&legacy_version).await
                    }
                    other => other,
                }
            }
        }
    }

    /// Auto negotiation over stdio (the spec's stdio backward-compatibility rules): probe with
    /// `server/discover`; a `DiscoverResult` or a recognized modern error means modern, any other
    /// error or no answer in time means legacy, so `initialize`. The wait for an answer counts from
    /// the server's first output (start-up is not silence), and the probe stays pending while
    /// `initialize` is under way: a late `DiscoverResult`, or an `initialize` refused with -32022
    /// and a modern `supported` list, makes the connection modern instead of failing it.
    #[cfg(feature = "stdio")]
    async fn negotiate_stdio(&self, version: String, preferred_legacy: Option<String>) -> Result<(), Error> {
        // Polled in this task, probe first (`biased`): when both answers have arrived, the one the
        // server sent first (its DiscoverResult) wins.
        let probe = self.probe(&version, self.inner.config.request_timeout);
        tokio::pin!(probe);
        let answered = tokio::select! {
            biased;
            outcome = &mut probe => Some(outcome?),
            () = self.legacy_deadline() => None,
        };
        let legacy_version = match &answered {
            Some(Probe::Modern) => return Ok(()),
            Some(Probe::LegacyVersion(offered)) => match self.pick_legacy(offered) {
                Some(v) => v,
                None => return Err(Error::VersionMismatch { requested: version.clone(), offered: offered.clone() }),
            },
            Some(Probe::Legacy(_)) | None => preferred_legacy
                .ok_or_else(|| Error::VersionMismatch { requested: version.clone(), offered: Vec::new() })?,
        };
        if let Transport::Stdio(stdio) = &*self.transport()
            && !stdio.is_alive()
        {
            tracing::debug!("the server exited after the probe; restarting it for initialize");
            stdio.restart(&self.inner.core).await?;
        }
        let mut pending = answered.is_none();
        if pending {
            tracing::debug!("no answer to server/discover in time; trying initialize, still listening for it");
        }
        let initialize = self.initialize(&legacy_version);
        tokio::pin!(initialize);
        let outcome = loop {
            tokio::select! {
                biased;
                outcome = &mut probe, if pending => {
                    pending = false;
                    if let Ok(Probe::Modern) = outcome {
                        // A late DiscoverResult (or modern error): modern after all.
                        return Ok(());
                    }
                }
                outcome = &mut initialize => break outcome,
            }
        };
        let Err(Error::Rpc { error, .. }) = &outcome else { return outcome };
        let offered = supported_versions(error);
        let Some(modern) =
            (error.code == error_codes::UNSUPPORTED_PROTOCOL_VERSION).then(|| self.pick_modern(&offered)).flatten()
        else {
            return outcome;
        };
        // A modern server refused the handshake: its DiscoverResult is likely on its way.
        if pending
            && let Ok(Ok(Probe::Modern)) = tokio::time::timeout(self.inner.config.probe_timeout, &mut probe).await
        {
            return Ok(());
        }
        self.settle_modern(modern, None);
        self.inner.state.write().unwrap().supported_versions = offered;
        Ok(())
    }

    /// When the stdio probe gives up: `probe_timeout` after the server's first output, or after
    /// `startup_timeout` if it shows no sign of life.
    #[cfg(feature = "stdio")]
    async fn legacy_deadline(&self) {
        let first_output = match &*self.transport() {
            Transport::Stdio(stdio) => Some(stdio.first_output()),
            #[allow(unreachable_patterns)]
            _ => None,
        };
        if let Some(first_output) = first_output {
            let _ = tokio::time::timeout(self.inner.config.startup_timeout, first_output).await;
        }
        tokio::time::sleep(self.inner.config.probe_timeout).await;
    }

    /// Sends `server/discover` with `version`; settles the era when the answer is modern.
    async fn probe(&self, version: &str, timeout: Duration) -> Result<Probe, Error> {
        let mut version = version.to_owned();
        for _ in 0..2 {
            let mut call = Call::new(self, "server/discover", JsonObject::new());
            call.timeout = Some(timeout);
            call.cancel_on_drop = false;
            call.era_override = Some((Era::Modern, version.clone()));
            let outcome = self.send(&call, self.inner.core.next_id()).await.map(Answer::into_raw);
            let error = match outcome {
                Ok(result) => {
                    let discovered: DiscoverResult = decode("server/discover", &result)?;
                    let offered = discovered.supported_versions.clone();
                    let chosen =
                        if offered.contains(&version) { Some(version.clone()) } else { self.pick_modern(&offered) };
                    let Some(chosen) = chosen else {
                        return Ok(Probe::LegacyVersion(offered));
                    };
                    self.settle_modern(chosen, Some((&result, discovered)));
                    return Ok(Probe::Modern);
                }
                Err(e) => e,
            };
            let Error::Rpc { error: rpc, http_status, .. } = &error else {
                return match error {
                    // No answer in time, or the server died on the probe: legacy (stdio).
                    Error::Timeout { .. } | Error::Closed | Error::Protocol(_)
                        if self.transport().kind() == TransportKind::Stdio =>
                    {
                        Ok(Probe::Legacy(error))
                    }
                    // 4xx without a recognized modern body: legacy (HTTP).
                    Error::HttpStatus { status, .. }
                        if (400..500).contains(&status) && status != 401 && status != 403 =>
                    {
                        Ok(Probe::Legacy(error))
                    }
                    other => Err(other),
                };
            };
            match rpc.code.as_i64().unwrap_or_default() {
                error_codes::UNSUPPORTED_PROTOCOL_VERSION => {
                    let offered = supported_versions(rpc);
                    match self.pick_modern(&offered) {
                        Some(v) => {
                            self.inner.state.write().unwrap().supported_versions = offered;
                            version = v;
                            continue;
                        }
                        None => return Ok(Probe::LegacyVersion(offered)),
                    }
                }
                error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY | error_codes::HEADER_MISMATCH => {
                    self.settle_modern(version, None);
                    return Ok(Probe::Modern);
                }
                // An unknown method with 404 is a modern server's answer: never fall back.
                error_codes::METHOD_NOT_FOUND if *http_status == Some(404) => {
                    self.settle_modern(version, None);
                    return Ok(Probe::Modern);
                }
                _ => return Ok(Probe::Legacy(error)),
            }
        }
        // The server refused the version it offered itself; take it as modern anyway.
        self.settle_modern(version, None);
        Ok(Probe::Modern)
    }

    pub(super) fn settle_modern(&self, version: String, discovered: Option<(&RawValue, DiscoverResult)>) {
        let mut state = self.inner.state.write().unwrap();
        state.era = Era::Modern;
        state.protocol_version = version;
        if let Some((raw, result)) = discovered {
            state.server_info = server_info_of(raw);
            state.capabilities = (*result.capabilities).clone();
            state.instructions = result.instructions.clone();
            state.supported_versions = result.supported_versions.clone();
            if let Some(ttl) = ttl_of(raw) {
                *self.inner.discover_cache.lock().unwrap() = Some((Instant::now() + ttl, result));
            }
        }
    }

    /// The legacy handshake: `initialize`, then `notifications/initialized`.
    pub(super) async fn initialize(&self, version: &str) -> Result<(), Error> {
        #[cfg(feature = "http")]
        if let Transport::Http(http) = &*self.transport() {
            http.set_legacy(None);
        }
        let mut capabilities = serde_json::to_value(&self.inner.capabilities).unwrap_or_else(|_| json!({}));
        if capabilities.get("roots").is_some() {
            capabilities["roots"] = json!({"listChanged": false});
        }
        // Extensions (tasks) are declared per request on the modern era only; MCP Apps hosts of
        // 2025-11-25 declare theirs in an `extensions` member that revision does not define.
        if let Some(capabilities) = capabilities.as_object_mut() {
            if let Some(Value::Object(extensions)) = capabilities.get_mut("extensions") {
                extensions.retain(|id, _| id == mcp_types::ext::APPS);
            }
            if capabilities.get("extensions").and_then(Value::as_object).is_none_or(|e| e.is_empty()) {
                capabilities.remove("extensions");
            }
        }
        let params = json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "clientInfo": self.inner.config.client_info,
        });
        let Value::Object(params) = params else { unreachable!() };
        let mut call = Call::new(self, "initialize", params);
        call.cancel_on_drop = false;
        call.era_override = Some((Era::Legacy, version.to_owned()));
        let result = self.send(&call, self.inner.core.next_id()).await?.into_raw();
        let result: Value = serde_json::from_str(result.get()).map_err(|e| Error::protocol(e.to_string()))?;
        let Some(server_version) = result.get("protocolVersion").and_then(Value::as_str) else {
            return Err(Error::protocol("the initialize result has no protocolVersion"));
        };
        if !self.inner.config.legacy_versions.iter().any(|v| v == server_version) {
            return Err(Error::VersionMismatch {
                requested: version.to_owned(),
                offered: vec![server_version.to_owned()],
            });
        }
        let server_info = result.get("serverInfo");
        // Some non-official documentation nests `capabilities` inside `serverInfo`.
        let capabilities = result
            .get("capabilities")
            .or_else(|| server_info.and_then(|info| info.get("capabilities")))
            .cloned()
            .unwrap_or_else(|| json!({}));
        let capabilities = serde_json::from_value(capabilities).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "the server's capabilities are malformed; assuming none");
            ServerCapabilities::default()
        });
        {
            let mut state = self.inner.state.write().unwrap();
            state.era = Era::Legacy;
            state.protocol_version = server_version.to_owned();
            state.server_info = server_info.and_then(|info| serde_json::from_value(info.clone()).ok());
            state.capabilities = capabilities;
            state.instructions = result.get("instructions").and_then(Value::as_str).map(str::to_owned);
            state.supported_versions = vec![server_version.to_owned()];
            state.transport = self.transport().kind();
        }
        #[cfg(feature = "http")]
        if let Transport::Http(http) = &*self.transport() {
            http.set_legacy(Some(server_version.to_owned()));
        }
        self.notify("notifications/initialized").await?;
        #[cfg(feature = "http")]
        if let Transport::Http(http) = &*self.transport() {
            http.open_standalone_stream(&self.inner.core).await;
        }
        Ok(())
    }

    #[cfg(feature = "http")]
    async fn fall_back_to_http_sse(&self, version: &str) -> Result<(), Error> {
        let Transport::Http(http) = &*self.transport() else { unreachable!() };
        let (client, url, headers) = (http.inner.client.clone(), http.inner.url.clone(), http.inner.headers.clone());
        let service = http.inner.service.clone();
        tracing::debug!(%url, "falling back to the 2024-11-05 HTTP+SSE transport");
        let sse = crate::transport::legacy_sse::LegacySseTransport::connect(
            client,
            url,
            headers,
            service,
            &self.inner.core,
            self.inner.config.probe_timeout.max(Duration::from_secs(5)),
        )
        .await?;
        *self.inner.transport.write().unwrap() = std::sync::Arc::new(Transport::LegacySse(sse));
        self.initialize(version).await
    }

    // ---------------------------------------------------------------------------------------
    // Typed API
    // ---------------------------------------------------------------------------------------
}

enum Probe {
    Modern,
    /// A legacy server (with why the probe failed).
    Legacy(#[allow(dead_code)] Error),
    /// A modern server that offers only these (non-modern) versions.
    LegacyVersion(Vec<String>),
}
