//! Types every revision shares. The generated modules use these in place of their schema
//! definitions (`RequestId`, `ProgressToken`, `Error`, `ResultType`).

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error_codes;
use crate::private::{self, Key};

macro_rules! string_or_integer {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            #[doc = concat!("An integer ", $what, " that fits an `i64`.")]
            Integer(i64),
            #[doc = concat!("A string ", $what, ".")]
            String(String),
            /// An integer that [`Self::Integer`] cannot hold as written: beyond the `i64` range
            /// (`18446744073709551616`) or spelled with a fraction or an exponent (`1.0`, `1e3`,
            /// valid JSON Schema integers). Kept exactly, so that it is answered with the same
            /// text. Decoding yields it only for such integers; `-0` and `-0.0` decode as
            /// `Integer(0)`.
            Number(crate::number::Integer),
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    Self::Integer(n) => write!(f, "{n}"),
                    Self::String(s) => f.write_str(s),
                    Self::Number(n) => write!(f, "{n}"),
                }
            }
        }

        impl From<i64> for $name {
            fn from(n: i64) -> Self {
                Self::Integer(n)
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self::String(s)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self::String(s.to_owned())
            }
        }

        impl From<crate::number::Integer> for $name {
            fn from(n: crate::number::Integer) -> Self {
                match n.as_literal() {
                    None => match n.as_i64() {
                        Some(n) => Self::Integer(n),
                        None => Self::Number(n),
                    },
                    // `-0` and `-0.0` are 0: a `Value` holds both as -0.0, so only one answer
                    // keeps text and `Value` decodes alike.
                    Some(_) if n.as_i64() == Some(0) => Self::Integer(0),
                    Some(_) => Self::Number(n),
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    Self::Integer(n) => s.serialize_i64(*n),
                    Self::String(v) => s.serialize_str(v),
                    Self::Number(n) => n.serialize(s),
                }
            }
        }

        impl<'de> private::FromRaw<'de> for $name {
            const EXPECTING: &'static str = concat!($what, " (a string or an integer)");

            #[inline]
            fn from_raw<E: de::Error>(raw: std::borrow::Cow<'de, str>) -> Result<Self, E> {
                match raw.as_bytes().first() {
                    Some(b'"') => {
                        let text = &raw[1..raw.len() - 1];
                        if text.contains('\\') {
                            serde_json::from_str::<String>(&raw).map($name::String).map_err(E::custom)
                        } else {
                            Ok($name::String(text.to_owned()))
                        }
                    }
                    Some(b'n') => Err(E::custom(concat!($what, " must be a string or an integer, found null"))),
                    Some(b'-' | b'0'..=b'9') => match raw.parse::<i64>() {
                        Ok(n) => Ok($name::Integer(n)),
                        Err(_) => match crate::number::Integer::from_literal(&raw) {
                            Ok(n) => Ok($name::from(n)),
                            Err(_) => Err(E::custom(format_args!(
                                concat!($what, " must be a string or an integer, found the number {}"),
                                raw
                            ))),
                        },
                    },
                    _ => Err(E::custom(format_args!(
                        concat!($what, " must be a string or an integer, found {}"),
                        raw
                    ))),
                }
            }

            fn fallback<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(IdVisitor::<$name>(concat!($what, " (a string or an integer)"), std::marker::PhantomData))
            }
        }

        impl IdLike for $name {
            const WHAT: &'static str = $what;
            fn integer(n: i64) -> Self {
                Self::Integer(n)
            }
            fn string(s: String) -> Self {
                Self::String(s)
            }
            fn number(n: crate::number::Integer) -> Self {
                Self::from(n)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            #[inline]
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                private::deserialize_raw(d)
            }
        }

        impl private::MatchScore for $name {
            fn match_score(value: &Value) -> Option<usize> {
                (value.is_string() || <crate::number::Integer as private::MatchScore>::match_score(value).is_some()).then_some(0)
            }
        }
    };
}

/// What the fallback decoder of [`RequestId`] and [`ProgressToken`] builds.
trait IdLike {
    const WHAT: &'static str;
    fn integer(n: i64) -> Self;
    fn string(s: String) -> Self;
    fn number(n: crate::number::Integer) -> Self;
}

/// Decodes an id from a deserializer without raw text (a `Value`, serde's `Content`): the numbers
/// it gives are already decoded, so an integral float is kept as the shortest text of that float.
struct IdVisitor<T>(&'static str, std::marker::PhantomData<T>);

impl<T: IdLike> Visitor<'_> for IdVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<T, E> {
        Ok(T::integer(n))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<T, E> {
        Ok(T::number(n.into()))
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<T, E> {
        let integral = serde_json::Number::from_f64(n)
            .filter(|_| n.fract() == 0.0)
            .and_then(|n| crate::number::Integer::from_literal(&n.to_string()).ok());
        integral.map(T::number).ok_or_else(|| {
            E::custom(format_args!("{} must be a string or an integer, found the number {}", T::WHAT, n))
        })
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<T, E> {
        Ok(T::string(s.to_owned()))
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<T, E> {
        Ok(T::string(s))
    }
    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Err(E::custom(format_args!("{} must be a string or an integer, found null", T::WHAT)))
    }
}

string_or_integer!(
    /// A JSON-RPC request id: a string or an integer, never `null` or a fraction.
    RequestId,
    "request id"
);
string_or_integer!(
    /// A progress token: a string or an integer, chosen by the requester and unique among its
    /// active requests.
    ProgressToken,
    "progress token"
);

/// The `error` member of a JSON-RPC error response (the schema's `Error`).
///
/// The MCP-specific errors with typed `data` (`UnsupportedProtocolVersionError` and friends) are
/// generated per revision; [`ErrorObject::data_as`] decodes `data` into one of their data types.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ErrorObject {
    /// The error code; see [`error_codes`]. Compares with an `i64`: `error.code == error_codes::INVALID_PARAMS`.
    pub code: crate::number::Integer,
    /// A short description of the error, one concise sentence.
    pub message: String,
    /// Additional information defined by the sender.
    pub data: Option<Value>,
    /// Members this crate does not know, kept for re-encoding.
    pub extra: Map<String, Value>,
}

impl ErrorObject {
    /// An error object with `code` and `message`, no `data`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject { code: code.into(), message: message.into(), data: None, extra: Map::new() }
    }

    /// Sets `data` to `data` encoded as JSON (panics if it does not encode, as a map with
    ///  non-string keys would not).
    pub fn with_data(mut self, data: impl Serialize) -> Self {
        self.data = Some(serde_json::to_value(data).expect("error data serializes to JSON"));
        self
    }

    /// `-32700`: the message is not valid JSON.
    pub fn parse_error(message: impl Into<String>) -> Self {
        Self::new(error_codes::PARSE_ERROR, message)
    }

    /// `-32600`: the message is not a valid request object.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(error_codes::INVALID_REQUEST, message)
    }

    /// `-32601`, naming the method.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(error_codes::METHOD_NOT_FOUND, format!("Method not found: {method}"))
    }

    /// `-32602`: the params do not fit the method.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(error_codes::INVALID_PARAMS, message)
    }

    /// `-32603`: the receiver failed while handling the request.
    pub fn internal_error(message: impl Into<String>) -> Self {
        Self::new(error_codes::INTERNAL_ERROR, message)
    }

    /// Decodes `data` as `T` (for example the typed data of an MCP error of a given revision).
    pub fn data_as<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(self.data.as_ref().unwrap_or(&Value::Null))
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}

impl Serialize for ErrorObject {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2 + usize::from(self.data.is_some()) + self.extra.len()))?;
        private::entry(&mut map, "code", &self.code)?;
        private::entry(&mut map, "message", &self.message)?;
        if let Some(data) = &self.data {
            private::entry(&mut map, "data", data)?;
        }
        if !self.extra.is_empty() {
            private::extra(&mut map, &self.extra)?;
        }
        map.end()
    }
}

impl private::VisitObject for ErrorObject {
    fn visit_object<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let (mut code, mut message, mut data, mut extra) = (None, None, None, Map::new());
        while let Some(key) = map.next_key::<Key>()? {
            match key.as_str() {
                "code" => code = Some(map.next_value().map_err(|e| private::in_field("code", e))?),
                "message" => message = Some(map.next_value().map_err(|e| private::in_field("message", e))?),
                "data" => {
                    data =
                        Some(map.next_value_seed(private::FreeForm::new()).map_err(|e| private::in_field("data", e))?)
                }
                _ => {
                    let value =
                        map.next_value_seed(private::FreeForm::new()).map_err(|e| private::in_field(&key.0, e))?;
                    extra.insert(key.into_owned(), value);
                }
            }
        }
        Ok(ErrorObject {
            code: code.ok_or_else(|| private::missing_field("Error", "code"))?,
            message: message.ok_or_else(|| private::missing_field("Error", "message"))?,
            data,
            extra,
        })
    }
}

impl<'de> Deserialize<'de> for ErrorObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        private::deserialize_object(d, "Error")
    }
}

impl private::MatchScore for ErrorObject {
    fn match_score(value: &Value) -> Option<usize> {
        private::object_score(value, &["code", "message"], &[], &["code", "message", "data"])
    }
}

/// `resultType` of a 2026-07-28 result: how the client must read it. Absent means
/// [`ResultType::Complete`] (results of older servers carry none).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ResultType {
    /// `"complete"`: the final result of the request.
    #[default]
    Complete,
    /// `"input_required"`: an `InputRequiredResult`; retry with `inputResponses`.
    InputRequired,
    /// A value defined by an extension.
    Other(String),
}

impl ResultType {
    /// The wire string (`"complete"`, `"input_required"` or the extension's value).
    pub fn as_str(&self) -> &str {
        match self {
            Self::Complete => "complete",
            Self::InputRequired => "input_required",
            Self::Other(s) => s,
        }
    }
}

impl From<&str> for ResultType {
    fn from(s: &str) -> Self {
        match s {
            "complete" => Self::Complete,
            "input_required" => Self::InputRequired,
            other => Self::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for ResultType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ResultType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = private::Str::deserialize(d)?;
        Ok(ResultType::from(&*s.0))
    }
}

impl private::MatchScore for ResultType {
    fn match_score(value: &Value) -> Option<usize> {
        value.is_string().then_some(0)
    }
}

/// `ttlMs` of a cacheable 2026-07-28 result: how long, in milliseconds, the client may consider
/// the result fresh (like HTTP `Cache-Control: max-age`).
///
/// The schema says `minimum: 0`, but the caching rules tell clients to treat a negative `ttlMs` as
/// 0, so every JSON integer decodes and re-encodes exactly as received (an [`crate::Integer`]);
/// [`TtlMs::duration`] applies the rule. An absent `ttlMs` (servers older than 2026-07-28) is
/// `None` in the result and means 0 as well: `result.ttl_ms.unwrap_or_default().duration()`.
///
/// ```
/// use mcp_types::TtlMs;
/// use std::time::Duration;
///
/// assert_eq!(TtlMs::from_millis(1500).duration(), Duration::from_millis(1500));
/// let negative: TtlMs = serde_json::from_str("-5").unwrap();
/// assert_eq!(negative.duration(), Duration::ZERO);
/// assert_eq!(serde_json::to_string(&negative).unwrap(), "-5");
/// assert_eq!(None::<TtlMs>.unwrap_or_default().duration(), Duration::ZERO);
/// let forever: TtlMs = serde_json::from_str("1e30").unwrap();
/// assert_eq!(forever.millis(), u64::MAX);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct TtlMs(crate::number::Integer);

impl TtlMs {
    /// Stale at once.
    pub const ZERO: TtlMs = TtlMs(crate::number::Integer::ZERO);

    /// A `ttlMs` of `ms` milliseconds (what a server sends).
    pub fn from_millis(ms: u64) -> Self {
        TtlMs(ms.into())
    }

    /// The value exactly as received.
    pub fn get(&self) -> &crate::number::Integer {
        &self.0
    }

    /// Milliseconds of freshness: a negative value counts as 0, one beyond `u64` as `u64::MAX`.
    pub fn millis(&self) -> u64 {
        match self.0.as_u64() {
            Some(ms) => ms,
            None if self.0.is_negative() => 0,
            None => u64::MAX,
        }
    }

    /// How long the result stays fresh after it was received, a negative value counting as 0.
    pub fn duration(&self) -> Duration {
        Duration::from_millis(self.millis())
    }
}

impl From<u64> for TtlMs {
    fn from(ms: u64) -> Self {
        TtlMs::from_millis(ms)
    }
}

impl fmt::Display for TtlMs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Serialize for TtlMs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for TtlMs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::number::Integer::deserialize(d)
            .map(TtlMs)
            .map_err(|e| de::Error::custom(format_args!("`ttlMs` must be an integer number of milliseconds: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_id_rejects_floats_and_null_with_a_clear_message() {
        let err = serde_json::from_str::<RequestId>("1.5").unwrap_err().to_string();
        assert!(err.contains("must be a string or an integer, found the number 1.5"), "{err}");
        let err = serde_json::from_str::<RequestId>("null").unwrap_err().to_string();
        assert!(err.contains("found null"), "{err}");
        assert_eq!(serde_json::from_str::<RequestId>("7").unwrap(), RequestId::Integer(7));
        assert_eq!(serde_json::from_str::<RequestId>("\"a\"").unwrap(), RequestId::from("a"));
    }

    #[test]
    fn ids_equal_to_zero_are_the_integer_zero_from_text_and_from_a_value() {
        // serde_json's `Value` cannot tell `-0` from `-0.0`; both are 0, as JSON compares numbers.
        for text in ["-0", "-0.0", "0e5"] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::from_value::<RequestId>(value).unwrap(), RequestId::Integer(0), "{text}");
            assert_eq!(serde_json::from_str::<RequestId>(text).unwrap(), RequestId::Integer(0), "{text}");
        }
        // Other integral spellings are answered as written.
        for text in ["1.0", "1e3", "18446744073709551616"] {
            let id: RequestId = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&id).unwrap(), text);
        }
    }

    #[test]
    fn ttl_ms_keeps_every_integer_and_clamps_negatives() {
        for text in ["0", "60000", "-5", "-9223372036854775808", "18446744073709551615"] {
            let ttl: TtlMs = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&ttl).unwrap(), text);
            assert_eq!(ttl.to_string(), text);
        }
        let ttl: TtlMs = serde_json::from_str("-5").unwrap();
        assert_eq!((ttl.get().as_i64(), ttl.millis(), ttl.duration()), (Some(-5), 0, Duration::ZERO));
        for text in ["18446744073709551616", "1e30", "60000.0"] {
            let ttl: TtlMs = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&ttl).unwrap(), text);
        }
        assert_eq!(TtlMs::from(60_000).duration(), Duration::from_secs(60));
        assert_eq!(TtlMs::default(), TtlMs::ZERO);
        let err = serde_json::from_str::<TtlMs>("1.5").unwrap_err().to_string();
        assert!(
            err.contains(
                "`ttlMs` must be an integer number of milliseconds: expected an integer, found the number 1.5"
            ),
            "{err}"
        );
        let err = serde_json::from_str::<TtlMs>("\"60\"").unwrap_err().to_string();
        assert!(err.contains("`ttlMs` must be an integer"), "{err}");
        let from_value: TtlMs = serde_json::from_value(serde_json::json!(-1)).unwrap();
        assert_eq!(from_value.get().as_i64(), Some(-1));
    }

    #[test]
    fn error_object_keeps_unknown_members() {
        let text = r#"{"code":-32602,"message":"bad","data":{"uri":"x"},"vendor":1}"#;
        let error: ErrorObject = serde_json::from_str(text).unwrap();
        assert_eq!(error.extra["vendor"], 1);
        assert_eq!(serde_json::to_value(&error).unwrap(), serde_json::from_str::<Value>(text).unwrap());
    }
}
