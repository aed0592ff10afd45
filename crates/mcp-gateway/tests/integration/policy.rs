//! `[[policy]]` rules in CEL, with real upstreams (mcp-server over loopback HTTP) and callers
//! whose tokens the gateway introspects (their `groups` claim and scopes): the two examples a team
//! writes first ("only members of ops may call `*_delete`", "arguments.path must start with
//! /srv"), lists filtered by them, a syntax error refused at start, and a bypass attempted through
//! every way of reaching an entry.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt as _;
use mcp_client::{Client, EraPreference};
use mcp_gateway::{Gateway, StartError};
use mcp_server::types::{
    CompleteRequestParamsRef, CompleteResultCompletion, PromptReference, Resource, ResourceTemplate,
    ResourceTemplateReference, SubscriptionFilter, ToolAnnotations,
};
use mcp_server::{Context, Error, PromptRoute, ResourceRoute, ResourceTemplateRoute, Server, SkillRoute, ToolRoute};
use serde_json::{Value, json};

use crate::common;
use common::{Upstream, Whom, config};

/// A path.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Path {
    path: String,
}

/// Reads, deletes (a destructive tool) and a slow call that waits for the test to let it end.
fn files(gate: Arc<tokio::sync::Semaphore>) -> Server {
    let destructive = ToolAnnotations { destructive_hint: Some(true), ..Default::default() };
    Server::builder("files", "1.0.0")
        .tool(ToolRoute::new("read", |_: Context, Path { path }: Path| async move {
            Ok::<_, Error>(format!("read {path}"))
        }))
        .tool(
            ToolRoute::new("delete", |_: Context, Path { path }: Path| async move {
                Ok::<_, Error>(format!("deleted {path}"))
            })
            .annotations(destructive),
        )
        .tool(ToolRoute::new("slow", move |_: Context, Path { path }: Path| {
            let gate = Arc::clone(&gate);
            async move {
                let _permit = gate.acquire().await.map_err(|e| Error::failed(e.to_string()))?;
                Ok::<_, Error>(format!("slow {path}"))
            }
        }))
        .build()
        .unwrap()
}

/// A prompt, a resource, a template, completions and three skills: every other kind of entry.
fn vault() -> Server {
    let skills = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mcp-server/examples/skills");
    Server::builder("vault", "1.0.0")
        .prompt(PromptRoute::new("unlock", |_: Context, Whom { name }: Whom| async move {
            Ok::<_, Error>(format!("Unlock for {name}."))
        }))
        .resource(ResourceRoute::new(
            Resource { uri: "vault://readme".into(), name: "readme".into(), ..Default::default() },
            |_: Context, _uri: String| async move { Ok::<_, Error>("the vault's readme".to_owned()) },
        ))
        .resource_template(ResourceTemplateRoute::new(
            ResourceTemplate {
                uri_template: "vault://secrets/{name}".into(),
                name: "secret".into(),
                ..Default::default()
            },
            |_: Context, _uri: String, vars: BTreeMap<String, String>| async move {
                Ok::<_, Error>(format!("the secret {}", vars["name"]))
            },
        ))
        .completion(|_: Context, _params| async move {
            Ok::<_, Error>(CompleteResultCompletion { values: vec!["root".into()], ..Default::default() })
        })
        .skills(SkillRoute::scan(skills).unwrap())
        .build()
        .unwrap()
}

const RULES: &str = r#"
[[policy]]
name = "ops-delete"
when = 'entry.name.endsWith("_delete")'
allow = '"ops" in principal.claims.groups'

[[policy]]
name = "srv-only"
when = 'upstream == "files" && method == "tools/call"'
allow = 'arguments.path.startsWith("/srv")'

[[policy]]
name = "vault-ops"
when = 'upstream == "vault"'
allow = '"ops" in principal.claims.?groups.orValue([])'

[[policy]]
name = "destructive-needs-write"
when = 'entry.annotations.?destructiveHint.orValue(false)'
allow = '"files:write" in principal.scopes'
scopes = ["files:write"]
"#;

/// Who is who: each token's claims, as the introspection endpoint answers them.
fn claims(token: &str) -> Value {
    match token {
        "alice" => json!({ "sub": "alice", "groups": ["ops"], "scope": "mcp files:write" }),
        "bob" => json!({ "sub": "bob", "groups": ["dev"], "scope": "mcp files:write" }),
        // In ops, but without the scope that destructive tools need.
        "dave" => json!({ "sub": "dave", "groups": ["ops"], "scope": "mcp" }),
        _ => json!({ "sub": token, "scope": "mcp" }),
    }
}

/// The gateway in front of both upstreams, behind introspected tokens, with [`RULES`] and
/// `extra` configuration; its URL, and where its audit log is.
struct Setup {
    url: String,
    audit: std::path::PathBuf,
    gate: Arc<tokio::sync::Semaphore>,
    /// The configuration it was started with.
    config: String,
    gateway: Gateway,
    _upstreams: (Upstream, Upstream),
}

async fn setup(extra: &str) -> Setup {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let (files, vault) = (Upstream::start(files(Arc::clone(&gate)), 0), Upstream::start(vault(), 0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let endpoint = common::introspection_with(url.clone(), claims).await;
    let issuer = endpoint.trim_end_matches("/introspect");
    let audit = std::env::temp_dir().join(format!(
        "mcp-gateway-policy-{}-{}.jsonl",
        std::process::id(),
        listener.local_addr().unwrap().port()
    ));
    let text = format!(
        "audit = \"{}\"\n{extra}\n\
         [authorization]\nresource = \"{url}\"\nissuer = \"{issuer}\"\n\
         introspection = {{ client_id = \"gw\", client_secret = \"s\", endpoint = \"{endpoint}\" }}\n\
         [[upstream]]\nname = \"files\"\nurl = \"{}\"\n\
         [[upstream]]\nname = \"vault\"\nurl = \"{}\"\n{RULES}",
        audit.display(),
        files.url,
        vault.url
    );
    let gateway = Gateway::start(&config(&text)).await.unwrap();
    tokio::spawn(mcp_server::http::serve(listener, gateway.server().clone(), gateway.http_config()));
    Setup { url, audit, gate, config: text, gateway, _upstreams: (files, vault) }
}

async fn as_who(url: &str, who: &str, era: EraPreference) -> Client {
    let builder = Client::builder("policy-test", "1.0.0").era(era).tasks(true);
    builder.http_header("Authorization", format!("Bearer {who}")).connect_http(url).await.unwrap()
}

async fn tools(client: &Client) -> Vec<String> {
    client.clear_cache();
    let mut names: Vec<String> = client.all_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    names.sort();
    names
}

async fn text(client: &Client, tool: &str, arguments: Value) -> String {
    let result = client.call_tool(tool, arguments).await.unwrap_or_else(|e| panic!("{tool}: {e}"));
    serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap().to_owned()
}

/// The JSON-RPC error of a refused request, checked to name `rule`.
fn refused_by<T: std::fmt::Debug>(outcome: Result<T, mcp_client::Error>, rule: &str) -> mcp_types::ErrorObject {
    match outcome {
        Err(mcp_client::Error::Rpc { error, .. }) => {
            assert_eq!(error.message, format!("Forbidden by the gateway's policy rule `{rule}`"), "{error:?}");
            assert_eq!(error.code, -32600, "{error:?}");
            assert_eq!(error.data.as_ref().map(|d| d["policy"].clone()), Some(json!(rule)), "{error:?}");
            error
        }
        other => panic!("not refused by `{rule}`: {other:?}"),
    }
}

/// The URIs a modern `subscriptions/listen` for `uri` is acknowledged for.
async fn acknowledged(client: &Client, uri: &str) -> Vec<String> {
    let filter = SubscriptionFilter { resource_subscriptions: Some(vec![uri.into()]), ..Default::default() };
    let mut listening = client.listen(filter).await.unwrap();
    match listening.next().await {
        Some(Ok(mcp_types::ServerNotification::SubscriptionsAcknowledged(ack))) => {
            ack.params.notifications.resource_subscriptions.unwrap_or_default()
        }
        other => panic!("{uri}: {other:?}"),
    }
}

fn audited(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_two_example_rules_decide_calls_and_filter_the_lists() {
    let setup = setup("").await;
    let modern = EraPreference::Modern;
    let (alice, bob, dave) = (
        as_who(&setup.url, "alice", modern).await,
        as_who(&setup.url, "bob", modern).await,
        as_who(&setup.url, "dave", modern).await,
    );

    // Bob is not in ops: `files_delete` is not listed to him. Dave is, but lacks `files:write`,
    // which he may step up to: listed, as a tool needing a scope is.
    assert_eq!(tools(&alice).await, ["files_delete", "files_read", "files_slow"]);
    assert_eq!(tools(&bob).await, ["files_read", "files_slow"]);
    assert_eq!(tools(&dave).await, ["files_delete", "files_read", "files_slow"]);
    // What is listed depends on who asks: never for a shared cache.
    let page = bob.list_tools_page(None).await.unwrap();
    assert_eq!(page.cache_scope, Some(mcp_types::CacheScope::Private));

    assert_eq!(text(&alice, "files_delete", json!({"path": "/srv/old"})).await, "deleted /srv/old");
    refused_by(bob.call_tool("files_delete", json!({"path": "/srv/old"})).await, "ops-delete");
    // The arguments decide: outside /srv, or no path at all, is refused.
    assert_eq!(text(&bob, "files_read", json!({"path": "/srv/notes"})).await, "read /srv/notes");
    refused_by(alice.call_tool("files_read", json!({"path": "/etc/passwd"})).await, "srv-only");
    refused_by(alice.call_tool("files_read", json!({})).await, "srv-only");
    refused_by(alice.call_tool("files_read", json!({"path": 7})).await, "srv-only");
    // A rule with `scopes`: 403 naming them, so that Dave's client can step up.
    match dave.call_tool("files_delete", json!({"path": "/srv/old"})).await {
        Err(mcp_client::Error::HttpStatus { status: 403, body }) => {
            let body: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(body["error"], "insufficient_scope", "{body}");
            assert_eq!(body["error_description"], "the token lacks the scope(s) files:write", "{body}");
        }
        other => panic!("not a step-up: {other:?}"),
    }

    // The audit log names the rule that refused.
    let lines = audited(&setup.audit);
    let bobs = lines.iter().find(|l| l["principal"] == "bob" && l["name"] == "files_delete").expect("audited");
    assert_eq!(
        (&bobs["decision"], &bobs["rule"], &bobs["upstream"]),
        (&json!("denied"), &json!("ops-delete"), &json!("files"))
    );
    assert_eq!(bobs["reason"], "policy rule `ops-delete` does not allow it");
    let outside =
        lines.iter().find(|l| l["principal"] == "alice" && l["name"] == "files_read" && l["rule"] == "srv-only");
    assert!(outside.is_some(), "{lines:#?}");
    let allowed = lines.iter().find(|l| l["principal"] == "alice" && l["name"] == "files_delete").unwrap();
    assert_eq!((&allowed["decision"], &allowed["rule"]), (&json!("allowed"), &Value::Null));
    std::fs::remove_file(&setup.audit).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_a_bypass_through_every_kind_of_entry_is_refused() {
    let setup = setup("").await;
    let modern = EraPreference::Modern;
    let (alice, bob) = (as_who(&setup.url, "alice", modern).await, as_who(&setup.url, "bob", modern).await);

    // Alice (ops) reaches each entry of the vault: the rule is what stops Bob below.
    assert_eq!(alice.all_prompts().await.unwrap().len(), 1);
    assert!(alice.get_prompt("vault_unlock", json!({"name": "Ada"})).await.is_ok());
    assert!(alice.read_resource("vault://readme").await.is_ok());
    assert!(alice.read_resource("vault://secrets/root").await.is_ok());
    assert_eq!(alice.all_skills().await.unwrap().len(), 3);

    // Not listed to Bob: prompts, resources, templates, skills.
    assert!(bob.all_prompts().await.unwrap().is_empty());
    assert!(bob.all_resources().await.unwrap().is_empty());
    assert!(bob.all_resource_templates().await.unwrap().is_empty());
    assert!(bob.all_skills().await.unwrap().is_empty());
    // Nor reachable by name, URI, template or completion.
    refused_by(bob.get_prompt("vault_unlock", json!({"name": "Ada"})).await, "vault-ops");
    refused_by(bob.read_resource("vault://readme").await, "vault-ops");
    refused_by(bob.read_resource("vault://secrets/root").await, "vault-ops");
    // Completing: the server finds no such prompt or template among those listed to Bob.
    let prompt = CompleteRequestParamsRef::RefPrompt(PromptReference::new("vault_unlock"));
    let error = bob.complete(prompt.clone(), "name", "r", BTreeMap::new()).await.unwrap_err().to_string();
    assert!(error.contains("Unknown prompt: vault_unlock"), "{error}");
    let template = CompleteRequestParamsRef::RefResource(ResourceTemplateReference::new("vault://secrets/{name}"));
    let error = bob.complete(template.clone(), "name", "r", BTreeMap::new()).await.unwrap_err().to_string();
    assert!(error.contains("Unknown resource template: vault://secrets/{name}"), "{error}");
    assert!(alice.complete(prompt, "name", "r", BTreeMap::new()).await.is_ok());
    assert!(alice.complete(template, "name", "r", BTreeMap::new()).await.is_ok());
    // A skill by its URI, and a file of it.
    let skill = alice.all_skills().await.unwrap().into_iter().next().unwrap();
    assert!(bob.get_skill(&skill.uri).await.is_err());
    refused_by(bob.read_resource(&skill.uri).await, "vault-ops");
    let file = skill.uri.replace("SKILL.md", "README.md");
    refused_by(bob.read_resource(&file).await, "vault-ops");

    // Subscriptions: to a URI of the vault, in each era (unknown to Bob, as a read is refused).
    let legacy = as_who(&setup.url, "bob", EraPreference::Legacy).await;
    let filter =
        |uri: &str| SubscriptionFilter { resource_subscriptions: Some(vec![uri.into()]), ..Default::default() };
    for uri in ["vault://readme", "vault://secrets/root"] {
        let error = legacy.listen(filter(uri)).await.err().unwrap_or_else(|| panic!("{uri}: subscribed"));
        assert!(error.to_string().contains(&format!("Resource not found: {uri}")), "{error}");
        // A modern listen acknowledges only the URIs it will tell of: none.
        assert_eq!(acknowledged(&bob, uri).await, Vec::<String>::new(), "{uri}");
        assert_eq!(acknowledged(&alice, uri).await, [uri], "Alice may listen");
    }
    let allowed = as_who(&setup.url, "alice", EraPreference::Legacy).await.listen(filter("vault://readme")).await;
    assert!(allowed.is_ok(), "Alice may subscribe");

    // Tasks: Alice's call becomes a task (the upstream waits for the test); Bob cannot follow
    // it, nor make a call he may not make into a task.
    let started = alice.call_tool_as_task("files_slow", json!({"path": "/srv/big"}), Default::default()).await.unwrap();
    let mcp_client::ToolCall::Task(task) = started else { panic!("not a task") };
    let stolen = bob.task(task.id()).get().await;
    assert!(stolen.is_err(), "Bob read Alice's task: {stolen:?}");
    refused_by(
        bob.call_tool_as_task("files_delete", json!({"path": "/srv/x"}), Default::default()).await,
        "ops-delete",
    );
    refused_by(alice.call_tool_as_task("files_slow", json!({"path": "/etc"}), Default::default()).await, "srv-only");
    setup.gate.add_permits(1);
    let done = task.wait().await.unwrap();
    assert_eq!(serde_json::to_value(&done.content).unwrap()[0]["text"], "slow /srv/big");
    std::fs::remove_file(&setup.audit).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_search_mode_finds_and_calls_only_what_the_rules_allow() {
    let setup = setup("catalogue = \"search\"").await;
    let modern = EraPreference::Modern;
    let (alice, bob) = (as_who(&setup.url, "alice", modern).await, as_who(&setup.url, "bob", modern).await);
    let found = async |client: &Client, query: &str| -> Vec<String> {
        let result = client.call_tool("search_tools", json!({"query": query, "limit": 20})).await.unwrap();
        let tools = result.structured_content.unwrap()["tools"].as_array().unwrap().clone();
        tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    };
    assert!(found(&alice, "delete").await.contains(&"files_delete".to_owned()));
    assert!(!found(&bob, "delete").await.contains(&"files_delete".to_owned()));
    assert!(found(&bob, "read").await.contains(&"files_read".to_owned()));

    let call = |name: &str, path: &str| json!({"name": name, "arguments": {"path": path}});
    let result = alice.call_tool("call_tool", call("files_delete", "/srv/a")).await.unwrap();
    assert_eq!(serde_json::to_value(&result.content).unwrap()[0]["text"], "deleted /srv/a");
    refused_by(bob.call_tool("call_tool", call("files_delete", "/srv/a")).await, "ops-delete");
    refused_by(alice.call_tool("call_tool", call("files_read", "/etc/shadow")).await, "srv-only");
    // A direct call is the same call.
    refused_by(bob.call_tool("files_delete", json!({"path": "/srv/a"})).await, "ops-delete");
    // The audit log decides `call_tool` as the call it makes.
    let lines = audited(&setup.audit);
    let line = lines.iter().find(|l| l["principal"] == "bob" && l["name"] == "call_tool").expect("audited");
    assert_eq!(
        (&line["decision"], &line["rule"], &line["upstream"]),
        (&json!("denied"), &json!("ops-delete"), &json!("files"))
    );
    std::fs::remove_file(&setup.audit).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_that_does_not_compile_is_refused_at_start_with_where() {
    let toml = "[[policy]]\nname = \"typo\"\nwhen = 'upstream == \"files\"'\nallow = '''\n\"ops\" in\n  principal.claims.groups &&& true'''\n";
    // Refused when read…
    let error = mcp_gateway::Config::from_toml(toml).unwrap_err();
    assert!(error.starts_with("policy rule `typo`: `allow` at line 2, column 29: "), "{error}");
    // …and by `Gateway::start`, for a configuration built otherwise.
    let mut config = mcp_gateway::Config::from_toml("").unwrap();
    config.policies.push(mcp_gateway::config::PolicyRule {
        name: "typo".into(),
        when: None,
        allow: Some("entry.name.endsWith(".into()),
        deny: None,
        scopes: Vec::new(),
    });
    let Err(StartError::Config(error)) = Gateway::start(&config).await else { panic!("started") };
    assert!(error.starts_with("policy rule `typo`: `allow` at line 1, column "), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_the_rules_still_apply_to_an_empty_principal() {
    // No `[authorization]`: every caller is the empty principal (as the process on stdio is),
    // with no scopes and no claims.
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let files = Upstream::start(files(gate), 0);
    let gateway = Gateway::start(&config(&format!(
        "[[upstream]]\nname = \"files\"\nurl = \"{}\"\n\
         [[policy]]\nname = \"srv-only\"\nwhen = 'method == \"tools/call\"'\nallow = 'arguments.path.startsWith(\"/srv\")'\n\
         [[policy]]\nname = \"named-only\"\nwhen = 'entry.name.endsWith(\"_delete\")'\n\
         allow = 'principal.id != \"\" && size(principal.claims) > 0 && size(principal.scopes) > 0'\n",
        files.url
    )))
    .await
    .unwrap();
    let url = common::serve(&gateway).await;
    let client = common::client(&url, EraPreference::Modern).await;
    assert_eq!(tools(&client).await, ["files_read", "files_slow"]);
    assert_eq!(text(&client, "files_read", json!({"path": "/srv/a"})).await, "read /srv/a");
    refused_by(client.call_tool("files_read", json!({"path": "/home"})).await, "srv-only");
    refused_by(client.call_tool("files_delete", json!({"path": "/srv/a"})).await, "named-only");
}

/// The endpoint's metadata (`scopes_supported`) is built at start: a reload whose rules name
/// another scope applies the rules, and says that the metadata waits for a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_naming_a_new_scope_says_the_metadata_needs_a_restart() {
    let setup = setup("").await;
    let metadata_scopes = || async {
        let url = setup.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
        let metadata: Value = reqwest::get(url).await.unwrap().json().await.unwrap();
        metadata["scopes_supported"].clone()
    };
    assert_eq!(metadata_scopes().await, json!(["files:write"]));

    let same = setup.gateway.reload(&config(&setup.config)).await.unwrap();
    assert_eq!(same.restart_needed, Vec::<&str>::new());
    let renamed = setup.config.replace(r#"scopes = ["files:write"]"#, r#"scopes = ["files:admin"]"#);
    assert_ne!(renamed, setup.config);
    let reloaded = setup.gateway.reload(&config(&renamed)).await.unwrap();
    assert_eq!(reloaded.restart_needed, ["the endpoint metadata's scopes_supported"]);
    assert!(reloaded.to_string().contains("needs a restart"), "{reloaded}");
    assert_eq!(metadata_scopes().await, json!(["files:write"]), "the endpoint keeps what it was built with");
}
