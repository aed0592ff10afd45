//! The audit log (`audit = "<path>"`): one JSON line per call, prompt, read and list, naming
//! the principal, the upstream, the method and entry, the decision (and why a request was
//! denied), its duration and its error.

use mcp_client::{Client, EraPreference};
use mcp_gateway::{Gateway, StartError};
use mcp_server::{Context, Error, Server, ToolRoute};
use serde_json::{Value, json};

use crate::common;
use common::{Text, Upstream, config, introspection};

fn echo(name: &str) -> Server {
    Server::builder(name, "1.0.0")
        .tool(ToolRoute::new("echo", |_: Context, Text { text }: Text| async move { Ok::<_, Error>(text) }))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_every_call_and_list_is_audited_with_who_what_and_the_decision() {
    let open = Upstream::start(echo("open"), 0);
    let alices = Upstream::start(echo("alices"), 0);
    let dir = std::env::temp_dir().join(format!("mcp-gateway-audit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("audit.jsonl");
    // A line from before: the file is appended to, not truncated.
    std::fs::write(&log, "{\"earlier\":true}\n").unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let endpoint = introspection(url.clone()).await;
    let issuer = endpoint.trim_end_matches("/introspect");
    let gateway = Gateway::start(&config(&format!(
        "audit = \"{}\"\n\
         [authorization]\nresource = \"{url}\"\nissuer = \"{issuer}\"\n\
         introspection = {{ client_id = \"gw\", client_secret = \"s\", endpoint = \"{endpoint}\" }}\n\
         [[upstream]]\nname = \"open\"\nurl = \"{}\"\n\
         [[upstream]]\nname = \"alices\"\nurl = \"{}\"\nprincipals = [\"alice\"]\n",
        log.display(),
        open.url,
        alices.url
    )))
    .await
    .unwrap();
    tokio::spawn(mcp_server::http::serve(listener, gateway.server().clone(), gateway.http_config()));
    let as_who = async |who: &str| {
        let builder = Client::builder("audit-test", "1.0.0").era(EraPreference::Modern);
        builder.http_header("Authorization", format!("Bearer {who}")).connect_http(&url).await.unwrap()
    };
    let (alice, bob) = (as_who("alice").await, as_who("bob").await);
    bob.all_tools().await.unwrap();
    bob.call_tool("open_echo", json!({"text": "hi"})).await.unwrap();
    // Bob tries Alice's tool: to him it does not exist, and the log says why.
    let refused = bob.call_tool("alices_echo", json!({"text": "let me in"})).await.unwrap_err().to_string();
    assert!(refused.contains("Unknown tool: alices_echo"), "{refused}");
    alice.call_tool("alices_echo", json!({"text": "mine"})).await.unwrap();
    // The upstream refuses the arguments: allowed by the gateway, failed upstream.
    let _ = alice.call_tool("alices_echo", json!({})).await;
    bob.call_tool("nothing", json!({})).await.unwrap_err();

    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("{\"earlier\":true}"), "appended after what was there");
    let entries: Vec<Value> = lines.map(|line| serde_json::from_str(line).expect("each line is JSON")).collect();
    for entry in &entries {
        let time = entry["time"].as_str().unwrap();
        assert!(time.len() == 24 && time.ends_with('Z') && &time[10..11] == "T", "RFC 3339: {time}");
        assert!(entry["duration_ms"].as_f64().is_some_and(|ms| ms >= 0.0), "{entry}");
    }
    let find = |principal: &str, method: &str, name: Option<&str>| -> &Value {
        let found =
            entries.iter().find(|e| e["principal"] == principal && e["method"] == method && e["name"].as_str() == name);
        found.unwrap_or_else(|| panic!("no {principal} {method} {name:?} in {entries:#?}"))
    };
    let listed = find("bob", "tools/list", None);
    assert_eq!(
        (&listed["decision"], &listed["upstream"], &listed["error"]),
        (&json!("allowed"), &Value::Null, &Value::Null)
    );
    let allowed = find("bob", "tools/call", Some("open_echo"));
    assert_eq!(
        (&allowed["decision"], &allowed["upstream"], &allowed["error"]),
        (&json!("allowed"), &json!("open"), &Value::Null)
    );
    let denied = find("bob", "tools/call", Some("alices_echo"));
    assert_eq!((&denied["decision"], &denied["upstream"]), (&json!("denied"), &json!("alices")));
    assert_eq!(denied["reason"], "the caller is not among the upstream's `principals`");
    assert_eq!(denied["error"]["code"], -32602);
    let alices_call = entries.iter().filter(|e| e["principal"] == "alice" && e["name"] == "alices_echo");
    let decisions: Vec<(&Value, &Value)> = alices_call.map(|e| (&e["decision"], &e["error"]["message"])).collect();
    assert_eq!(decisions.len(), 2, "{entries:#?}");
    assert!(decisions.iter().all(|(decision, _)| *decision == "allowed"), "{decisions:?}");
    assert_eq!(decisions[0].1, &Value::Null);
    assert!(decisions[1].1.is_string(), "the upstream's refusal is recorded: {decisions:?}");
    let unknown = find("bob", "tools/call", Some("nothing"));
    assert_eq!((&unknown["decision"], &unknown["reason"]), (&json!("denied"), &json!("no upstream serves it")));
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_file_that_cannot_be_opened_stops_the_gateway_at_start() {
    let missing = std::env::temp_dir().join(format!("mcp-gateway-no-such-dir-{}", std::process::id())).join("a.jsonl");
    let refused =
        Gateway::start(&config(&format!("audit = \"{}\"\n", missing.display()))).await.err().expect("refused");
    assert!(matches!(refused, StartError::Config(_)), "{refused}");
    assert!(refused.to_string().contains(&format!("audit: cannot open {} to append", missing.display())), "{refused}");
}
