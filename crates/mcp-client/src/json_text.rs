//! Looks into JSON text without parsing it, shared by the protocol core, the result checks and
//! telemetry.

/// Whether the JSON text `text` may hold `needle` (a JSON string written with its quotes, or a
/// word of one, made of ASCII letters, digits and `_`) in a member name or a value. Such a word
/// can be escaped only as `\u00XX`: without one (newlines, quotes, backslashes and escapes of
/// other characters do not count) a plain search answers exactly, and a "no" saves a parse.
pub(crate) fn may_hold(text: &str, needle: &str) -> bool {
    debug_assert!(needle.trim_matches('"').bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
    text.contains(needle) || may_escape_ascii(text)
}

/// Whether `text` may write an ASCII character as a `\u` escape, the only other way to write a
/// letter, digit or `_`. Any `\u00` counts (`\u00e9` too): one search, and a false "yes" only
/// costs the caller a parse.
pub(crate) fn may_escape_ascii(text: &str) -> bool {
    text.contains("\\u00")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_u00_escape_can_hide_a_word() {
        // Multi-line text, quotes, backslashes and escapes of other characters: the plain search
        // decides.
        let text = r#"{"content":[{"type":"text","text":"a\n\"b\"\t C:\\x \u4e2d\ud83d\ude00"}]}"#;
        assert!(!may_escape_ascii(text));
        assert!(!may_hold(text, r#""resultType""#));
        assert!(may_hold(text, "text"));
        // `T` written as `\u0054`.
        assert!(may_hold(r#"{"result\u0054ype":"task"}"#, r#""resultType""#));
        assert!(may_hold(r#"{"content":[],"x":"\u00e9"}"#, r#""resultType""#));
    }
}
