//! Exact comparison of two JSON texts. `serde_json::Value` equality would hide what a round trip
//! must not do: turn `18446744073709551616` into `1.8446744073709552e19`, or `1.0` into `1`. Here a
//! number is compared by its literal: two integer literals (no fraction, no exponent) by their
//! digits, two other literals by the `f64` they denote (RFC 8259 §6: fractions are binary64), and
//! an integer literal never equals the other kind. Strings are compared after unescaping, objects
//! as sets of members.

use std::fmt::Write as _;

#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    /// The number's literal text.
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

/// Parses JSON text keeping every number literal. Errors say where.
pub fn parse(text: &str) -> Result<Json, String> {
    let mut p = Parser { b: text.as_bytes(), at: 0 };
    p.ws();
    let value = p.value(0)?;
    p.ws();
    if p.at != p.b.len() {
        return Err(format!("trailing characters at byte {}", p.at));
    }
    Ok(value)
}

struct Parser<'a> {
    b: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.b.get(self.at).is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Result<(), String> {
        if self.b.get(self.at) == Some(&c) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expected `{}` at byte {}", c as char, self.at))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, String> {
        if depth > 512 {
            return Err("nested too deeply".into());
        }
        match self.b.get(self.at) {
            Some(b'n') => self.word("null", Json::Null),
            Some(b't') => self.word("true", Json::Bool(true)),
            Some(b'f') => self.word("false", Json::Bool(false)),
            Some(b'"') => self.string().map(Json::String),
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.ws();
                if self.b.get(self.at) == Some(&b']') {
                    self.at += 1;
                    return Ok(Json::Array(items));
                }
                loop {
                    self.ws();
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    if self.b.get(self.at) == Some(&b',') {
                        self.at += 1;
                    } else {
                        self.eat(b']')?;
                        return Ok(Json::Array(items));
                    }
                }
            }
            Some(b'{') => {
                self.at += 1;
                let mut members = Vec::new();
                self.ws();
                if self.b.get(self.at) == Some(&b'}') {
                    self.at += 1;
                    return Ok(Json::Object(members));
                }
                loop {
                    self.ws();
                    let key = self.string()?;
                    self.ws();
                    self.eat(b':')?;
                    self.ws();
                    members.push((key, self.value(depth + 1)?));
                    self.ws();
                    if self.b.get(self.at) == Some(&b',') {
                        self.at += 1;
                    } else {
                        self.eat(b'}')?;
                        return Ok(Json::Object(members));
                    }
                }
            }
            Some(b'-' | b'0'..=b'9') => {
                let start = self.at;
                while self.b.get(self.at).is_some_and(|c| matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')) {
                    self.at += 1;
                }
                Ok(Json::Number(String::from_utf8(self.b[start..self.at].to_vec()).unwrap()))
            }
            _ => Err(format!("unexpected input at byte {}", self.at)),
        }
    }

    fn word(&mut self, word: &str, value: Json) -> Result<Json, String> {
        if self.b[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(format!("unexpected input at byte {}", self.at))
        }
    }

    fn string(&mut self) -> Result<String, String> {
        let start = self.at;
        self.eat(b'"')?;
        while let Some(&c) = self.b.get(self.at) {
            match c {
                b'"' => {
                    self.at += 1;
                    let literal = std::str::from_utf8(&self.b[start..self.at]).map_err(|e| e.to_string())?;
                    return serde_json::from_str(literal).map_err(|e| format!("string at byte {start}: {e}"));
                }
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
        Err(format!("unterminated string at byte {start}"))
    }
}

fn is_integer_literal(n: &str) -> bool {
    !n.contains(['.', 'e', 'E'])
}

/// Whether two number literals denote the same number, in the same kind of literal.
pub fn same_number(a: &str, b: &str) -> bool {
    match (is_integer_literal(a), is_integer_literal(b)) {
        (true, true) => {
            let norm = |n: &str| if n.trim_start_matches('-') == "0" { "0".to_owned() } else { n.to_owned() };
            norm(a) == norm(b)
        }
        (false, false) => match (a.parse::<f64>(), b.parse::<f64>()) {
            (Ok(x), Ok(y)) => x.to_bits() == y.to_bits(),
            _ => false,
        },
        _ => false,
    }
}

/// The differences between two JSON texts, as `path: expected → actual` lines (empty: equal).
pub fn differences(expected: &str, actual: &str) -> Result<Vec<String>, String> {
    let (a, b) = (parse(expected)?, parse(actual)?);
    let mut out = Vec::new();
    walk("", &a, &b, &mut out);
    Ok(out)
}

fn walk(path: &str, a: &Json, b: &Json, out: &mut Vec<String>) {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => {
            if !same_number(x, y) {
                out.push(format!("{path}: {x} -> {y}"));
            }
        }
        (Json::Array(x), Json::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                walk(&format!("{path}/{i}"), v, w, out);
            }
        }
        (Json::Object(x), Json::Object(y)) => {
            for (k, v) in x {
                match y.iter().find(|(key, _)| key == k) {
                    Some((_, w)) => walk(&format!("{path}/{k}"), v, w, out),
                    None => out.push(format!("{path}/{k}: dropped")),
                }
            }
            for (k, _) in y.iter().filter(|(k, _)| !x.iter().any(|(key, _)| key == k)) {
                out.push(format!("{path}/{k}: added"));
            }
        }
        _ if a == b => {}
        _ => {
            let mut line = String::new();
            let _ = write!(line, "{path}: {} -> {}", short(a), short(b));
            out.push(line);
        }
    }
}

fn short(j: &Json) -> String {
    match j {
        Json::Null => "null".into(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.clone(),
        Json::String(s) => format!("{s:?}"),
        Json::Array(a) => format!("[{} items]", a.len()),
        Json::Object(o) => format!("{{{} members}}", o.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_compare_by_literal_kind_and_value() {
        assert!(differences(r#"{"a":[1,2.5,"x"]}"#, r#"{"a":[1,2.50,"x"]}"#).unwrap().is_empty());
        assert!(!differences("18446744073709551616", "1.8446744073709552e19").unwrap().is_empty());
        assert!(!differences("1.0", "1").unwrap().is_empty());
        assert!(differences("1e3", "1000.0").unwrap().is_empty());
        assert!(differences("-0", "0").unwrap().is_empty());
        assert!(!differences("0.1", "0.10000000000000002").unwrap().is_empty());
        assert!(differences(r#"{"\u0061":"\ud83d\ude00"}"#, r#"{"a":"😀"}"#).unwrap().is_empty());
        assert_eq!(differences(r#"{"a":1}"#, r#"{"b":1}"#).unwrap().len(), 2);
    }
}
