//! Numbers kept exactly as written: [`Integer`] for the schema's `integer` members (the literal
//! checks it shares with the free-form decoders are in `literal`).
//!
//! serde_json without its `arbitrary_precision` feature parses an integer beyond 64 bits into the
//! nearest `f64`, and `1.0` into a float that no Rust integer type takes. The decoders of this
//! crate therefore ask serde_json for the text of a number (its `RawValue` mechanism, see
//! `private::deserialize_raw`) and keep what they cannot hold in a machine integer as text.

use std::fmt;
use std::hash::{Hash, Hasher};

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::literal::{Literal, classify, integral_value, is_integral, is_zero};
use crate::private::buffered::{FromRaw, deserialize_raw};
use crate::private::score::MatchScore;

/// A JSON number the schema types as `integer`, kept exactly as received: a plain integer in
/// the `i64` or `u64` range as that integer, anything else (`18446744073709551616`, `1.0`,
/// `1e3`, all valid JSON Schema integers) as its literal text, so that re-encoding writes the
/// same number. Equality compares what is kept: `1` and `1.0` are different `Integer`s, as they
/// are different JSON texts.
///
/// ```
/// use mcp_types::Integer;
///
/// let big: Integer = serde_json::from_str("100000000000000000000000000000").unwrap();
/// assert_eq!((big.as_i64(), big.as_u64()), (None, None));
/// assert_eq!(serde_json::to_string(&big).unwrap(), "100000000000000000000000000000");
/// let one: Integer = serde_json::from_str("1.0").unwrap();
/// assert_eq!(one.as_i64(), Some(1));
/// assert_eq!(serde_json::to_string(&one).unwrap(), "1.0");
/// assert!(serde_json::from_str::<Integer>("1.5").is_err());
/// assert_eq!(Integer::from(7), 7);
/// ```
#[derive(Clone)]
pub struct Integer(Repr);

#[derive(Clone)]
enum Repr {
    I64(i64),
    /// Above `i64::MAX`.
    U64(u64),
    /// Anything else, checked to be an integral JSON number. Boxed again: a thin pointer keeps
    /// `Integer` at 16 bytes, as small as the plain cases need (error types embed it).
    Literal(Box<Box<RawValue>>),
}

impl Integer {
    /// 0.
    pub const ZERO: Integer = Integer(Repr::I64(0));

    /// The value as an `i64`, whatever its spelling (`1.0` is 1), if it fits.
    pub fn as_i64(&self) -> Option<i64> {
        match &self.0 {
            Repr::I64(n) => Some(*n),
            Repr::U64(n) => i64::try_from(*n).ok(),
            Repr::Literal(raw) => integral_value(raw.get()).and_then(|n| i64::try_from(n).ok()),
        }
    }

    /// The value as a `u64`, whatever its spelling, if it fits.
    pub fn as_u64(&self) -> Option<u64> {
        match &self.0 {
            Repr::I64(n) => u64::try_from(*n).ok(),
            Repr::U64(n) => Some(*n),
            Repr::Literal(raw) => integral_value(raw.get()).and_then(|n| u64::try_from(n).ok()),
        }
    }

    /// Whether the value is below zero.
    pub fn is_negative(&self) -> bool {
        match &self.0 {
            Repr::I64(n) => *n < 0,
            Repr::U64(_) => false,
            Repr::Literal(raw) => raw.get().starts_with('-') && !is_zero(raw.get()),
        }
    }

    /// The literal text when the number is not a plain 64-bit integer (`None` for `42`).
    pub fn as_literal(&self) -> Option<&str> {
        match &self.0 {
            Repr::Literal(raw) => Some(raw.get()),
            _ => None,
        }
    }

    /// Checks JSON number text: `Ok` when it is an integer in JSON Schema's sense.
    pub(crate) fn from_literal(text: &str) -> Result<Integer, String> {
        if let Ok(n) = text.parse::<i64>() {
            return Ok(Integer(Repr::I64(n)));
        }
        let kind = classify(text).ok_or_else(|| format!("expected an integer, found `{text}`"))?;
        match kind {
            Literal::Plain => {
                if let Ok(n) = text.parse::<i64>() {
                    return Ok(Integer(Repr::I64(n)));
                }
                if let Ok(n) = text.parse::<u64>() {
                    return Ok(Integer(Repr::U64(n)));
                }
            }
            Literal::Decimal if !is_integral(text) => {
                return Err(format!("expected an integer, found the number {text}"));
            }
            Literal::Decimal => {}
        }
        RawValue::from_string(text.to_owned())
            .map(|raw| Integer(Repr::Literal(Box::new(raw))))
            .map_err(|e| e.to_string())
    }

    fn text(&self) -> std::borrow::Cow<'_, str> {
        match &self.0 {
            Repr::I64(n) => n.to_string().into(),
            Repr::U64(n) => n.to_string().into(),
            Repr::Literal(raw) => raw.get().into(),
        }
    }
}

impl PartialEq for Integer {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Repr::I64(a), Repr::I64(b)) => a == b,
            (Repr::U64(a), Repr::U64(b)) => a == b,
            (Repr::Literal(a), Repr::Literal(b)) => a.get() == b.get(),
            _ => false,
        }
    }
}

impl Eq for Integer {}

impl Hash for Integer {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match &self.0 {
            Repr::I64(n) => n.hash(state),
            Repr::U64(n) => n.hash(state),
            Repr::Literal(raw) => raw.get().hash(state),
        }
    }
}

impl PartialEq<i64> for Integer {
    fn eq(&self, other: &i64) -> bool {
        matches!(self.0, Repr::I64(n) if n == *other)
    }
}

impl PartialEq<Integer> for i64 {
    fn eq(&self, other: &Integer) -> bool {
        other == self
    }
}

impl fmt::Debug for Integer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl fmt::Display for Integer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl Default for Integer {
    fn default() -> Self {
        Integer(Repr::I64(0))
    }
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Integer {
            fn from(n: $t) -> Self {
                match i64::try_from(n) {
                    Ok(n) => Integer(Repr::I64(n)),
                    Err(_) => Integer(Repr::U64(n as u64)),
                }
            }
        }
    )*};
}

from_int!(i8, i16, i32, i64, u8, u16, u32, u64, usize);

impl Serialize for Integer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::I64(n) => s.serialize_i64(*n),
            Repr::U64(n) => s.serialize_u64(*n),
            Repr::Literal(raw) => (**raw).serialize(s),
        }
    }
}

impl<'de> FromRaw<'de> for Integer {
    const EXPECTING: &'static str = "an integer";

    fn from_raw<E: de::Error>(raw: std::borrow::Cow<'de, str>) -> Result<Self, E> {
        Integer::from_literal(&raw).map_err(E::custom)
    }

    fn fallback<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Integer;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Integer, E> {
                Ok(n.into())
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Integer, E> {
                Ok(n.into())
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Integer, E> {
                match n.fract() == 0.0 && n.is_finite() {
                    true => {
                        Integer::from_literal(&serde_json::Number::from_f64(n).unwrap().to_string()).map_err(E::custom)
                    }
                    false => Err(E::custom(format_args!("expected an integer, found the number {n}"))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Integer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_raw(d)
    }
}

impl MatchScore for Integer {
    fn match_score(value: &serde_json::Value) -> Option<usize> {
        let n = value.as_number()?;
        (n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)).then_some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_keep_their_spelling() {
        for text in [
            "0",
            "-9223372036854775808",
            "18446744073709551615",
            "18446744073709551616",
            "-1e30",
            "1.0",
            "2.50e1",
            "-0",
        ] {
            let n: Integer = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&n).unwrap(), if text == "-0" { "0" } else { text });
        }
        let e = serde_json::from_str::<Integer>("2.5").unwrap_err().to_string();
        assert!(e.contains("expected an integer, found the number 2.5"), "{e}");
        let e = serde_json::from_str::<Integer>("\"1\"").unwrap_err().to_string();
        assert!(e.contains("expected an integer"), "{e}");
        assert!(serde_json::from_str::<Integer>("25e-1").unwrap_err().to_string().contains("25e-1"));
        assert_eq!(Integer::from(u64::MAX).as_u64(), Some(u64::MAX));
        assert!(serde_json::from_str::<Integer>("-1e30").unwrap().is_negative());
        // Through a `Value` (no text to keep): plain integers still exact.
        let n: Integer = serde_json::from_value(serde_json::json!(5)).unwrap();
        assert_eq!(n, 5);
    }
}
