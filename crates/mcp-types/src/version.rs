//! Protocol revisions.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An MCP protocol version string. Known revisions are variants; any other string is kept as
/// [`ProtocolVersion::Other`]. Versions order by date (the strings are ISO dates).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// `2024-11-05`.
    V2024_11_05,
    /// `2025-03-26`.
    V2025_03_26,
    /// `2025-06-18`.
    V2025_06_18,
    /// `2025-11-25`.
    V2025_11_25,
    /// `2026-07-28`.
    V2026_07_28,
    /// A version this crate does not know, kept as received.
    Other(String),
}

impl ProtocolVersion {
    /// The newest released revision.
    pub const LATEST: ProtocolVersion = ProtocolVersion::V2026_07_28;
    /// Every released revision, oldest first.
    pub const SUPPORTED: &'static [ProtocolVersion] = &[
        ProtocolVersion::V2024_11_05,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2026_07_28,
    ];

    /// The version string (`"2025-11-25"`).
    pub fn as_str(&self) -> &str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
            Self::Other(s) => s,
        }
    }

    /// Whether this is a known revision.
    pub fn is_known(&self) -> bool {
        !matches!(self, Self::Other(_))
    }

    /// Whether requests of this version are stateless (per-request `_meta`, no `initialize`).
    pub fn is_stateless(&self) -> bool {
        *self >= Self::V2026_07_28
    }
}

impl Ord for ProtocolVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for ProtocolVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl From<&str> for ProtocolVersion {
    fn from(s: &str) -> Self {
        match s {
            "2024-11-05" => Self::V2024_11_05,
            "2025-03-26" => Self::V2025_03_26,
            "2025-06-18" => Self::V2025_06_18,
            "2025-11-25" => Self::V2025_11_25,
            "2026-07-28" => Self::V2026_07_28,
            other => Self::Other(other.to_owned()),
        }
    }
}

impl FromStr for ProtocolVersion {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self::from(s))
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = crate::private::Str::deserialize(d)?;
        Ok(Self::from(&*s.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_parses_and_displays() {
        assert!(ProtocolVersion::V2024_11_05 < ProtocolVersion::V2025_11_25);
        assert!(ProtocolVersion::LATEST > ProtocolVersion::V2025_11_25);
        assert_eq!(ProtocolVersion::SUPPORTED.last(), Some(&ProtocolVersion::LATEST));
        assert_eq!("2025-06-18".parse::<ProtocolVersion>().unwrap(), ProtocolVersion::V2025_06_18);
        let future: ProtocolVersion = "2027-01-01".parse().unwrap();
        assert_eq!(future, ProtocolVersion::Other("2027-01-01".into()));
        assert!(future > ProtocolVersion::LATEST && !future.is_known());
        assert_eq!(ProtocolVersion::V2025_03_26.to_string(), "2025-03-26");
        assert!(ProtocolVersion::LATEST.is_stateless() && !ProtocolVersion::V2025_11_25.is_stateless());
    }
}
