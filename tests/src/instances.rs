//! A schema-driven instance generator: from a revision's official `schema.json`, JSON text for
//! any definition, biased to the edges a decoder gets wrong: every union branch, empty objects and
//! arrays, absent optionals, unknown members, integers at and beyond the 64-bit limits, integral
//! floats (`1.0`), non-BMP text and `\u` escapes (in keys too), deep nesting. Instances are text,
//! not `serde_json::Value`, so that every number literal reaches the decoder as written. The
//! generator follows the keywords the MCP schemas use (`$ref`, `allOf`, `anyOf`, `const`, `enum`,
//! `type`, `properties`, `required`, `additionalProperties`, `items`, `minimum`, `maximum`,
//! `maxItems`, `format`); the property test validates every instance with `jsonschema` anyway.
//!
//! Free-form members (`_meta` values, `arguments`, `JSONValue`, unknown members) get the floats
//! JavaScript's `JSON.stringify` and Python's `json.dumps` write (`1e+21`, `-0.0`, `5e-324`), which
//! `serde_json::Value` holds exactly, and in [`Mode::Extreme`] integers beyond 64 bits, which it
//! cannot: mcp-types refuses those there, naming the member (see [`free_form_extremes`]).

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde_json::{Map, Value};

/// How an instance leans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Required members only, empty arrays.
    Minimal,
    /// Every optional member, non-empty arrays.
    Full,
    /// Optional members and sizes at random.
    Random,
    /// Unknown members in every object the schema leaves open.
    Unknown,
    /// Integers at and beyond the 64-bit limits, integral floats, extreme fractions.
    Extreme,
    /// Non-BMP text, quotes and controls, `\u` escapes in strings and keys.
    Escapes,
    /// As deep as the schema's recursion and free-form members allow.
    Deep,
}

pub const MODES: [Mode; 7] =
    [Mode::Minimal, Mode::Full, Mode::Random, Mode::Unknown, Mode::Extreme, Mode::Escapes, Mode::Deep];

/// Integer literals a JSON Schema `integer` admits, at the edges.
pub const EXTREME_INTEGERS: [&str; 14] = [
    "0",
    "-1",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "1000000000000000000000000000000",
    "-1000000000000000000000000000000",
    "1.0",
    "-0",
    "1e3",
    "2.50e1",
];

/// Number literals at the edges of a `number` member: what JavaScript and Python write, and
/// integers beyond 64 bits (refused naming the member: an `f64` cannot hold them).
const EXTREME_NUMBERS: [&str; 20] = [
    "1e+21",
    "1.5e+300",
    "1.7976931348623157e+308",
    "6.02214076e+23",
    "-1e+30",
    "18446744073709551616",
    "-1000000000000000000000000000000",
    "-0",
    "0.5",
    "1.0",
    "-0.0",
    "1e300",
    "5e-324",
    "9007199254740993",
    "18446744073709551615",
    "-9223372036854775808",
    "1.7976931348623157e308",
    "0.30000000000000004",
    "2.2250738585072014e-308",
    "123456789.125e-3",
];

const WORDS: [&str; 10] =
    ["alpha", "tool", "résumé", "日本語", "😀 emoji", "quote\"d", "back\\slash", "tab\there", "line\nbreak", ""];

pub struct Generator<'s> {
    defs: &'s Map<String, Value>,
    prefix: &'static str,
    rng: Pcg64Mcg,
    mode: Mode,
    max_depth: usize,
    unknown_counter: usize,
}

impl<'s> Generator<'s> {
    pub fn new(schema: &'s Value, seed: u64) -> Self {
        let (defs, prefix) = match schema.get("$defs") {
            Some(d) => (d.as_object().unwrap(), "#/$defs/"),
            None => (schema["definitions"].as_object().unwrap(), "#/definitions/"),
        };
        Generator {
            defs,
            prefix,
            rng: Pcg64Mcg::seed_from_u64(seed),
            mode: Mode::Random,
            max_depth: 6,
            unknown_counter: 0,
        }
    }

    /// The names of every definition.
    pub fn definitions(&self) -> Vec<&'s str> {
        self.defs.keys().map(String::as_str).collect()
    }

    /// One instance of definition `def`, as JSON text.
    pub fn instance(&mut self, def: &str, mode: Mode) -> String {
        self.mode = mode;
        self.max_depth = if mode == Mode::Deep { 14 } else { 6 };
        let schema = &self.defs[def];
        let free = is_free_form_def(def);
        let json = self.value(schema, 0, free);
        let escapes = mode == Mode::Escapes || self.rng.random_bool(0.1);
        let mut out = String::new();
        write(&json, escapes, &mut self.rng, &mut out);
        out
    }

    fn coin(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.rng.random_range(0..items.len())]
    }

    fn value(&mut self, schema: &'s Value, depth: usize, free: bool) -> J {
        if let Some(target) = schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix(self.prefix)) {
            let free = free || is_free_form_def(target);
            return self.value(&self.defs[target], depth + 1, free);
        }
        if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
            let merged = self.merge(all.iter().chain([schema]));
            let merged: &'s Value = Box::leak(Box::new(merged));
            return self.object(merged, depth, free);
        }
        if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
            let branch = &branches[self.rng.random_range(0..branches.len())];
            return self.value(branch, depth, free);
        }
        if let Some(c) = schema.get("const") {
            return J::from_value(c);
        }
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            let v = &values[self.rng.random_range(0..values.len())];
            return J::from_value(v);
        }
        let ty = match schema.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(ts)) => {
                let ts: Vec<&str> = ts.iter().filter_map(Value::as_str).collect();
                self.pick(&ts)
            }
            _ => return self.free_value(depth),
        };
        match ty {
            "object" => self.object(schema, depth, free),
            "array" => {
                let mut n = match self.mode {
                    Mode::Minimal => 0,
                    _ if depth >= self.max_depth => 0,
                    Mode::Full | Mode::Deep => self.rng.random_range(1..4),
                    _ => self.rng.random_range(0..3),
                };
                if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
                    n = n.min(max as usize);
                }
                let items = schema.get("items");
                J::Array(
                    (0..n)
                        .map(|_| match items {
                            Some(items) => self.value(items, depth + 1, free),
                            None => self.free_value(depth + 1),
                        })
                        .collect(),
                )
            }
            "string" => self.string(schema),
            "integer" => self.integer(schema, free),
            "number" => self.number(schema, free),
            "boolean" => J::Bool(self.coin(0.5)),
            "null" => J::Null,
            other => panic!("type {other} is not generated"),
        }
    }

    /// One object schema from `allOf` members (properties and `required` merged, closed if any is).
    /// One object schema with every member's properties; of a member that is a union (`anyOf`,
    /// as in the tasks extension's `Result` ∧ `DetailedTask`), one variant at random.
    fn merge(&mut self, members: impl Iterator<Item = &'s Value>) -> Value {
        let mut properties = Map::new();
        let mut required = Vec::new();
        let mut closed = false;
        for member in members {
            let mut member = member;
            while let Some(t) = member.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix(self.prefix)) {
                member = &self.defs[t];
            }
            if let Some(branches) = member.get("anyOf").and_then(Value::as_array) {
                let branch = &branches[self.rng.random_range(0..branches.len())];
                let inner = self.merge(std::iter::once(branch));
                properties.extend(inner["properties"].as_object().unwrap().clone());
                required.extend(inner["required"].as_array().unwrap().iter().cloned());
                closed |= inner.get("additionalProperties") == Some(&Value::Bool(false));
            }
            if let Some(all) = member.get("allOf").and_then(Value::as_array) {
                let inner = self.merge(all.iter());
                properties.extend(inner["properties"].as_object().unwrap().clone());
                required.extend(inner["required"].as_array().unwrap().iter().cloned());
                closed |= inner.get("additionalProperties") == Some(&Value::Bool(false));
            }
            if let Some(p) = member.get("properties").and_then(Value::as_object) {
                properties.extend(p.clone());
            }
            if let Some(r) = member.get("required").and_then(Value::as_array) {
                required.extend(r.iter().cloned());
            }
            closed |= member.get("additionalProperties") == Some(&Value::Bool(false));
        }
        let mut out = serde_json::json!({"type": "object", "properties": properties, "required": required});
        if closed {
            out["additionalProperties"] = Value::Bool(false);
        }
        out
    }

    fn object(&mut self, schema: &'s Value, depth: usize, free: bool) -> J {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut members = Vec::new();
        let properties = schema.get("properties").and_then(Value::as_object);
        for (key, prop) in properties.into_iter().flatten() {
            if prop.get("not").is_some_and(|n| n.as_object().is_some_and(Map::is_empty)) {
                continue; // `{"not": {}}`: the member must be absent.
            }
            let include = required.contains(&key.as_str())
                || match self.mode {
                    Mode::Minimal => false,
                    _ if depth >= self.max_depth => false,
                    Mode::Full | Mode::Deep => true,
                    _ => self.coin(0.5),
                };
            if include {
                // `_meta` and the like are open objects: what they hold is free-form.
                let value = self.value(prop, depth + 1, free);
                members.push((key.clone(), value));
            }
        }
        let extra = schema.get("additionalProperties");
        let closed = extra == Some(&Value::Bool(false));
        // Keys a map must have (MCP Apps' `McpUiStyles` requires every key it allows).
        for key in required.iter().filter(|k| properties.is_none_or(|p| !p.contains_key(**k))) {
            let value = match extra {
                Some(ap @ Value::Object(_)) => self.value(ap, depth + 1, free),
                _ => self.free_value(depth + 1),
            };
            push_unique(&mut members, (*key).to_owned(), value);
        }
        let allowed_keys: Option<Vec<&str>> = schema.get("propertyNames").map(|names| {
            let consts =
                names.get("anyOf").and_then(Value::as_array).into_iter().flatten().filter_map(|v| v.get("const"));
            consts
                .chain(names.get("enum").and_then(Value::as_array).into_iter().flatten())
                .filter_map(Value::as_str)
                .collect()
        });
        match extra {
            Some(ap @ Value::Object(o)) if !o.is_empty() => {
                let n = match self.mode {
                    Mode::Minimal => 0,
                    _ if depth >= self.max_depth => 0,
                    _ => self.rng.random_range(0..3),
                };
                for _ in 0..n {
                    let key = match &allowed_keys {
                        Some(keys) if !keys.is_empty() => self.pick(keys).to_owned(),
                        _ => self.key(),
                    };
                    let value = self.value(ap, depth + 1, free);
                    push_unique(&mut members, key, value);
                }
            }
            _ if properties.is_none_or(Map::is_empty) && !closed => {
                // A free-form object.
                let n =
                    if depth >= self.max_depth || self.mode == Mode::Minimal { 0 } else { self.rng.random_range(0..3) };
                for _ in 0..n {
                    let key = self.key();
                    let value = self.free_value(depth + 1);
                    push_unique(&mut members, key, value);
                }
            }
            _ => {}
        }
        let open = extra.is_none_or(|ap| *ap == Value::Bool(true) || ap.as_object().is_some_and(Map::is_empty));
        if open && (self.mode == Mode::Unknown || self.coin(0.1)) {
            self.unknown_counter += 1;
            let key = format!("x-unknown-{}", self.unknown_counter);
            let value = self.free_value(depth + 1);
            members.push((key, value));
        }
        J::Object(members)
    }

    fn key(&mut self) -> String {
        let word = self.pick(&["k", "com.example/key", "日本", "😀", "", "a b", "_meta"]);
        format!("{word}{}", self.rng.random_range(0..1000))
    }

    fn string(&mut self, schema: &Value) -> J {
        let text = match schema.get("format").and_then(Value::as_str) {
            Some("uri") => self
                .pick(&["https://example.com/a?b=c#d", "file:///tmp/x%20y", "urn:isbn:0451450523", "mcp://r/😀"])
                .to_owned(),
            Some("uri-template") => self.pick(&["file:///{path}", "https://example.com/{id}/x"]).to_owned(),
            Some("byte") => self.pick(&["", "aGVsbG8=", "AAEC/w==", "8J+YgA=="]).to_owned(),
            // RFC 3339 (MCP Apps' schema checks it with a `pattern` too).
            Some("date-time") => self
                .pick(&["2025-01-12T15:00:58Z", "2024-02-29T23:59:59.5+01:00", "2026-07-28T00:00:00-05:30"])
                .to_owned(),
            _ => match self.mode {
                Mode::Escapes => {
                    (0..self.rng.random_range(1..4)).map(|_| self.pick(&WORDS)).collect::<Vec<_>>().join("\u{7}")
                }
                Mode::Minimal => String::new(),
                _ => self.pick(&WORDS).to_owned(),
            },
        };
        J::String(text)
    }

    fn integer(&mut self, schema: &Value, free: bool) -> J {
        let min = schema.get("minimum").and_then(Value::as_f64);
        let max = schema.get("maximum").and_then(Value::as_f64);
        let fits = |lit: &str| {
            let v: f64 = lit.parse().unwrap();
            min.is_none_or(|m| v >= m) && max.is_none_or(|m| v <= m)
        };
        if self.mode == Mode::Extreme && !free {
            let candidates: Vec<&str> = EXTREME_INTEGERS.iter().copied().filter(|l| fits(l)).collect();
            return J::Number(self.pick(&candidates).to_owned());
        }
        let lo = min.map_or(-1000, |m| m as i64);
        let hi = max.map_or(1000, |m| m as i64);
        J::Number(self.rng.random_range(lo..=hi).to_string())
    }

    fn number(&mut self, schema: &Value, free: bool) -> J {
        let min = schema.get("minimum").and_then(Value::as_f64);
        let max = schema.get("maximum").and_then(Value::as_f64);
        let fits = |lit: &str| {
            let v: f64 = lit.parse().unwrap();
            min.is_none_or(|m| v >= m) && max.is_none_or(|m| v <= m)
        };
        let candidate = if self.mode == Mode::Extreme && !free {
            self.pick(&EXTREME_NUMBERS).to_owned()
        } else if self.coin(0.3) {
            self.rng.random_range(-100i64..100).to_string()
        } else {
            let (lo, hi) = (min.unwrap_or(-1e6), max.unwrap_or(1e6));
            let f: f64 = lo + (hi - lo) * self.rng.random::<f64>();
            serde_json::to_string(&f).unwrap()
        };
        if fits(&candidate) {
            J::Number(candidate)
        } else {
            J::Number(min.or(max).map_or("0".into(), |m| format!("{m:?}")))
        }
    }

    /// Any JSON value a `serde_json::Value` holds exactly.
    fn free_value(&mut self, depth: usize) -> J {
        let deep = self.mode == Mode::Deep && depth < 40;
        let kinds: &[u8] = if depth >= self.max_depth && !deep { &[0, 1, 2, 3, 4] } else { &[0, 1, 2, 3, 4, 5, 6] };
        match self.pick(kinds) {
            0 => J::Null,
            1 => J::Bool(self.coin(0.5)),
            2 if self.mode == Mode::Extreme && self.coin(0.2) => J::Number(self.pick(&free_form_extremes()).to_owned()),
            2 => J::Number(
                self.pick(&[
                    "0",
                    "-7",
                    "-0",
                    "9223372036854775807",
                    "-9223372036854775808",
                    "18446744073709551615",
                    "1.5",
                    "-2.5e-300",
                    "1e-7",
                    "1.0",
                    // JavaScript's and Python's spellings.
                    "1e+21",
                    "1.5e+300",
                    "5e-324",
                    "1.7976931348623157e+308",
                    "-0.0",
                    "6.02214076e+23",
                    "-1e+30",
                ])
                .to_owned(),
            ),
            3 => J::String(self.pick(&WORDS).to_owned()),
            4 => J::Number(self.rng.random_range(-1000i64..1000).to_string()),
            5 => {
                let n = if deep { 1 } else { self.rng.random_range(0..3) };
                J::Array((0..n).map(|_| self.free_value(depth + 1)).collect())
            }
            _ => {
                let n = if deep { 1 } else { self.rng.random_range(0..3) };
                let mut members = Vec::new();
                for _ in 0..n {
                    let (key, value) = (self.key(), self.free_value(depth + 1));
                    push_unique(&mut members, key, value);
                }
                J::Object(members)
            }
        }
    }
}

/// Adds a member unless the object has one of that name (JSON objects have unique keys here).
fn push_unique(members: &mut Vec<(String, J)>, key: String, value: J) {
    if !members.iter().any(|(k, _)| *k == key) {
        members.push((key, value));
    }
}

/// Definitions whose Rust type is plain JSON.
fn is_free_form_def(def: &str) -> bool {
    matches!(def, "JSONValue" | "JSONObject" | "JSONArray")
}

/// A generated instance: numbers as literals.
#[derive(Debug, Clone)]
enum J {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<J>),
    Object(Vec<(String, J)>),
}

impl J {
    fn from_value(v: &Value) -> J {
        match v {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Number(n) => J::Number(n.to_string()),
            Value::String(s) => J::String(s.clone()),
            Value::Array(a) => J::Array(a.iter().map(J::from_value).collect()),
            Value::Object(o) => J::Object(o.iter().map(|(k, v)| (k.clone(), J::from_value(v))).collect()),
        }
    }
}

fn write(j: &J, escapes: bool, rng: &mut Pcg64Mcg, out: &mut String) {
    match j {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Number(n) => out.push_str(n),
        J::String(s) => write_string(s, escapes, rng, out),
        J::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, escapes, rng, out);
            }
            out.push(']');
        }
        J::Object(members) => {
            out.push('{');
            for (i, (k, v)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, escapes, rng, out);
                out.push(':');
                write(v, escapes, rng, out);
            }
            out.push('}');
        }
    }
}

/// A JSON string literal; with `escapes`, some characters as `\u` escapes (surrogate pairs for
/// non-BMP ones) and `/` as `\/`.
fn write_string(s: &str, escapes: bool, rng: &mut Pcg64Mcg, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            '/' if escapes && rng.random_bool(0.5) => out.push_str("\\/"),
            c if escapes && rng.random_bool(0.3) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{:04X}", unit));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Integer literals beyond 64 bits, which free-form members refuse: each is an error that names
/// the member, never a silent change to a float.
pub fn free_form_extremes() -> [&'static str; 3] {
    ["18446744073709551616", "-9223372036854775809", "1000000000000000000000000000000"]
}
