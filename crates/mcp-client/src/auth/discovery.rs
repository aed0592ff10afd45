//! Finding the authorization server: the `WWW-Authenticate` challenge, Protected Resource
//! Metadata (RFC 9728) and authorization server metadata (RFC 8414, OpenID discovery).

use serde::Deserialize;
use url::Url;

use super::error::AuthError;

/// What a 401 or 403 said in its `Bearer` challenge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    pub resource_metadata: Option<String>,
    pub scope: Option<String>,
    pub error: Option<String>,
}

impl Challenge {
    pub fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }

    /// The challenge of the `WWW-Authenticate` header values: the `Bearer` one, else the
    /// first one.
    pub fn from_headers<'a>(values: impl IntoIterator<Item = &'a str>) -> Challenge {
        let challenges: Vec<(String, Vec<(String, String)>)> = values.into_iter().flat_map(parse_challenges).collect();
        let chosen =
            challenges.iter().find(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer")).or_else(|| challenges.first());
        let mut challenge = Challenge::default();
        for (name, value) in chosen.map(|(_, params)| params.as_slice()).unwrap_or_default() {
            match name.to_ascii_lowercase().as_str() {
                "resource_metadata" => challenge.resource_metadata = Some(value.clone()),
                "scope" => challenge.scope = Some(value.clone()),
                "error" => challenge.error = Some(value.clone()),
                _ => {}
            }
        }
        challenge
    }
}

/// Parses one `WWW-Authenticate` value (RFC 9110 §11.6.1) into challenges: a scheme followed
/// by `name=value` parameters, values being tokens or quoted strings.
fn parse_challenges(header: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut challenges: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut rest = header.trim();
    while !rest.is_empty() {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        let end = rest.find([' ', '\t', ',', '=']).unwrap_or(rest.len());
        let word = &rest[..end];
        let after = rest[end..].trim_start_matches([' ', '\t']);
        if word.is_empty() {
            break;
        }
        if let Some(value_part) = after.strip_prefix('=').filter(|v| !v.starts_with('=')) {
            // A parameter of the current challenge.
            let (value, remaining) = parse_value(value_part.trim_start());
            if let Some((_, params)) = challenges.last_mut() {
                params.push((word.to_owned(), value));
            }
            rest = remaining;
        } else if after.starts_with('=') {
            // A token68 (`Basic abc==`): skip it.
            rest = after.trim_start_matches('=');
        } else {
            challenges.push((word.to_owned(), Vec::new()));
            rest = after;
        }
    }
    challenges
}

/// A token or a quoted string, and what follows it.
fn parse_value(input: &str) -> (String, &str) {
    if let Some(quoted) = input.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(escaped);
                    }
                }
                '"' => return (value, &quoted[i + 1..]),
                c => value.push(c),
            }
        }
        (value, "")
    } else {
        let end = input.find([',', ' ', '\t']).unwrap_or(input.len());
        (input[..end].to_owned(), &input[end..])
    }
}

/// Protected Resource Metadata (RFC 9728), the fields this client uses.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ResourceMetadata {
    pub resource: String,
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    pub scopes_supported: Option<Vec<String>>,
    /// Whether the resource accepts only DPoP-bound access tokens (RFC 9728 §2).
    #[serde(default)]
    pub dpop_bound_access_tokens_required: bool,
}

/// Authorization server metadata (RFC 8414 / OpenID Connect discovery), the fields this
/// client uses.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    pub registration_endpoint: Option<String>,
    pub scopes_supported: Option<Vec<String>>,
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    pub code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
}

/// Where to look for the Protected Resource Metadata of `server`, in order: the challenge's
/// `resource_metadata` when given (and then only it), else the path-based well-known URL,
/// then the root one.
pub(crate) fn resource_metadata_urls(server: &Url, challenge: &Challenge) -> Result<Vec<Url>, AuthError> {
    if let Some(url) = &challenge.resource_metadata {
        let url = server
            .join(url)
            .map_err(|e| AuthError::InvalidMetadata(format!("resource_metadata {url:?} is not a URL: {e}")))?;
        return Ok(vec![url]);
    }
    let path = server.path().trim_end_matches('/');
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(well_known(server, &format!("/.well-known/oauth-protected-resource{path}")));
    }
    urls.push(well_known(server, "/.well-known/oauth-protected-resource"));
    Ok(urls)
}

/// Where to look for the metadata of `issuer`, in the order the MCP specification gives: for
/// an issuer with a path, OAuth with the path inserted, OpenID with the path inserted, OpenID
/// with the path appended (never the root forms); for one without, OAuth then OpenID.
pub(crate) fn server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        vec![
            well_known(issuer, "/.well-known/oauth-authorization-server"),
            well_known(issuer, "/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            well_known(issuer, &format!("/.well-known/oauth-authorization-server{path}")),
            well_known(issuer, &format!("/.well-known/openid-configuration{path}")),
            well_known(issuer, &format!("{path}/.well-known/openid-configuration")),
        ]
    }
}

fn well_known(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    url.set_path(path);
    url.set_query(None);
    url.set_fragment(None);
    url
}

/// Whether the PRM `resource` names this server: same origin, and its path is the server's
/// path or a path-segment prefix of it (a server at `/mcp` may publish the bare origin).
pub(crate) fn resource_matches(resource: &str, server: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else { return false };
    if resource.fragment().is_some() || resource.origin() != server.origin() {
        return false;
    }
    let prefix = resource.path().trim_end_matches('/');
    let path = server.path().trim_end_matches('/');
    path == prefix || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_parsed_with_quoted_and_token_values() {
        let c = Challenge::from_headers([
            r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="http://x/y""#,
        ]);
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert_eq!(c.resource_metadata.as_deref(), Some("http://x/y"));
        let c = Challenge::from_headers([r#"Basic realm="x", Bearer scope=read, error="invalid_token""#]);
        assert_eq!(c.scope.as_deref(), Some("read"));
        assert!(!c.insufficient_scope());
        let c = Challenge::from_headers([r#"DPoP algs="ES256", Bearer realm="a\"b""#]);
        assert_eq!(c, Challenge::default());
        assert_eq!(Challenge::from_headers(["Bearer"]), Challenge::default());
    }

    #[test]
    fn well_known_orders() {
        let server = Url::parse("http://h:1/mcp").unwrap();
        let urls = resource_metadata_urls(&server, &Challenge::default()).unwrap();
        let urls: Vec<&str> = urls.iter().map(Url::as_str).collect();
        assert_eq!(
            urls,
            ["http://h:1/.well-known/oauth-protected-resource/mcp", "http://h:1/.well-known/oauth-protected-resource"]
        );
        let issuer = Url::parse("http://a/tenant1").unwrap();
        let urls: Vec<String> = server_metadata_urls(&issuer).iter().map(Url::to_string).collect();
        assert_eq!(
            urls,
            [
                "http://a/.well-known/oauth-authorization-server/tenant1",
                "http://a/.well-known/openid-configuration/tenant1",
                "http://a/tenant1/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn resources_match_by_origin_and_path_prefix() {
        let server = Url::parse("http://localhost:3000/mcp").unwrap();
        assert!(resource_matches("http://localhost:3000/mcp", &server));
        assert!(resource_matches("http://localhost:3000", &server));
        assert!(resource_matches("http://localhost:3000/", &server));
        assert!(!resource_matches("http://localhost:3000/mc", &server));
        assert!(!resource_matches("https://evil.example.com/mcp", &server));
        assert!(!resource_matches("http://localhost:3001/mcp", &server));
        assert!(!resource_matches("http://localhost:3000/mcp/other", &server));
    }
}
