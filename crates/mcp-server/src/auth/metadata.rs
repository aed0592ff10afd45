//! Protected Resource Metadata (RFC 9728): the document and where it is served.

use std::sync::Arc;

use serde_json::{Value, json};

/// The parts of the Protected Resource Metadata document.
pub(super) struct Document {
    pub(super) authorization_servers: Vec<String>,
    /// `scopes_supported` as configured (default: the required scopes).
    pub(super) scopes_supported: Vec<String>,
    /// Scopes never listed, though a route needs them.
    pub(super) hidden_scopes: Vec<String>,
    pub(super) resource_name: Option<String>,
    /// Only DPoP-bound tokens are accepted.
    pub(super) dpop_required: bool,
}

impl Document {
    /// The document, with `resource` exactly as configured (no slash added or removed):
    /// `scopes_supported` as configured, then the routes' own scopes, each once, but for the
    /// hidden ones.
    pub(super) fn render(&self, resource: &str, route_scopes: &[String]) -> Arc<str> {
        let mut scopes: Vec<&String> = Vec::new();
        for scope in self.scopes_supported.iter().chain(route_scopes) {
            if !scopes.contains(&scope) && !self.hidden_scopes.contains(scope) {
                scopes.push(scope);
            }
        }
        let mut document = json!({
            "resource": resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !scopes.is_empty() {
            document["scopes_supported"] = json!(scopes);
        }
        if let Some(name) = &self.resource_name {
            document["resource_name"] = Value::String(name.clone());
        }
        document["dpop_signing_alg_values_supported"] = json!(super::dpop::ALGORITHMS);
        if self.dpop_required {
            document["dpop_bound_access_tokens_required"] = Value::Bool(true);
        }
        document.to_string().into()
    }
}

/// `(origin, path)` of an absolute URL; the path without query or fragment.
fn split(resource: &str) -> (&str, &str) {
    let after_scheme = resource.find("://").map_or(0, |i| i + 3);
    let path_start = resource[after_scheme..].find('/').map_or(resource.len(), |i| after_scheme + i);
    let path = &resource[path_start..];
    let path = path.split(['?', '#']).next().unwrap_or_default();
    (&resource[..path_start], path)
}

/// The metadata URL a challenge names: the well-known path with the resource's path appended
/// (RFC 9728 §3.1).
pub(super) fn url_for(resource: &str) -> String {
    let (origin, path) = split(resource);
    let path = if path == "/" { "" } else { path };
    format!("{origin}/.well-known/oauth-protected-resource{path}")
}

/// The paths served: the suffixed one and the root one.
pub(super) fn paths_for(resource: &str) -> Vec<String> {
    let (_, path) = split(resource);
    let mut paths = vec!["/.well-known/oauth-protected-resource".to_owned()];
    if !path.is_empty() && path != "/" {
        paths.push(format!("/.well-known/oauth-protected-resource{path}"));
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_keeps_the_resource_path() {
        assert_eq!(
            url_for("https://mcp.example.com/mcp"),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(url_for("https://mcp.example.com"), "https://mcp.example.com/.well-known/oauth-protected-resource");
        assert_eq!(url_for("https://mcp.example.com/"), "https://mcp.example.com/.well-known/oauth-protected-resource");
        assert_eq!(
            paths_for("http://127.0.0.1:8/a/mcp"),
            ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/a/mcp"]
        );
    }

    #[test]
    fn the_document_names_the_resource_exactly() {
        let mut parts = Document {
            authorization_servers: vec!["https://auth.example.com".to_owned()],
            scopes_supported: vec!["notes:read".to_owned()],
            hidden_scopes: vec!["admin".to_owned()],
            resource_name: Some("Notes".to_owned()),
            dpop_required: false,
        };
        let routes = ["notes:write".to_owned(), "admin".to_owned(), "notes:read".to_owned()];
        let document: Value = serde_json::from_str(&parts.render("https://mcp.example.com/mcp/", &routes)).unwrap();
        assert_eq!(document["resource"], "https://mcp.example.com/mcp/");
        assert_eq!(document["authorization_servers"], json!(["https://auth.example.com"]));
        assert_eq!(document["bearer_methods_supported"], json!(["header"]));
        assert_eq!(document["scopes_supported"], json!(["notes:read", "notes:write"]));
        assert_eq!(document["resource_name"], "Notes");
        assert_eq!(document.get("dpop_bound_access_tokens_required"), None);
        parts.dpop_required = true;
        let document: Value = serde_json::from_str(&parts.render("https://mcp.example.com/mcp/", &[])).unwrap();
        assert_eq!(document["dpop_bound_access_tokens_required"], true);
    }
}
