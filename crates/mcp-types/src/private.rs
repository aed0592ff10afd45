//! Support code for the generated (de)serializers. Not a public API: names may change with any release.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};
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
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// A string value, borrowed from the input when possible (used for tags and `const` checks).
pub struct Str<'de>(pub Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Str<'de> {
    #[inline]
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Key::deserialize(d).map(|k| Str(k.0))
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

/// A [`MapAccess`] that first yields entries already read from the object (buffered while looking
/// for a discriminator), then a key whose value is still unread in `inner`, then the rest of `inner`.
pub struct Resumed<A> {
    buffered: std::vec::IntoIter<(String, Value)>,
    buffered_value: Option<Value>,
    current_key: Option<String>,
    current_pending: bool,
    inner: A,
}

impl<A> Resumed<A> {
    /// `current_key`: a key already taken from `inner` whose value has not been read yet.
    pub fn new(buffered: Vec<(String, Value)>, current_key: Option<String>, inner: A) -> Self {
        Resumed { buffered: buffered.into_iter(), buffered_value: None, current_key, current_pending: false, inner }
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Resumed<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        if let Some((key, value)) = self.buffered.next() {
            self.buffered_value = Some(value);
            return seed.deserialize(key.into_deserializer()).map(Some);
        }
        if let Some(key) = self.current_key.take() {
            self.current_pending = true;
            return seed.deserialize(key.into_deserializer()).map(Some);
        }
        self.inner.next_key_seed(seed)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        if let Some(value) = self.buffered_value.take() {
            return seed.deserialize(value).map_err(de::Error::custom);
        }
        self.current_pending = false;
        self.inner.next_value_seed(seed)
    }
}

/// Dispatch target of a tagged union: decodes the variant named by `tag` from the rest of the object.
pub trait TaggedUnion: Sized {
    const NAME: &'static str;
    const TAG: &'static str;
    /// Variant used when the object has no tag at all (`None`: the tag is required).
    const DEFAULT_TAG: Option<&'static str>;
    fn dispatch<'de, A: MapAccess<'de>>(tag: &str, map: Resumed<A>) -> Result<Self, A::Error>;
    /// The variant a member implies when only that variant declares it.
    fn variant_for_key(_key: &str) -> Option<&'static str> {
        None
    }
}

/// Checks the `resultType` of a variant chosen by one of its members.
pub fn check_result_type<E: de::Error>(union: &str, got: &crate::ResultType, want: &str) -> Result<(), E> {
    if got.as_str() == want {
        Ok(())
    } else {
        Err(E::custom(format_args!("`{union}`: unexpected resultType `{got}` for the members of a `{want}` result")))
    }
}

/// Reads keys until the tag of `T` is found, buffering what comes before it, then lets `T` decode
/// the variant from the rest of the object.
pub fn visit_tagged<'de, T: TaggedUnion, A: MapAccess<'de>>(mut map: A) -> Result<T, A::Error> {
    let mut buffered = Vec::new();
    while let Some(key) = map.next_key::<Key>()? {
        if key.as_str() == T::TAG {
            let tag: Str = map.next_value()?;
            buffered.push((T::TAG.to_owned(), Value::String(tag.0.clone().into_owned())));
            return T::dispatch(&tag.0, Resumed::new(buffered, None, map));
        }
        if let Some(tag) = T::variant_for_key(key.as_str()) {
            return T::dispatch(tag, Resumed::new(buffered, Some(key.into_owned()), map));
        }
        let value: Value = map.next_value()?;
        buffered.push((key.into_owned(), value));
    }
    match T::DEFAULT_TAG {
        Some(tag) => T::dispatch(tag, Resumed::new(buffered, None, map)),
        None => Err(de::Error::custom(format_args!("`{}`: missing field `{}`", T::NAME, T::TAG))),
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

/// Picks the best-scoring variant; a tie between different variants is an error, not a guess.
pub fn pick_variant<E: de::Error>(
    union: &str,
    value: &Value,
    scores: &[(&'static str, Option<usize>)],
) -> Result<usize, E> {
    let mut best: Option<(usize, usize)> = None;
    let mut tie: Option<usize> = None;
    for (i, (_, score)) in scores.iter().enumerate() {
        if let Some(s) = score {
            match best {
                Some((_, b)) if *s < b => {}
                Some((_, b)) if *s == b => tie = Some(i),
                _ => {
                    best = Some((i, *s));
                    tie = None;
                }
            }
        }
    }
    match (best, tie) {
        (Some((i, _)), None) => Ok(i),
        (Some((i, _)), Some(j)) => Err(E::custom(format_args!(
            "`{union}`: ambiguous value, fits both `{}` and `{}`",
            scores[i].0, scores[j].0
        ))),
        (None, _) => Err(E::custom(format_args!(
            "`{union}`: {} fits none of {}",
            kind_name(value),
            scores.iter().map(|(n, _)| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        ))),
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
                    found = Some(map.next_value::<Str>()?.0.into_owned());
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

/// Object members read ahead of the discriminator, in input order.
pub type Entries = Vec<(String, Value)>;

/// Reads every remaining entry of `map`, reporting whether `key` is among them.
pub fn drain_checking<'de, A: MapAccess<'de>>(mut map: A, key: &str) -> Result<(Entries, bool), A::Error> {
    let mut entries = Vec::new();
    let mut found = false;
    while let Some(k) = map.next_key::<Key>()? {
        found |= k.as_str() == key;
        let value: Value = map.next_value()?;
        entries.push((k.into_owned(), value));
    }
    Ok((entries, found))
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
