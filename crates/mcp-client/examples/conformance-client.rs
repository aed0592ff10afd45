//! The client the official conformance suite drives: `conformance-client <server-url>`, with the
//! scenario in `MCP_CONFORMANCE_SCENARIO`, the revision in `MCP_CONFORMANCE_PROTOCOL_VERSION`
//! and scenario data (JSON) in `MCP_CONFORMANCE_CONTEXT`.

use std::process::ExitCode;

use mcp_client::auth::{AuthError, Es256Key, HeadlessAuthorizer, OAuth};
use mcp_client::types::ext::skills::SkillResources;
use mcp_client::types::{CreateMessageResult, CreateMessageResultContent, JsonObject, Role, TextContent};
use mcp_client::{Client, ElicitationModes, ElicitationResponse, EraPreference, Error, Handlers};
use serde_json::{Value, json};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    // The suite appends the URL as the last argument.
    let Some(url) = std::env::args().skip(1).next_back() else {
        eprintln!("usage: conformance-client <server-url>");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_else(|_| "2026-07-28".into());
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    match run(&url, &scenario, &version, &context).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{scenario}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn handlers() -> Handlers {
    Handlers::new()
        // Accept with nothing filled in: the client applies the schema's defaults.
        .elicitation(ElicitationModes::BOTH, |_| async { Ok(ElicitationResponse::accept(JsonObject::new())) })
        .sampling(Default::default(), |_| async {
            Ok(CreateMessageResult::new(
                CreateMessageResultContent::TextContent(TextContent::new(
                    "This is a test response from the conformance client.",
                )),
                "conformance-test-model",
                Role::Assistant,
            ))
        })
        .roots(|| async { Ok(vec![]) })
}

/// The OAuth configuration of an `auth/*` scenario: the headless authorizer (the suite's
/// authorization server redirects at once), credentials and keys from the context.
fn oauth(scenario: &str, version: &str, context: &Value) -> Result<Option<OAuth>, String> {
    let Some(scenario) = scenario.strip_prefix("auth/") else { return Ok(None) };
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    let required = |key: &str| text(key).ok_or_else(|| format!("MCP_CONFORMANCE_CONTEXT has no {key}"));
    let oauth = OAuth::builder()
        .client_name("mcp-rust-conformance-client")
        .redirect_uri("http://localhost:3000/callback")
        .client_metadata_url("https://conformance-test.local/client-metadata.json")
        .protocol_version(version)
        .authorizer(HeadlessAuthorizer::new());
    let oauth = match scenario {
        // Extensions (not scored): grants without a user, and DPoP on the code flow.
        "client-credentials-basic" => {
            oauth.client_id(required("client_id")?).client_secret(required("client_secret")?).client_credentials()
        }
        "client-credentials-jwt" => {
            let key = Es256Key::from_pem(&required("private_key_pem")?).map_err(|e| e.to_string())?;
            oauth.client_id(required("client_id")?).client_key(key).client_credentials()
        }
        "enterprise-managed-authorization" => oauth
            .client_id(required("client_id")?)
            .client_secret(required("client_secret")?)
            .enterprise_managed(required("idp_token_endpoint")?, required("idp_client_id")?, required("idp_id_token")?),
        // The context also has an expired and a wrong-audience token, for negative tests.
        "wif-jwt-bearer" => oauth.client_id(required("client_id")?).jwt_bearer(required("valid_jwt")?),
        "dpop" | "dpop-nonce" => oauth.dpop(true),
        // Pre-registration scenarios give credentials (and maybe the issuer they are for).
        _ => match text("client_id") {
            Some(client_id) => {
                let mut oauth = oauth.client_id(client_id);
                if let Some(secret) = text("client_secret") {
                    oauth = oauth.client_secret(secret);
                }
                if let Some(issuer) = text("issuer") {
                    oauth = oauth.client_issuer(issuer);
                }
                oauth
            }
            None => oauth,
        },
    };
    Ok(Some(oauth.build()))
}

async fn run(url: &str, scenario: &str, version: &str, context: &Value) -> Result<(), Error> {
    let era = if version >= "2026-07-28" { EraPreference::Modern } else { EraPreference::Legacy };
    let mut builder = Client::builder("mcp-rust-conformance-client", env!("CARGO_PKG_VERSION"))
        .protocol_versions([version])
        .era(era)
        .handlers(handlers());
    match oauth(scenario, version, context) {
        Ok(Some(oauth)) => builder = builder.oauth(oauth),
        Ok(None) => {}
        Err(e) => return Err(Error::Auth(AuthError::Internal(e))),
    }
    let client = builder.connect_http(url).await?;
    eprintln!("connected: {:?} {}", client.era(), client.protocol_version());
    if scenario.starts_with("sep-2640-client-") {
        let outcome = skills(&client, scenario).await;
        client.close().await;
        return outcome;
    }
    let tools = client.all_tools().await?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    eprintln!("tools: {names:?}");
    match scenario {
        "tools_call" => {
            print_result(&client, "add_numbers", json!({"a": 5, "b": 3})).await?;
        }
        "elicitation-sep1034-client-defaults" => {
            print_result(&client, "test_client_elicitation_defaults", json!({})).await?;
        }
        "sse-retry" => {
            print_result(&client, "test_reconnection", json!({})).await?;
        }
        "sep-2322-client-request-state" => {
            for name in
                ["test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"]
            {
                if names.contains(&name) {
                    print_result(&client, name, json!({})).await?;
                }
            }
        }
        "http-standard-headers" => {
            for tool in &tools {
                print_result(&client, &tool.name, sample_arguments(&tool.input_schema.to_value())).await?;
            }
            for resource in client.all_resources().await.unwrap_or_default() {
                let read = client.read_resource(&resource.uri).await;
                eprintln!("read {}: {}", resource.uri, if read.is_ok() { "ok" } else { "failed" });
            }
            for prompt in client.all_prompts().await.unwrap_or_default() {
                let got = client.get_prompt(&prompt.name, ()).await;
                eprintln!("prompt {}: {}", prompt.name, if got.is_ok() { "ok" } else { "failed" });
            }
        }
        "http-custom-headers" => {
            for call in context.get("toolCalls").and_then(Value::as_array).into_iter().flatten() {
                let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
                let arguments = call.get("arguments").cloned().unwrap_or_else(|| json!({}));
                print_result(&client, name, arguments).await?;
            }
        }
        "http-invalid-tool-headers" => {
            // Invalid tools were left out of the list: call only what was kept.
            for tool in &tools {
                print_result(&client, &tool.name, sample_arguments(&tool.input_schema.to_value())).await?;
            }
        }
        "json-schema-2020-12-preservation" => {
            let schema = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .map(|t| t.input_schema.to_value())
                .unwrap_or_else(|| json!({}));
            print_result(&client, "json_schema_echo", json!({"schema": schema})).await?;
        }
        // Every auth scenario's server has one tool; calling it is an authorized request (and
        // the step-up scenario's second scope).
        auth if auth.starts_with("auth/") => {
            for tool in &tools {
                print_result(&client, &tool.name, json!({})).await?;
            }
        }
        // initialize, request-metadata, json-schema-ref-no-deref and anything else: connecting
        // and listing was the scenario.
        _ => {}
    }
    client.close().await;
    Ok(())
}

/// The skills extension's host scenarios: list the skills (reading nothing), then, except in
/// `sep-2640-client-no-prefetch`, load each one and read its other files only once `SKILL.md`
/// matched its entry.
async fn skills(client: &Client, scenario: &str) -> Result<(), Error> {
    let skills = client.all_skills().await?;
    eprintln!("skills: {:?}", skills.iter().map(|s| s.uri.as_str()).collect::<Vec<_>>());
    if scenario == "sep-2640-client-no-prefetch" {
        return Ok(());
    }
    for skill in &skills {
        match client.load_skill(skill).await {
            Ok(loaded) => {
                eprintln!("loaded {} ({} bytes)", skill.uri, loaded.instructions.len());
                if let SkillResources::Files(files) = &skill.resources {
                    for file in files.iter().filter(|f| f.uri != skill.uri) {
                        let read = client.read_skill_file(skill, &file.uri).await;
                        eprintln!("read {}: {}", file.uri, if read.is_ok() { "verified" } else { "refused" });
                    }
                }
            }
            // The refusal is the expected behaviour: nothing more of this skill is read.
            Err(e) => eprintln!("refused {}: {e}", skill.uri),
        }
    }
    Ok(())
}

async fn print_result(client: &Client, name: &str, arguments: Value) -> Result<(), Error> {
    let arguments = match arguments {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    let result = client.call_tool(name, Some(arguments)).await?;
    println!("{name}: {}", serde_json::to_string(&result).unwrap_or_default());
    Ok(())
}

/// Plausible arguments for a tool: a value for every required property.
fn sample_arguments(schema: &Value) -> Value {
    let mut args = JsonObject::new();
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            if !required.contains(&name.as_str()) {
                continue;
            }
            let value = match prop.get("type").and_then(Value::as_str) {
                Some("integer") | Some("number") => json!(1),
                Some("boolean") => json!(true),
                Some("object") => json!({}),
                Some("array") => json!([]),
                _ => json!("test"),
            };
            args.insert(name.clone(), value);
        }
    }
    Value::Object(args)
}
