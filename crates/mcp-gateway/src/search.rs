//! `catalogue = "search"`: instead of every upstream's tools, the gateway lists two, `search_tools`
//! and `call_tool`, so that thousands of tools need not fit in a model's context.
//!
//! `search_tools` ranks the tools the caller may see by BM25 (k1 = 1.2, b = 0.75) over each
//! tool's name (split on `_`, `-`, `.`, `/` and camelCase; counted twice), title, description,
//! and argument names and descriptions, and returns the best ones' full definitions, under the
//! names the gateway gives them. `call_tool` calls one of them by name, as a direct `tools/call`
//! would (which still works: the catalogue is only what is listed).
//!
//! Words are lowercased and split as said; a short list of English stop words is left out, and
//! a plural `-s` / `-ies` is taken off (`files` is `file`, `cities` is `city`), in the tools and
//! in the query alike. The index (`ToolIndex`) is built when the merged tool list changes,
//! not per query.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use mcp_types::{CallToolRequestParams, CallToolResult, ContentBlock, JsonSchema, ObjectSchema, TextContent, Tool};
use serde_json::{Value, json};

/// The tool that finds tools.
pub const SEARCH_TOOLS: &str = "search_tools";
/// The tool that calls a tool found.
pub const CALL_TOOL: &str = "call_tool";
/// How many tools `search_tools` returns unless asked.
pub const DEFAULT_LIMIT: usize = 5;
/// The most it returns.
pub const MAX_LIMIT: usize = 20;

const K1: f32 = 1.2;
const B: f32 = 0.75;
/// How many times a word of a tool's name counts.
const NAME_WEIGHT: f32 = 2.0;

/// Words too common to tell tools apart.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "any", "are", "as", "at", "be", "by", "can", "do", "for", "from", "given", "how", "i", "in",
    "into", "is", "it", "its", "me", "my", "of", "on", "or", "some", "that", "the", "this", "to", "with", "you",
    "your",
];

/// The words of `text`: split on anything not a letter or digit and at camelCase humps
/// (`getHTTPResponse` is `get`, `http`, `response`), lowercased, stop words left out, a plural
/// `-s` or `-ies` taken off.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in text.split(|c: char| !c.is_alphanumeric()).filter(|part| !part.is_empty()) {
        let chars: Vec<char> = part.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (before, at) = (chars[i - 1], chars[i]);
            let lower_next = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
            let hump = at.is_uppercase() && (before.is_lowercase() || (before.is_uppercase() && lower_next));
            if hump {
                push_word(&chars[start..i], &mut out);
                start = i;
            }
        }
        push_word(&chars[start..], &mut out);
    }
    out
}

fn push_word(chars: &[char], out: &mut Vec<String>) {
    let word: String = chars.iter().flat_map(|c| c.to_lowercase()).collect();
    if word.is_empty() || STOP_WORDS.contains(&word.as_str()) {
        return;
    }
    out.push(singular(word));
}

/// `files` → `file`, `cities` → `city`; `address`, `status` and short words stay.
fn singular(mut word: String) -> String {
    if word.len() > 4 && word.ends_with("ies") {
        word.truncate(word.len() - 3);
        word.push('y');
    } else if word.len() > 3 && word.ends_with('s') && !word.ends_with("ss") && !word.ends_with("us") {
        word.pop();
    }
    word
}

/// The text of a tool that search reads, as (words, weight) parts: its name, title, description,
/// and its arguments' names and descriptions (from `inputSchema.properties`).
fn document(tool: &Tool, mut add: impl FnMut(&str, f32)) {
    add(&tool.name, NAME_WEIGHT);
    if let Some(title) = tool.title.as_deref().or(tool.annotations.as_ref().and_then(|a| a.title.as_deref())) {
        add(title, 1.0);
    }
    if let Some(description) = &tool.description {
        add(description, 1.0);
    }
    // Only the schemas that have properties are parsed.
    if tool.input_schema.as_json().contains("\"properties\"")
        && let Ok(Value::Object(schema)) = serde_json::from_str::<Value>(tool.input_schema.as_json())
        && let Some(Value::Object(properties)) = schema.get("properties")
    {
        for (name, property) in properties {
            add(name, 1.0);
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                add(description, 1.0);
            }
        }
    }
}

/// A BM25 index of a list of tools.
#[derive(Default)]
pub struct ToolIndex {
    tools: Arc<[Tool]>,
    /// Each tool's length in (weighted) words.
    lengths: Vec<f32>,
    average: f32,
    /// Word → (tool, weighted count of the word in it), by tool.
    postings: HashMap<String, Vec<(u32, f32)>>,
}

impl ToolIndex {
    /// Indexes `tools` (their order is kept: ties rank in it).
    pub fn new(tools: Arc<[Tool]>) -> ToolIndex {
        let mut postings: HashMap<String, Vec<(u32, f32)>> = HashMap::new();
        let mut lengths = Vec::with_capacity(tools.len());
        let mut counts: HashMap<String, f32> = HashMap::new();
        for (at, tool) in tools.iter().enumerate() {
            counts.clear();
            let mut length = 0.0;
            document(tool, |text, weight| {
                for word in words(text) {
                    *counts.entry(word).or_default() += weight;
                    length += weight;
                }
            });
            lengths.push(length);
            let at = u32::try_from(at).expect("fewer than 2^32 tools");
            for (word, count) in counts.drain() {
                postings.entry(word).or_default().push((at, count));
            }
        }
        let average = if lengths.is_empty() { 1.0 } else { lengths.iter().sum::<f32>() / lengths.len() as f32 };
        ToolIndex { tools, lengths, average: average.max(1.0), postings }
    }

    /// The tools indexed.
    pub fn tools(&self) -> &Arc<[Tool]> {
        &self.tools
    }

    /// The `limit` tools that best match `query` (positions in [`tools`](Self::tools), with
    /// their scores), best first, among those `keep` keeps; none when no word of the query is
    /// in any tool.
    pub fn search(&self, query: &str, limit: usize, mut keep: impl FnMut(usize) -> bool) -> Vec<(usize, f32)> {
        let mut query = words(query);
        query.sort();
        query.dedup();
        let mut scores = vec![0.0f32; self.tools.len()];
        let total = self.tools.len() as f32;
        for word in &query {
            let Some(postings) = self.postings.get(word) else { continue };
            let having = postings.len() as f32;
            let idf = (1.0 + (total - having + 0.5) / (having + 0.5)).ln();
            for &(at, count) in postings {
                let norm = K1 * (1.0 - B + B * self.lengths[at as usize] / self.average);
                scores[at as usize] += idf * count * (K1 + 1.0) / (count + norm);
            }
        }
        let mut ranked: Vec<(usize, f32)> = scores.into_iter().enumerate().filter(|(_, score)| *score > 0.0).collect();
        // Best first; ties in list order.
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.into_iter().filter(|(at, _)| keep(*at)).take(limit).collect()
    }
}

/// The index of the catalogue's tools and each one's route (upstream, its own name), from the
/// listing it was built from: what a search checks the caller's access against.
#[derive(Default)]
pub(crate) struct Search {
    pub(crate) index: ToolIndex,
    pub(crate) routes: Vec<Option<(usize, Arc<str>)>>,
}

impl Search {
    pub(crate) fn new(listing: &crate::index::Listing<Tool>) -> Search {
        let index = ToolIndex::new(Arc::clone(&listing.items));
        let routes = index.tools.iter().map(|tool| listing.routes.get(&tool.name).cloned()).collect();
        Search { index, routes }
    }

    /// The answer to a `search_tools` call: the best matches among the tools `may_see` (upstream,
    /// own name, listed name) lets the caller see.
    pub(crate) fn answer(
        &self,
        arguments: Option<&serde_json::Map<String, Value>>,
        may_see: impl Fn(usize, &str, &str) -> bool,
    ) -> Result<CallToolResult, mcp_server::Error> {
        let arguments = arguments.cloned().unwrap_or_default();
        let query = match arguments.get("query") {
            Some(Value::String(query)) => query.clone(),
            _ => return Err(mcp_server::Error::invalid_params("search_tools needs `query`, a string")),
        };
        let limit = match arguments.get("limit") {
            None | Some(Value::Null) => DEFAULT_LIMIT,
            Some(limit) => match limit.as_u64() {
                Some(limit) => usize::try_from(limit).unwrap_or(MAX_LIMIT).clamp(1, MAX_LIMIT),
                None => return Err(mcp_server::Error::invalid_params("search_tools: `limit` must be an integer")),
            },
        };
        let found = self.index.search(&query, limit, |at| {
            self.routes[at].as_ref().is_some_and(|(upstream, own)| may_see(*upstream, own, &self.index.tools[at].name))
        });
        let tools: Vec<&Tool> = found.iter().map(|(at, _)| &self.index.tools[*at]).collect();
        let mut text = match tools.len() {
            0 => format!("No tool matches {query:?}."),
            n => format!(
                "{n} tool{} for {query:?}, best first (call one with {CALL_TOOL}):",
                if n == 1 { "" } else { "s" }
            ),
        };
        for tool in &tools {
            text.push_str(&format!("\n- {}", tool.name));
            if let Some(line) = tool.description.as_deref().and_then(|d| d.lines().next()).filter(|l| !l.is_empty()) {
                text.push_str(": ");
                text.push_str(line);
            }
        }
        let mut result = CallToolResult::new(vec![ContentBlock::Text(TextContent::new(text))]);
        result.structured_content = Some(json!({ "tools": tools }));
        Ok(result)
    }
}

/// The parameters of the call `call_tool` makes: its `name` and `arguments`.
pub(crate) fn inner_call(mut params: CallToolRequestParams) -> Result<CallToolRequestParams, mcp_server::Error> {
    let mut arguments = params.arguments.take().unwrap_or_default();
    let name = match arguments.remove("name") {
        Some(Value::String(name)) => name,
        _ => return Err(mcp_server::Error::invalid_params("call_tool needs `name`, a string")),
    };
    let inner = match arguments.remove("arguments") {
        None | Some(Value::Null) => None,
        Some(Value::Object(arguments)) => Some(arguments),
        Some(_) => return Err(mcp_server::Error::invalid_params("call_tool: `arguments` must be an object")),
    };
    // The rest (`_meta`, a modern caller's `inputResponses` and `requestState`) goes with it.
    params.name = name;
    params.arguments = inner;
    Ok(params)
}

/// The two tools listed in search mode.
pub(crate) fn listed() -> Arc<[Tool]> {
    static LISTED: OnceLock<Arc<[Tool]>> = OnceLock::new();
    Arc::clone(LISTED.get_or_init(|| {
        let schema = |value: Value| ObjectSchema::from_value(value).expect("an object schema");
        let mut search = Tool::new(
            schema(json!({
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "What the tool should do, in a few words (for example \"delete a file\")"
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_LIMIT,
                        "default": DEFAULT_LIMIT,
                        "description": format!("The most tools to return (default {DEFAULT_LIMIT}, at most {MAX_LIMIT})")
                    }
                },
                "required": ["query"]
            })),
            SEARCH_TOOLS,
        );
        search.description = Some(format!(
            "Finds the tools for a task among all the tools this gateway offers (too many to list): returns the \
             best matches' full definitions (name, description, inputSchema, outputSchema, annotations), best \
             first. Call one with {CALL_TOOL}."
        ));
        search.output_schema = Some(
            JsonSchema::from_value(json!({
                "type": "object",
                "properties": {
                    "tools": {
                        "type": "array",
                        "description": "The tools found, best first, as tools/list would list them",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": { "type": "string" },
                                "title": { "type": "string" },
                                "description": { "type": "string" },
                                "inputSchema": { "type": "object" },
                                "outputSchema": { "type": "object" },
                                "annotations": { "type": "object" }
                            },
                            "required": ["name", "inputSchema"]
                        }
                    }
                },
                "required": ["tools"]
            }))
            .expect("an object schema"),
        );
        search.annotations = Some(
            serde_json::from_value(json!({ "readOnlyHint": true, "idempotentHint": true, "openWorldHint": false }))
                .expect("tool annotations"),
        );
        let mut call = Tool::new(
            schema(json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": format!("The tool's name, as {SEARCH_TOOLS} returned it") },
                    "arguments": { "type": "object", "description": "Its arguments, as its inputSchema says" }
                },
                "required": ["name"]
            })),
            CALL_TOOL,
        );
        call.description = Some(format!(
            "Calls a tool that {SEARCH_TOOLS} found, by its name, with its arguments; returns that tool's result."
        ));
        Arc::from(vec![search, call])
    }))
}

/// The definition of `name` if it is one of the two tools listed in search mode.
pub(crate) fn listed_tool(name: &str) -> Option<Tool> {
    listed().iter().find(|tool| tool.name == name).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_on_separators_and_camel_case() {
        assert_eq!(
            words("github_create-issue.v2/getHTTPResponse"),
            ["github", "create", "issue", "v2", "get", "http", "response"]
        );
        assert_eq!(words("Delete the files of a city"), ["delete", "file", "city"]);
        assert_eq!(words("address status"), ["address", "status"]);
    }

    fn tool(name: &str, description: &str) -> Tool {
        Tool { description: Some(description.to_owned()), ..Tool::new(ObjectSchema::default(), name) }
    }

    #[test]
    fn ranks_by_bm25_and_keeps_only_what_keep_keeps() {
        let tools: Arc<[Tool]> = Arc::from(vec![
            tool("files_read_file", "Read a file"),
            tool("files_delete_file", "Delete a file from disk"),
            tool("github_delete_issue", "Delete an issue"),
        ]);
        let index = ToolIndex::new(tools);
        let found = index.search("delete a file", 3, |_| true);
        assert_eq!(found.iter().map(|(at, _)| *at).collect::<Vec<_>>(), [1, 0, 2]);
        let hidden = index.search("delete a file", 3, |at| at != 1);
        assert_eq!(hidden.iter().map(|(at, _)| *at).collect::<Vec<_>>(), [0, 2]);
        assert!(index.search("unheard of", 3, |_| true).is_empty());
    }
}
