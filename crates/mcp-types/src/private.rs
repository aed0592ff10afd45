//! Support code for the generated (de)serializers. Not a public API: names may change with any release.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize as _, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde_json::{Map, Value};

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
struct CowStr(&'static str);

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

/// Types whose generated decoder works on an already opened JSON object, so a tagged union can
/// read the tag first and hand the rest of the object to the variant without buffering it.
pub trait VisitObject: Sized {
    fn visit_object<'de, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error>;
}

/// `Deserializer::deserialize_map` visitor for any [`VisitObject`] type.
pub struct ObjectVisitor<T>(pub &'static str, pub PhantomData<T>);

impl<'de, T: VisitObject> Visitor<'de> for ObjectVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a `{}` object", self.0)
    }
    #[inline]
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::visit_object(map)
    }
}

#[inline]
pub fn deserialize_object<'de, D: Deserializer<'de>, T: VisitObject>(d: D, name: &'static str) -> Result<T, D::Error> {
    d.deserialize_map(ObjectVisitor::<T>(name, PhantomData))
}

/// Decodes a member whose type is a [`VisitObject`] straight into its slot, so that the (often
/// large) value is not moved out through the deserializer's layers. `.1`: the `expecting` text of
/// the type's own `Deserialize` impl, for identical errors.
pub struct InPlace<'a, T>(pub &'a mut Option<T>, pub &'static str);

impl<'de, T: VisitObject> DeserializeSeed<'de> for InPlace<'_, T> {
    type Value = ();
    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, T: VisitObject> Visitor<'de> for InPlace<'_, T> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.1)
    }
    #[inline]
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        *self.0 = Some(T::visit_object(map)?);
        Ok(())
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

/// Writes the unknown members kept in `extra`: one instance shared by every struct, called only
/// when there are some (an empty map costs one check, not an iterator).
#[inline(never)]
pub fn extra<M: SerializeMap>(map: &mut M, extra: &Map<String, Value>) -> Result<(), M::Error> {
    for (key, value) in extra {
        entry(map, key, value)?;
    }
    Ok(())
}

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
fn json_string<'de, E: de::Error>(raw: Cow<'de, str>) -> Result<Cow<'de, str>, E> {
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

/// A free-form member (`serde_json::Value`, a JSON object, a list of values), decoded in one pass
/// like `Value` itself, refusing the numbers a `Value` might not hold exactly (an error that names
/// the member through [`in_field`], never a silent change). serde_json gives every integer within
/// 64 bits as an integer, and any other number as an `f64` without its text: an `f64` of
/// magnitude 2^63 or more may have been an integer literal beyond 64 bits (`18446744073709551616`
/// and `1.8446744073709552e19` are the same `f64`), and a negative zero may have been the integer
/// `-0`. Both are refused; every other number is kept exactly (fractions as the nearest `f64`).
/// Reading the text of each free-form member instead would make every message pay a second scan.
pub struct FreeForm<T>(PhantomData<T>);

impl<T> FreeForm<T> {
    #[inline]
    pub fn new() -> Self {
        FreeForm(PhantomData)
    }
}

impl<T> Default for FreeForm<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// The Rust types of free-form members.
pub trait FreeFormType: de::DeserializeOwned {
    /// Whether a value has this type's shape.
    fn fits(value: &Value) -> bool;
    /// The value as this type; it [`Self::fits`].
    fn convert(value: Value) -> Self;
}

impl FreeFormType for Value {
    #[inline]
    fn fits(_: &Value) -> bool {
        true
    }
    #[inline]
    fn convert(value: Value) -> Self {
        value
    }
}

impl<T: FreeFormType> FreeFormType for Vec<T> {
    fn fits(value: &Value) -> bool {
        value.as_array().is_some_and(|items| items.iter().all(T::fits))
    }
    fn convert(value: Value) -> Self {
        match value {
            Value::Array(items) => items.into_iter().map(T::convert).collect(),
            _ => unreachable!("checked by fits"),
        }
    }
}

impl FreeFormType for Map<String, Value> {
    #[inline]
    fn fits(value: &Value) -> bool {
        value.is_object()
    }
    #[inline]
    fn convert(value: Value) -> Self {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("checked by fits"),
        }
    }
}

impl<T: FreeFormType> FreeFormType for std::collections::BTreeMap<String, T> {
    fn fits(value: &Value) -> bool {
        value.as_object().is_some_and(|map| map.values().all(T::fits))
    }
    fn convert(value: Value) -> Self {
        match value {
            Value::Object(map) => map.into_iter().map(|(k, v)| (k, T::convert(v))).collect(),
            _ => unreachable!("checked by fits"),
        }
    }
}

impl<'de, T: FreeFormType> DeserializeSeed<'de> for FreeForm<T> {
    type Value = T;
    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        let value = d.deserialize_any(CheckedValue)?;
        if T::fits(&value) {
            Ok(T::convert(value))
        } else {
            // The type's own error ("invalid type: ..., expected a map").
            T::deserialize(value).map_err(de::Error::custom)
        }
    }
}

/// Builds a `Value` like serde_json's own visitor, checking numbers (see [`FreeForm`]).
#[derive(Clone, Copy)]
struct CheckedValue;

impl<'de> DeserializeSeed<'de> for CheckedValue {
    type Value = Value;
    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CheckedValue {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    #[inline]
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    #[inline]
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    #[inline]
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    #[inline]
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        if v.abs() >= 9_223_372_036_854_775_808.0 || (v == 0.0 && v.is_sign_negative()) {
            return Err(E::custom(format_args!(
                "the number {} cannot be kept exactly in a free-form member: serde_json's `Value` holds \
                 integers within 64 bits, and cannot tell an integer beyond them (or `-0`) from this float",
                Value::from(v)
            )));
        }
        Ok(Value::from(v))
    }
    #[inline]
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    #[inline]
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    #[inline]
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    #[inline]
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<S: de::SeqAccess<'de>>(self, mut seq: S) -> Result<Value, S::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(self)?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

/// A `number` member as a `serde_json::Number`, from its text: integers within 64 bits exactly,
/// fractions as the nearest `f64` (written back in shortest form). An integer beyond 64 bits is an
/// error naming the member: `Number` would hold it as a float.
pub struct ExactNumber(pub serde_json::Number);

impl<'de> FromRaw<'de> for ExactNumber {
    const EXPECTING: &'static str = "a number";

    #[inline]
    fn from_raw<E: de::Error>(raw: Cow<'de, str>) -> Result<Self, E> {
        use crate::number::{Literal, classify};
        // Most numbers are small integers: no classification needed.
        if let Ok(n) = raw.parse::<i64>() {
            return Ok(ExactNumber(n.into()));
        }
        match classify(&raw) {
            Some(Literal::Plain) => {
                if let Ok(n) = raw.parse::<i64>() {
                    return Ok(ExactNumber(n.into()));
                }
                if let Ok(n) = raw.parse::<u64>() {
                    return Ok(ExactNumber(n.into()));
                }
                Err(E::custom(format_args!(
                    "the integer {raw} is beyond the 64-bit range a number member holds exactly"
                )))
            }
            Some(Literal::Decimal) => raw
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(ExactNumber)
                .ok_or_else(|| E::custom(format_args!("the number {raw} is beyond the range of an f64"))),
            None => Err(E::invalid_type(de::Unexpected::Other(&raw), &"a number")),
        }
    }

    fn fallback<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde_json::Number::deserialize(d).map(ExactNumber)
    }
}

impl<'de> de::Deserialize<'de> for ExactNumber {
    #[inline]
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_raw(d)
    }
}

/// The value of a union decoded by shape: a `Value` to score the variants on, and the exact text
/// (when the deserializer provides it) that the chosen variant is decoded from.
pub struct Scored<'de> {
    pub value: Value,
    raw: Option<Cow<'de, str>>,
}

impl<'de> FromRaw<'de> for Scored<'de> {
    const EXPECTING: &'static str = "any valid JSON value";

    fn from_raw<E: de::Error>(raw: Cow<'de, str>) -> Result<Self, E> {
        // The variants are scored on `value` and decoded from `raw`: the two must be the same
        // object, which a member named twice (the last one wins in a `Value`) would break.
        let mut deserializer = serde_json::Deserializer::from_str(&raw);
        let value = UniqueMembers.deserialize(&mut deserializer).map_err(E::custom)?;
        deserializer.end().map_err(E::custom)?;
        Ok(Scored { value, raw: Some(raw) })
    }

    fn fallback<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Scored { value: Value::deserialize(d)?, raw: None })
    }
}

/// A `Value`, refusing an object that names a member twice.
struct UniqueMembers;

impl<'de> DeserializeSeed<'de> for UniqueMembers {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueMembers {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(UniqueMembers)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if members.contains_key(&key) {
                return Err(de::Error::custom(format_args!("member named twice in one object: `{key}`")));
            }
            let value = map.next_value_seed(UniqueMembers)?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

impl<'de> de::Deserialize<'de> for Scored<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_raw(d)
    }
}

impl Scored<'_> {
    /// Decodes a free-form variant (checked like [`FreeForm`]).
    pub fn decode_free_form<T: de::DeserializeOwned, E: de::Error>(&self, union: &str, variant: &str) -> Result<T, E> {
        if let Some(problem) = self.raw.as_deref().and_then(crate::number::free_form_problem) {
            return Err(E::custom(format_args!("`{union}` as `{variant}`: {problem}")));
        }
        self.decode(union, variant)
    }

    /// Decodes the chosen variant, naming the union and variant on error.
    pub fn decode<T: de::DeserializeOwned, E: de::Error>(&self, union: &str, variant: &str) -> Result<T, E> {
        let result = match &self.raw {
            Some(raw) => serde_json::from_str(raw),
            None => T::deserialize(&self.value),
        };
        result.map_err(|e| E::custom(format_args!("`{union}` as `{variant}`: {}", strip_position(&e.to_string()))))
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
fn replay_key<'de, K: DeserializeSeed<'de>, E: de::Error>(key: Cow<'de, str>, seed: K) -> Result<K::Value, E> {
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

/// Dispatch target of a tagged union: decodes the variant named by `tag` from the rest of the object.
pub trait TaggedUnion: Sized {
    const NAME: &'static str;
    const TAG: &'static str;
    /// Variant used when the object has no tag at all (`None`: the tag is required).
    const DEFAULT_TAG: Option<&'static str>;
    fn dispatch<'de, A: MapAccess<'de>>(tag: &str, map: Resumed<'de, A>) -> Result<Self, A::Error>;
    /// The variant a member implies when only that variant declares it.
    fn variant_for_key(_key: &str) -> Option<&'static str> {
        None
    }
}

/// Every remaining member of an object, free-form members checked like [`FreeForm`] (the `Other`
/// variant of a `resultType` union).
pub fn visit_members<'de, A: MapAccess<'de>>(mut map: A) -> Result<Map<String, Value>, A::Error> {
    let mut members = Map::new();
    while let Some(key) = map.next_key::<Key<'de>>()? {
        let value = map.next_value_seed(FreeForm::<Value>::new()).map_err(|e| in_field(key.as_str(), e))?;
        members.insert(key.into_owned(), value);
    }
    Ok(members)
}

/// The members of an object given as JSON text, checked like [`FreeForm`] (an error names the
/// member).
pub fn members_of<E: de::Error>(text: &str) -> Result<Map<String, Value>, E> {
    let raw: Vec<(String, &serde_json::value::RawValue)> =
        serde_json::from_str::<std::collections::BTreeMap<String, &serde_json::value::RawValue>>(text)
            .map_err(E::custom)?
            .into_iter()
            .collect();
    let mut members = Map::new();
    for (key, value) in raw {
        if let Some(problem) = crate::number::free_form_problem(value.get()) {
            return Err(in_field(&key, E::custom(problem)));
        }
        members.insert(key, serde_json::from_str(value.get()).map_err(E::custom)?);
    }
    Ok(members)
}

/// A decoded member as a `Value`, through its text (numbers checked like [`FreeForm`]).
pub fn member_value<T: serde::Serialize + ?Sized, E: de::Error>(value: &T) -> Result<Value, E> {
    let text = serde_json::to_string(value).map_err(E::custom)?;
    if let Some(problem) = crate::number::free_form_problem(&text) {
        return Err(E::custom(problem));
    }
    serde_json::from_str(&text).map_err(E::custom)
}

/// Reads keys until the tag of `T` is found, buffering what comes before it, then lets `T` decode
/// the variant from the rest of the object (the tag member included, replayed after the buffered
/// members).
pub fn visit_tagged<'de, T: TaggedUnion, A: MapAccess<'de>>(mut map: A) -> Result<T, A::Error> {
    let mut buffered = Entries::new();
    while let Some(key) = map.next_key::<Key<'de>>()? {
        if key.as_str() == T::TAG {
            let tag: Str<'de> = map.next_value().map_err(|e| in_field(T::TAG, e))?;
            return dispatch_tag(buffered, T::TAG, tag, map, T::dispatch);
        }
        if let Some(tag) = T::variant_for_key(key.as_str()) {
            return T::dispatch(tag, Resumed::new(buffered, Some(key.0), map));
        }
        let value = read_ahead(&mut map, key.as_str())?;
        buffered.push((key.0, value));
    }
    match T::DEFAULT_TAG {
        Some(tag) => T::dispatch(tag, Resumed::new(buffered, None, map)),
        None => Err(de::Error::custom(format_args!("`{}`: missing field `{}`", T::NAME, T::TAG))),
    }
}

/// Calls `dispatch` with the tag value and the rest of the object, the tag member (`tag_key`)
/// replayed after the `buffered` members. The tag is not copied unless the input escaped it.
#[inline]
pub fn dispatch_tag<'de, A: MapAccess<'de>, R>(
    mut buffered: Entries<'de>,
    tag_key: &'static str,
    tag: Str<'de>,
    map: A,
    dispatch: impl FnOnce(&str, Resumed<'de, A>) -> Result<R, A::Error>,
) -> Result<R, A::Error> {
    match tag.0 {
        Cow::Borrowed(tag) => {
            buffered.push((Cow::Borrowed(tag_key), Buffered::Str(Cow::Borrowed(tag))));
            dispatch(tag, Resumed::new(buffered, None, map))
        }
        Cow::Owned(tag) => {
            buffered.push((Cow::Borrowed(tag_key), Buffered::Str(Cow::Owned(tag.clone()))));
            dispatch(&tag, Resumed::new(buffered, None, map))
        }
    }
}

pub struct TaggedVisitor<T>(PhantomData<T>);

impl<T> TaggedVisitor<T> {
    pub fn new() -> Self {
        TaggedVisitor(PhantomData)
    }
}

impl<T> Default for TaggedVisitor<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'de, T: TaggedUnion> Visitor<'de> for TaggedVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a `{}` object with a `{}` member", T::NAME, T::TAG)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        visit_tagged(map)
    }
}

/// Error for a tag value no variant carries.
pub fn unknown_tag<E: de::Error>(union: &str, tag_key: &str, tag: &str, expected: &[&str]) -> E {
    E::custom(format_args!(
        "`{union}`: unknown {tag_key} `{tag}`, expected one of {}",
        expected.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
    ))
}

/// Strips the ` at line L column C` suffix serde_json appends, so that nested errors read as one
/// sentence and the position is reported once, by the outermost deserializer.
fn strip_position(message: &str) -> &str {
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

/// Prefixes an error from the value of field `field` with the field's path (`a.b: ...`).
#[cold]
pub fn in_field<E: de::Error>(field: &str, error: E) -> E {
    let message = error.to_string();
    let message = strip_position(&message);
    match message.strip_prefix("at `") {
        Some(rest) => E::custom(format_args!("at `{field}.{rest}")),
        None => E::custom(format_args!("at `{field}`: {message}")),
    }
}

/// Prefixes an error with the union variant (method, content type, ...) being decoded.
#[cold]
pub fn in_variant<E: de::Error>(what: &str, error: E) -> E {
    let message = error.to_string();
    E::custom(format_args!("{what}: {}", strip_position(&message)))
}

#[cold]
pub fn missing_field<E: de::Error>(ty: &str, field: &str) -> E {
    E::custom(format_args!("`{ty}`: missing field `{field}`"))
}

#[cold]
pub fn duplicate_field<E: de::Error>(ty: &str, field: &str) -> E {
    E::custom(format_args!("`{ty}`: duplicate field `{field}`"))
}

/// Reads the value of a `const` string member and checks it.
#[inline]
pub fn expect_const_str<'de, A: MapAccess<'de>>(
    map: &mut A,
    ty: &str,
    field: &str,
    expected: &str,
) -> Result<(), A::Error> {
    let value: Str = map.next_value().map_err(|e| in_field(field, e))?;
    if value.0 == expected {
        Ok(())
    } else {
        Err(de::Error::custom(format_args!("`{ty}`: at `{field}`: expected \"{expected}\", found \"{}\"", value.0)))
    }
}

/// Reads the value of a `const` integer member and checks it.
#[inline]
pub fn expect_const_i64<'de, A: MapAccess<'de>>(
    map: &mut A,
    ty: &str,
    field: &str,
    expected: i64,
) -> Result<(), A::Error> {
    let value: i64 = map.next_value().map_err(|e| in_field(field, e))?;
    if value == expected {
        Ok(())
    } else {
        Err(de::Error::custom(format_args!("`{ty}`: at `{field}`: expected {expected}, found {value}")))
    }
}

/// How well a JSON value fits a type, for unions that no single member discriminates: `None` when
/// it cannot be that type, else the number of required members and tags that matched (the most
/// specific fitting variant wins).
pub trait MatchScore {
    fn match_score(value: &Value) -> Option<usize>;
}

macro_rules! score_kind {
    ($($ty:ty => $check:expr),* $(,)?) => {$(
        impl MatchScore for $ty {
            fn match_score(value: &Value) -> Option<usize> {
                let check: fn(&Value) -> bool = $check;
                check(value).then_some(0)
            }
        }
    )*};
}

score_kind! {
    String => Value::is_string,
    bool => Value::is_boolean,
    i64 => Value::is_i64,
    u64 => Value::is_u64,
    serde_json::Number => Value::is_number,
    Value => |_| true,
    Map<String, Value> => Value::is_object,
}

impl<T: MatchScore> MatchScore for Vec<T> {
    fn match_score(value: &Value) -> Option<usize> {
        match value {
            Value::Array(items) => match items.first() {
                Some(first) => T::match_score(first),
                None => Some(0),
            },
            _ => None,
        }
    }
}

impl<T> MatchScore for std::collections::BTreeMap<String, T> {
    fn match_score(value: &Value) -> Option<usize> {
        value.is_object().then_some(0)
    }
}

/// Score of an object against required members, string tags (`(member, allowed values,
/// optional)`) and declared members: required members and tags count most, then how many of the
/// object's members the type declares, then (for otherwise equal fits) the type declaring fewer.
pub fn object_score(
    value: &Value,
    required: &[&str],
    tags: &[(&str, &[&str], bool)],
    declared: &[&str],
) -> Option<usize> {
    let object = value.as_object()?;
    for (key, allowed, optional) in tags {
        match object.get(*key) {
            Some(Value::String(s)) if allowed.contains(&s.as_str()) => {}
            None if *optional => {}
            _ => return None,
        }
    }
    if !required.iter().all(|key| object.contains_key(*key)) {
        return None;
    }
    let covered = object.keys().filter(|k| declared.contains(&k.as_str())).count();
    Some((required.len() + tags.len()) * 1_000_000 + covered * 1_000 + 999usize.saturating_sub(declared.len()))
}

/// The variants a value fits, best score first: a union decodes the first that accepts the value
/// (the schema's `anyOf` takes any branch, so a value the most specific fitting variant rejects
/// may still be another's). A tie at the top between different variants is an error, not a guess,
/// except for `[]`, which fits every list variant alike and encodes the same from each: the first
/// is taken.
pub fn rank_variants<E: de::Error>(
    union: &str,
    value: &Value,
    scores: &[(&'static str, Option<usize>)],
) -> Result<Vec<usize>, E> {
    let mut order: Vec<(usize, usize)> =
        scores.iter().enumerate().filter_map(|(i, (_, s))| s.map(|s| (i, s))).collect();
    // Stable: equal scores keep declaration order.
    order.sort_by_key(|&(_, score)| std::cmp::Reverse(score));
    match order.as_slice() {
        [] => Err(E::custom(format_args!(
            "`{union}`: {} fits none of {}",
            kind_name(value),
            scores.iter().map(|(n, _)| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        ))),
        [(i, a), (j, b), ..] if a == b && !value.as_array().is_some_and(Vec::is_empty) => Err(E::custom(format_args!(
            "`{union}`: ambiguous value, fits both `{}` and `{}`",
            scores[*i].0, scores[*j].0
        ))),
        _ => Ok(order.into_iter().map(|(i, _)| i).collect()),
    }
}

fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Decodes a buffered value as variant type `T`, naming the union and variant on error.
pub fn from_value<T: de::DeserializeOwned, E: de::Error>(union: &str, variant: &str, value: Value) -> Result<T, E> {
    T::deserialize(value)
        .map_err(|e| E::custom(format_args!("`{union}` as `{variant}`: {}", strip_position(&e.to_string()))))
}

/// Finds the string value of member `tag` in a raw JSON object without decoding the rest.
pub fn probe_tag(raw: &str, tag: &'static str) -> Result<Option<String>, serde_json::Error> {
    struct Probe(&'static str);
    impl<'de> DeserializeSeed<'de> for Probe {
        type Value = Option<String>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de> Visitor<'de> for Probe {
        type Value = Option<String>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = None;
            while let Some(key) = map.next_key::<Key>()? {
                if key.as_str() == self.0 && found.is_none() {
                    found = Some(map.next_value::<Str>().map_err(|e| in_field(self.0, e))?.0.into_owned());
                } else {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
            Ok(found)
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw);
    Probe(tag).deserialize(&mut de)
}

/// A [`MapAccess`] with no entries, for resuming a variant decode after the object was drained.
pub struct EmptyMap<E>(PhantomData<E>);

impl<E> EmptyMap<E> {
    pub fn new() -> Self {
        EmptyMap(PhantomData)
    }
}

impl<E> Default for EmptyMap<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'de, E: de::Error> MapAccess<'de> for EmptyMap<E> {
    type Error = E;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, _seed: K) -> Result<Option<K::Value>, E> {
        Ok(None)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, _seed: V) -> Result<V::Value, E> {
        Err(E::custom("no value left in the object"))
    }
}

/// Reads every remaining entry of `map`, reporting whether `key` is among them.
pub fn drain_checking<'de, A: MapAccess<'de>>(mut map: A, key: &str) -> Result<(Entries<'de>, bool), A::Error> {
    let mut entries = Entries::new();
    let mut found = false;
    while let Some(k) = map.next_key::<Key<'de>>()? {
        found |= k.as_str() == key;
        let value: Buffered<'de> = map.next_value()?;
        entries.push((k.0, value));
    }
    Ok((entries, found))
}

/// The rest of a message with an extension method, read in one pass: member `id` is held aside
/// (decoded as `T`), everything else goes to the notification decoder reading from this map. A
/// message that turns out to have an `id` is then a request with the same members.
pub struct IdProbe<'de, A, T> {
    inner: A,
    id: Option<T>,
    /// Type named by a duplicate-`id` error (`None`: later `id`s are ignored).
    request: Option<&'static str>,
    marker: PhantomData<&'de ()>,
}

impl<'de, A: MapAccess<'de>, T: de::Deserialize<'de>> IdProbe<'de, A, T> {
    #[inline]
    pub fn new(inner: A, request: Option<&'static str>) -> Self {
        IdProbe { inner, id: None, request, marker: PhantomData }
    }

    #[inline]
    pub fn into_id(self) -> Option<T> {
        self.id
    }
}

impl<'de, A: MapAccess<'de>, T: de::Deserialize<'de>> MapAccess<'de> for IdProbe<'de, A, T> {
    type Error = A::Error;

    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        loop {
            match self.inner.next_key::<Key<'de>>()? {
                Some(key) if key.as_str() == "id" => {
                    if let (Some(_), Some(request)) = (&self.id, self.request) {
                        return Err(duplicate_field(request, "id"));
                    }
                    self.id = Some(self.inner.next_value().map_err(|e| in_field("id", e))?);
                }
                Some(key) => return replay_key(key.0, seed).map(Some),
                None => return Ok(None),
            }
        }
    }

    #[inline]
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.inner.next_value_seed(seed)
    }
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

/// Error of the `FromStr`/`TryFrom` impls of generated string enums.
#[derive(Clone, PartialEq, Eq)]
pub struct ConversionError(Cow<'static, str>);

impl std::error::Error for ConversionError {}

impl fmt::Display for ConversionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ConversionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl From<&'static str> for ConversionError {
    fn from(value: &'static str) -> Self {
        ConversionError(Cow::Borrowed(value))
    }
}

impl From<String> for ConversionError {
    fn from(value: String) -> Self {
        ConversionError(Cow::Owned(value))
    }
}
