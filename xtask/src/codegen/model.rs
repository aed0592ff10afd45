//! Schema → intermediate model: named structs, unions and aliases, with every naming and
//! discrimination decision made here so that the emitter only prints.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::{Context, bail};
use serde_json::{Map, Value};

mod marks;
mod messages;
mod names;
mod unions;
pub use names::*;
// Below this model and the corrections it applies, which both speak of types.
pub use super::ty::Ty;

#[derive(Debug)]
pub struct Field {
    pub json: String,
    pub ident: String,
    pub ty: Ty,
    pub required: bool,
    /// `null` is a valid value (required nullable fields are `Option` but always encoded).
    pub nullable: bool,
    /// Absent means `Default::default()` (`resultType`).
    pub default_if_absent: bool,
    /// Not `required` (decoding tolerates its absence, see `corrections::tolerance`), yet a
    /// constructor argument because senders MUST write it.
    pub constructor_arg: bool,
    /// Typed by an alias of free-form JSON (`JSONObject`, `MetaObject`): decoded as free-form.
    pub free_form_alias: bool,
    pub doc: Option<String>,
}

/// A required `const` member: not stored, checked on decode, written on encode.
#[derive(Debug)]
pub struct ConstField {
    pub json: String,
    pub value: Value,
}

#[derive(Debug)]
pub struct StructDef {
    pub name: String,
    pub schema_name: Option<String>,
    pub doc: Option<String>,
    pub fields: Vec<Field>,
    pub consts: Vec<ConstField>,
    /// Unknown members are kept in `extra` (every object the schema does not close).
    pub open: bool,
    /// `(member, values, optional)`: string tags checked when scoring union variants.
    pub score_tags: Vec<(String, Vec<String>, bool)>,
    pub default: bool,
}

#[derive(Debug)]
pub enum Strategy {
    /// Read keys until the tag (or a key only one variant declares), then decode that variant
    /// from the rest of the object without buffering it.
    Tag {
        key: String,
        /// Members declared by exactly one variant: meeting one first decides the variant (the
        /// tag, when it comes later, is still checked against it). Used for `resultType`, which
        /// servers often write last.
        exclusive_keys: Vec<(String, usize)>,
        /// Variant index used when the tag is absent.
        default: Option<usize>,
        /// Type of the catch-all variant for unknown tags (unknown methods stay representable).
        other: Option<Ty>,
    },
    /// Buffer the value and pick the most specific fitting variant; ties are errors.
    Score,
}

#[derive(Debug)]
pub struct Variant {
    pub ident: String,
    pub ty: Ty,
    pub tags: Vec<String>,
    /// Same shape as an earlier variant (ignoring descriptions): decoding yields that one.
    pub same_as: Option<usize>,
    /// Typed by an alias of free-form JSON: decoded as free-form.
    pub free_form_alias: bool,
}

#[derive(Debug)]
pub struct UnionDef {
    pub name: String,
    pub schema_name: Option<String>,
    pub doc: Option<String>,
    pub variants: Vec<Variant>,
    pub strategy: Strategy,
}

#[derive(Debug)]
pub struct AliasDef {
    pub name: String,
    pub doc: Option<String>,
    pub ty: Ty,
}

#[derive(Debug)]
pub enum Item {
    Struct(StructDef),
    Union(UnionDef),
    Alias(AliasDef),
    /// A schema definition replaced by a hand-written crate type, re-exported under its name.
    Reexport {
        path: &'static str,
        schema_name: String,
        doc: String,
    },
}

#[derive(Debug)]
pub struct EnumSpec {
    pub values: Vec<String>,
    pub doc: Option<String>,
}

#[derive(Debug)]
pub struct Method {
    pub method: String,
    pub ty: String,
    pub params: Ty,
    pub result: Option<Ty>,
}

/// Typed top-level message unions for revisions whose request types carry `id`.
#[derive(Debug)]
pub struct MessageDef {
    pub name: String,
    pub doc: String,
    pub request: Option<String>,
    pub notification: String,
    pub responses: bool,
}

#[derive(Debug)]
pub struct Module {
    pub items: Vec<Item>,
    pub enums: BTreeMap<String, EnumSpec>,
    pub requests: Vec<Method>,
    pub notifications: Vec<Method>,
    pub messages: Vec<MessageDef>,
    /// Schema definition name → Rust name, for doc links.
    pub names: BTreeMap<String, String>,
}

pub fn build(schema: &Value) -> anyhow::Result<Module> {
    let (defs, prefix) = if let Some(d) = schema.get("$defs").and_then(Value::as_object) {
        (d, "#/$defs/")
    } else {
        (
            schema.get("definitions").and_then(Value::as_object).context("schema has neither $defs nor definitions")?,
            "#/definitions/",
        )
    };
    let mut b = Builder {
        defs,
        prefix,
        items: Vec::new(),
        enums: BTreeMap::new(),
        enum_names: HashMap::new(),
        taken: BTreeSet::new(),
        kinds: HashMap::new(),
    };
    let mut names = BTreeMap::new();
    for name in defs.keys() {
        b.taken.insert(rust_type_name(name));
        names.insert(name.clone(), rust_type_name(name));
    }
    for (name, def) in defs {
        b.build_def(name, def).with_context(|| format!("definition {name}"))?;
    }
    b.mark_defaults();
    b.mark_free_form_aliases();
    let (requests, notifications) = b.methods()?;
    let messages = b.messages();
    Ok(Module { items: b.items, enums: b.enums, requests, notifications, messages, names })
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Struct,
    Union,
    Enum,
    Other,
}

struct Builder<'a> {
    defs: &'a Map<String, Value>,
    prefix: &'static str,
    items: Vec<Item>,
    enums: BTreeMap<String, EnumSpec>,
    /// (field name, values) → enum name, so identical inline enums share one type.
    enum_names: HashMap<(String, Vec<String>), String>,
    taken: BTreeSet<String>,
    kinds: HashMap<String, Kind>,
}

fn description(schema: &Value) -> Option<String> {
    schema.get("description").and_then(Value::as_str).map(str::to_owned)
}

/// `the `x` member of [`Parent`]`; `json` as `field_ty` builds it: `{member}Item` for an array's
/// items, `{member}Value` for a map's values (no schema member name ends so).
fn member_phrase(parent: Option<&str>, json: &str) -> String {
    let of = parent.map(|p| format!(" of [`{p}`]")).unwrap_or_default();
    if let Some(member) = json.strip_suffix("Item") {
        format!("an item of the `{member}` member{of}")
    } else if let Some(member) = json.strip_suffix("Value") {
        format!("a value of the `{member}` member{of}")
    } else {
        format!("the `{json}` member{of}")
    }
}

fn string_values(schema: &Value) -> Option<Vec<String>> {
    if let Some(c) = schema.get("const").and_then(Value::as_str) {
        return Some(vec![c.to_owned()]);
    }
    schema.get("enum")?.as_array()?.iter().map(|v| v.as_str().map(str::to_owned)).collect()
}

impl<'a> Builder<'a> {
    fn ref_name<'s>(&self, schema: &'s Value) -> Option<&'s str> {
        schema.get("$ref")?.as_str()?.strip_prefix(self.prefix)
    }

    fn def(&self, name: &str) -> anyhow::Result<&'a Value> {
        self.defs.get(name).with_context(|| format!("unresolved $ref {name}"))
    }

    /// Follows `$ref` chains to the schema object that describes the shape.
    fn resolve(&self, schema: &'a Value) -> anyhow::Result<&'a Value> {
        let mut s = schema;
        while let Some(name) = s.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix(self.prefix)) {
            s = self.def(name)?;
        }
        Ok(s)
    }

    fn ref_ty(&self, name: &str) -> anyhow::Result<Ty> {
        if let Some((ty, _)) = replacement(name) {
            return Ok(ty);
        }
        if let Some(ty) = json_alias(name) {
            return Ok(ty);
        }
        self.def(name)?;
        Ok(Ty::Named(rust_type_name(name)))
    }

    fn claim(&mut self, name: String) -> anyhow::Result<String> {
        if !self.taken.insert(name.clone()) {
            bail!("generated type name {name} is used twice; add a naming rule in codegen/model.rs");
        }
        Ok(name)
    }

    fn build_def(&mut self, name: &str, def: &'a Value) -> anyhow::Result<()> {
        let rust = rust_type_name(name);
        let doc = description(def);
        if let Some((_, path)) = replacement(name) {
            self.kinds.insert(rust.clone(), Kind::Other);
            self.items.push(Item::Reexport {
                path,
                schema_name: name.into(),
                doc: format!("The schema's `{name}` is the shared [`{path}`]."),
            });
            return Ok(());
        }
        if let Some(ty) = json_alias(name) {
            self.kinds.insert(rust.clone(), Kind::Other);
            let why = "The schema's form admits no fractions and no `null`, which the protocol's \
                       TypeScript source allows, so plain JSON is used.";
            self.items.push(Item::Alias(AliasDef {
                name: rust,
                doc: Some(format!("`{name}`: any JSON value of this shape. {why}")),
                ty,
            }));
            return Ok(());
        }
        if let Some(target) = self.ref_name(def) {
            let ty = self.ref_ty(target)?;
            self.kinds.insert(rust.clone(), Kind::Other);
            self.items.push(Item::Alias(AliasDef { name: rust, doc, ty }));
            return Ok(());
        }
        if let Some(members) = def.get("anyOf").and_then(Value::as_array) {
            self.kinds.insert(rust.clone(), Kind::Union);
            return self.build_union(rust, Some(name.into()), doc, members);
        }
        // 2026-07-28 spells the one-member `ClientNotification` union as a copy of
        // `CancelledNotification`; it stays a union here, like in every other revision.
        if matches!(name, "ClientRequest" | "ServerRequest" | "ClientNotification" | "ServerNotification")
            && let Some(same) = self.equal_def_except(def, name)
        {
            self.kinds.insert(rust.clone(), Kind::Union);
            let member = serde_json::json!({ "$ref": format!("{}{same}", self.prefix) });
            let members: &'a [Value] = Box::leak(vec![member].into_boxed_slice());
            return self.build_union(rust, Some(name.into()), doc, members);
        }
        if def.get("allOf").is_some() || is_struct_schema(def) {
            self.kinds.insert(rust.clone(), Kind::Struct);
            return self.build_struct(rust, Some(name.into()), def);
        }
        if let Some(values) = string_values(def) {
            self.kinds.insert(rust.clone(), Kind::Enum);
            self.enums.insert(rust, EnumSpec { values, doc });
            return Ok(());
        }
        let ty = self.field_ty(&rust, "", def)?;
        self.kinds.insert(rust.clone(), Kind::Other);
        self.items.push(Item::Alias(AliasDef { name: rust, doc, ty }));
        Ok(())
    }

    /// Properties and required names of an object schema, merging `allOf` members in order.
    fn collect_props(
        &self,
        schema: &'a Value,
        props: &mut Vec<(String, &'a Value)>,
        required: &mut BTreeSet<String>,
    ) -> anyhow::Result<()> {
        let schema = self.resolve(schema)?;
        if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
            for member in all {
                // Its members would be lost: `inlined::normalize` distributes such an `allOf`.
                if self.resolve(member)?.get("anyOf").is_some() {
                    bail!("an `allOf` member is a union: distribute it (see codegen/inlined.rs)");
                }
                self.collect_props(member, props, required)?;
            }
        }
        if let Some(p) = schema.get("properties").and_then(Value::as_object) {
            for (k, v) in p {
                match props.iter_mut().find(|(name, _)| name == k) {
                    Some(slot) => slot.1 = v,
                    None => props.push((k.clone(), v)),
                }
            }
        }
        if let Some(r) = schema.get("required").and_then(Value::as_array) {
            required.extend(r.iter().filter_map(Value::as_str).map(str::to_owned));
        }
        Ok(())
    }

    fn build_struct(&mut self, name: String, schema_name: Option<String>, schema: &'a Value) -> anyhow::Result<()> {
        let mut props = Vec::new();
        let mut required = BTreeSet::new();
        self.collect_props(schema, &mut props, &mut required)?;
        let mut fields = Vec::new();
        let mut consts = Vec::new();
        let mut score_tags = Vec::new();
        for (json, prop) in props {
            let prop_resolved = self.resolve(prop)?;
            let tolerance = super::corrections::tolerance(&json, prop_resolved);
            let absent_ok = required.contains(&json) && tolerance.as_ref().is_some_and(|t| t.absent_ok);
            let is_required = required.contains(&json) && !absent_ok;
            if is_required
                && prop.get("const").is_none()
                && prop_resolved.get("const").is_none()
                && let Some(values) = string_values(prop_resolved)
            {
                score_tags.push((json.clone(), values, false));
            }
            if let Some(value) = prop.get("const").or_else(|| prop_resolved.get("const")) {
                if is_required {
                    if let Some(s) = value.as_str() {
                        score_tags.push((json.clone(), vec![s.to_owned()], false));
                    }
                    consts.push(ConstField { json, value: value.clone() });
                    continue;
                } else if let Some(s) = value.as_str() {
                    score_tags.push((json.clone(), vec![s.to_owned()], true));
                }
            }
            let (ty, default_if_absent) = if json == "resultType" {
                (Ty::Path("crate::ResultType"), true)
            } else if json == "result"
                && matches!(schema_name.as_deref(), Some("JSONRPCResponse" | "JSONRPCResultResponse"))
            {
                // Its type depends on the request answered, which the message does not name: kept
                // as text and decoded by method (`RawResult::decode`).
                (Ty::Path("crate::RawResult"), false)
            } else if let Some(ty) = tolerance.as_ref().and_then(|t| t.ty.clone()) {
                (ty, false)
            } else {
                (self.field_ty(&name, &json, prop)?, false)
            };
            let nullable =
                prop_resolved.get("type").and_then(Value::as_array).is_some_and(|t| t.iter().any(|v| v == "null"));
            let mut doc = description(prop);
            if let Some(t) = &tolerance {
                doc = Some(format!("{}\n\n{}", doc.unwrap_or_default(), t.note));
            }
            fields.push(Field {
                ident: field_ident(&json),
                doc,
                json,
                ty: super::corrections::boxed(ty),
                required: is_required,
                nullable,
                default_if_absent,
                constructor_arg: absent_ok,
                free_form_alias: false,
            });
        }
        // resultType discriminates 2026-07-28 results: `input_required` only on InputRequiredResult.
        if fields.iter().any(|f| f.json == "resultType") && schema_name.as_deref() != Some("Result") {
            let input_required = schema_name.as_deref() == Some("InputRequiredResult");
            score_tags.push((
                "resultType".into(),
                vec![if input_required { "input_required" } else { "complete" }.into()],
                !input_required,
            ));
        }
        let open = schema.get("additionalProperties") != Some(&Value::Bool(false));
        let doc = description(schema);
        self.items.push(Item::Struct(StructDef {
            name,
            schema_name,
            doc,
            fields,
            consts,
            open,
            score_tags,
            default: false,
        }));
        Ok(())
    }

    fn inline_name(&self, parent: &str, json: &str) -> String {
        match json {
            "_meta" => format!("{parent}Meta"),
            "error" => format!("{parent}Object"),
            "data" if parent.ends_with("ErrorObject") => format!("{}Data", parent.trim_end_matches("Object")),
            "result" if parent.ends_with("ResultResponse") => {
                format!("{}Outcome", parent.trim_end_matches("ResultResponse"))
            }
            "tasks" if parent.ends_with("Capabilities") => {
                format!("{}TasksCapability", parent.trim_end_matches("Capabilities"))
            }
            _ if parent == "ClientCapabilities" || parent == "ServerCapabilities" => {
                format!("{}Capability", pascal(json))
            }
            _ => format!("{parent}{}", pascal(json)),
        }
    }

    fn field_ty(&mut self, parent: &str, json: &str, prop: &'a Value) -> anyhow::Result<Ty> {
        if let Some(target) = self.ref_name(prop) {
            return self.ref_ty(target);
        }
        if parent == "Tool" && (json == "inputSchema" || json == "outputSchema") {
            let requires_object = prop
                .get("properties")
                .and_then(|p| p.get("type"))
                .and_then(|t| t.get("const"))
                .is_some_and(|c| c == "object")
                && prop.get("required").and_then(Value::as_array).is_some_and(|r| r.iter().any(|v| v == "type"));
            return Ok(Ty::Path(if requires_object { "crate::ObjectSchema" } else { "crate::JsonSchema" }));
        }
        if parent == "JsonRpcError" && json == "error" {
            return Ok(Ty::Path("crate::ErrorObject"));
        }
        if let Some(values) = string_values(prop) {
            let doc = description(prop).or_else(|| Some(format!("The values of {}.", member_phrase(None, json))));
            return Ok(Ty::Named(self.inline_enum(parent, json, values, doc)?));
        }
        if let Some(members) = prop.get("anyOf").and_then(Value::as_array) {
            let name = self.claim(self.inline_name(parent, json))?;
            self.kinds.insert(name.clone(), Kind::Union);
            self.build_union(name.clone(), None, description(prop), members)?;
            return Ok(Ty::Named(name));
        }
        if prop.get("allOf").is_some() {
            let name = self.claim(self.inline_name(parent, json))?;
            self.kinds.insert(name.clone(), Kind::Struct);
            self.build_struct(name.clone(), None, prop)?;
            self.doc_if_missing(&name, parent, json);
            return Ok(Ty::Named(name));
        }
        let types: Vec<&str> = match prop.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect(),
            _ => vec![],
        };
        if types.len() > 1 {
            let members: Vec<Value> = types.iter().map(|t| serde_json::json!({ "type": t })).collect();
            let members: &'a [Value] = Box::leak(members.into_boxed_slice());
            let name = self.claim(self.inline_name(parent, json))?;
            self.kinds.insert(name.clone(), Kind::Union);
            self.build_union(name.clone(), None, description(prop), members)?;
            return Ok(Ty::Named(name));
        }
        Ok(match types.first().copied() {
            Some("string") => Ty::String,
            Some("boolean") => Ty::Bool,
            // Any JSON Schema integer (`1.0`, beyond 64 bits) decodes and re-encodes exactly.
            Some("integer") => Ty::Path("crate::Integer"),
            Some("number") => Ty::Number,
            Some("array") => match prop.get("items") {
                Some(items) => Ty::Vec(Box::new(self.field_ty(parent, &format!("{json}Item"), items)?)),
                None => Ty::Vec(Box::new(Ty::Value)),
            },
            Some("object") => {
                if has_properties(prop) {
                    let name = self.claim(self.inline_name(parent, json))?;
                    self.kinds.insert(name.clone(), Kind::Struct);
                    self.build_struct(name.clone(), None, prop)?;
                    self.doc_if_missing(&name, parent, json);
                    Ty::Named(name)
                } else {
                    match prop.get("additionalProperties") {
                        Some(ap @ Value::Object(o)) if !o.is_empty() => {
                            Ty::Map(Box::new(self.field_ty(parent, &format!("{json}Value"), ap)?))
                        }
                        _ => Ty::Object,
                    }
                }
            }
            Some(other) => bail!("unsupported type {other} at {parent}.{json}"),
            None => Ty::Value,
        })
    }

    /// An inline object the schema does not describe is documented as its parent's member.
    fn doc_if_missing(&mut self, name: &str, parent: &str, json: &str) {
        for item in self.items.iter_mut().rev() {
            if let Item::Struct(s) = item
                && s.name == name
            {
                if s.doc.is_none() {
                    let phrase = member_phrase(Some(parent), json);
                    let mut chars = phrase.chars();
                    let first = chars.next().map(|c| c.to_uppercase().collect::<String>()).unwrap_or_default();
                    s.doc = Some(format!("{first}{}.", chars.as_str()));
                }
                return;
            }
        }
    }

    fn inline_enum(
        &mut self,
        parent: &str,
        json: &str,
        values: Vec<String>,
        doc: Option<String>,
    ) -> anyhow::Result<String> {
        let key = (json.to_owned(), values.clone());
        if let Some(name) = self.enum_names.get(&key) {
            return Ok(name.clone());
        }
        // A field name used with different value sets elsewhere gets its parent's name in front.
        let clash = self.defs_use_field_with_other_values(json, &values);
        let short = pascal(json);
        let name = if !clash && !self.taken.contains(&short) { short } else { format!("{parent}{}", pascal(json)) };
        let name = self.claim(name)?;
        self.kinds.insert(name.clone(), Kind::Enum);
        self.enum_names.insert(key, name.clone());
        self.enums.insert(name.clone(), EnumSpec { values, doc });
        Ok(name)
    }

    fn defs_use_field_with_other_values(&self, json: &str, values: &[String]) -> bool {
        fn walk(v: &Value, json: &str, values: &[String], found: &mut bool) {
            match v {
                Value::Object(o) => {
                    if let Some(Value::Object(props)) = o.get("properties")
                        && let Some(p) = props.get(json)
                        && let Some(vs) = string_values(p)
                        && vs != values
                    {
                        *found = true;
                    }
                    o.values().for_each(|c| walk(c, json, values, found));
                }
                Value::Array(a) => a.iter().for_each(|c| walk(c, json, values, found)),
                _ => {}
            }
        }
        let mut found = false;
        self.defs.values().for_each(|d| walk(d, json, values, &mut found));
        found
    }

    /// Finds a definition equal to an inline schema (ignoring descriptions), so that inline copies
    /// such as the batch arrays of `JSONRPCMessage` reuse the named type.
    fn equal_def(&self, schema: &Value) -> Option<String> {
        self.equal_def_except(schema, "")
    }

    fn equal_def_except(&self, schema: &Value, except: &str) -> Option<String> {
        let target = strip_descriptions(schema);
        self.defs.iter().find(|(n, d)| *n != except && strip_descriptions(d) == target).map(|(n, _)| n.clone())
    }
}

fn has_properties(schema: &Value) -> bool {
    schema.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty())
}

fn is_struct_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object") && has_properties(schema)
}

fn strip_descriptions(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter().filter(|(k, _)| *k != "description").map(|(k, v)| (k.clone(), strip_descriptions(v))).collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_descriptions).collect()),
        other => other.clone(),
    }
}

/// Replaces every type of `module` that `core` (the module of revision `core_module`) also
/// generates by a re-export of the core's: an extension's schema restates the core definitions it
/// uses, and a second copy of each would be a different Rust type. Their `Request` and
/// `Notification` implementations stay with the core.
pub fn reexport_core(module: &mut Module, core: &Module, core_module: &str) {
    let core_names: BTreeSet<String> = core
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Struct(s) => Some(s.name.clone()),
            Item::Union(u) => Some(u.name.clone()),
            Item::Alias(_) | Item::Reexport { .. } => None,
        })
        .chain(core.enums.keys().cloned())
        .collect();
    // Only a schema definition gets a registry entry; a type made from part of one does not.
    let schema_name = |rust: &str| {
        module.names.iter().find(|(_, r)| *r == rust).map(|(schema, _)| schema.clone()).unwrap_or_default()
    };
    let reexport = |rust: &str, schema_name: String| Item::Reexport {
        path: Box::leak(format!("crate::{core_module}::{rust}").into_boxed_str()),
        doc: format!("The core definition, as in [`crate::{core_module}`]."),
        schema_name,
    };
    let mut items = Vec::with_capacity(module.items.len());
    for item in std::mem::take(&mut module.items) {
        let rust = match &item {
            Item::Struct(s) => &s.name,
            Item::Union(u) => &u.name,
            // An alias names the same type as the core's: kept, it also keeps its decoding
            // (a free-form alias decodes as free-form JSON on its own).
            Item::Alias(_) | Item::Reexport { .. } => {
                items.push(item);
                continue;
            }
        };
        if core_names.contains(rust) {
            items.push(reexport(rust, schema_name(rust)));
        } else {
            items.push(item);
        }
    }
    let enums: Vec<String> = module.enums.keys().filter(|e| core_names.contains(*e)).cloned().collect();
    for name in enums {
        module.enums.remove(&name);
        items.push(reexport(&name, schema_name(&name)));
    }
    module.items = items;
    module.requests.retain(|m| !core_names.contains(&m.ty));
    module.notifications.retain(|m| !core_names.contains(&m.ty));
}
