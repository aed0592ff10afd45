//! Extension schemas as zod writes them (`z.toJSONSchema`): every definition inlines the
//! definitions it uses, a string enum is an `anyOf` of `const`s, a forbidden member is
//! `{"not": {}}` and a recursive value hides in a definition's own `$defs`. [`normalize`] gives
//! inlined copies their names back (`$ref` to the definition they equal, the core revision's
//! included: [`adopt_core`]), so that the model sees the shapes it sees in the core schemas and a
//! type is generated once.

use serde_json::{Map, Value, json};

/// Members that do not change what a schema accepts.
const ANNOTATIONS: &[&str] = &["description", "title", "$comment", "examples", "$schema"];

/// Rewrites `schema` (with `$defs`) in place; see the module documentation.
pub fn normalize(schema: &mut Value, core: &Value) -> Vec<String> {
    let Some(defs) = schema.get_mut("$defs").and_then(Value::as_object_mut) else { return Vec::new() };
    let mut hoisted = Map::new();
    for def in defs.values_mut() {
        walk(def, &mut |node| hoist_nested_defs(node, &mut hoisted));
        walk(def, &mut const_any_of_to_enum);
        walk(def, &mut nullable_any_of_to_type_list);
        walk(def, &mut any_of_anything);
        walk(def, &mut all_of_alternatives_to_options);
        walk(def, &mut drop_forbidden_members);
        if let Some(object) = def.as_object_mut() {
            object.remove("$schema");
        }
    }
    for (name, body) in hoisted {
        defs.entry(name).or_insert(body);
    }
    let adopted = adopt_core(schema, core);
    let defs = schema["$defs"].as_object_mut().expect("checked above");
    // Each definition's canonical body, for finding its inlined copies. Bodies that say no more
    // than a primitive type are not worth a name of their own.
    let named: Vec<(String, Value)> = defs
        .iter()
        .map(|(name, def)| (name.clone(), canonical(def)))
        .filter(|(_, body)| body.as_object().is_some_and(|o| !o.is_empty() && (o.len() > 1 || !o.contains_key("type"))))
        // An open object with no members (`{"type":"object","additionalProperties":{}}`) is any
        // map: equal to a definition by accident, not a copy of it.
        .filter(|(_, body)| body.get("properties").is_some() || body.get("type") != Some(&json!("object")))
        .collect();
    for (name, def) in defs.iter_mut() {
        if !adopted.contains(name) {
            rereference(def, name, &named, true);
        }
    }
    distribute_unions(defs);
    adopted
}

/// `allOf: [A, U, B]` where `U` names a union (`anyOf` of `$ref`s `V1…Vn`) is the union of
/// `allOf: [A, Vi, B]`: each becomes a definition of its own, `{Def}{Vi}` (less the suffix the
/// variants share: `GetTaskResult` of `WorkingTask`, `InputRequiredTask`, … has the variants
/// `GetTaskResultWorking`, `GetTaskResultInputRequired`, …).
fn distribute_unions(defs: &mut Map<String, Value>) {
    let union_of = |defs: &Map<String, Value>, member: &Value| -> Option<(String, Vec<String>)> {
        let target = member.get("$ref")?.as_str()?.strip_prefix("#/$defs/")?;
        let variants = defs.get(target)?.get("anyOf")?.as_array()?;
        let names: Option<Vec<String>> =
            variants.iter().map(|v| v.get("$ref")?.as_str()?.strip_prefix("#/$defs/").map(str::to_owned)).collect();
        names.map(|names| (target.to_owned(), names))
    };
    let mut added = Vec::new();
    for (name, def) in defs.iter() {
        let Some(all) = def.get("allOf").and_then(Value::as_array) else { continue };
        let Some((at, (union, variants))) =
            all.iter().enumerate().find_map(|(i, member)| union_of(defs, member).map(|u| (i, u)))
        else {
            continue;
        };
        let suffix = common_suffix(&variants);
        let mut refs = Vec::new();
        for variant in &variants {
            let variant_name = format!("{name}{}", &variant[..variant.len() - suffix.len()]);
            let mut members = all.clone();
            members[at] = json!({"$ref": format!("#/$defs/{variant}")});
            let mut body = json!({"allOf": members});
            if let Some(description) = def.get("description") {
                body["description"] = description.clone();
            }
            refs.push(json!({"$ref": format!("#/$defs/{variant_name}")}));
            added.push((variant_name, body));
        }
        let mut union_def = json!({"anyOf": refs});
        union_def["description"] =
            def.get("description").cloned().unwrap_or_else(|| format!("One variant per [`{union}`] variant.").into());
        added.push((name.clone(), union_def));
    }
    for (name, body) in added {
        defs.insert(name, body);
    }
}

/// The longest suffix every name has, at a capital letter (`Task` of `WorkingTask`, `FailedTask`).
fn common_suffix(names: &[String]) -> String {
    let first = &names[0];
    let mut suffix = "";
    for (i, c) in first.char_indices().rev() {
        let candidate = &first[i..];
        if !names.iter().all(|n| n.ends_with(candidate) && n.len() > candidate.len()) {
            break;
        }
        if c.is_ascii_uppercase() {
            suffix = candidate;
        }
    }
    suffix.to_owned()
}

/// Calls `f` on every schema node below and including `node`, parents first.
fn walk(node: &mut Value, f: &mut impl FnMut(&mut Value)) {
    f(node);
    match node {
        Value::Object(object) => object.values_mut().for_each(|v| walk(v, f)),
        Value::Array(items) => items.iter_mut().for_each(|v| walk(v, f)),
        _ => {}
    }
}

/// `{"$defs": {"__schema0": …}}` inside a definition: the JSON value type zod writes for a
/// recursive `z.json()`. It is `JSONValue` (the name the core schemas give it).
fn hoist_nested_defs(node: &mut Value, hoisted: &mut Map<String, Value>) {
    let Some(object) = node.as_object_mut() else { return };
    let Some(Value::Object(nested)) = object.remove("$defs") else { return };
    for (name, body) in nested {
        let target = if is_json_value(&body) { "JSONValue".to_owned() } else { name.clone() };
        hoisted.insert(target.clone(), if target == "JSONValue" { json_value_def() } else { body });
        rename_refs(node, &format!("#/$defs/{name}"), &format!("#/$defs/{target}"));
    }
}

fn is_json_value(body: &Value) -> bool {
    let Some(variants) = body.get("anyOf").and_then(Value::as_array) else { return false };
    let types: Vec<&str> = variants.iter().filter_map(|v| v.get("type").and_then(Value::as_str)).collect();
    ["string", "number", "boolean", "null", "object", "array"].iter().all(|t| types.contains(t))
}

fn json_value_def() -> Value {
    json!({"description": "Any JSON value."})
}

fn rename_refs(node: &mut Value, from: &str, to: &str) {
    walk(node, &mut |n| {
        if let Some(Value::String(target)) = n.get_mut("$ref")
            && target == from
        {
            *target = to.to_owned();
        }
    });
}

/// `{"anyOf": [{"type": "string", "const": "a"}, …]}` → `{"type": "string", "enum": ["a", …]}`.
fn const_any_of_to_enum(node: &mut Value) {
    let Some(object) = node.as_object_mut() else { return };
    let Some(Value::Array(variants)) = object.get("anyOf") else { return };
    let values: Option<Vec<Value>> = variants
        .iter()
        .map(|v| match (v.get("type").and_then(Value::as_str), v.get("const")) {
            (Some("string"), Some(c @ Value::String(_))) if v.as_object().is_some_and(|o| o.len() == 2) => {
                Some(c.clone())
            }
            _ => None,
        })
        .collect();
    if let Some(values) = values {
        object.remove("anyOf");
        object.insert("type".into(), "string".into());
        object.insert("enum".into(), Value::Array(values));
    }
}

/// `{"anyOf": [{"type": "integer", …}, {"type": "null"}]}` → `{"type": ["integer", "null"], …}`,
/// the form the core schemas use for a member that may be `null`.
fn nullable_any_of_to_type_list(node: &mut Value) {
    let Some(object) = node.as_object_mut() else { return };
    let Some(Value::Array(variants)) = object.get("anyOf") else { return };
    let is_null = |v: &Value| {
        v.get("type").and_then(Value::as_str) == Some("null") && v.as_object().is_some_and(|o| o.len() == 1)
    };
    let [a, b] = variants.as_slice() else { return };
    let other = match (is_null(a), is_null(b)) {
        (false, true) => a,
        (true, false) => b,
        _ => return,
    };
    let Some(Value::String(ty)) = other.get("type") else { return };
    let mut merged = other.as_object().cloned().unwrap_or_default();
    merged.insert("type".into(), json!([ty, "null"]));
    object.remove("anyOf");
    object.extend(merged);
}

/// `{"anyOf": [{"type": "number"}, {}]}`: anything (zod's `z.number().or(z.unknown())`).
fn any_of_anything(node: &mut Value) {
    let Some(object) = node.as_object_mut() else { return };
    let anything = |v: &Value| v.as_object().is_some_and(Map::is_empty);
    if object.get("anyOf").and_then(Value::as_array).is_some_and(|vs| vs.iter().any(anything)) {
        object.remove("anyOf");
    }
}

/// `{"allOf": [{"anyOf": [A1, A2]}, {"anyOf": [B1, B2]}]}` of inline objects (one of `height`
/// or `maxHeight`, and one of `width` or `maxWidth`) → one object with every member optional.
/// Every valid instance decodes and re-encodes unchanged; which members go together is not
/// checked on decode.
fn all_of_alternatives_to_options(node: &mut Value) {
    let Some(object) = node.as_object_mut() else { return };
    let Some(Value::Array(members)) = object.get("allOf") else { return };
    let variants: Option<Vec<&Map<String, Value>>> =
        members.iter().map(|m| m.get("anyOf").and_then(Value::as_array)).collect::<Option<Vec<_>>>().and_then(
            |lists| {
                lists.into_iter().flatten().map(|v| v.as_object().filter(|o| o.contains_key("properties"))).collect()
            },
        );
    let Some(variants) = variants else { return };
    let mut properties = Map::new();
    for variant in &variants {
        properties.extend(variant["properties"].as_object().cloned().unwrap_or_default());
    }
    object.remove("allOf");
    object.insert("type".into(), "object".into());
    object.insert("properties".into(), Value::Object(properties));
}

/// `"csp": {"not": {}}` (a member that must be absent) is left out of `properties`; the object
/// still accepts it as an unknown member, which re-encodes unchanged. `additionalProperties:
/// {"not": {}}` is `false`.
fn drop_forbidden_members(node: &mut Value) {
    let forbidden = |v: &Value| v.get("not").is_some_and(|n| n.as_object().is_some_and(Map::is_empty));
    let Some(object) = node.as_object_mut() else { return };
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        properties.retain(|_, v| !forbidden(v));
    }
    if object.get("additionalProperties").is_some_and(forbidden) {
        object.insert("additionalProperties".into(), Value::Bool(false));
    }
}

/// A schema without the members that do not change what it accepts.
pub fn canonical(node: &Value) -> Value {
    match node {
        Value::Object(object) => Value::Object(
            object
                .iter()
                .filter(|(k, _)| !ANNOTATIONS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), if k == "properties" { canonical_members(v) } else { canonical(v) }))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// `properties`: member names are data, not annotations (a member may be called `title`).
fn canonical_members(properties: &Value) -> Value {
    match properties {
        Value::Object(members) => Value::Object(members.iter().map(|(k, v)| (k.clone(), canonical(v))).collect()),
        other => other.clone(),
    }
}

/// Replaces every node below `node` that equals a named definition (other than `own`) by a
/// `$ref` to it, keeping the node's description. `root`: `node` is the definition itself.
fn rereference(node: &mut Value, own: &str, named: &[(String, Value)], root: bool) {
    if !root && node.is_object() {
        let body = canonical(node);
        if let Some((name, _)) = named.iter().find(|(name, b)| name != own && *b == body) {
            let mut reference = Map::new();
            reference.insert("$ref".into(), format!("#/$defs/{name}").into());
            if let Some(description) = node.get("description") {
                reference.insert("description".into(), description.clone());
            }
            *node = Value::Object(reference);
            return;
        }
    }
    match node {
        Value::Object(object) => {
            for (key, value) in object.iter_mut() {
                if key == "properties" {
                    if let Value::Object(members) = value {
                        members.values_mut().for_each(|v| rereference(v, own, named, false));
                    }
                } else if key != "$ref" && key != "enum" && key != "const" {
                    rereference(value, own, named, false);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rereference(v, own, named, false)),
        _ => {}
    }
}

/// Replaces every inline copy of a core definition (an object or a union of objects with the
/// members, member types and `const`s of one definition of `core`) by a `$ref` to it, and copies
/// those core definitions (and what they use) into the extension's `$defs`, where they are
/// re-exported from the core module rather than generated again. Returns the names adopted.
pub fn adopt_core(schema: &mut Value, core: &Value) -> Vec<String> {
    let core_defs = core["$defs"].as_object().cloned().unwrap_or_default();
    let mut by_shape: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (name, def) in &core_defs {
        let resolved = resolve_all_of(def, &core_defs);
        if resolved.get("properties").is_some() || resolved.get("anyOf").is_some() {
            by_shape.entry(shape(def, &core_defs, &mut Vec::new()).to_string()).or_default().push(name.clone());
        }
    }
    let Some(defs) = schema.get("$defs").and_then(Value::as_object).cloned() else { return Vec::new() };
    let mut adopted = std::collections::BTreeSet::new();
    let target = schema["$defs"].as_object_mut().unwrap();
    for def in target.values_mut() {
        for child in children(def) {
            adopt(child, &defs, &by_shape, &mut adopted);
        }
    }
    // The adopted definitions and everything they refer to, as the core writes them.
    let mut queue: Vec<String> = adopted.iter().cloned().collect();
    let mut copied = Vec::new();
    while let Some(name) = queue.pop() {
        if target.contains_key(&name) {
            continue;
        }
        let Some(def) = core_defs.get(&name) else { continue };
        walk(&mut def.clone(), &mut |n| {
            if let Some(r) = n.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
                queue.push(r.to_owned());
            }
        });
        target.insert(name.clone(), def.clone());
        copied.push(name);
    }
    copied.sort();
    copied
}

/// The schema nodes directly below `node` (members, items, variants, ...).
fn children(node: &mut Value) -> Vec<&mut Value> {
    let Some(object) = node.as_object_mut() else { return Vec::new() };
    let mut out = Vec::new();
    for (key, value) in object.iter_mut() {
        match (key.as_str(), value) {
            ("properties", Value::Object(members)) => out.extend(members.values_mut()),
            ("anyOf" | "allOf" | "oneOf", Value::Array(items)) => out.extend(items.iter_mut()),
            ("items" | "additionalProperties", v @ Value::Object(_)) => out.push(v),
            _ => {}
        }
    }
    out
}

fn adopt(
    node: &mut Value,
    defs: &Map<String, Value>,
    by_shape: &std::collections::BTreeMap<String, Vec<String>>,
    adopted: &mut std::collections::BTreeSet<String>,
) {
    let is_candidate = node.get("$ref").is_none()
        && (node.get("properties").is_some_and(|p| p.as_object().is_some_and(|m| m.len() >= 2))
            || node.get("anyOf").is_some());
    if is_candidate
        && let Some([name]) = by_shape.get(&shape(node, defs, &mut Vec::new()).to_string()).map(Vec::as_slice)
    {
        let mut reference = Map::new();
        reference.insert("$ref".into(), format!("#/$defs/{name}").into());
        if let Some(description) = node.get("description") {
            reference.insert("description".into(), description.clone());
        }
        *node = Value::Object(reference);
        adopted.insert(name.clone());
        return;
    }
    for child in children(node) {
        adopt(child, defs, by_shape, adopted);
    }
}

/// `allOf` members merged into one object schema (properties and required), refs resolved.
fn resolve_all_of(node: &Value, defs: &Map<String, Value>) -> Value {
    let node = deref(node, defs);
    let Some(all) = node.get("allOf").and_then(Value::as_array) else { return node.clone() };
    let mut properties = Map::new();
    let mut required = Vec::new();
    for member in all.iter().map(|m| resolve_all_of(m, defs)).chain([node.clone()]) {
        if let Some(p) = member.get("properties").and_then(Value::as_object) {
            properties.extend(p.clone());
        }
        if let Some(r) = member.get("required").and_then(Value::as_array) {
            required.extend(r.iter().cloned());
        }
    }
    json!({"type": "object", "properties": properties, "required": required})
}

fn deref<'a>(mut node: &'a Value, defs: &'a Map<String, Value>) -> &'a Value {
    while let Some(def) =
        node.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")).and_then(|n| defs.get(n))
    {
        node = def;
    }
    node
}

/// What a schema accepts, roughly and without annotations: member names with their shapes and
/// which are required, item shapes, variant shapes, constants and enums, primitive types (not
/// their bounds: zod writes `integer` with the bounds of a JavaScript safe integer, the core none).
/// Equal shapes are copies; a copy with a `number` where the core has an `integer` is not one.
fn shape(node: &Value, defs: &Map<String, Value>, stack: &mut Vec<String>) -> Value {
    if let Some(name) = node.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
        if stack.iter().any(|n| n == name) || name == "JSONValue" || name.starts_with("__") {
            return json!("json");
        }
        let Some(def) = defs.get(name) else { return json!("?") };
        stack.push(name.to_owned());
        let out = shape(def, defs, stack);
        stack.pop();
        return out;
    }
    if node.get("allOf").is_some() {
        let merged = resolve_all_of(node, defs);
        return shape(&merged, defs, stack);
    }
    if let Some(c) = node.get("const") {
        return json!({"const": c});
    }
    if let Some(values) = node.get("enum").and_then(Value::as_array) {
        let mut values: Vec<String> = values.iter().map(Value::to_string).collect();
        values.sort();
        return json!({"enum": values});
    }
    if let Some(variants) = node.get("anyOf").and_then(Value::as_array) {
        let mut shapes: Vec<String> = variants.iter().map(|v| shape(v, defs, stack).to_string()).collect();
        shapes.sort();
        return json!({"anyOf": shapes});
    }
    if let Some(members) = node.get("properties").and_then(Value::as_object)
        && !members.is_empty()
    {
        let members: Map<String, Value> = members.iter().map(|(k, v)| (k.clone(), shape(v, defs, stack))).collect();
        let mut required: Vec<String> = node
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| r.as_str().map(str::to_owned))
            .collect();
        required.sort();
        return json!({"object": members, "required": required});
    }
    match node.get("type") {
        Some(Value::String(t)) if t == "array" => {
            json!({"array": shape(node.get("items").unwrap_or(&Value::Null), defs, stack)})
        }
        Some(Value::String(t)) if t == "object" => json!("map"),
        Some(Value::String(t)) => json!(t),
        Some(Value::Array(types)) => {
            let mut types: Vec<String> = types.iter().filter_map(Value::as_str).map(str::to_owned).collect();
            types.sort();
            json!(types)
        }
        _ => json!("json"),
    }
}
