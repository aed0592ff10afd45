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
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            Integer(i64),
            String(String),
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    Self::Integer(n) => write!(f, "{n}"),
                    Self::String(s) => f.write_str(s),
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

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    Self::Integer(n) => s.serialize_i64(*n),
                    Self::String(v) => s.serialize_str(v),
                }
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str(concat!($what, " (a string or an integer)"))
                    }
                    fn visit_i64<E: de::Error>(self, n: i64) -> Result<$name, E> {
                        Ok($name::Integer(n))
                    }
                    fn visit_u64<E: de::Error>(self, n: u64) -> Result<$name, E> {
                        i64::try_from(n)
                            .map($name::Integer)
                            .map_err(|_| E::custom(concat!($what, " is out of the i64 range")))
                    }
                    fn visit_f64<E: de::Error>(self, n: f64) -> Result<$name, E> {
                        Err(E::custom(format_args!(
                            concat!($what, " must be a string or an integer, found the number {}"),
                            n
                        )))
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$name, E> {
                        Ok($name::String(s.to_owned()))
                    }
                    fn visit_string<E: de::Error>(self, s: String) -> Result<$name, E> {
                        Ok($name::String(s))
                    }
                    fn visit_unit<E: de::Error>(self) -> Result<$name, E> {
                        Err(E::custom(concat!($what, " must be a string or an integer, found null")))
                    }
                }
                d.deserialize_any(V)
            }
        }

        impl private::MatchScore for $name {
            fn match_score(value: &Value) -> Option<usize> {
                (value.is_string() || value.as_number().is_some_and(|n| n.is_i64())).then_some(0)
            }
        }
    };
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
    /// The error code; see [`error_codes`].
    pub code: i64,
    /// A short description of the error, one concise sentence.
    pub message: String,
    /// Additional information defined by the sender.
    pub data: Option<Value>,
    /// Members this crate does not know, kept for re-encoding.
    pub extra: Map<String, Value>,
}

impl ErrorObject {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject { code, message: message.into(), data: None, extra: Map::new() }
    }

    pub fn with_data(mut self, data: impl Serialize) -> Self {
        self.data = Some(serde_json::to_value(data).expect("error data serializes to JSON"));
        self
    }

    pub fn parse_error(message: impl Into<String>) -> Self {
        Self::new(error_codes::PARSE_ERROR, message)
    }

    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(error_codes::INVALID_REQUEST, message)
    }

    /// `-32601`, naming the method.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(error_codes::METHOD_NOT_FOUND, format!("Method not found: {method}"))
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(error_codes::INVALID_PARAMS, message)
    }

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
                "data" => data = Some(map.next_value()?),
                _ => {
                    let value = map.next_value()?;
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
/// 0, so every JSON integer decodes and re-encodes exactly as received; [`TtlMs::duration`]
/// applies the rule. An absent `ttlMs` (servers older than 2026-07-28) is `None` in the result
/// and means 0 as well: `result.ttl_ms.unwrap_or_default().duration()`.
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
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct TtlMs(i128);

impl TtlMs {
    /// Stale at once.
    pub const ZERO: TtlMs = TtlMs(0);

    /// A `ttlMs` of `ms` milliseconds (what a server sends).
    pub const fn from_millis(ms: u64) -> Self {
        TtlMs(ms as i128)
    }

    /// The value exactly as received: any JSON integer from `i64::MIN` to `u64::MAX`.
    pub const fn get(self) -> i128 {
        self.0
    }

    /// Milliseconds of freshness, a negative value counting as 0.
    pub const fn millis(self) -> u64 {
        if self.0 < 0 { 0 } else { self.0 as u64 }
    }

    /// How long the result stays fresh after it was received, a negative value counting as 0.
    pub const fn duration(self) -> Duration {
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
        match u64::try_from(self.0) {
            Ok(n) => s.serialize_u64(n),
            // Only values decoded from a negative JSON integer are negative: they fit an i64.
            Err(_) => s.serialize_i64(self.0 as i64),
        }
    }
}

impl<'de> Deserialize<'de> for TtlMs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = TtlMs;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("`ttlMs` as an integer number of milliseconds")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<TtlMs, E> {
                Ok(TtlMs(n.into()))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<TtlMs, E> {
                Ok(TtlMs(n.into()))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<TtlMs, E> {
                Err(E::custom(format_args!("`ttlMs` must be an integer, found the number {n}")))
            }
        }
        d.deserialize_i64(V)
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
    fn ttl_ms_keeps_every_integer_and_clamps_negatives() {
        for text in ["0", "60000", "-5", "-9223372036854775808", "18446744073709551615"] {
            let ttl: TtlMs = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&ttl).unwrap(), text);
            assert_eq!(ttl.to_string(), text);
        }
        let ttl: TtlMs = serde_json::from_str("-5").unwrap();
        assert_eq!((ttl.get(), ttl.millis(), ttl.duration()), (-5, 0, Duration::ZERO));
        assert_eq!(TtlMs::from(60_000).duration(), Duration::from_secs(60));
        assert_eq!(TtlMs::default(), TtlMs::ZERO);
        let err = serde_json::from_str::<TtlMs>("1.5").unwrap_err().to_string();
        assert!(err.contains("`ttlMs` must be an integer, found the number 1.5"), "{err}");
        let err = serde_json::from_str::<TtlMs>("\"60\"").unwrap_err().to_string();
        assert!(err.contains("`ttlMs` as an integer"), "{err}");
        let from_value: TtlMs = serde_json::from_value(serde_json::json!(-1)).unwrap();
        assert_eq!(from_value.get(), -1);
    }

    #[test]
    fn error_object_keeps_unknown_members() {
        let text = r#"{"code":-32602,"message":"bad","data":{"uri":"x"},"vendor":1}"#;
        let error: ErrorObject = serde_json::from_str(text).unwrap();
        assert_eq!(error.extra["vendor"], 1);
        assert_eq!(serde_json::to_value(&error).unwrap(), serde_json::from_str::<Value>(text).unwrap());
    }
}
