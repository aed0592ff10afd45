//! Typed elicitation: the spec's restricted form schema derived from a Rust type, and the
//! answer decoded back into it.

use mcp_types::{ElicitRequestFormParams, ElicitRequestFormParamsRequestedSchema, ElicitRequestParams};
use serde_json::{Map, Value};

/// How the user answered a typed elicitation ([`Context::elicit`](crate::Context::elicit)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicited<T> {
    /// The user submitted the form; its values.
    Accept(T),
    /// The user explicitly declined.
    Decline,
    /// The user dismissed the request without choosing.
    Cancel,
}

impl<T> Elicited<T> {
    /// The values, if the user accepted.
    pub fn accepted(self) -> Option<T> {
        match self {
            Elicited::Accept(value) => Some(value),
            Elicited::Decline | Elicited::Cancel => None,
        }
    }
}

const FORMS_HOLD: &str = "elicitation forms hold flat strings, numbers, integers, booleans and enums of strings";

/// The form-mode request for `T`: its properties as the spec's primitive schemas.
pub(crate) fn form_params<T: schemars::JsonSchema>(message: &str) -> Result<ElicitRequestParams, String> {
    let name = std::any::type_name::<T>();
    let schema = mcp_types::JsonSchema::for_type::<T>().to_value();
    let requested = restricted_schema(&schema).map_err(|why| format!("`{name}` cannot be elicited: {why}"))?;
    let requested: ElicitRequestFormParamsRequestedSchema =
        serde_json::from_value(requested).map_err(|e| format!("`{name}` cannot be elicited: {e}; {FORMS_HOLD}"))?;
    Ok(ElicitRequestParams::Form(ElicitRequestFormParams::new(message, requested)))
}

/// `{"type":"object","properties":{..},"required":[..]}` from a schemars schema of a struct.
fn restricted_schema(schema: &Value) -> Result<Value, String> {
    let defs = schema.get("$defs").and_then(Value::as_object);
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(format!("its schema is not an object; {FORMS_HOLD}"));
    }
    let mut properties = Map::new();
    for (name, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
        let property = primitive(property, defs).map_err(|why| format!("field `{name}` {why}; {FORMS_HOLD}"))?;
        properties.insert(name.clone(), property);
    }
    let mut out = Map::new();
    out.insert("type".into(), "object".into());
    out.insert("properties".into(), Value::Object(properties));
    if let Some(required) = schema.get("required").filter(|r| r.as_array().is_some_and(|r| !r.is_empty())) {
        out.insert("required".into(), required.clone());
    }
    Ok(Value::Object(out))
}

/// A property of a schemars schema with its `$ref` resolved, `Option`'s `null` taken out of
/// `type`, `enum` and `anyOf`, and documented enum variants (`oneOf` of consts) turned into
/// titled options of a string. Shared with prompt arguments, which must be strings.
pub(crate) fn flattened(property: &Value, defs: Option<&Map<String, Value>>) -> Result<Map<String, Value>, String> {
    let Some(object) = property.as_object() else { return Err("has a boolean schema".into()) };
    let mut merged = Map::new();
    // `Option<Enum>` is `anyOf: [{$ref}, {type: null}]`; a documented enum field is `$ref` + description.
    for (key, value) in object {
        match key.as_str() {
            "$ref" => merged.extend(resolve(value, defs)?),
            "anyOf" | "oneOf" if is_nullable_wrapper(value) => {
                let inner = value.as_array().into_iter().flatten().find(|v| v.get("type") != Some(&"null".into()));
                merged.extend(flattened(inner.expect("checked by is_nullable_wrapper"), defs)?);
            }
            _ => {
                merged.insert(key.clone(), value.clone());
            }
        }
    }
    if let Some(Value::Array(types)) = merged.get("type") {
        let non_null: Vec<&Value> = types.iter().filter(|t| t.as_str() != Some("null")).collect();
        let [only] = non_null[..] else { return Err(format!("has several types {types:?}")) };
        merged.insert("type".into(), only.clone());
    }
    if let Some(Value::Array(values)) = merged.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    // Variants with doc comments come out as `oneOf` of consts: titled options.
    if let Some(Value::Array(options)) = merged.remove("oneOf") {
        let titled: Option<Vec<Value>> = options
            .iter()
            .map(|option| {
                let constant = option.get("const").and_then(Value::as_str)?;
                let title = option.get("title").or(option.get("description")).and_then(Value::as_str);
                Some(serde_json::json!({ "const": constant, "title": title.unwrap_or(constant) }))
            })
            .collect();
        let Some(titled) = titled else { return Err("is a union that is not an enum of strings".into()) };
        merged.insert("oneOf".into(), Value::Array(titled));
        merged.insert("type".into(), "string".into());
    }
    Ok(merged)
}

/// One property as a primitive schema: [`flattened`], then types and keywords outside the
/// spec's primitive schemas refused by name.
fn primitive(property: &Value, defs: Option<&Map<String, Value>>) -> Result<Value, String> {
    let mut merged = flattened(property, defs)?;
    match merged.get("type").and_then(Value::as_str) {
        Some("string" | "number" | "integer" | "boolean") => {}
        Some("array") => {
            // A multi-select: an array of an enum of strings.
            let items = merged.get("items").ok_or("is an array without `items`")?;
            let items = primitive(items, defs).map_err(|why| format!("has items that {why}"))?;
            if items.get("enum").is_none() && items.get("oneOf").is_none() {
                return Err("is an array of something other than an enum of strings".into());
            }
            let items = match items.get("oneOf") {
                Some(options) => serde_json::json!({ "anyOf": options }),
                None => serde_json::json!({ "type": "string", "enum": items["enum"] }),
            };
            merged.insert("items".into(), items);
        }
        Some(other) => return Err(format!("is of type `{other}`")),
        None => return Err("has no single type".into()),
    }
    for key in merged.keys() {
        if !ALLOWED.contains(&key.as_str()) {
            return Err(format!("uses `{key}`"));
        }
    }
    Ok(Value::Object(merged))
}

/// The keywords of the spec's primitive schemas.
const ALLOWED: &[&str] = &[
    "type",
    "title",
    "description",
    "default",
    "minLength",
    "maxLength",
    "format",
    "minimum",
    "maximum",
    "enum",
    "enumNames",
    "oneOf",
    "items",
    "minItems",
    "maxItems",
];

fn is_nullable_wrapper(value: &Value) -> bool {
    value.as_array().is_some_and(|options| {
        options.len() == 2
            && options.iter().filter(|o| o.get("type").and_then(Value::as_str) == Some("null")).count() == 1
    })
}

fn resolve(reference: &Value, defs: Option<&Map<String, Value>>) -> Result<Map<String, Value>, String> {
    let name = reference.as_str().and_then(|r| r.strip_prefix("#/$defs/")).ok_or("refers outside `$defs`")?;
    let target = defs.and_then(|defs| defs.get(name)).ok_or_else(|| format!("refers to a missing `{name}`"))?;
    flattened(target, defs).map_err(|why| format!("refers to `{name}`, which {why}"))
}

/// The answer's `content`, decoded into `T`.
pub(crate) fn decode_answer<T: serde::de::DeserializeOwned>(content: Option<Value>) -> Result<T, String> {
    let content = content.unwrap_or_else(|| Value::Object(Map::new()));
    serde_json::from_value(content)
        .map_err(|e| format!("the answer does not fit `{}`: {e}", std::any::type_name::<T>()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    enum Color {
        Red,
        Green,
    }

    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    /// Rustdoc that must not reach the client.
    struct Profile {
        /// Your name.
        #[schemars(length(min = 1, max = 50))]
        name: String,
        age: Option<u8>,
        subscribe: bool,
        #[schemars(email)]
        email: Option<String>,
        /// Favourite color.
        color: Color,
        extra_colors: Option<Vec<Color>>,
    }

    fn requested_schema(params: ElicitRequestParams) -> Value {
        let ElicitRequestParams::Form(form) = params else { panic!("a form") };
        serde_json::to_value(form.requested_schema).unwrap()
    }

    #[test]
    fn a_flat_struct_becomes_the_restricted_form_schema() {
        let schema = requested_schema(form_params::<Profile>("Who are you?").unwrap());
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "Your name.", "minLength": 1, "maxLength": 50 },
                    "age": { "type": "integer", "format": "uint8", "minimum": 0, "maximum": 255 },
                    "subscribe": { "type": "boolean" },
                    "email": { "type": "string", "format": "email" },
                    "color": { "type": "string", "enum": ["Red", "Green"], "description": "Favourite color." },
                    "extra_colors": { "type": "array", "items": { "type": "string", "enum": ["Red", "Green"] } }
                },
                "required": ["name", "subscribe", "color"]
            })
        );
    }

    #[test]
    fn nested_objects_and_free_arrays_are_refused_by_field() {
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Nested {
            inner: Profile,
        }
        let err = form_params::<Nested>("?").unwrap_err();
        assert!(err.contains("field `inner`") && err.contains("flat strings"), "{err}");
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Tags {
            tags: Vec<String>,
        }
        let err = form_params::<Tags>("?").unwrap_err();
        assert!(err.contains("field `tags` is an array of something other than an enum"), "{err}");
        let err = form_params::<String>("?").unwrap_err();
        assert!(err.contains("not an object"), "{err}");
    }

    #[test]
    fn answers_decode_into_the_type_or_say_why_not() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Confirm {
            ok: bool,
        }
        assert_eq!(decode_answer::<Confirm>(Some(json!({"ok": true}))).unwrap(), Confirm { ok: true });
        let err = decode_answer::<Confirm>(Some(json!({"ok": "yes"}))).unwrap_err();
        assert!(err.contains("Confirm") && err.contains("invalid type"), "{err}");
    }
}
