//! JSON Schema documents carried by tools (`inputSchema`, `outputSchema`), kept as the exact JSON
//! text received: no keyword is lost or reordered, and decoding a long tool list does not build a
//! `serde_json::Value` for every schema.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::private;

/// Why a value is not an acceptable schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError(String);

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SchemaError {}

macro_rules! raw_schema {
    ($(#[$doc:meta])* $name:ident, require_object_type = $require:expr) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name(Box<RawValue>);

        impl $name {
            /// Checks and wraps JSON text.
            pub fn from_json(text: &str) -> Result<Self, SchemaError> {
                let raw = RawValue::from_string(text.to_owned()).map_err(|e| SchemaError(e.to_string()))?;
                Self::check(raw)
            }

            /// Checks and wraps a JSON value (for example a `schemars` schema).
            pub fn from_value(value: Value) -> Result<Self, SchemaError> {
                let raw = serde_json::value::to_raw_value(&value).map_err(|e| SchemaError(e.to_string()))?;
                Self::check(raw)
            }

            fn check(raw: Box<RawValue>) -> Result<Self, SchemaError> {
                let text = raw.get();
                if !text.trim_start().starts_with('{') {
                    return Err(SchemaError(format!("{} must be a JSON object", stringify!($name))));
                }
                if $require {
                    let ty = private::probe_tag(text, "type").map_err(|e| SchemaError(e.to_string()))?;
                    if ty.as_deref() != Some("object") {
                        return Err(SchemaError(format!(
                            "a tool input schema must have `\"type\": \"object\"` at its root, found {}",
                            ty.map_or_else(|| "no `type`".to_owned(), |t| format!("`\"{t}\"`"))
                        )));
                    }
                }
                Ok($name(raw))
            }

            /// The JSON text exactly as received or built.
            pub fn as_json(&self) -> &str {
                self.0.get()
            }

            /// Parses the schema into a `serde_json::Value`.
            pub fn to_value(&self) -> Value {
                serde_json::from_str(self.0.get()).expect("a checked schema is valid JSON")
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_tuple(stringify!($name)).field(&self.0.get()).finish()
            }
        }

        /// Compares the JSON values, not the text.
        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.0.get() == other.0.get() || self.to_value() == other.to_value()
            }
        }

        impl Eq for $name {}

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.0.serialize(s)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let raw = Box::<RawValue>::deserialize(d)?;
                Self::check(raw).map_err(de::Error::custom)
            }
        }

        impl TryFrom<Value> for $name {
            type Error = SchemaError;
            fn try_from(value: Value) -> Result<Self, SchemaError> {
                Self::from_value(value)
            }
        }

        impl private::MatchScore for $name {
            fn match_score(value: &Value) -> Option<usize> {
                value.is_object().then_some(0)
            }
        }
    };
}

raw_schema!(
    /// A tool's `inputSchema`: a JSON Schema object whose root has `"type": "object"`.
    ObjectSchema,
    require_object_type = true
);
raw_schema!(
    /// A JSON Schema object with no constraint on its root (2026-07-28 `outputSchema`).
    JsonSchema,
    require_object_type = false
);

impl Default for ObjectSchema {
    /// `{"type":"object"}`: a tool without arguments.
    fn default() -> Self {
        ObjectSchema(RawValue::from_string(r#"{"type":"object"}"#.to_owned()).expect("valid JSON"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_schema_needs_object_type_and_keeps_text() {
        let text = r#"{"type":"object","properties":{"a":{"type":"integer"}},"$defs":{}}"#;
        let schema: ObjectSchema = serde_json::from_str(text).unwrap();
        assert_eq!(schema.as_json(), text);
        assert_eq!(serde_json::to_string(&schema).unwrap(), text);
        let err = serde_json::from_str::<ObjectSchema>(r#"{"type":"string"}"#).unwrap_err();
        assert!(err.to_string().contains("`\"type\": \"object\"`"), "{err}");
        assert!(serde_json::from_str::<ObjectSchema>("[]").is_err());
        let from_value: ObjectSchema = serde_json::from_value(serde_json::json!({"type": "object"})).unwrap();
        assert_eq!(from_value, ObjectSchema::default());
    }
}
