//! Routes: URI templates, the schemas derived from argument and output types, structured results.

use super::*;

#[test]
fn uri_templates_match_whole_segments() {
    let pattern = UriPattern::parse("test://template/{id}/data");
    assert_eq!(pattern.matches("test://template/123/data").unwrap()["id"], "123");
    assert!(pattern.matches("test://template//data").is_none());
    assert!(pattern.matches("test://template/1/2/data").is_none());
    assert!(pattern.matches("test://template/123/data/more").is_none());
    let two = UriPattern::parse("file:///{dir}/{name}");
    let vars = two.matches("file:///etc/hosts").unwrap();
    assert_eq!((vars["dir"].as_str(), vars["name"].as_str()), ("etc", "hosts"));
}

#[test]
fn no_arguments_is_a_closed_empty_object_and_nothing_else() {
    let schema = ObjectSchema::for_type::<NoArguments>().unwrap();
    assert_eq!(
        schema.as_json(),
        r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false}"#
    );
    assert!(prompt_arguments::<NoArguments>().unwrap().is_empty());
}

#[test]
fn structured_output_declares_its_schema_without_being_asked() {
    #[derive(Serialize, schemars::JsonSchema)]
    struct Sum {
        sum: i64,
    }
    let route = ToolRoute::new("add", |_: Context, _: NoArguments| async { Ok(Structured(Sum { sum: 1 })) });
    let schema = route.tool().output_schema.as_ref().expect("outputSchema from Structured<Sum>").to_value();
    assert_eq!(schema["properties"]["sum"]["type"], "integer");
    assert!(schema.get("title").is_none(), "{schema}");
    let plain = ToolRoute::new("echo", |_: Context, _: NoArguments| async { Ok("hi") });
    assert!(plain.tool().output_schema.is_none());
}

#[test]
fn prompt_arguments_come_from_the_type_and_must_be_strings() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Review {
        /// The code to review.
        code: String,
        /// Where to focus.
        focus: Option<String>,
    }
    let route = PromptRoute::new("review", |_: Context, args: Review| async move { Ok(args.code) });
    let arguments = serde_json::to_value(&route.prompt().arguments).unwrap();
    assert_eq!(
        arguments,
        serde_json::json!([
            { "name": "code", "description": "The code to review.", "required": true },
            { "name": "focus", "description": "Where to focus.", "required": false }
        ])
    );
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Count {
        n: u32,
    }
    let route = PromptRoute::new("count", |_: Context, args: Count| async move { Ok(args.n.to_string()) });
    let error = route.schema_error.expect("a number is not a prompt argument");
    assert!(error.contains("the argument `n`") && error.contains("not a string"), "{error}");
    // An optional enum of strings is a string argument too (its schema is a `$ref` in `anyOf` with `null`).
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    enum Tone {
        Formal,
        Casual,
    }
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Letter {
        /// How it should sound.
        tone: Option<Tone>,
    }
    let route = PromptRoute::new("letter", |_: Context, _: Letter| async move { Ok(String::new()) });
    assert!(route.schema_error.is_none(), "{:?}", route.schema_error);
    let arguments = serde_json::to_value(&route.prompt().arguments).unwrap();
    assert_eq!(
        arguments,
        serde_json::json!([{ "name": "tone", "description": "How it should sound.", "required": false }])
    );
}

#[test]
fn structured_results_carry_the_json_as_text_too() {
    let result = Structured(serde_json::json!({"sum": 3})).into_tool_result();
    assert_eq!(result.structured_content, Some(serde_json::json!({"sum": 3})));
    let ContentBlock::Text(text) = &result.content[0] else { panic!("text block expected") };
    assert_eq!(text.text, r#"{"sum":3}"#);
}
