//! Values whose type the schema leaves open or that decide a union by their shape: free-form
//! members checked as they are read ([`FreeForm`]), numbers kept exactly ([`ExactNumber`]), and
//! the value a union decoded by shape is scored on ([`Scored`]).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize as _, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::buffered::{FromRaw, deserialize_raw, json_string};
use super::text::strip_position;

/// A free-form member (`serde_json::Value`, a JSON object, a list of values), decoded from its
/// exact text so that every number is decided by its value, never changed silently (an error
/// names the member through [`in_field`](super::in_field)). serde_json gives every integer within 64 bits as an
/// integer and any other number as an `f64` without its text: the member is first built in one
/// pass from its text, and only when a number is ambiguous (an `f64` of magnitude 2^63 or more,
/// which may have been an integer literal beyond 64 bits, or a negative zero, which may have been
/// the integer `-0`) are its literals read (`value_from_text`): a float literal (`1e+21`, `-0.0`,
/// `1.5e+300`, what JavaScript and Python write) is kept when the nearest `f64` has the same
/// decimal value, `-0` is the integer 0, and an integer beyond 64 bits is refused naming itself.
/// Fractions within that range are kept as the nearest `f64`, as `Value` keeps them.
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
        let ExactValue(value) = deserialize_raw(d)?;
        free_form_of(value)
    }
}

/// `value` as the free-form type `T`, or the type's own error ("invalid type: ..., expected a map").
#[inline]
fn free_form_of<T: FreeFormType, E: de::Error>(value: Value) -> Result<T, E> {
    if T::fits(&value) { Ok(T::convert(value)) } else { T::deserialize(value).map_err(de::Error::custom) }
}

/// A free-form value from the JSON text of one whole value, numbers decided like [`FreeForm`]
/// does. The text is at hand: it is parsed once, not first scanned for its bounds.
pub fn free_form_from_text<T: FreeFormType, E: de::Error>(text: &str) -> Result<T, E> {
    free_form_of(value_from_text(text).map_err(|e| E::custom(strip_position(&e.to_string())))?)
}

/// A free-form value, from its text when the deserializer gives it (see [`FreeForm`]).
struct ExactValue(Value);

impl<'de> FromRaw<'de> for ExactValue {
    const EXPECTING: &'static str = "any valid JSON value";

    #[inline]
    fn from_raw<E: de::Error>(raw: Cow<'de, str>) -> Result<Self, E> {
        // Scalars, most members of an open result, need no second parse.
        let scalar = match raw.as_bytes().first() {
            Some(b'"') => Value::String(json_string(raw)?.into_owned()),
            Some(b't') => Value::Bool(true),
            Some(b'f') => Value::Bool(false),
            Some(b'n') => Value::Null,
            _ => match raw.parse::<i64>() {
                Ok(n) => Value::from(n),
                Err(_) => return value_from_text(&raw).map(ExactValue).map_err(E::custom),
            },
        };
        Ok(ExactValue(scalar))
    }

    fn fallback<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // From a `Value` (no text): its numbers are what the `Value` holds; an `f64` there is a
        // float. (Text is read exactly by `free_form_from_str`, not by `serde_json::from_str`.)
        Value::deserialize(d).map(ExactValue)
    }
}

/// `text` (one JSON value) as a `Value`: built in one pass, and built again reading the number
/// literals only when a number is ambiguous (or out of range, which that pass words).
#[inline]
fn value_from_text(text: &str) -> Result<Value, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    match ExactBuilder::CHECKED.deserialize(&mut deserializer).and_then(|v| deserializer.end().map(|()| v)) {
        Ok(value) => Ok(value),
        Err(_) => {
            let literals = Literals { all: crate::literal::number_literals(text), next: std::cell::Cell::new(0) };
            let mut deserializer = serde_json::Deserializer::from_str(text);
            let value = ExactBuilder { literals: Some(&literals) }.deserialize(&mut deserializer)?;
            deserializer.end()?;
            Ok(value)
        }
    }
}

/// The number literals of a text, in document order, and how many the builder has seen.
struct Literals<'a> {
    all: Vec<&'a str>,
    next: std::cell::Cell<usize>,
}

impl Literals<'_> {
    /// The literal of the number the visitor sees now (it sees them in the order of the text).
    fn take(&self) -> &str {
        let at = self.next.get();
        self.next.set(at + 1);
        self.all.get(at).copied().unwrap_or_default()
    }
}

/// Builds a `Value` like serde_json's own visitor, deciding each number (see [`FreeForm`]):
/// without the text's literals, an ambiguous `f64` is an error (the caller then builds again with
/// them); with them, each number is decided by its literal.
#[derive(Clone, Copy)]
struct ExactBuilder<'a> {
    literals: Option<&'a Literals<'a>>,
}

impl ExactBuilder<'_> {
    const CHECKED: Self = ExactBuilder { literals: None };

    #[inline]
    fn skip_literal(self) {
        if let Some(literals) = self.literals {
            literals.take();
        }
    }
}

impl<'de> DeserializeSeed<'de> for ExactBuilder<'_> {
    type Value = Value;
    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ExactBuilder<'_> {
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
        self.skip_literal();
        Ok(Value::from(v))
    }
    #[inline]
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        self.skip_literal();
        Ok(Value::from(v))
    }
    #[inline]
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        if let Some(literals) = self.literals {
            return crate::literal::exact_free_form_number(literals.take(), v).map_err(E::custom);
        }
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
        use crate::literal::{Literal, classify};
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
    pub fn decode_free_form<T: FreeFormType, E: de::Error>(&self, union: &str, variant: &str) -> Result<T, E> {
        let result: Result<T, serde_json::Error> = match &self.raw {
            Some(raw) => free_form_from_text(raw),
            None => free_form_of(self.value.clone()),
        };
        result.map_err(|e| E::custom(format_args!("`{union}` as `{variant}`: {}", strip_position(&e.to_string()))))
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
