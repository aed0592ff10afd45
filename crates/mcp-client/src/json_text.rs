//! Looks into JSON text without parsing it, shared by the protocol core, the result checks and
//! telemetry.

/// Whether the JSON text `text` may hold `needle` (a JSON string written with its quotes, or a
/// word of one, made of ASCII letters, digits and `_`) in a member name or a value. Such a word
/// can be escaped only as `\u00XX`: without one (newlines, quotes, backslashes and escapes of
/// other characters do not count) a plain search answers exactly, and a "no" saves a parse.
pub(crate) fn may_hold(text: &str, needle: &memchr::memmem::Finder<'_>) -> bool {
    debug_assert!(needle.needle().iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'"'));
    needle.find(text.as_bytes()).is_some() || may_escape_ascii(text)
}

/// A search for [`may_hold`], prepared once: `str::contains` sets up a two-way search on each
/// call, and `memmem::find` its own.
macro_rules! needle {
    ($text:expr) => {{
        static NEEDLE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new($text));
        &*NEEDLE
    }};
}
pub(crate) use needle;

/// Whether `text` may write an ASCII character as a `\u` escape, the only other way to write a
/// letter, digit or `_`. Any `\u00` counts (`\u00e9` too): a false "yes" only costs the caller a
/// parse. Most texts have no backslash at all, which one `memchr` finds.
pub(crate) fn may_escape_ascii(text: &str) -> bool {
    let bytes = text.as_bytes();
    memchr::memchr_iter(b'\\', bytes).any(|at| bytes[at + 1..].starts_with(b"u00"))
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
        assert!(!may_hold(text, needle!(r#""resultType""#)));
        assert!(may_hold(text, needle!("text")));
        // `T` written as `\u0054`.
        assert!(may_hold(r#"{"result\u0054ype":"task"}"#, needle!(r#""resultType""#)));
        assert!(may_hold(r#"{"content":[],"x":"\u00e9"}"#, needle!(r#""resultType""#)));
        // A backslash at the end, an escaped backslash before `u00`, a `\u` of another page.
        assert!(!may_escape_ascii(r#""a\"#));
        assert!(may_escape_ascii(r#""\\u00""#));
        assert!(!may_escape_ascii(r#""\u4e2d\\""#));
        assert!(may_escape_ascii(r#""\n\u0041""#));
    }
}
