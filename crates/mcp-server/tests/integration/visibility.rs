//! One visibility decision on every path by which an entry reaches a caller (issue 42, item 1).
//!
//! Mallory's token lacks `secret`, which the secret tool, task tool, prompt, resource and template
//! declare; a source shows its skill and its file only to tokens with `secret`; the server lists
//! only what a token permits. Every request method of both eras (read from the official schemas,
//! plus the extensions' methods) is tried against the secret entries, and a method this table
//! does not cover fails the test: a new method cannot skip the decision unnoticed. Alice, whose
//! token has `secret`, reaches the same entries, so that no refusal below is vacuous.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use common::*;
use mcp_server::dynamic::{ReadFuture, ResourceSource, SkillSource};
use mcp_server::types::ext::skills::Skill;
use mcp_server::types::ext::{SKILLS, TASKS};
use mcp_server::types::{Resource, ResourceTemplate};
use mcp_server::{
    Connection, Context, Error, IntoResourceContents, NoArguments, Options, Principal, PromptRoute, ResourceRoute,
    ResourceTemplateRoute, Server, TaskSupport, ToolRoute, VerifiedToken,
};
use serde_json::{Value, json};

const LEGACY: &str = "2025-11-25";
const SECRET_DOC: &str = "secret://doc";
const SECRET_ITEM: &str = "secret://items/7";
const VAULT_SKILL: &str = "skill://vault/SKILL.md";
const VAULT_FILE: &str = "skill://vault/notes.md";

/// A skill and its one file, seen only by tokens with `secret`.
struct Vault;

fn may_open_vault(caller: &Principal) -> bool {
    caller.token().is_some_and(|token| token.has_scope("secret"))
}

impl SkillSource for Vault {
    fn skills(&self, caller: &Principal) -> Arc<[Skill]> {
        if !may_open_vault(caller) {
            return Arc::from(Vec::new());
        }
        let skill = json!({
            "uri": VAULT_SKILL,
            "frontmatter": { "name": "vault", "description": "Secrets" },
            "resources": [{ "uri": VAULT_FILE, "digest": format!("sha256:{}", "0".repeat(64)), "size": 1 }],
        });
        Arc::from(vec![serde_json::from_value(skill).expect("a skill")])
    }
}

impl ResourceSource for Vault {
    fn resources(&self, caller: &Principal) -> Arc<[Resource]> {
        match may_open_vault(caller) {
            true => Arc::from(vec![Resource { uri: VAULT_FILE.into(), name: "notes".into(), ..Default::default() }]),
            false => Arc::from(Vec::new()),
        }
    }

    fn templates(&self, _caller: &Principal) -> Arc<[ResourceTemplate]> {
        Arc::from(Vec::new())
    }

    fn read(&self, ctx: Context, uri: String) -> ReadFuture {
        let allowed = may_open_vault(ctx.principal()) && uri == VAULT_FILE;
        Box::pin(async move {
            match allowed {
                true => Ok("x".to_owned().into_contents(&uri)),
                false => Err(Error::resource_not_found(&uri)),
            }
        })
    }
}

#[derive(serde::Deserialize, mcp_server::schemars::JsonSchema)]
struct Topic {
    #[allow(dead_code)]
    topic: String,
}

fn guarded() -> Server {
    let mut options = Options::default();
    options.list_only_permitted = true;
    let resource = |uri: &str| Resource { uri: uri.into(), name: uri.into(), ..Default::default() };
    let template =
        ResourceTemplate { uri_template: "secret://items/{id}".into(), name: "item".into(), ..Default::default() };
    Server::builder("guarded", "1.0.0")
        .options(options)
        .tool(ToolRoute::new("open_tool", |_: Context, _: NoArguments| async { Ok::<_, Error>("open".to_owned()) }))
        .tool(
            ToolRoute::new("secret_tool", |_: Context, _: NoArguments| async { Ok::<_, Error>("secret") })
                .scopes(["secret"]),
        )
        .tool(
            ToolRoute::new("secret_job", |ctx: Context, _: NoArguments| async move {
                ctx.run_as_task().await;
                std::future::pending::<()>().await;
                Ok::<_, Error>("never")
            })
            .task_support(TaskSupport::Required)
            .scopes(["secret"]),
        )
        .resource(ResourceRoute::new(resource("open://doc"), |_: Context, _: String| async {
            Ok::<_, Error>("open".to_owned())
        }))
        .resource(
            ResourceRoute::new(resource(SECRET_DOC), |_: Context, _: String| async {
                Ok::<_, Error>("secret".to_owned())
            })
            .scopes(["secret"]),
        )
        .resource_template(
            ResourceTemplateRoute::new(template, |_: Context, _: String, _| async {
                Ok::<_, Error>("item".to_owned())
            })
            .scopes(["secret"]),
        )
        .prompt(
            PromptRoute::new("secret_prompt", |_: Context, _: Topic| async { Ok::<_, Error>("secret".to_owned()) })
                .scopes(["secret"]),
        )
        .completion(|_: Context, _| async {
            Ok(serde_json::from_value(json!({ "values": ["revealed"] })).expect("a completion"))
        })
        .resource_source(Arc::new(Vault))
        .skill_source(Arc::new(Vault))
        .build()
        .expect("a valid server")
}

fn token_of(subject: &str, scope: &str) -> Principal {
    let claims = json!({ "sub": subject, "scope": scope });
    Principal::from_token(VerifiedToken::from_claims(claims.as_object().expect("an object").clone()))
}

fn mallory() -> Principal {
    token_of("mallory", "basic")
}

fn alice() -> Principal {
    token_of("alice", "basic secret")
}

fn client_as(server: &Server, principal: Principal) -> MemoryClient {
    let (server_end, client_end) = Connection::memory();
    let server = server.clone();
    tokio::spawn(async move { server.serve_as(server_end, principal).await });
    MemoryClient { connection: client_end }
}

/// The `_meta` of a modern request declaring the tasks and skills extensions.
fn extended() -> Value {
    meta_with(json!({ "extensions": { TASKS: {}, SKILLS: {} } }))
}

fn ext(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = extended();
    request(id, method, params)
}

/// The request methods of a revision's official schema (`ClientRequest`).
fn schema_methods(revision: &str) -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema").join(revision).join("schema.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run `cargo xtask codegen`)", path.display()));
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    let defs = &schema["$defs"];
    let variants = defs["ClientRequest"]["anyOf"].as_array().expect("ClientRequest is a union");
    let methods: BTreeSet<String> = variants
        .iter()
        .map(|variant| {
            let name = variant["$ref"].as_str().expect("a $ref").rsplit('/').next().expect("a name");
            defs[name]["properties"]["method"]["const"].as_str().expect("a method constant").to_owned()
        })
        .collect();
    assert!(methods.len() >= 10, "{revision}: {methods:?}");
    methods
}

fn refused(response: &Value) -> bool {
    response.get("error").is_some() && response.get("result").is_none()
}

fn names(response: &Value, list: &str, key: &str) -> Vec<String> {
    let entries = response["result"][list].as_array().unwrap_or_else(|| panic!("a list of {list}: {response}"));
    entries.iter().map(|entry| entry[key].as_str().expect("a name").to_owned()).collect()
}

#[tokio::test]
async fn every_request_method_of_both_eras_goes_through_the_visibility_decision() {
    let server = guarded();
    let mut checked = BTreeSet::new();
    let mut check = |method: &str| {
        checked.insert(method.to_owned());
    };
    let mut mallory_modern = client_as(&server, mallory());
    let mut alice_modern = client_as(&server, alice());

    // server/discover names no entry: its capabilities are the same for every caller.
    let discover = mallory_modern.ask(modern(1, "server/discover", json!({}))).await;
    assert!(!discover.to_string().contains("secret"), "{discover}");
    check("server/discover");

    // The four lists: left out, and marked private since they differ by caller.
    for (method, list, key, secret) in [
        ("tools/list", "tools", "name", "secret_tool"),
        ("resources/list", "resources", "uri", SECRET_DOC),
        ("resources/templates/list", "resourceTemplates", "uriTemplate", "secret://items/{id}"),
        ("prompts/list", "prompts", "name", "secret_prompt"),
    ] {
        let theirs = mallory_modern.ask(modern(2, method, json!({}))).await;
        assert!(!names(&theirs, list, key).contains(&secret.to_owned()), "{method}: {theirs}");
        assert_eq!(theirs["result"]["cacheScope"], "private", "{method}: {theirs}");
        let hers = alice_modern.ask(modern(2, method, json!({}))).await;
        assert!(names(&hers, list, key).contains(&secret.to_owned()), "{method}: {hers}");
        check(method);
    }
    let theirs = mallory_modern.ask(modern(3, "resources/list", json!({}))).await;
    assert!(!names(&theirs, "resources", "uri").contains(&VAULT_FILE.to_owned()), "{theirs}");

    // Calls, reads (by URI, by template, of a source's file) and prompts: refused.
    for (method, params) in [
        ("tools/call", json!({ "name": "secret_tool", "arguments": {} })),
        ("resources/read", json!({ "uri": SECRET_DOC })),
        ("resources/read", json!({ "uri": SECRET_ITEM })),
        ("resources/read", json!({ "uri": VAULT_FILE })),
        ("prompts/get", json!({ "name": "secret_prompt", "arguments": { "topic": "t" } })),
    ] {
        let theirs = mallory_modern.ask(modern(4, method, params.clone())).await;
        assert!(refused(&theirs), "{method} {params}: {theirs}");
        let hers = alice_modern.ask(modern(4, method, params.clone())).await;
        assert!(!refused(&hers), "{method} {params}: {hers}");
        check(method);
    }

    // Completions reveal what a prompt or template offers: refused like a call of it.
    for reference in [
        json!({ "type": "ref/prompt", "name": "secret_prompt" }),
        json!({ "type": "ref/resource", "uri": "secret://items/{id}" }),
    ] {
        let params = json!({ "ref": reference, "argument": { "name": "topic", "value": "" } });
        let theirs = mallory_modern.ask(modern(5, "completion/complete", params.clone())).await;
        assert!(refused(&theirs), "{params}: {theirs}");
        assert!(!theirs.to_string().contains("revealed"), "{theirs}");
        let hers = alice_modern.ask(modern(5, "completion/complete", params)).await;
        assert_eq!(hers["result"]["completion"]["values"], json!(["revealed"]), "{hers}");
    }
    check("completion/complete");

    // subscriptions/listen: only what the caller may hear of is acknowledged, and each update is
    // checked again (a subscription covers sub-resources: the empty prefix covers every URI).
    let subscriptions = json!([SECRET_DOC, SECRET_ITEM, VAULT_FILE, "open://doc", ""]);
    let params = json!({ "notifications": { "resourceSubscriptions": subscriptions } });
    mallory_modern.send(modern("listen", "subscriptions/listen", params.clone())).await;
    let ack = mallory_modern.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(ack["params"]["notifications"]["resourceSubscriptions"], json!(["open://doc"]), "{ack}");
    alice_modern.send(modern("listen", "subscriptions/listen", params)).await;
    let ack = alice_modern.recv().await;
    assert_eq!(
        ack["params"]["notifications"]["resourceSubscriptions"],
        json!([SECRET_DOC, SECRET_ITEM, VAULT_FILE, "open://doc"]),
        "{ack}"
    );
    for uri in [SECRET_DOC, SECRET_ITEM, VAULT_FILE, "never://listed"] {
        server.notify_resource_updated(uri);
    }
    server.notify_resource_updated("open://doc");
    let update = mallory_modern.recv().await;
    assert_eq!(update["params"]["uri"], "open://doc", "the secret updates were left out: {update}");
    let mut heard = Vec::new();
    for _ in 0..4 {
        heard.push(alice_modern.recv().await["params"]["uri"].as_str().expect("a URI").to_owned());
    }
    assert_eq!(heard, [SECRET_DOC, SECRET_ITEM, VAULT_FILE, "open://doc"]);
    check("subscriptions/listen");

    // Skills: a source's skill, its directory and its file are unknown to whom it hides them.
    let mut mallory_ext = client_as(&server, mallory());
    let mut alice_ext = client_as(&server, alice());
    let theirs = mallory_ext.ask(ext(6, "skills/list", json!({}))).await;
    assert_eq!(theirs["result"]["skills"], json!([]), "{theirs}");
    assert_eq!(theirs["result"]["cacheScope"], "private", "{theirs}");
    let hers = alice_ext.ask(ext(6, "skills/list", json!({}))).await;
    assert_eq!(hers["result"]["skills"][0]["uri"], VAULT_SKILL, "{hers}");
    check("skills/list");
    let theirs = mallory_ext.ask(ext(7, "skills/get", json!({ "uri": VAULT_SKILL }))).await;
    assert!(refused(&theirs), "{theirs}");
    let hers = alice_ext.ask(ext(7, "skills/get", json!({ "uri": VAULT_SKILL }))).await;
    assert!(!refused(&hers), "{hers}");
    check("skills/get");
    let theirs = mallory_ext.ask(ext(8, "resources/directory/read", json!({ "uri": "skill://vault" }))).await;
    let unknown = mallory_ext.ask(ext(8, "resources/directory/read", json!({ "uri": "skill://nowhere" }))).await;
    assert!(refused(&theirs), "{theirs}");
    assert_eq!(
        theirs["error"]["message"].as_str().map(|m| m.replace("vault", "nowhere")),
        unknown["error"]["message"].as_str().map(str::to_owned),
        "worded as for a directory that does not exist"
    );
    let hers = alice_ext.ask(ext(8, "resources/directory/read", json!({ "uri": "skill://vault" }))).await;
    assert!(!refused(&hers), "{hers}");
    check("resources/directory/read");

    // Tasks: another principal's task is answered as an unknown id (tests/integration/tasks.rs checks every
    // transport); the task tool itself needs `secret`.
    let started = alice_ext.ask(ext(9, "tools/call", json!({ "name": "secret_job", "arguments": {} }))).await;
    assert_eq!(started["result"]["resultType"], "task", "{started}");
    let task_id = started["result"]["taskId"].as_str().expect("a task id").to_owned();
    let theirs = mallory_ext.ask(ext(10, "tools/call", json!({ "name": "secret_job", "arguments": {} }))).await;
    assert!(refused(&theirs), "{theirs}");
    let unknown = mallory_ext.ask(ext(11, "tasks/get", json!({ "taskId": "f".repeat(32) }))).await;
    let as_unknown = unknown["error"]["message"].as_str().expect("a message").replace(&"f".repeat(32), &task_id);
    for (method, params) in [
        ("tasks/get", json!({ "taskId": task_id })),
        ("tasks/cancel", json!({ "taskId": task_id })),
        ("tasks/update", json!({ "taskId": task_id, "inputResponses": {} })),
    ] {
        let theirs = mallory_ext.ask(ext(12, method, params)).await;
        assert_eq!(theirs["error"]["message"], as_unknown, "{method}: {theirs}");
        check(method);
    }
    let hers = alice_ext.ask(ext(13, "tasks/cancel", json!({ "taskId": task_id }))).await;
    assert!(!refused(&hers), "{hers}");

    // The legacy era.
    let mut mallory_legacy = client_as(&server, mallory());
    let init = mallory_legacy.ask(initialize(1, LEGACY, json!({}))).await;
    assert!(!init.to_string().contains("secret"), "{init}");
    mallory_legacy.send(notification("notifications/initialized", json!({}))).await;
    check("initialize");
    let ping = mallory_legacy.ask(request(2, "ping", json!({}))).await;
    assert_eq!(ping["result"], json!({}));
    check("ping");
    let level = mallory_legacy.ask(request(3, "logging/setLevel", json!({ "level": "debug" }))).await;
    assert_eq!(level["result"], json!({}), "names no entry: {level}");
    check("logging/setLevel");
    for (method, list, key, secret) in [
        ("tools/list", "tools", "name", "secret_tool"),
        ("resources/list", "resources", "uri", SECRET_DOC),
        ("resources/templates/list", "resourceTemplates", "uriTemplate", "secret://items/{id}"),
        ("prompts/list", "prompts", "name", "secret_prompt"),
    ] {
        let theirs = mallory_legacy.ask(request(4, method, json!({}))).await;
        assert!(!names(&theirs, list, key).contains(&secret.to_owned()), "legacy {method}: {theirs}");
    }
    for (method, params) in [
        ("tools/call", json!({ "name": "secret_tool", "arguments": {} })),
        ("resources/read", json!({ "uri": SECRET_ITEM })),
        ("prompts/get", json!({ "name": "secret_prompt", "arguments": { "topic": "t" } })),
        (
            "completion/complete",
            json!({ "ref": { "type": "ref/prompt", "name": "secret_prompt" }, "argument": { "name": "topic", "value": "" } }),
        ),
    ] {
        let theirs = mallory_legacy.ask(request(5, method, params.clone())).await;
        assert!(refused(&theirs), "legacy {method} {params}: {theirs}");
    }
    for uri in [SECRET_DOC, SECRET_ITEM, VAULT_FILE, "never://listed"] {
        let theirs = mallory_legacy.ask(request(6, "resources/subscribe", json!({ "uri": uri }))).await;
        assert!(refused(&theirs), "subscribe {uri}: {theirs}");
    }
    let open = mallory_legacy.ask(request(7, "resources/subscribe", json!({ "uri": "open://doc" }))).await;
    assert_eq!(open["result"], json!({}), "{open}");
    check("resources/subscribe");
    server.notify_resource_updated(SECRET_DOC);
    server.notify_resource_updated("open://doc");
    let update = mallory_legacy.recv().await;
    assert_eq!(update["params"]["uri"], "open://doc", "{update}");
    // Unsubscribing reveals nothing either: an unknown URI is unknown, a hidden one too.
    let theirs = mallory_legacy.ask(request(8, "resources/unsubscribe", json!({ "uri": VAULT_FILE }))).await;
    let unknown = mallory_legacy.ask(request(8, "resources/unsubscribe", json!({ "uri": "never://listed" }))).await;
    assert_eq!(code(&theirs), code(&unknown), "{theirs}");
    check("resources/unsubscribe");
    // The tasks methods of 2025-11-25 are not served: the extension's exist only from 2026-07-28.
    for method in ["tasks/get", "tasks/result", "tasks/cancel", "tasks/list"] {
        let theirs = mallory_legacy.ask(request(9, method, json!({ "taskId": task_id }))).await;
        assert_eq!(code(&theirs), -32601, "legacy {method}: {theirs}");
        check(method);
    }

    let mut methods = schema_methods("2026-07-28");
    methods.extend(schema_methods(LEGACY));
    // The extensions' requests (tasks, skills), from their types.
    use mcp_server::types::ext::skills::{GetSkillRequest, ListSkillsRequest, ReadResourceDirectoryRequest};
    use mcp_server::types::ext::tasks::{CancelTaskRequest, GetTaskRequest, UpdateTaskRequest};
    for method in [
        GetTaskRequest::METHOD,
        UpdateTaskRequest::METHOD,
        CancelTaskRequest::METHOD,
        ListSkillsRequest::METHOD,
        GetSkillRequest::METHOD,
        ReadResourceDirectoryRequest::METHOD,
    ] {
        methods.insert(method.to_owned());
    }
    let unchecked: Vec<&String> = methods.difference(&checked).collect();
    assert!(unchecked.is_empty(), "request methods with no visibility case here: {unchecked:?}");
}

/// A list is public only when every caller sees the same: the configured hint stands for a
/// server whose lists do not depend on the caller.
#[tokio::test]
async fn lists_are_public_only_when_every_caller_sees_the_same() {
    let open = Server::builder("open", "1.0.0")
        .tool(
            ToolRoute::new("secret_tool", |_: Context, _: NoArguments| async { Ok::<_, Error>("secret") })
                .scopes(["secret"]),
        )
        .build()
        .expect("a valid server");
    // Without list_only_permitted every caller sees every tool (a call needs the scope).
    let mut client = client_as(&open, mallory());
    let list = client.ask(modern(1, "tools/list", json!({}))).await;
    assert_eq!(list["result"]["cacheScope"], "public", "{list}");
    assert_eq!(names(&list, "tools", "name"), ["secret_tool"]);
}

/// The attack of issue 42: a caller listens to URIs it may not read (a scoped resource, a
/// template's, a source's hidden file) and to every URI (the empty prefix). Before, it heard
/// 3 of 3 updates; now 0 of 3.
#[tokio::test]
async fn listen_delivers_no_update_of_a_resource_the_caller_may_not_read() {
    let server = guarded();
    let mut mallory = client_as(&server, mallory());
    let subscriptions = json!([SECRET_DOC, SECRET_ITEM, VAULT_FILE, ""]);
    let params = json!({ "notifications": { "resourceSubscriptions": subscriptions } });
    mallory.send(modern("listen", "subscriptions/listen", params)).await;
    let ack = mallory.recv().await;
    assert_eq!(ack["params"]["notifications"]["resourceSubscriptions"], json!([]), "{ack}");
    let secret = [SECRET_DOC, SECRET_ITEM, VAULT_FILE];
    for uri in secret {
        server.notify_resource_updated(uri);
    }
    assert!(mallory.quiet().await, "0 of {} secret updates may arrive", secret.len());
    server.notify_resource_updated("open://doc");
    assert!(mallory.quiet().await, "not subscribed to it");
}

/// A scope name a challenge could not carry (here with a quote) was accepted on a route and
/// silently left out of its 403 challenge; now `build` refuses it, naming the route and the
/// scope, for each of the four kinds of route that take scopes (4/4 refused).
#[test]
fn a_route_scope_that_is_not_a_scope_token_is_refused_at_build() {
    type AddRoute = Box<dyn FnOnce(mcp_server::ServerBuilder) -> mcp_server::ServerBuilder>;
    let scopes = ["notes:write", "bad\"scope"];
    let resource = Resource { uri: "notes://a".into(), name: "a".into(), ..Default::default() };
    let template = ResourceTemplate { uri_template: "notes://{id}".into(), name: "n".into(), ..Default::default() };
    let routes: [(&str, AddRoute); 4] = [
        (
            "tool `t`",
            Box::new(move |b| {
                b.tool(ToolRoute::new("t", |_: Context, _: NoArguments| async { Ok::<_, Error>("x") }).scopes(scopes))
            }),
        ),
        (
            "resource `notes://a`",
            Box::new(move |b| {
                let read = |_: Context, _: String| async { Ok::<_, Error>("x".to_owned()) };
                b.resource(ResourceRoute::new(resource, read).scopes(scopes))
            }),
        ),
        (
            "resource template `notes://{id}`",
            Box::new(move |b| {
                let read = |_: Context, _: String, _| async { Ok::<_, Error>("x".to_owned()) };
                b.resource_template(ResourceTemplateRoute::new(template, read).scopes(scopes))
            }),
        ),
        (
            "prompt `p`",
            Box::new(move |b| {
                b.prompt(
                    PromptRoute::new("p", |_: Context, _: Topic| async { Ok::<_, Error>(String::new()) })
                        .scopes(scopes),
                )
            }),
        ),
    ];
    for (route, add) in routes {
        let error = add(Server::builder("s", "1.0.0")).build().err().expect(route).to_string();
        assert!(error.starts_with(route), "{error}");
        assert!(error.contains(r#""bad\"scope""#) && error.contains("scope-token"), "{error}");
    }
}
