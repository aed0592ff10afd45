//! The project rule, checked mechanically: bad input gets a clear error that names the problem,
//! never a panic, and whatever is accepted survives a round trip. Every official 2026-07-28 example
//! that is a whole JSON-RPC message, and every 2025-11-25 fixture that is one, is mutated
//! (`mcp_tests::mutate`: each member removed, each value replaced by `null`, `0`, `-1.5`, `"x"`,
//! `[]`, `{}`, `true`, the text cut at six places) and each mutant is decoded as the message unions
//! of its revision that accept the original and as the type named by its folder.

use std::panic::{AssertUnwindSafe, catch_unwind};

use mcp_tests::mutate::{Kind, Mutant, mutants};
use mcp_tests::{diff, json_files, revision, schema_dir, workspace_root};
use serde_json::Value;

type Decode = Box<dyn Fn(&str) -> Result<Value, String>>;

#[derive(Default, Debug)]
struct Tally {
    files: usize,
    mutants: usize,
    /// (mutant, decoder) pairs that decoded.
    decoded: usize,
    /// (mutant, decoder) pairs that were rejected.
    rejected: usize,
}

/// The member paths an error points at: its `` at `a.b` `` prefixes, nested ones joined
/// (`at `result`: ... at `content`: ...` is `result.content`).
fn error_path(error: &str) -> String {
    let mut path = Vec::new();
    let mut rest = error;
    while let Some(i) = rest.find("at `") {
        rest = &rest[i + 4..];
        let Some(end) = rest.find('`') else { break };
        path.push(&rest[..end]);
        rest = &rest[end..];
    }
    path.join(".")
}

/// Whether `error` names what the mutation touched. Any of:
/// - the touched member, as a segment of the error's path (member names may contain dots, as the
///   `_meta` keys do) or quoted anywhere (`missing field `name``);
/// - the method of the original message, or a type it was decoded as;
/// - exactly the member that holds the touched one. Serde cannot do better in two places, which is
///   why this rule exists: a value of a free-form map (`arguments`, `experimental`: `BTreeMap`
///   errors do not carry the key), and a member of an untagged union (`content` whose `type` was
///   removed "fits none of `TextContent`, `ImageContent`, ...": no variant to blame the member on).
///   Naming a farther ancestor, or nothing, still fails.
fn names_it(error: &str, mutant: &Mutant, method: Option<&str>, types: &[&str]) -> bool {
    let path = error_path(error);
    let in_path = |m: &str| {
        path == m
            || path.ends_with(&format!(".{m}"))
            || path.starts_with(&format!("{m}."))
            || path.contains(&format!(".{m}."))
    };
    let member = mutant.member.as_deref();
    // The touched member's ancestors, as a dotted path without array indices.
    let keys: Vec<String> = mutant
        .path
        .split('/')
        .skip(1)
        .filter(|s| s.parse::<usize>().is_err())
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    let parent = keys[..keys.len().saturating_sub(1)].join(".");
    member.is_some_and(|m| in_path(m) || error.contains(&format!("`{m}`")))
        || method.is_some_and(|m| error.contains(m))
        || types.iter().any(|t| error.contains(t))
        || (!parent.is_empty() && path == parent)
}

fn check(rev: &str, label: &str, files: &[(String, String, String)]) -> Tally {
    let r = revision(rev);
    let types = (r.types)();
    let unions = (r.unions)();
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    let mut unnamed = Vec::new();
    for (ty, file, text) in files {
        let original: Value = serde_json::from_str(text).unwrap();
        if original.get("jsonrpc").is_none() {
            continue;
        }
        tally.files += 1;
        let method = original.get("method").and_then(Value::as_str);
        // The decoders: the message unions that accept the original, and the folder's type.
        let mut decoders: Vec<(String, Decode)> = Vec::new();
        for union in unions.iter().filter(|u| u.union == "ClientMessage" || u.union == "ServerMessage") {
            if (union.decode)(text).is_ok() {
                let decode = union.decode;
                decoders.push((union.union.to_owned(), Box::new(move |t| decode(t).map(|(_, v)| v))));
            }
        }
        assert!(!decoders.is_empty(), "{rev} {ty}/{file}: no message union accepts it");
        let entry = types.iter().find(|t| t.schema == ty).unwrap_or_else(|| panic!("{rev}: no type for {ty}"));
        decoders.push((ty.clone(), Box::new(entry.roundtrip)));
        let type_names: Vec<&str> = decoders.iter().map(|(n, _)| n.as_str()).collect();

        for mutant in mutants(&original) {
            tally.mutants += 1;
            for (name, decode) in &decoders {
                let case = format!("{rev} {ty}/{file} {} {} as {name}", mutant.path, mutant.label);
                let outcome = match catch_unwind(AssertUnwindSafe(|| decode(&mutant.text))) {
                    Ok(outcome) => outcome,
                    Err(_) => {
                        failures.push(format!("{case}: PANICKED"));
                        continue;
                    }
                };
                match outcome {
                    Ok(value) => {
                        tally.decoded += 1;
                        if mutant.kind == Kind::Truncated {
                            failures.push(format!("{case}: a cut text decoded"));
                        }
                        match decode(&value.to_string()) {
                            Ok(again) if again == value => {}
                            Ok(again) => failures.push(format!("{case}: unstable, {:?}", diff(&value, &again))),
                            Err(e) => failures.push(format!("{case}: its re-encoding does not decode: {e}")),
                        }
                        // Nothing accepted is lost or altered. The one normalization: an absent
                        // `resultType` is read as "complete" (older servers send none) and written.
                        let mut changed = diff(mutant.value.as_ref().unwrap(), &value);
                        changed.retain(|c| !(c.starts_with("added ") && c.ends_with("/resultType")));
                        if !changed.is_empty() {
                            failures.push(format!("{case}: decoded but changed {changed:?}"));
                        }
                    }
                    Err(e) => {
                        tally.rejected += 1;
                        if e.trim().is_empty() {
                            failures.push(format!("{case}: empty error message"));
                        } else if mutant.kind != Kind::Truncated && !names_it(&e, &mutant, method, &type_names) {
                            unnamed.push(format!("{case}: {e}"));
                        }
                    }
                }
            }
        }
    }
    println!("{label}: {tally:?}");
    assert!(unnamed.is_empty(), "{label}: {} errors do not name the problem:\n{}", unnamed.len(), unnamed.join("\n"));
    assert!(failures.is_empty(), "{label}: {} failures:\n{}", failures.len(), failures.join("\n"));
    tally
}

#[test]
fn mutants_of_the_2026_07_28_examples() {
    let files = json_files(&schema_dir("2026-07-28").join("examples"));
    let tally = check("2026-07-28", "2026-07-28 examples", &files);
    assert_eq!(tally.files, 32, "upstream has 32 whole-message examples");
}

#[test]
fn mutants_of_the_2025_11_25_fixtures() {
    schema_dir("2025-11-25");
    let files = json_files(&workspace_root().join("tests/fixtures/2025-11-25"));
    let tally = check("2025-11-25", "2025-11-25 fixtures", &files);
    assert!(tally.files > 0);
}

/// Found by the mutants: a non-string `method` or `type` said "invalid type: null, expected an
/// object key" and named no member.
#[test]
fn a_non_string_tag_names_its_member() {
    let e = serde_json::from_str::<mcp_types::ClientMessage>(r#"{"jsonrpc":"2.0","id":1,"method":null}"#)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("at `method`: invalid type: null, expected a string"), "{e}");
    let e = serde_json::from_str::<mcp_types::ContentBlock>(r#"{"type":7,"text":"t"}"#).unwrap_err().to_string();
    assert!(e.starts_with("at `type`: invalid type: integer `7`, expected a string"), "{e}");
}

/// Found by the mutants: a `null` member of a value decoded by shape (buffered, then replayed)
/// was replayed as a unit, which `serde_json::Map` takes for `{}`: `"input": null` in a sampling
/// message's tool use decoded as `"input": {}`.
#[test]
fn a_replayed_null_is_not_an_empty_object() {
    for content in [
        r#"{"type":"tool_use","id":"a","name":"b","input":null}"#,
        r#"[{"type":"tool_use","id":"a","name":"b","input":null}]"#,
    ] {
        let text = format!(r#"{{"role":"assistant","content":{content}}}"#);
        let e = serde_json::from_str::<mcp_types::SamplingMessage>(&text).unwrap_err().to_string();
        assert!(e.contains("at `input`: invalid type: null, expected a map"), "{text}: {e}");
        let e = serde_json::from_str::<mcp_types::v2025_11_25::SamplingMessage>(&text).unwrap_err().to_string();
        assert!(e.contains("at `input`: invalid type: null, expected a map"), "2025-11-25 {text}: {e}");
    }
}
