//! The skills extension, `io.modelcontextprotocol/skills` (SEP-2640): a server publishes skills
//! (directories of files with a `SKILL.md`) as resources, lists them with `skills/list`, answers
//! `skills/get` for one skill by the URI of its `SKILL.md`, and, when it declares
//! `directoryRead`, lists a directory's children with `resources/directory/read`.
//!
//! Written by hand from the extension's specification, `specification/stable/skills.mdx` of
//! github.com/modelcontextprotocol/ext-skills at commit `0682b7b6e9e661fbf8538e27cbd3e7282927b45a`
//! (wire shapes cross-checked with `typescript/sdk/src/types.ts` there). No machine-readable
//! schema of the extension is synced by `cargo xtask schema sync`, so it cannot be generated:
//! revisit this module when the extension changes.
//!
//! ```
//! use mcp_types::ext::skills::{ListSkillsResult, SkillResources};
//!
//! let listed: ListSkillsResult = serde_json::from_str(r#"{"resultType":"complete",
//!     "skills":[{"uri":"skill://git-workflow/SKILL.md",
//!       "frontmatter":{"name":"git-workflow","description":"Team Git conventions"},
//!       "resources":[{"uri":"skill://git-workflow/SKILL.md","digest":"sha256:00","size":12}]}],
//!     "ttlMs":300000,"cacheScope":"public"}"#).unwrap();
//! let skill = &listed.skills[0];
//! assert_eq!(skill.name(), Some("git-workflow"));
//! assert!(matches!(&skill.resources, SkillResources::Files(files) if files[0].size == 12));
//! ```

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::common::ResultType;
use crate::ext::ext_request;
use crate::free_form::JsonObject;
use crate::generated::v2026_07_28::{CacheScope, RequestMetaObject, Resource, ResultMetaObject};

pub use crate::ext::SKILLS as EXTENSION_ID;

/// The `mimeType` of a directory resource.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";
/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";
/// The most entries a conforming host must accept in one skill's `resources`.
pub const MAX_RESOURCES_PER_SKILL: usize = 512;
/// The largest total `size` a conforming host must accept for one skill (16 MiB).
pub const MAX_TOTAL_SIZE: u64 = 16 * 1024 * 1024;

/// The server's settings under `capabilities.extensions["io.modelcontextprotocol/skills"]`
/// (`{}` declares the extension with no optional features).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SkillsSettings {
    /// The server implements `resources/directory/read`.
    #[serde(rename = "directoryRead", default, skip_serializing_if = "Option::is_none")]
    pub directory_read: Option<bool>,
    /// Members this crate does not know, kept for re-encoding.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SkillsSettings {
    /// The settings read from a server's capabilities, if it declares the extension.
    pub fn of(capabilities: &crate::generated::v2026_07_28::ServerCapabilities) -> Option<SkillsSettings> {
        let settings = capabilities.extensions.as_ref()?.get(EXTENSION_ID)?;
        serde_json::from_value(serde_json::Value::Object(settings.clone())).ok()
    }

    /// The settings as the object to put under `capabilities.extensions`.
    pub fn to_object(&self) -> JsonObject {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(object)) => object,
            _ => JsonObject::new(),
        }
    }
}

/// A file of a skill, with the digest and size of its raw bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillResource {
    /// The file's resource URI (under the skill's URI).
    pub uri: String,
    /// `sha256:` and 64 lowercase hex digits.
    pub digest: String,
    /// The length of the raw content in bytes.
    pub size: u64,
    /// Members this crate does not know, kept for re-encoding.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A skill's files: the complete list, or `"dynamic"` when its content is generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillResources {
    /// The complete list of the skill's files.
    Files(Vec<SkillResource>),
    /// `"dynamic"`: the content is generated, so the files are not listed.
    Dynamic,
}

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillResources::Files(files) => files.serialize(s),
            SkillResources::Dynamic => s.serialize_str("dynamic"),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Files(Vec<SkillResource>),
            Word(String),
        }
        match Wire::deserialize(d)? {
            Wire::Files(files) => Ok(SkillResources::Files(files)),
            Wire::Word(word) if word == "dynamic" => Ok(SkillResources::Dynamic),
            Wire::Word(word) => Err(serde::de::Error::custom(format_args!(
                "`resources` must be an array or \"dynamic\", found {word:?}"
            ))),
        }
    }
}

/// The entry for one skill, returned by `skills/list` and `skills/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` YAML frontmatter as a JSON object (`name` and `description` included).
    pub frontmatter: JsonObject,
    /// The skill's files (`resources`).
    pub resources: SkillResources,
    /// Members this crate does not know, kept for re-encoding.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Skill {
    /// `frontmatter.name`.
    pub fn name(&self) -> Option<&str> {
        self.frontmatter.get("name").and_then(serde_json::Value::as_str)
    }

    /// `frontmatter.description`.
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description").and_then(serde_json::Value::as_str)
    }

    /// The entry of the file at `uri`, when `resources` lists it.
    pub fn file(&self, uri: &str) -> Option<&SkillResource> {
        match &self.resources {
            SkillResources::Files(files) => files.iter().find(|f| f.uri == uri),
            SkillResources::Dynamic => None,
        }
    }
}

/// The params of `skills/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListSkillsRequestParams {
    /// The per-request `_meta` of the 2026-07-28 wire.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMetaObject>,
    /// The `nextCursor` of the previous page (`None`: the first page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Members this crate does not know, kept for re-encoding.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The result of `skills/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListSkillsResult {
    /// The result's `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMetaObject>,
    /// `"complete"`; absent decodes as `complete`.
    #[serde(rename = "resultType", default = "complete")]
    pub result_type: ResultType,
    /// The skills of this page.
    pub skills: Vec<Skill>,
    /// The cursor of the next page (`None`: this is the last page).
    #[serde(rename = "nextCursor", default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How long the result may be cached, in milliseconds (`ttlMs`).
    #[serde(rename = "ttlMs")]
    pub ttl_ms: u64,
    /// Who may reuse a cached result (`cacheScope`).
    #[serde(rename = "cacheScope")]
    pub cache_scope: CacheScope,
    /// Members this crate does not know, kept for re-encoding.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ListSkillsResult {
    /// A `complete` result listing `skills`, with its cache hints (no next page).
    pub fn new(skills: Vec<Skill>, ttl_ms: u64, cache_scope: CacheScope) -> Self {
        ListSkillsResult {
            meta: None,
            result_type: ResultType::Complete,
            skills,
            next_cursor: None,
            ttl_ms,
            cache_scope,
            extra: JsonObject::new(),
        }
    }
}

/// The params of `skills/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetSkillRequestParams {
    /// The per-request `_meta` of the 2026-07-28 wire.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMetaObject>,
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// Members this crate does not know, kept for re-encoding.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl GetSkillRequestParams {
    /// The params for the skill whose `SKILL.md` is at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        GetSkillRequestParams { meta: None, uri: uri.into(), extra: JsonObject::new() }
    }
}

/// The result of `skills/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetSkillResult {
    /// The result's `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMetaObject>,
    /// `"complete"`; absent decodes as `complete`.
    #[serde(rename = "resultType", default = "complete")]
    pub result_type: ResultType,
    /// The skill.
    pub skill: Skill,
    /// How long the result may be cached, in milliseconds (`ttlMs`).
    #[serde(rename = "ttlMs")]
    pub ttl_ms: u64,
    /// Who may reuse a cached result (`cacheScope`).
    #[serde(rename = "cacheScope")]
    pub cache_scope: CacheScope,
    /// Members this crate does not know, kept for re-encoding.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl GetSkillResult {
    /// A `complete` result for `skill`, with its cache hints.
    pub fn new(skill: Skill, ttl_ms: u64, cache_scope: CacheScope) -> Self {
        GetSkillResult {
            meta: None,
            result_type: ResultType::Complete,
            skill,
            ttl_ms,
            cache_scope,
            extra: JsonObject::new(),
        }
    }
}

/// The params of `resources/directory/read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadResourceDirectoryRequestParams {
    /// The per-request `_meta` of the 2026-07-28 wire.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMetaObject>,
    /// The URI of the directory resource (no trailing slash).
    pub uri: String,
    /// The `nextCursor` of the previous page (`None`: the first page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Members this crate does not know, kept for re-encoding.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ReadResourceDirectoryRequestParams {
    /// The params for the directory at `uri` (first page).
    pub fn new(uri: impl Into<String>) -> Self {
        ReadResourceDirectoryRequestParams { meta: None, uri: uri.into(), cursor: None, extra: JsonObject::new() }
    }
}

/// The result of `resources/directory/read`: the directory's direct children.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadResourceDirectoryResult {
    /// The result's `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMetaObject>,
    /// `"complete"`; absent decodes as `complete`.
    #[serde(rename = "resultType", default = "complete")]
    pub result_type: ResultType,
    /// The directory's children of this page.
    pub resources: Vec<Resource>,
    /// The cursor of the next page (`None`: this is the last page).
    #[serde(rename = "nextCursor", default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Members this crate does not know, kept for re-encoding.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ReadResourceDirectoryResult {
    /// A `complete` result listing `resources` (no next page).
    pub fn new(resources: Vec<Resource>) -> Self {
        ReadResourceDirectoryResult {
            meta: None,
            result_type: ResultType::Complete,
            resources,
            next_cursor: None,
            extra: JsonObject::new(),
        }
    }
}

// The legacy wire has no `resultType`; it decodes as `complete`.
fn complete() -> ResultType {
    ResultType::Complete
}

ext_request!(
    /// `skills/list`: the skills a server serves, paginated.
    ListSkills => ListSkillsRequest, "skills/list", ListSkillsRequestParams, ListSkillsResult
);
ext_request!(
    /// `skills/get`: the entry of one skill, by the URI of its `SKILL.md`.
    GetSkill => GetSkillRequest, "skills/get", GetSkillRequestParams, GetSkillResult
);
ext_request!(
    /// `resources/directory/read`: the direct children of a directory resource.
    ReadResourceDirectory => ReadResourceDirectoryRequest, "resources/directory/read",
    ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::DeserializeOwned;
    use serde_json::{Value, json};

    fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(wire: Value) -> T {
        let decoded: T = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(serde_json::to_value(&decoded).unwrap(), wire, "re-encoding changed the message");
        decoded
    }

    // The wire examples of specification/stable/skills.mdx (ext-skills @ 0682b7b6).
    #[test]
    fn list_result_keeps_files_dynamic_and_unknown_members() {
        let listed: ListSkillsResult = round_trip(json!({
            "resultType": "complete",
            "skills": [
                {"uri": "skill://acme/billing/refunds/SKILL.md",
                 "frontmatter": {"name": "refunds", "description": "Process refunds", "license": "Apache-2.0"},
                 "resources": [
                    {"uri": "skill://acme/billing/refunds/SKILL.md", "digest": "sha256:b2c3", "size": 3871},
                    {"uri": "skill://acme/billing/refunds/examples/email.md", "digest": "sha256:c3d4", "size": 962}
                 ]},
                {"uri": "skill://reports/daily/SKILL.md",
                 "frontmatter": {"name": "daily", "description": "Today's report"},
                 "resources": "dynamic", "vendor": true}
            ],
            "nextCursor": "abc",
            "ttlMs": 300000,
            "cacheScope": "public"
        }));
        assert_eq!(listed.skills[0].name(), Some("refunds"));
        assert_eq!(listed.skills[0].frontmatter["license"], json!("Apache-2.0"));
        assert_eq!(listed.skills[0].file("skill://acme/billing/refunds/examples/email.md").unwrap().size, 962);
        assert_eq!(listed.skills[1].resources, SkillResources::Dynamic);
        assert_eq!(listed.skills[1].extra["vendor"], json!(true));
        assert_eq!(listed.next_cursor.as_deref(), Some("abc"));
    }

    #[test]
    fn resources_other_than_an_array_or_dynamic_are_refused() {
        let wire = json!({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": "static"});
        let err = serde_json::from_value::<Skill>(wire).unwrap_err().to_string();
        assert!(err.contains("\"static\""), "{err}");
        let missing = json!({"uri": "skill://a/SKILL.md", "frontmatter": {}});
        assert!(serde_json::from_value::<Skill>(missing).is_err());
    }

    #[test]
    fn get_and_directory_read_round_trip() {
        let got: GetSkillResult = round_trip(json!({
            "resultType": "complete",
            "skill": {"uri": "skill://pdf-processing/SKILL.md",
                      "frontmatter": {"name": "pdf-processing", "description": "PDFs", "metadata": {"version": "2.1.0"}},
                      "resources": [{"uri": "skill://pdf-processing/SKILL.md", "digest": "sha256:d5e6", "size": 5120}]},
            "ttlMs": 300000,
            "cacheScope": "public"
        }));
        assert_eq!(got.skill.description(), Some("PDFs"));
        let dir: ReadResourceDirectoryResult = round_trip(json!({
            "resultType": "complete",
            "resources": [
                {"uri": "skill://pdf-processing/templates/invoice.md", "name": "invoice.md", "mimeType": "text/markdown"},
                {"uri": "skill://pdf-processing/templates/regional", "name": "regional", "mimeType": "inode/directory"}
            ]
        }));
        assert_eq!(dir.resources[1].mime_type.as_deref(), Some(DIRECTORY_MIME_TYPE));
        let request: GetSkillRequest = round_trip(json!({
            "jsonrpc": "2.0", "id": 5, "method": "skills/get", "params": {"uri": "skill://pdf-processing/SKILL.md"}
        }));
        assert_eq!(request.params.uri, "skill://pdf-processing/SKILL.md");
        let _: ReadResourceDirectoryRequest = round_trip(json!({
            "jsonrpc": "2.0", "id": 7, "method": "resources/directory/read",
            "params": {"uri": "skill://pdf-processing/templates", "cursor": "c"}
        }));
        let _: ListSkillsRequest =
            round_trip(json!({"jsonrpc": "2.0", "id": 4, "method": "skills/list", "params": {}}));
    }

    #[test]
    fn settings_read_from_capabilities() {
        let capabilities: crate::generated::v2026_07_28::ServerCapabilities = serde_json::from_value(json!({
            "resources": {}, "extensions": {EXTENSION_ID: {"directoryRead": true}}
        }))
        .unwrap();
        let settings = SkillsSettings::of(&capabilities).unwrap();
        assert_eq!(settings.directory_read, Some(true));
        assert_eq!(settings.to_object(), json!({"directoryRead": true}).as_object().unwrap().clone());
        assert_eq!(SkillsSettings::of(&crate::generated::v2026_07_28::ServerCapabilities::default()), None);
    }
}
