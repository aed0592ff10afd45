//! Skills (the `io.modelcontextprotocol/skills` extension, SEP-2640): directories of files with
//! a `SKILL.md`, served as `skill://` resources and listed by `skills/list` and `skills/get`.
//!
//! A [`SkillRoute`] comes from a directory on disk ([`SkillRoute::from_dir`],
//! [`SkillRoute::scan`]), from files held in memory ([`SkillRoute::from_files`]), or from an
//! async function that generates the files ([`SkillRoute::dynamic`]). Registering one with
//! [`crate::ServerBuilder::skill`] declares the extension (and the `resources` capability).
//!
//! A skill from disk is enumerated once, when it is built: its manifest (digest and size of every
//! file) is that snapshot, and reads go to the disk, so a file changed since then no longer
//! matches the manifest and a client's verification refuses it. A symbolic link that leaves the
//! skill's directory is refused when the skill is built and again on every read.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use mcp_types::ext::skills::{
    DIRECTORY_MIME_TYPE, MAX_RESOURCES_PER_SKILL, MAX_TOTAL_SIZE, SKILL_MD, Skill, SkillResource, SkillResources,
};
use mcp_types::{BlobResourceContents, JsonObject, ReadResourceResultContentsItem, Resource, TextResourceContents};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::routes::BoxFuture;
use crate::{context::Context, error::Error};

type GenerateFn =
    Arc<dyn Fn(Context, String) -> BoxFuture<Result<Vec<ReadResourceResultContentsItem>, Error>> + Send + Sync>;

/// Why a skill could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillError(String);

impl fmt::Display for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SkillError {}

fn fail<T>(message: impl Into<String>) -> Result<T, SkillError> {
    Err(SkillError(message.into()))
}

/// One skill, ready to register with [`crate::ServerBuilder::skill`].
#[derive(Clone)]
pub struct SkillRoute {
    pub(crate) inner: Arc<SkillInner>,
}

pub(crate) struct SkillInner {
    /// `skill://<skill-path>`: the skill's root directory resource.
    pub(crate) root: String,
    pub(crate) frontmatter: JsonObject,
    pub(crate) content: Content,
}

pub(crate) enum Content {
    /// Files by their path relative to the skill root (`/`-separated).
    Files {
        files: BTreeMap<String, SkillFile>,
        source: Source,
    },
    Dynamic(GenerateFn),
}

pub(crate) enum Source {
    Memory,
    /// The skill directory, canonicalized.
    Disk(PathBuf),
}

pub(crate) struct SkillFile {
    digest: String,
    size: u64,
    bytes: Option<Arc<[u8]>>,
}

impl fmt::Debug for SkillRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkillRoute").field("uri", &self.uri()).finish_non_exhaustive()
    }
}

impl SkillRoute {
    /// The skill in directory `dir`, served at `skill://<name>/…` where `<name>` is the
    /// directory's name, which must equal the `name` of its `SKILL.md` frontmatter.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<SkillRoute, SkillError> {
        SkillRoute::from_dir_at(dir, "")
    }

    /// Like [`SkillRoute::from_dir`], under an organizational prefix: `prefix` `acme/billing`
    /// serves the skill `refunds` at `skill://acme/billing/refunds/SKILL.md`.
    pub fn from_dir_at(dir: impl AsRef<Path>, prefix: &str) -> Result<SkillRoute, SkillError> {
        let dir = dir.as_ref();
        let root = dir.canonicalize().map_err(|e| SkillError(format!("skill directory {}: {e}", dir.display())))?;
        let mut files = BTreeMap::new();
        let mut total = 0u64;
        collect(&root, &root, &mut files, &mut total)?;
        let Some(skill_md) = files.get(SKILL_MD) else {
            return fail(format!("{} has no {SKILL_MD} at its root", dir.display()));
        };
        let frontmatter = frontmatter_of(skill_md.bytes.as_deref().unwrap_or_default())
            .map_err(|e| SkillError(format!("{}/{SKILL_MD}: {e}", dir.display())))?;
        let dir_name = root.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let name = frontmatter["name"].as_str().unwrap_or_default();
        if name != dir_name {
            return fail(format!(
                "{}: the frontmatter name `{name}` must equal the directory name `{dir_name}`",
                dir.display()
            ));
        }
        // Content stays on disk; only the manifest is kept.
        for file in files.values_mut() {
            file.bytes = None;
        }
        SkillRoute::build(prefix, frontmatter, Content::Files { files, source: Source::Disk(root) })
    }

    /// Every skill under `root`: each directory holding a `SKILL.md`, served at its path relative
    /// to `root` (`root/acme/refunds/SKILL.md` → `skill://acme/refunds/SKILL.md`). Skills may nest.
    pub fn scan(root: impl AsRef<Path>) -> Result<Vec<SkillRoute>, SkillError> {
        let root = root.as_ref();
        let canonical =
            root.canonicalize().map_err(|e| SkillError(format!("skills directory {}: {e}", root.display())))?;
        let mut skills = Vec::new();
        let mut pending = vec![canonical.clone()];
        while let Some(dir) = pending.pop() {
            if dir.join(SKILL_MD).is_file() {
                let relative = dir.strip_prefix(&canonical).unwrap_or(Path::new(""));
                let prefix = relative.parent().map(slash_path).unwrap_or_default();
                skills.push(SkillRoute::from_dir_at(&dir, &prefix)?);
            }
            let entries = std::fs::read_dir(&dir).map_err(|e| SkillError(format!("{}: {e}", dir.display())))?;
            for entry in entries.flatten() {
                let path = entry.path();
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    pending.push(path);
                }
            }
        }
        skills.sort_by(|a, b| a.inner.root.cmp(&b.inner.root));
        Ok(skills)
    }

    /// A skill held in memory: `files` maps paths relative to the skill root (`SKILL.md`,
    /// `references/GUIDE.md`) to their bytes; `skill_path` is where it is served
    /// (`acme/billing/refunds` → `skill://acme/billing/refunds/SKILL.md`).
    pub fn from_files<P, B>(skill_path: &str, files: impl IntoIterator<Item = (P, B)>) -> Result<SkillRoute, SkillError>
    where
        P: Into<String>,
        B: Into<Vec<u8>>,
    {
        let mut manifest = BTreeMap::new();
        for (path, bytes) in files {
            let path = path.into();
            check_relative(&path).map_err(|e| SkillError(format!("skill file `{path}`: {e}")))?;
            let bytes: Arc<[u8]> = bytes.into().into();
            manifest.insert(path, SkillFile { digest: digest(&bytes), size: bytes.len() as u64, bytes: Some(bytes) });
        }
        let Some(skill_md) = manifest.get(SKILL_MD) else {
            return fail(format!("skill `{skill_path}` has no {SKILL_MD}"));
        };
        let frontmatter = frontmatter_of(skill_md.bytes.as_deref().unwrap_or_default())
            .map_err(|e| SkillError(format!("skill `{skill_path}`: {e}")))?;
        let (prefix, last) = skill_path.rsplit_once('/').unwrap_or(("", skill_path));
        if frontmatter["name"].as_str() != Some(last) {
            return fail(format!("skill `{skill_path}`: the frontmatter name must equal `{last}`"));
        }
        let total: u64 = manifest.values().map(|f| f.size).sum();
        check_limits(skill_path, manifest.len(), total)?;
        SkillRoute::build(prefix, frontmatter, Content::Files { files: manifest, source: Source::Memory })
    }

    /// A skill whose files are generated when read: its entry carries `"resources": "dynamic"`,
    /// and `generate` receives the path of the file asked for, relative to the skill root
    /// (`SKILL.md` first). `frontmatter` must have `name` (the last segment of `skill_path`) and
    /// `description`.
    pub fn dynamic<F, Fut>(skill_path: &str, frontmatter: JsonObject, generate: F) -> Result<SkillRoute, SkillError>
    where
        F: Fn(Context, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ReadResourceResultContentsItem>, Error>> + Send + 'static,
    {
        check_frontmatter(&frontmatter).map_err(|e| SkillError(format!("skill `{skill_path}`: {e}")))?;
        let (prefix, last) = skill_path.rsplit_once('/').unwrap_or(("", skill_path));
        if frontmatter["name"].as_str() != Some(last) {
            return fail(format!("skill `{skill_path}`: the frontmatter name must equal `{last}`"));
        }
        let generate: GenerateFn = Arc::new(move |ctx, path| Box::pin(generate(ctx, path)));
        SkillRoute::build(prefix, frontmatter, Content::Dynamic(generate))
    }

    fn build(prefix: &str, frontmatter: JsonObject, content: Content) -> Result<SkillRoute, SkillError> {
        let name = frontmatter["name"].as_str().unwrap_or_default();
        let prefix = prefix.trim_matches('/');
        if !prefix.is_empty() {
            check_relative(prefix).map_err(|e| SkillError(format!("skill prefix `{prefix}`: {e}")))?;
        }
        let root = if prefix.is_empty() { format!("skill://{name}") } else { format!("skill://{prefix}/{name}") };
        Ok(SkillRoute { inner: Arc::new(SkillInner { root, frontmatter, content }) })
    }

    /// The URI of the skill's `SKILL.md`.
    pub fn uri(&self) -> String {
        format!("{}/{SKILL_MD}", self.inner.root)
    }

    /// The skill's entry, as `skills/list` and `skills/get` return it.
    pub fn entry(&self) -> Skill {
        let resources = match &self.inner.content {
            Content::Files { files, .. } => SkillResources::Files(
                files
                    .iter()
                    .map(|(path, file)| SkillResource {
                        uri: format!("{}/{path}", self.inner.root),
                        digest: file.digest.clone(),
                        size: file.size,
                        extra: JsonObject::new(),
                    })
                    .collect(),
            ),
            Content::Dynamic(_) => SkillResources::Dynamic,
        };
        Skill { uri: self.uri(), frontmatter: self.inner.frontmatter.clone(), resources, extra: JsonObject::new() }
    }
}

/// The children of the directory `uri` of one of `skills` (a [`SkillSource`]'s), from the files
/// its entry lists, described as a route's would be; `None` when no skill listing its files has
/// that directory.
///
/// [`SkillSource`]: crate::dynamic::SkillSource
pub(crate) fn source_directory(skills: &[Skill], uri: &str) -> Option<Vec<Resource>> {
    let prefix = format!("{uri}/");
    let mut children: BTreeMap<String, Resource> = BTreeMap::new();
    for skill in skills {
        let Some(root) = skill.uri.strip_suffix(SKILL_MD).map(|root| root.trim_end_matches('/')) else { continue };
        if uri != root && !uri.starts_with(&format!("{root}/")) {
            continue;
        }
        let SkillResources::Files(files) = &skill.resources else { continue };
        for file in files {
            let Some(rest) = file.uri.strip_prefix(&prefix) else { continue };
            let child = match rest.split_once('/') {
                Some((dir, _)) => Resource {
                    uri: format!("{prefix}{dir}"),
                    name: dir.to_owned(),
                    mime_type: Some(DIRECTORY_MIME_TYPE.to_owned()),
                    ..Default::default()
                },
                None => {
                    let mut resource = Resource {
                        uri: file.uri.clone(),
                        name: rest.to_owned(),
                        mime_type: Some(mime_type(rest).to_owned()),
                        size: Some(mcp_types::Integer::from(file.size)),
                        ..Default::default()
                    };
                    if file.uri == skill.uri {
                        resource.name = skill.frontmatter["name"].as_str().unwrap_or_default().to_owned();
                        resource.description = skill.frontmatter["description"].as_str().map(str::to_owned);
                    }
                    resource
                }
            };
            children.entry(child.uri.clone()).or_insert(child);
        }
    }
    (!children.is_empty()).then(|| children.into_values().collect())
}

impl SkillInner {
    /// The resource metadata of each file (`resources/list`).
    pub(crate) fn resources(&self) -> Vec<Resource> {
        match &self.content {
            Content::Files { files, .. } => {
                files.iter().map(|(path, file)| self.file_resource(path, Some(file.size))).collect()
            }
            Content::Dynamic(_) => vec![self.file_resource(SKILL_MD, None)],
        }
    }

    pub(crate) fn file_resource(&self, path: &str, size: Option<u64>) -> Resource {
        let file_name = path.rsplit('/').next().unwrap_or(path);
        let mut resource = Resource {
            uri: format!("{}/{path}", self.root),
            name: file_name.to_owned(),
            mime_type: Some(mime_type(path).to_owned()),
            size: size.map(mcp_types::Integer::from),
            ..Default::default()
        };
        if path == SKILL_MD {
            resource.name = self.frontmatter["name"].as_str().unwrap_or_default().to_owned();
            resource.description = self.frontmatter["description"].as_str().map(str::to_owned);
        }
        resource
    }

    /// The paths of the skill's files relative to its root; none for a dynamic skill.
    pub(crate) fn file_paths(&self) -> Vec<(&str, u64)> {
        match &self.content {
            Content::Files { files, .. } => files.iter().map(|(p, f)| (p.as_str(), f.size)).collect(),
            Content::Dynamic(_) => Vec::new(),
        }
    }

    /// The path under this skill that `uri` names, if it is under this skill at all; a path that
    /// tries to leave the skill is an error.
    pub(crate) fn relative<'a>(&self, uri: &'a str) -> Option<Result<&'a str, Error>> {
        let rest = uri.strip_prefix(self.root.as_str())?.strip_prefix('/')?;
        Some(
            check_relative(rest).map(|()| rest).map_err(|e| {
                Error::invalid_params(format!("Refused {uri}: {e}; it would leave the skill {}", self.root))
            }),
        )
    }

    /// Reads one file of the skill (`path` relative to its root, already checked).
    pub(crate) async fn read(&self, ctx: Context, path: &str) -> Result<Vec<ReadResourceResultContentsItem>, Error> {
        let uri = format!("{}/{path}", self.root);
        let bytes: Arc<[u8]> = match &self.content {
            Content::Dynamic(generate) => return generate(ctx, path.to_owned()).await,
            Content::Files { files, source } => {
                let Some(file) = files.get(path) else { return Err(Error::resource_not_found(&uri)) };
                match source {
                    Source::Memory => file.bytes.clone().unwrap_or_else(|| Arc::from(Vec::new())),
                    Source::Disk(root) => read_inside(root, path, file.size).await?.into(),
                }
            }
        };
        let mime = Some(mime_type(path).to_owned());
        Ok(vec![match std::str::from_utf8(&bytes) {
            Ok(text) => {
                TextResourceContents { uri, text: text.to_owned(), mime_type: mime, ..Default::default() }.into()
            }
            Err(_) => {
                let blob = base64::engine::general_purpose::STANDARD.encode(&bytes);
                BlobResourceContents { uri, blob, mime_type: mime, ..Default::default() }.into()
            }
        }])
    }
}

/// Reads `root/path`, refusing a file that (through a symbolic link) lies outside `root`, and
/// one that has grown past `size`, its size in the manifest: no read holds more than the
/// skill's snapshot allows (a changed file fails the client's verification anyway).
async fn read_inside(root: &Path, path: &str, size: u64) -> Result<Vec<u8>, Error> {
    use tokio::io::AsyncReadExt as _;

    let joined = root.join(path);
    let canonical =
        tokio::fs::canonicalize(&joined).await.map_err(|e| Error::internal(format!("skill file {path}: {e}")))?;
    if !canonical.starts_with(root) {
        return Err(Error::invalid_params(format!(
            "Refused skill file {path}: it resolves to {}, outside the skill directory",
            canonical.display()
        )));
    }
    let file =
        tokio::fs::File::open(&canonical).await.map_err(|e| Error::internal(format!("skill file {path}: {e}")))?;
    let mut bytes = Vec::new();
    file.take(size.saturating_add(1))
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| Error::internal(format!("skill file {path}: {e}")))?;
    if bytes.len() as u64 > size {
        return Err(Error::internal(format!(
            "skill file {path} has grown past the {size} bytes it had when the skill was built; \
             rebuild the skill to serve its new content"
        )));
    }
    Ok(bytes)
}

/// Walks `dir` (inside the canonical skill root `root`) and records every regular file.
fn collect(
    root: &Path,
    dir: &Path,
    files: &mut BTreeMap<String, SkillFile>,
    total: &mut u64,
) -> Result<(), SkillError> {
    let entries = std::fs::read_dir(dir).map_err(|e| SkillError(format!("{}: {e}", dir.display())))?;
    let mut entries: Vec<_> =
        entries.collect::<Result<_, _>>().map_err(|e| SkillError(format!("{}: {e}", dir.display())))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let canonical = path.canonicalize().map_err(|e| SkillError(format!("{}: {e}", path.display())))?;
        if !canonical.starts_with(root) {
            return fail(format!(
                "{} resolves to {}, outside the skill directory {}",
                path.display(),
                canonical.display(),
                root.display()
            ));
        }
        let relative = slash_path(path.strip_prefix(root).unwrap_or(&path));
        if canonical.is_dir() {
            if canonical == *root || root.starts_with(&canonical) {
                return fail(format!("{} links back into the skill directory", path.display()));
            }
            collect(root, &path, files, total)?;
        } else if canonical.is_file() {
            let bytes = std::fs::read(&canonical).map_err(|e| SkillError(format!("{}: {e}", path.display())))?;
            *total += bytes.len() as u64;
            files.insert(
                relative,
                SkillFile { digest: digest(&bytes), size: bytes.len() as u64, bytes: Some(bytes.into()) },
            );
            check_limits(&root.display().to_string(), files.len(), *total)?;
        }
    }
    Ok(())
}

fn check_limits(skill: &str, count: usize, total: u64) -> Result<(), SkillError> {
    if count > MAX_RESOURCES_PER_SKILL {
        return fail(format!(
            "skill {skill} has more than {MAX_RESOURCES_PER_SKILL} files, the most every host accepts"
        ));
    }
    if total > MAX_TOTAL_SIZE {
        return fail(format!("skill {skill} holds more than {MAX_TOTAL_SIZE} bytes, the most every host accepts"));
    }
    Ok(())
}

/// A `/`-separated relative path that stays where it starts: no `..`, `.`, empty segment,
/// leading `/`, backslash or percent-escape.
fn check_relative(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("the path is empty".into());
    }
    if path.starts_with('/') || Path::new(path).is_absolute() {
        return Err(format!("`{path}` is an absolute path"));
    }
    for segment in path.split('/') {
        match segment {
            "" => return Err(format!("`{path}` has an empty segment")),
            "." | ".." => return Err(format!("`{path}` has a `{segment}` segment")),
            _ if segment.contains(['\\', '%']) => {
                return Err(format!("`{path}` has a backslash or percent-escape in `{segment}`"));
            }
            _ => {}
        }
    }
    if Path::new(path).components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(format!("`{path}` is not a plain relative path"));
    }
    Ok(())
}

fn slash_path(path: &Path) -> String {
    path.components().filter_map(|c| c.as_os_str().to_str()).collect::<Vec<_>>().join("/")
}

/// `sha256:` and the lowercase hex SHA-256 of `bytes`.
pub(crate) fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(71);
    out.push_str("sha256:");
    for byte in hash {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

fn mime_type(path: &str) -> &'static str {
    let extension = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match extension.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" => "text/plain",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "js" | "mjs" => "text/javascript",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "html" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        _ => "application/octet-stream",
    }
}

/// The YAML frontmatter of a `SKILL.md` as a JSON object, with `name` and `description`.
pub(crate) fn frontmatter_of(bytes: &[u8]) -> Result<JsonObject, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "SKILL.md is not UTF-8".to_owned())?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let body = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("SKILL.md must begin with `---` and YAML frontmatter")?;
    let end = body
        .match_indices("\n---")
        .map(|(i, _)| i)
        .find(|&i| body[i + 4..].starts_with(['\n', '\r']) || body[i + 4..].trim_start_matches([' ', '\t']).is_empty())
        .ok_or("the frontmatter of SKILL.md has no closing `---`")?;
    let value: Value =
        serde_norway::from_str(&body[..end]).map_err(|e| format!("the frontmatter of SKILL.md is not YAML: {e}"))?;
    let Value::Object(frontmatter) = value else {
        return Err("the frontmatter of SKILL.md is not a mapping".into());
    };
    check_frontmatter(&frontmatter)?;
    Ok(frontmatter)
}

/// `name` follows the Agent Skills naming rules; `description` is a string.
fn check_frontmatter(frontmatter: &JsonObject) -> Result<(), String> {
    let Some(name) = frontmatter.get("name").and_then(Value::as_str) else {
        return Err("the frontmatter has no string `name`".into());
    };
    let valid = (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if !valid {
        return Err(format!("the skill name `{name}` must be 1-64 of a-z 0-9 and single inner hyphens"));
    }
    if !frontmatter.get("description").is_some_and(Value::is_string) {
        return Err("the frontmatter has no string `description`".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_is_parsed_verbatim() {
        let md = b"---\nname: pdf-processing\ndescription: PDFs\nmetadata:\n  version: \"2.1\"\n---\n\n# Body\n";
        let frontmatter = frontmatter_of(md).unwrap();
        assert_eq!(
            Value::Object(frontmatter),
            serde_json::json!({
                "name": "pdf-processing", "description": "PDFs", "metadata": {"version": "2.1"}
            })
        );
        assert!(frontmatter_of(b"# no frontmatter").unwrap_err().contains("must begin"));
        assert!(frontmatter_of(b"---\nname: Bad_Name\ndescription: x\n---\n").unwrap_err().contains("Bad_Name"));
    }

    #[test]
    fn relative_paths_stay_inside() {
        for bad in ["../x", "a/../../x", "/etc/passwd", "a//b", "./SKILL.md", "a\\..\\b", "%2e%2e/x", ""] {
            assert!(check_relative(bad).is_err(), "{bad}");
        }
        check_relative("references/GUIDE.md").unwrap();
    }

    #[test]
    fn digest_is_sha256_hex() {
        assert_eq!(digest(b""), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
