//! A server's elicitation answered in the terminal: a form built from its `requestedSchema`,
//! asked field by field on stderr and read from stdin.

use std::io::{BufRead as _, IsTerminal as _, Write as _};

use mcp_client::ElicitationResponse;
use mcp_client::types::{ElicitRequestParams, JsonObject};
use serde_json::{Value, json};

use super::render::{bold, heading};

/// Whether a person can be asked: stdin and stderr are a terminal.
pub fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Answers one elicitation; without a terminal it is cancelled, and the user told why.
pub fn answer(request: ElicitRequestParams, open_url: &dyn Fn(&str) -> Result<(), String>) -> ElicitationResponse {
    if !interactive() {
        let what = match &request {
            ElicitRequestParams::Url(url) => format!("to visit {}", url.url),
            _ => "for input".into(),
        };
        anstream::eprintln!(
            "mcp: the server asked {what} ({:?}); no terminal to ask on, so it was cancelled",
            message(&request)
        );
        return ElicitationResponse::cancel();
    }
    let mut lines = std::io::stdin().lock().lines();
    let mut ask = |question: &str| -> Option<String> {
        anstream::eprint!("{question}");
        let _ = std::io::stderr().flush();
        lines.next().and_then(Result::ok).map(|line| line.trim().to_owned())
    };
    match request {
        ElicitRequestParams::Url(url) => {
            anstream::eprintln!("{} {}\n  {}", heading("The server asks:"), url.message, url.url);
            match ask("Open this URL in the browser? [y]es / [n]o (decline) / [c]ancel: ").as_deref() {
                Some("y" | "yes" | "Y") => match open_url(&url.url) {
                    Ok(()) => ElicitationResponse::accept_url(),
                    Err(error) => {
                        anstream::eprintln!("mcp: could not open the browser ({error}); open the URL yourself");
                        ElicitationResponse::accept_url()
                    }
                },
                Some("n" | "no" | "N") => ElicitationResponse::decline(),
                _ => ElicitationResponse::cancel(),
            }
        }
        ElicitRequestParams::Form(form) => {
            anstream::eprintln!("{} {}", heading("The server asks:"), form.message);
            match ask("Answer? [y]es / [n]o (decline) / [c]ancel: ").as_deref() {
                Some("y" | "yes" | "Y" | "") => {}
                Some("n" | "no" | "N") => return ElicitationResponse::decline(),
                _ => return ElicitationResponse::cancel(),
            }
            let required: Vec<String> = form.requested_schema.required.clone().unwrap_or_default();
            let mut content = JsonObject::new();
            for (name, schema) in &form.requested_schema.properties {
                let schema = serde_json::to_value(schema).unwrap_or(Value::Null);
                let needed = required.contains(name);
                loop {
                    let Some(line) = ask(&field_question(name, &schema, needed)) else {
                        return ElicitationResponse::cancel();
                    };
                    match field_value(&schema, &line) {
                        Ok(Some(value)) => {
                            content.insert(name.clone(), value);
                            break;
                        }
                        Ok(None) if !needed => break,
                        Ok(None) => anstream::eprintln!("  {name} is required"),
                        Err(error) => anstream::eprintln!("  {error}"),
                    }
                }
            }
            ElicitationResponse::accept(content)
        }
        other => {
            anstream::eprintln!("mcp: the server asked in a mode this client does not know: {}", json!(other));
            ElicitationResponse::decline()
        }
    }
}

fn message(request: &ElicitRequestParams) -> &str {
    match request {
        ElicitRequestParams::Form(form) => &form.message,
        ElicitRequestParams::Url(url) => &url.message,
        _ => "",
    }
}

/// The values a field may take: `enum`, or the `const`s of `oneOf` (titled options).
fn choices(schema: &Value) -> Vec<(Value, String)> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values.iter().map(|v| (v.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned))).collect();
    }
    let titled = schema.get("oneOf").or_else(|| schema.get("anyOf")).and_then(Value::as_array);
    titled
        .into_iter()
        .flatten()
        .filter_map(|option| {
            let value = option.get("const")?.clone();
            let title = option.get("title").and_then(Value::as_str).map_or_else(|| value.to_string(), str::to_owned);
            Some((value, title))
        })
        .collect()
}

fn field_question(name: &str, schema: &Value, required: bool) -> String {
    let text = |key: &str| schema.get(key).and_then(Value::as_str);
    let mut question = format!("  {}", bold(text("title").unwrap_or(name)));
    if let Some(description) = text("description") {
        question.push_str(&format!(" ({description})"));
    }
    let kind = text("type").unwrap_or("string");
    let options = match kind {
        "array" => choices(schema.get("items").unwrap_or(&Value::Null)),
        _ => choices(schema),
    };
    if !options.is_empty() {
        let names: Vec<String> = options.iter().map(|(_, title)| title.clone()).collect();
        let joiner = if kind == "array" { "; any of, comma-separated: " } else { ": one of " };
        question.push_str(&format!("{joiner}{}", names.join(", ")));
    } else if kind != "string" {
        question.push_str(&format!(" [{kind}]"));
    }
    if let Some(default) = schema.get("default") {
        question.push_str(&format!(" (default {default})"));
    } else if !required {
        question.push_str(" (optional)");
    }
    question.push_str(": ");
    question
}

/// The value typed for a field, by its schema; `None` for an empty line (the default, if any).
fn field_value(schema: &Value, line: &str) -> Result<Option<Value>, String> {
    if line.is_empty() {
        return Ok(schema.get("default").cloned());
    }
    let kind = schema.get("type").and_then(Value::as_str).unwrap_or("string");
    let pick = |options: &[(Value, String)], word: &str| -> Result<Value, String> {
        options
            .iter()
            .find(|(value, title)| title == word || value.as_str() == Some(word))
            .map(|(value, _)| value.clone())
            .ok_or_else(|| {
                let names: Vec<&str> = options.iter().map(|(_, title)| title.as_str()).collect();
                format!("{word:?} is not one of: {}", names.join(", "))
            })
    };
    let value = match kind {
        "boolean" => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" | "1" => json!(true),
            "n" | "no" | "false" | "0" => json!(false),
            _ => return Err(format!("{line:?} is not yes or no")),
        },
        "integer" => json!(line.parse::<i64>().map_err(|_| format!("{line:?} is not an integer"))?),
        "number" => {
            let number: f64 = line.parse().map_err(|_| format!("{line:?} is not a number"))?;
            serde_json::Number::from_f64(number).map(Value::Number).ok_or_else(|| format!("{line:?} is not finite"))?
        }
        "array" => {
            let options = choices(schema.get("items").unwrap_or(&Value::Null));
            let words = line.split(',').map(str::trim).filter(|w| !w.is_empty());
            if options.is_empty() {
                Value::Array(words.map(|w| json!(w)).collect())
            } else {
                Value::Array(words.map(|w| pick(&options, w)).collect::<Result<_, _>>()?)
            }
        }
        _ => {
            let options = choices(schema);
            if options.is_empty() { json!(line) } else { pick(&options, line)? }
        }
    };
    if let (Some(number), Some(minimum)) = (value.as_f64(), schema.get("minimum").and_then(Value::as_f64))
        && number < minimum
    {
        return Err(format!("{number} is below the minimum {minimum}"));
    }
    if let (Some(number), Some(maximum)) = (value.as_f64(), schema.get("maximum").and_then(Value::as_f64))
        && number > maximum
    {
        return Err(format!("{number} is above the maximum {maximum}"));
    }
    Ok(Some(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_fields_are_read_by_their_schema() {
        assert_eq!(field_value(&json!({"type": "boolean"}), "yes").unwrap(), Some(json!(true)));
        assert_eq!(field_value(&json!({"type": "integer", "maximum": 5}), "4").unwrap(), Some(json!(4)));
        assert!(field_value(&json!({"type": "integer", "maximum": 5}), "6").unwrap_err().contains("maximum"));
        assert!(field_value(&json!({"type": "integer"}), "x").unwrap_err().contains("not an integer"));
        assert_eq!(field_value(&json!({"type": "number"}), "1.5").unwrap(), Some(json!(1.5)));
        assert_eq!(field_value(&json!({"type": "string", "default": "d"}), "").unwrap(), Some(json!("d")));
        assert_eq!(field_value(&json!({"type": "string"}), "").unwrap(), None);
        let titled =
            json!({"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]});
        assert_eq!(field_value(&titled, "Green").unwrap(), Some(json!("g")));
        assert_eq!(field_value(&titled, "r").unwrap(), Some(json!("r")));
        assert!(field_value(&titled, "Blue").unwrap_err().contains("one of: Red, Green"));
        let multi = json!({"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}});
        assert_eq!(field_value(&multi, "a, c").unwrap(), Some(json!(["a", "c"])));
        assert!(field_value(&multi, "a, d").is_err());
    }
}
