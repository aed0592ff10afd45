//! What acts: `call` (typed arguments, progress, tasks), `read`, `prompt` and `complete`.

use std::collections::BTreeMap;
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mcp_client::types::{CallToolResult, CompleteRequestParamsRef, JsonObject, LoggingLevel};
use mcp_client::{CallOptions, Progress, ToolCall as Started};
use serde_json::{Value, json};

use super::super::arguments::{self, Shape};
use super::super::failure::{Failure, Kind, Outcome};
use super::super::render::{self, dim};
use super::Session;

pub struct ToolCall<'a> {
    pub tool: &'a str,
    pub words: &'a [String],
    /// `--args`: JSON, `@FILE` or `@-`.
    pub args: Option<&'a str>,
    pub task: bool,
    /// `--detach`: print the task's id instead of following it.
    pub detach: bool,
}

pub async fn call(session: Session, call: ToolCall<'_>) -> Outcome {
    let tools = session.client.all_tools().await.map_err(|e| session.failed(e))?;
    let Some(tool) = tools.iter().find(|t| t.name == call.tool) else {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        return Err(Failure::usage(format!("the server has no tool `{}`; its tools: {}", call.tool, names.join(", "))));
    };
    let schema = serde_json::to_value(&tool.input_schema).unwrap_or(Value::Null);
    let shape = Shape { what: format!("tool `{}`", call.tool), schema: &schema };
    let base = match call.args {
        Some(text) => json_object(text)?,
        None => JsonObject::new(),
    };
    let arguments = shape.arguments(base, call.words).map_err(Failure::usage)?;

    let progress = Arc::new(bar());
    let options = options(&progress, session.human());
    if call.task && !offers_tasks(&session) {
        return Err(Failure::usage(format!(
            "the server does not offer the tasks extension ({}): --task needs it (mcp does not speak \
             2025-11-25's task-augmented calls); call without --task",
            mcp_client::types::ext::TASKS
        )));
    }
    let result = if call.task {
        match session.client.call_tool_as_task(call.tool, &arguments, options).await.map_err(|e| session.failed(e))? {
            Started::Complete(result) => result,
            Started::Task(handle) if call.detach => {
                if session.json {
                    render::json(&json!({ "taskId": handle.id() }));
                } else if session.human() {
                    anstream::println!("{}", handle.id());
                }
                progress.finish_and_clear();
                return Ok(());
            }
            Started::Task(handle) => {
                anstream::eprintln!(
                    "{}",
                    dim(&format!("task {} started; `mcp tasks TARGET wait {}` follows it", handle.id(), handle.id()))
                );
                let handle = handle.on_status(task_status(&progress));
                handle.wait_or_cancel().await.map_err(|e| session.failed(e))?
            }
        }
    } else {
        session.client.call_tool_with(call.tool, &arguments, options).await.map_err(|e| session.failed(e))?
    };
    progress.finish_and_clear();
    show_result(&session, &result, || format!("the tool `{}` reported an error", call.tool))
}

/// Prints a tool's result (`--json`: as the protocol's JSON); an `isError` result is a
/// [`Kind::ToolError`] failure saying `what`.
pub fn show_result(session: &Session, result: &CallToolResult, what: impl FnOnce() -> String) -> Outcome {
    if session.json {
        render::json(result);
    } else if session.human() {
        render::call_result(result);
    }
    if result.is_error == Some(true) {
        return Err(Failure::new(Kind::ToolError, what()));
    }
    Ok(())
}

/// Whether the server declares the tasks extension.
fn offers_tasks(session: &Session) -> bool {
    let capabilities = serde_json::to_value(session.client.server_capabilities()).unwrap_or(Value::Null);
    capabilities["extensions"].get(mcp_client::types::ext::TASKS).is_some()
}

/// A spinner on stderr (drawn only on a terminal) that becomes a bar once a total is known.
pub fn bar() -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(ProgressStyle::with_template("{spinner} {msg}").unwrap_or_else(|_| ProgressStyle::default_spinner()));
    bar
}

fn options(progress: &Arc<ProgressBar>, human: bool) -> CallOptions {
    let bar = Arc::clone(progress);
    CallOptions::new()
        .on_progress(move |Progress { progress, total, message, .. }| {
            if let Some(total) = total {
                if bar.length().is_none() {
                    let style = ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}");
                    bar.set_style(style.unwrap_or_else(|_| ProgressStyle::default_bar()));
                }
                bar.set_length(total.max(0.0) as u64);
            }
            bar.set_position(progress.max(0.0) as u64);
            bar.set_message(message.unwrap_or_default());
        })
        .on_task_status(task_status(progress))
        .on_log(move |log| {
            if human {
                let data = log.data.as_str().map_or_else(|| log.data.to_string(), str::to_owned);
                let logger = log.logger.map(|l| format!("{l}: ")).unwrap_or_default();
                anstream::eprintln!(
                    "{}",
                    dim(&format!("[{}] {logger}{data}", json!(log.level).as_str().unwrap_or("")))
                );
            }
        })
        .log_level(LoggingLevel::Info)
}

/// A task's state on the progress line: `task ID: working (statusMessage)`.
pub fn task_status(
    progress: &Arc<ProgressBar>,
) -> impl Fn(&mcp_client::types::ext::tasks::GetTaskResult) + Send + Sync + 'static {
    let bar = Arc::clone(progress);
    move |state| {
        let value = serde_json::to_value(state).unwrap_or(Value::Null);
        let status = value["status"].as_str().unwrap_or("?");
        let message = value["statusMessage"].as_str().map(|m| format!(" ({m})")).unwrap_or_default();
        bar.set_message(format!("task {}: {status}{message}", value["taskId"].as_str().unwrap_or("?")));
        bar.tick();
    }
}

/// `--args`: a JSON object given inline, in a file (`@FILE`) or on stdin (`@-`).
fn json_object(text: &str) -> Outcome<JsonObject> {
    let text = match text.strip_prefix('@') {
        Some("-") => {
            std::io::read_to_string(std::io::stdin()).map_err(|e| Failure::usage(format!("--args @-: {e}")))?
        }
        Some(path) => std::fs::read_to_string(path).map_err(|e| Failure::usage(format!("--args @{path}: {e}")))?,
        None => text.to_owned(),
    };
    match serde_json::from_str(&text) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(other) => Err(Failure::usage(format!("--args must be a JSON object, not {other}"))),
        Err(error) => Err(Failure::usage(format!("--args is not JSON: {error}"))),
    }
}

pub async fn read(session: Session, uri: &str) -> Outcome {
    let result = session.client.read_resource(uri).await.map_err(|e| session.failed(e))?;
    if session.json {
        render::json(&result);
    } else if session.human() {
        for contents in &result.contents {
            let value = serde_json::to_value(contents).unwrap_or(Value::Null);
            match value.get("text").and_then(Value::as_str) {
                Some(text) => anstream::println!("{text}"),
                None => {
                    let size = value.get("blob").and_then(Value::as_str).map_or(0, |b| b.len() / 4 * 3);
                    let mime = value.get("mimeType").and_then(Value::as_str).unwrap_or("binary");
                    anstream::println!(
                        "{}",
                        dim(&format!("[{} {mime}, about {size} bytes; --json shows it]", value["uri"]))
                    );
                }
            }
        }
    }
    Ok(())
}

pub async fn prompt(session: Session, name: &str, words: &[String]) -> Outcome {
    let prompts = session.client.all_prompts().await.map_err(|e| session.failed(e))?;
    let Some(prompt) = prompts.iter().find(|p| p.name == name) else {
        let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
        return Err(Failure::usage(format!("the server has no prompt `{name}`; its prompts: {}", names.join(", "))));
    };
    let schema = arguments::prompt_schema(prompt.arguments.as_deref().unwrap_or_default());
    let shape = Shape { what: format!("prompt `{name}`"), schema: &schema };
    let arguments = shape.arguments(JsonObject::new(), words).map_err(Failure::usage)?;
    let result = session.client.get_prompt(name, &arguments).await.map_err(|e| session.failed(e))?;
    if session.json {
        render::json(&result);
    } else if session.human() {
        if let Some(description) = &result.description {
            anstream::println!("{}", dim(description));
        }
        for message in &result.messages {
            anstream::println!("{}", render::heading(json!(message.role).as_str().unwrap_or("")));
            let block: mcp_client::types::ContentBlock =
                serde_json::from_value(serde_json::to_value(&message.content).unwrap_or(Value::Null))
                    .map_err(|e| Failure::new(Kind::Protocol, format!("a prompt message's content: {e}")))?;
            render::content_block(&block);
        }
    }
    Ok(())
}

pub enum Reference<'a> {
    Prompt(&'a str),
    Template(&'a str),
}

pub struct Completion<'a> {
    pub reference: Reference<'a>,
    pub argument: &'a str,
    pub prefix: &'a str,
    pub context: &'a [String],
}

pub async fn complete(session: Session, completion: Completion<'_>) -> Outcome {
    let reference = match completion.reference {
        Reference::Prompt(name) => json!({"type": "ref/prompt", "name": name}),
        Reference::Template(uri) => json!({"type": "ref/resource", "uri": uri}),
    };
    let reference: CompleteRequestParamsRef =
        serde_json::from_value(reference).map_err(|e| Failure::usage(format!("the reference: {e}")))?;
    let mut context = BTreeMap::new();
    for pair in completion.context {
        let (key, value) =
            pair.split_once('=').ok_or_else(|| Failure::usage(format!("--context {pair:?} is not key=value")))?;
        context.insert(key.to_owned(), value.to_owned());
    }
    let result = session
        .client
        .complete(reference, completion.argument, completion.prefix, context)
        .await
        .map_err(|e| session.failed(e))?;
    if session.json {
        render::json(&result);
    } else if session.human() {
        for value in &result.completion.values {
            anstream::println!("{value}");
        }
        if result.completion.has_more == Some(true) {
            anstream::println!("{}", dim("(more)"));
        }
    }
    Ok(())
}
