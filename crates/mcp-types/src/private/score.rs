//! Scoring a JSON value against the variants of a union that no member discriminates.

use serde::de;
use serde_json::{Map, Value};

/// How well a JSON value fits a type, for unions that no single member discriminates: `None` when
/// it cannot be that type, else the number of required members and tags that matched (the most
/// specific fitting variant wins).
pub trait MatchScore {
    fn match_score(value: &Value) -> Option<usize>;
}

macro_rules! score_kind {
    ($($ty:ty => $check:expr),* $(,)?) => {$(
        impl MatchScore for $ty {
            fn match_score(value: &Value) -> Option<usize> {
                let check: fn(&Value) -> bool = $check;
                check(value).then_some(0)
            }
        }
    )*};
}

score_kind! {
    String => Value::is_string,
    bool => Value::is_boolean,
    i64 => Value::is_i64,
    u64 => Value::is_u64,
    serde_json::Number => Value::is_number,
    Value => |_| true,
    Map<String, Value> => Value::is_object,
}

impl<T: MatchScore> MatchScore for Box<T> {
    fn match_score(value: &Value) -> Option<usize> {
        T::match_score(value)
    }
}

impl<T: MatchScore> MatchScore for Vec<T> {
    fn match_score(value: &Value) -> Option<usize> {
        match value {
            Value::Array(items) => match items.first() {
                Some(first) => T::match_score(first),
                None => Some(0),
            },
            _ => None,
        }
    }
}

impl<T> MatchScore for std::collections::BTreeMap<String, T> {
    fn match_score(value: &Value) -> Option<usize> {
        value.is_object().then_some(0)
    }
}

/// Score of an object against required members, string tags (`(member, allowed values,
/// optional)`) and declared members: required members and tags count most, then how many of the
/// object's members the type declares, then (for otherwise equal fits) the type declaring fewer.
pub fn object_score(
    value: &Value,
    required: &[&str],
    tags: &[(&str, &[&str], bool)],
    declared: &[&str],
) -> Option<usize> {
    let object = value.as_object()?;
    for (key, allowed, optional) in tags {
        match object.get(*key) {
            Some(Value::String(s)) if allowed.contains(&s.as_str()) => {}
            None if *optional => {}
            _ => return None,
        }
    }
    if !required.iter().all(|key| object.contains_key(*key)) {
        return None;
    }
    let covered = object.keys().filter(|k| declared.contains(&k.as_str())).count();
    Some((required.len() + tags.len()) * 1_000_000 + covered * 1_000 + 999usize.saturating_sub(declared.len()))
}

/// The variants a value fits, best score first: a union decodes the first that accepts the value
/// (the schema's `anyOf` takes any branch, so a value the most specific fitting variant rejects
/// may still be another's). A tie at the top between different variants is an error, not a guess,
/// except for `[]`, which fits every list variant alike and encodes the same from each: the first
/// is taken.
pub fn rank_variants<E: de::Error>(
    union: &str,
    value: &Value,
    scores: &[(&'static str, Option<usize>)],
) -> Result<Vec<usize>, E> {
    let mut order: Vec<(usize, usize)> =
        scores.iter().enumerate().filter_map(|(i, (_, s))| s.map(|s| (i, s))).collect();
    // Stable: equal scores keep declaration order.
    order.sort_by_key(|&(_, score)| std::cmp::Reverse(score));
    match order.as_slice() {
        [] => Err(E::custom(format_args!(
            "`{union}`: {} fits none of {}",
            kind_name(value),
            scores.iter().map(|(n, _)| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        ))),
        [(i, a), (j, b), ..] if a == b && !value.as_array().is_some_and(Vec::is_empty) => Err(E::custom(format_args!(
            "`{union}`: ambiguous value, fits both `{}` and `{}`",
            scores[*i].0, scores[*j].0
        ))),
        _ => Ok(order.into_iter().map(|(i, _)| i).collect()),
    }
}

fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
