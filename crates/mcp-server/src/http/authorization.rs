//! The resource server's side of a request (feature `auth`): who is calling, in a span of its
//! own, and the challenge of a request refused for a scope its token lacks.

use super::*;

/// The caller's principal from its token, in a span of its own (a child of the request's span,
/// when the request is a POST that has one); a refusal is counted, and recorded in both spans
/// with the HTTP status the caller gets.
pub(super) async fn authenticate(
    authorization: &crate::auth::ResourceServer,
    parts: &axum::http::request::Parts,
    remote: Option<std::net::IpAddr>,
    arrival: Option<&mut Arrival>,
) -> Result<Principal, Response> {
    let parent = arrival.as_ref().map_or_else(|| tracing::Span::current().id(), |arrival| arrival.span().id());
    let span = tracing::info_span!(
        target: crate::telemetry::TARGET,
        parent: parent,
        "mcp.authorization",
        otel.name = "authorization",
        otel.kind = "internal",
        otel.status_description = tracing::field::Empty,
        error.type = tracing::field::Empty,
        http.response.status_code = tracing::field::Empty,
    );
    let checked = authorization.authenticate(&parts.method, &parts.headers, remote);
    let checked = tracing::Instrument::instrument(checked, span.clone()).await;
    if let Err(challenge) = &checked {
        let status = challenge.status();
        let why = challenge.summary();
        span.record("error.type", status.to_string());
        span.record("http.response.status_code", status);
        span.record("otel.status_description", format!("HTTP {status}: {why}"));
        if let Some(arrival) = arrival {
            arrival.refused_http(status, &why);
        }
        crate::telemetry::refused("unauthorized");
    }
    checked.map_err(IntoResponse::into_response)
}

/// The 403 challenge for a request the server refused for a scope its token lacks: every scope
/// the request needs (the error's `data.requiredScopes`) with the server's own.
pub(super) fn scope_challenge(
    authorization: &crate::auth::ResourceServer,
    principal: &Principal,
    refusal: &Outgoing,
) -> Option<Response> {
    let message: Value = serde_json::from_str(&refusal.json).ok()?;
    let route = message.pointer("/error/data/requiredScopes")?.as_array()?;
    let mut needed = authorization.required_scopes().to_vec();
    for scope in route.iter().filter_map(Value::as_str) {
        if !needed.iter().any(|known| known == scope) {
            needed.push(scope.to_owned());
        }
    }
    crate::telemetry::refused("insufficient_scope");
    authorization.check_scopes(principal.token(), &needed).err().map(IntoResponse::into_response)
}
