//! Checking a tool's arguments against its `inputSchema` before the handler runs.
//!
//! With the `validation` feature the whole of JSON Schema 2020-12 is checked by the
//! `jsonschema` crate, and a call whose arguments fail gets a tool error naming each problem
//! and where it is (`/text: 5 is not of type "string"`). Without it (the default, which keeps
//! `jsonschema`'s 70-odd crates out of the build) a tool registered with `ToolRoute::new`
//! still gets exactly its Rust type or a tool error saying why not, from serde; a
//! `ToolRoute::raw` handler receives any JSON object.

/// A compiled `inputSchema`; none for one that every object meets (`{"type": "object"}` and
/// annotations), whose check could find nothing.
pub(crate) struct ArgumentValidator {
    #[cfg(feature = "validation")]
    validator: Option<jsonschema::Validator>,
}

/// Whether `schema` is met by every JSON object: `"type": "object"` and nothing else that
/// constrains a value.
#[cfg(feature = "validation")]
fn any_object(schema: &serde_json::Value) -> bool {
    const ANNOTATIONS: [&str; 6] = ["$schema", "title", "description", "$comment", "examples", "default"];
    schema.as_object().is_some_and(|members| {
        members.get("type").and_then(serde_json::Value::as_str) == Some("object")
            && members.keys().all(|key| key == "type" || ANNOTATIONS.contains(&key.as_str()))
    })
}

impl ArgumentValidator {
    /// Compiles `schema`; an error says why it is not a valid JSON Schema.
    #[cfg_attr(not(feature = "validation"), allow(clippy::unnecessary_wraps))]
    pub(crate) fn new(schema: &serde_json::Value) -> Result<Self, String> {
        #[cfg(feature = "validation")]
        {
            if any_object(schema) {
                return Ok(ArgumentValidator { validator: None });
            }
            let validator = jsonschema::validator_for(schema).map_err(|e| e.to_string())?;
            Ok(ArgumentValidator { validator: Some(validator) })
        }
        #[cfg(not(feature = "validation"))]
        {
            let _ = schema;
            Ok(ArgumentValidator {})
        }
    }

    /// Whether a call's arguments are checked (with the `validation` feature): then they are read
    /// into a `Value` before the handler's own decode.
    pub(crate) fn checks(&self) -> bool {
        #[cfg(feature = "validation")]
        {
            self.validator.is_some()
        }
        #[cfg(not(feature = "validation"))]
        {
            false
        }
    }

    /// Up to five problems with `arguments`, each with where it is.
    pub(crate) fn problems(&self, arguments: &serde_json::Value) -> Vec<String> {
        #[cfg(feature = "validation")]
        {
            let Some(validator) = &self.validator else { return Vec::new() };
            validator.iter_errors(arguments).map(|e| at_pointer(&e.instance_path().to_string(), &e)).take(5).collect()
        }
        #[cfg(not(feature = "validation"))]
        {
            let _ = arguments;
            Vec::new()
        }
    }
}

/// `problem`, prefixed with where it is unless it is about the arguments as a whole.
#[cfg(feature = "validation")]
fn at_pointer(pointer: &str, problem: &impl std::fmt::Display) -> String {
    if pointer.is_empty() { problem.to_string() } else { format!("{pointer}: {problem}") }
}
