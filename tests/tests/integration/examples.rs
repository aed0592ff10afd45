//! Every official example of 2026-07-28 and draft decodes into the type named by its folder,
//! lands in the right variant of every union that lists that type, and re-encodes to an equal
//! JSON value. Upstream defects are listed by name below, never skipped silently.

use mcp_tests::{diff, json_files, revision, schema_dir};
use serde_json::Value;

/// Examples that are wrong upstream, with the error the types give them. None at present:
/// `ReadResourceResultResponse/read-resource-result-response.json` omits the required `ttlMs` and
/// `cacheScope` (spec-digest §J.4), which the types accept as clients must (see
/// `read_resource_example_without_cache_hints_decodes_and_keeps_them_absent`).
const KNOWN_DEFECTS: &[(&str, &str, &str)] = &[];

fn known_defect(ty: &str, file: &str) -> Option<&'static str> {
    KNOWN_DEFECTS.iter().find(|(t, f, _)| *t == ty && *f == file).map(|(_, _, e)| *e)
}

fn check_examples(rev: &str) {
    let r = revision(rev);
    let types = (r.types)();
    let unions = (r.unions)();
    let results = (r.results)();
    let examples = json_files(&schema_dir(rev).join("examples"));
    assert_eq!(examples.len(), 129, "{rev}: upstream has 129 examples");
    let mut failures = Vec::new();
    let (mut round_tripped, mut variant_checks, mut defects) = (0, 0, 0);
    for (ty, file, text) in &examples {
        let original: Value = serde_json::from_str(text).unwrap();
        let entry = types.iter().find(|t| t.schema == ty).unwrap_or_else(|| panic!("{rev}: no type for folder {ty}"));
        match ((entry.roundtrip)(text), known_defect(ty, file)) {
            (Ok(value), None) => {
                let d = diff(&original, &value);
                if d.is_empty() {
                    round_tripped += 1;
                } else {
                    failures.push(format!("{ty}/{file}: round trip changed {d:?}"));
                }
            }
            (Err(e), Some(expected)) if e.contains(expected) => defects += 1,
            (Err(e), _) => failures.push(format!("{ty}/{file}: {e}")),
            (Ok(_), Some(expected)) => failures
                .push(format!("{ty}/{file}: known defect `{expected}` no longer fails; remove it from KNOWN_DEFECTS")),
        }
        if known_defect(ty, file).is_some() {
            continue;
        }
        for union in &unions {
            for (_, variant) in union.members.iter().filter(|(member, _)| member == ty) {
                match (union.decode)(text) {
                    Ok((got, value)) if got == *variant && value == original => variant_checks += 1,
                    Ok((got, value)) => failures.push(format!(
                        "{ty}/{file} through {}: landed in {got} (want {variant}), diff {:?}",
                        union.union,
                        diff(&original, &value)
                    )),
                    Err(e) => failures.push(format!("{ty}/{file} through {}: {e}", union.union)),
                }
            }
        }
        // A `*ResultResponse` decodes its `result` by the method of the request it answers.
        if let Some(request) = ty.strip_suffix("ResultResponse") {
            let entry =
                results.iter().find(|e| e.request == format!("{request}Request")).expect("request for response");
            let want = match original["result"].get("resultType").and_then(Value::as_str) {
                Some("input_required") => "InputRequired",
                _ => "Complete",
            };
            match (entry.decode)(&original["result"]) {
                Ok((got, value)) if got == want && value == original["result"] => variant_checks += 1,
                Ok((got, _)) => failures.push(format!("{ty}/{file}: result by {} landed in {got}", entry.method)),
                Err(e) => failures.push(format!("{ty}/{file}: result by {}: {e}", entry.method)),
            }
        }
    }
    println!(
        "{rev}: {round_tripped} examples round-tripped, {defects} known upstream defects, {variant_checks} variant checks"
    );
    assert!(failures.is_empty(), "{rev}: {} failures:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(round_tripped + defects, examples.len());
}

#[test]
fn official_examples_2026_07_28() {
    check_examples("2026-07-28");
}

#[test]
fn official_examples_draft() {
    check_examples("draft");
}

/// spec-digest §J.4, pinned: the example omits `ttlMs` and `cacheScope`, which the schema requires
/// of `ReadResourceResult` (it validates only through the `InputRequiredResult` branch of the
/// union). Clients must tolerate that (older servers send neither, and an absent `ttlMs` means 0),
/// so the typed result decodes with both `None`, and re-encoding keeps them absent.
#[test]
fn read_resource_example_without_cache_hints_decodes_and_keeps_them_absent() {
    let text = std::fs::read_to_string(
        schema_dir("2026-07-28").join("examples/ReadResourceResultResponse/read-resource-result-response.json"),
    )
    .unwrap();
    let message: mcp_types::ServerMessage = serde_json::from_str(&text).unwrap();
    let mcp_types::ServerMessage::Response(response) = message else { panic!("not a response") };
    let result: serde_json::Value = serde_json::from_str(response.result.get()).unwrap();
    let outcome: <mcp_types::ReadResourceRequest as mcp_types::Request>::Result = response.result.decode().unwrap();
    let mcp_types::ReadResourceOutcome::Complete(read) = &outcome else { panic!("{outcome:?}") };
    assert_eq!((read.ttl_ms.clone(), read.cache_scope.as_ref()), (None, None));
    assert_eq!(read.ttl_ms.clone().unwrap_or_default().duration(), std::time::Duration::ZERO);
    assert_eq!(serde_json::to_value(&outcome).unwrap(), result);
}
