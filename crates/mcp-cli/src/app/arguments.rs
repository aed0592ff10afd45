//! `key=value` words turned into a tool's arguments, typed by its `inputSchema`: numbers,
//! booleans, arrays and objects become JSON; a missing or unknown argument is refused, named,
//! before anything is sent. `key:=JSON` gives a raw JSON value.

use mcp_client::types::JsonObject;
use serde_json::Value;

/// What an argument list is checked against: an `inputSchema` (or a prompt's arguments, as a
/// schema of optional and required strings).
pub struct Shape<'a> {
    /// "tool `add`", "prompt `summarize`": for messages.
    pub what: String,
    pub schema: &'a Value,
}

impl Shape<'_> {
    fn properties(&self) -> Option<&serde_json::Map<String, Value>> {
        self.schema.get("properties").and_then(Value::as_object)
    }

    fn required(&self) -> Vec<&str> {
        let required = self.schema.get("required").and_then(Value::as_array);
        required.into_iter().flatten().filter_map(Value::as_str).collect()
    }

    /// Whether names outside `properties` are allowed: only when the schema says so, or has no
    /// `properties` at all (nothing to check against).
    fn open(&self) -> bool {
        match self.schema.get("additionalProperties") {
            Some(Value::Bool(false)) => false,
            Some(_) => true,
            None => self.properties().is_none(),
        }
    }

    fn names(&self) -> String {
        let properties = self.properties().map(|p| p.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
        if properties.is_empty() {
            return "it takes none".into();
        }
        let required = self.required();
        // Required first, then the optional ones in brackets.
        let (needed, optional): (Vec<&String>, Vec<&String>) =
            properties.iter().partition(|n| required.contains(&n.as_str()));
        let names: Vec<String> =
            needed.into_iter().cloned().chain(optional.into_iter().map(|n| format!("[{n}]"))).collect();
        format!("its arguments: {}", names.join(" "))
    }

    /// `base` (from `--args`) with the words applied over it, checked.
    pub fn arguments(&self, base: JsonObject, words: &[String]) -> Result<JsonObject, String> {
        let mut arguments = base;
        for word in words {
            let (name, value) = if let Some((name, json)) = word.split_once(":=")
                && !name.contains('=')
            {
                let value = serde_json::from_str(json)
                    .map_err(|e| format!("{name}:= is not JSON ({e}); for text use {name}=…"))?;
                (name, value)
            } else if let Some((name, text)) = word.split_once('=') {
                (name, self.typed(name, text)?)
            } else {
                return Err(format!("{word:?} is not key=value ({} takes {})", self.what, self.names()));
            };
            if name.is_empty() {
                return Err(format!("{word:?} has no name before `=`"));
            }
            arguments.insert(name.to_owned(), value);
        }
        if !self.open() {
            let known = self.properties();
            if let Some(unknown) = arguments.keys().find(|k| known.is_none_or(|p| !p.contains_key(*k))) {
                return Err(format!("{} has no argument `{unknown}`; {}", self.what, self.names()));
            }
        }
        let missing: Vec<&str> = self.required().into_iter().filter(|name| !arguments.contains_key(*name)).collect();
        if !missing.is_empty() {
            let list = missing.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ");
            return Err(format!("{} needs {list}; {}", self.what, self.names()));
        }
        Ok(arguments)
    }

    /// `text` read as the type the schema gives `name`.
    fn typed(&self, name: &str, text: &str) -> Result<Value, String> {
        let schema = resolve(self.schema, self.properties().and_then(|p| p.get(name)).unwrap_or(&Value::Null));
        let kinds = kinds(self.schema, schema);
        let as_json = || serde_json::from_str::<Value>(text).ok();
        let value = if kinds.is_empty() {
            // No type: a JSON value if the text is one (other than a bare word), else text.
            as_json().filter(|v| !v.is_string()).unwrap_or_else(|| Value::String(text.to_owned()))
        } else if kinds.iter().any(|k| k == "string") {
            // Text, unless it is JSON of another type the schema allows (`null` for a nullable).
            let other = as_json().filter(|v| !v.is_string() && kinds.iter().any(|k| k != "string" && fits(v, k)));
            other.unwrap_or_else(|| Value::String(text.to_owned()))
        } else {
            let parsed = as_json().filter(|value| kinds.iter().any(|kind| fits(value, kind)));
            parsed.ok_or_else(|| {
                let hint = if kinds.iter().any(|k| k == "array" || k == "object") { " (as JSON)" } else { "" };
                format!("{}: `{name}` must be {}{hint}, not {text:?}", self.what, kinds.join(" or "))
            })?
        };
        let allowed = enum_values(self.schema, schema);
        if let Some(allowed) = allowed.as_ref()
            && !allowed.contains(&value)
        {
            let names: Vec<String> = allowed.iter().map(|v| v.as_str().map_or(v.to_string(), str::to_owned)).collect();
            return Err(format!("{}: `{name}` must be one of {}, not {text:?}", self.what, names.join(", ")));
        }
        Ok(value)
    }
}

/// `schema` itself, or what its local `$ref` (`#/$defs/NAME`, `#/definitions/NAME`, `#`) names in
/// `root`, followed a few times; an unresolvable reference stays as it is.
pub fn resolve<'a>(root: &'a Value, mut schema: &'a Value) -> &'a Value {
    for _ in 0..8 {
        let Some(reference) = schema.get("$ref").and_then(Value::as_str) else { break };
        let target = if reference == "#" {
            Some(root)
        } else {
            reference.strip_prefix("#/").and_then(|pointer| root.pointer(&format!("/{pointer}")))
        };
        match target {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

/// The values an `enum` allows, found through `$ref` and in nullable `anyOf`/`oneOf` members
/// (`null` allowed then too).
fn enum_values(root: &Value, schema: &Value) -> Option<Vec<Value>> {
    let schema = resolve(root, schema);
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return Some(values.clone());
    }
    let options = schema.get("anyOf").or_else(|| schema.get("oneOf")).and_then(Value::as_array)?;
    let mut all = Vec::new();
    for option in options {
        let option = resolve(root, option);
        match (enum_values(root, option), option.get("type").and_then(Value::as_str)) {
            (Some(values), _) => all.extend(values),
            (None, Some("null")) => all.push(Value::Null),
            // Another member takes any value of its type: no list to check against.
            (None, _) => return None,
        }
    }
    Some(all)
}

/// The JSON types a schema allows (`type` as a word or a list, or those of `anyOf`/`oneOf`),
/// through `$ref`s into `root`.
pub fn kinds(root: &Value, schema: &Value) -> Vec<String> {
    let schema = resolve(root, schema);
    match schema.get("type") {
        Some(Value::String(kind)) => vec![kind.clone()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => {
            let options = schema.get("anyOf").or_else(|| schema.get("oneOf")).and_then(Value::as_array);
            let mut all: Vec<String> = options.into_iter().flatten().flat_map(|option| kinds(root, option)).collect();
            all.dedup();
            if schema.get("enum").is_some() && all.is_empty() {
                // An enum of strings without `type`.
                if schema["enum"].as_array().is_some_and(|v| v.iter().all(Value::is_string)) {
                    all.push("string".into());
                }
            }
            all
        }
    }
}

fn fits(value: &Value, kind: &str) -> bool {
    match kind {
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        "string" => value.is_string(),
        _ => true,
    }
}

/// A prompt's arguments as a schema: all strings, the required ones required, none other.
pub fn prompt_schema(arguments: &[mcp_client::types::PromptArgument]) -> Value {
    let properties: serde_json::Map<String, Value> =
        arguments.iter().map(|a| (a.name.clone(), serde_json::json!({"type": "string"}))).collect();
    let required: Vec<&str> = arguments.iter().filter(|a| a.required == Some(true)).map(|a| a.name.as_str()).collect();
    serde_json::json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| w.to_string()).collect()
    }

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"}, "days": {"type": "integer"}, "ratio": {"type": "number"},
                "metric": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
                "where": {"type": "object"}, "unit": {"type": "string", "enum": ["c", "f"]},
                "note": {"type": ["string", "null"]}, "any": {}
            },
            "required": ["city"]
        })
    }

    #[test]
    fn values_take_the_schemas_types() {
        let schema = schema();
        let shape = Shape { what: "tool `w`".into(), schema: &schema };
        let args = shape
            .arguments(
                JsonObject::new(),
                &words(&[
                    "city=42",
                    "days=3",
                    "ratio=0.5",
                    "metric=true",
                    "tags=[\"a\",\"b\"]",
                    "where={\"x\":1}",
                    "unit=c",
                    "note=null",
                    "any=7",
                ]),
            )
            .unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"city": "42", "days": 3, "ratio": 0.5, "metric": true, "tags": ["a", "b"], "where": {"x": 1},
                   "unit": "c", "note": null, "any": 7})
        );
        let raw = shape.arguments(JsonObject::new(), &words(&["city:=\"x\"", "days:=5"])).unwrap();
        assert_eq!(Value::Object(raw), json!({"city": "x", "days": 5}));
    }

    #[test]
    fn bad_values_unknown_and_missing_arguments_are_named() {
        let schema = schema();
        let shape = Shape { what: "tool `w`".into(), schema: &schema };
        let error = |list: &[&str]| shape.arguments(JsonObject::new(), &words(list)).unwrap_err();
        assert!(error(&["city=x", "days=three"]).contains("`days` must be integer, not \"three\""));
        assert!(error(&["city=x", "days=1.5"]).contains("`days` must be integer"));
        assert!(error(&["city=x", "tags=a"]).contains("`tags` must be array (as JSON)"));
        assert!(error(&["city=x", "unit=k"]).contains("`unit` must be one of c, f"));
        assert!(error(&["days=1"]).contains("tool `w` needs `city`"));
        assert!(error(&["city=x", "town=y"]).ends_with(
            "has no argument `town`; its arguments: city [any] [days] [metric] [note] [ratio] [tags] [unit] [where]"
        ));
        assert!(error(&["city"]).contains("is not key=value"));
        // --args supplies what the words do not.
        let mut base = JsonObject::new();
        base.insert("city".into(), json!("Paris"));
        assert_eq!(shape.arguments(base, &words(&["days=2"])).unwrap()["city"], "Paris");
    }

    #[test]
    fn references_and_nullable_unions_are_followed() {
        // As pydantic writes an Enum, a model and an Optional[str].
        let schema = json!({
            "type": "object",
            "$defs": {
                "Shade": {"type": "string", "enum": ["light", "dark"]},
                "Trip": {"type": "object", "properties": {"title": {"type": "string"}}}
            },
            "properties": {
                "shade": {"$ref": "#/$defs/Shade"},
                "trip": {"$ref": "#/$defs/Trip"},
                "maybe": {"anyOf": [{"$ref": "#/$defs/Shade"}, {"type": "null"}]},
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}
            }
        });
        let shape = Shape { what: "tool `t`".into(), schema: &schema };
        let error = |list: &[&str]| shape.arguments(JsonObject::new(), &words(list)).unwrap_err();
        assert!(error(&["shade=purple"]).contains("`shade` must be one of light, dark"));
        assert!(error(&["trip={title"]).contains("`trip` must be object (as JSON)"));
        assert!(error(&["maybe=purple"]).contains("`maybe` must be one of light, dark, null"));
        let args = shape
            .arguments(JsonObject::new(), &words(&["shade=dark", "trip={\"title\":\"x\"}", "maybe=null", "note=7"]))
            .unwrap();
        assert_eq!(Value::Object(args), json!({"shade": "dark", "trip": {"title": "x"}, "maybe": null, "note": "7"}));
    }

    #[test]
    fn an_open_schema_takes_any_name() {
        let open = json!({"type": "object", "additionalProperties": true, "properties": {}});
        let shape = Shape { what: "tool `o`".into(), schema: &open };
        assert_eq!(shape.arguments(JsonObject::new(), &words(&["n=5", "s=x"])).unwrap()["n"], 5);
        let none = json!({"type": "object"});
        let shape = Shape { what: "tool `o`".into(), schema: &none };
        assert_eq!(shape.arguments(JsonObject::new(), &words(&["s=x"])).unwrap()["s"], "x");
    }
}
