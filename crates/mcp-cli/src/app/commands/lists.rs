//! What a server offers: `info`, `tools`, `resources`, `templates`, `prompts`, `ping`, and the
//! configured `servers`.

use mcp_client::{Era, TransportKind};
use serde_json::{Value, json};

use super::super::args::Global;
use super::super::arguments;
use super::super::failure::{Failure, Outcome};
use super::super::render::{self, bold, dim, heading};
use super::Session;

pub async fn info(session: Session) -> Outcome {
    let mut details = session.client.server();
    // Negotiation forced to 2026-07-28 (`--era modern`) goes on when `server/discover` fails:
    // info must not describe a modern server that never answered one.
    if details.era == Era::Modern && details.supported_versions.is_empty() {
        session.client.discover().await.map_err(|e| session.failed(e))?;
        details = session.client.server();
    }
    let era = match details.era {
        Era::Modern => "modern",
        Era::Legacy => "legacy",
    };
    let transport = match details.transport {
        TransportKind::Stdio => "stdio",
        TransportKind::StreamableHttp => "streamable-http",
        TransportKind::HttpSse => "http+sse",
        _ => "other",
    };
    let capabilities = serde_json::to_value(&details.capabilities).unwrap_or(Value::Null);
    if !session.human() {
        if session.json {
            render::json(&json!({
                "serverInfo": details.server_info,
                "era": era,
                "protocolVersion": details.protocol_version,
                "supportedVersions": details.supported_versions,
                "transport": transport,
                "capabilities": capabilities,
                "instructions": details.instructions,
            }));
        }
        return Ok(());
    }
    match &details.server_info {
        Some(info) => anstream::println!(
            "{} {}{}",
            heading(&info.name),
            info.version,
            info.title.as_deref().map(|t| format!(" ({t})")).unwrap_or_default()
        ),
        None => anstream::println!("{}", heading("(the server did not name itself)")),
    }
    anstream::println!("{}  {era}, {} over {transport}", bold("protocol"), details.protocol_version);
    if !details.supported_versions.is_empty() {
        anstream::println!("{}  {}", bold("supports"), details.supported_versions.join(", "));
    }
    let names: Vec<String> = capabilities
        .as_object()
        .map(|caps| caps.iter().map(|(name, value)| capability(name, value)).collect())
        .unwrap_or_default();
    anstream::println!("{}  {}", bold("offers"), if names.is_empty() { "nothing".into() } else { names.join(", ") });
    if let Some(instructions) = &details.instructions {
        anstream::println!("{}\n{instructions}", bold("instructions"));
    }
    Ok(())
}

/// `tools (listChanged)`, `extensions (io.modelcontextprotocol/tasks)`.
fn capability(name: &str, value: &Value) -> String {
    let flags: Vec<&str> = value
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(key, flag)| name == "extensions" || flag.as_bool() == Some(true) || key.as_str() == "subscribe")
        .map(|(key, _)| key.as_str())
        .collect();
    if flags.is_empty() { name.to_owned() } else { format!("{name} ({})", flags.join(", ")) }
}

pub async fn tools(session: Session, schema: bool) -> Outcome {
    let tools = session.client.all_tools().await.map_err(|e| session.failed(e))?;
    if session.json {
        render::json(&json!({ "tools": tools }));
        return Ok(());
    }
    if !session.human() {
        return Ok(());
    }
    if tools.is_empty() {
        anstream::println!("{}", dim("(no tools)"));
    }
    for tool in &tools {
        let value = serde_json::to_value(tool).unwrap_or(Value::Null);
        anstream::println!("{} {}", heading(&tool.name), dim(&signature(&value["inputSchema"])));
        if let Some(description) = &tool.description {
            anstream::println!("    {}", render::summary(Some(description), 96));
        }
        if schema {
            anstream::println!("    input: {}", compact(&value["inputSchema"]));
            if let Some(output) = value.get("outputSchema") {
                anstream::println!("    output: {}", compact(output));
            }
        }
    }
    Ok(())
}

fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// `city: string, days?: integer`, from an `inputSchema`.
fn signature(schema: &Value) -> String {
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let properties = schema.get("properties").and_then(Value::as_object);
    let arguments: Vec<String> = properties
        .into_iter()
        .flatten()
        .map(|(name, property)| {
            let optional = if required.contains(&name.as_str()) { "" } else { "?" };
            format!("{name}{optional}: {}", kind(schema, property))
        })
        .collect();
    format!("({})", arguments.join(", "))
}

/// A property's type for people: its enum's values, `string|null`, `integer[]`, through `$ref`s.
fn kind(root: &Value, property: &Value) -> String {
    let property = arguments::resolve(root, property);
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        let values: Vec<String> =
            values.iter().map(|v| v.as_str().map_or_else(|| v.to_string(), |s| format!("{s:?}"))).collect();
        return values.join("|");
    }
    if let Some(options) = property.get("anyOf").or_else(|| property.get("oneOf")).and_then(Value::as_array) {
        let mut kinds: Vec<String> = options.iter().map(|option| kind(root, option)).collect();
        kinds.dedup();
        return kinds.join("|");
    }
    match property.get("type").and_then(Value::as_str) {
        Some("array") => format!("{}[]", property.get("items").map_or("any".into(), |items| kind(root, items))),
        Some(_) => arguments::kinds(root, property).join("|"),
        None => match arguments::kinds(root, property) {
            kinds if kinds.is_empty() => "any".into(),
            kinds => kinds.join("|"),
        },
    }
}

pub async fn resources(session: Session) -> Outcome {
    let resources = session.client.all_resources().await.map_err(|e| session.failed(e))?;
    if session.json {
        render::json(&json!({ "resources": resources }));
    } else if session.human() {
        let rows: Vec<Vec<String>> = resources
            .iter()
            .map(|r| {
                vec![
                    r.uri.clone(),
                    r.name.clone(),
                    r.mime_type.clone().unwrap_or_default(),
                    render::summary(r.description.as_deref(), 60),
                ]
            })
            .collect();
        render::table(&["URI", "NAME", "TYPE", "DESCRIPTION"], &rows);
    }
    Ok(())
}

pub async fn templates(session: Session) -> Outcome {
    let templates = session.client.all_resource_templates().await.map_err(|e| session.failed(e))?;
    if session.json {
        render::json(&json!({ "resourceTemplates": templates }));
    } else if session.human() {
        let rows: Vec<Vec<String>> = templates
            .iter()
            .map(|t| vec![t.uri_template.clone(), t.name.clone(), render::summary(t.description.as_deref(), 60)])
            .collect();
        render::table(&["URI TEMPLATE", "NAME", "DESCRIPTION"], &rows);
    }
    Ok(())
}

pub async fn prompts(session: Session) -> Outcome {
    let prompts = session.client.all_prompts().await.map_err(|e| session.failed(e))?;
    if session.json {
        render::json(&json!({ "prompts": prompts }));
    } else if session.human() {
        let rows: Vec<Vec<String>> = prompts
            .iter()
            .map(|p| {
                let arguments: Vec<String> = p
                    .arguments
                    .iter()
                    .flatten()
                    .map(|a| if a.required == Some(true) { a.name.clone() } else { format!("[{}]", a.name) })
                    .collect();
                vec![p.name.clone(), arguments.join(" "), render::summary(p.description.as_deref(), 60)]
            })
            .collect();
        render::table(&["NAME", "ARGUMENTS", "DESCRIPTION"], &rows);
    }
    Ok(())
}

/// One round trip the server must answer: `ping` (legacy) or `server/discover` (2026-07-28,
/// which has no ping).
pub async fn ping(session: Session) -> Outcome {
    let started = std::time::Instant::now();
    session.client.check_alive().await.map_err(|e| session.failed(e))?;
    let millis = started.elapsed().as_secs_f64() * 1000.0;
    let method = if session.client.era() == Era::Legacy { "ping" } else { "server/discover" };
    if session.json {
        render::json(&json!({ "ok": true, "method": method, "milliseconds": millis }));
    } else if session.human() {
        anstream::println!("{} ({method}) in {millis:.1} ms", render::green("alive"));
    }
    Ok(())
}

/// The servers of the configuration file (`--config`), else of every file in the search order.
pub fn servers(global: &Global) -> Outcome {
    let files = match &global.config {
        Some(path) => vec![path.clone()],
        None => mcp_cli::target::search_order().into_iter().filter(|p| p.is_file()).collect(),
    };
    let mut all = serde_json::Map::new();
    let mut rows = Vec::new();
    for file in &files {
        let servers = mcp_cli::target::list(file).map_err(|e| Failure::usage(e.to_string()))?;
        for (name, target) in servers {
            rows.push(vec![name.clone(), target.describe(), file.display().to_string()]);
            all.entry(name).or_insert_with(|| json!({ "target": target.describe(), "file": file }));
        }
    }
    if global.json {
        render::json(&all);
    } else if rows.is_empty() {
        let order: Vec<String> = mcp_cli::target::search_order().iter().map(|p| p.display().to_string()).collect();
        anstream::println!("{}", dim(&format!("(no configured servers; looked in {})", order.join(", "))));
    } else {
        render::table(&["NAME", "SERVER", "FILE"], &rows);
    }
    Ok(())
}
