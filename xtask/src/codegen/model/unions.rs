//! Unions: how an `anyOf`/`oneOf` is discriminated (a tag member or the variants' shapes), and
//! the names of its variants.

use super::*;

impl<'a> Builder<'a> {
    pub(super) fn build_union(
        &mut self,
        name: String,
        schema_name: Option<String>,
        doc: Option<String>,
        members: &'a [Value],
    ) -> anyhow::Result<()> {
        // The TypeScript source can attach a member's doc comment to the union (2026-07-28's
        // `ClientNotification` carries `CancelledNotification`'s text): such a doc is dropped.
        let doc = doc.filter(|text| {
            !members
                .iter()
                .filter_map(|m| self.ref_name(m))
                .any(|target| self.defs.get(target).and_then(description).as_deref() == Some(text.as_str()))
        });
        struct M<'v> {
            ty: Ty,
            def: Option<String>,
            shape: Option<&'v Value>,
        }
        // `{"type": ["string", "integer", "boolean"]}` members are one member per type.
        let mut expanded: Vec<&'a Value> = Vec::new();
        for member in members {
            match member.get("type").and_then(Value::as_array) {
                Some(types) if member.get("$ref").is_none() && member.get("properties").is_none() => {
                    for t in types {
                        let leaked: &'a Value = Box::leak(Box::new(serde_json::json!({ "type": t })));
                        expanded.push(leaked);
                    }
                }
                _ => expanded.push(member),
            }
        }
        let mut ms = Vec::new();
        for (i, member) in expanded.into_iter().enumerate() {
            if let Some(target) = self.ref_name(member) {
                ms.push(M {
                    ty: self.ref_ty(target)?,
                    def: Some(target.to_owned()),
                    shape: Some(self.resolve(member)?),
                });
            } else if member.get("type").and_then(Value::as_str) == Some("array")
                && let Some(def) = self.equal_def(member)
            {
                ms.push(M { ty: self.ref_ty(&def)?, def: Some(def.clone()), shape: Some(self.def(&def)?) });
            } else {
                let hint =
                    member.get("type").and_then(Value::as_str).map(pascal).unwrap_or_else(|| format!("Variant{i}"));
                let ty = self.field_ty(&name, &hint, member)?;
                ms.push(M { ty, def: None, shape: Some(member) });
            }
        }
        let member_names: Vec<String> = ms
            .iter()
            .map(|m| match (&m.def, &m.ty) {
                (Some(def), _) => rust_type_name(def),
                (None, Ty::Named(n)) => n.clone(),
                _ => String::new(),
            })
            .collect();

        // Tag discrimination: every member is an object whose `key` is a string const (or, for at
        // most one member, an optional const that is the default).
        let mut strategy = Strategy::Score;
        let mut tags: Vec<Vec<String>> = vec![Vec::new(); ms.len()];
        'keys: for key in ["method", "type", "mode", "resultType"] {
            let mut default = None;
            let mut seen = BTreeSet::new();
            let mut found = Vec::new();
            for (i, m) in ms.iter().enumerate() {
                let Some(shape) = m.shape else { continue 'keys };
                let mut props = Vec::new();
                let mut required = BTreeSet::new();
                if !matches!(m.ty, Ty::Named(_)) || self.collect_props(shape, &mut props, &mut required).is_err() {
                    continue 'keys;
                }
                let values = if key == "resultType" {
                    if !props.iter().any(|(k, _)| k == "resultType") || m.def.as_deref() == Some("Result") {
                        continue 'keys;
                    }
                    if m.def.as_deref() == Some("InputRequiredResult") {
                        vec!["input_required".to_owned()]
                    } else {
                        if default.replace(i).is_some() {
                            continue 'keys;
                        }
                        vec!["complete".to_owned()]
                    }
                } else {
                    let Some((_, p)) = props.iter().find(|(k, _)| k == key) else { continue 'keys };
                    let Some(values) = string_values(self.resolve(p)?) else { continue 'keys };
                    if p.get("const").is_none() && self.resolve(p)?.get("const").is_none() {
                        continue 'keys;
                    }
                    if !required.contains(key) && default.replace(i).is_some() {
                        continue 'keys;
                    }
                    values
                };
                for v in &values {
                    if !seen.insert(v.clone()) {
                        continue 'keys;
                    }
                }
                found.push(values);
            }
            tags = found;
            let mut exclusive_keys = Vec::new();
            if key == "resultType" {
                let declared: Vec<BTreeSet<String>> = ms
                    .iter()
                    .map(|m| {
                        let (mut props, mut required) = (Vec::new(), BTreeSet::new());
                        let _ = self.collect_props(m.shape.unwrap(), &mut props, &mut required);
                        props.into_iter().map(|(k, _)| k).collect()
                    })
                    .collect();
                for (i, keys) in declared.iter().enumerate() {
                    for k in keys {
                        if k != key && declared.iter().enumerate().all(|(j, other)| j == i || !other.contains(k)) {
                            exclusive_keys.push((k.clone(), i));
                        }
                    }
                }
            }
            strategy = Strategy::Tag { key: key.into(), exclusive_keys, default, other: None };
            break;
        }

        let is_message_union = matches!(
            schema_name.as_deref(),
            Some("ClientRequest" | "ServerRequest" | "ClientNotification" | "ServerNotification")
        );
        if is_message_union && let Strategy::Tag { other, .. } = &mut strategy {
            let request = schema_name.as_deref().unwrap().ends_with("Request");
            let with_envelope = ms
                .first()
                .and_then(|m| m.shape)
                .and_then(|s| s.get("properties"))
                .is_some_and(|p| p.get("jsonrpc").is_some());
            let def = match (request, with_envelope) {
                (true, true) => "JSONRPCRequest",
                (true, false) => "Request",
                (false, true) => "JSONRPCNotification",
                (false, false) => "Notification",
            };
            *other = Some(self.ref_ty(def)?);
        }

        let variants = ms
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let ident = match &strategy {
                    Strategy::Tag { key, .. } if key == "resultType" => {
                        if tags[i][0] == "input_required" {
                            "InputRequired".to_owned()
                        } else {
                            "Complete".to_owned()
                        }
                    }
                    Strategy::Tag { key, .. } if key == "type" || key == "mode" => pascal(&tags[i][0]),
                    _ => variant_ident(&m.ty, &member_names[i], &member_names),
                };
                let same_as = (0..i).find(|&j| {
                    matches!(strategy, Strategy::Score)
                        && m.def.is_some()
                        && ms[j].def.is_some()
                        && ms[j].shape.map(strip_descriptions) == m.shape.map(strip_descriptions)
                });
                Variant {
                    ident,
                    ty: m.ty.clone(),
                    tags: tags.get(i).cloned().unwrap_or_default(),
                    same_as,
                    free_form_alias: false,
                }
            })
            .collect::<Vec<_>>();
        let mut seen = BTreeSet::new();
        for v in &variants {
            if !seen.insert(v.ident.clone()) {
                bail!("union {name} has two variants named {}", v.ident);
            }
        }
        self.items.push(Item::Union(UnionDef { name, schema_name, doc, variants, strategy }));
        Ok(())
    }
}

/// Variant name for a union member: the member type with the suffix all members share removed
/// (`CallToolRequest` → `CallTool` in `ClientRequest`), the `JsonRpc` prefix removed, scalars by kind.
fn variant_ident(ty: &Ty, member: &str, all: &[String]) -> String {
    match ty {
        Ty::String => return "String".into(),
        Ty::Bool => return "Boolean".into(),
        Ty::Path("crate::Integer") => return "Integer".into(),
        Ty::Number => return "Number".into(),
        Ty::Vec(inner) if member.is_empty() => {
            return match **inner {
                Ty::String => "StringList".into(),
                _ => "List".into(),
            };
        }
        Ty::Object if member.is_empty() => return "Object".into(),
        _ => {}
    }
    let mut name = member.to_owned();
    let named: Vec<&String> = all.iter().filter(|n| !n.is_empty()).collect();
    for suffix in ["Request", "Notification", "Result"] {
        let enough = named.len() > 1 || suffix != "Result";
        if enough && named.iter().all(|n| n.ends_with(suffix)) && name.len() > suffix.len() {
            name.truncate(name.len() - suffix.len());
        }
    }
    if named.len() > 1 && named.iter().all(|n| n.starts_with("JsonRpc")) {
        name = name.trim_start_matches("JsonRpc").to_owned();
    }
    if name.is_empty() { pascal(member) } else { name }
}
