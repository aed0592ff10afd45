//! Older revisions have no upstream examples, so `tests/fixtures/<rev>/<Type>/*.json` is a corpus
//! written here: every file is first validated against that revision's official schema (so a
//! fixture cannot be wrong), then round-tripped through the type named by its folder and through
//! every union that lists the type, and the re-encoded value is validated again.

use std::collections::BTreeMap;

use mcp_tests::{diff, json_files, revision, schema_dir, workspace_root};
use serde_json::{Value, json};

fn validator(schema: &Value, ty: &str) -> jsonschema::Validator {
    let (defs_key, draft) = if schema.get("$defs").is_some() { ("$defs", "2020-12") } else { ("definitions", "7") };
    let mut root = schema.clone();
    root["$ref"] = json!(format!("#/{defs_key}/{ty}"));
    let result = if draft == "7" { jsonschema::draft7::new(&root) } else { jsonschema::draft202012::new(&root) };
    result.unwrap_or_else(|e| panic!("schema for {ty}: {e}"))
}

fn check_fixtures(rev: &str) -> (usize, usize) {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_dir(rev).join("schema.json")).unwrap()).unwrap();
    let r = revision(rev);
    let types = (r.types)();
    let unions = (r.unions)();
    let fixtures = json_files(&workspace_root().join("tests/fixtures").join(rev));
    assert!(!fixtures.is_empty());
    let mut validators: BTreeMap<String, jsonschema::Validator> = BTreeMap::new();
    let mut failures = Vec::new();
    let (mut round_tripped, mut variant_checks) = (0, 0);
    for (ty, file, text) in &fixtures {
        let original: Value = serde_json::from_str(text).unwrap();
        let v = validators.entry(ty.clone()).or_insert_with(|| validator(&schema, ty));
        if let Some(e) = v.iter_errors(&original).next() {
            failures.push(format!("{ty}/{file} is not a valid {ty}: {e} at {}", e.instance_path()));
            continue;
        }
        let entry = types.iter().find(|t| t.schema == ty).unwrap_or_else(|| panic!("{rev}: no type for {ty}"));
        match (entry.roundtrip)(text) {
            Ok(value) => {
                let d = diff(&original, &value);
                if !d.is_empty() {
                    failures.push(format!("{ty}/{file}: round trip changed {d:?}"));
                } else if let Some(e) = v.iter_errors(&value).next() {
                    failures.push(format!("{ty}/{file}: re-encoded value is invalid: {e}"));
                } else {
                    round_tripped += 1;
                }
            }
            Err(e) => failures.push(format!("{ty}/{file}: {e}")),
        }
        for union in &unions {
            for (_, variant) in union.members.iter().filter(|(member, _)| member == ty) {
                match (union.decode)(text) {
                    Ok((got, value)) if got == *variant && value == original => variant_checks += 1,
                    // `tasks/result` returns the result of the underlying request, so its schema is the
                    // open `Result`: a payload shaped like a CallToolResult rightly decodes as one.
                    Ok((_, value))
                        if ty == "GetTaskPayloadResult" && union.union == "ServerResult" && value == original =>
                    {
                        variant_checks += 1
                    }
                    Ok((got, value)) => failures.push(format!(
                        "{ty}/{file} through {}: landed in {got} (want {variant}), diff {:?}",
                        union.union,
                        diff(&original, &value)
                    )),
                    Err(e) => failures.push(format!("{ty}/{file} through {}: {e}", union.union)),
                }
            }
        }
    }
    println!("{rev}: {} fixtures, {round_tripped} round-tripped, {variant_checks} variant checks", fixtures.len());
    assert!(failures.is_empty(), "{rev}: {} failures:\n{}", failures.len(), failures.join("\n"));
    (round_tripped, variant_checks)
}

/// Every request, notification and result definition of the revision has at least one fixture.
fn check_coverage(rev: &str) {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_dir(rev).join("schema.json")).unwrap()).unwrap();
    let defs = schema.get("$defs").or_else(|| schema.get("definitions")).unwrap().as_object().unwrap();
    let dir = workspace_root().join("tests/fixtures").join(rev);
    let missing: Vec<&String> = defs
        .keys()
        .filter(|name| name.ends_with("Request") || name.ends_with("Notification") || name.ends_with("Result"))
        .filter(|name| !dir.join(name).is_dir())
        .collect();
    assert!(missing.is_empty(), "{rev}: no fixture for {missing:?}");
}

#[test]
fn fixtures_2024_11_05() {
    check_coverage("2024-11-05");
    check_fixtures("2024-11-05");
}

#[test]
fn fixtures_2025_03_26() {
    check_coverage("2025-03-26");
    check_fixtures("2025-03-26");
}

#[test]
fn fixtures_2025_06_18() {
    check_coverage("2025-06-18");
    check_fixtures("2025-06-18");
}

#[test]
fn fixtures_2025_11_25() {
    check_coverage("2025-11-25");
    check_fixtures("2025-11-25");
}
