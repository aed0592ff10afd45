//! Writing a modern typed result on the legacy wire without a detour through `Value`: the
//! result's own `Serialize` runs against a serializer that leaves out the members legacy
//! revisions lack (`resultType`, `ttlMs`, `cacheScope`) at the top level.

use serde::ser::{self, Impossible, Serialize, SerializeMap, SerializeStruct, Serializer};

/// The top-level members that only the modern wire has.
const MODERN_ONLY: [&str; 3] = ["resultType", "ttlMs", "cacheScope"];

/// `T` written without the top-level members the legacy wire lacks.
pub(crate) struct Legacy<'a, T>(pub(crate) &'a T);

impl<T: Serialize> Serialize for Legacy<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(Top(serializer))
    }
}

/// Forwards everything to `S`, filtering the members of the top-level object.
struct Top<S>(S);

struct Filtered<M> {
    inner: M,
    skip_value: bool,
}

macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {$(
        fn $method(self, $($arg: $ty),*) -> Result<$ret, S::Error> {
            self.0.$method($($arg),*)
        }
    )*};
}

impl<S: Serializer> Serializer for Top<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = S::SerializeSeq;
    type SerializeTuple = S::SerializeTuple;
    type SerializeTupleStruct = S::SerializeTupleStruct;
    type SerializeTupleVariant = S::SerializeTupleVariant;
    type SerializeMap = Filtered<S::SerializeMap>;
    type SerializeStruct = Filtered<S::SerializeStruct>;
    type SerializeStructVariant = S::SerializeStructVariant;

    forward! {
        serialize_bool(v: bool) -> S::Ok;
        serialize_i8(v: i8) -> S::Ok;
        serialize_i16(v: i16) -> S::Ok;
        serialize_i32(v: i32) -> S::Ok;
        serialize_i64(v: i64) -> S::Ok;
        serialize_u8(v: u8) -> S::Ok;
        serialize_u16(v: u16) -> S::Ok;
        serialize_u32(v: u32) -> S::Ok;
        serialize_u64(v: u64) -> S::Ok;
        serialize_f32(v: f32) -> S::Ok;
        serialize_f64(v: f64) -> S::Ok;
        serialize_char(v: char) -> S::Ok;
        serialize_str(v: &str) -> S::Ok;
        serialize_bytes(v: &[u8]) -> S::Ok;
        serialize_none() -> S::Ok;
        serialize_unit() -> S::Ok;
        serialize_unit_struct(name: &'static str) -> S::Ok;
        serialize_unit_variant(name: &'static str, index: u32, variant: &'static str) -> S::Ok;
        serialize_seq(len: Option<usize>) -> S::SerializeSeq;
        serialize_tuple(len: usize) -> S::SerializeTuple;
        serialize_tuple_struct(name: &'static str, len: usize) -> S::SerializeTupleStruct;
        serialize_tuple_variant(name: &'static str, index: u32, variant: &'static str, len: usize) -> S::SerializeTupleVariant;
        serialize_struct_variant(name: &'static str, index: u32, variant: &'static str, len: usize) -> S::SerializeStructVariant;
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<S::Ok, S::Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_newtype_variant(name, index, variant, value)
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        // The length is a hint that some members may not be written: leave it out.
        let _ = len;
        Ok(Filtered { inner: self.0.serialize_map(None)?, skip_value: false })
    }

    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Self::SerializeStruct, S::Error> {
        Ok(Filtered { inner: self.0.serialize_struct(name, len)?, skip_value: false })
    }
}

impl<M: SerializeMap> SerializeMap for Filtered<M> {
    type Ok = M::Ok;
    type Error = M::Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), M::Error> {
        self.skip_value = key.serialize(KeyIs).is_ok_and(|name| MODERN_ONLY.contains(&name));
        if self.skip_value { Ok(()) } else { self.inner.serialize_key(key) }
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), M::Error> {
        if std::mem::take(&mut self.skip_value) { Ok(()) } else { self.inner.serialize_value(value) }
    }

    fn end(self) -> Result<M::Ok, M::Error> {
        self.inner.end()
    }
}

impl<M: SerializeStruct> SerializeStruct for Filtered<M> {
    type Ok = M::Ok;
    type Error = M::Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), M::Error> {
        if MODERN_ONLY.contains(&key) { self.inner.skip_field(key) } else { self.inner.serialize_field(key, value) }
    }

    fn end(self) -> Result<M::Ok, M::Error> {
        self.inner.end()
    }
}

/// Reads a map key that is a string; any other key is an error (and is then kept).
struct KeyIs;

#[derive(Debug)]
struct NotAString;

impl std::fmt::Display for NotAString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not a string key")
    }
}

impl std::error::Error for NotAString {}

impl ser::Error for NotAString {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        NotAString
    }
}

macro_rules! not_a_string {
    ($($method:ident($($ty:ty),*);)*) => {$(
        fn $method(self, $(_: $ty),*) -> Result<&'static str, NotAString> {
            Err(NotAString)
        }
    )*};
}

impl Serializer for KeyIs {
    type Ok = &'static str;
    type Error = NotAString;
    type SerializeSeq = Impossible<&'static str, NotAString>;
    type SerializeTuple = Impossible<&'static str, NotAString>;
    type SerializeTupleStruct = Impossible<&'static str, NotAString>;
    type SerializeTupleVariant = Impossible<&'static str, NotAString>;
    type SerializeMap = Impossible<&'static str, NotAString>;
    type SerializeStruct = Impossible<&'static str, NotAString>;
    type SerializeStructVariant = Impossible<&'static str, NotAString>;

    fn serialize_str(self, v: &str) -> Result<&'static str, NotAString> {
        MODERN_ONLY.iter().find(|name| **name == v).copied().ok_or(NotAString)
    }

    not_a_string! {
        serialize_bool(bool);
        serialize_i8(i8);
        serialize_i16(i16);
        serialize_i32(i32);
        serialize_i64(i64);
        serialize_u8(u8);
        serialize_u16(u16);
        serialize_u32(u32);
        serialize_u64(u64);
        serialize_f32(f32);
        serialize_f64(f64);
        serialize_char(char);
        serialize_bytes(&[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<&'static str, NotAString> {
        Err(NotAString)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<&'static str, NotAString> {
        Err(NotAString)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<&'static str, NotAString> {
        Err(NotAString)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotAString> {
        Err(NotAString)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotAString> {
        Err(NotAString)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, NotAString> {
        Err(NotAString)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotAString> {
        Err(NotAString)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotAString> {
        Err(NotAString)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, NotAString> {
        Err(NotAString)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotAString> {
        Err(NotAString)
    }
}

#[cfg(test)]
mod tests {
    use mcp_types::{CacheScope, CallToolResult, ContentBlock, ListToolsResult, ResultMetaObject, TextContent, Tool};
    use serde_json::{Value, json};

    use super::Legacy;

    /// What the legacy wire had when results went through `Value`: the same, less the members.
    fn expected<T: serde::Serialize>(result: &T) -> Value {
        let mut value = serde_json::to_value(result).unwrap();
        for member in super::MODERN_ONLY {
            value.as_object_mut().unwrap().remove(member);
        }
        value
    }

    #[test]
    fn legacy_results_lose_the_modern_members_and_nothing_else() {
        let mut list = ListToolsResult::new(
            CacheScope::Public,
            vec![Tool::new(serde_json::from_value(json!({"type": "object"})).unwrap(), "t")],
            5,
        );
        list.next_cursor = Some("next".to_owned());
        let mut call = CallToolResult::new(vec![ContentBlock::Text(TextContent::new("x"))]);
        call.is_error = Some(true);
        call.structured_content = Some(json!({"resultType": "kept below the top level", "ttlMs": 1}));
        let mut meta = ResultMetaObject::default();
        meta.extra.insert("cacheScope".to_owned(), json!("kept inside _meta"));
        call.meta = Some(meta);
        for (typed, want) in [
            (serde_json::to_string(&Legacy(&list)).unwrap(), expected(&list)),
            (serde_json::to_string(&Legacy(&call)).unwrap(), expected(&call)),
        ] {
            let got: Value = serde_json::from_str(&typed).unwrap();
            assert_eq!(got, want, "{typed}");
            assert!(got.get("resultType").is_none() && got.get("ttlMs").is_none() && got.get("cacheScope").is_none());
        }
    }
}
