//! Looks into JSON text without parsing it, shared by the protocol core, the result checks and
//! telemetry.

/// Whether the JSON text `text` may hold `needle` (a JSON string written with its quotes, or a
/// word of one) in a member name or a value: without a backslash anywhere nothing is escaped,
/// so a plain search answers exactly, and a "no" saves a parse.
pub(crate) fn may_hold(text: &str, needle: &str) -> bool {
    text.contains('\\') || text.contains(needle)
}
