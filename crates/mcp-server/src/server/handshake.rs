//! The legacy handshake: `initialize` opens a session on the version both sides speak.

use super::*;

impl Server {
    /// Opens a legacy session: negotiates the version and answers `initialize`.
    pub(super) fn initialize_with(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        params: mcp_types::v2025_11_25::InitializeRequestParams,
    ) -> Outgoing {
        if session.is_initialized_legacy() {
            return Outgoing::error(Some(id), &ErrorObject::invalid_request("This session is already initialized"));
        }
        let requested = params.protocol_version.as_str();
        let version = if LEGACY_VERSIONS.contains(&requested) { requested } else { LEGACY_VERSIONS[0] };
        let capabilities = serde_json::to_value(&params.capabilities)
            .and_then(serde_json::from_value::<ClientCapabilities>)
            .unwrap_or_default();
        let client_info = serde_json::to_value(&params.client_info).ok().and_then(|v| serde_json::from_value(v).ok());
        session.opened(Some(version));
        session.update(|legacy| {
            legacy.version = Some(version.to_owned());
            legacy.client_capabilities = Arc::new(capabilities);
            legacy.client_info = client_info.map(Arc::new);
        });
        // Extensions such as tasks belong to 2026-07-28 and later; MCP Apps is served to hosts of
        // either era (declared in an `extensions` member 2025-11-25 does not define).
        let mut capabilities = self.inner.capabilities.clone();
        capabilities.extensions = capabilities
            .extensions
            .take()
            .map(|extensions| extensions.into_iter().filter(|(id, _)| id == APPS).collect::<BTreeMap<_, _>>())
            .filter(|extensions| !extensions.is_empty());
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": self.inner.info,
        });
        if let Some(instructions) = &self.inner.instructions {
            result["instructions"] = json!(instructions);
        }
        Outgoing::result(id, &result)
    }
}
