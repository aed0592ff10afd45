//! The resource server's check of the scopes a request's tool, resource or prompt needs, which
//! reads the body (feature `auth`).

use super::*;

/// The caller's principal from its token, in a span of its own; a refusal is counted.
pub(super) async fn authenticate(
    authorization: &crate::auth::ResourceServer,
    parts: &axum::http::request::Parts,
) -> Result<Principal, Response> {
    let span = tracing::info_span!(
        target: crate::telemetry::TARGET,
        "mcp.authorization",
        otel.name = "authorization",
        otel.kind = "internal",
        error.type = tracing::field::Empty,
    );
    let checked = authorization.authenticate(&parts.method, &parts.headers);
    let checked = tracing::Instrument::instrument(checked, span.clone()).await;
    if checked.is_err() {
        span.record("error.type", "unauthorized");
        crate::telemetry::refused("unauthorized");
    }
    checked.map_err(IntoResponse::into_response)
}

/// The 403 for a request naming a tool, resource or prompt whose scopes the token lacks. Every
/// message of the body is checked (a batch too); what cannot be read here is read as the server
/// reads it (a `Value`, the last of repeated members winning), so that nothing it would serve
/// escapes the check.
pub(super) fn check_route_scopes(
    server: &Server,
    authorization: &crate::auth::ResourceServer,
    principal: &Principal,
    bytes: &[u8],
) -> Result<(), crate::auth::Challenge> {
    #[derive(serde::Deserialize)]
    struct Target<'a> {
        #[serde(default, borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
        #[serde(default, borrow)]
        params: Option<TargetParams<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct TargetParams<'a> {
        #[serde(default, borrow)]
        name: Option<std::borrow::Cow<'a, str>>,
        #[serde(default, borrow)]
        uri: Option<std::borrow::Cow<'a, str>>,
    }
    let check = |method: &str, target: &str| {
        let route = server.scopes_for(method, target);
        if route.is_empty() {
            return Ok(());
        }
        let mut needed = authorization.required_scopes().to_vec();
        for scope in route {
            if !needed.contains(scope) {
                needed.push(scope.clone());
            }
        }
        authorization.check_scopes(principal.token(), &needed)
    };
    let target_of = |method: &str, name: Option<&str>, uri: Option<&str>| match method {
        "resources/read" | "resources/subscribe" => uri.map(str::to_owned),
        _ => name.map(str::to_owned),
    };
    let fast: Option<Vec<Target<'_>>> = if bytes.trim_ascii_start().starts_with(b"[") {
        serde_json::from_slice(bytes).ok()
    } else {
        serde_json::from_slice(bytes).ok().map(|one| vec![one])
    };
    if let Some(targets) = fast {
        for Target { method, params } in targets {
            let (Some(method), Some(params)) = (method, params) else { continue };
            if let Some(target) = target_of(&method, params.name.as_deref(), params.uri.as_deref()) {
                check(&method, &target)?;
            }
        }
        return Ok(());
    }
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else { return Ok(()) };
    let messages = match value {
        Value::Array(messages) => messages,
        message => vec![message],
    };
    for message in &messages {
        let Some(method) = message.get("method").and_then(Value::as_str) else { continue };
        let params = message.get("params");
        let field = |name: &str| params.and_then(|p| p.get(name)).and_then(Value::as_str);
        if let Some(target) = target_of(method, field("name"), field("uri")) {
            check(method, &target)?;
        }
    }
    Ok(())
}
