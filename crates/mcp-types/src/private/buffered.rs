//! Members read ahead of a discriminator, kept as borrowed text where the input allows, and
//! replayed to the variant's decoder: [`Buffered`], [`Entries`], [`Resumed`], and the raw-text
//! access ([`FromRaw`]) that numbers and shapes are read through.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize as _, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use super::text::{CowStr, Key};

/// A member value read ahead of a discriminator. Strings stay borrowed from the input; numbers,
/// objects and arrays are kept as their exact JSON text when serde_json provides it (see
/// [`deserialize_raw`]) and replayed through serde_json itself, so nothing read ahead loses
/// digits. Deserializers without raw text give numbers and `Value`s as before.
pub enum Buffered<'de> {
    Str(Cow<'de, str>),
    /// The JSON text of a number, object or array.
    Raw(Cow<'de, str>),
    U64(u64),
    I64(i64),
    Bool(bool),
    Null,
    Value(Value),
}

impl Buffered<'_> {
    fn into_value<E: de::Error>(self) -> Result<Value, E> {
        Ok(match self {
            Buffered::Str(s) => Value::String(s.into_owned()),
            Buffered::Raw(text) => serde_json::from_str(&text).map_err(E::custom)?,
            Buffered::U64(n) => Value::from(n),
            Buffered::I64(n) => Value::from(n),
            Buffered::Bool(b) => Value::Bool(b),
            Buffered::Null => Value::Null,
            Buffered::Value(v) => v,
        })
    }
}

impl<'de> FromRaw<'de> for Buffered<'de> {
    const EXPECTING: &'static str = "any valid JSON value";

    #[inline]
    fn from_raw<E: de::Error>(raw: Cow<'de, str>) -> Result<Self, E> {
        Ok(match raw.as_bytes().first() {
            Some(b'"') => Buffered::Str(json_string(raw)?),
            Some(b't') => Buffered::Bool(true),
            Some(b'f') => Buffered::Bool(false),
            Some(b'n') => Buffered::Null,
            _ => Buffered::Raw(raw),
        })
    }

    fn fallback<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(BufferedVisitor)
    }
}

impl<'de> de::Deserialize<'de> for Buffered<'de> {
    #[inline]
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_raw(d)
    }
}

struct BufferedVisitor;

impl<'de> Visitor<'de> for BufferedVisitor {
    type Value = Buffered<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Buffered<'de>, E> {
        Ok(Buffered::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Buffered<'de>, E> {
        Ok(Buffered::I64(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Buffered<'de>, E> {
        Ok(Buffered::U64(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Buffered<'de>, E> {
        // What `Value` does with it (a non-finite float becomes `null`).
        Ok(Buffered::Value(Value::from(v)))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Buffered<'de>, E> {
        Ok(Buffered::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Buffered<'de>, E> {
        Ok(Buffered::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Buffered<'de>, E> {
        Ok(Buffered::Str(Cow::Owned(v)))
    }
    fn visit_unit<E>(self) -> Result<Buffered<'de>, E> {
        Ok(Buffered::Null)
    }
    fn visit_none<E>(self) -> Result<Buffered<'de>, E> {
        Ok(Buffered::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Buffered<'de>, D::Error> {
        d.deserialize_any(BufferedVisitor)
    }
    fn visit_seq<S: de::SeqAccess<'de>>(self, seq: S) -> Result<Buffered<'de>, S::Error> {
        Value::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(Buffered::Value)
    }
    fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<Buffered<'de>, M::Error> {
        Value::deserialize(de::value::MapAccessDeserializer::new(map)).map(Buffered::Value)
    }
}

/// Reads the value of member `key` ahead of a discriminator. `jsonrpc` is a string in every
/// message: read directly, without asking for its text.
#[inline]
pub fn read_ahead<'de, A: MapAccess<'de>>(map: &mut A, key: &str) -> Result<Buffered<'de>, A::Error> {
    if key == "jsonrpc" { map.next_value_seed(AnyBuffered) } else { map.next_value() }
}

struct AnyBuffered;

impl<'de> DeserializeSeed<'de> for AnyBuffered {
    type Value = Buffered<'de>;
    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Buffered<'de>, D::Error> {
        d.deserialize_any(BufferedVisitor)
    }
}

/// The contents of a JSON string literal, borrowed when it has no escapes.
#[inline]
pub(super) fn json_string<'de, E: de::Error>(raw: Cow<'de, str>) -> Result<Cow<'de, str>, E> {
    let plain = |s: &str| s.len() >= 2 && !s[1..s.len() - 1].contains('\\');
    match raw {
        Cow::Borrowed(s) if plain(s) => Ok(Cow::Borrowed(&s[1..s.len() - 1])),
        raw if plain(&raw) => Ok(Cow::Owned(raw[1..raw.len() - 1].to_owned())),
        raw => serde_json::from_str::<String>(&raw).map(Cow::Owned).map_err(E::custom),
    }
}

/// serde_json's name for a raw value (`serde_json::value::RawValue`, feature `raw_value`, which
/// this crate enables). Asked for it through `deserialize_newtype_struct`, serde_json's
/// deserializers hand over the exact text of the next value as a one-entry map; every other
/// deserializer (serde's buffered `Content`, other formats) calls `visit_newtype_struct`, which
/// falls back to decoding the value itself. Covered by `private::tests::raw_text_is_handed_over`.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// A type decoded from the exact JSON text of a value when the deserializer provides it.
pub trait FromRaw<'de>: Sized {
    const EXPECTING: &'static str;
    /// Decodes from the value's JSON text (one complete JSON value).
    fn from_raw<E: de::Error>(raw: Cow<'de, str>) -> Result<Self, E>;
    /// Decodes from a deserializer that has no raw text (a `Content` buffer, another format).
    fn fallback<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error>;
}

/// Decodes `T` from the exact text of the next value, or through [`FromRaw::fallback`].
#[inline]
pub fn deserialize_raw<'de, D: Deserializer<'de>, T: FromRaw<'de>>(d: D) -> Result<T, D::Error> {
    d.deserialize_newtype_struct(RAW_VALUE_TOKEN, RawVisitor::<T>(PhantomData))
}

struct RawVisitor<T>(PhantomData<T>);

impl<'de, T: FromRaw<'de>> Visitor<'de> for RawVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }
    #[inline]
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        match map.next_key::<Key<'de>>()? {
            Some(key) if key.as_str() == RAW_VALUE_TOKEN => {}
            _ => return Err(de::Error::invalid_type(de::Unexpected::Map, &self)),
        }
        let raw = map.next_value_seed(CowStrSeed)?;
        T::from_raw(raw)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        T::fallback(d)
    }
}

/// The one-entry map serde_json hands a raw-text request (see [`RAW_VALUE_TOKEN`]), for text
/// already read ahead.
struct RawEntry<'de, E>(Option<Cow<'de, str>>, PhantomData<E>);

impl<'de, E: de::Error> MapAccess<'de> for RawEntry<'de, E> {
    type Error = E;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, E> {
        match self.0 {
            Some(_) => seed.deserialize(de::value::BorrowedStrDeserializer::new(RAW_VALUE_TOKEN)).map(Some),
            None => Ok(None),
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, E> {
        match self.0.take() {
            Some(Cow::Borrowed(text)) => seed.deserialize(de::value::BorrowedStrDeserializer::new(text)),
            Some(Cow::Owned(text)) => seed.deserialize(de::value::StringDeserializer::new(text)),
            None => Err(E::custom("no value left in the object")),
        }
    }
}

struct CowStrSeed;

impl<'de> DeserializeSeed<'de> for CowStrSeed {
    type Value = Cow<'de, str>;
    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(CowStr("raw JSON text"))
    }
}

/// Replays a [`Buffered`] value: strings and numbers directly (borrowed strings as borrowed),
/// everything else exactly as `serde_json::Value`'s own deserializer would.
struct BufferedDeserializer<'de, E>(Buffered<'de>, PhantomData<E>);

/// Replays buffered JSON text through serde_json (borrowed text as borrowed).
macro_rules! replay_raw {
    ($text:expr, |$de:ident| $call:expr) => {
        match $text {
            Cow::Borrowed(text) => {
                let mut $de = serde_json::Deserializer::from_str(text);
                $call.map_err(E::custom)
            }
            Cow::Owned(text) => {
                let mut $de = serde_json::Deserializer::from_reader(text.as_bytes());
                $call.map_err(E::custom)
            }
        }
    };
}

macro_rules! replay_via_value {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, E> {
            match self.0 {
                Buffered::Value(v) => v.$method($($arg,)* visitor).map_err(E::custom),
                Buffered::Raw(text) => replay_raw!(text, |de| de.$method($($arg,)* visitor)),
                // Not `deserialize_any`: that calls `visit_unit`, which some visitors take for an
                // empty value (`serde_json::Map` decodes it as `{}`); `Value` rejects a null map.
                Buffered::Null => Value::Null.$method($($arg,)* visitor).map_err(E::custom),
                Buffered::Str(_) | Buffered::U64(_) | Buffered::I64(_) | Buffered::Bool(_) => {
                    self.deserialize_any(visitor)
                }
            }
        }
    )*};
}

impl<'de, E: de::Error> Deserializer<'de> for BufferedDeserializer<'de, E> {
    type Error = E;

    #[inline]
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match self.0 {
            Buffered::Str(Cow::Borrowed(s)) => visitor.visit_borrowed_str(s),
            Buffered::Str(Cow::Owned(s)) => visitor.visit_string(s),
            Buffered::U64(n) => visitor.visit_u64(n),
            Buffered::I64(n) => visitor.visit_i64(n),
            Buffered::Bool(b) => visitor.visit_bool(b),
            Buffered::Null => visitor.visit_unit(),
            Buffered::Raw(text) => replay_raw!(text, |de| de.deserialize_any(visitor)),
            Buffered::Value(v) => v.deserialize_any(visitor).map_err(E::custom),
        }
    }

    #[inline]
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match self.0 {
            Buffered::Null => visitor.visit_none(),
            Buffered::Value(v) => v.deserialize_option(visitor).map_err(E::custom),
            Buffered::Raw(text) => replay_raw!(text, |de| de.deserialize_option(visitor)),
            _ => visitor.visit_some(self),
        }
    }

    // Hints whose `Value` implementation does more than `deserialize_any` go through `Value`.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, E> {
        match self.0 {
            Buffered::Raw(text) => replay_raw!(text, |de| de.deserialize_enum(name, variants, visitor)),
            other => other.into_value::<E>()?.deserialize_enum(name, variants, visitor).map_err(E::custom),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, E> {
        match self.0 {
            Buffered::Raw(text) if name == RAW_VALUE_TOKEN => visitor.visit_map(RawEntry(Some(text), PhantomData)),
            Buffered::Raw(text) => replay_raw!(text, |de| de.deserialize_newtype_struct(name, visitor)),
            Buffered::Value(v) => v.deserialize_newtype_struct(name, visitor).map_err(E::custom),
            // A raw-text request (`deserialize_raw`) on a string or scalar read ahead: decoded
            // from the value itself, which is exact.
            _ => visitor.visit_newtype_struct(self),
        }
    }

    replay_via_value! {
        deserialize_bool(), deserialize_i8(), deserialize_i16(), deserialize_i32(), deserialize_i64(),
        deserialize_i128(), deserialize_u8(), deserialize_u16(), deserialize_u32(), deserialize_u64(),
        deserialize_u128(), deserialize_f32(), deserialize_f64(), deserialize_char(), deserialize_str(),
        deserialize_string(), deserialize_bytes(), deserialize_byte_buf(), deserialize_unit(),
        deserialize_unit_struct(name: &'static str), deserialize_seq(),
        deserialize_tuple(len: usize), deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_map(), deserialize_struct(name: &'static str, fields: &'static [&'static str]),
        deserialize_identifier(), deserialize_ignored_any(),
    }
}

/// An object member read ahead of a discriminator: key and value, in input order.
pub type Entry<'de> = (Cow<'de, str>, Buffered<'de>);

/// How many read-ahead members [`Entries`] holds without allocating: a JSON-RPC message usually
/// has `jsonrpc` and `id` before `method`, which is replayed too.
const INLINE_ENTRIES: usize = 3;

/// Object members read ahead of the discriminator, in input order; the first few without an
/// allocation.
pub struct Entries<'de> {
    inline: [Option<Entry<'de>>; INLINE_ENTRIES],
    len: usize,
    spilled: Vec<Entry<'de>>,
}

impl<'de> Entries<'de> {
    #[inline]
    pub fn new() -> Self {
        Entries { inline: [None, None, None], len: 0, spilled: Vec::new() }
    }

    #[inline]
    pub fn push(&mut self, entry: Entry<'de>) {
        match self.inline.get_mut(self.len) {
            Some(slot) => *slot = Some(entry),
            None => self.spilled.push(entry),
        }
        self.len += 1;
    }

    /// Whether member `key` is among the entries.
    #[inline]
    pub fn contains_key(&self, key: &str) -> bool {
        self.inline.iter().flatten().chain(&self.spilled).any(|(k, _)| k == key)
    }

    #[inline]
    fn into_iter(self) -> EntriesIter<'de> {
        EntriesIter { inline: self.inline, next: 0, spilled: self.spilled.into_iter() }
    }
}

impl Default for Entries<'_> {
    fn default() -> Self {
        Self::new()
    }
}

struct EntriesIter<'de> {
    inline: [Option<Entry<'de>>; INLINE_ENTRIES],
    next: usize,
    spilled: std::vec::IntoIter<Entry<'de>>,
}

impl<'de> EntriesIter<'de> {
    #[inline]
    fn next(&mut self) -> Option<Entry<'de>> {
        if let Some(slot) = self.inline.get_mut(self.next) {
            if let Some(entry) = slot.take() {
                self.next += 1;
                return Some(entry);
            }
            return None;
        }
        self.spilled.next()
    }
}

#[inline]
pub(super) fn replay_key<'de, K: DeserializeSeed<'de>, E: de::Error>(
    key: Cow<'de, str>,
    seed: K,
) -> Result<K::Value, E> {
    match key {
        Cow::Borrowed(k) => seed.deserialize(de::value::BorrowedStrDeserializer::new(k)),
        Cow::Owned(k) => seed.deserialize(de::value::StringDeserializer::new(k)),
    }
}

/// A [`MapAccess`] that first yields entries already read from the object (buffered while looking
/// for a discriminator), then a key whose value is still unread in `inner`, then the rest of `inner`.
pub struct Resumed<'de, A> {
    buffered: EntriesIter<'de>,
    buffered_value: Option<Buffered<'de>>,
    current_key: Option<Cow<'de, str>>,
    inner: A,
}

impl<'de, A> Resumed<'de, A> {
    /// `current_key`: a key already taken from `inner` whose value has not been read yet.
    #[inline]
    pub fn new(buffered: Entries<'de>, current_key: Option<Cow<'de, str>>, inner: A) -> Self {
        Resumed { buffered: buffered.into_iter(), buffered_value: None, current_key, inner }
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Resumed<'de, A> {
    type Error = A::Error;

    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        if let Some((key, value)) = self.buffered.next() {
            self.buffered_value = Some(value);
            return replay_key(key, seed).map(Some);
        }
        if let Some(key) = self.current_key.take() {
            return replay_key(key, seed).map(Some);
        }
        self.inner.next_key_seed(seed)
    }

    #[inline]
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match self.buffered_value.take() {
            Some(value) => seed.deserialize(BufferedDeserializer(value, PhantomData)),
            None => self.inner.next_value_seed(seed),
        }
    }
}
