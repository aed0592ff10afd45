//! Support code for the generated (de)serializers. Not a public API: names may change with any release.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde_json::{Map, Value};

pub(crate) mod buffered;
pub(crate) mod score;
mod shape;
mod text;
pub use buffered::*;
pub use score::{MatchScore, object_score, rank_variants};
pub use shape::*;
use text::strip_position;
pub use text::{Key, Str, entry};

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

/// Writes the unknown members kept in `extra`: one instance shared by every struct, called only
/// when there are some (an empty map costs one check, not an iterator).
#[inline(never)]
pub fn extra<M: SerializeMap>(map: &mut M, extra: &Map<String, Value>) -> Result<(), M::Error> {
    for (key, value) in extra {
        entry(map, key, value)?;
    }
    Ok(())
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
        let value = free_form_from_text(value.get()).map_err(|e| in_field(&key, e))?;
        members.insert(key, value);
    }
    Ok(members)
}

/// A decoded member as a `Value`, through its text (numbers checked like [`FreeForm`]).
pub fn member_value<T: serde::Serialize + ?Sized, E: de::Error>(value: &T) -> Result<Value, E> {
    let text = serde_json::to_string(value).map_err(E::custom)?;
    free_form_from_text(&text)
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
