//! A small deterministic mutator over JSON values, for the mutation tests (`tests/tests/integration/mutations.rs`
//! and `crates/mcp-server/tests/mutations.rs`, which includes this file by path). No randomness:
//! every mutant of a value is enumerated, in document order.

use serde_json::{Value, json};

/// The values every member (and array element) is replaced with, in turn.
pub fn replacements() -> [(&'static str, Value); 7] {
    [
        ("null", Value::Null),
        ("0", json!(0)),
        ("-1.5", json!(-1.5)),
        ("\"x\"", json!("x")),
        ("[]", json!([])),
        ("{}", json!({})),
        ("true", json!(true)),
    ]
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// An object member was removed.
    Removed,
    /// A value was replaced (the label says with what).
    Replaced,
    /// The serialized text was cut short.
    Truncated,
}

#[derive(Debug, Clone)]
pub struct Mutant {
    pub kind: Kind,
    /// JSON pointer of the removed or replaced value (`""` for the root), or `@<byte>` for a cut.
    pub path: String,
    /// `removed`, `replaced with <v>` or `truncated`.
    pub label: String,
    /// The innermost object member the mutation touched: the removed or replaced member itself, or
    /// the member holding the array whose element was replaced. `None` at the root and for cuts.
    pub member: Option<String>,
    /// The mutant as JSON text (compact).
    pub text: String,
    /// The mutant as a value (`None` for cuts, which are not JSON).
    pub value: Option<Value>,
}

/// Every structural mutant of `original` (removals and replacements, recursively through every
/// object and array, the root included), then cuts of its compact text at `cuts` fractions of its
/// length plus the first and last byte. Mutants equal to the original are left out.
pub fn mutants(original: &Value) -> Vec<Mutant> {
    let mut out = Vec::new();
    walk(original, &mut Vec::new(), None, original, &mut out);
    let text = original.to_string();
    let mut cuts: Vec<usize> = vec![0, 1, text.len() / 4, text.len() / 2, text.len() * 3 / 4, text.len() - 1];
    cuts.dedup();
    for mut at in cuts {
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        out.push(Mutant {
            kind: Kind::Truncated,
            path: format!("@{at}"),
            label: "truncated".to_owned(),
            member: None,
            text: text[..at].to_owned(),
            value: None,
        });
    }
    out
}

fn pointer(path: &[String]) -> String {
    path.iter().map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1"))).collect()
}

/// The root with the value at `path` replaced (`Some`) or removed (`None`).
fn edit(root: &Value, path: &[String], with: Option<&Value>) -> Value {
    let mut root = root.clone();
    let Some((last, parents)) = path.split_last() else { return with.cloned().unwrap_or(Value::Null) };
    let mut at = &mut root;
    for step in parents {
        at = match at {
            Value::Object(map) => map.get_mut(step).unwrap(),
            Value::Array(items) => &mut items[step.parse::<usize>().unwrap()],
            _ => unreachable!("paths follow containers"),
        };
    }
    match (at, with) {
        (Value::Object(map), None) => {
            map.remove(last);
        }
        (Value::Object(map), Some(v)) => *map.get_mut(last).unwrap() = v.clone(),
        (Value::Array(items), Some(v)) => items[last.parse::<usize>().unwrap()] = v.clone(),
        _ => unreachable!("only object members are removed"),
    }
    root
}

fn walk(value: &Value, path: &mut Vec<String>, member: Option<&str>, root: &Value, out: &mut Vec<Mutant>) {
    for (label, with) in replacements() {
        if *value != with {
            let mutant = edit(root, path, Some(&with));
            out.push(Mutant {
                kind: Kind::Replaced,
                path: pointer(path),
                label: format!("replaced with {label}"),
                member: member.map(str::to_owned),
                text: mutant.to_string(),
                value: Some(mutant),
            });
        }
    }
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                path.push(key.clone());
                let mutant = edit(root, path, None);
                out.push(Mutant {
                    kind: Kind::Removed,
                    path: pointer(path),
                    label: "removed".to_owned(),
                    member: Some(key.clone()),
                    text: mutant.to_string(),
                    value: Some(mutant),
                });
                walk(child, path, Some(key), root, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                path.push(i.to_string());
                walk(child, path, member, root, out);
                path.pop();
            }
        }
        _ => {}
    }
}
