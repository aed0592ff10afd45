//! What the client keeps of a tool listing to call tools over Streamable HTTP: the
//! `x-mcp-header` annotations of the tools that have some, and the tools left out for invalid
//! ones, together within `ClientBuilder::max_cache_bytes` (a server cannot make the client hold
//! its listing: tools without annotations are not kept at all, and what does not fit is
//! forgotten and found again by listing when called).

use std::collections::HashMap;

use mcp_types::http_headers::HeaderParam;

/// What one entry is counted as besides its strings: the map's slot and the `Vec`s.
const ENTRY_OVERHEAD: usize = 64;

#[derive(Default)]
pub(crate) struct ToolAnnotations {
    headers: HashMap<String, Vec<HeaderParam>>,
    invalid: HashMap<String, String>,
    bytes: usize,
    /// Some entry did not fit: a tool absent here may have annotations.
    incomplete: bool,
}

fn params_bytes(params: &[HeaderParam]) -> usize {
    params.iter().map(|p| p.name.len() + p.path.iter().map(|s| s.len() + 24).sum::<usize>() + 48).sum()
}

impl ToolAnnotations {
    /// Records what a listing says of tool `name`: `Ok` with its annotations (none: nothing is
    /// kept), or `Err` with why it was left out.
    pub(crate) fn record(&mut self, name: &str, annotations: Result<Vec<HeaderParam>, String>, budget: usize) {
        self.forget(name);
        let cost = match &annotations {
            Ok(params) if params.is_empty() => return,
            Ok(params) => name.len() + params_bytes(params) + ENTRY_OVERHEAD,
            Err(reason) => name.len() + reason.len() + ENTRY_OVERHEAD,
        };
        if self.bytes + cost > budget {
            self.incomplete = true;
            return;
        }
        self.bytes += cost;
        match annotations {
            Ok(params) => self.headers.insert(name.to_owned(), params).map(|_| ()),
            Err(reason) => self.invalid.insert(name.to_owned(), reason).map(|_| ()),
        };
    }

    fn forget(&mut self, name: &str) {
        if let Some(params) = self.headers.remove(name) {
            self.bytes -= name.len() + params_bytes(&params) + ENTRY_OVERHEAD;
        }
        if let Some(reason) = self.invalid.remove(name) {
            self.bytes -= name.len() + reason.len() + ENTRY_OVERHEAD;
        }
    }

    pub(crate) fn headers(&self, name: &str) -> Option<&[HeaderParam]> {
        self.headers.get(name).map(Vec::as_slice)
    }

    pub(crate) fn invalid(&self, name: &str) -> Option<&str> {
        self.invalid.get(name).map(String::as_str)
    }

    /// Whether what is kept of `name` may be missing (an entry did not fit the budget).
    pub(crate) fn may_be_missing(&self, name: &str) -> bool {
        self.incomplete && !self.headers.contains_key(name) && !self.invalid.contains_key(name)
    }

    pub(crate) fn clear(&mut self) {
        *self = ToolAnnotations::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_types::http_headers::header_params;
    use serde_json::json;

    fn annotated() -> Vec<HeaderParam> {
        let schema = json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}});
        header_params(&schema).unwrap()
    }

    #[test]
    fn only_annotated_or_invalid_tools_are_kept_within_the_budget() {
        let mut kept = ToolAnnotations::default();
        kept.record("plain", Ok(Vec::new()), 1024);
        assert_eq!((kept.bytes, kept.headers.len()), (0, 0));
        kept.record("regional", Ok(annotated()), 1024);
        kept.record("broken", Err("two headers named Region".into()), 1024);
        assert!(kept.headers("regional").is_some() && kept.invalid("broken").is_some());
        assert!(!kept.may_be_missing("elsewhere"));
        let long = "x".repeat(2048);
        kept.record(&long, Ok(annotated()), 1024);
        assert!(kept.headers(&long).is_none() && kept.may_be_missing(&long));
        assert!(kept.bytes <= 1024);
        // Listed again without annotations, a tool is forgotten and its bytes given back.
        let before = kept.bytes;
        kept.record("regional", Ok(Vec::new()), 1024);
        assert!(kept.headers("regional").is_none() && kept.bytes < before);
        kept.clear();
        assert_eq!(kept.bytes, 0);
    }
}
