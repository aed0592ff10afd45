//! Schema descriptions → rustdoc: TypeScript `{@link X}` / `{@link Xlabel}` become intra-doc links
//! to the Rust names of this revision, bare URLs become autolinks, one `#[doc]` per line.

use std::collections::BTreeMap;

pub struct Docs {
    /// Schema definition name → Rust name, for the definitions that exist in this revision.
    names: BTreeMap<String, String>,
}

impl Docs {
    pub fn new(names: BTreeMap<String, String>) -> Self {
        Docs { names }
    }

    pub fn lines(&self, text: &str) -> Vec<String> {
        let text = self.rewrite_links(text.trim());
        if text.is_empty() {
            return Vec::new();
        }
        text.lines().map(|line| format!(" {}", autolink(line.trim_end()))).collect()
    }

    fn rewrite_links(&self, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("{@link ") {
            out.push_str(&rest[..start]);
            let after = &rest[start + "{@link ".len()..];
            let Some(end) = after.find('}') else {
                out.push_str(&rest[start..]);
                return out;
            };
            out.push_str(&self.link(after[..end].trim()));
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        out
    }

    /// `CallToolRequesttools/call` (the JSON schema glues `{@link CallToolRequest | tools/call}`
    /// together): the longest definition name that prefixes the text is the target, the rest the label.
    fn link(&self, body: &str) -> String {
        let target = self.names.keys().filter(|name| body.starts_with(name.as_str())).max_by_key(|name| name.len());
        match target {
            Some(name) => {
                let rust = &self.names[name];
                let label = body[name.len()..].trim_start_matches(['|', ' ']);
                if label.is_empty() {
                    format!("[`{rust}`]")
                } else if let Some(member) = label.strip_prefix('.') {
                    format!("[`{name}.{member}`]({rust})")
                } else if label.contains('`') {
                    format!("[{label}]({rust})")
                } else {
                    format!("[`{label}`]({rust})")
                }
            }
            None => format!("`{body}`"),
        }
    }
}

/// Wraps bare `http(s)://` URLs in `<>` so rustdoc renders them as links.
fn autolink(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(pos) = rest.find("http") {
        let candidate = &rest[pos..];
        let is_url = candidate.starts_with("https://") || candidate.starts_with("http://");
        let prev = rest[..pos].chars().last();
        if !is_url || matches!(prev, Some('<' | '(' | '`' | '"')) {
            let skip = pos + 4;
            out.push_str(&rest[..skip]);
            rest = &rest[skip..];
            continue;
        }
        out.push_str(&rest[..pos]);
        let end = candidate.find(|c: char| c.is_whitespace() || c == ')' || c == '>').unwrap_or(candidate.len());
        let mut url = &candidate[..end];
        let trailing = url.len() - url.trim_end_matches(['.', ',', ';', ':']).len();
        url = &url[..url.len() - trailing];
        out.push('<');
        out.push_str(url);
        out.push('>');
        rest = &candidate[url.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs() -> Docs {
        Docs::new(
            [("CallToolRequest", "CallToolRequest"), ("CallToolResult", "CallToolResult"), ("Result", "ResultBase")]
                .into_iter()
                .map(|(a, b)| (a.to_owned(), b.to_owned()))
                .collect(),
        )
    }

    #[test]
    fn rewrites_typescript_links() {
        let d = docs();
        assert_eq!(
            d.rewrite_links("for a {@link CallToolRequesttools/call} request"),
            "for a [`tools/call`](CallToolRequest) request"
        );
        assert_eq!(d.rewrite_links("see {@link Result}"), "see [`ResultBase`]");
        assert_eq!(d.rewrite_links("{@link CallToolResult.content}"), "[`CallToolResult.content`](CallToolResult)");
        assert_eq!(d.rewrite_links("{@link Unknown}"), "`Unknown`");
    }

    #[test]
    fn autolinks_bare_urls_only() {
        assert_eq!(autolink("see https://x.org/a#b."), "see <https://x.org/a#b>.");
        assert_eq!(autolink("[x](https://x.org)"), "[x](https://x.org)");
    }
}
