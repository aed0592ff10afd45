//! The protocol revisions this server speaks, and a session's version as one of them.

use std::borrow::Cow;

/// The stateless revisions this server serves per request.
pub const MODERN_VERSIONS: &[&str] = &["2026-07-28"];
/// The revisions this server negotiates through `initialize`, newest first.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// A legacy session's version as this server's constant for it (a request of the session then
/// allocates none); one it does not know (a record another build stored) as it is.
pub(crate) fn settled_version(version: &str) -> Cow<'static, str> {
    match MODERN_VERSIONS.iter().chain(LEGACY_VERSIONS).find(|known| **known == version) {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(version.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    #[test]
    fn a_known_version_is_its_constant_and_an_unknown_one_is_kept() {
        assert!(matches!(super::settled_version("2025-06-18"), Cow::Borrowed("2025-06-18")));
        assert!(matches!(super::settled_version("2026-07-28"), Cow::Borrowed("2026-07-28")));
        assert!(matches!(super::settled_version("2030-01-01"), Cow::Owned(v) if v == "2030-01-01"));
    }
}
