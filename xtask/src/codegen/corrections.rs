//! Corrections of known upstream schema defects. Each one is named, says why, and is covered by a
//! test in `tests/tests/integration/decoding.rs`. [`apply`] rewrites the schema before the model is built;
//! [`tolerance`] tells the model which members decode more leniently than the schema allows.

use serde_json::Value;

use super::ty::Ty;

/// A member that receivers must accept beyond what `schema.json` allows.
pub struct Tolerance {
    /// The Rust type of the member, when the schema's is too narrow.
    pub ty: Option<Ty>,
    /// The member stays a constructor argument (senders MUST write it) but is `Option` in the
    /// struct and `None` when a received object lacks it; re-encoding keeps it absent.
    pub absent_ok: bool,
    /// Appended to the member's documentation.
    pub note: &'static str,
}

/// Caching hints (spec-digest E.13, J.4, J.25). `schema.json` requires `ttlMs` (`minimum: 0`) and
/// `cacheScope` on every cacheable result, but the caching rules tell clients to treat a negative
/// `ttlMs` as 0 and an absent one as 0 (servers older than 2026-07-28 send neither), and the
/// official example `ReadResourceResultResponse/read-resource-result-response.json` omits both.
/// Servers MUST still send them, so constructors take them; decoding accepts what clients must
/// accept and keeps it exactly (a negative `ttlMs` re-encodes as received, an absent member stays
/// absent).
///
/// Only the caching hints: a member of the same name that may be `null` (the tasks extension's
/// `Task.ttlMs`, null for an unlimited lifetime) is another member and decodes as its schema says.
pub fn tolerance(member: &str, schema: &Value) -> Option<Tolerance> {
    if schema.get("anyOf").is_some() || schema.get("type").is_some_and(Value::is_array) {
        return None;
    }
    match member {
        "ttlMs" => Some(Tolerance {
            ty: Some(Ty::Path("crate::TtlMs")),
            absent_ok: true,
            note: "Required of servers, but decoded leniently (the caching rules): any integer is kept\n\
                   as received, and an absent `ttlMs` (servers older than 2026-07-28) is `None`.\n\
                   Clients SHOULD treat absent and negative values as 0:\n\
                   `ttl_ms.unwrap_or_default().duration()` ([`crate::TtlMs::duration`]).",
        }),
        "cacheScope" => Some(Tolerance {
            ty: None,
            absent_ok: true,
            note: "Required of servers; `None` when a result omits it (servers older than 2026-07-28).\n\
                   The caching rules give no default: `private` is the cautious reading.",
        }),
        _ => None,
    }
}

/// The types whose members are boxed (`Box<T>`): the capability sets and the implementation
/// descriptions, 170 to 300 bytes each. Every 2026-07-28 request carries them in its `_meta`
/// (`clientCapabilities`, `clientInfo`), which made each request type about 450 bytes larger
/// than its own members; a decoded value is moved several times on its way out of the decoder
/// (`memcpy` was a fifth of a typed `ClientMessage` decode's instructions), and a box costs one
/// allocation instead.
const BOXED: &[&str] = &["ClientCapabilities", "ServerCapabilities", "Implementation"];

/// `ty`, boxed when it names one of [`BOXED`].
pub fn boxed(ty: Ty) -> Ty {
    match ty {
        Ty::Named(name) if BOXED.contains(&name.as_str()) => Ty::Boxed(Box::new(Ty::Named(name))),
        ty => ty,
    }
}

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
