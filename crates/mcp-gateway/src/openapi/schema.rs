//! The JSON Schemas of an OpenAPI document as a tool carries them: every `$ref` into the document
//! expanded in place (one that comes back to a schema it is inside of is not expanded again), and
//! OpenAPI 3.0's own keywords turned into JSON Schema 2020-12's (`nullable`, boolean
//! `exclusiveMinimum`/`exclusiveMaximum`, `example`); what only the document needs (`x-`
//! extensions, `discriminator`, `xml`, `externalDocs`, `$defs`, `$id`) left out.

use std::fmt;

use serde_json::{Map, Value, json};

/// Schema objects one tool's schemas may take with their references expanded; past it a
/// reference is left unexpanded (`{}` with a `$comment`), so that a document whose references
/// fan out cannot make a tool's schema grow without bound.
const MAX_NODES: usize = 20_000;

/// `$ref` hops followed in a row (a reference to a reference…) before giving up.
const MAX_HOPS: usize = 32;

/// A problem of the document, at a JSON pointer into it (`#/paths/~1pets/get/parameters/0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub(crate) at: String,
    pub(crate) what: String,
}

impl Problem {
    pub(crate) fn new(at: impl Into<String>, what: impl Into<String>) -> Problem {
        Problem { at: at.into(), what: what.into() }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.at, self.what)
    }
}

/// `name` as one token of a JSON pointer (`~` → `~0`, `/` → `~1`).
pub(crate) fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// `at` with one more token.
pub(crate) fn child(at: &str, name: &str) -> String {
    format!("{at}/{}", escape(name))
}

/// The document, to follow its references in.
#[derive(Clone, Copy)]
pub(crate) struct Document<'a> {
    pub(crate) root: &'a Value,
    /// OpenAPI 3.0 (its schemas are an extended subset of JSON Schema draft 4), not 3.1 (2020-12).
    pub(crate) v30: bool,
}

impl<'a> Document<'a> {
    /// What `reference` (`#/components/…`, a JSON pointer in a URI fragment) points at.
    fn lookup(&self, reference: &str, at: &str) -> Result<&'a Value, Problem> {
        let Some(fragment) = reference.strip_prefix('#') else {
            return Err(Problem::new(at, format!("`{reference}` is not in this document (only `#/…` references are)")));
        };
        let fragment = percent_decode(fragment);
        let mut value = self.root;
        if fragment.is_empty() {
            return Ok(value);
        }
        let Some(tokens) = fragment.strip_prefix('/') else {
            return Err(Problem::new(at, format!("`{reference}` is not a JSON pointer")));
        };
        for token in tokens.split('/') {
            let token = token.replace("~1", "/").replace("~0", "~");
            let next = match value {
                Value::Object(object) => object.get(&token),
                Value::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            };
            value = next.ok_or_else(|| Problem::new(at, format!("`{reference}` points at nothing")))?;
        }
        Ok(value)
    }

    /// `value` with its `$ref` followed (a Reference Object: a parameter, a request body, a
    /// response, a path item), and where what it is now is.
    pub(crate) fn follow(&self, mut value: &'a Value, mut at: String) -> Result<(&'a Value, String), Problem> {
        for _ in 0..MAX_HOPS {
            let Some(reference) = value.get("$ref") else { return Ok((value, at)) };
            let here = child(&at, "$ref");
            let reference = reference.as_str().ok_or_else(|| Problem::new(&here, "`$ref` must be a string"))?;
            value = self.lookup(reference, &here)?;
            at = reference.to_owned();
        }
        Err(Problem::new(at, format!("more than {MAX_HOPS} references in a row")))
    }

    /// A fresh expansion, with its own bound, for the schemas of one tool.
    pub(crate) fn schemas(self) -> Schemas<'a> {
        Schemas { document: self, left: MAX_NODES, inside: Vec::new() }
    }
}

/// The schemas of one tool, converted: the bound on their size is shared.
pub(crate) struct Schemas<'a> {
    document: Document<'a>,
    /// Schema objects it may still make.
    left: usize,
    /// The references being expanded, outermost first.
    inside: Vec<String>,
}

/// Keywords whose value is a schema.
const ONE: &[&str] = &[
    "items",
    "additionalItems",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "contentSchema",
];
/// Keywords whose value is an array of schemas.
const MANY: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value maps names to schemas.
const NAMED: &[&str] = &["properties", "patternProperties", "dependentSchemas"];
/// What a tool's schema does without: the document's own keywords, and identifiers that would
/// repeat where one component is expanded twice.
const DROPPED: &[&str] =
    &["discriminator", "xml", "externalDocs", "$defs", "definitions", "$id", "$schema", "$anchor", "$dynamicAnchor"];

impl Schemas<'_> {
    /// The schema at `at`, converted.
    pub(crate) fn convert(&mut self, value: &Value, at: &str) -> Result<Value, Problem> {
        let object = match value {
            Value::Object(object) => object,
            Value::Bool(_) => return Ok(value.clone()),
            _ => return Err(Problem::new(at, "a schema must be an object")),
        };
        let Some(reference) = object.get("$ref") else { return self.keywords(object, at) };
        let here = child(at, "$ref");
        let reference = reference.as_str().ok_or_else(|| Problem::new(&here, "`$ref` must be a string"))?;
        let expanded = self.expand(reference, &here)?;
        if object.len() == 1 {
            return Ok(expanded);
        }
        // Keywords beside the reference (a `description`, 3.0's `nullable`) apply to it too.
        let mut siblings = object.clone();
        siblings.remove("$ref");
        let nullable = self.document.v30 && siblings.remove("nullable") == Some(Value::Bool(true));
        let beside = self.keywords(&siblings, at)?;
        Ok(match (expanded, beside) {
            (Value::Object(mut expanded), Value::Object(beside)) => {
                expanded.extend(beside);
                if nullable {
                    allow_null(&mut expanded);
                }
                Value::Object(expanded)
            }
            (expanded, _) => expanded,
        })
    }

    fn expand(&mut self, reference: &str, at: &str) -> Result<Value, Problem> {
        if self.inside.iter().any(|outer| outer == reference) {
            return Ok(json!({ "$comment": format!("{reference} again (recursive): not expanded") }));
        }
        if self.left == 0 {
            return Ok(json!({ "$comment": format!("{reference}: not expanded (the schema's size bound)") }));
        }
        let target = self.document.lookup(reference, at)?;
        self.inside.push(reference.to_owned());
        let converted = self.convert(target, reference);
        self.inside.pop();
        converted
    }

    fn keywords(&mut self, object: &Map<String, Value>, at: &str) -> Result<Value, Problem> {
        self.left = self.left.saturating_sub(1);
        let mut out = Map::new();
        for (key, value) in object {
            let here = child(at, key);
            let converted = match key.as_str() {
                key if key.starts_with("x-") || DROPPED.contains(&key) => continue,
                // 3.0 (draft 4): `items` may be an array of schemas too.
                key if ONE.contains(&key) => match value {
                    Value::Array(items) => Value::Array(self.each(items, &here)?),
                    _ => self.convert(value, &here)?,
                },
                key if MANY.contains(&key) => match value {
                    Value::Array(items) => Value::Array(self.each(items, &here)?),
                    _ => return Err(Problem::new(here, format!("`{key}` must be an array of schemas"))),
                },
                key if NAMED.contains(&key) => match value {
                    Value::Object(named) => {
                        let mut converted = Map::new();
                        for (name, schema) in named {
                            converted.insert(name.clone(), self.convert(schema, &child(&here, name))?);
                        }
                        Value::Object(converted)
                    }
                    _ => return Err(Problem::new(here, format!("`{key}` must map names to schemas"))),
                },
                "example" => {
                    if !object.contains_key("examples") {
                        out.insert("examples".to_owned(), json!([value]));
                    }
                    continue;
                }
                "nullable" => continue,
                _ => value.clone(),
            };
            out.insert(key.clone(), converted);
        }
        if self.document.v30 {
            openapi_30(object, &mut out);
        }
        Ok(Value::Object(out))
    }

    fn each(&mut self, items: &[Value], at: &str) -> Result<Vec<Value>, Problem> {
        items.iter().enumerate().map(|(i, item)| self.convert(item, &child(at, &i.to_string()))).collect()
    }
}

/// OpenAPI 3.0's keywords as JSON Schema 2020-12 says them: `nullable: true` allows `null`; a
/// boolean `exclusiveMinimum` (`exclusiveMaximum`) takes the value of `minimum` (`maximum`).
fn openapi_30(object: &Map<String, Value>, out: &mut Map<String, Value>) {
    for (exclusive, bound) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
        if let Some(Value::Bool(is)) = object.get(exclusive) {
            out.remove(exclusive);
            if *is && let Some(value) = out.remove(bound) {
                out.insert(exclusive.to_owned(), value);
            }
        }
    }
    if object.get("nullable") == Some(&Value::Bool(true)) {
        allow_null(out);
    }
}

/// 3.0's `nullable: true`: `null` added to the type (and to the `enum`), else allowed beside the
/// schema.
fn allow_null(out: &mut Map<String, Value>) {
    if let Some(Value::Array(values)) = out.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    match out.get_mut("type") {
        Some(Value::String(ty)) => {
            let ty = std::mem::take(ty);
            out.insert("type".to_owned(), json!([ty, "null"]));
        }
        Some(Value::Array(types)) if !types.contains(&json!("null")) => types.push(json!("null")),
        Some(_) => {}
        None => {
            let inner = std::mem::take(out);
            out.insert("anyOf".to_owned(), json!([Value::Object(inner), { "type": "null" }]));
        }
    }
}

/// `%XX` sequences decoded (a URI fragment's), bytes that do not form UTF-8 replaced.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            (byte, ..) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(root: &Value, v30: bool, schema: &Value) -> Result<Value, Problem> {
        Document { root, v30 }.schemas().convert(schema, "#/test")
    }

    #[test]
    fn references_are_expanded_and_a_cycle_is_cut_where_it_comes_back() {
        let root = json!({ "components": { "schemas": {
            "Node": { "type": "object", "properties": {
                "name": { "type": "string" },
                "children": { "type": "array", "items": { "$ref": "#/components/schemas/Node" } },
                "owner": { "$ref": "#/components/schemas/Person", "description": "who" },
            }, "x-internal": true, "discriminator": { "propertyName": "name" } },
            "Person": { "type": "object", "properties": { "id": { "type": "integer" } } },
            "a/b": { "type": "string" },
        } } });
        let node = convert(&root, false, &json!({ "$ref": "#/components/schemas/Node" })).unwrap();
        assert_eq!(node["properties"]["name"], json!({ "type": "string" }));
        let again = &node["properties"]["children"]["items"];
        assert_eq!(again["$comment"], "#/components/schemas/Node again (recursive): not expanded");
        assert_eq!(node["properties"]["owner"]["properties"]["id"]["type"], "integer");
        assert_eq!(node["properties"]["owner"]["description"], "who");
        assert!(node.get("x-internal").is_none() && node.get("discriminator").is_none(), "{node}");
        let escaped = convert(&root, false, &json!({ "$ref": "#/components/schemas/a~1b" })).unwrap();
        assert_eq!(escaped, json!({ "type": "string" }));
    }

    #[test]
    fn a_dangling_or_external_reference_is_named_with_where_it_is() {
        let root = json!({});
        let dangling =
            convert(&root, false, &json!({ "properties": { "a": { "$ref": "#/components/schemas/Gone" } } }));
        assert_eq!(
            dangling.unwrap_err().to_string(),
            "`#/test/properties/a/$ref`: `#/components/schemas/Gone` points at nothing"
        );
        let external = convert(&root, false, &json!({ "$ref": "other.yaml#/Pet" })).unwrap_err();
        assert_eq!(external.at, "#/test/$ref");
        assert!(external.what.contains("not in this document"), "{external}");
    }

    #[test]
    fn openapi_30_keywords_become_json_schema_2020_12() {
        let root = json!({ "components": { "schemas": { "Pet": { "type": "object" } } } });
        let converted = convert(
            &root,
            true,
            &json!({ "type": "object", "properties": {
                "age": { "type": "integer", "nullable": true, "minimum": 0, "exclusiveMinimum": true, "example": 3 },
                "kind": { "type": "string", "enum": ["cat", "dog"], "nullable": true },
                "pet": { "$ref": "#/components/schemas/Pet", "nullable": true },
                "n": { "type": "number", "maximum": 5, "exclusiveMaximum": false },
            } }),
        )
        .unwrap();
        let properties = &converted["properties"];
        assert_eq!(properties["age"], json!({ "type": ["integer", "null"], "exclusiveMinimum": 0, "examples": [3] }));
        assert_eq!(properties["kind"], json!({ "type": ["string", "null"], "enum": ["cat", "dog", null] }));
        assert_eq!(properties["pet"], json!({ "type": ["object", "null"] }));
        assert_eq!(properties["n"], json!({ "type": "number", "maximum": 5 }));
        // 3.1 says it in JSON Schema already: `nullable` means nothing there.
        let v31 = convert(&root, false, &json!({ "type": "string", "nullable": true })).unwrap();
        assert_eq!(v31, json!({ "type": "string" }));
    }

    #[test]
    fn references_that_fan_out_stop_being_expanded_at_the_bound() {
        // Each level refers to the next twice: 2^20 schemas if every reference were expanded.
        let mut schemas = Map::new();
        for level in 0..20 {
            let next = json!({ "$ref": format!("#/components/schemas/L{}", level + 1) });
            schemas.insert(format!("L{level}"), json!({ "type": "object", "properties": { "a": next, "b": next } }));
        }
        schemas.insert("L20".to_owned(), json!({ "type": "string" }));
        let root = json!({ "components": { "schemas": schemas } });
        let converted = convert(&root, false, &json!({ "$ref": "#/components/schemas/L0" })).unwrap();
        let text = converted.to_string();
        assert!(text.contains("not expanded (the schema's size bound)"));
        assert!(text.len() < 4 << 20, "{} bytes", text.len());
    }

    #[test]
    fn a_pointer_is_percent_decoded() {
        assert_eq!(percent_decode("/paths/~1a%7Bb%7D"), "/paths/~1a{b}");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }
}
