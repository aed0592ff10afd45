//! The skills extension (SEP-2640) end to end: `mcp-client` against an `mcp-server` serving the
//! skills of `mcp-server`'s `examples/skills` directory over Streamable HTTP on 127.0.0.1, in
//! both eras, plus a server that lies about a file (verification must refuse it).
#![cfg(feature = "http")]

use std::path::PathBuf;
use std::time::Duration;

use mcp_client::types::ext::SKILLS;
use mcp_client::types::ext::skills::SkillResources;
use mcp_client::types::{JsonObject, Resource, TextResourceContents};
use mcp_client::{Client, EraPreference, Error, Handlers};
use mcp_server::{ResourceRoute, Server, SkillRoute};

fn skills_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mcp-server/examples/skills")
}

async fn serve(server: Server) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { mcp_server::http::serve(listener, server, Default::default()).await });
    url
}

fn client(era: EraPreference) -> mcp_client::ClientBuilder {
    Client::builder("skills-test", "1.0").era(era).request_timeout(Duration::from_secs(20))
}

#[tokio::test]
async fn lists_gets_loads_and_reads_directories() {
    let mut options = mcp_server::Options::default();
    options.page_size = 1;
    let server = Server::builder("skills", "1.0")
        .skills(SkillRoute::scan(skills_dir()).unwrap())
        .options(options)
        .build()
        .unwrap();
    let url = serve(server).await;
    // Opting in declares the extension; the server serves either way.
    let handlers = Handlers::new().extension(SKILLS, JsonObject::new());
    let client = client(EraPreference::Modern).handlers(handlers).connect_http(&url).await.unwrap();
    assert!(client.client_capabilities().extensions.as_ref().unwrap().contains_key(SKILLS));
    assert_eq!(client.skills_settings().unwrap().directory_read, Some(true));

    // Three pages of one.
    let skills = client.all_skills().await.unwrap();
    let uris: Vec<&str> = skills.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(
        uris,
        ["skill://acme/billing/refunds/SKILL.md", "skill://git-workflow/SKILL.md", "skill://pdf-processing/SKILL.md"]
    );
    let pdf = client.get_skill("skill://pdf-processing/SKILL.md").await.unwrap();
    assert_eq!(pdf, skills[2]);
    assert_eq!(pdf.frontmatter["metadata"]["version"], "2.1.0");

    let loaded = client.load_skill(&pdf).await.unwrap();
    assert!(loaded.instructions.contains("# PDF processing"));
    let SkillResources::Files(files) = &pdf.resources else { panic!("a skill from disk lists its files") };
    assert_eq!(files.len(), 5);
    for file in files {
        let bytes = client.read_skill_file(&pdf, &file.uri).await.unwrap();
        assert_eq!(bytes.len() as u64, file.size);
    }
    // A file the entry does not list is refused without being read.
    let unlisted = client.read_skill_file(&pdf, "skill://git-workflow/SKILL.md").await.unwrap_err();
    assert!(matches!(unlisted, Error::SkillVerification { .. }), "{unlisted}");

    let templates = client.read_resource_directory("skill://pdf-processing/templates").await.unwrap();
    let names: Vec<(&str, Option<&str>)> =
        templates.iter().map(|r| (r.name.as_str(), r.mime_type.as_deref())).collect();
    assert_eq!(
        names,
        [
            ("invoice.md", Some("text/markdown")),
            ("purchase-order.md", Some("text/markdown")),
            ("regional", Some("inode/directory"))
        ]
    );

    let unknown = client.get_skill("skill://nope/SKILL.md").await.unwrap_err();
    assert_eq!(unknown.code(), Some(-32602), "{unknown}");
    let traversal = client.read_resource("skill://pdf-processing/../git-workflow/SKILL.md").await.unwrap_err();
    assert_eq!(traversal.code(), Some(-32602), "{traversal}");
    client.close().await;
}

#[tokio::test]
async fn legacy_sessions_have_no_skills() {
    let server = Server::builder("skills", "1.0").skills(SkillRoute::scan(skills_dir()).unwrap()).build().unwrap();
    let url = serve(server).await;
    let client = client(EraPreference::Legacy).connect_http(&url).await.unwrap();
    assert!(client.skills_settings().is_none());
    let error = client.all_skills().await.unwrap_err();
    assert!(matches!(error, Error::NotSupported { .. }), "{error}");
    // The files are still ordinary resources.
    let read = client.read_resource("skill://git-workflow/SKILL.md").await.unwrap();
    assert_eq!(read.contents.len(), 1);
    client.close().await;
}

#[tokio::test]
async fn content_that_does_not_match_the_entry_is_refused() {
    // The entry describes one SKILL.md; the server serves other bytes at its URI.
    let honest =
        SkillRoute::from_files("tamper", [("SKILL.md", "---\nname: tamper\ndescription: d\n---\nbody\n")]).unwrap();
    let entry = honest.entry();
    let tampered = Resource { uri: "skill://tamper/SKILL.md".into(), name: "tamper".into(), ..Default::default() };
    let server = Server::builder("liar", "1.0")
        .resource(ResourceRoute::new(tampered, |_, uri: String| async move {
            let text = "---\nname: tamper\ndescription: d\n---\nBODY\n";
            Ok(vec![TextResourceContents { uri, text: text.into(), ..Default::default() }.into()])
        }))
        .skill(SkillRoute::from_files("other", [("SKILL.md", "---\nname: other\ndescription: o\n---\n")]).unwrap())
        .build()
        .unwrap();
    let url = serve(server).await;
    let client = client(EraPreference::Modern).connect_http(&url).await.unwrap();
    let error = client.load_skill(&entry).await.unwrap_err();
    let Error::SkillVerification { detail, .. } = &error else { panic!("{error}") };
    assert!(detail.contains("digest"), "{detail}");

    // Same bytes and digest but a frontmatter the entry does not have.
    let mut lying = entry.clone();
    lying.frontmatter.insert("description".into(), "something else".into());
    let SkillResources::Files(files) = &mut lying.resources else { unreachable!() };
    let text = "---\nname: tamper\ndescription: d\n---\nBODY\n";
    files[0].size = text.len() as u64;
    files[0].digest = SkillRoute::from_files("tamper", [("SKILL.md", text)])
        .unwrap()
        .entry()
        .file("skill://tamper/SKILL.md")
        .unwrap()
        .digest
        .clone();
    let error = client.load_skill(&lying).await.unwrap_err();
    let Error::SkillVerification { detail, .. } = &error else { panic!("{error}") };
    assert!(detail.contains("frontmatter") && detail.contains("description"), "{detail}");
    client.close().await;
}
