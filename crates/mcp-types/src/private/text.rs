//! What the decoders read and write at the lowest level: object keys and strings borrowed from
//! the input, one member written, and serde_json's position taken out of nested errors.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::ser::SerializeMap;

/// An object key, borrowed from the input when possible.
pub struct Key<'de>(pub Cow<'de, str>);

impl<'de> Key<'de> {
    #[inline]
    pub fn as_str(&self) -> &str {
        &self.0
    }
    #[inline]
    pub fn into_owned(self) -> String {
        self.0.into_owned()
    }
}

impl<'de> de::Deserialize<'de> for Key<'de> {
    #[inline]
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(CowStr("an object key")).map(Key)
    }
}

/// A string value, borrowed from the input when possible (used for tags and `const` checks).
pub struct Str<'de>(pub Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Str<'de> {
    #[inline]
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // "expected a string", not "an object key", when a tag is not a string.
        d.deserialize_str(CowStr("a string")).map(Str)
    }
}

/// Reads a string, borrowed from the input when possible; the text names it in errors.
pub(super) struct CowStr(pub(super) &'static str);

impl<'de> Visitor<'de> for CowStr {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v))
    }
}

/// Writes one member: the key, then the value. serde's default `serialize_entry` does the same
/// but is not inlined, so every member paid a call; serde_json's `serialize_key` and
/// `serialize_value` are `#[inline]`, and every serializer implements them.
#[inline]
pub fn entry<M: SerializeMap, V: serde::Serialize + ?Sized>(map: &mut M, key: &str, value: &V) -> Result<(), M::Error> {
    map.serialize_key(key)?;
    map.serialize_value(value)
}

/// Strips the ` at line L column C` suffix serde_json appends, so that nested errors read as one
/// sentence and the position is reported once, by the outermost deserializer.
pub(super) fn strip_position(message: &str) -> &str {
    if let Some(idx) = message.rfind(" at line ") {
        let tail = &message[idx + " at line ".len()..];
        let mut parts = tail.splitn(3, ' ');
        let line_ok = parts.next().is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()));
        let column_word = parts.next() == Some("column");
        let column_ok = parts.next().is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()));
        if line_ok && column_word && column_ok {
            return &message[..idx];
        }
    }
    message
}

#[cfg(test)]
mod tests {
    use super::strip_position;

    #[test]
    fn strips_only_a_trailing_serde_json_position() {
        assert_eq!(strip_position("missing field `a` at line 1 column 20"), "missing field `a`");
        assert_eq!(strip_position("bad at line one"), "bad at line one");
        assert_eq!(strip_position("plain"), "plain");
    }
}
