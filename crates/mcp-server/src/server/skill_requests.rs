//! `skills/list`, `skills/get` and `resources/directory/read`: the skills of the routes, then
//! those of the [`SkillSource`](crate::dynamic::SkillSource).

use std::borrow::Cow;

use mcp_types::ErrorObject;
use mcp_types::ext::skills::{ReadResourceDirectoryRequestParams, Skill};
use serde_json::json;

use super::Server;
use crate::principal::Principal;
use crate::skills::SkillRoute;

impl Server {
    pub(super) fn has_skills(&self) -> bool {
        !self.inner.skills.is_empty() || self.inner.skill_source.is_some()
    }

    /// A page of `skills/list`: the routes' skills, then the source's for this caller.
    pub(super) fn skills_page(
        &self,
        cursor: Option<String>,
        principal: impl FnOnce() -> Principal,
    ) -> Result<(Vec<Skill>, Option<String>), ErrorObject> {
        match &self.inner.skill_source {
            None => self.page(cursor, &self.inner.skills, SkillRoute::entry),
            Some(source) => {
                let mut all: Vec<Skill> = self.inner.skills.iter().map(SkillRoute::entry).collect();
                all.extend(source.skills(&principal()).iter().cloned());
                self.page(cursor, &all, Clone::clone)
            }
        }
    }

    /// The entry of the skill whose `SKILL.md` is at `uri`: a route's, else the source's.
    pub(super) fn skill(&self, uri: &str, principal: impl FnOnce() -> Principal) -> Option<Skill> {
        if let Some(&index) = self.inner.skill_index.get(uri) {
            return Some(self.inner.skills[index].entry());
        }
        let source = self.inner.skill_source.as_ref()?;
        source.skills(&principal()).iter().find(|skill| skill.uri == uri).cloned()
    }

    /// The children of the directory a `resources/directory/read` names, and its cursor.
    pub(super) fn read_directory(
        &self,
        params: ReadResourceDirectoryRequestParams,
        principal: impl FnOnce() -> Principal,
    ) -> Result<(Cow<'_, [mcp_types::Resource]>, Option<String>), ErrorObject> {
        let uri = params.uri;
        if let Some(children) = self.inner.directories.get(&uri) {
            return Ok((Cow::Borrowed(children), params.cursor));
        }
        let caller = principal();
        if self.inner.source_directories
            && let Some(source) = &self.inner.skill_source
            && let Some(children) = crate::skills::source_directory(&source.skills(&caller), &uri)
        {
            return Ok((Cow::Owned(children), params.cursor));
        }
        for skill in &self.inner.skills {
            if let Some(Err(error)) = skill.inner.relative(&uri) {
                return Err(error.into_error_object());
            }
        }
        // Only the wording depends on it, but asked as the caller: what it may not see is unknown.
        let message = if self.knows_resource(&uri, &caller) {
            format!("{uri} is not a directory resource")
        } else {
            format!("No directory resource at {uri}")
        };
        Err(ErrorObject::invalid_params(message).with_data(json!({ "uri": uri })))
    }
}
