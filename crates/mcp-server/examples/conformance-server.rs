//! The fixture server the official MCP conformance suite drives (the "everything server" of
//! conformance-guide §4): every tool, resource, template and prompt it names, for the
//! 2025-11-25 and 2026-07-28 legs at once, and the tools of the tasks extension's scenarios
//! (`tasks-*`: `greet`, `slow_compute`, `failing_job`, `protocol_error_job`, `confirm_delete`,
//! `multi_input`, `test_tool_with_task`), and for the skills extension's scenarios (`sep-2640-*`)
//! the skills under `examples/skills/`.
//!
//! ```text
//! cargo build --release -p mcp-server --example conformance-server
//! target/release/examples/conformance-server --addr 127.0.0.1:8001   # http://127.0.0.1:8001/mcp
//! target/release/examples/conformance-server --stdio
//! ```

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;
use mcp_server::http::HttpConfig;
use mcp_server::{
    Context, Error, NoArguments, PromptRoute, ResourceRoute, ResourceTemplateRoute, Server, ServerBuilder, SkillRoute,
    TaskSupport, ToolRoute, text_result,
};
use mcp_types::{
    AudioContent, BlobResourceContents, ClientCapabilities, CompleteResultCompletion, ContentBlock,
    ElicitRequestParams, GetPromptResult, ImageContent, InputRequest, InputResponse, JsonObject, LoggingLevel, Prompt,
    PromptArgument, PromptMessage, ReadResourceResultContentsItem, Resource, ResourceTemplate, Role,
    SamplingCapability, TextResourceContents, Tool,
};
use serde_json::{Value, json};

/// A 1x1 transparent PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
/// A tiny WAV header with no samples.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

#[derive(Parser)]
struct Args {
    /// Serve Streamable HTTP at http://ADDR/mcp.
    #[arg(long, default_value = "127.0.0.1:8001")]
    addr: SocketAddr,
    /// Serve stdio instead of HTTP.
    #[arg(long)]
    stdio: bool,
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let server = build().expect("the fixture server is well-formed");
    if args.stdio {
        return mcp_server::stdio::serve_stdio(server).await;
    }
    let listener = tokio::net::TcpListener::bind(args.addr).await?;
    eprintln!("conformance-server listening on http://{}/mcp", listener.local_addr()?);
    mcp_server::http::serve(listener, server, HttpConfig::default()).await
}

fn text(text: impl Into<String>) -> ContentBlock {
    ContentBlock::text(text)
}

fn image() -> ContentBlock {
    ImageContent { data: PNG.into(), mime_type: "image/png".into(), ..Default::default() }.into()
}

fn embedded(uri: &str, mime: &str, body: &str) -> ContentBlock {
    ContentBlock::resource(
        TextResourceContents { uri: uri.into(), text: body.into(), ..Default::default() }.with_mime_type(mime),
    )
}

fn text_contents(uri: &str, mime: &str, body: &str) -> Vec<ReadResourceResultContentsItem> {
    vec![TextResourceContents { uri: uri.into(), text: body.into(), ..Default::default() }.with_mime_type(mime).into()]
}

fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("fixture JSON matches the schema")
}

fn form(message: &str, schema: Value) -> ElicitRequestParams {
    from_json(json!({ "mode": "form", "message": message, "requestedSchema": schema }))
}

fn sampling(question: &str) -> mcp_types::CreateMessageRequestParams {
    from_json(json!({
        "messages": [{ "role": "user", "content": { "type": "text", "text": question } }],
        "maxTokens": 100,
    }))
}

fn describe(response: &InputResponse) -> String {
    match response {
        InputResponse::Elicit(result) => format!("{:?} {}", result.action, json!(result.content)),
        InputResponse::CreateMessage(result) => serde_json::to_string(&result.content).unwrap_or_default(),
        InputResponse::ListRoots(result) => {
            result.roots.iter().map(|root| root.uri.as_str()).collect::<Vec<_>>().join(", ")
        }
        other => format!("{other:?}"),
    }
}

fn tool<F, Fut>(name: &str, description: &str, handler: F) -> ToolRoute
where
    F: Fn(Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<mcp_types::CallToolResult, Error>> + Send + 'static,
{
    ToolRoute::new(name, move |ctx: Context, _: NoArguments| handler(ctx)).description(description)
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Prompted {
    /// The prompt to send to the client's model.
    prompt: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Message {
    /// The message to show the user.
    message: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SlowCompute {
    /// How long the computation takes, in seconds.
    seconds: f64,
    /// A label echoed in the result.
    label: Option<String>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ConfirmDelete {
    /// The file to delete.
    filename: String,
}

/// A yes/no question for the tasks fixtures.
fn confirm(key: &str, message: &str) -> (String, InputRequest) {
    let schema =
        json!({ "type": "object", "properties": { "confirm": { "type": "boolean" } }, "required": ["confirm"] });
    (key.to_owned(), InputRequest::Elicit(mcp_types::ElicitRequest::new(form(message, schema))))
}

fn accepted(response: &InputResponse) -> bool {
    matches!(response, InputResponse::Elicit(r) if r.action == mcp_types::Action::Accept)
}

/// The tasks extension's fixtures (SEP-2663; the suite's `tasks-*` scenarios).
fn task_tools(builder: mcp_server::ServerBuilder) -> mcp_server::ServerBuilder {
    builder
        .tool(
            ToolRoute::new("greet", |_: Context, args: Greet| async move {
                Ok::<_, Error>(format!("Hello, {}!", args.name))
            })
            .description("Greets someone at once (never a task)"),
        )
        .tool(
            ToolRoute::new("slow_compute", |_: Context, args: SlowCompute| async move {
                tokio::time::sleep(Duration::from_secs_f64(args.seconds.clamp(0.0, 3600.0))).await;
                let label = args.label.unwrap_or_default();
                Ok::<_, Error>(format!("Computed {label} in {} s", args.seconds))
            })
            .task_support(TaskSupport::Optional)
            .description("Sleeps `seconds`, then answers; a task for clients that accept one"),
        )
        .tool(
            tool("failing_job", "Fails after about a second (a tool error); tasks only", |_| async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Err(Error::failed("failing_job failed on purpose"))
            })
            .task_support(TaskSupport::Required),
        )
        .tool(
            tool("protocol_error_job", "Ends with a JSON-RPC error (-32603)", |_| async {
                tokio::time::sleep(Duration::from_millis(200)).await;
                Err(Error::internal("protocol_error_job ended with a protocol error on purpose"))
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolRoute::new("confirm_delete", |ctx: Context, args: ConfirmDelete| async move {
                // A task from the start: the confirmation is one of the task's input requests.
                ctx.run_as_task().await;
                let message = format!("Delete {}?", args.filename);
                let answer = ctx.input([confirm("confirm_delete", &message)]).await?;
                let verdict = if accepted(&answer["confirm_delete"]) { "Deleted" } else { "Kept" };
                Ok::<_, Error>(format!("{verdict} {}", args.filename))
            })
            .task_support(TaskSupport::Optional)
            .description("Asks for confirmation inside a task, then deletes"),
        )
        .tool(
            tool("multi_input", "Asks two questions at once inside a task", |ctx| async move {
                ctx.run_as_task().await;
                let answers =
                    ctx.input([confirm("first", "First question"), confirm("second", "Second question")]).await?;
                let summary: Vec<String> =
                    answers.iter().map(|(key, answer)| format!("{key}: {}", describe(answer))).collect();
                Ok(text_result(summary.join("; ")))
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            tool("test_tool_with_task", "Asks for a name (multi-round), then runs as a task", |ctx| async move {
                let schema =
                    json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] });
                // Asked before the task exists: an InputRequiredResult round.
                let answer = ctx.elicit_with("user_name", form("What is your name?", schema)).await?;
                let name = answer.content.as_ref().and_then(|c| c.get("name")).map(|v| json!(v)).unwrap_or(json!("?"));
                ctx.run_as_task().await;
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(text_result(format!("Hello, {}!", name.as_str().unwrap_or("?"))))
            })
            .task_support(TaskSupport::Required),
        )
}

fn build() -> Result<Server, mcp_server::BuildError> {
    fixture(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills").as_ref())?.build()
}

/// The fixture, not yet built, serving the skills under `skills`: mcp-server-redis's
/// `scale-server` includes this file and adds its shared stores before building.
pub fn fixture(skills: &std::path::Path) -> Result<ServerBuilder, mcp_server::BuildError> {
    let mut builder = Server::builder("mcp-rs-conformance-server", env!("CARGO_PKG_VERSION"))
        .instructions("Fixture server for the MCP conformance suite.")
        .tool(tool("test_simple_text", "Returns a simple text response", |_| async {
            Ok(text_result("This is a simple text response for testing."))
        }))
        .tool(tool("test_image_content", "Returns an image", |_| async {
            Ok(mcp_types::CallToolResult::new(vec![image()]))
        }))
        .tool(tool("test_audio_content", "Returns audio", |_| async {
            let audio = AudioContent { data: WAV.into(), mime_type: "audio/wav".into(), ..Default::default() };
            Ok(mcp_types::CallToolResult::new(vec![audio.into()]))
        }))
        .tool(tool("test_embedded_resource", "Returns an embedded resource", |_| async {
            Ok(mcp_types::CallToolResult::new(vec![embedded(
                "test://embedded-resource",
                "text/plain",
                "This is an embedded resource content.",
            )]))
        }))
        .tool(tool("test_multiple_content_types", "Returns text, an image and a resource", |_| async {
            Ok(mcp_types::CallToolResult::new(vec![
                text("Multiple content types test:"),
                image(),
                embedded("test://mixed-content-resource", "application/json", r#"{"test":"data","value":123}"#),
            ]))
        }))
        .tool(tool("test_error_handling", "Always fails", |_| async {
            Err(Error::failed("This tool intentionally returns an error for testing"))
        }))
        .tool(tool("test_tool_with_progress", "Reports progress", |ctx| async move {
            for step in [0.0, 50.0, 100.0] {
                ctx.progress(step, Some(100.0), Some(&format!("Completed step {step}"))).await;
                if step < 100.0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            Ok(text_result("Progress test completed"))
        }))
        .tool(tool("test_tool_with_logging", "Logs while running", |ctx| async move {
            for (index, message) in ["Tool execution started", "Tool processing data", "Tool execution completed"].iter().enumerate() {
                ctx.log(LoggingLevel::Info, Some("conformance"), json!(message)).await;
                if index < 2 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            Ok(text_result("Logging test completed"))
        }))
        .tool(
            ToolRoute::new("test_sampling", |ctx: Context, args: Prompted| async move {
                let reply = ctx.create_message("sampling", sampling(&args.prompt)).await?;
                Ok(text_result(format!("LLM response: {}", serde_json::to_string(&reply.content).unwrap_or_default())))
            })
            .description("Asks the client's model"),
        )
        .tool(
            ToolRoute::new("test_elicitation", |ctx: Context, args: Message| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "username": { "type": "string", "description": "Your username" },
                        "email": { "type": "string", "description": "Your email address" }
                    },
                    "required": ["username", "email"]
                });
                let answer = ctx.elicit_with("user_details", form(&args.message, schema)).await?;
                Ok(text_result(format!("User response: {:?} {}", answer.action, json!(answer.content))))
            })
            .description("Asks the user for details"),
        )
        .tool(tool("test_elicitation_sep1034_defaults", "Elicitation with default values", |ctx| async move {
            let schema = json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "default": "John Doe" },
                    "age": { "type": "integer", "default": 30 },
                    "score": { "type": "number", "default": 95.5 },
                    "status": { "type": "string", "enum": ["active", "inactive", "pending"], "default": "active" },
                    "verified": { "type": "boolean", "default": true }
                }
            });
            let answer = ctx.elicit_with("defaults", form("Please confirm your details", schema)).await?;
            Ok(text_result(format!("Elicitation completed: {:?} {}", answer.action, json!(answer.content))))
        }))
        .tool(tool("test_elicitation_sep1330_enums", "Elicitation with every enum style", |ctx| async move {
            let schema = json!({
                "type": "object",
                "properties": {
                    "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
                    "titledSingle": { "type": "string", "oneOf": [
                        { "const": "value1", "title": "First Option" },
                        { "const": "value2", "title": "Second Option" }
                    ] },
                    "legacyEnum": { "type": "string", "enum": ["opt1", "opt2"], "enumNames": ["Option One", "Option Two"] },
                    "untitledMulti": { "type": "array", "items": { "type": "string", "enum": ["a", "b", "c"] } },
                    "titledMulti": { "type": "array", "items": { "anyOf": [
                        { "const": "x", "title": "Ex" },
                        { "const": "y", "title": "Why" }
                    ] } }
                }
            });
            let answer = ctx.elicit_with("enums", form("Choose your options", schema)).await?;
            Ok(text_result(format!("Elicitation completed: {:?} {}", answer.action, json!(answer.content))))
        }));

    builder =
        builder.tool(tool("test_reconnection", "Closes its SSE stream mid-call (legacy polling)", |ctx| async move {
            ctx.close_stream().await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(text_result("Reconnection test completed"))
        }));

    // 2026-07-28 diagnostics (conformance-guide §4.3).
    builder = builder
        .tool(
            tool("test_missing_capability", "Needs the client's sampling capability", |ctx| async move {
                let reply = ctx.create_message("question", sampling("Say hello")).await?;
                Ok(text_result(serde_json::to_string(&reply.content).unwrap_or_default()))
            })
            .requires(ClientCapabilities { sampling: Some(SamplingCapability::default()), ..Default::default() }),
        )
        .tool(tool("test_streaming_elicitation", "Asks for a name", |ctx| async move {
            let schema =
                json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] });
            let answer = ctx.elicit_with("user_name", form("What is your name?", schema)).await?;
            Ok(text_result(format!("Hello, {}!", json!(answer.content))))
        }))
        .tool(tool("test_logging_tool", "Logs only when the request asks for a level", |ctx| async move {
            ctx.log(LoggingLevel::Info, Some("conformance"), json!("test_logging_tool ran")).await;
            Ok(text_result("Logging tool completed"))
        }))
        .tool(tool("test_trigger_tool_change", "Announces a tool list change", |ctx| async move {
            ctx.server().notify_tools_list_changed();
            Ok(text_result("Tool list change announced"))
        }))
        .tool(tool("test_trigger_prompt_change", "Announces a prompt list change", |ctx| async move {
            ctx.server().notify_prompts_list_changed();
            Ok(text_result("Prompt list change announced"))
        }));

    // InputRequiredResult fixtures (conformance-guide §4.4).
    let name_schema =
        || json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] });
    builder = builder
        .tool(tool("test_input_required_result_elicitation", "Asks for the user's name", move |ctx| async move {
            let answer = ctx.elicit_with("user_name", form("What is your name?", name_schema())).await?;
            let name =
                answer.content.as_ref().and_then(|c| c.get("name")).map(|v| json!(v)).unwrap_or(json!("stranger"));
            Ok(text_result(format!("Hello, {}!", name.as_str().unwrap_or_default())))
        }))
        .tool(tool("test_input_required_result_sampling", "Asks the client's model", |ctx| async move {
            let reply = ctx.create_message("capital_question", sampling("What is the capital of France?")).await?;
            Ok(text_result(format!("The model said: {}", serde_json::to_string(&reply.content).unwrap_or_default())))
        }))
        .tool(tool("test_input_required_result_list_roots", "Asks for the client's roots", |ctx| async move {
            let roots = ctx.list_roots("client_roots").await?;
            let uris: Vec<&str> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
            Ok(text_result(format!("Client roots: {}", uris.join(", "))))
        }))
        .tool(tool(
            "test_input_required_result_request_state",
            "Asks for confirmation, keeping state",
            |ctx| async move {
                let schema =
                    json!({ "type": "object", "properties": { "ok": { "type": "boolean" } }, "required": ["ok"] });
                let answer = ctx.elicit_with("confirm", form("Please confirm", schema)).await?;
                Ok(text_result(format!("state-ok: confirmed {:?}", answer.action)))
            },
        ))
        .tool(tool("test_input_required_result_multiple_inputs", "Asks three things at once", move |ctx| async move {
            let answers = ctx
                .input([
                    (
                        "user_name".to_owned(),
                        InputRequest::Elicit(mcp_types::ElicitRequest::new(form("What is your name?", name_schema()))),
                    ),
                    (
                        "greeting".to_owned(),
                        InputRequest::CreateMessage(mcp_types::CreateMessageRequest::new(sampling("Write a greeting"))),
                    ),
                    ("client_roots".to_owned(), InputRequest::ListRoots(mcp_types::ListRootsRequest::new())),
                ])
                .await?;
            let parts: Vec<String> =
                answers.iter().map(|(key, answer)| format!("{key}: {}", describe(answer))).collect();
            Ok(text_result(format!("All inputs received. {}", parts.join("; "))))
        }))
        .tool(tool(
            "test_input_required_result_multi_round",
            "Asks two questions in two rounds",
            move |ctx| async move {
                let name = ctx.elicit_with("step1", form("What is your name?", name_schema())).await?;
                let color_schema =
                    json!({ "type": "object", "properties": { "color": { "type": "string" } }, "required": ["color"] });
                let color = ctx.elicit_with("step2", form("What is your favourite colour?", color_schema)).await?;
                Ok(text_result(format!("Multi-round complete: {} likes {}", json!(name.content), json!(color.content))))
            },
        ))
        .tool(tool("test_input_required_result_tampered_state", "Rejects a tampered requestState", |ctx| async move {
            let schema = json!({ "type": "object", "properties": { "ok": { "type": "boolean" } }, "required": ["ok"] });
            ctx.elicit_with("confirm", form("Please confirm", schema)).await?;
            Ok(text_result("state-ok"))
        }))
        .tool(tool(
            "test_input_required_result_capabilities",
            "Asks only what the client supports",
            move |ctx| async move {
                let caps = ctx.client_capabilities().clone();
                let mut requests = Vec::new();
                if caps.elicitation.is_some() {
                    requests.push((
                        "user_name".to_owned(),
                        InputRequest::Elicit(mcp_types::ElicitRequest::new(form("What is your name?", name_schema()))),
                    ));
                }
                if caps.sampling.is_some() {
                    requests.push((
                        "capital_question".to_owned(),
                        InputRequest::CreateMessage(mcp_types::CreateMessageRequest::new(sampling(
                            "What is the capital of France?",
                        ))),
                    ));
                }
                if caps.roots.is_some() {
                    requests
                        .push(("client_roots".to_owned(), InputRequest::ListRoots(mcp_types::ListRootsRequest::new())));
                }
                if requests.is_empty() {
                    return Ok(text_result("The client declared no capability to ask with"));
                }
                let answers = ctx.input(requests).await?;
                Ok(text_result(format!("Received {} answers", answers.len())))
            },
        ));

    // Not scored: JSON Schema 2020-12 preservation and a mirrored header parameter.
    let schema_2020_12: mcp_types::ObjectSchema = from_json(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": { "address": { "$anchor": "addressDef", "type": "object",
            "properties": { "street": { "type": "string" }, "city": { "type": "string" } } } },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" }
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false
    }));
    let mut json_schema_tool = Tool::new(schema_2020_12, "json_schema_2020_12_tool");
    json_schema_tool.description = Some("Its inputSchema uses JSON Schema 2020-12 keywords".into());
    let mut header_tool = Tool::new(
        from_json(json!({ "type": "object", "properties": {
            "value": { "type": "string", "x-mcp-header": "Value", "description": "Mirrored into Mcp-Param-Value" }
        }, "required": ["value"] })),
        "test_custom_header",
    );
    header_tool.description = Some("Echoes a value that is also sent as the Mcp-Param-Value header".into());
    builder = builder
        .tool(ToolRoute::raw(json_schema_tool, |_: Context, args: JsonObject| async move {
            Ok::<_, Error>(text_result(format!("ok: {}", Value::Object(args))))
        }))
        .tool(ToolRoute::raw(header_tool, |_: Context, args: JsonObject| async move {
            Ok::<_, Error>(text_result(format!(
                "value: {}",
                args.get("value").and_then(Value::as_str).unwrap_or_default()
            )))
        }));

    // Resources and templates.
    let resource = |uri: &str, name: &str, mime: &str| {
        Resource { uri: uri.into(), name: name.into(), ..Default::default() }
            .with_mime_type(mime)
            .with_description(format!("{name} fixture"))
    };
    builder = builder
        .resource(ResourceRoute::new(
            resource("test://static-text", "static-text", "text/plain"),
            |_, uri| async move {
                Ok(text_contents(&uri, "text/plain", "This is the content of the static text resource."))
            },
        ))
        .resource(ResourceRoute::new(
            resource("test://static-binary", "static-binary", "image/png"),
            |_, uri| async move {
                let blob =
                    BlobResourceContents { uri, blob: PNG.into(), ..Default::default() }.with_mime_type("image/png");
                Ok(vec![blob.into()])
            },
        ))
        .resource(ResourceRoute::new(
            resource("test://watched-resource", "watched-resource", "text/plain"),
            |_, uri| async move { Ok(text_contents(&uri, "text/plain", "Watched resource content")) },
        ))
        .resource_template(ResourceTemplateRoute::new(
            ResourceTemplate {
                uri_template: "test://template/{id}/data".into(),
                name: "template".into(),
                ..Default::default()
            }
            .with_mime_type("application/json")
            .with_description("Data for an id"),
            |_, uri, vars: BTreeMap<String, String>| async move {
                let id = &vars["id"];
                let body = json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
                Ok(text_contents(&uri, "application/json", &body.to_string()))
            },
        ));

    // Prompts.
    let prompt = |name: &str, arguments: &[&str]| {
        let mut prompt = Prompt::new(name);
        prompt.description = Some(format!("{name} fixture"));
        if !arguments.is_empty() {
            prompt.arguments = Some(
                arguments
                    .iter()
                    .map(|name| {
                        let mut argument = PromptArgument::new(*name);
                        argument.required = Some(true);
                        argument
                    })
                    .collect(),
            );
        }
        prompt
    };
    let messages = |messages: Vec<PromptMessage>| GetPromptResult::new(messages);
    builder = builder
        .prompt(PromptRoute::raw(prompt("test_simple_prompt", &[]), move |_, _| async move {
            Ok(messages(vec![PromptMessage::new(text("This is a simple prompt for testing."), Role::User)]))
        }))
        .prompt(PromptRoute::raw(prompt("test_prompt_with_arguments", &["arg1", "arg2"]), move |_, args| async move {
            let body = format!("Prompt with arguments: arg1='{}', arg2='{}'", args["arg1"], args["arg2"]);
            Ok(messages(vec![PromptMessage::new(text(body), Role::User)]))
        }))
        .prompt(PromptRoute::raw(
            prompt("test_prompt_with_embedded_resource", &["resourceUri"]),
            move |_, args| async move {
                let uri = &args["resourceUri"];
                Ok(messages(vec![
                    PromptMessage::new(
                        embedded(uri, "text/plain", "Embedded resource content for testing."),
                        Role::User,
                    ),
                    PromptMessage::new(text("Please process the embedded resource above."), Role::User),
                ]))
            },
        ))
        .prompt(PromptRoute::raw(prompt("test_prompt_with_image", &[]), move |_, _| async move {
            Ok(messages(vec![
                PromptMessage::new(image(), Role::User),
                PromptMessage::new(text("Please analyze the image above."), Role::User),
            ]))
        }))
        .prompt(PromptRoute::raw(prompt("test_input_required_result_prompt", &[]), move |ctx, _| async move {
            let schema =
                json!({ "type": "object", "properties": { "context": { "type": "string" } }, "required": ["context"] });
            let answer = ctx.elicit_with("user_context", form("What context should the prompt use?", schema)).await?;
            Ok(messages(vec![PromptMessage::new(text(format!("Context: {}", json!(answer.content))), Role::User)]))
        }))
        .completion(|_, params| async move {
            let prefix = params.argument.value.clone();
            let values = ["test", "testing", "tested", "value"]
                .into_iter()
                .filter(|v| v.starts_with(&prefix))
                .map(str::to_owned)
                .collect();
            Ok(CompleteResultCompletion::new(values))
        });
    // The skills extension's scenarios (`sep-2640-*`) read the skills shipped beside this file.
    Ok(task_tools(builder).skills(SkillRoute::scan(skills)?))
}
