//! What lasts or follows: `watch`, `tasks`, `skills`.

use std::io::Write as _;

use futures::StreamExt as _;
use mcp_client::types::{LoggingLevel, SubscriptionFilter};
use serde_json::{Value, json};

use super::super::failure::{Failure, Kind, Outcome};
use super::super::render::{self, dim, heading};
use super::Session;

/// Prints each change the server announces until Ctrl-C (or the server ends the stream).
pub async fn watch(session: Session, resources: &[String], level: &str) -> Outcome {
    let level: LoggingLevel = serde_json::from_value(json!(level)).map_err(|_| {
        Failure::usage(format!(
            "--level {level:?} is not one of debug, info, notice, warning, error, critical, alert, emergency"
        ))
    })?;
    let capabilities = serde_json::to_value(session.client.server_capabilities()).unwrap_or(Value::Null);
    // A 2026-07-28 server sends log messages with the request they concern, not on a stream.
    if capabilities.get("logging").is_some() && session.client.era() == mcp_client::Era::Legacy {
        session.client.set_log_level(level).await.map_err(|e| session.failed(e))?;
    }
    let mut filter = SubscriptionFilter::new();
    filter.tools_list_changed = Some(true);
    filter.prompts_list_changed = Some(true);
    filter.resources_list_changed = Some(true);
    if !resources.is_empty() {
        filter.resource_subscriptions = Some(resources.to_vec());
    }
    let mut notifications = session.client.listen(filter).await.map_err(|e| session.failed(e))?;
    // On stderr even for scripts: it tells them when the subscription is in place.
    anstream::eprintln!("{}", dim("watching; Ctrl-C stops"));
    while let Some(notification) = notifications.next().await {
        let notification = notification.map_err(|e| session.failed(e))?;
        let value = serde_json::to_value(&notification).unwrap_or(Value::Null);
        if session.json {
            // One object per line: a script reads them as they come.
            anstream::println!("{}", serde_json::to_string(&value).unwrap_or_default());
        } else if session.human() {
            anstream::println!("{}", describe(&value));
        }
        let _ = std::io::stdout().flush();
    }
    Ok(())
}

fn describe(value: &Value) -> String {
    let method = value.get("method").and_then(Value::as_str).unwrap_or("?");
    let params = value.get("params").cloned().unwrap_or(Value::Null);
    let time = chrono_free_now();
    match method {
        "notifications/tools/list_changed" => format!("{time} {}", heading("tools changed")),
        "notifications/prompts/list_changed" => format!("{time} {}", heading("prompts changed")),
        "notifications/resources/list_changed" => format!("{time} {}", heading("resources changed")),
        "notifications/resources/updated" => {
            format!("{time} {} {}", heading("updated"), params["uri"].as_str().unwrap_or(""))
        }
        "notifications/message" => {
            let data = params["data"].as_str().map_or_else(|| params["data"].to_string(), str::to_owned);
            let logger = params["logger"].as_str().map(|l| format!("{l}: ")).unwrap_or_default();
            format!("{time} [{}] {logger}{data}", params["level"].as_str().unwrap_or(""))
        }
        _ if params.is_null() => format!("{time} {method}"),
        _ => format!("{time} {method} {params}"),
    }
}

/// Seconds since the epoch as `HH:MM:SS` (UTC), without a date crate.
fn chrono_free_now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    dim(&format!("{:02}:{:02}:{:02}", secs / 3600 % 24, secs / 60 % 60, secs % 60))
}

/// `tasks get ID`, `tasks cancel ID`, `tasks wait ID`.
pub async fn tasks(session: Session, words: &[String]) -> Outcome {
    let (action, id) = match words {
        [action, id] => (action.as_str(), id.as_str()),
        _ => {
            return Err(Failure::usage(
                "`mcp tasks TARGET (get|cancel|wait) TASK_ID` (the extension has no list: a task's id is \
                 printed when `mcp call` starts it)",
            ));
        }
    };
    let handle = session.client.task(id);
    match action {
        "get" => {
            let state = handle.get().await.map_err(|e| session.failed(e))?;
            let value = serde_json::to_value(&state).unwrap_or(Value::Null);
            if session.json {
                render::json(&value);
            } else if session.human() {
                let status = value["status"].as_str().unwrap_or("?");
                let message = value["statusMessage"].as_str().map(|m| format!(": {m}")).unwrap_or_default();
                anstream::println!("{} {status}{message}", heading(id));
                anstream::println!("{}", dim(&format!("updated {}", value["lastUpdatedAt"].as_str().unwrap_or("?"))));
            }
            Ok(())
        }
        "cancel" => {
            handle.cancel().await.map_err(|e| session.failed(e))?;
            if session.json {
                render::json(&json!({"taskId": id, "cancelled": true}));
            } else if session.human() {
                anstream::println!("cancelled {id}");
            }
            Ok(())
        }
        "wait" => {
            let progress = std::sync::Arc::new(super::calls::bar());
            let handle = handle.on_status(super::calls::task_status(&progress));
            let result = handle.wait_or_cancel().await.map_err(|e| session.failed(e))?;
            progress.finish_and_clear();
            super::calls::show_result(&session, &result, || format!("task {id} ended with a tool error"))
        }
        other => Err(Failure::usage(format!("`mcp tasks` has no action {other:?}: use get, cancel or wait"))),
    }
}

/// `skills` (list), `skills get SKILL_URI` (its verified SKILL.md), `skills read SKILL_URI FILE_URI`.
pub async fn skills(session: Session, words: &[String]) -> Outcome {
    let client = &session.client;
    match words {
        [] | [_] if words.first().is_none_or(|w| w == "list") => {
            let skills = client.all_skills().await.map_err(|e| session.failed(e))?;
            if session.json {
                render::json(&json!({ "skills": skills }));
            } else if session.human() {
                let rows: Vec<Vec<String>> = skills
                    .iter()
                    .map(|s| {
                        vec![s.name().unwrap_or("").to_owned(), s.uri.clone(), render::summary(s.description(), 60)]
                    })
                    .collect();
                render::table(&["NAME", "URI", "DESCRIPTION"], &rows);
            }
            Ok(())
        }
        [action, uri] if action == "get" => {
            let entry = client.get_skill(uri).await.map_err(|e| session.failed(e))?;
            let loaded = client.load_skill(&entry).await.map_err(|e| session.failed(e))?;
            if session.json {
                render::json(&json!({ "skill": loaded.entry, "instructions": loaded.instructions }));
            } else if session.human() {
                anstream::println!("{}", loaded.instructions);
            }
            Ok(())
        }
        [action, uri, file] if action == "read" => {
            let entry = client.get_skill(uri).await.map_err(|e| session.failed(e))?;
            let bytes = client.read_skill_file(&entry, file).await.map_err(|e| session.failed(e))?;
            if !session.raw {
                std::io::stdout()
                    .write_all(&bytes)
                    .map_err(|e| Failure::new(Kind::Connection, format!("stdout: {e}")))?;
            }
            Ok(())
        }
        _ => Err(Failure::usage("`mcp skills TARGET [list | get SKILL_URI | read SKILL_URI FILE_URI]`")),
    }
}
