//! What a server offers that bindings are generated from: its tools, prompts and resource
//! templates ([`Contract`]), reduced to the parts that shape the bindings (names, schemas,
//! descriptions, prompt arguments, URI templates) in a canonical JSON form whose sha256 names
//! the contract, with one digest per entry so that a check can say which entry changed.

use std::fmt;

use mcp_client::types::{Prompt, ResourceTemplate, Tool, error_codes};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// A server's tools, prompts and resource templates, as listed by the server.
///
/// It (de)serializes as `{"tools": [...], "prompts": [...], "resourceTemplates": [...]}`, the
/// members of the `*/list` results, so a contract can be saved to or read from a file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Contract {
    /// `tools/list`.
    #[serde(default)]
    pub tools: Vec<Tool>,
    /// `prompts/list`.
    #[serde(default)]
    pub prompts: Vec<Prompt>,
    /// `resources/templates/list`.
    #[serde(default, rename = "resourceTemplates")]
    pub templates: Vec<ResourceTemplate>,
}

/// What kind of entry of a [`Contract`] something is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntryKind {
    /// A tool.
    Tool,
    /// A prompt.
    Prompt,
    /// A resource template.
    Template,
}

impl EntryKind {
    /// The word used in canonical JSON, generated files and messages: `tool`, `prompt`, `template`.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::Tool => "tool",
            EntryKind::Prompt => "prompt",
            EntryKind::Template => "template",
        }
    }

    /// The inverse of [`as_str`](Self::as_str).
    pub fn parse(word: &str) -> Option<EntryKind> {
        [EntryKind::Tool, EntryKind::Prompt, EntryKind::Template].into_iter().find(|k| k.as_str() == word)
    }
}

impl fmt::Display for EntryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of a contract with the sha256 (hex) of its canonical JSON.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct EntryDigest {
    /// Tool, prompt or template.
    pub kind: EntryKind,
    /// The entry's name.
    pub name: String,
    /// sha256 of [`Contract::canonical_entry`] for it, lowercase hex.
    pub sha256: String,
}

impl Contract {
    /// Lists everything the server offers. A server that does not declare the prompts or
    /// resources capability (or tools) has none of those, which is not an error; neither is a
    /// server with resources that does not know `resources/templates/list`.
    pub async fn fetch(client: &mcp_client::Client) -> Result<Contract, mcp_client::Error> {
        let capabilities = client.server_capabilities();
        let tools = match capabilities.tools {
            Some(_) => client.all_tools().await?,
            None => Vec::new(),
        };
        let prompts = match capabilities.prompts {
            Some(_) => client.all_prompts().await?,
            None => Vec::new(),
        };
        let templates = match capabilities.resources {
            Some(_) => match client.all_resource_templates().await {
                Ok(templates) => templates,
                Err(e) if is_unknown_method(&e) => Vec::new(),
                Err(e) => return Err(e),
            },
            None => Vec::new(),
        };
        Ok(Contract { tools, prompts, templates })
    }

    /// Reads a contract saved as JSON (see [`Contract`]).
    pub fn from_json(text: &str) -> Result<Contract, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The parts of one entry that shape the bindings, as JSON: for a tool its `name`,
    /// `description`, `inputSchema` and `outputSchema`; for a prompt its `name`, `description`
    /// and `arguments` (each `name`, `description`, `required`, sorted by name); for a template
    /// its `name`, `description` and `uriTemplate`. Absent members are left out.
    pub fn canonical_entry(kind: EntryKind, value: &Value) -> Value {
        let pick = |keys: &[&str]| -> Value {
            let picked = keys.iter().filter_map(|&k| Some((k.to_owned(), value.get(k)?.clone())));
            Value::Object(picked.filter(|(_, v)| !v.is_null()).collect())
        };
        match kind {
            EntryKind::Tool => pick(&["name", "description", "inputSchema", "outputSchema"]),
            EntryKind::Template => pick(&["name", "description", "uriTemplate"]),
            EntryKind::Prompt => {
                let mut prompt = pick(&["name", "description"]);
                let mut arguments: Vec<Value> = value
                    .get("arguments")
                    .and_then(Value::as_array)
                    .map(|args| args.iter().map(canonical_argument).collect())
                    .unwrap_or_default();
                arguments.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
                if !arguments.is_empty() {
                    prompt["arguments"] = Value::Array(arguments);
                }
                prompt
            }
        }
    }

    /// Each entry's canonical JSON (see [`canonical_entry`](Self::canonical_entry)), by kind
    /// and then by name.
    pub fn canonical_entries(&self) -> Vec<(EntryKind, String, Value)> {
        fn entries<T: Serialize>(kind: EntryKind, items: &[T]) -> impl Iterator<Item = (EntryKind, String, Value)> {
            items.iter().map(move |item| {
                let value = serde_json::to_value(item).unwrap_or(Value::Null);
                let name = value["name"].as_str().unwrap_or_default().to_owned();
                (kind, name, Contract::canonical_entry(kind, &value))
            })
        }
        let mut all: Vec<_> = entries(EntryKind::Tool, &self.tools)
            .chain(entries(EntryKind::Prompt, &self.prompts))
            .chain(entries(EntryKind::Template, &self.templates))
            .collect();
        all.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        all
    }

    /// The whole contract as canonical JSON text: `{"prompts":[..],"templates":[..],"tools":[..]}`,
    /// entries sorted by name, object keys sorted, no whitespace.
    pub fn canonical_json(&self) -> String {
        let mut lists = json!({ "prompts": [], "templates": [], "tools": [] });
        for (kind, _, value) in self.canonical_entries() {
            let list = match kind {
                EntryKind::Tool => "tools",
                EntryKind::Prompt => "prompts",
                EntryKind::Template => "templates",
            };
            lists[list].as_array_mut().expect("a list").push(value);
        }
        canonical_text(&lists)
    }

    /// sha256 of [`canonical_json`](Self::canonical_json), lowercase hex.
    pub fn sha256(&self) -> String {
        sha256_hex(&self.canonical_json())
    }

    /// Each entry's digest, by kind and then by name.
    pub fn digests(&self) -> Vec<EntryDigest> {
        self.canonical_entries()
            .into_iter()
            .map(|(kind, name, value)| EntryDigest { kind, name, sha256: sha256_hex(&canonical_text(&value)) })
            .collect()
    }
}

fn canonical_argument(argument: &Value) -> Value {
    let mut picked = serde_json::Map::new();
    for key in ["name", "description", "required"] {
        if let Some(v) = argument.get(key).filter(|v| !v.is_null()) {
            picked.insert(key.to_owned(), v.clone());
        }
    }
    Value::Object(picked)
}

fn is_unknown_method(error: &mcp_client::Error) -> bool {
    match error {
        mcp_client::Error::NotSupported { .. } => true,
        mcp_client::Error::Rpc { error, .. } => error.code == error_codes::METHOD_NOT_FOUND,
        _ => false,
    }
}

/// JSON text with object keys sorted at every depth and no whitespace, whatever order
/// serde_json's maps keep (insertion order when some crate enables `preserve_order`).
pub fn canonical_text(value: &Value) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, key) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push(':');
                    write(&map[key], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            scalar => out.push_str(&scalar.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_text_sorts_keys_at_every_depth() {
        let value = json!({ "b": [{ "z": 1, "a": null }], "a": { "d": "x", "c": 1.5 } });
        assert_eq!(canonical_text(&value), r#"{"a":{"c":1.5,"d":"x"},"b":[{"a":null,"z":1}]}"#);
    }

    #[test]
    fn the_digest_ignores_what_does_not_shape_the_bindings_and_order() {
        let tool = |title: &str, order: [&str; 2]| {
            json!({ "name": "add", "title": title, "inputSchema": {
                "type": "object",
                "properties": { order[0]: { "type": "integer" }, order[1]: { "type": "integer" } },
            }})
        };
        let a: Contract = serde_json::from_value(
            json!({ "tools": [tool("Add", ["a", "b"]), { "name": "b", "inputSchema": { "type": "object" } }] }),
        )
        .unwrap();
        let b: Contract = serde_json::from_value(
            json!({ "tools": [{ "name": "b", "inputSchema": { "type": "object" } }, tool("Sum", ["b", "a"])] }),
        )
        .unwrap();
        assert_eq!(a.sha256(), b.sha256());
        assert_eq!(a.digests(), b.digests());

        let c: Contract = serde_json::from_value(json!({ "tools": [tool("Add", ["a", "c"])] })).unwrap();
        assert_ne!(a.digests()[0].sha256, c.digests()[0].sha256);
    }

    #[test]
    fn prompt_arguments_are_sorted_and_keep_required() {
        let prompt = json!({ "name": "p", "title": "P", "arguments": [
            { "name": "z", "required": true, "title": "Z" }, { "name": "a" },
        ]});
        assert_eq!(
            canonical_text(&Contract::canonical_entry(EntryKind::Prompt, &prompt)),
            r#"{"arguments":[{"name":"a"},{"name":"z","required":true}],"name":"p"}"#
        );
    }
}
