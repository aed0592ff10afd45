//! The checks of a request's headers before anything else reads it: headers that must come
//! once, and the Host and Origin that DNS rebinding protection allows.

use super::*;

/// The headers the endpoint reads on every request, found in one pass over the request's headers
/// (a lookup by name hashes the name each time). Each is its first value, as `HeaderMap::get`
/// gives it; [`text`](Self::text) reads one as text.
#[derive(Default)]
pub(super) struct KnownHeaders<'a> {
    pub(super) accept: Option<&'a HeaderValue>,
    pub(super) host: Option<&'a HeaderValue>,
    pub(super) origin: Option<&'a HeaderValue>,
    pub(super) protocol_version: Option<&'a HeaderValue>,
    pub(super) method: Option<&'a HeaderValue>,
    pub(super) name: Option<&'a HeaderValue>,
    pub(super) session: Option<&'a HeaderValue>,
    /// The `Mcp-Param-*` headers: the `{Name}` part and the value.
    pub(super) params: Vec<(&'a str, &'a HeaderValue)>,
}

impl<'a> KnownHeaders<'a> {
    pub(super) fn of(headers: &'a HeaderMap) -> Self {
        let mut known = KnownHeaders::default();
        for (name, value) in headers {
            let slot = if name == header::ACCEPT {
                &mut known.accept
            } else if name == header::HOST {
                &mut known.host
            } else if name == header::ORIGIN {
                &mut known.origin
            } else if name == PROTOCOL_VERSION_HEADER {
                &mut known.protocol_version
            } else if name == METHOD_HEADER {
                &mut known.method
            } else if name == NAME_HEADER {
                &mut known.name
            } else if name == SESSION_HEADER {
                &mut known.session
            } else {
                if let Some(param) = name.as_str().strip_prefix("mcp-param-") {
                    known.params.push((param, value));
                }
                continue;
            };
            slot.get_or_insert(value);
        }
        known
    }

    /// A header's value as text, trimmed; `None` when absent or not visible ASCII.
    pub(super) fn text(value: Option<&'a HeaderValue>) -> Option<&'a str> {
        // Visible ASCII (`to_str`), so ASCII whitespace is all there is to trim.
        value?.to_str().ok().map(str::trim_ascii)
    }
}

/// A mirrored header (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`) that
/// appears more than once: a gateway reading another copy than this server would route or
/// authorize differently.
pub(super) fn repeated_mirror(headers: &HeaderMap) -> Option<&str> {
    if no_repeated_header(headers) {
        return None;
    }
    headers
        .keys()
        .find(|name| {
            mcp_types::http_headers::is_mirrored_header(name.as_str()) && headers.get_all(*name).iter().count() > 1
        })
        .map(|name| name.as_str())
}

/// `Host`, `Origin` or `Mcp-Session-Id` given more than once: this server reads the first, a proxy
/// in front of it may read another, and check or route differently.
pub(super) fn repeated_single(headers: &HeaderMap) -> Option<&'static str> {
    if no_repeated_header(headers) {
        return None;
    }
    [("Host", &header::HOST), ("Origin", &header::ORIGIN), ("Mcp-Session-Id", &SESSION_HEADER)]
        .into_iter()
        .find(|(_, name)| headers.get_all(*name).iter().nth(1).is_some())
        .map(|(shown, _)| shown)
}

/// Whether every header name appears once (as in almost every request): then no name needs to
/// be looked up again to find a second value.
fn no_repeated_header(headers: &HeaderMap) -> bool {
    headers.len() == headers.keys_len()
}

/// The 403 for a Host or Origin that is not allowed.
pub(super) fn host_refusal(check: &HostCheck, headers: &KnownHeaders<'_>) -> Option<Response> {
    let allowed: &[String] = match check {
        HostCheck::Disabled => return None,
        HostCheck::Loopback => &[],
        HostCheck::Allow(hosts) => hosts,
    };
    let ok = |host: &str| {
        let name = strip_port(host);
        matches!(name, "localhost" | "127.0.0.1" | "[::1]") || allowed.iter().any(|a| a.eq_ignore_ascii_case(name))
    };
    let host = KnownHeaders::text(headers.host).unwrap_or_default();
    if !ok(host) {
        return Some(error(StatusCode::FORBIDDEN, None, &format!("Host `{host}` is not allowed")));
    }
    if let Some(origin) = KnownHeaders::text(headers.origin) {
        let authority = origin.split_once("://").map_or(origin, |(_, rest)| rest);
        if !ok(authority.split('/').next().unwrap_or_default()) {
            return Some(error(StatusCode::FORBIDDEN, None, &format!("Origin `{origin}` is not allowed")));
        }
    }
    None
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}
