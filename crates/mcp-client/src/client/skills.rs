//! The skills extension (`io.modelcontextprotocol/skills`, SEP-2640) on the client: listing and
//! getting skill entries, reading a skill's files verified against its entry, and reading
//! directory resources.
//!
//! The entry is the authority: [`Client::load_skill`] reads `SKILL.md` and refuses it unless
//! its size, SHA-256 digest and YAML frontmatter match the entry, and
//! [`Client::read_skill_file`] refuses a file the entry does not list or whose bytes differ.
//! Nothing is read ahead of need: listing never reads a file.

use base64::Engine as _;
use futures::stream::BoxStream;
use mcp_types::ext::skills::{
    EXTENSION_ID, GetSkillResult, ListSkillsResult, ReadResourceDirectoryResult, SKILL_MD, Skill, SkillResources,
    SkillsSettings,
};
use mcp_types::{JsonObject, ReadResourceResultContentsItem, Resource};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::cache::cache_key;
use super::methods::{collect, cursor_params, paginate};
use super::results::decode;
use super::{Call, Client};
use crate::error::Error;

/// A skill whose `SKILL.md` was read and matched its entry.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSkill {
    /// The entry it was verified against (keep it: the skill's other files are verified against it).
    pub entry: Skill,
    /// The text of `SKILL.md`.
    pub instructions: String,
}

impl Client {
    /// The server's skills settings, when it declares the extension.
    pub fn skills_settings(&self) -> Option<SkillsSettings> {
        SkillsSettings::of(&self.server_capabilities())
    }

    fn require_skills(&self, method: &str) -> Result<SkillsSettings, Error> {
        self.skills_settings().ok_or_else(|| Error::NotSupported {
            method: method.to_owned(),
            detail: format!("the server does not declare the {EXTENSION_ID} extension"),
        })
    }

    /// One page of `skills/list`.
    pub async fn list_skills_page(&self, cursor: Option<String>) -> Result<ListSkillsResult, Error> {
        self.require_skills("skills/list")?;
        let call = Call::new(self, "skills/list", cursor_params(&cursor));
        let raw = self.cached_request(&call, cache_key("skills/list", cursor.as_deref())).await?;
        decode("skills/list", &raw)
    }

    /// Every skill entry, page by page, as a stream.
    pub fn list_skills(&self) -> BoxStream<'static, Result<Skill, Error>> {
        let client = self.clone();
        paginate(self.inner.config.limits.max_list_pages, move |cursor| {
            let client = client.clone();
            async move { client.list_skills_page(cursor).await.map(|p| (p.skills, p.next_cursor)) }
        })
    }

    /// All skill entries, every page collected.
    pub async fn all_skills(&self) -> Result<Vec<Skill>, Error> {
        collect(self.list_skills()).await
    }

    /// The entry of the skill whose `SKILL.md` is at `uri` (`-32602` from the server: no such skill).
    pub async fn get_skill(&self, uri: &str) -> Result<Skill, Error> {
        self.require_skills("skills/get")?;
        let mut params = JsonObject::new();
        params.insert("uri".into(), json!(uri));
        let mut call = Call::new(self, "skills/get", params);
        call.name = Some(uri.to_owned());
        let raw = self.cached_request(&call, cache_key("skills/get", Some(uri))).await?;
        decode::<GetSkillResult>("skills/get", &raw).map(|r| r.skill)
    }

    /// One page of `resources/directory/read`: the direct children of the directory at `uri`.
    /// Refused unless the server declares `directoryRead: true`.
    pub async fn read_resource_directory_page(
        &self,
        uri: &str,
        cursor: Option<String>,
    ) -> Result<ReadResourceDirectoryResult, Error> {
        let method = "resources/directory/read";
        if self.require_skills(method)?.directory_read != Some(true) {
            return Err(Error::NotSupported {
                method: method.to_owned(),
                detail: "the server does not declare directoryRead: true".into(),
            });
        }
        let mut params = cursor_params(&cursor);
        params.insert("uri".into(), json!(uri));
        let mut call = Call::new(self, method, params);
        call.name = Some(uri.to_owned());
        let raw = self.request(&call).await?;
        decode(method, &raw)
    }

    /// All the direct children of the directory at `uri`, every page collected.
    pub async fn read_resource_directory(&self, uri: &str) -> Result<Vec<Resource>, Error> {
        let client = self.clone();
        let uri = uri.to_owned();
        collect(paginate(self.inner.config.limits.max_list_pages, move |cursor| {
            let client = client.clone();
            let uri = uri.clone();
            async move { client.read_resource_directory_page(&uri, cursor).await.map(|p| (p.resources, p.next_cursor)) }
        }))
        .await
    }

    /// Loads a skill: reads its `SKILL.md` and checks it against `entry` (size and digest when
    /// the entry lists files, and the frontmatter field by field). Content that fails is not
    /// returned.
    pub async fn load_skill(&self, entry: &Skill) -> Result<LoadedSkill, Error> {
        let bytes = self.read_skill_file(entry, &entry.uri).await?;
        let failed = |detail: String| Error::SkillVerification { uri: entry.uri.clone(), detail };
        let instructions = String::from_utf8(bytes).map_err(|_| failed(format!("{SKILL_MD} is not UTF-8")))?;
        let frontmatter = frontmatter_of(&instructions).map_err(failed)?;
        if frontmatter != entry.frontmatter {
            let differing: Vec<&String> = frontmatter
                .keys()
                .chain(entry.frontmatter.keys())
                .filter(|k| frontmatter.get(*k) != entry.frontmatter.get(*k))
                .collect();
            return Err(failed(format!("the frontmatter differs from the entry's in {differing:?}")));
        }
        Ok(LoadedSkill { entry: entry.clone(), instructions })
    }

    /// Reads one file of a skill, `uri` being its `SKILL.md` or a file its entry lists, and
    /// returns its bytes once their size and digest match the entry. A file the entry does not
    /// list is refused without reading it; for a `"dynamic"` skill nothing can be verified and
    /// the bytes are returned as read.
    pub async fn read_skill_file(&self, entry: &Skill, uri: &str) -> Result<Vec<u8>, Error> {
        let failed = |detail: String| Error::SkillVerification { uri: uri.to_owned(), detail };
        let expected = match &entry.resources {
            SkillResources::Files(_) => {
                Some(entry.file(uri).ok_or_else(|| failed(format!("the entry of {} does not list it", entry.uri)))?)
            }
            SkillResources::Dynamic => None,
        };
        let result = self.read_resource(uri).await?;
        let bytes = match result.contents.as_slice() {
            [ReadResourceResultContentsItem::TextResourceContents(text)] => text.text.clone().into_bytes(),
            [ReadResourceResultContentsItem::BlobResourceContents(blob)] => base64::engine::general_purpose::STANDARD
                .decode(&blob.blob)
                .map_err(|e| Error::protocol(format!("resources/read of {uri}: the blob is not base64: {e}")))?,
            other => return Err(failed(format!("expected one content item, got {}", other.len()))),
        };
        if let Some(expected) = expected {
            if bytes.len() as u64 != expected.size {
                return Err(failed(format!("{} bytes, the entry says {}", bytes.len(), expected.size)));
            }
            let digest = digest(&bytes);
            if digest != expected.digest {
                return Err(failed(format!("digest {digest}, the entry says {}", expected.digest)));
            }
        }
        Ok(bytes)
    }
}

/// `sha256:` and the lowercase hex SHA-256 of `bytes`.
fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut out = String::from("sha256:");
    for byte in hash {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// The YAML frontmatter of a `SKILL.md` as a JSON object.
fn frontmatter_of(text: &str) -> Result<JsonObject, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let body = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("SKILL.md does not begin with YAML frontmatter")?;
    let end = body
        .match_indices("\n---")
        .map(|(i, _)| i)
        .find(|&i| body[i + 4..].starts_with(['\n', '\r']) || body[i + 4..].trim_start_matches([' ', '\t']).is_empty())
        .ok_or("the frontmatter of SKILL.md has no closing `---`")?;
    match serde_norway::from_str::<Value>(&body[..end]) {
        Ok(Value::Object(frontmatter)) => Ok(frontmatter),
        Ok(_) => Err("the frontmatter of SKILL.md is not a mapping".into()),
        Err(e) => Err(format!("the frontmatter of SKILL.md is not YAML: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_and_digest() {
        let frontmatter = frontmatter_of("---\nname: a\ndescription: b\n---\nbody").unwrap();
        assert_eq!(Value::Object(frontmatter), json!({"name": "a", "description": "b"}));
        assert!(frontmatter_of("no frontmatter").is_err());
        assert_eq!(digest(b"abc"), "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
