//! The skills extension (`io.modelcontextprotocol/skills`, SEP-2640) on the wire, as raw JSON
//! over the in-memory connection: listing with pagination, getting, reading files and
//! directories, unknown skills, and paths that try to leave a skill (`..`, absolute, symlinks).

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use mcp_server::{Options, Server, SkillRoute};
use mcp_types::ext::SKILLS;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

/// A fresh directory under the system temp dir, unique to this test.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-skills-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn skill_md(name: &str) -> String {
    format!("---\nname: {name}\ndescription: The {name} skill\nlicense: MIT\n---\n\n# {name}\n")
}

/// `root/skills`: `alpha` (with `refs/guide.md`), `beta`, and `acme/gamma`; `root/secret.txt`
/// lies outside every skill.
fn fixture(test: &str) -> PathBuf {
    let root = temp_dir(test);
    write(&root.join("secret.txt"), "outside\n");
    write(&root.join("skills/alpha/SKILL.md"), &skill_md("alpha"));
    write(&root.join("skills/alpha/refs/guide.md"), "# Guide\n");
    write(&root.join("skills/beta/SKILL.md"), &skill_md("beta"));
    write(&root.join("skills/acme/gamma/SKILL.md"), &skill_md("gamma"));
    root
}

fn server(root: &Path, page_size: usize) -> Server {
    let mut options = Options::default();
    options.page_size = page_size;
    Server::builder("skills", "1.0")
        .skills(SkillRoute::scan(root.join("skills")).unwrap())
        .options(options)
        .build()
        .unwrap()
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect::<String>())
}

#[tokio::test]
async fn declares_the_extension_and_pages_through_the_skills() {
    let root = fixture("list");
    let mut client = MemoryClient::start(&server(&root, 2));
    let discovered = client.ask(modern(1, "server/discover", json!({}))).await;
    let capabilities = &discovered["result"]["capabilities"];
    assert_eq!(capabilities["extensions"][SKILLS], json!({"directoryRead": true}));
    assert!(capabilities["resources"].is_object(), "a skills server must declare resources: {capabilities}");

    let mut uris = Vec::new();
    let mut cursor = Value::Null;
    for page in 0.. {
        let params = if cursor.is_null() { json!({}) } else { json!({ "cursor": cursor }) };
        let response = client.ask(modern(10 + page, "skills/list", params)).await;
        let result = &response["result"];
        assert_eq!(result["resultType"], "complete");
        assert!(result["ttlMs"].is_u64() && result["cacheScope"].is_string(), "{result}");
        let skills = result["skills"].as_array().unwrap();
        assert!(skills.len() <= 2);
        uris.extend(skills.iter().map(|s| s["uri"].as_str().unwrap().to_owned()));
        cursor = result.get("nextCursor").cloned().unwrap_or(Value::Null);
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(uris, ["skill://acme/gamma/SKILL.md", "skill://alpha/SKILL.md", "skill://beta/SKILL.md"]);

    let bad = client.ask(modern(20, "skills/list", json!({ "cursor": "not-a-cursor" }))).await;
    assert_error(&bad, 20, INVALID_PARAMS);
}

#[tokio::test]
async fn get_returns_the_manifest_and_reads_match_it() {
    let root = fixture("get");
    let mut client = MemoryClient::start(&server(&root, 100));
    let got = client.ask(modern(1, "skills/get", json!({ "uri": "skill://alpha/SKILL.md" }))).await;
    let skill = &got["result"]["skill"];
    assert_eq!(skill["frontmatter"], json!({"name": "alpha", "description": "The alpha skill", "license": "MIT"}));
    let resources = skill["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 2, "{skill}");
    for (entry, path) in resources.iter().zip(["skills/alpha/SKILL.md", "skills/alpha/refs/guide.md"]) {
        let bytes = std::fs::read(root.join(path)).unwrap();
        assert_eq!(entry["digest"], sha256(&bytes));
        assert_eq!(entry["size"], bytes.len());
        let read = client.ask(modern(2, "resources/read", json!({ "uri": entry["uri"] }))).await;
        assert_eq!(read["result"]["contents"][0]["text"].as_str().unwrap().as_bytes(), bytes.as_slice());
    }
    let read = client.ask(modern(3, "resources/read", json!({ "uri": "skill://alpha/SKILL.md" }))).await;
    assert_eq!(read["result"]["contents"][0]["mimeType"], "text/markdown");

    let unknown = client.ask(modern(4, "skills/get", json!({ "uri": "skill://nope/SKILL.md" }))).await;
    assert_error(&unknown, 4, INVALID_PARAMS);
    assert!(message(&unknown).contains("No skill is served at skill://nope/SKILL.md"), "{unknown}");
    // A file of a skill is not a skill.
    let file = client.ask(modern(5, "skills/get", json!({ "uri": "skill://alpha/refs/guide.md" }))).await;
    assert_error(&file, 5, INVALID_PARAMS);
}

#[tokio::test]
async fn directories_list_their_direct_children() {
    let root = fixture("dirs");
    let mut client = MemoryClient::start(&server(&root, 100));
    let dir = client.ask(modern(1, "resources/directory/read", json!({ "uri": "skill://alpha" }))).await;
    let children: Vec<(&str, &str)> = dir["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["uri"].as_str().unwrap(), r["mimeType"].as_str().unwrap()))
        .collect();
    assert_eq!(children, [("skill://alpha/SKILL.md", "text/markdown"), ("skill://alpha/refs", "inode/directory")]);
    let prefix = client.ask(modern(2, "resources/directory/read", json!({ "uri": "skill://acme" }))).await;
    assert_eq!(prefix["result"]["resources"][0]["uri"], "skill://acme/gamma");

    let file = client.ask(modern(3, "resources/directory/read", json!({ "uri": "skill://alpha/SKILL.md" }))).await;
    assert_error(&file, 3, INVALID_PARAMS);
    assert!(message(&file).contains("is not a directory resource"), "{file}");
    let missing = client.ask(modern(4, "resources/directory/read", json!({ "uri": "skill://alpha/nope" }))).await;
    assert_error(&missing, 4, INVALID_PARAMS);
}

#[tokio::test]
async fn paths_out_of_a_skill_are_refused() {
    let root = fixture("traversal");
    let mut client = MemoryClient::start(&server(&root, 100));
    for (id, uri) in [
        (1, "skill://alpha/../beta/SKILL.md"),
        (2, "skill://alpha/refs/../../../secret.txt"),
        (3, "skill://alpha//etc/passwd"),
        (4, "skill://alpha/./SKILL.md"),
        (5, "skill://alpha/%2e%2e/secret.txt"),
    ] {
        let read = client.ask(modern(id, "resources/read", json!({ "uri": uri }))).await;
        assert_error(&read, id, INVALID_PARAMS);
        assert!(message(&read).contains("Refused"), "{uri}: {read}");
        assert!(!read.to_string().contains("outside\\n"), "{read}");
    }
    let dir = client.ask(modern(6, "resources/directory/read", json!({ "uri": "skill://alpha/.." }))).await;
    assert_error(&dir, 6, INVALID_PARAMS);
    assert!(message(&dir).contains("Refused"), "{dir}");
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_out_of_a_skill_are_refused() {
    let root = fixture("symlink");
    // Built with a link that leaves the skill: refused, naming the link.
    std::os::unix::fs::symlink(root.join("secret.txt"), root.join("skills/beta/leak.md")).unwrap();
    let error = SkillRoute::from_dir(root.join("skills/beta")).unwrap_err().to_string();
    assert!(error.contains("leak.md") && error.contains("outside the skill directory"), "{error}");
    // A link inside the skill is followed.
    std::os::unix::fs::symlink(root.join("skills/alpha/refs/guide.md"), root.join("skills/alpha/alias.md")).unwrap();
    let alpha = SkillRoute::from_dir(root.join("skills/alpha")).unwrap();
    let server = Server::builder("skills", "1.0").skill(alpha).build().unwrap();
    let mut client = MemoryClient::start(&server);
    let alias = client.ask(modern(1, "resources/read", json!({ "uri": "skill://alpha/alias.md" }))).await;
    assert_eq!(alias["result"]["contents"][0]["text"], "# Guide\n");
    // A file swapped for a link out after the skill was built: refused when read.
    std::fs::remove_file(root.join("skills/alpha/refs/guide.md")).unwrap();
    std::os::unix::fs::symlink(root.join("secret.txt"), root.join("skills/alpha/refs/guide.md")).unwrap();
    let read = client.ask(modern(2, "resources/read", json!({ "uri": "skill://alpha/refs/guide.md" }))).await;
    assert_error(&read, 2, INVALID_PARAMS);
    assert!(message(&read).contains("outside the skill directory"), "{read}");
}

/// A read of a file on disk holds at most the size the manifest gave it (plus one byte, to
/// tell): a file grown to 8 MiB after the skill was built is refused, not read whole.
#[tokio::test]
async fn a_skill_file_grown_past_its_manifest_size_is_refused() {
    let root = fixture("grown");
    let server = server(&root, 10);
    let mut client = MemoryClient::start(&server);
    let guide = root.join("skills/alpha/refs/guide.md");
    let read = client.ask(modern(1, "resources/read", json!({ "uri": "skill://alpha/refs/guide.md" }))).await;
    assert_eq!(read["result"]["contents"][0]["text"], "# Guide\n");
    std::fs::write(&guide, "#".repeat(8 << 20)).unwrap();
    let read = client.ask(modern(2, "resources/read", json!({ "uri": "skill://alpha/refs/guide.md" }))).await;
    assert_eq!(read["error"]["code"], -32603, "{}", &read.to_string()[..read.to_string().len().min(300)]);
    assert!(message(&read).contains("has grown past the 8 bytes"), "{}", message(&read));
    // Shrunk back within the manifest size, it is read again (and the client's digest check
    // decides whether to trust it).
    write(&guide, "# Guide\n");
    let read = client.ask(modern(3, "resources/read", json!({ "uri": "skill://alpha/refs/guide.md" }))).await;
    assert_eq!(read["result"]["contents"][0]["text"], "# Guide\n");
}

#[tokio::test]
async fn skills_in_memory_and_generated() {
    let files = [("SKILL.md", skill_md("notes")), ("data/a.txt", "a".to_owned())];
    let notes = SkillRoute::from_files("team/notes", files).unwrap();
    let mut frontmatter = serde_json::Map::new();
    frontmatter.insert("name".into(), json!("daily"));
    frontmatter.insert("description".into(), json!("Today's report"));
    let daily = SkillRoute::dynamic("reports/daily", frontmatter, |_, path: String| async move {
        let text = format!("generated {path}");
        let uri = format!("skill://reports/daily/{path}");
        Ok(vec![mcp_types::TextResourceContents { uri, text, ..Default::default() }.into()])
    })
    .unwrap();
    let server = Server::builder("skills", "1.0").skill(notes).skill(daily).build().unwrap();
    let mut client = MemoryClient::start(&server);
    let listed = client.ask(modern(1, "skills/list", json!({}))).await;
    let skills = listed["result"]["skills"].as_array().unwrap();
    assert_eq!(skills[0]["uri"], "skill://team/notes/SKILL.md");
    assert_eq!(skills[0]["resources"][1]["digest"], sha256(b"a"));
    assert_eq!(skills[1]["resources"], "dynamic");
    let generated = client.ask(modern(2, "resources/read", json!({ "uri": "skill://reports/daily/x/y.md" }))).await;
    assert_eq!(generated["result"]["contents"][0]["text"], "generated x/y.md");
    let data = client.ask(modern(3, "resources/read", json!({ "uri": "skill://team/notes/data/a.txt" }))).await;
    assert_eq!(data["result"]["contents"][0]["text"], "a");

    // Building refuses what the spec forbids.
    assert!(SkillRoute::from_files("x", [("../SKILL.md", "")]).is_err());
    let wrong_name = SkillRoute::from_files("other", [("SKILL.md", skill_md("notes"))]).unwrap_err();
    assert!(wrong_name.to_string().contains("must equal `other`"), "{wrong_name}");
    let twice = Server::builder("s", "1")
        .skill(SkillRoute::from_files("n", [("SKILL.md", skill_md("n"))]).unwrap())
        .skill(SkillRoute::from_files("n", [("SKILL.md", skill_md("n"))]).unwrap())
        .build();
    assert!(twice.is_err());
}

#[tokio::test]
async fn undeclared_clients_are_served_and_legacy_sessions_are_not() {
    let root = fixture("eras");
    let server = server(&root, 100);
    let mut client = MemoryClient::start(&server);
    // The extension puts no requirement on the client: a request declaring nothing is served.
    let listed = client.ask(request(1, "skills/list", json!({ "_meta": meta_with(json!({})) }))).await;
    assert_eq!(listed["result"]["skills"].as_array().unwrap().len(), 3);

    // The extension does not exist before 2026-07-28.
    let mut legacy = MemoryClient::start(&server);
    let init = legacy.ask(initialize(1, "2025-11-25", json!({}))).await;
    assert!(init["result"]["capabilities"].get("extensions").is_none(), "{init}");
    legacy.send(notification("notifications/initialized", json!({}))).await;
    let listed = legacy.ask(request(2, "skills/list", json!({}))).await;
    assert_error(&listed, 2, METHOD_NOT_FOUND);

    // Without skills, the methods do not exist.
    let plain = Server::builder("plain", "1.0").build().unwrap();
    let mut client = MemoryClient::start(&plain);
    let listed = client.ask(modern(1, "skills/list", json!({}))).await;
    assert_error(&listed, 1, METHOD_NOT_FOUND);
}

#[tokio::test]
async fn directory_read_can_be_turned_off() {
    let root = fixture("nodirs");
    let server = Server::builder("skills", "1.0")
        .skills(SkillRoute::scan(root.join("skills")).unwrap())
        .skill_directory_read(false)
        .build()
        .unwrap();
    assert_eq!(server.capabilities().extensions.as_ref().unwrap()[SKILLS], serde_json::Map::new());
    let mut client = MemoryClient::start(&server);
    let dir = client.ask(modern(1, "resources/directory/read", json!({ "uri": "skill://alpha" }))).await;
    assert_error(&dir, 1, METHOD_NOT_FOUND);
}
