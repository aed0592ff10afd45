//! One object's text checked as JSON by a byte scan, which also notes where each of its members
//! lies ([`RawResult::scan`](crate::RawResult::scan),
//! [`RawResult::scan_members`](crate::RawResult::scan_members)). The scan takes less than
//! serde_json does: a member name with an escape, or nesting deeper than [`MAX_DEPTH`], is left to
//! serde_json. What it takes, serde_json takes too (the fuzz target `decode_messages` checks this).

use std::ops::Range;

/// JSON's whitespace, as `char`s for `str::trim_matches`.
pub(crate) const WHITESPACE: [char; 4] = [' ', '\t', '\n', '\r'];

/// How deep arrays and objects may nest in a scanned text, the object itself counted (serde_json's
/// own limit when it builds values).
pub(crate) const MAX_DEPTH: u32 = 128;

/// Where one member of a scanned object lies in its text: its name (inside the quotes) and its
/// value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member {
    pub(crate) name: Range<u32>,
    pub(crate) value: Range<u32>,
}

/// The members of `text`, one JSON object and nothing else but whitespace, if the scan takes it.
pub(crate) fn object_members(text: &str) -> Option<Vec<Member>> {
    u32::try_from(text.len()).ok()?;
    let mut members = Vec::with_capacity(8);
    let at32 = |range: Range<usize>| range.start as u32..range.end as u32;
    for_each_member(text, |name, value| members.push(Member { name: at32(name), value: at32(value) }))?;
    Some(members)
}

/// Gives each member of `text` (one JSON object and nothing else but whitespace) to `each`: where
/// its name (inside the quotes) and its value lie. `None` if the scan does not take the text; the
/// members given until then are then no answer.
pub(crate) fn for_each_member(text: &str, mut each: impl FnMut(Range<usize>, Range<usize>)) -> Option<()> {
    let bytes = text.as_bytes();
    let mut at = skip_whitespace(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_whitespace(bytes, at + 1);
    if bytes.get(at) == Some(&b'}') {
        return (skip_whitespace(bytes, at + 1) == bytes.len()).then_some(());
    }
    loop {
        if bytes.get(at) != Some(&b'"') {
            return None;
        }
        let (end, escaped) = string_end(bytes, at)?;
        if escaped {
            return None;
        }
        let name = at + 1..end - 1;
        at = skip_whitespace(bytes, end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        let start = skip_whitespace(bytes, at + 1);
        let end = value_end(bytes, start)?;
        each(name, start..end);
        at = skip_whitespace(bytes, end);
        match bytes.get(at) {
            Some(b',') => at = skip_whitespace(bytes, at + 1),
            Some(b'}') => return (skip_whitespace(bytes, at + 1) == bytes.len()).then_some(()),
            _ => return None,
        }
    }
}

/// The first byte at or after `at` that is not JSON whitespace (or the end).
fn skip_whitespace(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// Where the JSON value starting at `at` (a member's, one level down) ends, if it is one. Arrays
/// and objects are followed with a stack of one bit per level (set: an object).
fn value_end(bytes: &[u8], mut at: usize) -> Option<usize> {
    let (mut objects, mut depth) = (0u128, 0u32);
    loop {
        // A value starts at `at`.
        match *bytes.get(at)? {
            b'"' => at = string_end(bytes, at)?.0,
            open @ (b'{' | b'[') => {
                if depth + 1 == MAX_DEPTH {
                    return None;
                }
                objects = objects << 1 | u128::from(open == b'{');
                depth += 1;
                at = skip_whitespace(bytes, at + 1);
                let close = if open == b'{' { b'}' } else { b']' };
                if bytes.get(at) == Some(&close) {
                    at += 1;
                    (objects, depth) = (objects >> 1, depth - 1);
                } else {
                    if open == b'{' {
                        at = member_value_start(bytes, at)?;
                    }
                    continue;
                }
            }
            b't' => at = literal_end(bytes, at, b"true")?,
            b'f' => at = literal_end(bytes, at, b"false")?,
            b'n' => at = literal_end(bytes, at, b"null")?,
            b'-' | b'0'..=b'9' => at = number_end(bytes, at)?,
            _ => return None,
        }
        // After a value: the end of the outermost one, or what follows it in its container.
        loop {
            if depth == 0 {
                return Some(at);
            }
            at = skip_whitespace(bytes, at);
            let in_object = objects & 1 == 1;
            match (*bytes.get(at)?, in_object) {
                (b',', true) => {
                    at = member_value_start(bytes, skip_whitespace(bytes, at + 1))?;
                    break;
                }
                (b',', false) => {
                    at = skip_whitespace(bytes, at + 1);
                    break;
                }
                (b'}', true) | (b']', false) => {
                    at += 1;
                    (objects, depth) = (objects >> 1, depth - 1);
                }
                _ => return None,
            }
        }
    }
}

/// Past a member's name and colon, at its value, for a name that starts at `at`.
fn member_value_start(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let at = skip_whitespace(bytes, string_end(bytes, at)?.0);
    (bytes.get(at) == Some(&b':')).then(|| skip_whitespace(bytes, at + 1))
}

/// Past the string whose opening quote is at `at`, and whether it has an escape. A control
/// character (below U+0020) is refused, as JSON has it; the text is UTF-8 already.
fn string_end(bytes: &[u8], at: usize) -> Option<(usize, bool)> {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let zero_in = |word: u64| word.wrapping_sub(ONES) & !word & HIGHS;
    let (mut at, mut escaped) = (at + 1, false);
    loop {
        // Eight bytes at a time to the next `"`, `\` or control character.
        while let Some(chunk) = bytes.get(at..at + 8) {
            let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
            let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
            let found = zero_in(word ^ (ONES * u64::from(b'"'))) | zero_in(word ^ (ONES * u64::from(b'\\'))) | control;
            if found != 0 {
                at += (found.trailing_zeros() / 8) as usize;
                break;
            }
            at += 8;
        }
        match *bytes.get(at)? {
            b'"' => return Some((at + 1, escaped)),
            b'\\' => {
                escaped = true;
                at += match *bytes.get(at + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
                    b'u' if bytes.get(at + 2..at + 6)?.iter().all(u8::is_ascii_hexdigit) => 6,
                    _ => return None,
                };
            }
            byte if byte < 0x20 => return None,
            _ => at += 1,
        }
    }
}

fn literal_end(bytes: &[u8], at: usize, literal: &[u8]) -> Option<usize> {
    bytes[at..].starts_with(literal).then_some(at + literal.len())
}

/// Past the number at `at`: `-`, an integer part without leading zeros, a fraction, an exponent.
fn number_end(bytes: &[u8], mut at: usize) -> Option<usize> {
    let digits = |at: usize| bytes[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    if bytes[at] == b'-' {
        at += 1;
    }
    match digits(at) {
        0 => return None,
        _ if bytes[at] == b'0' => at += 1,
        n => at += n,
    }
    if bytes.get(at) == Some(&b'.') {
        match digits(at + 1) {
            0 => return None,
            n => at += 1 + n,
        }
    }
    if let Some(b'e' | b'E') = bytes.get(at) {
        at += 1;
        if let Some(b'+' | b'-') = bytes.get(at) {
            at += 1;
        }
        match digits(at) {
            0 => return None,
            n => at += n,
        }
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use serde_json::value::RawValue;

    use super::*;

    /// The members serde_json reads, each name and value's text, if it reads `text` as an object.
    fn serde_members(text: &str) -> Option<Vec<(String, String)>> {
        let members: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).ok()?;
        let raw: std::collections::BTreeMap<String, &RawValue> = serde_json::from_str(text).ok()?;
        Some(members.keys().map(|name| (name.clone(), raw[name].get().to_owned())).collect())
    }

    fn scanned(text: &str) -> Option<Vec<(String, String)>> {
        let members = object_members(text)?;
        let at = |range: &Range<u32>| &text[range.start as usize..range.end as usize];
        let mut members: Vec<_> = members.iter().map(|m| (at(&m.name).to_owned(), at(&m.value).to_owned())).collect();
        members.sort();
        Some(members)
    }

    #[test]
    fn valid_objects_are_split_as_serde_json_reads_them() {
        for text in [
            "{}",
            " {\t}\r\n",
            r#"{"a":1}"#,
            r#"{ "a" : [ 1 , -0.5e+3 , 0 , 2E-2 , true , false , null ] , "b" : { } , "c" : [ ] }"#,
            r#"{"s":"a \"q\" \\ \/ \b\f\n\r\t \u00e9 \uD83D\uDE00 } ] ,","t":""}"#,
            r#"{"deep":[[[{"k":[{"k":"}"}]}]]],"last":{"x":[{}]}}"#,
            r#"{"é":"ü","ключ":[1,{"z":"ж"}]}"#,
            r#"{"content":[{"type":"text","text":"3"}],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"n","version":"1"}},"resultType":"complete"}"#,
        ] {
            let want = serde_members(text).expect(text);
            let mut want_sorted = want.clone();
            want_sorted.sort();
            assert_eq!(scanned(text), Some(want_sorted), "{text}");
        }
        let nested = "[".repeat(127) + &"]".repeat(127);
        assert!(scanned(&format!(r#"{{"a":{nested}}}"#)).is_some());
    }

    /// Invalid JSON is refused (and so is what the scan leaves to serde_json).
    #[test]
    fn anything_else_is_refused() {
        let too_deep = "[".repeat(128) + &"]".repeat(128);
        for text in [
            "",
            "[]",
            "\"x\"",
            "{",
            "{}}",
            "{} x",
            r#"{"a"}"#,
            r#"{"a":}"#,
            r#"{"a":1,}"#,
            r#"{"a":1 "b":2}"#,
            r#"{a:1}"#,
            r#"{"a":[1,]}"#,
            r#"{"a":[1 2]}"#,
            r#"{"a":{"b"}}"#,
            r#"{"a":{"b":1,}}"#,
            r#"{"a":{1:2}}"#,
            r#"{"a":[}"#,
            r#"{"a":{]}"#,
            r#"{"a":01}"#,
            r#"{"a":-}"#,
            r#"{"a":1.}"#,
            r#"{"a":.5}"#,
            r#"{"a":1e}"#,
            r#"{"a":+1}"#,
            r#"{"a":tru}"#,
            r#"{"a":nul}"#,
            r#"{"a":True}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":"\u12"}"#,
            r#"{"a":"\u12G4"}"#,
            "{\"a\":\"tab\there\"}",
            "{\"a\":\"\u{1}\"}",
            r#"{"a":"unterminated}"#,
            // Left to serde_json: an escaped name, deep nesting.
            r#"{"\u0061":1}"#,
            &format!(r#"{{"a":{too_deep}}}"#),
        ] {
            assert_eq!(scanned(text), None, "{text}");
        }
    }

    /// A quote, an escape and a control character at each place in a word of eight bytes.
    #[test]
    fn strings_end_where_they_end_at_any_alignment() {
        for pad in 0..17 {
            let pad = "x".repeat(pad);
            for text in
                [format!(r#"{{"{pad}":"{pad}\"{pad}","b":1}}"#), format!(r#"{{"k":"{pad}\\","{pad}":"\u0041{pad}"}}"#)]
            {
                let mut want = serde_members(&text).expect(&text);
                want.sort();
                assert_eq!(scanned(&text), Some(want), "{text}");
            }
            assert_eq!(scanned(&format!("{{\"k\":\"{pad}\u{1f}\"}}")), None);
            assert_eq!(scanned(&format!("{{\"k\":\"{pad}")), None);
        }
    }
}
