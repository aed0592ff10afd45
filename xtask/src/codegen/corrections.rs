//! Corrections of known upstream schema defects, applied before the model is built. Each one is
//! named, says why, and is covered by a test in `tests/tests/decoding.rs`.

use serde_json::Value;

/// Applies every correction that concerns this schema; returns the names of those applied.
pub fn apply(schema: &mut Value) -> Vec<&'static str> {
    let mut applied = Vec::new();
    if elicit_result_numbers(schema) {
        applied.push("ElicitResult.content accepts any number");
    }
    applied
}

/// `ElicitResult.content` values are `string | number | boolean | string[]` in `schema.ts`, but
/// `schema.json` says `integer` (spec-digest J.11). A form field of type `number` (the spec's own
/// `NumberSchema`, e.g. a default of 95.5) could not be answered, so `integer` becomes `number`.
fn elicit_result_numbers(schema: &mut Value) -> bool {
    let defs = if schema.get("$defs").is_some() { "$defs" } else { "definitions" };
    let Some(values) = schema.pointer_mut(&format!("/{defs}/ElicitResult/properties/content/additionalProperties"))
    else {
        return false;
    };
    let mut changed = false;
    let mut fix = |types: &mut Value| {
        if let Some(types) = types.as_array_mut() {
            for t in types.iter_mut().filter(|t| *t == "integer") {
                *t = Value::from("number");
                changed = true;
            }
        }
    };
    if let Some(types) = values.get_mut("type") {
        fix(types);
    }
    for member in values.get_mut("anyOf").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(types) = member.get_mut("type") {
            fix(types);
        }
    }
    changed
}
