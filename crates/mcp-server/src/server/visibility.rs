//! Who may use or hear of an entry: the scopes a request needs (of its tool, prompt, resource or
//! template, and of a completion's prompt or template), and the one decision on a resource that
//! subscriptions and updates take.

use super::*;

impl Server {
    /// The OAuth scopes a request needs beyond the server's own: those of the tool, resource
    /// (or the template matching its URI) or prompt it names (`target`: `params.name`, or
    /// `params.uri` for `resources/read` and `resources/subscribe`). Empty for every other
    /// method and for names this server does not serve (they fail as unknown, not as forbidden).
    pub fn scopes_for(&self, method: &str, target: &str) -> &[String] {
        let found = match method {
            "tools/call" => self.tool(target).map(|t| &t.route.scopes),
            "prompts/get" => self.inner.prompt_index.get(target).map(|&i| &self.inner.prompts[i].scopes),
            "resources/read" | "resources/subscribe" => match self.inner.resource_index.get(target) {
                Some(&i) => Some(&self.inner.resources[i].scopes),
                None => self.inner.templates.iter().find(|t| t.pattern.matches(target).is_some()).map(|t| &t.scopes),
            },
            _ => None,
        };
        found.map_or(&[], |scopes| &scopes.0)
    }

    /// The scopes completing an argument of `reference` needs: those of the prompt or the resource
    /// template it names (a completion reveals what the entry offers, as a call of it would).
    pub(crate) fn completion_scopes(&self, reference: &CompleteRequestParamsRef) -> &[String] {
        let found = match reference {
            CompleteRequestParamsRef::RefPrompt(prompt) => {
                self.inner.prompt_index.get(&prompt.name).map(|&i| &self.inner.prompts[i].scopes)
            }
            CompleteRequestParamsRef::RefResource(template) => {
                self.inner.templates.iter().find(|t| t.template.uri_template == template.uri).map(|t| &t.scopes)
            }
            _ => None,
        };
        found.map_or(&[], |scopes| &scopes.0)
    }

    /// The one decision on whether `caller` may hear of the resource at `uri`: subscribe to it
    /// (`resources/subscribe`, `subscriptions/listen`) and receive its
    /// `notifications/resources/updated`. A URI no route or source serves to the caller is unknown
    /// to it (a source's hidden entries included); one whose scopes its token lacks is refused as
    /// a read of it would be. `resources/read` itself reaches the same two checks through the
    /// route lookup and the scope layer.
    pub(crate) fn resource_refusal(&self, uri: &str, caller: &Principal) -> Option<(Error, Disposition)> {
        if !self.knows_resource(uri, caller) {
            return Some((Error::resource_not_found(uri), Disposition::Ok));
        }
        let refusal = crate::middleware::lacking(caller, self.scopes_for("resources/subscribe", uri))?;
        Some((refusal, Disposition::Forbidden))
    }

    /// The answer to `resources/subscribe` (or `unsubscribe`, for which only an unknown URI is
    /// refused) that `resource_refusal` refuses.
    pub(crate) fn subscribe_refused(
        &self,
        session: &Session,
        id: &RequestId,
        uri: &str,
        subscribe: bool,
    ) -> Option<Outgoing> {
        let (refusal, disposition) = self.resource_refusal(uri, session.principal())?;
        if !subscribe && disposition == Disposition::Forbidden {
            return None;
        }
        Some(Outgoing::error_as(Some(id), &refusal.into_error_object(), disposition))
    }

    /// The entry a request names, as its spans and metrics record it: the name (or URI) when the
    /// server serves that entry to the caller, else `_OTHER`, so that names a client invents
    /// make no series of their own.
    pub(super) fn target_label<'a>(&self, call: &'a Decoded, caller: &Principal) -> Option<&'a str> {
        let target = call.target()?;
        let exists = match call {
            Decoded::CallTool(params, _) => {
                self.tool(&params.name).is_some()
                    || self.inner.tool_source.as_ref().is_some_and(|source| source.lists_tool(&params.name, caller))
            }
            Decoded::GetPrompt(params) => {
                self.inner.prompt_index.contains_key(&params.name)
                    || self.inner.prompt_source.as_ref().is_some_and(|source| source.lists_prompt(&params.name, caller))
            }
            Decoded::GetSkill(uri) => self.skill(uri, || caller.clone()).is_some(),
            Decoded::ReadDirectory(params) => self.inner.directories.contains_key(&params.uri),
            _ => self.knows_resource(target, caller),
        };
        Some(if exists { target } else { crate::telemetry::OTHER })
    }

    pub(super) fn knows_resource(&self, uri: &str, caller: &Principal) -> bool {
        self.inner.resource_index.contains_key(uri)
            || self.inner.templates.iter().any(|t| t.pattern.matches(uri).is_some())
            || self.inner.resource_source.as_ref().is_some_and(|source| source.serves(uri, caller))
    }
}
