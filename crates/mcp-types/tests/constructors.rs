//! The JSON that the constructors, setters, conversions and shorthands write (generated ones
//! and those of `src/shorthand.rs`).
#![cfg(feature = "v2026_07_28")]

use mcp_types::v2026_07_28::*;
use serde_json::{Value, json};

fn to_json(value: impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap()
}

#[test]
fn struct_literals_name_each_member() {
    let resource = Resource { uri: "notes://a".into(), name: "a".into(), ..Default::default() }
        .with_mime_type("text/markdown")
        .with_description("The first note")
        .with_size(42);
    assert_eq!(
        to_json(&resource),
        json!({"uri": "notes://a", "name": "a", "mimeType": "text/markdown", "description": "The first note", "size": 42})
    );
    let implementation =
        Implementation { name: "notes".into(), version: "1.0.0".into(), ..Default::default() }.with_title("Notes");
    assert_eq!(to_json(&implementation), json!({"name": "notes", "version": "1.0.0", "title": "Notes"}));
    let template = ResourceTemplate { uri_template: "notes://{id}".into(), name: "note".into(), ..Default::default() };
    assert_eq!(to_json(&template), json!({"uriTemplate": "notes://{id}", "name": "note"}));
    let image = ImageContent { data: "SGVsbG8=".into(), mime_type: "image/png".into(), ..Default::default() };
    assert_eq!(to_json(&image), json!({"type": "image", "data": "SGVsbG8=", "mimeType": "image/png"}));
}

#[test]
fn setters_set_optional_members() {
    let tool = Tool::new(mcp_types::ObjectSchema::default(), "add_note")
        .with_description("Adds a note")
        .with_title("Add note")
        .with_annotations(ToolAnnotations::new().with_read_only_hint(false));
    assert_eq!(
        to_json(&tool),
        json!({
            "name": "add_note",
            "description": "Adds a note",
            "title": "Add note",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": false},
        })
    );
    let text = TextContent::new("hi").with_annotations(Annotations::new().with_priority(serde_json::Number::from(1)));
    assert_eq!(to_json(&text), json!({"type": "text", "text": "hi", "annotations": {"priority": 1}}));
}

#[test]
fn content_block_shorthands_and_conversions() {
    assert_eq!(to_json(ContentBlock::text("Hello")), json!({"type": "text", "text": "Hello"}));
    assert_eq!(to_json(ContentBlock::from("Hello")), json!({"type": "text", "text": "Hello"}));
    assert_eq!(to_json(ContentBlock::from(String::from("Hello"))), json!({"type": "text", "text": "Hello"}));
    assert_eq!(to_json(TextContent::from("Hello")), json!({"type": "text", "text": "Hello"}));
    let link = ResourceLink { uri: "notes://a".into(), name: "a".into(), ..Default::default() };
    assert_eq!(to_json(ContentBlock::from(link)), json!({"type": "resource_link", "uri": "notes://a", "name": "a"}));
    let audio = AudioContent { data: "UklGRg==".into(), mime_type: "audio/wav".into(), ..Default::default() };
    assert_eq!(
        to_json(ContentBlock::from(audio)),
        json!({"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"})
    );
    // The embedded resource: `From` into its contents union, then the `resource` shorthand.
    let contents = TextResourceContents { uri: "notes://a".into(), text: "# A".into(), ..Default::default() }
        .with_mime_type("text/markdown");
    assert_eq!(
        to_json(ContentBlock::resource(contents.clone())),
        json!({"type": "resource", "resource": {"uri": "notes://a", "text": "# A", "mimeType": "text/markdown"}})
    );
    let item: ReadResourceResultContentsItem = contents.into();
    assert_eq!(to_json(item), json!({"uri": "notes://a", "text": "# A", "mimeType": "text/markdown"}));
    let blob: EmbeddedResourceResource =
        BlobResourceContents { uri: "notes://b".into(), blob: "AA==".into(), ..Default::default() }.into();
    assert_eq!(to_json(blob), json!({"uri": "notes://b", "blob": "AA=="}));
}

#[test]
fn sampling_content_shorthands() {
    assert_eq!(to_json(SamplingMessageContentBlock::text("Hi")), json!({"type": "text", "text": "Hi"}));
    assert_eq!(to_json(SamplingMessageContent::text("Hi")), json!({"type": "text", "text": "Hi"}));
    assert_eq!(to_json(CreateMessageResultContent::text("Hi")), json!({"type": "text", "text": "Hi"}));
    let tool_use = ToolUseContent { id: "call-1".into(), name: "get_weather".into(), ..Default::default() };
    assert_eq!(
        to_json(SamplingMessageContentBlock::from(tool_use)),
        json!({"type": "tool_use", "id": "call-1", "name": "get_weather", "input": {}})
    );
}

#[test]
fn prompt_messages() {
    assert_eq!(
        to_json(PromptMessage::user("Summarize the notes")),
        json!({"role": "user", "content": {"type": "text", "text": "Summarize the notes"}})
    );
    assert_eq!(
        to_json(PromptMessage::assistant(ContentBlock::text("Done"))),
        json!({"role": "assistant", "content": {"type": "text", "text": "Done"}})
    );
    let link = ResourceLink { uri: "notes://a".into(), name: "a".into(), ..Default::default() };
    assert_eq!(
        to_json(PromptMessage::user(link)),
        json!({"role": "user", "content": {"type": "resource_link", "uri": "notes://a", "name": "a"}})
    );
}

#[test]
fn call_tool_results() {
    assert_eq!(
        to_json(CallToolResult::text("42 notes")),
        json!({"resultType": "complete", "content": [{"type": "text", "text": "42 notes"}]})
    );
    assert_eq!(
        to_json(CallToolResult::text("no such note").with_is_error(true)),
        json!({"resultType": "complete", "content": [{"type": "text", "text": "no such note"}], "isError": true})
    );
}

#[cfg(feature = "v2024_11_05")]
#[test]
fn older_revisions_have_the_same_shorthands() {
    use mcp_types::v2024_11_05 as old;
    assert_eq!(
        to_json(old::PromptMessage::user("Hi")),
        json!({"role": "user", "content": {"type": "text", "text": "Hi"}})
    );
    assert_eq!(to_json(old::CallToolResult::text("ok")), json!({"content": [{"type": "text", "text": "ok"}]}));
    let resource = old::Resource { uri: "notes://a".into(), name: "a".into(), ..Default::default() };
    assert_eq!(to_json(resource), json!({"uri": "notes://a", "name": "a"}));
}
