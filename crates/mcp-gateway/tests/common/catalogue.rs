//! A large catalogue of tools like those of real servers: a dozen known tools (what natural
//! queries should find) among about a thousand generated ones of many services, which share
//! their verbs and many of their words. Used by tests/integration/search.rs and benches/search.rs.
#![allow(dead_code)]

use std::sync::Arc;

use mcp_server::dynamic::{ToolFuture, ToolSource};
use mcp_server::types::{CallToolRequestParams, ObjectSchema, Tool};
use mcp_server::{Context, Principal, Server, text_result};
use serde_json::{Value, json};

/// A known tool: its name, description, arguments (name, description), and a query in words
/// that should find it.
pub struct Known {
    pub name: &'static str,
    pub description: &'static str,
    pub arguments: &'static [(&'static str, &'static str)],
    pub query: &'static str,
}

/// The known tools and the queries that should find each.
pub const KNOWN: &[Known] = &[
    Known {
        name: "files_delete_file",
        description: "Delete a file at the given path. The file cannot be recovered.",
        arguments: &[("path", "Absolute path of the file")],
        query: "delete a file",
    },
    Known {
        name: "weather_get_forecast",
        description: "Get the weather forecast for a city: temperature, rain and wind for the next days.",
        arguments: &[("city", "City name, e.g. Paris"), ("days", "How many days ahead (1-10)")],
        query: "weather forecast for a city",
    },
    Known {
        name: "money_convert",
        description: "Convert an amount from one currency to another at today's exchange rate.",
        arguments: &[("amount", "The amount to convert"), ("from", "ISO 4217 code"), ("to", "ISO 4217 code")],
        query: "convert currency",
    },
    Known {
        name: "github_createIssue",
        description: "Open a new issue in a GitHub repository with a title and body.",
        arguments: &[("repo", "owner/name"), ("title", "Issue title"), ("body", "Markdown body")],
        query: "open a github issue",
    },
    Known {
        name: "slack_post_message",
        description: "Post a message to a Slack channel.",
        arguments: &[("channel", "Channel name or id"), ("text", "The message")],
        query: "send a message to a slack channel",
    },
    Known {
        name: "calendar_schedule_meeting",
        description: "Schedule a meeting in the calendar and invite attendees.",
        arguments: &[("start", "Start time, RFC 3339"), ("attendees", "Email addresses of the attendees")],
        query: "schedule a meeting with attendees",
    },
    Known {
        name: "mail_send_email",
        description: "Send an email to one or more recipients.",
        arguments: &[("to", "Recipient addresses"), ("subject", "Subject line"), ("body", "Plain text body")],
        query: "send an email",
    },
    Known {
        name: "lang_translate_text",
        description: "Translate text into another language.",
        arguments: &[("text", "The text"), ("target_language", "Language to translate into")],
        query: "translate text to french",
    },
    Known {
        name: "db_run_sql",
        description: "Run a read-only SQL query against the analytics database and return the rows.",
        arguments: &[("sql", "The SELECT statement")],
        query: "run a sql query on the database",
    },
    Known {
        name: "maps_get_directions",
        description: "Driving, walking or transit directions between two places.",
        arguments: &[("origin", "Start address"), ("destination", "End address")],
        query: "directions from home to the airport",
    },
    Known {
        name: "stocks_get_quote",
        description: "Latest stock price of a ticker symbol.",
        arguments: &[("symbol", "Ticker, e.g. AAPL")],
        query: "current stock price of apple",
    },
    Known {
        name: "clock_current_time",
        description: "The current date and time in a time zone.",
        arguments: &[("timezone", "IANA time zone, e.g. Europe/Paris")],
        query: "what time is it in tokyo timezone",
    },
    Known {
        name: "k8s_restart_deployment",
        description: "Restart a Kubernetes deployment by rolling its pods.",
        arguments: &[("namespace", "Namespace"), ("deployment", "Deployment name")],
        query: "restart kubernetes deployment",
    },
];

const SERVICES: &[&str] = &[
    "crm",
    "billing",
    "inventory",
    "hr",
    "jira",
    "notion",
    "drive",
    "storage",
    "docker",
    "support",
    "shop",
    "analytics",
    "ads",
    "cms",
    "forms",
    "survey",
    "wiki",
    "vault",
    "dns",
    "cdn",
    "ci",
    "logs",
    "metrics",
    "alerts",
    "backup",
    "search",
    "chat",
    "video",
    "photos",
    "music",
    "travel",
    "fleet",
    "iot",
    "legal",
    "payroll",
    "sales",
    "tasks",
    "notes",
    "contacts",
    "tickets",
];

const VERBS: &[(&str, &str)] = &[
    ("get", "Get"),
    ("list", "List every"),
    ("create", "Create"),
    ("update", "Update"),
    ("delete", "Delete"),
    ("search", "Search for"),
    ("archive", "Archive"),
    ("export", "Export"),
];

const NOUNS: &[&str] = &[
    "record",
    "user",
    "project",
    "invoice",
    "order",
    "document",
    "report",
    "comment",
    "label",
    "team",
    "webhook",
    "dashboard",
    "attachment",
    "folder",
    "permission",
    "template",
    "note",
    "contact",
    "account",
    "customer",
    "product",
    "campaign",
    "workflow",
    "snapshot",
    "secret",
    "token",
    "container",
    "volume",
    "channel",
    "playlist",
    "photo",
    "album",
    "device",
    "policy",
    "contract",
    "payslip",
    "lead",
    "task",
    "page",
    "ticket",
];

/// About a thousand generated tools (each service has 8 verbs of 4 of the nouns) and the known
/// ones, `count` in all at least (more services' worth are generated, numbered, to reach it).
pub fn tools(count: usize) -> Vec<Tool> {
    let mut tools: Vec<Tool> = KNOWN.iter().map(|known| tool(known.name, known.description, known.arguments)).collect();
    let mut round = 0;
    while tools.len() < count {
        for (s, service) in SERVICES.iter().enumerate() {
            let service = if round == 0 { service.to_string() } else { format!("{service}{round}") };
            for n in 0..4 {
                let noun = NOUNS[(s * 7 + n * 3 + round) % NOUNS.len()];
                for (verb, said) in VERBS {
                    let name = format!("{service}_{verb}_{noun}");
                    let description = format!(
                        "{said} {noun}{} in {service}. Needs a {service} account; the {noun} is named by its id.",
                        if *verb == "list" { "s" } else { "" }
                    );
                    let id = format!("{noun}_id");
                    let arguments = [(id.as_str(), "Its id"), ("workspace", "The workspace")];
                    tools.push(tool(&name, &description, &arguments));
                }
            }
        }
        round += 1;
    }
    tools
}

pub fn tool(name: &str, description: &str, arguments: &[(&str, &str)]) -> Tool {
    let properties: serde_json::Map<String, Value> = arguments
        .iter()
        .map(|(name, description)| (name.to_string(), json!({ "type": "string", "description": description })))
        .collect();
    let required: Vec<&str> = arguments.iter().map(|(name, _)| *name).collect();
    let schema = json!({ "type": "object", "properties": properties, "required": required });
    Tool { description: Some(description.to_owned()), ..Tool::new(ObjectSchema::from_value(schema).unwrap(), name) }
}

/// A server listing `tools`, each call answered `<server> <tool> <arguments as JSON>`.
pub struct Listed {
    pub who: String,
    pub tools: Arc<[Tool]>,
}

impl ToolSource for Listed {
    fn lists_depend_on_caller(&self) -> bool {
        false
    }

    fn tools(&self, _caller: &Principal) -> Arc<[Tool]> {
        Arc::clone(&self.tools)
    }

    fn call(&self, _ctx: Context, params: CallToolRequestParams) -> ToolFuture {
        let known = self.tools.iter().any(|tool| tool.name == params.name);
        let answer = format!("{} {} {}", self.who, params.name, serde_json::to_string(&params.arguments).unwrap());
        Box::pin(std::future::ready(match known {
            true => Ok(text_result(answer)),
            false => Err(mcp_server::Error::invalid_params(format!("Unknown tool: {}", params.name))),
        }))
    }
}

pub fn server(who: &str, tools: Vec<Tool>) -> Server {
    let listed = Listed { who: who.to_owned(), tools: Arc::from(tools) };
    Server::builder(who, "1.0.0").tool_source(Arc::new(listed) as Arc<dyn ToolSource>).build().unwrap()
}

/// `tools` split into `parts` lists of about equal length.
pub fn split(tools: Vec<Tool>, parts: usize) -> Vec<Vec<Tool>> {
    let mut lists: Vec<Vec<Tool>> = (0..parts).map(|_| Vec::new()).collect();
    for (at, tool) in tools.into_iter().enumerate() {
        lists[at % parts].push(tool);
    }
    lists
}
