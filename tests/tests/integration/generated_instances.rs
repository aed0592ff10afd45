//! Property test: every instance the schema-driven generator (`mcp_tests::instances`) makes from a
//! revision's official `schema.json`, and that `jsonschema` confirms valid, decodes into that
//! definition's Rust type and re-encodes to the same JSON, numbers compared by literal
//! (`mcp_tests::exact`), and does the same through every union that lists the definition.
//!
//! CI runs a fixed seed with `INSTANCES_PER_MODE` instances per mode per definition (7 modes, so
//! 28 per definition, the unknown-member and extreme modes included). A longer run:
//! `MCP_INSTANCES=<per mode> MCP_INSTANCES_SEED=<seed> cargo test -p mcp-tests --test generated_instances`.
//! A failure prints the instance.

use std::collections::BTreeMap;

use mcp_tests::exact::differences;
use mcp_tests::instances::{Generator, MODES, Mode, free_form_extremes};
use mcp_tests::{revision, schema_dir};
use serde_json::{Value, json};

const INSTANCES_PER_MODE: usize = 4;
const SEED: u64 = 0x4D43_5032_0012;
/// Tries per instance before an instance that `jsonschema` rejects counts as a generator failure.
const TRIES: usize = 40;

fn settings() -> (usize, u64) {
    let per_mode = std::env::var("MCP_INSTANCES").ok().and_then(|v| v.parse().ok()).unwrap_or(INSTANCES_PER_MODE);
    let seed = std::env::var("MCP_INSTANCES_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(SEED);
    (per_mode, seed)
}

fn validator(schema: &Value, def: &str) -> jsonschema::Validator {
    let (defs_key, draft7) = if schema.get("$defs").is_some() { ("$defs", false) } else { ("definitions", true) };
    let mut root = schema.clone();
    root["$ref"] = json!(format!("#/{defs_key}/{def}"));
    let result = if draft7 { jsonschema::draft7::new(&root) } else { jsonschema::draft202012::new(&root) };
    result.unwrap_or_else(|e| panic!("schema for {def}: {e}"))
}

struct Report {
    instances: usize,
    union_checks: usize,
    /// Refusals the rule allows: a number that the member's type (`serde_json::Value` in a
    /// free-form member, `serde_json::Number` in a `number` member) cannot hold exactly, in an
    /// error that names the member.
    refused: usize,
    failures: Vec<String>,
}

/// Whether an error about an instance of `def` is an allowed refusal (see [`Report::refused`]):
/// it names the member, or the instance is free-form JSON on its own. Only integer literals may
/// be refused: every float JavaScript or Python writes is kept.
fn allowed_refusal(schema: &Value, def: &str, error: &str) -> bool {
    ((error.contains("the integer ") && error.contains("cannot be kept exactly in a free-form member"))
        || error.contains("is beyond the 64-bit range a number member holds exactly"))
        && (error.contains("at `") || free_form_on_its_own(schema, def))
}

/// A definition that is free-form JSON itself (`JSONValue`, `MetaObject`, MCP Apps' `McpUiStyles`,
/// a map of free-form values): a refusal there has no member to name.
fn free_form_on_its_own(schema: &Value, def: &str) -> bool {
    let body = &schema["$defs"][def];
    matches!(def, "JSONValue" | "JSONObject" | "JSONArray" | "MetaObject")
        || (body.get("type") == Some(&json!("object")) && body.get("properties").is_none())
}

/// MCP Apps' schema.json writes each definition as a document of its own (zod's output): a
/// definition's `$ref: "#/$defs/__schema0"` means the `__schema0` nested in that definition, which
/// is not where a reference resolves in one document (see
/// `ext_apps_definitions_refer_to_their_own_nested_defs`). Lifting the nested definitions to the
/// root makes the document mean what each definition alone means; two of the same name must agree.
fn lift_nested_defs(schema: &mut Value) {
    let Some(defs) = schema.get_mut("$defs").and_then(Value::as_object_mut) else { return };
    let mut lifted = serde_json::Map::new();
    for def in defs.values_mut() {
        if let Some(Value::Object(nested)) = def.as_object_mut().and_then(|d| d.remove("$defs")) {
            for (name, body) in nested {
                assert!(lifted.get(&name).is_none_or(|b| *b == body), "nested definitions `{name}` differ");
                lifted.insert(name, body);
            }
        }
    }
    for (name, body) in lifted {
        assert!(defs.insert(name.clone(), body).is_none(), "`{name}` is also a top-level definition");
    }
}

/// The upstream defect [`lift_nested_defs`] works around, so that a fixed schema is noticed.
#[test]
fn ext_apps_definitions_refer_to_their_own_nested_defs() {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_dir("extensions/ext-apps").join("schema.json")).unwrap())
            .unwrap();
    assert!(schema.pointer("/$defs/__schema0").is_none());
    assert!(schema.pointer("/$defs/McpUiHostContext/$defs/__schema0").is_some());
    let refers = serde_json::to_string(&schema["$defs"]["McpUiHostContext"]).unwrap();
    assert!(refers.contains(r##""$ref":"#/$defs/__schema0""##));
}

/// MCP Apps' `containerDimensions` is `({height} | {maxHeight}) & ({width} | {maxWidth})` in
/// TypeScript, but zod writes each alternative closed (`additionalProperties: false`), so the
/// intersection admits only `{}` (see `ext_apps_container_dimensions_admit_only_an_empty_object`).
/// Opening the alternatives of such an `allOf` gives the TypeScript meaning, which mcp-types
/// decodes (one struct with the four members optional).
fn open_strict_intersections(node: &mut Value) {
    if let Some(Value::Array(members)) = node.get_mut("allOf")
        && members.iter().all(|m| m.get("anyOf").is_some())
    {
        for variant in members.iter_mut().filter_map(|m| m.get_mut("anyOf")).filter_map(Value::as_array_mut).flatten() {
            if let Some(object) = variant.as_object_mut() {
                object.remove("additionalProperties");
            }
        }
    }
    match node {
        Value::Object(object) => object.values_mut().for_each(open_strict_intersections),
        Value::Array(items) => items.iter_mut().for_each(open_strict_intersections),
        _ => {}
    }
}

/// The upstream defect [`open_strict_intersections`] works around.
#[test]
fn ext_apps_container_dimensions_admit_only_an_empty_object() {
    let mut schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_dir("extensions/ext-apps").join("schema.json")).unwrap())
            .unwrap();
    lift_nested_defs(&mut schema);
    let as_published = validator(&schema, "McpUiHostContext");
    assert!(as_published.is_valid(&json!({"containerDimensions": {}})));
    assert!(!as_published.is_valid(&json!({"containerDimensions": {"height": 400, "width": 300}})));
    assert!(!as_published.is_valid(&json!({"containerDimensions": {"maxHeight": 400}})));
    open_strict_intersections(&mut schema);
    let as_meant = validator(&schema, "McpUiHostContext");
    assert!(as_meant.is_valid(&json!({"containerDimensions": {"height": 400, "width": 300}})));
}

/// Upstream defect: the tasks extension's request params (`tasks/get`, `tasks/update`,
/// `tasks/cancel`) declare no `_meta`, which every 2026-07-28 request carries (its protocol
/// version and client capabilities). The generated params keep it in `extra`; mcp-server reads
/// it from there. A fixed schema fails this test.
#[test]
fn ext_tasks_request_params_declare_no_meta() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(schema_dir("extensions/ext-tasks/draft").join("schema.json")).unwrap(),
    )
    .unwrap();
    for request in ["GetTaskRequest", "UpdateTaskRequest", "CancelTaskRequest"] {
        let own = &schema["$defs"][request]["allOf"][1]["properties"]["params"];
        assert!(own["properties"]["taskId"].is_object(), "{request}: {own}");
        assert!(own["properties"].get("_meta").is_none(), "{request} now declares `_meta`: {own}");
    }
    let params: mcp_types::ext::tasks::GetTaskRequestParams = serde_json::from_value(
        json!({"taskId": "t", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
    )
    .unwrap();
    assert!(params.extra.contains_key("_meta"));
}

fn check_revision(rev: &str) -> Report {
    let (per_mode, seed) = settings();
    let mut schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_dir(rev).join("schema.json")).unwrap()).unwrap();
    lift_nested_defs(&mut schema);
    open_strict_intersections(&mut schema);
    let r = revision(rev);
    let types = (r.types)();
    let unions = (r.unions)();
    let mut generator = Generator::new(&schema, seed);
    let mut report = Report { instances: 0, union_checks: 0, refused: 0, failures: Vec::new() };
    let mut per_def: BTreeMap<&str, usize> = BTreeMap::new();
    for def in generator.definitions() {
        if def.starts_with("__") {
            // A definition's own `$defs`, lifted (see `lift_nested_defs`): not one of the schema's.
            continue;
        }
        let Some(entry) = types.iter().find(|t| t.schema == def) else {
            report.failures.push(format!("{def}: no Rust type in the registry"));
            continue;
        };
        let validator = validator(&schema, def);
        for mode in MODES {
            for _ in 0..per_mode {
                let Some(text) = (0..TRIES).map(|_| generator.instance(def, mode)).find(|text| {
                    let value: Value = serde_json::from_str(text).expect("generated JSON parses");
                    validator.is_valid(&value)
                }) else {
                    let text = generator.instance(def, mode);
                    let value: Value = serde_json::from_str(&text).unwrap();
                    let why = validator.iter_errors(&value).next().map(|e| e.to_string()).unwrap_or_default();
                    report
                        .failures
                        .push(format!("{def} ({mode:?}): no valid instance in {TRIES} tries ({why}): {text}"));
                    continue;
                };
                report.instances += 1;
                *per_def.entry(def).or_default() += 1;
                match (entry.text)(&text) {
                    Ok(out) => {
                        let diff = differences(&text, &out).unwrap();
                        if !diff.is_empty() {
                            report
                                .failures
                                .push(format!("{def} ({mode:?}): changed {diff:?}\n  in:  {text}\n  out: {out}"));
                        }
                    }
                    Err(e) if allowed_refusal(&schema, def, &e) => report.refused += 1,
                    Err(e) => report.failures.push(format!("{def} ({mode:?}): {e}\n  in:  {text}")),
                }
                for union in unions.iter().filter(|u| u.members.iter().any(|(member, _)| *member == def)) {
                    report.union_checks += 1;
                    match (union.decode_text)(&text) {
                        Ok((_, out)) => {
                            let diff = differences(&text, &out).unwrap();
                            if !diff.is_empty() {
                                report.failures.push(format!(
                                    "{def} ({mode:?}) through {}: changed {diff:?}\n  in:  {text}\n  out: {out}",
                                    union.union
                                ));
                            }
                        }
                        Err(e) if allowed_refusal(&schema, def, &e) => report.refused += 1,
                        Err(e) => report
                            .failures
                            .push(format!("{def} ({mode:?}) through {}: {e}\n  in:  {text}", union.union)),
                    }
                }
            }
        }
    }
    let floor = per_mode * MODES.len();
    for (def, n) in &per_def {
        if *n < floor {
            report.failures.push(format!("{def}: only {n} valid instances"));
        }
    }
    println!(
        "{rev}: {} definitions, {} instances ({floor} per definition, seed {seed}), {} union checks, \
         {} refusals naming the member, {} failures",
        per_def.len(),
        report.instances,
        report.union_checks,
        report.refused,
        report.failures.len()
    );
    report
}

fn assert_revision(rev: &str) {
    let report = check_revision(rev);
    let shown: Vec<&String> = report.failures.iter().take(25).collect();
    assert!(
        report.failures.is_empty(),
        "{rev}: {} of {} instances failed (first {}):\n{}",
        report.failures.len(),
        report.instances,
        shown.len(),
        shown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn generated_instances_2024_11_05() {
    assert_revision("2024-11-05");
}

#[test]
fn generated_instances_2025_03_26() {
    assert_revision("2025-03-26");
}

#[test]
fn generated_instances_2025_06_18() {
    assert_revision("2025-06-18");
}

#[test]
fn generated_instances_2025_11_25() {
    assert_revision("2025-11-25");
}

#[test]
fn generated_instances_2026_07_28() {
    assert_revision("2026-07-28");
}

#[test]
fn generated_instances_draft() {
    assert_revision("draft");
}

/// The tasks extension's schema (`schema/extensions/ext-tasks/draft/schema.json`): its own
/// definitions are generated types, the core ones it restates the 2026-07-28 types.
#[test]
fn generated_instances_ext_tasks() {
    assert_revision("extensions/ext-tasks/draft");
}

/// MCP Apps' schema (`schema/extensions/ext-apps/schema.json`, from `@modelcontextprotocol/ext-apps`):
/// the `McpUi*` types, with the 2025-11-25 types it embeds.
#[test]
fn generated_instances_ext_apps() {
    assert_revision("extensions/ext-apps");
}

/// The extreme mode really reaches the decoder: its integers appear in generated instances.
#[test]
fn extreme_mode_writes_integers_beyond_64_bits() {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_dir("2026-07-28").join("schema.json")).unwrap()).unwrap();
    let mut generator = Generator::new(&schema, SEED);
    let texts: Vec<String> = (0..200).map(|_| generator.instance("Resource", Mode::Extreme)).collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("\"size\":18446744073709551616")
                || t.contains("\"size\":1000000000000000000000000000000"))
    );
    assert!(texts.iter().any(|t| t.contains("\"size\":1.0") || t.contains("\"size\":1e3")));
}

/// Free-form members (`_meta` values, tool arguments, error `data`, unknown members) are
/// `serde_json::Value`, which holds integers within 64 bits exactly and any other number as an
/// `f64`. Each number is decided by its literal: the floats JavaScript and Python write are kept
/// (`1e+21`, `-0.0`, `1.5e+300`), `-0` is the integer 0, and an integer literal `Value` cannot
/// hold is an error naming the member, never a float.
#[test]
fn free_form_numbers_are_kept_by_value_or_refused_naming_the_member() {
    for (literal, kept) in [
        ("1e18", true),
        ("-2.5e300", true),
        ("1e19", true),
        ("1e+21", true),
        ("6.02214076e+23", true),
        ("1.7976931348623157e+308", true),
        ("5e-324", true),
        ("-0.0", true),
        ("0.0", true),
        ("-0", true),
        ("10000000000000000000", true),
        ("18446744073709551616", false),
        ("1.00000000000000000001e30", false),
    ] {
        let text = format!(r#"{{"code":1,"message":"m","data":{{"x":[{literal}]}}}}"#);
        match serde_json::from_str::<mcp_types::ErrorObject>(&text) {
            Ok(error) => {
                assert!(kept, "{literal}");
                let out = serde_json::to_string(&error).unwrap();
                assert!(mcp_tests::exact::differences(&text, &out).unwrap().is_empty(), "{text} -> {out}");
            }
            Err(e) => {
                let e = e.to_string();
                assert!(!kept && e.contains("at `data`") && e.contains(literal), "{literal}: {e}");
            }
        }
    }
    for literal in free_form_extremes() {
        let cases = [
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}},"name":"t","arguments":{{"n":{literal}}}}}}}"#
                ),
                "params.arguments",
            ),
            (
                format!(r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":1,"message":"m","data":[{literal}]}}}}"#),
                "error.data",
            ),
            (
                format!(r#"{{"jsonrpc":"2.0","method":"notifications/x","params":{{"vendor":{{"deep":{literal}}}}}}}"#),
                "params",
            ),
        ];
        for (i, (text, member)) in cases.iter().enumerate() {
            let e = if i == 0 {
                serde_json::from_str::<mcp_types::ClientMessage>(text).unwrap_err().to_string()
            } else {
                serde_json::from_str::<mcp_types::ServerMessage>(text).unwrap_err().to_string()
            };
            assert!(
                e.contains(&format!("`{member}")) && e.contains("cannot be kept exactly"),
                "{literal} in {member}: {e}"
            );
        }
    }
}
