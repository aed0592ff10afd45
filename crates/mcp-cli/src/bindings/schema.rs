//! A tool's schemas → Rust types, by typify (0.8), one `TypeSpace` per tool so that two tools'
//! `$defs` of the same name stay apart.
//!
//! typify is given one definition per type: the arguments (`{Tool}Args`), the output
//! (`{Tool}Output`) and each `$defs`/`definitions` entry of either schema, every `$ref` rewritten
//! to name one of them. Before that, a few rewrites keep the output within what a user's crate
//! can build with only `serde` and `serde_json`, and make unions decodable:
//! - `const` becomes a one-value `enum` (typify ignores `const`, so a tagged `oneOf` would
//!   decode as its first fitting member);
//! - `format`s typify maps to other crates (`uuid`, `date`, `date-time`: uuid, chrono) are
//!   dropped, leaving `String`;
//! - `pattern`, `minLength` and `maxLength` are dropped (typify would emit validated newtypes,
//!   `pattern` needing the regress crate); the server still validates the arguments;
//! - `patternProperties` and `propertyNames` are dropped for the same reason.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::{Map, Value};

/// Why a tool's schemas gave no types.
#[derive(Debug)]
pub enum Untyped {
    /// The schemas are broken (a `$ref` to nothing, a `$defs` that is not an object): an error.
    Invalid(String),
    /// typify cannot express them: the tool is bound untyped, saying why.
    Unsupported(String),
}

/// Turns a tool's input (and output) schema into typify's items, the root types named `args`
/// (and `output`). The error is a sentence about the tool saying what is wrong.
pub fn tool_types(args: &str, input: &Value, output: Option<(&str, &Value)>) -> Result<Vec<syn::Item>, Untyped> {
    let invalid = Untyped::Invalid;
    let mut definitions = BTreeMap::new();
    // The output's root is reserved first so that no input definition takes its name.
    if let Some((name, _)) = output {
        definitions.insert(name.to_owned(), Value::Null);
    }
    split(args, &closed_if_empty(input), &mut definitions, "inputSchema", "Args").map_err(invalid)?;
    if let Some((name, schema)) = output {
        definitions.remove(name);
        split(name, schema, &mut definitions, "outputSchema", "Output").map_err(invalid)?;
    }
    let mut schemas = Vec::new();
    for (name, schema) in definitions {
        let schema: schemars::schema::Schema = serde_json::from_value(schema)
            .map_err(|e| Untyped::Invalid(format!("its schema for `{name}` is not a JSON Schema typify reads: {e}")))?;
        schemas.push((name, schema));
    }

    let mut settings = typify::TypeSpaceSettings::default();
    settings.with_derive("PartialEq".into()).with_map_type("::std::collections::BTreeMap");
    // typify asserts or reaches `todo!` on some schemas; that must not take the caller down.
    let stream = catch_unwind(AssertUnwindSafe(|| {
        let mut space = typify::TypeSpace::new(&settings);
        space.add_ref_types(schemas).map_err(|e| e.to_string())?;
        if space.uses_chrono() || space.uses_regress() || space.uses_uuid() {
            return Err("its types would need a crate other than serde and serde_json".to_owned());
        }
        Ok(space.to_stream())
    }))
    .map_err(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        format!("typify cannot handle its schemas: {}", message.lines().next().unwrap_or_default())
    })
    .and_then(|typed| typed)
    .map_err(Untyped::Unsupported)?;
    let file: syn::File =
        syn::parse2(stream).map_err(|e| Untyped::Unsupported(format!("typify's output does not parse: {e}")))?;

    let mut items = file.items;
    // typify always emits its `error` module; most tools' types (no string enums) never use it.
    let uses_conversion_error = items.iter().any(|item| {
        !matches!(item, syn::Item::Mod(m) if m.ident == "error")
            && quote::quote!(#item).to_string().contains("ConversionError")
    });
    if !uses_conversion_error {
        items.retain(|item| !matches!(item, syn::Item::Mod(m) if m.ident == "error"));
    }
    let mut seen = BTreeSet::new();
    for item in &items {
        if let Some(ident) = item_ident(item)
            && !seen.insert(ident.to_string())
        {
            return Err(Untyped::Unsupported(format!("two of its types are both named `{ident}`")));
        }
    }
    Ok(items)
}

/// A tool that declares no arguments (`{"type": "object"}`, `"properties": {}` or none) gets an arguments struct with no
/// fields, which serializes as `{}`, rather than typify's free-form map.
fn closed_if_empty(input: &Value) -> Value {
    let mut input = input.clone();
    if let Some(object) = input.as_object_mut()
        && object.get("type").and_then(Value::as_str) == Some("object")
        && !["additionalProperties", "patternProperties", "allOf", "anyOf", "oneOf", "$ref", "if"]
            .iter()
            .any(|k| object.contains_key(*k))
        && object.get("properties").is_none_or(|p| p.as_object().is_some_and(|p| p.is_empty()))
    {
        object.insert("additionalProperties".into(), Value::Bool(false));
    }
    input
}

/// The name an item defines in the type namespace.
pub fn item_ident(item: &syn::Item) -> Option<&syn::Ident> {
    match item {
        syn::Item::Struct(s) => Some(&s.ident),
        syn::Item::Enum(e) => Some(&e.ident),
        syn::Item::Type(t) => Some(&t.ident),
        syn::Item::Mod(m) => Some(&m.ident),
        _ => None,
    }
}

/// Moves `schema`'s `$defs` into `definitions` and adds the rest of it as `root`, every `$ref`
/// rewritten to the names given. A definition whose name is taken (by a root type, or by the
/// input schema's definitions when this is the output schema) gets `prefix` before it: the two
/// schemas are separate documents, so a name they share need not mean the same type.
fn split(
    root: &str,
    schema: &Value,
    definitions: &mut BTreeMap<String, Value>,
    which: &str,
    prefix: &str,
) -> Result<(), String> {
    let mut schema = schema.clone();
    let mut defs = Map::new();
    if let Some(object) = schema.as_object_mut() {
        for key in ["$defs", "definitions"] {
            match object.remove(key) {
                Some(Value::Object(map)) => defs.extend(map),
                Some(_) => return Err(format!("its {which} has a `{key}` that is not an object")),
                None => {}
            }
        }
    }
    let mut renames = BTreeMap::new();
    for name in defs.keys() {
        let mut new = name.clone();
        while new == root || definitions.contains_key(&new) || renames.values().any(|v| *v == new) {
            new.insert_str(0, prefix);
        }
        renames.insert(name.clone(), new);
    }
    let resolve = |reference: &str| -> Result<String, String> {
        if reference == "#" {
            return Ok(root.to_owned());
        }
        let name = reference
            .strip_prefix("#/$defs/")
            .or_else(|| reference.strip_prefix("#/definitions/"))
            .filter(|n| !n.contains('/'))
            .map(|n| n.replace("~1", "/").replace("~0", "~"))
            .ok_or_else(|| {
                format!(
                    "its {which} has a `$ref` to `{reference}`: only `#`, `#/$defs/NAME` and `#/definitions/NAME` are supported"
                )
            })?;
        renames
            .get(&name)
            .cloned()
            .ok_or_else(|| format!("its {which} has a `$ref` to `{reference}`, which it does not define"))
    };
    rewrite(&mut schema, &resolve)?;
    definitions.insert(root.to_owned(), schema);
    for (name, mut def) in defs {
        rewrite(&mut def, &resolve)?;
        definitions.insert(renames[&name].clone(), def);
    }
    Ok(())
}

/// The keywords whose value is a schema, an array of schemas, or a map of schemas.
const ONE: &[&str] = &[
    "additionalProperties",
    "items",
    "additionalItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
];
const MANY: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];
const MAP: &[&str] = &["properties", "dependentSchemas", "$defs", "definitions"];

/// A subschema that only says which members must be present (`{"required": ["phone"]}`), as
/// `anyOf`/`allOf` members do for "one of these is required": no type in it.
fn constraint_only(schema: &Value) -> bool {
    schema.as_object().is_some_and(|object| {
        object.keys().all(|key| {
            matches!(
                key.as_str(),
                "required" | "minProperties" | "maxProperties" | "description" | "title" | "$comment"
            )
        })
    })
}

/// Applies the rewrites of the module docs to a schema and every schema inside it.
fn rewrite(schema: &mut Value, resolve: &dyn Fn(&str) -> Result<String, String>) -> Result<(), String> {
    let Value::Object(object) = schema else { return Ok(()) };
    if let Some(Value::String(reference)) = object.get("$ref") {
        let target = resolve(reference)?;
        object
            .insert("$ref".into(), Value::String(format!("#/$defs/{}", target.replace('~', "~0").replace('/', "~1"))));
    }
    if let Some(value) = object.remove("const")
        && !object.contains_key("enum")
    {
        object.insert("enum".into(), Value::Array(vec![value]));
    }
    if matches!(object.get("format").and_then(Value::as_str), Some("uuid" | "date" | "date-time")) {
        object.remove("format");
    }
    for key in ["pattern", "minLength", "maxLength", "patternProperties", "propertyNames"] {
        object.remove(key);
    }
    // Conditions on which members are present shape no type (typify refuses `if`): the members
    // they concern stay optional, and the server still validates.
    for key in ["if", "then", "else", "dependentRequired", "dependentSchemas", "not"] {
        object.remove(key);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(members)) = object.get_mut(key) {
            members.retain(|member| !constraint_only(member));
            if members.is_empty() {
                object.remove(key);
            }
        }
    }
    for key in ONE {
        if let Some(inner @ Value::Object(_)) = object.get_mut(*key) {
            rewrite(inner, resolve)?;
        }
    }
    for key in MANY {
        if let Some(Value::Array(inner)) = object.get_mut(*key) {
            inner.iter_mut().try_for_each(|s| rewrite(s, resolve))?;
        }
    }
    for key in MAP {
        if let Some(Value::Object(inner)) = object.get_mut(*key) {
            inner.values_mut().try_for_each(|s| rewrite(s, resolve))?;
        }
    }
    Ok(())
}
