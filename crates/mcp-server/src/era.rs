//! The two protocol eras a request can come in.

/// The protocol era of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28 and later: stateless, everything in `_meta`.
    Modern,
    /// 2024-11-05 … 2025-11-25: a session opened by `initialize`.
    Legacy,
}
